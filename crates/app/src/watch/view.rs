//! What the hub can tell about its listeners: counts for metrics
//! (`CountListeners`), who listens to one config and whether each is in
//! sync, for the console (`ListenersOf`), and what one client IP listens
//! to (`ListenedBy`, Nacos' listener-by-IP routes).

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
    /// The tag an HTTP long poll sent (`Vipserver-Tag`), for gray matching.
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
                    client: held.client_ip.clone(),
                    md5: k.md5.clone(),
                    tag: held.tag.clone(),
                    state: ListenState::Waiting,
                    age: now.duration_since(held.since),
                });
            }
        }
        for poll in self.recent.get(key).into_iter().flatten() {
            found.push(ListenerInfo {
                protocol: ListenProtocol::Http,
                client: poll.client_ip.clone(),
                md5: poll.md5.clone(),
                tag: poll.tag.clone(),
                state: ListenState::BetweenPolls,
                age: now.duration_since(poll.ended),
            });
        }
        for conn in self.subscribers_by_key.get(key).into_iter().flatten() {
            let Some(sub) = self.subscribers.get(conn) else {
                continue;
            };
            if let Some(listen) = sub.keys.get(key) {
                found.push(ListenerInfo {
                    protocol: ListenProtocol::Grpc,
                    client: if sub.client.is_empty() {
                        format!("connection {conn}")
                    } else {
                        sub.client.clone()
                    },
                    md5: listen.md5.clone(),
                    tag: None,
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
            for poll in polls.iter().filter(|p| p.client_ip == ip) {
                found.insert(key.clone(), poll.md5.clone());
            }
        }
        for held in self.holds.values().filter(|h| h.client_ip == ip) {
            for k in &held.keys {
                found.insert(k.key.clone(), k.md5.clone());
            }
        }
        for sub in self
            .subscribers
            .values()
            .filter(|s| peer_ip(&s.client) == ip)
        {
            for (key, listen) in &sub.keys {
                found.insert(key.clone(), listen.md5.clone());
            }
        }
        found
            .into_iter()
            .map(|(key, md5)| Listened { key, md5 })
            .collect()
    }
}
