//! Applied changes reach the hub (`Changed`): it wakes the long polls and
//! queues pushes for the gRPC listeners whose keys changed (and for the
//! config connections that have not listened yet, see
//! [`super::unlistened`]), and tells fuzzy watchers which keys came or went
//! ([`super::fuzzy`]).

use actix::prelude::*;

use super::*;

/// An applied batch changed these keys (applied at the given instant).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Changed(pub Changes, pub std::time::Instant);

impl Handler<Changed> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Changed, _: &mut Context<Self>) {
        let ids: Vec<u64> = match msg.0 {
            Changes::All => {
                let state = self.state.load();
                self.fuzzy.changed_all(&state);
                for sub in self.subscribers.values_mut() {
                    for (key, subscribed) in sub.keys.iter_mut() {
                        let now = md5_for(&state, key, &sub.labels);
                        now.clone_into(&mut subscribed.seen);
                        sub.queue.mark(&subscribed.listen);
                    }
                }
                self.holds.keys().copied().collect()
            }
            Changes::Keys(keys) => {
                self.push(&keys);
                self.fuzzy.changed(&self.state.load(), &keys);
                self.unlistened.changed(&keys, std::time::Instant::now());
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
        // The handle is made once: the macro looks the series up on every call.
        static NOTIFY: std::sync::LazyLock<metrics::Histogram> =
            std::sync::LazyLock::new(|| metrics::histogram!("tacos_watch_notify_seconds"));
        for _ in 0..woken {
            NOTIFY.record(latency);
        }
    }
}
