//! How far behind the cluster a learner's reads may be.
//!
//! A voter is part of every commit's quorum, so it is never far behind while
//! it is part of the cluster. A learner is not: it receives the log but
//! nothing waits for it, so over a slow link (another data center) or a
//! partition it may fall behind without limit, and its clients would read
//! old configs and be told of changes late. So a learner measures itself:
//! every [`CHECK_PERIOD`] it asks the leader's read index (the index a
//! linearizable read would wait for) and remembers it. Its reads are
//! refused ([`Behind`]) while
//!
//! * the last read index it got is more than `max_lag` entries past what it
//!   has applied, or
//! * it got none for `stale_after` (the leader is unreachable: how far
//!   behind it is, is unknown), which is also the case before its first
//!   check succeeds.
//!
//! A client may still ask for a stale read (HTTP `consistency=stale`);
//! clients refused move to another node, as they do from a node that is
//! down. Entries, not seconds: a learner that applies everything it has
//! been sent is fresh however long ago the last write was.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a learner asks the leader's read index.
pub const CHECK_PERIOD: Duration = Duration::from_secs(1);

/// What a learner may serve.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most entries a learner's reads may lag the leader's read index.
    pub max_lag: u64,
    /// How long a learner serves after its last successful check.
    pub stale_after: Duration,
}

/// Why a learner does not serve reads now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Behind {
    #[error(
        "this learner is {lag} entries behind the leader (more than the {max_lag} it may lag); retry on another node, or ask for a stale read"
    )]
    Lagging { lag: u64, max_lag: u64 },
    #[error(
        "this learner has not reached the leader for {} s, so it does not know how far behind it is; retry on another node, or ask for a stale read", .since.as_secs()
    )]
    Unknown { since: Duration },
}

/// The last measurement.
#[derive(Debug, Default)]
struct Measure {
    /// The leader's read index at the last successful check, and when.
    last: Option<(u64, Instant)>,
    /// When this node started measuring (it counts as unknown since then).
    started: Option<Instant>,
}

/// A learner's freshness, as measured by its checks.
#[derive(Debug)]
pub struct Freshness {
    limits: Limits,
    measure: Mutex<Measure>,
}

/// What the metrics and the admin view show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lag {
    /// Entries behind the last read index (`None` before the first check).
    pub entries: Option<u64>,
    /// Since the last successful check (`None` before the first).
    pub age: Option<Duration>,
}

impl Freshness {
    pub fn new(limits: Limits) -> Freshness {
        Freshness {
            limits,
            measure: Mutex::new(Measure::default()),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn with<T>(&self, f: impl FnOnce(&mut Measure) -> T) -> T {
        // A poisoned lock only means a panic elsewhere mid-update of two
        // plain fields: the data is still usable.
        let mut guard = self.measure.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// A check found the leader's read index `index` now.
    pub fn record(&self, index: u64, now: Instant) {
        self.with(|m| m.last = Some((index, now)));
    }

    /// Starts the unknown-since clock (the first time this node is a learner).
    pub fn start(&self, now: Instant) {
        self.with(|m| {
            m.started.get_or_insert(now);
        });
    }

    /// How far behind a node that has applied `applied` is, as of `now`.
    pub fn lag(&self, applied: u64, now: Instant) -> Lag {
        self.with(|m| match m.last {
            Some((index, at)) => Lag {
                entries: Some(index.saturating_sub(applied)),
                age: Some(now.saturating_duration_since(at)),
            },
            None => Lag {
                entries: None,
                age: None,
            },
        })
    }

    /// Whether a learner that has applied `applied` may serve reads `now`.
    pub fn check(&self, applied: u64, now: Instant) -> Result<(), Behind> {
        let (last, started) = self.with(|m| (m.last, m.started));
        match last {
            Some((_, at)) if now.saturating_duration_since(at) > self.limits.stale_after => {
                Err(Behind::Unknown {
                    since: now.saturating_duration_since(at),
                })
            }
            Some((index, _)) => {
                let lag = index.saturating_sub(applied);
                if lag > self.limits.max_lag {
                    Err(Behind::Lagging {
                        lag,
                        max_lag: self.limits.max_lag,
                    })
                } else {
                    Ok(())
                }
            }
            None => Err(Behind::Unknown {
                since: started.map_or(Duration::ZERO, |s| now.saturating_duration_since(s)),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_lag: 100,
            stale_after: Duration::from_secs(10),
        }
    }

    #[test]
    fn unknown_until_the_first_check() {
        let f = Freshness::new(limits());
        let t0 = Instant::now();
        f.start(t0);
        assert_eq!(
            f.check(0, t0 + Duration::from_secs(3)),
            Err(Behind::Unknown {
                since: Duration::from_secs(3)
            })
        );
        f.record(50, t0 + Duration::from_secs(3));
        assert_eq!(f.check(0, t0 + Duration::from_secs(4)), Ok(()));
    }

    #[test]
    fn lag_is_measured_against_what_is_applied_now() {
        let f = Freshness::new(limits());
        let t0 = Instant::now();
        f.record(1000, t0);
        assert_eq!(
            f.check(899, t0),
            Err(Behind::Lagging {
                lag: 101,
                max_lag: 100
            })
        );
        // Catching up needs no new check.
        assert_eq!(f.check(900, t0), Ok(()));
        assert_eq!(
            f.lag(950, t0 + Duration::from_secs(2)),
            Lag {
                entries: Some(50),
                age: Some(Duration::from_secs(2))
            }
        );
    }

    #[test]
    fn no_check_for_too_long_is_unknown() {
        let f = Freshness::new(limits());
        let t0 = Instant::now();
        f.record(10, t0);
        assert_eq!(f.check(10, t0 + Duration::from_secs(10)), Ok(()));
        assert_eq!(
            f.check(10, t0 + Duration::from_secs(11)),
            Err(Behind::Unknown {
                since: Duration::from_secs(11)
            })
        );
    }
}
