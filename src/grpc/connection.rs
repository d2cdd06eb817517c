//! The connection registry and the server push.
//!
//! A Nacos client opens one HTTP/2 connection: unary `Request/request` calls
//! and one `BiRequestStream` share it, so the peer address (ip:port of that
//! TCP connection) ties them together. `ServerCheckResponse` already names
//! the connection id derived from it, before the stream exists. The stream
//! registers the connection; when it ends the connection and its listeners
//! are gone.
//!
//! Push: each connection has a [`PushQueue`] the watch hub marks and a push
//! task that sends `ConfigChangeNotifyRequest`s with increasing request ids
//! and waits for the client's acks (any response carrying that id), retrying
//! a bounded number of times. The outbound channel is bounded: a client that
//! stops reading stalls only its own push tasks.
//!
//! Fuzzy watch (Nacos 3): each connection also has a [`FuzzyQueue`] the
//! hub fills in order ([`tacos_app::watch::fuzzy`]) and a task that sends
//! its `ConfigFuzzyWatchSyncRequest`s and
//! `ConfigFuzzyWatchChangeNotifyRequest`s in that order, each acked and
//! re-sent as above; an initial set's `FINISH_FUZZY_WATCH_INIT_NOTIFY` is
//! sent once all of its batches were acked (as Nacos'
//! `FuzzyWatchSyncNotifyCallback`).
//!
//! Abilities (Nacos 2.3+): `ServerCheckResponse` says the server negotiates
//! abilities; a `ConnectionSetupRequest` that carries an `abilityTable` (the
//! Java and Python clients' do; the Rust SDK sends none) is answered on the
//! stream with `SetupAckRequest{abilityTable}` naming what this server
//! supports: [`SERVER_ABILITIES`]. Clients that negotiate wait for it before
//! they use the connection, and the Java client calls the fuzzy watch only
//! when the table says `fuzzyWatch: true`.
//!
//! Balance ([`balance`], `--grpc-connection-target`): a node holding more
//! set-up connections than its target asks the oldest of the excess to
//! move (`ConnectResetRequest`, as Nacos' loader does), a bounded number
//! per round; one still open [`MOVE_GRACE`] later is closed (its stream
//! ends with `UNAVAILABLE`), because the Python (3.2.0) and Rust (0.8.3)
//! SDKs do not act on the request but do reconnect, to the next server of
//! their list, when the stream ends. Clients re-listen after a reconnect
//! (and the unlistened push covers the gap), so no listener is lost.
//!
//! Stop ([`drain`]): the gRPC port stops accepting, every set-up connection
//! gets a `ConnectResetRequest` without a `serverIp` (the client picks
//! another node of its list itself), and the stop waits, bounded, for those
//! connections to close.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacos_app::gray_match::CONNECTION_TAG_LABEL;

use actix::Addr;
use dashmap::DashMap;
use tokio::sync::{mpsc, oneshot, watch, Notify};
use tonic::Status;

use super::payload::{self, Incoming};
use super::pb::Payload;
use tacos_app::watch::fuzzy::{FuzzyPush, FuzzyQueue, FINISH_FUZZY_WATCH_INIT_NOTIFY};
use tacos_app::watch::{Disconnect, Push, PushQueue, SetUp, WatchHub};

/// How long a pushed notification waits for its ack before it is re-sent.
const ACK_TIMEOUT: Duration = Duration::from_secs(3);
/// Sends of one notification before it is given up (the client re-syncs its
/// md5s with its periodic batch listen anyway).
const PUSH_ATTEMPTS: usize = 3;
/// The abilities announced in `SetupAckRequest` (Nacos' `AbilityKey` names
/// of the server abilities Tacos has: of Nacos 3's `fuzzyWatch`,
/// `supportPersistentInstanceByGrpc`, `lock` and `mcp`, only the first).
pub const SERVER_ABILITIES: &[(&str, bool)] = &[("fuzzyWatch", true)];

/// Messages queued towards one client before its push task waits.
const OUTBOUND_QUEUE: usize = 64;

/// A message towards one client, or the end of its stream. Boxed: a tokio
/// channel allocates its first 32 slots when it is made, and with the
/// message inline those slots were 2.6 KiB for every connection, most of
/// which seldom push anything.
pub type Outgoing = Box<Result<Payload, Status>>;

pub type Outbound = mpsc::Sender<Outgoing>;

/// One client connection with an open stream.
pub struct Connection {
    /// The hub's id for this connection.
    pub num: u64,
    /// The Nacos connection id.
    pub id: String,
    pub peer: SocketAddr,
    pub queue: PushQueue,
    /// Its fuzzy watch deliveries.
    pub fuzzy: FuzzyQueue,
    outbound: Outbound,
    set_up: AtomicBool,
    /// The tag of its setup labels (`app_Vipserver-Tag`), for gray matching.
    tag: Mutex<Option<String>>,
    next_push: AtomicU64,
    pending: Mutex<HashMap<String, oneshot::Sender<()>>>,
    closed: watch::Sender<bool>,
}

impl Connection {
    /// Whether the connection's stream ended.
    fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Asks the client to move to another server. Nacos' clients answer
    /// with `ConnectResetResponse` (which only acks it here); Java's then
    /// connects to the next server of its list and closes this connection.
    /// Returns false if the outbound queue is full or closed (the client is
    /// not reading: it will see the connection end instead).
    fn send_reset(&self) -> bool {
        // No serverIp/serverPort: every client then picks the next server
        // of its own list (Nacos sets them only to redirect to one node).
        self.send_internal("ConnectResetRequest", serde_json::json!({}))
    }

    /// Answers a setup that negotiates abilities: `SetupAckRequest` with
    /// [`SERVER_ABILITIES`] (the clients send no response to it).
    fn send_setup_ack(&self) -> bool {
        let table: serde_json::Map<String, serde_json::Value> = SERVER_ABILITIES
            .iter()
            .map(|(name, on)| (name.to_string(), (*on).into()))
            .collect();
        self.send_internal(
            "SetupAckRequest",
            serde_json::json!({ "abilityTable": table }),
        )
    }

    /// Sends an `internal` module request that expects no ack; false if the
    /// outbound queue is full or closed.
    fn send_internal(&self, kind: &str, fields: serde_json::Value) -> bool {
        let request_id = self.next_push.fetch_add(1, Ordering::Relaxed).to_string();
        let mut body = match fields {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        body.insert("requestId".into(), request_id.into());
        body.insert("headers".into(), serde_json::json!({}));
        body.insert("module".into(), "internal".into());
        let message = payload::payload(kind, &serde_json::Value::Object(body));
        self.outbound.try_send(Box::new(Ok(message))).is_ok()
    }

    /// The tag the client set up the connection with (its label
    /// `app_Vipserver-Tag`, which Nacos counts among its "app labels"), if
    /// any.
    pub fn tag(&self) -> Option<String> {
        self.tag.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the client sent its `ConnectionSetupRequest`.
    pub fn is_set_up(&self) -> bool {
        self.set_up.load(Ordering::Acquire)
    }

    fn ack(&self, request_id: &str) {
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(request_id);
        if let Some(waiter) = waiter {
            let _ = waiter.send(());
        }
    }
}

/// Every connection with an open stream, by peer address.
pub struct Connections {
    by_peer: DashMap<SocketAddr, Arc<Connection>>,
    next_num: AtomicU64,
    /// Distinguishes connection ids across restarts of this node.
    epoch_ms: i64,
    /// Set when the node stops: the port stops accepting, and a connection
    /// set up from now on is asked to move at once.
    stopping: watch::Sender<bool>,
    /// Set once the port no longer accepts connections.
    port_closed: watch::Sender<bool>,
    /// Woken whenever a connection closes (the drain waits on it).
    closed_one: Notify,
}

impl Connections {
    pub fn new() -> Self {
        Connections {
            by_peer: DashMap::new(),
            next_num: AtomicU64::new(1),
            epoch_ms: chrono::Utc::now().timestamp_millis(),
            stopping: watch::channel(false).0,
            port_closed: watch::channel(false).0,
            closed_one: Notify::new(),
        }
    }

    /// Whether the node is stopping (see [`drain`]).
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Completes once the node starts stopping: the gRPC port's accept loop
    /// ends on it.
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut stopping = self.stopping.subscribe();
        async move {
            let _ = stopping.wait_for(|s| *s).await;
        }
    }

    /// The gRPC port no longer accepts connections (its listener is closed).
    pub fn set_port_closed(&self) {
        self.port_closed.send_replace(true);
    }

    /// The Nacos connection id of a peer's connection.
    pub fn connection_id(&self, peer: SocketAddr) -> String {
        format!("{}_{}_{}", self.epoch_ms, peer.ip(), peer.port())
    }

    /// The connection whose stream came from `peer`, if open.
    pub fn get(&self, peer: SocketAddr) -> Option<Arc<Connection>> {
        self.by_peer.get(&peer).map(|c| c.clone())
    }

    /// Open streams.
    pub fn len(&self) -> usize {
        self.by_peer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_peer.is_empty()
    }

    /// Registers a new stream from `peer`; returns the connection and the
    /// receiving end of its outbound messages.
    pub fn open(&self, peer: SocketAddr) -> (Arc<Connection>, mpsc::Receiver<Outgoing>) {
        let (outbound, rx) = mpsc::channel(OUTBOUND_QUEUE);
        let (closed, _) = watch::channel(false);
        let conn = Arc::new(Connection {
            num: self.next_num.fetch_add(1, Ordering::Relaxed),
            id: self.connection_id(peer),
            peer,
            queue: PushQueue::default(),
            fuzzy: FuzzyQueue::default(),
            outbound,
            set_up: AtomicBool::new(false),
            tag: Mutex::new(None),
            next_push: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            closed,
        });
        if let Some(old) = self.by_peer.insert(peer, conn.clone()) {
            let _ = old.closed.send(true);
        }
        (conn, rx)
    }

    /// Forgets a connection whose stream ended.
    pub fn close(&self, conn: &Connection, hub: &Addr<WatchHub>) {
        self.by_peer.remove_if(&conn.peer, |_, c| c.num == conn.num);
        let _ = conn.closed.send(true);
        // Before the Disconnect: a listen of this connection still on its
        // way to the hub must not register it again after it.
        conn.queue.close();
        conn.fuzzy.close();
        hub.do_send(Disconnect(conn.num));
        self.closed_one.notify_waiters();
    }
}

impl Default for Connections {
    fn default() -> Self {
        Connections::new()
    }
}

/// Reads what the client sends on its stream until it ends: the setup
/// request, and acks of pushed notifications.
pub async fn read_stream(
    conn: Arc<Connection>,
    mut inbound: tonic::Streaming<Payload>,
    connections: Arc<Connections>,
    hub: Addr<WatchHub>,
) {
    loop {
        let message = match inbound.message().await {
            Ok(Some(message)) => message,
            Ok(None) => break,
            Err(status) => {
                tracing::debug!(conn = %conn.id, "stream ended: {status}");
                break;
            }
        };
        // Most of what a client sends on its stream acks a push: only the
        // request id is read from those (a fan-out acks thousands at once).
        if let Some(request_id) = payload::response_request_id(&message) {
            conn.ack(&request_id);
            continue;
        }
        let incoming = match Incoming::parse(message) {
            Ok(incoming) => incoming,
            Err(e) => {
                tracing::debug!(conn = %conn.id, "unreadable stream message: {e}");
                continue;
            }
        };
        tracing::debug!(conn = %conn.id, kind = %incoming.kind, body = ?incoming.body, "stream message");
        match incoming.kind.as_str() {
            "ConnectionSetupRequest" => {
                conn.set_up.store(true, Ordering::Release);
                tracing::debug!(
                    conn = %conn.id,
                    version = incoming.str("clientVersion"),
                    "connection set up"
                );
                // The hub decides from the labels whether this connection
                // hears its namespace until it listens (see
                // `tacos_app::watch::unlistened`); unreadable labels count
                // as none.
                let labels = incoming.string_map("labels").unwrap_or_else(|e| {
                    tracing::debug!(conn = %conn.id, "setup labels ignored: {e}");
                    Default::default()
                });
                *conn.tag.lock().unwrap_or_else(|e| e.into_inner()) =
                    tacos_app::gray_match::labels(
                        "",
                        labels.get(CONNECTION_TAG_LABEL).map(String::as_str),
                    )
                    .tag;
                // A client that negotiates abilities waits for ours
                // (Nacos' GrpcBiStreamRequestAcceptor: only when the setup
                // carries a table, even an empty one).
                let negotiates = incoming
                    .body
                    .get("abilityTable")
                    .is_some_and(|t| !t.is_null());
                // Such a client (Java 2.3+, Python 3.x) must not be pushed
                // anything before it has taken the connection into use, and
                // the server cannot tell when that is: the Java client
                // answers a push that arrives before (its `currentConnection`
                // is still unset) with an exception that aborts the
                // connection attempt (GrpcClient.bindRequestStream ->
                // recAbilityContext.release(null)). These clients listen
                // again on their own soon after a connect (Java at once, on
                // its connected event; Python within its 5 s listen round),
                // so only the others (the Rust SDK 0.8) are made
                // provisional (`tacos_app::watch::unlistened`).
                if negotiates {
                    conn.send_setup_ack();
                } else {
                    hub.do_send(SetUp {
                        conn: conn.num,
                        tenant: incoming.str("tenant").to_string(),
                        labels,
                        queue: conn.queue.clone(),
                    });
                }
                // Set up on a connection accepted before the port closed,
                // after the drain asked the others: ask it too.
                if connections.is_stopping() {
                    conn.send_reset();
                }
            }
            // A response to something we pushed that
            // `response_request_id` could not read: its request id acks it.
            kind if kind.ends_with("Response") => conn.ack(incoming.str("requestId")),
            other => tracing::debug!(conn = %conn.id, "ignoring {other} on the stream"),
        }
    }
    connections.close(&conn, &hub);
}

/// Sends change notifications for the keys the hub marks, until the
/// connection closes. Each notification is sent and retried on its own, so
/// one unacknowledged key never delays the others.
pub async fn push_changes(conn: Arc<Connection>) {
    let mut closed = conn.closed.subscribe();
    loop {
        let keys = tokio::select! {
            keys = conn.queue.take() => keys,
            _ = closed.wait_for(|c| *c) => return,
        };
        for push in keys {
            tokio::spawn(push_one(conn.clone(), push));
        }
    }
}

/// Sends one change notification until it is acknowledged, at most
/// [`PUSH_ATTEMPTS`] times, each with a new request id. A listened key
/// never acknowledged is a warning; one the connection does not listen to
/// is not: the client may not hold the key, and some SDKs then answer
/// nothing.
async fn push_one(conn: Arc<Connection>, push: Push) {
    let Push { key, listened } = push;
    let notify = ChangeNotify(key);
    let Some(first) = send_tracked(&conn, &notify).await else {
        return;
    };
    let (conn, ChangeNotify(key)) = match until_acked(conn, notify, first).await {
        Acked::Yes | Acked::Closed => return,
        Acked::No(conn, notify) => (conn, notify),
    };
    if listened {
        tracing::warn!(
            conn = %conn.id,
            data_id = %key.data_id,
            group = %key.group,
            "client did not acknowledge a change notification; giving up on it"
        );
    } else {
        tracing::debug!(
            conn = %conn.id,
            data_id = %key.data_id,
            group = %key.group,
            "no ack for a change of a key the client does not listen to"
        );
    }
}

/// What a push sends, made anew for each request id (a re-send gets a new
/// one).
trait PushBody: Send + 'static {
    fn payload(&self, request_id: &str) -> Payload;
}

/// A `ConfigChangeNotifyRequest`: the push a change fans out to every
/// listening connection, serialized straight from the key (no JSON tree
/// built and copied per connection).
struct ChangeNotify(tacos_app::watch::ListenKey);

impl PushBody for ChangeNotify {
    fn payload(&self, request_id: &str) -> Payload {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Body<'a> {
            headers: Empty,
            data_id: &'a str,
            group: &'a str,
            tenant: &'a str,
            module: &'static str,
            request_id: &'a str,
        }
        #[derive(serde::Serialize)]
        struct Empty {}
        let key = &self.0;
        payload::payload(
            "ConfigChangeNotifyRequest",
            &Body {
                headers: Empty {},
                data_id: &key.data_id,
                group: &key.group,
                tenant: &key.tenant,
                module: "config",
                request_id,
            },
        )
    }
}

/// Any other push: its kind and JSON body, to which the request id is
/// added.
struct JsonPush {
    kind: &'static str,
    body: serde_json::Value,
}

impl JsonPush {
    /// A fuzzy watch push: Nacos' request fields every push carries
    /// (`headers`, `module`) and the push's own `fields`.
    fn fuzzy(kind: &'static str, fields: serde_json::Value) -> JsonPush {
        let mut body = serde_json::json!({"headers": {}, "module": "config"});
        if let (Some(body), serde_json::Value::Object(fields)) = (body.as_object_mut(), fields) {
            body.extend(fields);
        }
        JsonPush { kind, body }
    }
}

impl PushBody for JsonPush {
    fn payload(&self, request_id: &str) -> Payload {
        let mut body = self.body.clone();
        body["requestId"] = serde_json::Value::String(request_id.to_string());
        payload::payload(self.kind, &body)
    }
}

/// A pushed request waiting for its ack.
struct Sent {
    request_id: String,
    acked: oneshot::Receiver<()>,
    at: std::time::Instant,
}

/// Sends `body` with a new request id and registers it for its ack;
/// `None` once the connection is closed.
async fn send_tracked(conn: &Connection, body: &impl PushBody) -> Option<Sent> {
    let request_id = conn.next_push.fetch_add(1, Ordering::Relaxed).to_string();
    let (tx, acked) = oneshot::channel();
    let push = body.payload(&request_id);
    conn.pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(request_id.clone(), tx);
    let mut closed = conn.closed.subscribe();
    let sent = tokio::select! {
        sent = conn.outbound.send(Box::new(Ok(push))) => sent.is_ok(),
        _ = closed.wait_for(|c| *c) => false,
    };
    if !sent {
        conn.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request_id);
        return None;
    }
    Some(Sent {
        request_id,
        acked,
        at: std::time::Instant::now(),
    })
}

/// Whether a push was acknowledged; if not, the connection and the body
/// back, for the caller's log line.
enum Acked<B> {
    Yes,
    /// The connection closed first.
    Closed,
    No(Arc<Connection>, B),
}

impl<B> Acked<B> {
    fn yes(&self) -> bool {
        matches!(self, Acked::Yes)
    }
}

/// Waits for the ack of `first`, re-sending `body` with a new id when it
/// does not come within [`ACK_TIMEOUT`], [`PUSH_ATTEMPTS`] sends in all.
async fn until_acked<B: PushBody>(conn: Arc<Connection>, body: B, first: Sent) -> Acked<B> {
    let mut sent = first;
    for attempt in 1..=PUSH_ATTEMPTS {
        if let Ok(Ok(())) = tokio::time::timeout(ACK_TIMEOUT, sent.acked).await {
            // The handle is made once: the macro looks the series up on every call.
            static ACKED: std::sync::LazyLock<metrics::Histogram> =
                std::sync::LazyLock::new(|| metrics::histogram!("tacos_grpc_push_ack_seconds"));
            ACKED.record(sent.at.elapsed().as_secs_f64());
            return Acked::Yes;
        }
        conn.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&sent.request_id);
        if attempt == PUSH_ATTEMPTS {
            break;
        }
        match send_tracked(&conn, &body).await {
            Some(again) => sent = again,
            None => return Acked::Closed,
        }
    }
    Acked::No(conn, body)
}

const FUZZY_SYNC: &str = "ConfigFuzzyWatchSyncRequest";
const FUZZY_CHANGE: &str = "ConfigFuzzyWatchChangeNotifyRequest";

/// Sends the fuzzy watch deliveries the hub queues, in order, until the
/// connection closes (see the module doc).
pub async fn push_fuzzy(conn: Arc<Connection>) {
    let mut closed = conn.closed.subscribe();
    loop {
        let items = tokio::select! {
            items = conn.fuzzy.take() => items,
            _ = closed.wait_for(|c| *c) => return,
        };
        for item in items {
            if !send_fuzzy(&conn, item).await {
                return;
            }
        }
    }
}

/// Sends one delivery (its first sends in order; acks and re-sends run on
/// their own). False once the connection is closed.
async fn send_fuzzy(conn: &Arc<Connection>, item: FuzzyPush) -> bool {
    match item {
        FuzzyPush::Change {
            group_key,
            change_type,
        } => {
            let body = JsonPush::fuzzy(
                FUZZY_CHANGE,
                serde_json::json!({"groupKey": group_key, "changeType": change_type}),
            );
            let Some(first) = send_tracked(conn, &body).await else {
                return false;
            };
            tokio::spawn(until_acked(conn.clone(), body, first));
        }
        FuzzyPush::Sync {
            pattern,
            sync_type,
            batches,
            finish,
        } => {
            let total = batches.len();
            let mut acks = Vec::with_capacity(total);
            for (i, batch) in batches.into_iter().enumerate() {
                let contexts: Vec<serde_json::Value> = batch
                    .iter()
                    .map(|c| serde_json::json!({"groupKey": c.group_key, "changedType": c.changed_type}))
                    .collect();
                let body = JsonPush::fuzzy(
                    FUZZY_SYNC,
                    serde_json::json!({
                        "groupKeyPattern": pattern,
                        "contexts": contexts,
                        "syncType": sync_type,
                        "totalBatch": total,
                        "currentBatch": i + 1,
                    }),
                );
                let Some(first) = send_tracked(conn, &body).await else {
                    return false;
                };
                let conn = conn.clone();
                acks.push(tokio::spawn(async move {
                    until_acked(conn, body, first).await.yes()
                }));
            }
            if !finish {
                return true;
            }
            // Nacos' finish message: no contexts, batch numbers 0.
            let body = JsonPush::fuzzy(
                FUZZY_SYNC,
                serde_json::json!({
                    "groupKeyPattern": pattern,
                    "syncType": FINISH_FUZZY_WATCH_INIT_NOTIFY,
                    "totalBatch": 0,
                    "currentBatch": 0,
                }),
            );
            if acks.is_empty() {
                let Some(first) = send_tracked(conn, &body).await else {
                    return false;
                };
                tokio::spawn(until_acked(conn.clone(), body, first));
            } else {
                let conn = conn.clone();
                tokio::spawn(async move {
                    for ack in acks {
                        if !matches!(ack.await, Ok(true)) {
                            tracing::warn!(
                                conn = %conn.id,
                                pattern = %pattern,
                                "client did not acknowledge a fuzzy watch sync; its init is not finished"
                            );
                            return;
                        }
                    }
                    if let Some(first) = send_tracked(&conn, &body).await {
                        until_acked(conn, body, first).await;
                    }
                });
            }
        }
    }
    true
}

/// How often [`balance`] compares the connections with the target.
pub const BALANCE_PERIOD: Duration = Duration::from_secs(5);
/// How long a client asked to move has before its stream is ended.
pub const MOVE_GRACE: Duration = Duration::from_secs(5);
/// Most connections asked to move per round: clients spread over a few
/// rounds instead of reconnecting all at once.
pub const MOVES_PER_ROUND: usize = 50;

impl Connection {
    /// Ends the stream: the client sees `UNAVAILABLE` and reconnects.
    fn end_stream(&self, why: &str) -> bool {
        self.outbound
            .try_send(Box::new(Err(Status::unavailable(why.to_string()))))
            .is_ok()
    }
}

/// Keeps this node at or below `target` set-up connections (see the module
/// doc); runs until the node stops.
pub async fn balance(connections: Arc<Connections>, target: usize) {
    let mut asked: HashMap<u64, tokio::time::Instant> = HashMap::new();
    // Streams ended here whose connections have not closed yet: not counted.
    let mut ended: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let mut tick = tokio::time::interval(BALANCE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if connections.is_stopping() {
            return;
        }
        let mut set_up: Vec<Arc<Connection>> = connections
            .by_peer
            .iter()
            .filter(|c| c.is_set_up())
            .map(|c| c.value().clone())
            .collect();
        ended.retain(|num| set_up.iter().any(|c| c.num == *num));
        set_up.retain(|c| !ended.contains(&c.num));
        asked.retain(|num, _| set_up.iter().any(|c| c.num == *num));
        // Asked long enough ago and still here: end the stream.
        let now = tokio::time::Instant::now();
        let overdue: Vec<&Arc<Connection>> = set_up
            .iter()
            .filter(|c| {
                asked
                    .get(&c.num)
                    .is_some_and(|at| now.duration_since(*at) >= MOVE_GRACE)
            })
            .collect();
        for conn in overdue {
            if conn.end_stream("this node is over its connection target; connect to another node") {
                metrics::counter!("tacos_grpc_rebalanced_total", "how" => "closed").increment(1);
            }
            asked.remove(&conn.num);
            ended.insert(conn.num);
        }
        set_up.retain(|c| !ended.contains(&c.num));
        let excess = set_up.len().saturating_sub(target);
        let pending = asked.len();
        if excess <= pending {
            continue;
        }
        // Oldest first: those that have been here longest move.
        set_up.sort_by_key(|c| c.num);
        let to_ask = (excess - pending).min(MOVES_PER_ROUND);
        let chosen: Vec<&Arc<Connection>> = set_up
            .iter()
            .filter(|c| !asked.contains_key(&c.num))
            .take(to_ask)
            .collect();
        let n = chosen.len();
        for conn in chosen {
            if conn.send_reset() {
                metrics::counter!("tacos_grpc_rebalanced_total", "how" => "asked").increment(1);
            }
            asked.insert(conn.num, now);
        }
        tracing::info!(
            connections = set_up.len(),
            target,
            asked = n,
            "over the gRPC connection target: asking clients to move"
        );
    }
}

/// What [`drain`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Set-up connections sent a `ConnectResetRequest`.
    pub asked: usize,
    /// Of those, the ones that closed within the drain time.
    pub moved: usize,
}

/// How long the drain waits for the accept loop to close the listener
/// before it asks clients to move anyway.
const PORT_CLOSE_BOUND: Duration = Duration::from_secs(1);

/// The stop of the gRPC side: closes the port to new connections (a client
/// moving "to another server" of its list must not land here again: the
/// Java, Python and Rust SDKs take the next one round-robin, which is this
/// node again with a one-node list, and a client that reconnects later may
/// come back), asks every set-up connection to move, and waits until those
/// have closed or `within` has passed.
pub async fn drain(connections: &Connections, within: Duration) -> Drained {
    let deadline = tokio::time::Instant::now() + within;
    connections.stopping.send_replace(true);
    let mut port_closed = connections.port_closed.subscribe();
    if tokio::time::timeout(PORT_CLOSE_BOUND, port_closed.wait_for(|c| *c))
        .await
        .is_err()
    {
        tracing::warn!("the gRPC port did not close within {PORT_CLOSE_BOUND:?}");
    }
    let set_up: Vec<Arc<Connection>> = connections
        .by_peer
        .iter()
        .filter(|c| c.is_set_up())
        .map(|c| c.value().clone())
        .collect();
    let asked: Vec<Arc<Connection>> = set_up.into_iter().filter(|c| c.send_reset()).collect();
    loop {
        // Registered before the check, so a close between the two wakes it.
        let closed_one = connections.closed_one.notified();
        tokio::pin!(closed_one);
        closed_one.as_mut().enable();
        if asked.iter().all(|c| c.is_closed()) {
            break;
        }
        tokio::select! {
            _ = &mut closed_one => {}
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    Drained {
        asked: asked.len(),
        moved: asked.iter().filter(|c| c.is_closed()).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacos_app::watch::ListenKey;
    use tacos_state::ConfigKey;

    /// A sent push's type and JSON body.
    fn sent(payload: Payload) -> (String, serde_json::Value) {
        let kind = payload.metadata.map(|m| m.r#type).unwrap_or_default();
        let body = serde_json::from_slice(&payload.body.expect("a body").value).expect("JSON");
        (kind, body)
    }

    /// The change notification is serialized from the key without a JSON
    /// tree; it must say exactly what the tree said (the Java client reads
    /// it strictly).
    #[test]
    fn a_change_notification_carries_the_key_as_sent_and_its_request_id() {
        let notify = ChangeNotify(ListenKey {
            key: ConfigKey::new("dev", "G", "app.yaml"),
            data_id: "app.yaml".into(),
            group: "G".into(),
            tenant: "dev".into(),
            md5: "ignored".into(),
        });
        let (kind, body) = sent(notify.payload("42"));
        assert_eq!(kind, "ConfigChangeNotifyRequest");
        assert_eq!(
            body,
            serde_json::json!({
                "headers": {},
                "dataId": "app.yaml",
                "group": "G",
                "tenant": "dev",
                "module": "config",
                "requestId": "42",
            })
        );
        // A re-send is the same notification under a new id.
        let (_, again) = sent(notify.payload("43"));
        assert_eq!(again["requestId"], "43");
        assert_eq!(again["dataId"], "app.yaml");
    }

    #[test]
    fn a_fuzzy_push_carries_the_common_fields_and_gets_its_request_id_added() {
        let push = JsonPush::fuzzy(FUZZY_CHANGE, serde_json::json!({"groupKey": "a+G+dev"}));
        let (kind, body) = sent(push.payload("7"));
        assert_eq!(kind, FUZZY_CHANGE);
        assert_eq!(
            body,
            serde_json::json!({
                "headers": {},
                "module": "config",
                "groupKey": "a+G+dev",
                "requestId": "7",
            })
        );
    }
}
