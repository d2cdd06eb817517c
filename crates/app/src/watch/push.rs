//! Per-connection push queues for gRPC listeners.
//!
//! The hub never waits on a client: it marks changed keys in the listening
//! connection's [`PushQueue`] (a set, so a key that changes many times before
//! the client acknowledges is pushed once) and moves on. The connection's own
//! push task drains the queue, sends notifications and waits for acks. A slow
//! or dead client therefore delays only itself, and its queue never holds
//! more than the keys it listens to.
//!
//! A key the connection does not listen to (a change pushed to a client
//! that has not listened yet, `super::unlistened`) is re-sent the same way,
//! since the client it is for (the Rust SDK 0.8) may miss the first send
//! right after a reconnect, but its missing ack is no fault of the client
//! ([`Push::listened`] false): an SDK that does not hold the key need not
//! answer (the Go SDK 2.3.2 sends no response at all).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::ListenKey;

/// Keys waiting to be pushed to one connection.
#[derive(Clone, Default)]
pub struct PushQueue(Arc<Inner>);

/// One key waiting to be pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    pub key: ListenKey,
    /// Whether the connection listens to the key: an unacknowledged push
    /// of a key it does not listen to is no fault of the client.
    pub listened: bool,
}

#[derive(Default)]
struct Inner {
    dirty: Mutex<Vec<Push>>,
    notify: Notify,
    /// The connection is gone: the hub must not (re)register it.
    closed: AtomicBool,
}

impl PushQueue {
    /// Queues `key` (once), a key the connection listens to, and wakes the
    /// push task.
    pub fn mark(&self, key: &ListenKey) {
        self.queue(key, true);
    }

    /// Queues `key`, a key the connection does not listen to; a key
    /// already queued as listened stays so.
    pub fn mark_unlistened(&self, key: &ListenKey) {
        self.queue(key, false);
    }

    fn queue(&self, key: &ListenKey, listened: bool) {
        let mut dirty = self.0.dirty.lock().unwrap_or_else(|e| e.into_inner());
        match dirty
            .iter_mut()
            .find(|p| p.key.key == key.key && p.key.tenant == key.tenant)
        {
            Some(queued) => queued.listened |= listened,
            None => dirty.push(Push {
                key: key.clone(),
                listened,
            }),
        }
        drop(dirty);
        self.0.notify.notify_one();
    }

    /// Waits until keys are queued and takes them all.
    pub async fn take(&self) -> Vec<Push> {
        loop {
            let keys = std::mem::take(&mut *self.0.dirty.lock().unwrap_or_else(|e| e.into_inner()));
            if !keys.is_empty() {
                return keys;
            }
            self.0.notify.notified().await;
        }
    }

    /// Marks the connection closed, before its `Disconnect` is sent: a
    /// `Subscribe` the hub handles after that `Disconnect` (a listen request
    /// that was answered while the connection closed) is then ignored
    /// instead of registering a connection that is gone.
    pub fn close(&self) {
        self.0.closed.store(true, Ordering::Release);
    }

    /// Whether [`PushQueue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.0.closed.load(Ordering::Acquire)
    }

    /// Whether a change to `key` waits to be pushed.
    pub fn contains(&self, key: &tacos_state::ConfigKey) -> bool {
        self.0
            .dirty
            .lock()
            .map(|d| d.iter().any(|p| &p.key.key == key))
            .unwrap_or(false)
    }

    /// How many keys wait.
    pub fn len(&self) -> usize {
        self.0.dirty.lock().map(|d| d.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacos_state::ConfigKey;

    fn key(data_id: &str) -> ListenKey {
        ListenKey {
            key: ConfigKey::new("", "G", data_id),
            data_id: data_id.into(),
            group: "G".into(),
            tenant: String::new(),
            md5: String::new(),
        }
    }

    fn pushed(keys: &[(&str, bool)]) -> Vec<Push> {
        keys.iter()
            .map(|&(data_id, listened)| Push {
                key: key(data_id),
                listened,
            })
            .collect()
    }

    #[tokio::test]
    async fn marks_are_deduplicated_and_wake_the_taker() {
        let queue = PushQueue::default();
        let taker = tokio::spawn({
            let queue = queue.clone();
            async move { queue.take().await }
        });
        tokio::task::yield_now().await;
        queue.mark(&key("a"));
        let taken = taker.await.unwrap();
        assert_eq!(taken, pushed(&[("a", true)]));
        queue.mark(&key("b"));
        queue.mark(&key("b"));
        queue.mark(&key("c"));
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.take().await, pushed(&[("b", true), ("c", true)]));
        assert!(queue.is_empty());
    }

    /// A key marked both ways is pushed once, as a listened key.
    #[tokio::test]
    async fn a_listened_mark_wins_over_an_unlistened_one() {
        let queue = PushQueue::default();
        queue.mark_unlistened(&key("a"));
        queue.mark(&key("a"));
        queue.mark(&key("b"));
        queue.mark_unlistened(&key("b"));
        queue.mark_unlistened(&key("c"));
        assert_eq!(
            queue.take().await,
            pushed(&[("a", true), ("b", true), ("c", false)])
        );
    }
}
