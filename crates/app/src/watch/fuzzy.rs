//! Nacos 3's config fuzzy watch: a gRPC connection watches a *group key
//! pattern* and is told which configs match it (the initial set), then
//! which keys come to match (a config created) or stop matching (a config
//! deleted). It is about which keys exist, never about contents: a publish
//! to a key the pattern already holds notifies nothing (clients listen to
//! the keys they care about as usual), and gray versions do not matter (a
//! key exists while its formal config does). As Nacos 3's
//! `ConfigFuzzyWatchContextService`, `ConfigFuzzyWatchSyncNotifier` and
//! `ConfigFuzzyWatchChangeNotifier`.
//!
//! **Patterns** (Nacos' `FuzzyGroupKeyPattern`): `namespace>>group>>dataId`,
//! the namespace exact (blank: `public`), group and dataId each either
//! exact (no `*`), `*` (anything), `*s*` (contains `s`), `*s` (ends with),
//! `s*` (starts with), where `s` is the item with every `*` taken out; any
//! other place of a `*` matches nothing.
//!
//! **Group keys** name configs on the wire as Nacos' `GroupKey`:
//! `dataId+group+namespace` with `+` and `%` in each part written `%2B` and
//! `%25`, the public namespace spelled `public` (Nacos 3 stores it so).
//!
//! **A watch** (`ConfigFuzzyWatchRequest`, [`FuzzyWatch`]) registers the
//! pattern on the connection and diffs the keys it matches now against the
//! `receivedGroupKeys` the client says it holds: keys it lacks come as
//! `ADD_CONFIG`, keys it holds that no longer exist as `DELETE_CONFIG`, in
//! `ConfigFuzzyWatchSyncRequest`s of at most [`SYNC_BATCH`] keys, typed
//! `FUZZY_WATCH_INIT_NOTIFY` when the client says it is `initializing`
//! (followed, once every batch is acknowledged, by one
//! `FINISH_FUZZY_WATCH_INIT_NOTIFY`, also when there was nothing to send)
//! and `FUZZY_WATCH_DIFF_SYNC_NOTIFY` otherwise (the client's periodic
//! re-sync: nothing is sent when it is in sync). `CANCEL_WATCH` drops the
//! pattern ([`FuzzyCancel`]); a closed connection drops all of its own.
//!
//! **Changes**: each pattern watched by some connection keeps the set of
//! keys it matches, shared by its watchers. When an applied change makes a
//! key exist that the set lacks, it is added and every watcher gets a
//! `ConfigFuzzyWatchChangeNotifyRequest` with `changeType: CONFIG_CHANGED`
//! (Nacos' type for it: its notifier cannot tell a creation from an
//! update, and clients take it as an add); when a key of the set is gone,
//! `DELETE_CONFIG`. The set is always judged against the current state, so
//! a change applied while a watch registers is either in its initial set or
//! notified after it. A snapshot install (no key list) re-scans every
//! pattern and notifies the difference. Changes reach the hub from the
//! apply path every node runs, so a change made through any node of a
//! cluster reaches the watchers of every node.
//!
//! **Limits** (Nacos' `nacos.config.fuzzy.watch.max.pattern.count` and
//! `...max.pattern.match.config.count`, defaults 20 and 500):
//! - patterns: a connection already watching `max_patterns` patterns is
//!   refused one more with errorCode [`PATTERN_OVER_LIMIT`] (50310) and
//!   nothing is registered. Nacos counts the distinct patterns of the whole
//!   server (so 20 patterns of some clients lock every other client out);
//!   Tacos counts per connection on purpose.
//! - matched keys: a pattern's set holds at most `max_matched` keys. A watch
//!   of a pattern that has reached it is registered and synced all the
//!   same, but answered with errorCode [`MATCH_COUNT_OVER_LIMIT`] (50311);
//!   past it new keys are not added (nor notified), the sync sends no
//!   deletes (the set is not the whole truth), and when a key of a full set
//!   is deleted the set is topped up from the state without notifying (the
//!   client's next re-sync brings those keys), all as Nacos.
//!
//! Deliveries go through each connection's [`FuzzyQueue`], in order; the
//! gRPC layer sends them and waits for acks. A pending change notice for a
//! key is replaced by a newer one (with no sync queued between them), a
//! pending sync of a pattern by a newer sync of it, and a cancel drops the
//! pattern's pending syncs; so the queue of a client that stops reading
//! holds at most one sync per pattern it watches and, between two syncs,
//! one notice per key.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use tokio::sync::Notify;

use tacos_state::{canonical_namespace, shown_namespace, ConfigKey, State};

use super::WatchHub;

/// `ConfigFuzzyWatchRequest.watchType`: watch a pattern.
pub const WATCH_TYPE_WATCH: &str = "WATCH";
/// `ConfigFuzzyWatchRequest.watchType`: stop watching it.
pub const WATCH_TYPE_CANCEL_WATCH: &str = "CANCEL_WATCH";

/// `syncType` of the initial set's batches.
pub const FUZZY_WATCH_INIT_NOTIFY: &str = "FUZZY_WATCH_INIT_NOTIFY";
/// `syncType` of the message that ends the initial set.
pub const FINISH_FUZZY_WATCH_INIT_NOTIFY: &str = "FINISH_FUZZY_WATCH_INIT_NOTIFY";
/// `syncType` of a re-sync's batches.
pub const FUZZY_WATCH_DIFF_SYNC_NOTIFY: &str = "FUZZY_WATCH_DIFF_SYNC_NOTIFY";

/// A key the client should add (sync contexts).
pub const ADD_CONFIG: &str = "ADD_CONFIG";
/// A key the client should drop (sync contexts and change notices).
pub const DELETE_CONFIG: &str = "DELETE_CONFIG";
/// A key that exists now (change notices; clients add it if new to them).
pub const CONFIG_CHANGED: &str = "CONFIG_CHANGED";

/// Nacos' `ErrorCode.FUZZY_WATCH_PATTERN_OVER_LIMIT`.
pub const PATTERN_OVER_LIMIT: i32 = 50310;
/// Its message.
pub const PATTERN_OVER_LIMIT_MESSAGE: &str = "fuzzy watch pattern over limit";
/// Nacos' `ErrorCode.FUZZY_WATCH_PATTERN_MATCH_COUNT_OVER_LIMIT`.
pub const MATCH_COUNT_OVER_LIMIT: i32 = 50311;
/// Its message.
pub const MATCH_COUNT_OVER_LIMIT_MESSAGE: &str = "fuzzy watch pattern matched count over limit";

/// Keys per sync message (Nacos' `nacos.config.push.batchSize`).
pub const SYNC_BATCH: usize = 20;
/// Nacos' default of `nacos.config.fuzzy.watch.max.pattern.count`.
pub const DEFAULT_MAX_PATTERNS: usize = 20;
/// Nacos' default of `nacos.config.fuzzy.watch.max.pattern.match.config.count`.
pub const DEFAULT_MAX_MATCHED: usize = 500;

/// What separates a pattern's parts.
const SPLITTER: &str = ">>";
/// The `*` of patterns.
const ALL: &str = "*";
/// Longest pattern accepted (a namespace, group and dataId are at most 128,
/// 128 and 255 characters).
const MAX_PATTERN_LEN: usize = 1024;

/// A group key pattern, `namespace>>group>>dataId`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupKeyPattern {
    /// As the client sent it: every message about it echoes this.
    text: String,
    /// Canonical ("" is public).
    namespace: String,
    group: String,
    data_id: String,
}

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("groupKeyPattern is blank")]
    Blank,
    #[error("groupKeyPattern is longer than {MAX_PATTERN_LEN} characters")]
    TooLong,
    #[error("groupKeyPattern {0:?} is not namespace>>group>>dataId")]
    Shape(String),
}

impl GroupKeyPattern {
    /// Parses a pattern: three parts, the group and dataId ones not blank.
    pub fn parse(text: &str) -> Result<GroupKeyPattern, PatternError> {
        if text.trim().is_empty() {
            return Err(PatternError::Blank);
        }
        if text.len() > MAX_PATTERN_LEN {
            return Err(PatternError::TooLong);
        }
        let parts: Vec<&str> = text.split(SPLITTER).collect();
        let [namespace, group, data_id] = parts[..] else {
            return Err(PatternError::Shape(text.to_string()));
        };
        if group.trim().is_empty() || data_id.trim().is_empty() {
            return Err(PatternError::Shape(text.to_string()));
        }
        Ok(GroupKeyPattern {
            text: text.to_string(),
            namespace: canonical_namespace(namespace.trim()).to_string(),
            group: group.to_string(),
            data_id: data_id.to_string(),
        })
    }

    /// The pattern as the client sent it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its namespace (canonical: "" is public).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Its group pattern.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Its dataId pattern.
    pub fn data_id(&self) -> &str {
        &self.data_id
    }

    /// Whether `key` matches (Nacos' `FuzzyGroupKeyPattern.matchPattern`).
    pub fn matches(&self, key: &ConfigKey) -> bool {
        key.namespace == self.namespace
            && item_matched(&self.group, &key.group)
            && item_matched(&self.data_id, &key.data_id)
    }

    /// Identifies the pattern whatever the spelling of its namespace.
    fn id(&self) -> PatternId {
        (
            self.namespace.clone(),
            self.group.clone(),
            self.data_id.clone(),
        )
    }
}

/// Nacos' `FuzzyGroupKeyPattern.itemMatched`.
fn item_matched(pattern: &str, resource: &str) -> bool {
    if !pattern.contains(ALL) {
        return pattern == resource;
    }
    if pattern == ALL {
        return true;
    }
    let pure = pattern.replace(ALL, "");
    match (pattern.starts_with(ALL), pattern.ends_with(ALL)) {
        (true, true) => resource.contains(&pure),
        (true, false) => resource.ends_with(&pure),
        (false, true) => resource.starts_with(&pure),
        (false, false) => false,
    }
}

/// A config's Nacos group key: `dataId+group+namespace`, the public
/// namespace as `public`.
pub fn group_key(key: &ConfigKey) -> String {
    let mut out = String::with_capacity(key.data_id.len() + key.group.len() + 16);
    for (i, part) in [
        key.data_id.as_str(),
        key.group.as_str(),
        shown_namespace(&key.namespace),
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            out.push('+');
        }
        for c in part.chars() {
            match c {
                '+' => out.push_str("%2B"),
                '%' => out.push_str("%25"),
                c => out.push(c),
            }
        }
    }
    out
}

/// One key of a sync message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncContext {
    pub group_key: String,
    /// [`ADD_CONFIG`] or [`DELETE_CONFIG`].
    pub changed_type: &'static str,
}

/// One delivery to a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FuzzyPush {
    /// `ConfigFuzzyWatchSyncRequest`s for one watch: `batches` numbered from
    /// 1, then, if `finish`, a `FINISH_FUZZY_WATCH_INIT_NOTIFY` once every
    /// batch was acknowledged.
    Sync {
        /// The pattern as the client spelled it.
        pattern: String,
        sync_type: &'static str,
        batches: Vec<Vec<SyncContext>>,
        finish: bool,
    },
    /// A `ConfigFuzzyWatchChangeNotifyRequest`.
    Change {
        group_key: String,
        /// [`CONFIG_CHANGED`] or [`DELETE_CONFIG`].
        change_type: &'static str,
    },
}

/// One connection's deliveries, in order.
#[derive(Clone, Default)]
pub struct FuzzyQueue(Arc<QueueInner>);

#[derive(Default)]
struct QueueInner {
    items: Mutex<VecDeque<FuzzyPush>>,
    notify: Notify,
    closed: AtomicBool,
}

impl FuzzyQueue {
    /// Queues `push` and wakes the sender. A change notice for a key
    /// that already has one waiting (with no sync queued after it) replaces
    /// that one's type.
    pub fn push(&self, mut push: FuzzyPush) {
        let mut items = self.0.items.lock().unwrap_or_else(|e| e.into_inner());
        // A newer sync of a pattern supersedes one still waiting: it was
        // diffed against what the client holds now and the state now, so
        // the client that gets only it (and the notices queued after the
        // older one, which it already counts) ends up with the pattern's
        // set. An initial set's finish is kept.
        if let FuzzyPush::Sync {
            pattern,
            sync_type,
            finish,
            ..
        } = &mut push
        {
            let before = items.len();
            let mut finished = false;
            items.retain(|item| match item {
                FuzzyPush::Sync {
                    pattern: p,
                    finish: f,
                    ..
                } if p == pattern => {
                    finished |= *f;
                    false
                }
                _ => true,
            });
            if items.len() < before && finished && !*finish {
                *finish = true;
                *sync_type = FUZZY_WATCH_INIT_NOTIFY;
            }
        }
        if let FuzzyPush::Change {
            group_key,
            change_type,
        } = &push
        {
            // Only among the notices after the last sync: one before it
            // must keep its place (a sync's ADD of the key, then its
            // DELETE, must not become a DELETE, then the ADD).
            let waiting = items
                .iter_mut()
                .rev()
                .take_while(|item| matches!(item, FuzzyPush::Change { .. }))
                .find_map(|item| match item {
                    FuzzyPush::Change {
                        group_key: k,
                        change_type: t,
                    } if k == group_key => Some(t),
                    _ => None,
                });
            if let Some(waiting) = waiting {
                *waiting = change_type;
                return;
            }
        }
        items.push_back(push);
        drop(items);
        self.0.notify.notify_one();
    }

    /// Waits until something is queued and takes everything, in order.
    pub async fn take(&self) -> Vec<FuzzyPush> {
        loop {
            let items: Vec<FuzzyPush> = self
                .0
                .items
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..)
                .collect();
            if !items.is_empty() {
                return items;
            }
            self.0.notify.notified().await;
        }
    }

    /// Drops the syncs of `pattern` still waiting (the client cancelled it).
    pub fn forget(&self, pattern: &str) {
        self.0
            .items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|item| !matches!(item, FuzzyPush::Sync { pattern: p, .. } if p == pattern));
    }

    /// The connection is gone: a watch handled after its disconnect
    /// registers nothing (see [`super::PushQueue::close`]).
    pub fn close(&self) {
        self.0.closed.store(true, Ordering::Release);
    }

    pub fn is_closed(&self) -> bool {
        self.0.closed.load(Ordering::Acquire)
    }

    /// Deliveries waiting.
    pub fn len(&self) -> usize {
        self.0.items.lock().map(|i| i.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// (namespace, group pattern, dataId pattern).
type PatternId = (String, String, String);

/// A pattern some connection watches.
struct Watched {
    pattern: GroupKeyPattern,
    /// The keys it matches (at most `max_matched`).
    matched: BTreeSet<ConfigKey>,
    /// Its watchers: connection → the pattern as that client spelled it.
    watchers: HashMap<u64, String>,
}

/// A connection's watches.
struct Watcher {
    queue: FuzzyQueue,
    patterns: HashSet<PatternId>,
}

/// The hub's fuzzy watches.
pub(super) struct FuzzyWatches {
    max_patterns: usize,
    max_matched: usize,
    /// By canonical namespace, then pattern.
    patterns: HashMap<String, HashMap<PatternId, Watched>>,
    conns: HashMap<u64, Watcher>,
}

/// Why a watch was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FuzzyError {
    /// The connection already watches `max` patterns.
    #[error("{PATTERN_OVER_LIMIT_MESSAGE}: this connection already watches {max} patterns")]
    PatternOverLimit { max: usize },
}

impl FuzzyError {
    /// Nacos' error code.
    pub fn code(&self) -> i32 {
        match self {
            FuzzyError::PatternOverLimit { .. } => PATTERN_OVER_LIMIT,
        }
    }
}

/// What a registered watch tells its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchOutcome {
    /// The pattern's set is full (`max_matched`): answered with
    /// [`MATCH_COUNT_OVER_LIMIT`].
    pub match_over_limit: bool,
    /// The most keys a pattern's set holds, for the message.
    pub max_matched: usize,
}

impl FuzzyWatches {
    pub(super) fn new(max_patterns: usize, max_matched: usize) -> Self {
        FuzzyWatches {
            max_patterns: max_patterns.max(1),
            max_matched: max_matched.max(1),
            patterns: HashMap::new(),
            conns: HashMap::new(),
        }
    }

    /// (patterns watched, connection-pattern pairs).
    pub(super) fn counts(&self) -> (usize, usize) {
        let patterns = self.patterns.values().map(HashMap::len).sum();
        let watches = self.conns.values().map(|c| c.patterns.len()).sum();
        (patterns, watches)
    }

    /// Registers `msg`'s watch and queues its sync.
    fn watch(&mut self, state: &State, msg: FuzzyWatch) -> Result<WatchOutcome, FuzzyError> {
        let id = msg.pattern.id();
        if msg.queue.is_closed() {
            return Ok(WatchOutcome {
                match_over_limit: false,
                max_matched: self.max_matched,
            });
        }
        let conn = self.conns.entry(msg.conn).or_insert_with(|| Watcher {
            queue: msg.queue.clone(),
            patterns: HashSet::new(),
        });
        if !conn.patterns.contains(&id) && conn.patterns.len() >= self.max_patterns {
            if conn.patterns.is_empty() {
                self.conns.remove(&msg.conn);
            }
            return Err(FuzzyError::PatternOverLimit {
                max: self.max_patterns,
            });
        }
        conn.patterns.insert(id.clone());
        let max_matched = self.max_matched;
        let watched = self
            .patterns
            .entry(id.0.clone())
            .or_default()
            .entry(id)
            .or_insert_with(|| {
                let mut matched = BTreeSet::new();
                fill(state, &msg.pattern, &mut matched, max_matched);
                Watched {
                    pattern: msg.pattern.clone(),
                    matched,
                    watchers: HashMap::new(),
                }
            });
        watched
            .watchers
            .insert(msg.conn, msg.pattern.text().to_string());
        let full = watched.matched.len() >= max_matched;

        // The diff against what the client holds (Nacos'
        // `FuzzyGroupKeyPattern.diffGroupKeys`), adds first, in key order.
        let have: HashSet<String> = watched.matched.iter().map(group_key).collect();
        let mut diff: Vec<SyncContext> = watched
            .matched
            .iter()
            .map(group_key)
            .filter(|k| !msg.received.contains(k))
            .map(|group_key| SyncContext {
                group_key,
                changed_type: ADD_CONFIG,
            })
            .collect();
        // A full set is not the whole truth: no deletes from it.
        if !full {
            let mut gone: Vec<&String> =
                msg.received.iter().filter(|k| !have.contains(*k)).collect();
            gone.sort();
            diff.extend(gone.into_iter().map(|k| SyncContext {
                group_key: k.clone(),
                changed_type: DELETE_CONFIG,
            }));
        }
        if !diff.is_empty() || msg.initializing {
            msg.queue.push(FuzzyPush::Sync {
                pattern: msg.pattern.text().to_string(),
                sync_type: if msg.initializing {
                    FUZZY_WATCH_INIT_NOTIFY
                } else {
                    FUZZY_WATCH_DIFF_SYNC_NOTIFY
                },
                batches: diff.chunks(SYNC_BATCH).map(<[_]>::to_vec).collect(),
                finish: msg.initializing,
            });
        }
        Ok(WatchOutcome {
            match_over_limit: full,
            max_matched,
        })
    }

    /// Drops one watch of `conn`.
    fn cancel(&mut self, conn: u64, pattern: &GroupKeyPattern) {
        let id = pattern.id();
        let spelled = self
            .patterns
            .get(&id.0)
            .and_then(|p| p.get(&id))
            .and_then(|w| w.watchers.get(&conn));
        if let (Some(watcher), Some(text)) = (self.conns.get(&conn), spelled) {
            watcher.queue.forget(text);
        }
        if let Some(watcher) = self.conns.get_mut(&conn) {
            watcher.patterns.remove(&id);
            if watcher.patterns.is_empty() {
                self.conns.remove(&conn);
            }
        }
        self.unwatch(conn, &id);
    }

    /// Drops every watch of `conn`.
    pub(super) fn disconnect(&mut self, conn: u64) {
        if let Some(watcher) = self.conns.remove(&conn) {
            for id in &watcher.patterns {
                self.unwatch(conn, id);
            }
        }
    }

    /// `conn` no longer watches `id`; a pattern nobody watches is dropped.
    fn unwatch(&mut self, conn: u64, id: &PatternId) {
        let Some(in_namespace) = self.patterns.get_mut(&id.0) else {
            return;
        };
        if let Some(watched) = in_namespace.get_mut(id) {
            watched.watchers.remove(&conn);
            if watched.watchers.is_empty() {
                in_namespace.remove(id);
            }
        }
        if in_namespace.is_empty() {
            self.patterns.remove(&id.0);
        }
    }

    /// Applied changes to `keys`: the sets take in the keys that now exist
    /// and drop the ones that are gone, and their watchers are told.
    pub(super) fn changed(&mut self, state: &State, keys: &[ConfigKey]) {
        if self.patterns.is_empty() {
            return;
        }
        let mut notices: Vec<(u64, String, &'static str)> = Vec::new();
        for key in keys {
            let Some(in_namespace) = self.patterns.get_mut(&key.namespace) else {
                continue;
            };
            let exists = state.config(key).is_some();
            for watched in in_namespace.values_mut() {
                if !watched.pattern.matches(key) {
                    continue;
                }
                let full = watched.matched.len() >= self.max_matched;
                let change_type = if exists {
                    if full || !watched.matched.insert(key.clone()) {
                        continue;
                    }
                    CONFIG_CHANGED
                } else {
                    if !watched.matched.remove(key) {
                        continue;
                    }
                    if full {
                        fill(
                            state,
                            &watched.pattern,
                            &mut watched.matched,
                            self.max_matched,
                        );
                    }
                    DELETE_CONFIG
                };
                let group_key = group_key(key);
                notices.extend(
                    watched
                        .watchers
                        .keys()
                        .map(|&conn| (conn, group_key.clone(), change_type)),
                );
            }
        }
        self.deliver(notices);
    }

    /// Anything may have changed (a snapshot was installed): every set is
    /// scanned again and the difference notified.
    pub(super) fn changed_all(&mut self, state: &State) {
        let mut notices: Vec<(u64, String, &'static str)> = Vec::new();
        for watched in self.patterns.values_mut().flat_map(HashMap::values_mut) {
            let mut now = BTreeSet::new();
            fill(state, &watched.pattern, &mut now, self.max_matched);
            let added = now
                .difference(&watched.matched)
                .map(|k| (k, CONFIG_CHANGED));
            let gone = watched.matched.difference(&now).map(|k| (k, DELETE_CONFIG));
            for (key, change_type) in added.chain(gone) {
                let group_key = group_key(key);
                notices.extend(
                    watched
                        .watchers
                        .keys()
                        .map(|&conn| (conn, group_key.clone(), change_type)),
                );
            }
            watched.matched = now;
        }
        self.deliver(notices);
    }

    fn deliver(&self, notices: Vec<(u64, String, &'static str)>) {
        for (conn, group_key, change_type) in notices {
            if let Some(watcher) = self.conns.get(&conn) {
                watcher.queue.push(FuzzyPush::Change {
                    group_key,
                    change_type,
                });
            }
        }
    }
}

/// Adds the keys of `state` that match `pattern` to `matched` until it
/// holds `max` (Nacos scans its whole config cache; here only the
/// pattern's namespace, in key order).
fn fill(state: &State, pattern: &GroupKeyPattern, matched: &mut BTreeSet<ConfigKey>, max: usize) {
    for (key, _) in state.configs_in(&pattern.namespace) {
        if matched.len() >= max {
            return;
        }
        if pattern.matches(key) {
            matched.insert(key.clone());
        }
    }
}

/// A connection watches `pattern` (`ConfigFuzzyWatchRequest` with
/// `watchType: WATCH`); its sync goes to `queue`.
#[derive(Message)]
#[rtype(result = "Result<WatchOutcome, FuzzyError>")]
pub struct FuzzyWatch {
    pub conn: u64,
    pub pattern: GroupKeyPattern,
    /// The group keys the client says it holds for the pattern.
    pub received: HashSet<String>,
    /// The client's first watch of the pattern (an initial set, then the
    /// finish message).
    pub initializing: bool,
    pub queue: FuzzyQueue,
}

impl Handler<FuzzyWatch> for WatchHub {
    type Result = Result<WatchOutcome, FuzzyError>;

    fn handle(&mut self, msg: FuzzyWatch, _: &mut Context<Self>) -> Self::Result {
        let state = self.state.load();
        self.fuzzy.watch(&state, msg)
    }
}

/// A connection stops watching `pattern` (`watchType: CANCEL_WATCH`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FuzzyCancel {
    pub conn: u64,
    pub pattern: GroupKeyPattern,
}

impl Handler<FuzzyCancel> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: FuzzyCancel, _: &mut Context<Self>) {
        self.fuzzy.cancel(msg.conn, &msg.pattern);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::{Changed, Disconnect};
    use arc_swap::ArcSwap;
    use std::time::Instant;
    use tacos_core::command as pb;
    use tacos_core::{md5_hex, Command, Op};
    use tacos_state::{Changes, StateHandle};

    fn key(namespace: &str, group: &str, data_id: &str) -> ConfigKey {
        ConfigKey::new(namespace, group, data_id)
    }

    fn pattern(text: &str) -> GroupKeyPattern {
        GroupKeyPattern::parse(text).unwrap()
    }

    fn apply(state: &StateHandle, op: Op) {
        let mut next = State::clone(&state.load());
        next.apply(&Command::of(op), &mut Vec::new());
        state.store(Arc::new(next));
    }

    fn publish(state: &StateHandle, k: &ConfigKey, content: &str) {
        apply(
            state,
            Op::PublishConfig(pb::PublishConfig {
                key: Some(k.into()),
                content: content.into(),
                md5: md5_hex(content),
                config_type: "text".into(),
                history_limit: 10,
                ..Default::default()
            }),
        );
    }

    fn remove(state: &StateHandle, k: &ConfigKey) {
        apply(
            state,
            Op::RemoveConfig(pb::RemoveConfig {
                key: Some(k.into()),
                ..Default::default()
            }),
        );
    }

    fn changed(k: &ConfigKey) -> Changed {
        Changed(Changes::Keys(vec![k.clone()]), Instant::now())
    }

    fn watch(conn: u64, text: &str, received: &[&str], queue: &FuzzyQueue) -> FuzzyWatch {
        FuzzyWatch {
            conn,
            pattern: pattern(text),
            received: received.iter().map(|s| s.to_string()).collect(),
            initializing: received.is_empty(),
            queue: queue.clone(),
        }
    }

    fn drain(queue: &FuzzyQueue) -> Vec<FuzzyPush> {
        let mut items = queue.0.items.lock().unwrap();
        items.drain(..).collect()
    }

    fn change(group_key: &str, change_type: &'static str) -> FuzzyPush {
        FuzzyPush::Change {
            group_key: group_key.into(),
            change_type,
        }
    }

    #[test]
    fn patterns_match_as_nacos() {
        let p = pattern("public>>DEFAULT_GROUP>>app-*");
        assert_eq!(p.namespace(), "");
        assert!(p.matches(&key("", "DEFAULT_GROUP", "app-1")));
        assert!(p.matches(&key("public", "DEFAULT_GROUP", "app-")));
        assert!(!p.matches(&key("dev", "DEFAULT_GROUP", "app-1")));
        assert!(!p.matches(&key("", "OTHER", "app-1")));
        assert!(!p.matches(&key("", "DEFAULT_GROUP", "my-app-1")));
        for (item, resource, matched) in [
            ("*", "anything", true),
            ("a.yaml", "a.yaml", true),
            ("a.yaml", "a.yml", false),
            ("*.yaml", "x.yaml", true),
            ("*.yaml", "x.yml", false),
            ("*mid*", "a-mid-b", true),
            ("*mid*", "a-mi-b", false),
            ("*a*b*", "xaby", true), // every `*` is taken out
            ("a*b", "ab", false),    // a `*` inside matches nothing
        ] {
            assert_eq!(item_matched(item, resource), matched, "{item} {resource}");
        }
        // A blank namespace is public; the parts must be three, not blank.
        assert_eq!(pattern(">>G>>*").namespace(), "");
        assert_eq!(pattern("dev>>G>>*").namespace(), "dev");
        for bad in ["", "  ", "G>>*", "public>>G>>", "public>>>>a", "a>>b>>c>>d"] {
            assert!(GroupKeyPattern::parse(bad).is_err(), "{bad:?}");
        }
        assert!(GroupKeyPattern::parse(&"x".repeat(2000)).is_err());
    }

    #[test]
    fn group_keys_are_nacos_group_keys() {
        assert_eq!(group_key(&key("", "G", "a")), "a+G+public");
        assert_eq!(group_key(&key("dev", "G", "a")), "a+G+dev");
        assert_eq!(group_key(&key("dev", "G+1", "a%b")), "a%25b+G%2B1+dev");
    }

    #[test]
    fn pending_change_notices_collapse_per_key() {
        let queue = FuzzyQueue::default();
        queue.push(change("a+G+public", CONFIG_CHANGED));
        queue.push(change("b+G+public", CONFIG_CHANGED));
        queue.push(change("a+G+public", DELETE_CONFIG));
        assert_eq!(
            drain(&queue),
            [
                change("a+G+public", DELETE_CONFIG),
                change("b+G+public", CONFIG_CHANGED)
            ]
        );
        // A newer sync of a pattern replaces one waiting, keeping its
        // finish; a cancel drops it.
        let sync_of = |pattern: &str, finish: bool| FuzzyPush::Sync {
            pattern: pattern.into(),
            sync_type: if finish {
                FUZZY_WATCH_INIT_NOTIFY
            } else {
                FUZZY_WATCH_DIFF_SYNC_NOTIFY
            },
            batches: vec![],
            finish,
        };
        queue.push(sync_of("p1", true));
        queue.push(sync_of("p2", false));
        queue.push(change("a+G+public", CONFIG_CHANGED));
        queue.push(sync_of("p1", false));
        assert_eq!(
            drain(&queue),
            [
                sync_of("p2", false),
                change("a+G+public", CONFIG_CHANGED),
                sync_of("p1", true)
            ]
        );
        queue.push(sync_of("p1", true));
        queue.push(change("a+G+public", CONFIG_CHANGED));
        queue.forget("p1");
        assert_eq!(drain(&queue), [change("a+G+public", CONFIG_CHANGED)]);
        // Not across a sync.
        let sync = FuzzyPush::Sync {
            pattern: "public>>G>>*".into(),
            sync_type: FUZZY_WATCH_DIFF_SYNC_NOTIFY,
            batches: vec![],
            finish: false,
        };
        queue.push(change("a+G+public", CONFIG_CHANGED));
        queue.push(sync.clone());
        queue.push(change("a+G+public", DELETE_CONFIG));
        assert_eq!(
            drain(&queue),
            [
                change("a+G+public", CONFIG_CHANGED),
                sync,
                change("a+G+public", DELETE_CONFIG)
            ]
        );
    }

    #[actix::test]
    async fn a_watch_gets_its_set_then_adds_and_deletes_not_contents() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        let (a, b, c) = (
            key("", "G", "app-a"),
            key("", "G", "app-b"),
            key("", "G", "app-c"),
        );
        publish(&state, &a, "1");
        publish(&state, &b, "1");
        publish(&state, &key("", "G", "other"), "1");
        publish(&state, &key("dev", "G", "app-a"), "1");
        let hub = WatchHub::new(state.clone(), 10).start();
        let queue = FuzzyQueue::default();

        let outcome = hub
            .send(watch(1, "public>>G>>app-*", &[], &queue))
            .await
            .unwrap()
            .unwrap();
        assert!(!outcome.match_over_limit);
        let add = |k: &str| SyncContext {
            group_key: k.into(),
            changed_type: ADD_CONFIG,
        };
        assert_eq!(
            drain(&queue),
            [FuzzyPush::Sync {
                pattern: "public>>G>>app-*".into(),
                sync_type: FUZZY_WATCH_INIT_NOTIFY,
                batches: vec![vec![add("app-a+G+public"), add("app-b+G+public")]],
                finish: true,
            }]
        );

        // A new matching key, a content change, a key that does not match,
        // a delete.
        publish(&state, &c, "1");
        hub.send(changed(&c)).await.unwrap();
        publish(&state, &a, "2");
        hub.send(changed(&a)).await.unwrap();
        let other = key("", "G", "nope");
        publish(&state, &other, "1");
        hub.send(changed(&other)).await.unwrap();
        remove(&state, &b);
        hub.send(changed(&b)).await.unwrap();
        assert_eq!(
            drain(&queue),
            [
                change("app-c+G+public", CONFIG_CHANGED),
                change("app-b+G+public", DELETE_CONFIG)
            ]
        );

        // A re-sync in step sends nothing; one that holds a key that is
        // gone and lacks one gets both.
        let held = ["app-a+G+public", "app-c+G+public"];
        hub.send(FuzzyWatch {
            initializing: false,
            ..watch(1, "public>>G>>app-*", &held, &queue)
        })
        .await
        .unwrap()
        .unwrap();
        assert!(queue.is_empty());
        let held = ["app-a+G+public", "app-gone+G+public"];
        hub.send(FuzzyWatch {
            initializing: false,
            ..watch(1, "public>>G>>app-*", &held, &queue)
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(
            drain(&queue),
            [FuzzyPush::Sync {
                pattern: "public>>G>>app-*".into(),
                sync_type: FUZZY_WATCH_DIFF_SYNC_NOTIFY,
                batches: vec![vec![
                    add("app-c+G+public"),
                    SyncContext {
                        group_key: "app-gone+G+public".into(),
                        changed_type: DELETE_CONFIG
                    }
                ]],
                finish: false,
            }]
        );

        // Cancelled: nothing more.
        hub.send(FuzzyCancel {
            conn: 1,
            pattern: pattern("public>>G>>app-*"),
        })
        .await
        .unwrap();
        remove(&state, &c);
        hub.send(changed(&c)).await.unwrap();
        assert!(queue.is_empty());
        let counts = hub.send(crate::watch::CountListeners).await.unwrap();
        assert_eq!((counts.fuzzy_patterns, counts.fuzzy_watches), (0, 0));
    }

    #[actix::test]
    async fn limits_refuse_a_pattern_and_cap_a_set() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        for i in 0..5 {
            publish(&state, &key("", "G", &format!("k{i}")), "1");
        }
        let hub = WatchHub::new(state.clone(), 10)
            .with_fuzzy_limits(2, 3)
            .start();
        let queue = FuzzyQueue::default();
        for text in ["public>>G>>a*", "public>>G>>b*", "public>>G>>a*"] {
            hub.send(watch(1, text, &[], &queue))
                .await
                .unwrap()
                .unwrap();
        }
        let refused = hub
            .send(watch(1, "public>>G>>c*", &[], &queue))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(refused.code(), PATTERN_OVER_LIMIT);
        assert!(refused.to_string().starts_with(PATTERN_OVER_LIMIT_MESSAGE));
        // Another connection has its own count.
        let other = FuzzyQueue::default();
        let capped = hub
            .send(watch(2, "public>>G>>k*", &["k9+G+public"], &other))
            .await
            .unwrap()
            .unwrap();
        assert!(capped.match_over_limit);
        // Three keys of five; no delete of k9 from a full set.
        let Some(FuzzyPush::Sync { batches, .. }) = drain(&other).pop() else {
            panic!("no sync");
        };
        assert_eq!(batches.concat().len(), 3);
        assert!(batches
            .concat()
            .iter()
            .all(|c| c.changed_type == ADD_CONFIG));
        // Past the cap, a new key is not added; a deleted key of the set is
        // notified and the set topped up silently.
        let new = key("", "G", "k5");
        publish(&state, &new, "1");
        hub.send(changed(&new)).await.unwrap();
        assert!(other.is_empty());
        let k0 = key("", "G", "k0");
        remove(&state, &k0);
        hub.send(changed(&k0)).await.unwrap();
        assert_eq!(drain(&other), [change("k0+G+public", DELETE_CONFIG)]);
        // A disconnect frees everything.
        hub.send(Disconnect(1)).await.unwrap();
        hub.send(Disconnect(2)).await.unwrap();
        let counts = hub.send(crate::watch::CountListeners).await.unwrap();
        assert_eq!((counts.fuzzy_patterns, counts.fuzzy_watches), (0, 0));
    }

    #[actix::test]
    async fn a_snapshot_install_notifies_the_difference() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        let (a, b) = (key("", "G", "a"), key("", "G", "b"));
        publish(&state, &a, "1");
        let hub = WatchHub::new(state.clone(), 10).start();
        let queue = FuzzyQueue::default();
        hub.send(watch(1, ">>G>>*", &[], &queue))
            .await
            .unwrap()
            .unwrap();
        drain(&queue);
        remove(&state, &a);
        publish(&state, &b, "1");
        hub.send(Changed(Changes::All, Instant::now()))
            .await
            .unwrap();
        assert_eq!(
            drain(&queue),
            [
                change("b+G+public", CONFIG_CHANGED),
                change("a+G+public", DELETE_CONFIG)
            ]
        );
    }

    #[actix::test]
    async fn a_watch_after_its_connection_closed_registers_nothing() {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        let hub = WatchHub::new(state, 10).start();
        let queue = FuzzyQueue::default();
        queue.close();
        hub.send(Disconnect(3)).await.unwrap();
        hub.send(watch(3, "public>>G>>*", &[], &queue))
            .await
            .unwrap()
            .unwrap();
        let counts = hub.send(crate::watch::CountListeners).await.unwrap();
        assert_eq!(counts.fuzzy_watches, 0);
        assert!(queue.is_empty());
    }
}
