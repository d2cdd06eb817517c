//! The `fanout` tool's parts: how long one publish takes to reach thousands of
//! listeners, HTTP long polls and gRPC streams, held on one or many nodes.
//!
//! - [`long_poll`]: a Nacos v1 long-poll listener on a hand-written HTTP/1.1
//!   connection (one socket and one small task each);
//! - [`sys`]: file-descriptor limits, loopback source addresses, the server process
//!   behind a port and its RSS;
//! - [`Round`] here: what one publish measured, listener by listener.
//!
//! gRPC listeners are [`crate::grpc::Client`]s, one connection (channel and stream)
//! each, as the official SDKs open them.

pub mod long_poll;
pub mod sys;

use std::time::Instant;

use crate::latency::ms;

/// A listener learned of the change: listener `tag`, at `at` (when the reply's or
/// push's first bytes came off its socket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notified {
    pub tag: u32,
    pub at: Instant,
}

/// Which protocol a listener speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Http,
    Grpc,
}

/// One publish: when it was sent (t0) and answered (t1), and each listener's first
/// notification after t0.
#[derive(Debug, Clone)]
pub struct Round {
    pub t0: Instant,
    pub t1: Instant,
    pub publish_ok: bool,
    /// Per listener tag: `None` = not expected (its setup failed).
    kinds: Vec<Option<Kind>>,
    arrivals: Vec<Option<Instant>>,
    waiting: usize,
    pub duplicates: u64,
    /// Notifications stamped before t0: left over from an earlier publish.
    pub stale: u64,
}

/// A signed duration `at - from` in ms (negative when `at` is earlier).
pub fn signed_ms(at: Instant, from: Instant) -> f64 {
    if at >= from {
        ms(at - from)
    } else {
        -ms(from - at)
    }
}

impl Round {
    /// A round over listeners of `kinds` (None: not expected).
    pub fn new(kinds: Vec<Option<Kind>>, t0: Instant) -> Round {
        let waiting = kinds.iter().flatten().count();
        Round {
            t0,
            t1: t0,
            publish_ok: false,
            arrivals: vec![None; kinds.len()],
            kinds,
            waiting,
            duplicates: 0,
            stale: 0,
        }
    }

    /// Counts a notification; true when every expected listener has one.
    pub fn record(&mut self, n: Notified) -> bool {
        let i = n.tag as usize;
        if n.at < self.t0 {
            self.stale += 1;
        } else if self.kinds.get(i).copied().flatten().is_some() {
            match &mut self.arrivals[i] {
                slot @ None => {
                    *slot = Some(n.at);
                    self.waiting -= 1;
                }
                Some(_) => self.duplicates += 1,
            }
        }
        self.done()
    }

    pub fn done(&self) -> bool {
        self.waiting == 0
    }

    pub fn expected(&self) -> usize {
        self.kinds.iter().flatten().count()
    }

    pub fn notified(&self) -> usize {
        self.expected() - self.waiting
    }

    /// Expected listeners with no notification.
    pub fn missed(&self) -> Vec<u32> {
        self.kinds
            .iter()
            .zip(&self.arrivals)
            .enumerate()
            .filter(|(_, (k, a))| k.is_some() && a.is_none())
            .map(|(i, _)| i as u32)
            .collect()
    }

    pub fn missed_of(&self, kind: Kind) -> usize {
        self.kinds
            .iter()
            .zip(&self.arrivals)
            .filter(|(k, a)| **k == Some(kind) && a.is_none())
            .count()
    }

    /// Each notified listener's latency in ms, from the publish's answer (t1, signed:
    /// a server may notify before it answers) or from when it was sent (t0); only
    /// listeners of `kind` when given.
    pub fn latencies(&self, from_send: bool, kind: Option<Kind>) -> Vec<f64> {
        let from = if from_send { self.t0 } else { self.t1 };
        self.kinds
            .iter()
            .zip(&self.arrivals)
            .filter(|(k, _)| kind.is_none() || **k == kind)
            .filter_map(|(_, a)| a.map(|at| signed_ms(at, from)))
            .collect()
    }

    /// When the last notified listener was told, in ms from t1 (or t0).
    pub fn last(&self, from_send: bool) -> Option<f64> {
        let from = if from_send { self.t0 } else { self.t1 };
        self.arrivals
            .iter()
            .flatten()
            .max()
            .map(|&at| signed_ms(at, from))
    }

    /// Notifications per second over the round: notified / (last - t0).
    pub fn rate(&self) -> Option<f64> {
        let last = self.last(true)?;
        (last > 0.0).then(|| self.notified() as f64 * 1000.0 / last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_round_counts_each_listener_once() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let kinds = vec![Some(Kind::Http), Some(Kind::Grpc), None, Some(Kind::Grpc)];
        let mut r = Round::new(kinds, t0);
        r.t1 = at(10);
        r.publish_ok = true;
        assert_eq!(r.expected(), 3);
        assert!(!r.record(Notified { tag: 1, at: at(8) }));
        assert!(!r.record(Notified { tag: 1, at: at(9) }));
        assert!(!r.record(Notified { tag: 2, at: at(9) }));
        // Before the publish was sent: left over from an earlier round.
        let mut early = Round::new(vec![Some(Kind::Http)], at(5));
        assert!(!early.record(Notified { tag: 0, at: t0 }));
        assert_eq!(early.stale, 1);
        assert!(!r.record(Notified { tag: 0, at: at(30) }));
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.missed(), vec![3]);
        assert_eq!(r.missed_of(Kind::Grpc), 1);
        assert_eq!(r.missed_of(Kind::Http), 0);
        let mut from_answer = r.latencies(false, None);
        from_answer.sort_by(f64::total_cmp);
        assert_eq!(from_answer, vec![-2.0, 20.0]);
        assert_eq!(r.latencies(true, Some(Kind::Http)), vec![30.0]);
        assert_eq!(r.last(false), Some(20.0));
        assert_eq!(r.last(true), Some(30.0));
        assert!(r.record(Notified { tag: 3, at: at(40) }));
        assert_eq!(r.notified(), 3);
        assert_eq!(r.rate(), Some(75.0));
    }
}
