//! Failed logins: account lockout per username and a rate limit per client
//! IP. Both are counted in fixed windows; once a key reaches its limit,
//! further attempts for it are refused without checking the password.
//!
//! * An account (any name tried, known or not, so the lock says nothing
//!   about which names exist) is locked for `--login-lockout-seconds` once
//!   `--login-lockout-failures` logins failed within that many seconds,
//!   even for the right password; the refusal says until when. A success
//!   (while not locked) clears the account's count.
//! * A client IP is limited to 20 failures a minute, across names.
//!
//! Per node, in memory, on purpose: counting failures cluster-wide would make
//! every wrong password a Raft write (a guessing attack would then write to
//! every node's log), and logins must keep working without a quorum. So with
//! N nodes an attacker gets at most N times the failures per lock period;
//! a restart forgets the counts. Memory is bounded: when a table grows past
//! [`MAX_KEYS`], expired windows are dropped, and if that is not enough the
//! oldest windows go.

use std::time::{Duration, Instant};

use dashmap::DashMap;

/// Most keys tracked per table.
pub const MAX_KEYS: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

/// Limits for one table.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub failures: u32,
    pub window: Duration,
}

/// The account lockout: `failures` within `duration` lock the account for
/// `duration`. `failures == 0`: never locked.
#[derive(Debug, Clone, Copy)]
pub struct Lockout {
    pub failures: u32,
    pub duration: Duration,
}

impl Lockout {
    /// 5 failures lock an account for 5 minutes.
    pub const STANDARD: Lockout = Lockout {
        failures: 5,
        duration: Duration::from_secs(300),
    };
}

/// Why an attempt is refused before its password is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The account is locked for `wait` more, after `failures` failures.
    Locked { wait: Duration, failures: u32 },
    /// The client IP failed too often; `wait` until it may try again.
    RateLimited(Duration),
}

pub struct LoginLimiter {
    by_user: DashMap<String, Window>,
    by_ip: DashMap<String, Window>,
    user_limit: Limit,
    ip_limit: Limit,
}

fn blocked(
    table: &DashMap<String, Window>,
    key: &str,
    limit: Limit,
    now: Instant,
) -> Option<Duration> {
    let window = table.get(key)?;
    let ends = window.start + limit.window;
    (window.failures >= limit.failures && now < ends).then(|| ends - now)
}

fn count(table: &DashMap<String, Window>, key: &str, limit: Limit, now: Instant) {
    if table.len() >= MAX_KEYS {
        table.retain(|_, w| now < w.start + limit.window);
        if table.len() >= MAX_KEYS {
            let mut starts: Vec<Instant> = table.iter().map(|e| e.start).collect();
            starts.sort();
            let cut = starts[starts.len() / 2];
            table.retain(|_, w| w.start > cut);
        }
    }
    let mut window = table.entry(key.to_string()).or_insert(Window {
        start: now,
        failures: 0,
    });
    if now >= window.start + limit.window {
        *window = Window {
            start: now,
            failures: 0,
        };
    }
    window.failures += 1;
}

/// The IP limit: 20 failures a minute.
pub const IP_LIMIT: Limit = Limit {
    failures: 20,
    window: Duration::from_secs(60),
};

impl LoginLimiter {
    pub fn new(lockout: Lockout, ip_limit: Limit) -> Self {
        LoginLimiter {
            by_user: DashMap::new(),
            by_ip: DashMap::new(),
            // A lock lasts from the failure that set it: the window is
            // restarted then (see `failed`).
            user_limit: Limit {
                failures: lockout.failures,
                window: lockout.duration,
            },
            ip_limit,
        }
    }

    /// The standard lockout and the IP limit.
    pub fn standard() -> Self {
        LoginLimiter::new(Lockout::STANDARD, IP_LIMIT)
    }

    /// Whether `user` from `ip` may try a password now.
    pub fn check(&self, user: &str, ip: &str, now: Instant) -> Result<(), Refused> {
        if self.user_limit.failures > 0 {
            if let Some(wait) = blocked(&self.by_user, user, self.user_limit, now) {
                return Err(Refused::Locked {
                    wait,
                    failures: self.user_limit.failures,
                });
            }
        }
        match blocked(&self.by_ip, ip, self.ip_limit, now) {
            Some(wait) => Err(Refused::RateLimited(wait)),
            None => Ok(()),
        }
    }

    pub fn failed(&self, user: &str, ip: &str, now: Instant) {
        if self.user_limit.failures > 0 {
            count(&self.by_user, user, self.user_limit, now);
            // The failure that locks the account starts the lock period.
            if let Some(mut window) = self.by_user.get_mut(user) {
                if window.failures >= self.user_limit.failures {
                    window.start = now;
                }
            }
        }
        count(&self.by_ip, ip, self.ip_limit, now);
    }

    pub fn succeeded(&self, user: &str) {
        self.by_user.remove(user);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter() -> LoginLimiter {
        let minute = Duration::from_secs(60);
        LoginLimiter::new(
            Lockout {
                failures: 3,
                duration: minute,
            },
            Limit {
                failures: 5,
                window: minute,
            },
        )
    }

    #[test]
    fn an_account_is_locked_after_its_failures_for_the_lock_period() {
        let l = limiter();
        let t = Instant::now();
        let s = Duration::from_secs;
        // Two failures, then a third 30 s later: locked for 60 s from then.
        for at in [t, t, t + s(30)] {
            l.check("alice", "1.1.1.1", at).unwrap();
            l.failed("alice", "1.1.1.1", at);
        }
        let refused = l.check("alice", "2.2.2.2", t + s(40)).unwrap_err();
        assert_eq!(
            refused,
            Refused::Locked {
                wait: s(50),
                failures: 3
            }
        );
        l.check("bob", "2.2.2.2", t).unwrap();
        assert!(l.check("alice", "1.1.1.1", t + s(89)).is_err());
        l.check("alice", "1.1.1.1", t + s(90)).unwrap();
        // Failures spread wider than the period never lock.
        for i in 0..6 {
            let at = t + s(100 + 61 * i);
            l.check("carol", "3.3.3.3", at).unwrap();
            l.failed("carol", "3.3.3.3", at);
        }
    }

    #[test]
    fn no_lockout_when_its_failures_are_zero() {
        let l = LoginLimiter::new(
            Lockout {
                failures: 0,
                duration: Duration::from_secs(60),
            },
            IP_LIMIT,
        );
        let t = Instant::now();
        for i in 0..19 {
            l.failed("alice", &format!("10.0.0.{i}"), t);
        }
        l.check("alice", "1.1.1.1", t).unwrap();
    }

    #[test]
    fn an_ip_is_blocked_across_users_and_success_clears_the_user_only() {
        let l = limiter();
        let t = Instant::now();
        for user in ["a", "b", "c", "d", "e"] {
            l.failed(user, "9.9.9.9", t);
        }
        assert!(matches!(
            l.check("f", "9.9.9.9", t),
            Err(Refused::RateLimited(_))
        ));
        l.check("f", "8.8.8.8", t).unwrap();
        for _ in 0..3 {
            l.failed("g", "7.7.7.7", t);
        }
        assert!(l.check("g", "6.6.6.6", t).is_err());
        l.succeeded("g");
        l.check("g", "6.6.6.6", t).unwrap();
    }

    #[test]
    fn the_tables_stay_bounded() {
        let l = limiter();
        let t = Instant::now();
        for i in 0..(MAX_KEYS + 10) {
            l.failed(
                &format!("user{i}"),
                "1.2.3.4",
                t + Duration::from_nanos(i as u64),
            );
        }
        assert!(l.by_user.len() <= MAX_KEYS);
    }
}
