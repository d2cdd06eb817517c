//! Listeners: the watch hub that holds long-poll requests and gRPC
//! subscriptions, and wakes them when an applied change touches their keys.
//! HTTP long polls and gRPC listeners are fed by the same change reports.
//!
//! The state machine reports the keys each applied batch changed through a
//! [`ChangeSink`]. The hub is an actix actor: holds, cancellations and change
//! reports are messages, so its tables need no locks. It compares md5s
//! against the current state (loaded lock-free), so a change that lands
//! between a request's first check and its registration is still seen: the
//! hub re-checks every new hold when it registers it.

mod push;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::oneshot;

use crate::raft::state_machine::StateHandle;
use crate::state::{ConfigKey, State};

pub use push::PushQueue;

/// What an applied batch changed.
#[derive(Debug, Clone)]
pub enum Changes {
    /// These configs (or their betas) changed.
    Keys(Vec<ConfigKey>),
    /// Anything may have changed (a snapshot was installed).
    All,
}

/// Where the state machine reports changes.
pub type ChangeSink = Arc<dyn Fn(Changes) + Send + Sync>;

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

/// The keys of `keys` whose md5 differs from what a client at `ip` should hold.
pub fn changed_keys(state: &State, keys: &[ListenKey], ip: &str) -> Vec<ListenKey> {
    keys.iter()
        .filter(|k| state.md5_for(&k.key, ip) != k.md5)
        .cloned()
        .collect()
}

struct Held {
    keys: Vec<ListenKey>,
    client_ip: String,
    reply: oneshot::Sender<Vec<ListenKey>>,
}

/// A gRPC connection's listened keys (by canonical key, as last sent).
struct Subscriber {
    keys: HashMap<ConfigKey, ListenKey>,
    queue: PushQueue,
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
        }
    }

    fn unsubscribe(&mut self, conn: u64, key: &ConfigKey) {
        if let Some(conns) = self.subscribers_by_key.get_mut(key) {
            conns.remove(&conn);
            if conns.is_empty() {
                self.subscribers_by_key.remove(key);
            }
        }
    }

    /// Queues a push of `keys` to every connection listening to them.
    fn push(&self, keys: &[ConfigKey]) {
        for key in keys {
            for conn in self.subscribers_by_key.get(key).into_iter().flatten() {
                if let Some(sub) = self.subscribers.get(conn) {
                    if let Some(listen) = sub.keys.get(key) {
                        sub.queue.mark(listen);
                    }
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
            let changed = changed_keys(&state, &held.keys, &held.client_ip);
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

/// Hold a long-poll until one of its keys changes.
#[derive(Message)]
#[rtype(result = "HoldOutcome")]
pub struct Hold {
    pub keys: Vec<ListenKey>,
    pub client_ip: String,
    pub reply: oneshot::Sender<Vec<ListenKey>>,
}

/// What became of a [`Hold`].
#[derive(Debug, MessageResponse)]
pub enum HoldOutcome {
    /// Held; cancel with this id when the client's timeout ends.
    Held(u64),
    /// Already changed: the reply was sent at once.
    Answered,
    /// Too many held requests.
    Full { limit: usize },
}

impl Handler<Hold> for WatchHub {
    type Result = HoldOutcome;

    fn handle(&mut self, msg: Hold, _: &mut Context<Self>) -> HoldOutcome {
        let changed = changed_keys(&self.state.load(), &msg.keys, &msg.client_ip);
        if !changed.is_empty() {
            let _ = msg.reply.send(changed);
            return HoldOutcome::Answered;
        }
        if self.holds.len() >= self.max_holds {
            return HoldOutcome::Full {
                limit: self.max_holds,
            };
        }
        self.next_id += 1;
        let id = self.next_id;
        for k in &msg.keys {
            self.by_key.entry(k.key.clone()).or_default().insert(id);
        }
        self.holds.insert(
            id,
            Held {
                keys: msg.keys,
                client_ip: msg.client_ip,
                reply: msg.reply,
            },
        );
        HoldOutcome::Held(id)
    }
}

/// Stop holding (the client's timeout ended or it went away).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Cancel(pub u64);

impl Handler<Cancel> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Cancel, _: &mut Context<Self>) {
        self.remove(msg.0);
    }
}

/// An applied batch changed these keys (applied at the given instant).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Changed(pub Changes, pub std::time::Instant);

impl Handler<Changed> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Changed, _: &mut Context<Self>) {
        let ids: Vec<u64> = match msg.0 {
            Changes::All => {
                for sub in self.subscribers.values() {
                    sub.keys.values().for_each(|k| sub.queue.mark(k));
                }
                self.holds.keys().copied().collect()
            }
            Changes::Keys(keys) => {
                self.push(&keys);
                let mut ids: Vec<u64> = keys
                    .iter()
                    .filter_map(|k| self.by_key.get(k))
                    .flatten()
                    .copied()
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            }
        };
        let woken = self.wake(ids);
        let latency = msg.1.elapsed().as_secs_f64();
        for _ in 0..woken {
            metrics::histogram!("tacos_watch_notify_seconds").record(latency);
        }
    }
}

/// A gRPC connection listens to `keys` (added to what it already listens
/// to); changes are marked in `queue`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    pub conn: u64,
    pub keys: Vec<ListenKey>,
    pub queue: PushQueue,
}

impl Handler<Subscribe> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Subscribe, _: &mut Context<Self>) {
        let sub = self
            .subscribers
            .entry(msg.conn)
            .or_insert_with(|| Subscriber {
                keys: HashMap::new(),
                queue: msg.queue,
            });
        for k in msg.keys {
            self.subscribers_by_key
                .entry(k.key.clone())
                .or_default()
                .insert(msg.conn);
            sub.keys.insert(k.key.clone(), k);
        }
    }
}

/// A gRPC connection stops listening to `keys`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unsubscribe {
    pub conn: u64,
    pub keys: Vec<ConfigKey>,
}

impl Handler<Unsubscribe> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Unsubscribe, _: &mut Context<Self>) {
        if let Some(sub) = self.subscribers.get_mut(&msg.conn) {
            for key in &msg.keys {
                sub.keys.remove(key);
            }
        }
        for key in &msg.keys {
            self.unsubscribe(msg.conn, key);
        }
    }
}

/// A gRPC connection closed: forget everything it listened to.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Disconnect(pub u64);

impl Handler<Disconnect> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Disconnect, _: &mut Context<Self>) {
        if let Some(sub) = self.subscribers.remove(&msg.0) {
            for key in sub.keys.keys() {
                self.unsubscribe(msg.0, key);
            }
        }
    }
}

/// How many listeners the hub serves now.
#[derive(Message)]
#[rtype(result = "ListenerCounts")]
pub struct CountListeners;

/// Held long polls, and gRPC connections and the keys they listen to.
#[derive(Debug, Clone, Copy, MessageResponse)]
pub struct ListenerCounts {
    pub long_polls: usize,
    pub grpc_connections: usize,
    pub grpc_keys: usize,
}

impl Handler<CountListeners> for WatchHub {
    type Result = ListenerCounts;

    fn handle(&mut self, _: CountListeners, _: &mut Context<Self>) -> ListenerCounts {
        ListenerCounts {
            long_polls: self.holds.len(),
            grpc_connections: self.subscribers.len(),
            grpc_keys: self.subscribers.values().map(|s| s.keys.len()).sum(),
        }
    }
}

/// Answer every held request now with no changes (shutdown).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct ReleaseAll;

impl Handler<ReleaseAll> for WatchHub {
    type Result = usize;

    fn handle(&mut self, _: ReleaseAll, _: &mut Context<Self>) -> usize {
        let ids: Vec<u64> = self.holds.keys().copied().collect();
        let count = ids.len();
        for id in ids {
            if let Some(held) = self.remove(id) {
                let _ = held.reply.send(Vec::new());
            }
        }
        count
    }
}
