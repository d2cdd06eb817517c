//! Per-connection push queues for gRPC listeners.
//!
//! The hub never waits on a client: it marks changed keys in the listening
//! connection's [`PushQueue`] (a set, so a key that changes many times before
//! the client acknowledges is pushed once) and moves on. The connection's own
//! push task drains the queue, sends notifications and waits for acks. A slow
//! or dead client therefore delays only itself, and its queue never holds
//! more than the keys it listens to.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::ListenKey;

/// Keys waiting to be pushed to one connection.
#[derive(Clone, Default)]
pub struct PushQueue(Arc<Inner>);

#[derive(Default)]
struct Inner {
    dirty: Mutex<Vec<ListenKey>>,
    notify: Notify,
    /// The connection is gone: the hub must not (re)register it.
    closed: AtomicBool,
}

impl PushQueue {
    /// Queues `key` (once) and wakes the push task.
    pub fn mark(&self, key: &ListenKey) {
        let mut dirty = self.0.dirty.lock().unwrap_or_else(|e| e.into_inner());
        if !dirty
            .iter()
            .any(|k| k.key == key.key && k.tenant == key.tenant)
        {
            dirty.push(key.clone());
        }
        drop(dirty);
        self.0.notify.notify_one();
    }

    /// Waits until keys are queued and takes them all.
    pub async fn take(&self) -> Vec<ListenKey> {
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
            .map(|d| d.iter().any(|k| &k.key == key))
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
        assert_eq!(taken, vec![key("a")]);
        queue.mark(&key("b"));
        queue.mark(&key("b"));
        queue.mark(&key("c"));
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.take().await, vec![key("b"), key("c")]);
        assert!(queue.is_empty());
    }
}
