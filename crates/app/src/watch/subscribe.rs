//! gRPC listeners: a connection subscribes to keys (`Subscribe`), drops
//! some (`Unsubscribe`), or goes away (`Disconnect`). Either of the first
//! two also ends the connection's provisional state ([`super::unlistened`]).

use std::collections::HashMap;

use actix::prelude::*;

use super::*;

/// A gRPC connection listens to `keys` (added to what it already listens
/// to); changes are marked in `queue`. Ignored once the queue is closed
/// (the connection went away; see [`PushQueue::close`]).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    pub conn: u64,
    pub keys: Vec<ListenKey>,
    pub queue: PushQueue,
    /// The connection's peer address (`ip:port`), or "" if unknown.
    pub client: String,
    /// The labels it is matched to gray versions by (its IP, and the tag
    /// of this listen request or of its setup).
    pub labels: ClientLabels,
}

impl Handler<Subscribe> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Subscribe, _: &mut Context<Self>) {
        // Its first listen: from now on only the keys it listens to.
        self.unlistened.end(msg.conn);
        // Its Disconnect may have been handled already: registering it now
        // would keep a listener nobody removes.
        if msg.queue.is_closed() {
            return;
        }
        let sub = self
            .subscribers
            .entry(msg.conn)
            .or_insert_with(|| Subscriber {
                keys: HashMap::new(),
                labels: ClientLabels::default(),
                queue: msg.queue,
                client: msg.client,
            });
        sub.labels = msg.labels;
        for k in msg.keys {
            self.subscribers_by_key
                .entry(k.key.clone())
                .or_default()
                .insert(msg.conn);
            let seen = k.md5.clone();
            sub.keys
                .insert(k.key.clone(), Subscription { listen: k, seen });
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
        self.unlistened.end(msg.conn);
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

/// A gRPC connection closed: forget everything it listened to (and its
/// fuzzy watches).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Disconnect(pub u64);

impl Handler<Disconnect> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Disconnect, _: &mut Context<Self>) {
        self.unlistened.end(msg.0);
        self.fuzzy.disconnect(msg.0);
        if let Some(sub) = self.subscribers.remove(&msg.0) {
            for key in sub.keys.keys() {
                self.unsubscribe(msg.0, key);
            }
        }
    }
}
