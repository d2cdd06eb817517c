//! Pushes to gRPC config connections that have not listened yet: a Tacos
//! extension (Java Nacos pushes only listened keys).
//!
//! Why: nacos-sdk 0.8 (Rust) sends its batch listen only from a loop that
//! runs every 60 s, and not after a reconnect. After a failover the new node
//! does not know the client listens, so a change could take up to a minute
//! to reach it. So a connection whose setup labels say `module: config`
//! is, from its setup until its first batch listen (or unlisten) and for at
//! most `window`, notified of every change applied here in its namespace
//! (the setup's `tenant`, echoed as the client spelled it). At setup it is
//! also notified of the keys of its namespace changed in the `window` before
//! (at most [`MAX_REPLAY`] keys): the change may have been made while the
//! client was reconnecting. A snapshot install (`Changes::All`) names no
//! keys and is not pushed this way; the clients' periodic listen covers it.
//!
//! Why it is safe: every SDK looks a notified key up among the keys it
//! holds and ignores one it does not hold; a held key is re-fetched (Rust:
//! `ConfigWorker::notify_change_to_cache_data`, listeners fire only if the
//! md5 changed) or marked for its next listen round (Java:
//! `ClientWorker.handleConfigChangeNotifyRequest`; Python:
//! `ConfigSubscribeManager.notify_config_changed`). An extra notification
//! costs a lookup, at most a query.
//!
//! Memory: besides one entry per provisional connection, a ring of the last
//! [`RECENT_CHANGES`] applied key changes: an `Instant` and a `ConfigKey`
//! each (one `Arc`, often shared with the state; a key's three strings are
//! at most 512 characters), so at most about 2 MiB and in practice tens of
//! KiB.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use actix::prelude::*;
use tacos_state::canonical_namespace;

use super::*;

/// Applied key changes remembered for the replay at setup.
pub const RECENT_CHANGES: usize = 1024;
/// Most keys replayed to one connection at its setup.
pub const MAX_REPLAY: usize = 1000;

/// The setup label that names the SDK module of a connection, and the value
/// of config clients (Java, Python and Rust SDKs all send it).
const MODULE_LABEL: &str = "module";
const CONFIG_MODULE: &str = "config";

/// A connection that has not listened yet.
struct Provisional {
    /// The namespace as the client spelled it at setup (pushes echo it).
    tenant: String,
    queue: PushQueue,
    until: Instant,
}

/// The hub's part of this rule.
pub(super) struct Unlistened {
    window: Duration,
    /// Last applied key changes, oldest first.
    recent: VecDeque<(Instant, ConfigKey)>,
    /// Provisional connections by canonical namespace.
    by_namespace: HashMap<String, HashMap<u64, Provisional>>,
    namespace_of: HashMap<u64, String>,
}

impl Unlistened {
    pub(super) fn new(window: Duration) -> Self {
        Unlistened {
            window,
            recent: VecDeque::new(),
            by_namespace: HashMap::new(),
            namespace_of: HashMap::new(),
        }
    }

    /// `conn` listened (or unlistened) or went away: from now on it gets
    /// only the keys it listens to.
    pub(super) fn end(&mut self, conn: u64) {
        if let Some(namespace) = self.namespace_of.remove(&conn) {
            if let Some(conns) = self.by_namespace.get_mut(&namespace) {
                conns.remove(&conn);
                if conns.is_empty() {
                    self.by_namespace.remove(&namespace);
                }
            }
        }
    }

    /// Provisional connections whose window has not run out.
    pub(super) fn live(&self, now: Instant) -> usize {
        self.by_namespace
            .values()
            .flat_map(|conns| conns.values())
            .filter(|p| now < p.until)
            .count()
    }

    /// Remembers applied changes and queues them to the provisional
    /// connections of their namespaces.
    pub(super) fn changed(&mut self, keys: &[ConfigKey], now: Instant) {
        if self.window.is_zero() {
            return;
        }
        for key in keys {
            if self.recent.len() == RECENT_CHANGES {
                self.recent.pop_front();
            }
            self.recent.push_back((now, key.clone()));
        }
        let mut expired = Vec::new();
        let mut pushed = 0u64;
        for key in keys {
            let Some(conns) = self.by_namespace.get(&key.namespace) else {
                continue;
            };
            for (&conn, p) in conns {
                if now >= p.until {
                    expired.push(conn);
                } else {
                    p.queue.mark_unlistened(&notified(key, &p.tenant));
                    pushed += 1;
                }
            }
        }
        metrics::counter!("tacos_grpc_unlistened_pushes_total").increment(pushed);
        for conn in expired {
            self.end(conn);
        }
    }

    /// A connection was set up: if it is a config client that has not
    /// listened yet, it becomes provisional and is sent the keys of its
    /// namespace changed within the window before `now`. Returns how many.
    fn set_up(&mut self, msg: SetUp, now: Instant) -> usize {
        let config_client = msg.labels.get(MODULE_LABEL).map(String::as_str) == Some(CONFIG_MODULE);
        if self.window.is_zero() || !config_client {
            return 0;
        }
        let namespace = canonical_namespace(&msg.tenant).to_string();
        let since = now.checked_sub(self.window);
        let mut seen = HashSet::new();
        // Newest first, so the bound keeps the most recent changes.
        for (at, key) in self.recent.iter().rev() {
            if since.is_some_and(|since| *at < since) || seen.len() == MAX_REPLAY {
                break;
            }
            if key.namespace == namespace && seen.insert(key.clone()) {
                msg.queue.mark_unlistened(&notified(key, &msg.tenant));
            }
        }
        metrics::counter!("tacos_grpc_unlistened_pushes_total").increment(seen.len() as u64);
        self.end(msg.conn);
        self.namespace_of.insert(msg.conn, namespace.clone());
        self.by_namespace.entry(namespace).or_default().insert(
            msg.conn,
            Provisional {
                tenant: msg.tenant,
                queue: msg.queue,
                until: now + self.window,
            },
        );
        seen.len()
    }

    /// Provisional connections.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.namespace_of.len()
    }
}

/// The notification of `key` to a client whose namespace is spelled `tenant`.
fn notified(key: &ConfigKey, tenant: &str) -> ListenKey {
    ListenKey {
        key: key.clone(),
        data_id: key.data_id.clone(),
        group: key.group.clone(),
        tenant: tenant.to_string(),
        md5: String::new(),
    }
}

/// A gRPC connection sent its `ConnectionSetupRequest` (its `labels` and
/// `tenant` as sent). Answers how many recent changes were queued to it.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct SetUp {
    pub conn: u64,
    pub tenant: String,
    pub labels: HashMap<String, String>,
    pub queue: PushQueue,
}

impl Handler<SetUp> for WatchHub {
    type Result = usize;

    fn handle(&mut self, msg: SetUp, _: &mut Context<Self>) -> usize {
        // Gone already, or its first listen was handled first (the listen
        // and the setup travel on different HTTP/2 streams).
        if msg.queue.is_closed() || self.subscribers.contains_key(&msg.conn) {
            return 0;
        }
        self.unlistened.set_up(msg, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arc_swap::ArcSwap;
    use std::sync::Arc;

    fn hub(window: Duration) -> Addr<WatchHub> {
        let state: StateHandle = Arc::new(ArcSwap::from_pointee(State::default()));
        WatchHub::new(state, 10)
            .with_unlistened_window(window)
            .start()
    }

    fn config_labels() -> HashMap<String, String> {
        HashMap::from([
            ("module".to_string(), "config".to_string()),
            ("source".to_string(), "sdk".to_string()),
        ])
    }

    async fn change(hub: &Addr<WatchHub>, namespace: &str, data_id: &str) {
        let key = ConfigKey::new(namespace, "G", data_id);
        hub.send(Changed(Changes::Keys(vec![key]), Instant::now()))
            .await
            .unwrap();
    }

    async fn set_up(hub: &Addr<WatchHub>, conn: u64, tenant: &str, queue: &PushQueue) -> usize {
        hub.send(SetUp {
            conn,
            tenant: tenant.into(),
            labels: config_labels(),
            queue: queue.clone(),
        })
        .await
        .unwrap()
    }

    /// (dataId, tenant) of the queued notifications, sorted.
    async fn taken(queue: &PushQueue) -> Vec<(String, String)> {
        taken_as(queue, None).await
    }

    /// [`taken`], checking each is pushed as a key the connection does not
    /// listen to.
    async fn taken_unlistened(queue: &PushQueue) -> Vec<(String, String)> {
        taken_as(queue, Some(false)).await
    }

    /// `listened`: what every push must say of the key, if given.
    async fn taken_as(queue: &PushQueue, listened: Option<bool>) -> Vec<(String, String)> {
        if queue.is_empty() {
            return Vec::new();
        }
        let mut keys: Vec<_> = queue
            .take()
            .await
            .into_iter()
            .map(|p| {
                if let Some(want) = listened {
                    assert_eq!(p.listened, want, "{:?}", p.key.key);
                }
                (p.key.data_id, p.key.tenant)
            })
            .collect();
        keys.sort();
        keys
    }

    fn pair(data_id: &str, tenant: &str) -> (String, String) {
        (data_id.into(), tenant.into())
    }

    #[actix::test]
    async fn a_config_connection_hears_its_namespace_until_it_listens() {
        let hub = hub(Duration::from_secs(60));
        // Made before the setup: replayed at setup, its namespace only,
        // each key once, with the namespace spelled as at setup.
        change(&hub, "ns1", "before").await;
        change(&hub, "ns1", "before").await;
        change(&hub, "ns2", "elsewhere").await;
        let queue = PushQueue::default();
        assert_eq!(set_up(&hub, 1, "ns1", &queue).await, 1);
        assert_eq!(taken_unlistened(&queue).await, vec![pair("before", "ns1")]);

        // After the setup: every change in its namespace, no other (it
        // listens to none of them).
        change(&hub, "ns1", "after").await;
        change(&hub, "ns2", "elsewhere").await;
        assert_eq!(taken_unlistened(&queue).await, vec![pair("after", "ns1")]);

        // Its first listen ends it: only listened keys from then on.
        let listened = ListenKey {
            key: ConfigKey::new("ns1", "G", "listened"),
            data_id: "listened".into(),
            group: "G".into(),
            tenant: "ns1".into(),
            // Not what the (empty) state holds, so a change reported for it
            // is pushed (pushes go only to connections whose version of
            // the key differs from what they hold).
            md5: "stale".into(),
        };
        hub.send(Subscribe {
            conn: 1,
            keys: vec![listened],
            queue: queue.clone(),
            client: "10.0.0.1:4000".into(),
            labels: Default::default(),
        })
        .await
        .unwrap();
        change(&hub, "ns1", "other").await;
        change(&hub, "ns1", "listened").await;
        assert_eq!(taken(&queue).await, vec![pair("listened", "ns1")]);

        // A setup that arrives after the first listen changes nothing.
        assert_eq!(set_up(&hub, 1, "ns1", &queue).await, 0);
        change(&hub, "ns1", "other").await;
        assert!(queue.is_empty());
    }

    #[actix::test]
    async fn public_is_one_namespace_and_only_config_clients_count() {
        let hub = hub(Duration::from_secs(60));
        change(&hub, "", "a").await;
        let public = PushQueue::default();
        assert_eq!(set_up(&hub, 1, "public", &public).await, 1);
        assert_eq!(taken(&public).await, vec![pair("a", "public")]);

        // A naming client (or one without labels) is not provisional.
        let naming = PushQueue::default();
        let labels = HashMap::from([("module".to_string(), "naming".to_string())]);
        let replayed = hub
            .send(SetUp {
                conn: 2,
                tenant: String::new(),
                labels,
                queue: naming.clone(),
            })
            .await
            .unwrap();
        assert_eq!(replayed, 0);
        change(&hub, "", "b").await;
        assert_eq!(taken(&public).await, vec![pair("b", "public")]);
        assert!(naming.is_empty());

        // A disconnect ends it too.
        hub.send(Disconnect(1)).await.unwrap();
        change(&hub, "", "c").await;
        assert!(public.is_empty());
    }

    #[actix::test]
    async fn a_zero_window_turns_it_off() {
        let hub = hub(Duration::ZERO);
        change(&hub, "", "a").await;
        let queue = PushQueue::default();
        assert_eq!(set_up(&hub, 1, "", &queue).await, 0);
        change(&hub, "", "b").await;
        assert!(queue.is_empty());
    }

    #[test]
    fn the_window_and_the_bounds_hold() {
        let window = Duration::from_secs(60);
        let mut unlistened = Unlistened::new(window);
        let start = Instant::now();
        // More changes than the ring holds, all in one namespace.
        let keys: Vec<ConfigKey> = (0..RECENT_CHANGES + 10)
            .map(|i| ConfigKey::new("", "G", &format!("k{i}")))
            .collect();
        unlistened.changed(&keys, start);
        assert_eq!(unlistened.recent.len(), RECENT_CHANGES);
        let queue = PushQueue::default();
        let setup = |conn, queue: &PushQueue| SetUp {
            conn,
            tenant: String::new(),
            labels: config_labels(),
            queue: queue.clone(),
        };
        assert_eq!(unlistened.set_up(setup(1, &queue), start), MAX_REPLAY);
        assert_eq!(queue.len(), MAX_REPLAY);
        // The newest ones are replayed.
        let last = keys.last().unwrap();
        assert!(queue.contains(last));
        assert!(!queue.contains(&keys[0]));

        // Changes older than the window are not replayed.
        let later = start + window + Duration::from_secs(1);
        let late = PushQueue::default();
        assert_eq!(unlistened.set_up(setup(2, &late), later), 0);

        // Past its window a connection is dropped at the next change.
        assert_eq!(unlistened.len(), 2);
        unlistened.changed(&[ConfigKey::new("", "G", "x")], later);
        assert_eq!(unlistened.len(), 1, "connection 1's window has passed");
        assert!(late.contains(&ConfigKey::new("", "G", "x")));
    }
}
