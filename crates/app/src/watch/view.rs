//! What the hub can tell about its listeners: counts for metrics
//! (`CountListeners`), who listens to one config for the console
//! (`ListenersOf`) and which version of it each holds and should hold
//! ([`version_of`]), and what one client IP listens to (`ListenedBy`,
//! Nacos' listener-by-IP routes).

use std::time::{Duration, Instant};

use actix::prelude::*;

use super::*;

/// How many listeners the hub serves now.
#[derive(Message)]
#[rtype(result = "ListenerCounts")]
pub struct CountListeners;

/// Held long polls, gRPC connections and the keys they listen to, and
/// config connections that have not listened yet ([`super::unlistened`]).
#[derive(Debug, Clone, Copy, MessageResponse)]
pub struct ListenerCounts {
    pub long_polls: usize,
    pub grpc_connections: usize,
    pub grpc_keys: usize,
    pub grpc_unlistened: usize,
    /// Distinct fuzzy watch patterns, and connection-pattern pairs
    /// ([`super::fuzzy`]).
    pub fuzzy_patterns: usize,
    pub fuzzy_watches: usize,
}

impl Handler<CountListeners> for WatchHub {
    type Result = ListenerCounts;

    fn handle(&mut self, _: CountListeners, _: &mut Context<Self>) -> ListenerCounts {
        let (fuzzy_patterns, fuzzy_watches) = self.fuzzy.counts();
        ListenerCounts {
            fuzzy_patterns,
            fuzzy_watches,
            long_polls: self.holds.len(),
            grpc_connections: self.subscribers.len(),
            grpc_keys: self.subscribers.values().map(|s| s.keys.len()).sum(),
            grpc_unlistened: self.unlistened.live(Instant::now()),
        }
    }
}

/// Who listens to one config (the console's listeners page).
#[derive(Message)]
#[rtype(result = "Vec<ListenerInfo>")]
pub struct ListenersOf(pub ConfigKey);

/// How a listener listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenProtocol {
    /// Nacos 1.x long polling over HTTP.
    Http,
    /// A Nacos 2.x gRPC connection (server push).
    Grpc,
}

/// Where a listener is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenState {
    /// A long poll held now.
    Waiting,
    /// A long poll that ended (answered or timed out) and has not been
    /// followed by another from the same client yet.
    BetweenPolls,
    /// A gRPC connection listening; `push_pending` while a change to the
    /// key waits in its push queue.
    Subscribed { push_pending: bool },
}

/// One listener of a config, as the hub sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerInfo {
    pub protocol: ListenProtocol,
    /// HTTP: the client's IP. gRPC: the connection's peer address
    /// (`ip:port`).
    pub client: String,
    /// The md5 the client said it holds (gRPC: in its last listen request).
    pub md5: String,
    /// The IP gray rules match it by: HTTP the client's IP, gRPC the IP its
    /// last listen request came from (`metadata.clientIp`, else the peer).
    pub ip: String,
    /// The tag it is matched by: an HTTP poll's `Vipserver-Tag`, a gRPC
    /// connection's listen header or setup label.
    pub tag: Option<String>,
    pub state: ListenState,
    /// Since the poll started (waiting), ended (between polls), or nothing
    /// (gRPC).
    pub age: Duration,
}

impl Handler<ListenersOf> for WatchHub {
    type Result = Vec<ListenerInfo>;

    fn handle(&mut self, msg: ListenersOf, _: &mut Context<Self>) -> Vec<ListenerInfo> {
        let now = Instant::now();
        self.forget_expired(now);
        let key = &msg.0;
        let mut found = Vec::new();
        for id in self.by_key.get(key).into_iter().flatten() {
            let Some(held) = self.holds.get(id) else {
                continue;
            };
            for k in held.keys.iter().filter(|k| &k.key == key) {
                found.push(ListenerInfo {
                    protocol: ListenProtocol::Http,
                    client: held.labels.ip.clone(),
                    md5: k.md5.clone(),
                    ip: held.labels.ip.clone(),
                    tag: held.labels.tag.clone(),
                    state: ListenState::Waiting,
                    age: now.duration_since(held.since),
                });
            }
        }
        for (ip, poll) in self.recent.get(key).into_iter().flatten() {
            found.push(ListenerInfo {
                protocol: ListenProtocol::Http,
                client: ip.clone(),
                md5: poll.md5.clone(),
                ip: ip.clone(),
                tag: poll.tag.clone(),
                state: ListenState::BetweenPolls,
                age: now.duration_since(poll.ended),
            });
        }
        for conn in self.subscribers_by_key.get(key).into_iter().flatten() {
            let Some(sub) = self.subscribers.get(conn) else {
                continue;
            };
            if let Some(Subscription { listen, .. }) = sub.keys.get(key) {
                found.push(ListenerInfo {
                    protocol: ListenProtocol::Grpc,
                    client: if sub.client.is_empty() {
                        format!("connection {conn}")
                    } else {
                        sub.client.clone()
                    },
                    md5: listen.md5.clone(),
                    ip: sub.labels.ip.clone(),
                    tag: sub.labels.tag.clone(),
                    state: ListenState::Subscribed {
                        push_pending: sub.queue.contains(key),
                    },
                    age: Duration::ZERO,
                });
            }
        }
        found
    }
}

/// The name [`version_of`] gives the formal config.
pub const FORMAL_VERSION: &str = "formal";

/// Which version of a config a listener holds, and which it should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerVersion {
    /// The version whose md5 it holds: [`FORMAL_VERSION`] or a gray's name
    /// (`beta`, `tag_{tag}`); `None` when its md5 is none of them (an older
    /// version, or nothing).
    pub holds: Option<String>,
    /// The version it should hold, by its labels ([`crate::gray_match`]); `None`
    /// when there is nothing for it (the config is gone).
    pub expected: Option<String>,
    /// Whether its md5 is the expected version's.
    pub in_sync: bool,
}

/// Which version `listener` holds and should hold, by the same rule every
/// read and push uses: a gray whose rule its IP or tag matches, else the
/// formal config. When two versions have the same md5 the expected one is
/// named.
pub fn version_of(state: &State, key: &ConfigKey, listener: &ListenerInfo) -> ListenerVersion {
    let labels = crate::gray_match::labels(&listener.ip, listener.tag.as_deref());
    let matched = crate::gray_match::matching_gray(state, key, &labels);
    let formal = state.config(key);
    let (expected, expected_md5) = match (matched, formal) {
        (Some(gray), _) => (Some(gray.name.clone()), &*gray.md5),
        (None, Some(config)) => (Some(FORMAL_VERSION.to_string()), &*config.md5),
        (None, None) => (None, ""),
    };
    let in_sync = listener.md5 == expected_md5;
    let holds = if in_sync {
        expected.clone()
    } else if formal.is_some_and(|c| *c.md5 == *listener.md5) {
        Some(FORMAL_VERSION.to_string())
    } else {
        state
            .grays(key)
            .iter()
            .find(|g| *g.md5 == *listener.md5)
            .map(|g| g.name.clone())
    };
    ListenerVersion {
        holds,
        expected,
        in_sync,
    }
}

/// The IP of a listener's client: HTTP listeners are known by IP, gRPC
/// connections by their peer address (`ip:port`, `[v6]:port`); anything
/// else is returned as it is.
pub fn peer_ip(client: &str) -> &str {
    match client.parse::<std::net::SocketAddr>() {
        Ok(_) => {
            let host = client.rsplit_once(':').map_or(client, |(host, _)| host);
            host.trim_start_matches('[').trim_end_matches(']')
        }
        Err(_) => client,
    }
}

/// What one client IP listens to: its long polls (held, or ended within
/// [`RECENT_POLL_WINDOW`]) and the keys of its gRPC connections.
#[derive(Message)]
#[rtype(result = "Vec<Listened>")]
pub struct ListenedBy(pub String);

/// One key a client listens to and the md5 it holds (the newest seen when
/// it listens through several polls or connections).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listened {
    pub key: ConfigKey,
    pub md5: String,
}

impl Handler<ListenedBy> for WatchHub {
    type Result = Vec<Listened>;

    fn handle(&mut self, msg: ListenedBy, _: &mut Context<Self>) -> Vec<Listened> {
        let now = Instant::now();
        self.forget_expired(now);
        let ip = msg.0.as_str();
        let mut found: std::collections::BTreeMap<ConfigKey, String> = Default::default();
        // Ended polls first: a poll held now, or a gRPC listen, is newer.
        for (key, polls) in &self.recent {
            if let Some(poll) = polls.get(ip) {
                found.insert(key.clone(), poll.md5.clone());
            }
        }
        for held in self.holds.values().filter(|h| h.labels.ip == ip) {
            for k in &held.keys {
                found.insert(k.key.clone(), k.md5.clone());
            }
        }
        for sub in self
            .subscribers
            .values()
            .filter(|s| peer_ip(&s.client) == ip)
        {
            for (key, Subscription { listen, .. }) in &sub.keys {
                found.insert(key.clone(), listen.md5.clone());
            }
        }
        found
            .into_iter()
            .map(|(key, md5)| Listened { key, md5 })
            .collect()
    }
}
