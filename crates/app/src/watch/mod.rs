//! Listeners: the watch hub that holds long-poll requests and gRPC
//! subscriptions, and wakes them when an applied change touches their keys.
//! HTTP long polls and gRPC listeners are fed by the same change reports.
//!
//! The state machine reports the keys each applied batch changed through a
//! `tacos_raft::ChangeSink`. The hub is an actix actor: holds, cancellations and change
//! reports are messages, so its tables need no locks. It compares md5s
//! against the current state (loaded lock-free), so a change that lands
//! between a request's first check and its registration is still seen: the
//! hub re-checks every new hold when it registers it.
//!
//! A gRPC config connection that has not listened yet is notified of every
//! change in its namespace for a while after its setup ([`unlistened`]).
//!
//! Nacos 3's fuzzy watch (a connection watches a group key pattern and is
//! told which keys match it, come and go) is fed by the same change
//! reports ([`fuzzy`]).
//!
//! The console asks who listens to a config ([`ListenersOf`]). A long poll
//! is only held between a client's polls, so the hub also remembers, for
//! [`RECENT_POLL_WINDOW`], the polls that ended (answered or timed out):
//! that is how a client that was told of a change but has not come back
//! with the new md5 shows up as out of sync.

mod changes;
pub mod fuzzy;
mod long_poll;
mod push;
mod subscribe;
pub mod unlistened;
mod view;

use std::collections::{HashMap, HashSet};

use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::oneshot;

use tacos_state::StateHandle;
use tacos_state::{Changes, ClientLabels, ConfigKey, State};

use crate::gray_match::{md5_for, KeyVersions};

pub use changes::Changed;
pub use fuzzy::{FuzzyCancel, FuzzyPush, FuzzyQueue, FuzzyWatch, GroupKeyPattern};
pub use long_poll::{Cancel, Hold, HoldOutcome, Polled, ReleaseAll};
pub use push::{Push, PushQueue};
pub use subscribe::{Disconnect, Subscribe, Unsubscribe};
pub use unlistened::SetUp;
pub use view::{
    peer_ip, version_of, CountListeners, ListenProtocol, ListenState, Listened, ListenedBy,
    ListenerCounts, ListenerInfo, ListenerVersion, ListenersOf, FORMAL_VERSION,
};

/// One key a listener watches, with the strings exactly as the client sent
/// them (replies echo them back) and the md5 it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenKey {
    pub key: ConfigKey,
    pub data_id: String,
    pub group: String,
    pub tenant: String,
    pub md5: String,
}

/// The keys of `keys` whose md5 differs from what a client with `labels`
/// should hold (its gray version's, else the config's: [`crate::gray_match`]).
pub fn changed_keys(state: &State, keys: &[ListenKey], labels: &ClientLabels) -> Vec<ListenKey> {
    keys.iter()
        .filter(|k| md5_for(state, &k.key, labels) != k.md5)
        .cloned()
        .collect()
}

struct Held {
    keys: Vec<ListenKey>,
    /// The client's IP and the tag the poll sent (`Vipserver-Tag`), for
    /// gray matching.
    labels: ClientLabels,
    reply: oneshot::Sender<Vec<ListenKey>>,
    since: Instant,
}

/// How long a long-poll client stays listed after its last poll ended.
/// Clients poll again at once (Nacos' default hold is 30 s), so one missing
/// for longer than this is gone.
pub const RECENT_POLL_WINDOW: Duration = Duration::from_secs(90);

/// Most ended polls remembered (over all keys); past it expired ones are
/// dropped, and if none has expired new ones are not remembered.
const MAX_RECENT_POLLS: usize = 100_000;

/// A long poll that ended (by key and client IP): the md5 the client held
/// then.
struct RecentPoll {
    tag: Option<String>,
    md5: String,
    ended: Instant,
}

/// A key a gRPC connection listens to.
struct Subscription {
    /// As last sent.
    listen: ListenKey,
    /// The md5 the connection was last known to hold or be told of: a
    /// change is pushed only if the md5 it should hold now (by its labels:
    /// a gray it matches, else the config) differs, so a change to a gray
    /// reaches only the connections the gray serves, and its stop or
    /// promotion the connections it served.
    seen: String,
}

/// A gRPC connection's listened keys (by canonical key).
struct Subscriber {
    keys: HashMap<ConfigKey, Subscription>,
    /// The connection's labels (IP, tag) for gray matching.
    labels: ClientLabels,
    queue: PushQueue,
    /// The client's address (`ip:port`), for the listeners view.
    client: String,
}

/// The watch hub actor.
pub struct WatchHub {
    state: StateHandle,
    max_holds: usize,
    next_id: u64,
    holds: HashMap<u64, Held>,
    by_key: HashMap<ConfigKey, HashSet<u64>>,
    subscribers: HashMap<u64, Subscriber>,
    subscribers_by_key: HashMap<ConfigKey, HashSet<u64>>,
    /// Ended long polls by key and client IP (see [`RECENT_POLL_WINDOW`]).
    recent: HashMap<ConfigKey, HashMap<String, RecentPoll>>,
    recent_count: usize,
    /// gRPC config connections that have not listened yet.
    unlistened: unlistened::Unlistened,
    /// Fuzzy watches of gRPC connections.
    fuzzy: fuzzy::FuzzyWatches,
}

impl WatchHub {
    pub fn new(state: StateHandle, max_holds: usize) -> Self {
        WatchHub {
            state,
            max_holds,
            next_id: 0,
            holds: HashMap::new(),
            by_key: HashMap::new(),
            subscribers: HashMap::new(),
            subscribers_by_key: HashMap::new(),
            recent: HashMap::new(),
            recent_count: 0,
            unlistened: unlistened::Unlistened::new(Duration::ZERO),
            fuzzy: fuzzy::FuzzyWatches::new(
                fuzzy::DEFAULT_MAX_PATTERNS,
                fuzzy::DEFAULT_MAX_MATCHED,
            ),
        }
    }

    /// At most `max_patterns` fuzzy watch patterns per connection, and at
    /// most `max_matched` keys in one pattern's set (see [`fuzzy`]; both at
    /// least 1).
    pub fn with_fuzzy_limits(mut self, max_patterns: usize, max_matched: usize) -> Self {
        self.fuzzy = fuzzy::FuzzyWatches::new(max_patterns, max_matched);
        self
    }

    /// Notifies gRPC config connections that have not listened yet of every
    /// change in their namespace for `window` after their setup (and of the
    /// changes in the `window` before it); zero (the default) turns it off.
    /// See [`unlistened`].
    pub fn with_unlistened_window(mut self, window: Duration) -> Self {
        self.unlistened = unlistened::Unlistened::new(window);
        self
    }

    /// Remembers that a poll of `keys` by `client_ip` ended now.
    fn remember_ended(&mut self, client_ip: &str, tag: &Option<String>, keys: &[ListenKey]) {
        let now = Instant::now();
        for k in keys {
            if self.recent_count >= MAX_RECENT_POLLS {
                self.forget_expired(now);
                if self.recent_count >= MAX_RECENT_POLLS {
                    return;
                }
            }
            // Looked up before it is entered: a fan-out ends thousands of
            // polls of one key, and the entry API would clone the key for each.
            if !self.recent.contains_key(&k.key) {
                self.recent.insert(k.key.clone(), HashMap::new());
            }
            let Some(polls) = self.recent.get_mut(&k.key) else {
                continue;
            };
            match polls.get_mut(client_ip) {
                Some(poll) => {
                    poll.md5.clone_from(&k.md5);
                    poll.tag.clone_from(tag);
                    poll.ended = now;
                }
                None => {
                    polls.insert(
                        client_ip.to_string(),
                        RecentPoll {
                            tag: tag.clone(),
                            md5: k.md5.clone(),
                            ended: now,
                        },
                    );
                    self.recent_count += 1;
                }
            }
        }
    }

    /// A client polls again: its ended polls of `keys` are superseded.
    fn forget_polls_of(&mut self, client_ip: &str, keys: &[ListenKey]) {
        for k in keys {
            if let Some(polls) = self.recent.get_mut(&k.key) {
                if polls.remove(client_ip).is_some() {
                    self.recent_count -= 1;
                }
                if polls.is_empty() {
                    self.recent.remove(&k.key);
                }
            }
        }
    }

    fn forget_expired(&mut self, now: Instant) {
        let mut count = 0;
        self.recent.retain(|_, polls| {
            polls.retain(|_, p| now.duration_since(p.ended) < RECENT_POLL_WINDOW);
            count += polls.len();
            !polls.is_empty()
        });
        self.recent_count = count;
    }

    fn unsubscribe(&mut self, conn: u64, key: &ConfigKey) {
        if let Some(conns) = self.subscribers_by_key.get_mut(key) {
            conns.remove(&conn);
            if conns.is_empty() {
                self.subscribers_by_key.remove(key);
            }
        }
    }

    /// Queues a push of `keys` to every connection listening to them
    /// whose version of the key changed. Per listener: two lookups, a
    /// compare, and a copy of the md5 only if it changed (the key's
    /// versions are looked up once).
    fn push(&mut self, keys: &[ConfigKey]) {
        let state = self.state.load();
        for key in keys {
            let versions = KeyVersions::of(&state, key);
            for conn in self.subscribers_by_key.get(key).into_iter().flatten() {
                let Some(sub) = self.subscribers.get_mut(conn) else {
                    continue;
                };
                let Some(subscribed) = sub.keys.get_mut(key) else {
                    continue;
                };
                let now = versions.md5_for(&sub.labels);
                if subscribed.seen != now {
                    now.clone_into(&mut subscribed.seen);
                    sub.queue.mark(&subscribed.listen);
                }
            }
        }
    }

    fn remove(&mut self, id: u64) -> Option<Held> {
        let held = self.holds.remove(&id)?;
        for k in &held.keys {
            if let Some(ids) = self.by_key.get_mut(&k.key) {
                ids.remove(&id);
                if ids.is_empty() {
                    self.by_key.remove(&k.key);
                }
            }
        }
        self.remember_ended(&held.labels.ip, &held.labels.tag, &held.keys);
        Some(held)
    }

    /// Answers every hold in `ids` whose keys changed; returns how many.
    fn wake(&mut self, ids: Vec<u64>) -> usize {
        let state = self.state.load();
        let mut woken = 0;
        for id in ids {
            let Some(held) = self.holds.get(&id) else {
                continue;
            };
            let changed = changed_keys(&state, &held.keys, &held.labels);
            if !changed.is_empty() {
                if let Some(held) = self.remove(id) {
                    let _ = held.reply.send(changed);
                    woken += 1;
                }
            }
        }
        woken
    }
}

impl Actor for WatchHub {
    type Context = Context<Self>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use arc_swap::ArcSwap;
    use std::sync::Arc;
    use tacos_core::command as pb;
    use tacos_core::{md5_hex, Command, Op};

    fn listen(data_id: &str, md5: &str) -> ListenKey {
        ListenKey {
            key: ConfigKey::new("", "G", data_id),
            data_id: data_id.into(),
            group: "G".into(),
            tenant: String::new(),
            md5: md5.into(),
        }
    }

    fn publish(state: &StateHandle, data_id: &str, content: &str) -> ConfigKey {
        let mut next = State::clone(&state.load());
        let command = Command::of(Op::PublishConfig(pb::PublishConfig {
            key: Some(pb::ConfigKey {
                namespace: String::new(),
                group: "G".into(),
                data_id: data_id.into(),
            }),
            content: content.into(),
            md5: md5_hex(content),
            config_type: "text".into(),
            history_limit: 10,
            ..Default::default()
        }));
        let mut changed = Vec::new();
        next.apply(&command, &mut changed);
        state.store(Arc::new(next));
        ConfigKey::new("", "G", data_id)
    }

    fn apply(state: &StateHandle, op: Op) {
        let mut next = State::clone(&state.load());
        next.apply(&Command::of(op), &mut Vec::new());
        state.store(Arc::new(next));
    }

    fn tag_gray(content: &str) -> Op {
        Op::PublishGray(pb::PublishGray {
            key: Some((&ConfigKey::new("", "G", "a")).into()),
            name: "tag_canary".into(),
            rule: Some(pb::GrayRule {
                r#type: "tag".into(),
                version: "1.0.0".into(),
                expr: "canary".into(),
                priority: i32::MAX - 1,
            }),
            content: content.into(),
            md5: md5_hex(content),
            max_grays: 10,
            history_limit: 10,
            ..Default::default()
        })
    }

    #[actix::test]
    async fn a_gray_change_is_pushed_only_to_the_connections_it_serves() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        let key = publish(&state, "a", "formal");
        apply(&state, tag_gray("gray one"));
        let hub = WatchHub::new(state.clone(), 10).start();
        let (tagged, plain) = (PushQueue::default(), PushQueue::default());
        for (conn, queue, md5, tag) in [
            (1, &tagged, md5_hex("gray one"), Some("canary".to_string())),
            (2, &plain, md5_hex("formal"), None),
        ] {
            hub.send(Subscribe {
                conn,
                keys: vec![listen("a", &md5)],
                queue: queue.clone(),
                client: String::new(),
                labels: ClientLabels {
                    ip: "10.0.0.1".into(),
                    tag,
                },
            })
            .await
            .unwrap();
        }
        let changed = || Changed(Changes::Keys(vec![key.clone()]), Instant::now());
        let pending = |q: &PushQueue| q.contains(&key);

        // A new gray version: the tagged connection only.
        apply(&state, tag_gray("gray two"));
        hub.send(changed()).await.unwrap();
        assert!(pending(&tagged) && !pending(&plain));
        tagged.take().await;

        // A formal change: the untagged connection only.
        publish(&state, "a", "formal two");
        hub.send(changed()).await.unwrap();
        assert!(!pending(&tagged) && pending(&plain));
        plain.take().await;

        // The gray stops: its connection moves back to the formal version.
        apply(
            &state,
            Op::StopGray(pb::StopGray {
                key: Some((&key).into()),
                name: "tag_canary".into(),
                ..Default::default()
            }),
        );
        hub.send(changed()).await.unwrap();
        assert!(pending(&tagged) && !pending(&plain));
    }

    #[actix::test]
    async fn a_listen_handled_after_its_connection_closed_registers_nothing() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        let key = publish(&state, "a", "one");
        let hub = WatchHub::new(state.clone(), 10).start();
        let queue = PushQueue::default();
        // The connection closes (the queue first, then the Disconnect, as
        // the gRPC layer does) while one of its listen requests is still on
        // its way to the hub.
        queue.close();
        hub.send(Disconnect(7)).await.unwrap();
        hub.send(Subscribe {
            conn: 7,
            keys: vec![listen("a", "old")],
            queue: queue.clone(),
            client: "10.0.0.8:50123".into(),
            labels: ClientLabels::default(),
        })
        .await
        .unwrap();
        let counts = hub.send(CountListeners).await.unwrap();
        assert_eq!((counts.grpc_connections, counts.grpc_keys), (0, 0));
        assert!(hub.send(ListenersOf(key.clone())).await.unwrap().is_empty());
        // and no change is queued for it
        publish(&state, "a", "two");
        hub.send(Changed(Changes::Keys(vec![key]), Instant::now()))
            .await
            .unwrap();
        assert!(queue.is_empty());
    }

    /// Ended polls are kept per key and client IP: many clients' polls of
    /// one key each stay listed once, and a client's new poll supersedes
    /// only its own.
    #[actix::test]
    async fn ended_polls_are_remembered_per_client_ip() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        let key = publish(&state, "a", "one");
        let hub = WatchHub::new(state.clone(), 10).start();
        let poll = |ip: &str, md5: &str| Polled {
            keys: vec![listen("a", md5)],
            client_ip: ip.into(),
            tag: None,
        };
        for i in 0..50 {
            hub.send(poll(&format!("10.0.1.{i}"), "stale"))
                .await
                .unwrap();
        }
        // The same client again: still one row for it, with its new md5.
        hub.send(poll("10.0.1.7", "newer")).await.unwrap();
        let listed = hub.send(ListenersOf(key.clone())).await.unwrap();
        assert_eq!(listed.len(), 50);
        let seven: Vec<_> = listed.iter().filter(|l| l.ip == "10.0.1.7").collect();
        assert_eq!(seven.len(), 1);
        assert_eq!(seven[0].md5, "newer");
        assert_eq!(
            hub.send(ListenedBy("10.0.1.8".into())).await.unwrap(),
            vec![Listened {
                key: key.clone(),
                md5: "stale".into()
            }]
        );
        // A held poll of one client replaces its ended one, not the others'.
        let (reply, _answer) = oneshot::channel();
        hub.send(Hold {
            keys: vec![listen("a", &md5_hex("one"))],
            client_ip: "10.0.1.9".into(),
            tag: None,
            reply,
        })
        .await
        .unwrap();
        let listed = hub.send(ListenersOf(key)).await.unwrap();
        assert_eq!(listed.len(), 50);
        let nine: Vec<_> = listed.iter().filter(|l| l.ip == "10.0.1.9").collect();
        assert_eq!(nine.len(), 1);
        assert_eq!(nine[0].state, ListenState::Waiting);
    }

    #[actix::test]
    async fn listeners_of_a_key_cover_held_ended_and_grpc_listeners() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        let key = publish(&state, "a", "one");
        let hub = WatchHub::new(state.clone(), 10).start();

        // A held poll with the current md5.
        let (reply, answer) = oneshot::channel();
        let held = hub
            .send(Hold {
                keys: vec![listen("a", &md5_hex("one"))],
                client_ip: "10.0.0.7".into(),
                tag: None,
                reply,
            })
            .await
            .unwrap();
        assert!(matches!(held, HoldOutcome::Held(_)));
        // A gRPC connection that listens with an old md5.
        let queue = PushQueue::default();
        hub.send(Subscribe {
            conn: 42,
            keys: vec![listen("a", "old")],
            queue: queue.clone(),
            client: "10.0.0.8:50123".into(),
            labels: ClientLabels::default(),
        })
        .await
        .unwrap();

        let now = hub.send(ListenersOf(key.clone())).await.unwrap();
        assert_eq!(now.len(), 2, "{now:?}");
        let http = now
            .iter()
            .find(|l| l.protocol == ListenProtocol::Http)
            .unwrap();
        assert_eq!(
            (http.client.as_str(), http.md5.as_str(), http.state),
            ("10.0.0.7", md5_hex("one").as_str(), ListenState::Waiting)
        );
        let grpc = now
            .iter()
            .find(|l| l.protocol == ListenProtocol::Grpc)
            .unwrap();
        assert_eq!(
            (grpc.client.as_str(), grpc.md5.as_str()),
            ("10.0.0.8:50123", "old")
        );
        assert_eq!(
            grpc.state,
            ListenState::Subscribed {
                push_pending: false
            }
        );

        // A change answers the poll and queues a push: the poll is now
        // remembered as ended, with the md5 the client held.
        publish(&state, "a", "two");
        hub.send(Changed(Changes::Keys(vec![key.clone()]), Instant::now()))
            .await
            .unwrap();
        assert_eq!(answer.await.unwrap(), vec![listen("a", &md5_hex("one"))]);
        let after = hub.send(ListenersOf(key.clone())).await.unwrap();
        let http = after
            .iter()
            .find(|l| l.protocol == ListenProtocol::Http)
            .unwrap();
        assert_eq!(http.state, ListenState::BetweenPolls);
        assert_eq!(http.md5, md5_hex("one"));
        let grpc = after
            .iter()
            .find(|l| l.protocol == ListenProtocol::Grpc)
            .unwrap();
        assert_eq!(grpc.state, ListenState::Subscribed { push_pending: true });

        // The client polls again with the new md5: one row, waiting.
        let (reply, _answer) = oneshot::channel();
        hub.send(Hold {
            keys: vec![listen("a", &md5_hex("two"))],
            client_ip: "10.0.0.7".into(),
            tag: None,
            reply,
        })
        .await
        .unwrap();
        let again = hub.send(ListenersOf(key.clone())).await.unwrap();
        let http: Vec<_> = again
            .iter()
            .filter(|l| l.protocol == ListenProtocol::Http)
            .collect();
        assert_eq!(http.len(), 1, "{again:?}");
        assert_eq!(http[0].state, ListenState::Waiting);
        assert_eq!(http[0].md5, md5_hex("two"));

        // A poll answered at once (it holds an md5 that is already stale)
        // is listed too, with that md5, between polls.
        hub.send(Polled {
            keys: vec![listen("a", "stale")],
            client_ip: "10.0.0.9".into(),
            tag: None,
        })
        .await
        .unwrap();
        let listed = hub.send(ListenersOf(key.clone())).await.unwrap();
        let stale = listed
            .iter()
            .find(|l| l.client == "10.0.0.9")
            .expect("the answered poll is listed");
        assert_eq!(
            (stale.md5.as_str(), stale.state),
            ("stale", ListenState::BetweenPolls)
        );

        // What one IP listens to: its poll, its gRPC connection's keys.
        let by_ip = |ip: &str| hub.send(ListenedBy(ip.into()));
        assert_eq!(
            by_ip("10.0.0.7").await.unwrap(),
            vec![Listened {
                key: key.clone(),
                md5: md5_hex("two")
            }]
        );
        assert_eq!(by_ip("10.0.0.8").await.unwrap()[0].md5, "old");
        assert!(by_ip("10.0.0.1").await.unwrap().is_empty());

        // Other keys have no listeners; a disconnect removes the gRPC one.
        hub.send(Disconnect(42)).await.unwrap();
        let gone = hub.send(ListenersOf(key)).await.unwrap();
        assert!(gone.iter().all(|l| l.protocol == ListenProtocol::Http));
        assert!(hub
            .send(ListenersOf(ConfigKey::new("", "G", "b")))
            .await
            .unwrap()
            .is_empty());
    }
}
