//! A per-user request pacer: at most `rate` requests per second, evenly spaced.
//!
//! Each goose user (or gRPC connection, or the listen scenario's writer) owns one
//! [`RateLimiter`] and asks it before every request how long to wait. Slots are
//! `1 / rate` apart; a user that fell behind (a slow answer) does not catch up with a
//! burst, it starts again from now, so the limiter never sends faster than `rate`. The
//! first slot of each user is offset by a random phase within one interval, so many
//! users started together do not fire in lockstep.
//!
//! Timers are coarse (tokio sleeps in whole milliseconds, so a 0.4 ms wait takes about
//! 1 ms): a slot missed by at most [`LATE_TOLERANCE`] is still honoured (the request goes
//! at once and the schedule stays), so rates above 1000/s per user hold on average;
//! only a user later than that starts a new schedule from now.

use std::time::{Duration, Instant};

use thiserror::Error;

/// A rate that is not a positive, finite number of requests per second.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("a rate must be a positive, finite number of requests per second, not {0}")]
pub struct InvalidRate(pub f64);

/// How late a slot may be taken and still keep the schedule.
pub const LATE_TOLERANCE: Duration = Duration::from_millis(2);

/// Paces one user to at most `rate` requests per second.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    interval: Duration,
    /// The phase of the first slot, as a fraction of the interval (0..1).
    phase: f64,
    /// When the next request may go; `None` before the first.
    next: Option<Instant>,
}

impl RateLimiter {
    /// A limiter for `rate` requests per second whose first slot comes after a random
    /// part of one interval.
    pub fn new(rate: f64) -> Result<Self, InvalidRate> {
        Self::with_phase(rate, rand::random::<f64>())
    }

    /// A limiter whose first slot comes `phase` (0..1, clamped) of an interval after the
    /// first call to [`reserve`](Self::reserve).
    pub fn with_phase(rate: f64, phase: f64) -> Result<Self, InvalidRate> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(InvalidRate(rate));
        }
        let interval = Duration::from_secs_f64(1.0 / rate);
        Ok(RateLimiter {
            interval,
            phase: if phase.is_finite() {
                phase.clamp(0.0, 1.0)
            } else {
                0.0
            },
            next: None,
        })
    }

    /// `None` for 0 (unlimited), else a limiter for `rate`.
    pub fn optional(rate: f64) -> Result<Option<Self>, InvalidRate> {
        if rate == 0.0 {
            Ok(None)
        } else {
            Self::new(rate).map(Some)
        }
    }

    /// The spacing between two requests.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Takes the next slot: how long to wait from `now` before sending. A slot less than
    /// [`LATE_TOLERANCE`] in the past is kept (send now, the schedule stays); one further
    /// back (the user was slower than the rate) is moved to `now`, so there is no burst
    /// to catch up.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let slot = match self.next {
            None => now + self.interval.mul_f64(self.phase),
            Some(next) if next + LATE_TOLERANCE >= now => next,
            Some(_) => now,
        };
        self.next = Some(slot + self.interval);
        slot.saturating_duration_since(now)
    }

    /// Waits for the next slot (tokio).
    pub async fn wait(&mut self) {
        let delay = self.reserve(Instant::now());
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_rates() {
        assert!(RateLimiter::new(0.0).is_err());
        assert!(RateLimiter::new(-1.0).is_err());
        assert!(RateLimiter::new(f64::NAN).is_err());
        assert!(RateLimiter::new(f64::INFINITY).is_err());
        assert!(RateLimiter::optional(0.0).unwrap().is_none());
        assert!(RateLimiter::optional(-3.0).is_err());
        assert_eq!(
            RateLimiter::new(4.0).unwrap().interval(),
            Duration::from_millis(250)
        );
    }

    #[test]
    fn spaces_requests_evenly() {
        let mut limiter = RateLimiter::with_phase(10.0, 0.0).unwrap();
        let t0 = Instant::now();
        // The first request goes at once (phase 0), then one every 100 ms, even when
        // the caller asks again right away.
        assert_eq!(limiter.reserve(t0), Duration::ZERO);
        assert_eq!(limiter.reserve(t0), Duration::from_millis(100));
        assert_eq!(limiter.reserve(t0), Duration::from_millis(200));
        // Asking later shortens the wait by the time that passed.
        assert_eq!(
            limiter.reserve(t0 + Duration::from_millis(250)),
            Duration::from_millis(50)
        );
    }

    #[test]
    fn does_not_burst_after_a_slow_request() {
        let mut limiter = RateLimiter::with_phase(10.0, 0.0).unwrap();
        let t0 = Instant::now();
        assert_eq!(limiter.reserve(t0), Duration::ZERO);
        // The answer took a whole second: ten slots passed. The next request may go
        // now, and the one after waits a full interval instead of going at once.
        let late = t0 + Duration::from_secs(1);
        assert_eq!(limiter.reserve(late), Duration::ZERO);
        assert_eq!(limiter.reserve(late), Duration::from_millis(100));
    }

    #[test]
    fn a_slightly_late_wakeup_keeps_the_schedule() {
        // 2500/s: slots 0.4 ms apart, but the timer wakes in whole milliseconds.
        let mut limiter = RateLimiter::with_phase(2500.0, 0.0).unwrap();
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        assert_eq!(limiter.reserve(us(0)), Duration::ZERO);
        assert_eq!(limiter.reserve(us(0)), Duration::from_micros(400));
        // Woke at 1.0 ms instead of 0.4 ms: the slots at 0.8 ms is due at once too.
        assert_eq!(limiter.reserve(us(1000)), Duration::ZERO);
        assert_eq!(limiter.reserve(us(1000)), Duration::from_micros(200));
        // Over a second of 1 ms wake-ups the rate holds at 2500/s.
        let mut limiter = RateLimiter::with_phase(2500.0, 0.0).unwrap();
        let mut now = t0;
        let mut sent = 0;
        while now < t0 + Duration::from_secs(1) {
            let wait = limiter.reserve(now);
            // A coarse timer: any wait takes the next whole millisecond.
            if !wait.is_zero() {
                let ms = (wait.as_micros() as u64).div_ceil(1000).max(1);
                now += Duration::from_millis(ms);
            }
            if now < t0 + Duration::from_secs(1) {
                sent += 1;
            }
        }
        assert!((2490..=2500).contains(&sent), "{sent}");
    }

    #[test]
    fn first_slot_follows_the_phase() {
        let mut limiter = RateLimiter::with_phase(2.0, 0.5).unwrap();
        let t0 = Instant::now();
        assert_eq!(limiter.reserve(t0), Duration::from_millis(250));
        assert_eq!(limiter.reserve(t0), Duration::from_millis(750));
        // Out-of-range phases are clamped.
        let mut limiter = RateLimiter::with_phase(1.0, 7.0).unwrap();
        assert_eq!(limiter.reserve(t0), Duration::from_secs(1));
    }

    #[test]
    fn holds_the_rate_over_many_requests() {
        // A caller that is always ready sends exactly `rate` per second.
        let mut limiter = RateLimiter::with_phase(250.0, 0.0).unwrap();
        let t0 = Instant::now();
        let mut now = t0;
        let mut sent = 0;
        while now < t0 + Duration::from_secs(2) {
            now += limiter.reserve(now);
            if now < t0 + Duration::from_secs(2) {
                sent += 1;
            }
        }
        assert_eq!(sent, 500);
    }

    #[tokio::test]
    async fn waits_in_real_time() {
        let mut limiter = RateLimiter::with_phase(50.0, 0.0).unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            limiter.wait().await;
        }
        // Slots at 0, 20 and 40 ms.
        assert!(t0.elapsed() >= Duration::from_millis(40));
    }
}
