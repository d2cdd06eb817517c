//! Finding the saturation point in a users x per-user-rate matrix.
//!
//! Each matrix point offers `users x rate` requests/s (a rate of 0 is a closed loop:
//! every user sends as soon as its previous answer came, so it offers "as much as the
//! server takes"). Sorted by offered load, throughput first follows the offered load;
//! past the saturation point it stops growing while p99 climbs.
//!
//! A point is **healthy** when it served at least [`SERVED_SHARE`] of what it offered
//! (closed-loop points always do), failed at most 1 % of its requests, and its p99 is
//! within [`P99_FACTOR`] of the best p99 in the matrix (plus [`P99_SLACK_MS`], so sub-ms
//! latencies do not make every point look saturated). The **capacity** is the highest
//! throughput of any point; the **knee** the healthy point with the highest
//! throughput. The operating point for the A/B runs is `fraction` (0.8) of the
//! capacity, "just below saturation", offered by the fewest users that reached it with
//! some headroom ([`operating_point`]).

/// A point that served less than this share of its offered load is saturated.
pub const SERVED_SHARE: f64 = 0.9;
/// A point whose p99 exceeds this many times the best p99 is saturated ...
pub const P99_FACTOR: f64 = 3.0;
/// ... plus this many milliseconds.
pub const P99_SLACK_MS: f64 = 5.0;

/// One measured matrix point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub users: usize,
    /// Requests/s per user; 0 = unlimited.
    pub rate: f64,
    pub throughput: f64,
    pub p99_ms: f64,
    pub error_rate: f64,
}

impl Point {
    /// `users x rate`, or infinity for a closed loop.
    pub fn offered(&self) -> f64 {
        if self.rate > 0.0 {
            self.users as f64 * self.rate
        } else {
            f64::INFINITY
        }
    }
}

/// What the matrix says.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturation {
    /// The highest throughput of any point.
    pub capacity: f64,
    /// Index (into the points given) of the best healthy point, if any.
    pub knee: Option<usize>,
    /// Index of the first point, by offered load, that is not healthy, if any.
    pub first_saturated: Option<usize>,
    /// The best p99 of the matrix.
    pub best_p99_ms: f64,
    /// Per point: healthy or not.
    pub healthy: Vec<bool>,
    /// The lowest, over the user counts measured both ways, of the closed-loop point's
    /// throughput over the best rate-limited point's: below 1, the same users got less
    /// done sending as fast as they could than when paced (issue 37's "closed-loop
    /// collapse"). Where the matrix measured a point more than once
    /// ([`closed_loop_to_repeat`]), its median counts. `None` when no user count was
    /// measured both ways.
    pub closed_loop_ratio: Option<f64>,
}

/// Whether each point is healthy, given the best p99.
fn health(points: &[Point], best_p99: f64) -> Vec<bool> {
    points
        .iter()
        .map(|p| {
            let served = p.rate == 0.0 || p.throughput >= SERVED_SHARE * p.offered();
            served
                && p.error_rate <= 0.01
                && p.p99_ms <= best_p99 * P99_FACTOR + P99_SLACK_MS
                && p.throughput > 0.0
        })
        .collect()
}

/// Analyzes a matrix.
pub fn analyze(points: &[Point]) -> Saturation {
    let best_p99 = points
        .iter()
        .filter(|p| p.throughput > 0.0)
        .map(|p| p.p99_ms)
        .fold(f64::INFINITY, f64::min);
    let best_p99 = if best_p99.is_finite() { best_p99 } else { 0.0 };
    let healthy = health(points, best_p99);
    let capacity = points.iter().map(|p| p.throughput).fold(0.0, f64::max);
    let knee = (0..points.len())
        .filter(|&i| healthy[i])
        .max_by(|&a, &b| points[a].throughput.total_cmp(&points[b].throughput));
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        points[a]
            .offered()
            .total_cmp(&points[b].offered())
            .then(points[a].users.cmp(&points[b].users))
    });
    let first_saturated = order.into_iter().find(|&i| !healthy[i]);
    Saturation {
        capacity,
        knee,
        first_saturated,
        best_p99_ms: best_p99,
        healthy,
        closed_loop_ratio: closed_loop_ratio(points),
    }
}

/// How many more times a closed-loop point and the best rate-limited point of the same
/// users are measured, alternating, when the closed loop served less: one 4 s point
/// of a 3-node cluster on 2 cores moves by about a tenth from one run to the next
/// (8 identical points of 64 users x 250/s: 7.6-9.1k/s), more than the 5 % the
/// closed-loop budget allows, so the budget compares medians of three.
pub const CLOSED_LOOP_REPEATS: usize = 2;

/// The median of some throughputs (the mean of the middle two for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Per user count measured both ways: (users, the median closed-loop throughput, the
/// best rate-limited rate, its median throughput).
fn closed_and_paced(points: &[Point]) -> Vec<(usize, f64, f64, f64)> {
    let mut counts: Vec<usize> = points.iter().map(|p| p.users).collect();
    counts.sort_unstable();
    counts.dedup();
    let median_at = |users: usize, rate: f64| {
        median(
            points
                .iter()
                .filter(|p| p.users == users && p.rate == rate)
                .map(|p| p.throughput)
                .collect(),
        )
    };
    counts
        .into_iter()
        .filter_map(|users| {
            let mut rates: Vec<f64> = points
                .iter()
                .filter(|p| p.users == users && p.rate > 0.0)
                .map(|p| p.rate)
                .collect();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            let (rate, paced) = rates
                .into_iter()
                .map(|rate| (rate, median_at(users, rate)))
                .max_by(|a, b| a.1.total_cmp(&b.1))?;
            let closed = points.iter().any(|p| p.users == users && p.rate == 0.0);
            (closed && paced > 0.0).then(|| (users, median_at(users, 0.0), rate, paced))
        })
        .collect()
}

/// See [`Saturation::closed_loop_ratio`]: medians where a point was measured again.
fn closed_loop_ratio(points: &[Point]) -> Option<f64> {
    closed_and_paced(points)
        .into_iter()
        .map(|(_, closed, _, paced)| closed / paced)
        .reduce(f64::min)
}

/// The (users, rate) of the best rate-limited point of every user count whose
/// closed-loop point served less than it: the pairs to measure again
/// ([`CLOSED_LOOP_REPEATS`] times each, alternating with the closed loop).
pub fn closed_loop_to_repeat(points: &[Point]) -> Vec<(usize, f64)> {
    closed_and_paced(points)
        .into_iter()
        .filter(|&(_, closed, _, paced)| closed < paced)
        .map(|(users, _, rate, _)| (users, rate))
        .collect()
}

/// How much more than the operating load the chosen user count must have delivered
/// somewhere in the matrix, so the rate-limited users can really keep their schedule
/// (a user near its closed-loop limit cannot).
pub const USERS_HEADROOM: f64 = 1.5;

/// The A/B operating point: `(users, rate per user)` offering `fraction` of the
/// capacity, with the fewest users of the matrix that were measured delivering at least
/// [`USERS_HEADROOM`] times that load, else the most users of the matrix (each then
/// sends the least).
pub fn operating_point(points: &[Point], sat: &Saturation, fraction: f64) -> Option<(usize, f64)> {
    let target = sat.capacity * fraction;
    if target <= 0.0 {
        return None;
    }
    let mut counts: Vec<usize> = points.iter().map(|p| p.users).collect();
    counts.sort_unstable();
    counts.dedup();
    let best = |u: usize| {
        points
            .iter()
            .filter(|p| p.users == u)
            .map(|p| p.throughput)
            .fold(0.0, f64::max)
    };
    let users = counts
        .iter()
        .copied()
        .find(|&u| best(u) >= target * USERS_HEADROOM)
        .or_else(|| counts.last().copied())?;
    // Round the per-user rate to 0.1 req/s so the report reads well.
    let rate = ((target / users as f64) * 10.0).round() / 10.0;
    Some((users, rate.max(0.1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(users: usize, rate: f64, throughput: f64, p99_ms: f64) -> Point {
        Point {
            users,
            rate,
            throughput,
            p99_ms,
            error_rate: 0.0,
        }
    }

    #[test]
    fn finds_the_knee() {
        // A server that takes about 6000/s: rate-limited points below it are served
        // with flat latency; beyond it throughput stalls and p99 climbs.
        let points = vec![
            p(4, 100.0, 400.0, 2.0),
            p(16, 100.0, 1600.0, 2.5),
            p(16, 200.0, 3200.0, 3.0),
            p(64, 100.0, 6000.0, 6.0),
            p(64, 200.0, 6100.0, 30.0),
            p(64, 0.0, 6200.0, 40.0),
        ];
        let s = analyze(&points);
        assert_eq!(s.capacity, 6200.0);
        assert_eq!(s.best_p99_ms, 2.0);
        assert_eq!(s.healthy, vec![true, true, true, true, false, false]);
        assert_eq!(s.knee, Some(3));
        assert_eq!(s.first_saturated, Some(4));
        let (users, rate) = operating_point(&points, &s, 0.8).unwrap();
        assert_eq!(users, 64);
        assert_eq!(rate, 77.5);
    }

    #[test]
    fn the_operating_point_uses_users_that_can_offer_it() {
        // 16 users topped out at 3400/s (closed loop); 80% of the 5800 capacity is
        // 4640/s, which no user count reached 1.5 times: the most users get it.
        let points = vec![
            p(4, 0.0, 1800.0, 6.0),
            p(16, 250.0, 3370.0, 7.0),
            p(16, 0.0, 3400.0, 9.0),
            p(64, 100.0, 5750.0, 16.0),
            p(64, 0.0, 5800.0, 19.0),
        ];
        let s = analyze(&points);
        assert_eq!(operating_point(&points, &s, 0.8), Some((64, 72.5)));
        // At 40% (2320/s, x1.5 = 3480) 64 users; at 30% (1740/s, x1.5 = 2610) 16.
        assert_eq!(operating_point(&points, &s, 0.4), Some((64, 36.3)));
        assert_eq!(operating_point(&points, &s, 0.3), Some((16, 108.8)));
    }

    #[test]
    fn unserved_load_is_saturation() {
        let points = vec![p(8, 1000.0, 3000.0, 2.0), p(2, 100.0, 200.0, 1.0)];
        let s = analyze(&points);
        assert_eq!(s.healthy, vec![false, true]);
        assert_eq!(s.knee, Some(1));
        assert_eq!(s.first_saturated, Some(0));
        assert_eq!(s.capacity, 3000.0);
    }

    #[test]
    fn failing_points_are_not_healthy() {
        let mut bad = p(4, 0.0, 1000.0, 1.0);
        bad.error_rate = 0.5;
        let s = analyze(&[bad, p(2, 0.0, 500.0, 1.0)]);
        assert_eq!(s.healthy, vec![false, true]);
        assert_eq!(s.knee, Some(1));
    }

    #[test]
    fn nothing_healthy_still_gives_a_point() {
        let mut a = p(8, 0.0, 100.0, 1.0);
        a.error_rate = 1.0;
        let mut b = p(2, 0.0, 50.0, 1.0);
        b.error_rate = 1.0;
        let s = analyze(&[a, b]);
        assert_eq!(s.knee, None);
        // 8 users did 100/s, 1.5 x 50/s: they get it.
        assert_eq!(operating_point(&[a, b], &s, 0.5), Some((8, 6.3)));
        // 0.9 x 100 x 1.5 is more than anyone did: the most users.
        assert_eq!(operating_point(&[a, b], &s, 0.9), Some((8, 11.3)));
        assert_eq!(operating_point(&[], &analyze(&[]), 0.8), None);
    }

    #[test]
    fn the_closed_loop_ratio_is_the_worst_user_count() {
        let points = vec![
            p(16, 100.0, 1600.0, 2.0),
            p(16, 250.0, 3900.0, 3.0),
            p(16, 0.0, 6600.0, 5.0),
            // The 2026-12-03 report's 64 users: 6,908 closed against 12,333 paced.
            p(64, 100.0, 6387.0, 6.0),
            p(64, 250.0, 12333.0, 11.0),
            p(64, 0.0, 6908.0, 36.0),
            // Only paced: not compared.
            p(128, 100.0, 9000.0, 9.0),
        ];
        let ratio = analyze(&points).closed_loop_ratio.unwrap();
        assert!((ratio - 6908.0 / 12333.0).abs() < 1e-9, "{ratio}");
        assert_eq!(analyze(&[p(4, 100.0, 400.0, 1.0)]).closed_loop_ratio, None);
        assert_eq!(analyze(&[p(4, 0.0, 400.0, 1.0)]).closed_loop_ratio, None);
        // The 64 users are measured again at their best rate; 128 only paced are not.
        assert_eq!(closed_loop_to_repeat(&points), vec![(64, 250.0)]);
    }

    #[test]
    fn repeated_points_count_by_their_median() {
        // 2026-12-07, 3 nodes: 64 users x 250/s 9,662, closed loop 8,470 (0.88); the
        // two measured again, alternating: 9,100 and 8,900 paced, 9,400 and 9,300
        // closed.
        let mut points = vec![
            p(64, 100.0, 6348.0, 10.0),
            p(64, 250.0, 9662.0, 15.0),
            p(64, 0.0, 8470.0, 18.0),
        ];
        assert_eq!(closed_loop_to_repeat(&points), vec![(64, 250.0)]);
        points.extend([
            p(64, 250.0, 9100.0, 14.0),
            p(64, 0.0, 9400.0, 15.0),
            p(64, 250.0, 8900.0, 14.0),
            p(64, 0.0, 9300.0, 15.0),
        ]);
        let ratio = analyze(&points).closed_loop_ratio.unwrap();
        assert!((ratio - 9300.0 / 9100.0).abs() < 1e-9, "{ratio}");
        assert!(closed_loop_to_repeat(&points).is_empty());
        // The best paced rate is chosen by its median, not its luckiest run.
        let points = vec![
            p(8, 100.0, 800.0, 1.0),
            p(8, 200.0, 900.0, 1.0),
            p(8, 200.0, 700.0, 1.0),
            p(8, 200.0, 750.0, 1.0),
            p(8, 0.0, 780.0, 1.0),
        ];
        assert!((analyze(&points).closed_loop_ratio.unwrap() - 780.0 / 800.0).abs() < 1e-9);
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0]), 2.0);
    }

    #[test]
    fn closed_loop_offers_infinity() {
        assert_eq!(p(3, 0.0, 1.0, 1.0).offered(), f64::INFINITY);
        assert_eq!(p(3, 2.5, 1.0, 1.0).offered(), 7.5);
    }
}
