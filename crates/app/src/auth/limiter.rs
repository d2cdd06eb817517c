//! Login rate limiting: failed logins are counted per user and per client
//! IP in fixed windows; once a key reaches its limit, further attempts for
//! it are refused without checking the password until the window ends. A
//! success clears the user's count (not the IP's). Memory is bounded: when
//! a table grows past [`MAX_KEYS`], expired windows are dropped, and if that
//! is not enough the oldest windows go.

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

impl LoginLimiter {
    pub fn new(user_limit: Limit, ip_limit: Limit) -> Self {
        LoginLimiter {
            by_user: DashMap::new(),
            by_ip: DashMap::new(),
            user_limit,
            ip_limit,
        }
    }

    /// 5 failures per user and 20 per IP, per minute.
    pub fn standard() -> Self {
        LoginLimiter::new(
            Limit {
                failures: 5,
                window: Duration::from_secs(60),
            },
            Limit {
                failures: 20,
                window: Duration::from_secs(60),
            },
        )
    }

    /// `Err(wait)` when `user` or `ip` may not try again for `wait`.
    pub fn check(&self, user: &str, ip: &str, now: Instant) -> Result<(), Duration> {
        let by_user = blocked(&self.by_user, user, self.user_limit, now);
        let by_ip = blocked(&self.by_ip, ip, self.ip_limit, now);
        match by_user.max(by_ip) {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    pub fn failed(&self, user: &str, ip: &str, now: Instant) {
        count(&self.by_user, user, self.user_limit, now);
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
            Limit {
                failures: 3,
                window: minute,
            },
            Limit {
                failures: 5,
                window: minute,
            },
        )
    }

    #[test]
    fn a_user_is_blocked_after_its_failures_until_the_window_ends() {
        let l = limiter();
        let t = Instant::now();
        for _ in 0..3 {
            l.check("alice", "1.1.1.1", t).unwrap();
            l.failed("alice", "1.1.1.1", t);
        }
        let wait = l
            .check("alice", "2.2.2.2", t + Duration::from_secs(10))
            .unwrap_err();
        assert_eq!(wait, Duration::from_secs(50));
        l.check("bob", "2.2.2.2", t).unwrap();
        l.check("alice", "1.1.1.1", t + Duration::from_secs(60))
            .unwrap();
    }

    #[test]
    fn an_ip_is_blocked_across_users_and_success_clears_the_user_only() {
        let l = limiter();
        let t = Instant::now();
        for user in ["a", "b", "c", "d", "e"] {
            l.failed(user, "9.9.9.9", t);
        }
        assert!(l.check("f", "9.9.9.9", t).is_err());
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
