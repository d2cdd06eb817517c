//! The Raft log's fsync times during a run, from Tacos' own histogram
//! (`tacos_log_fsync_seconds` on `GET /metrics`, every node, read before and after
//! the load): issue 37 asks the report to show them beside the publish latency, so a
//! slow 0.1 % of publishes can be told apart from slow disks.

use std::time::Duration;

use super::http;

/// The histogram's series name.
const SERIES: &str = "tacos_log_fsync_seconds";

/// Fsyncs counted per bucket (cumulative, as Prometheus writes them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fsyncs {
    /// (upper bound in seconds, fsyncs at or below it), ascending; +Inf last.
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_s: f64,
}

impl Fsyncs {
    /// Reads the histogram out of a Prometheus text exposition (None: not there).
    pub fn parse(text: &str) -> Option<Fsyncs> {
        let mut fsyncs = Fsyncs::default();
        let mut seen = false;
        for line in text.lines() {
            let Some(rest) = line.strip_prefix(SERIES) else {
                continue;
            };
            let (name, value) = rest.rsplit_once(' ')?;
            let value: f64 = value.trim().parse().ok()?;
            if let Some(labels) = name.strip_prefix("_bucket{") {
                let le = labels
                    .split(',')
                    .find_map(|l| l.trim().strip_prefix("le=\""))?
                    .trim_end_matches(['"', '}']);
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                fsyncs.buckets.push((le, value as u64));
                seen = true;
            } else if name == "_count" {
                fsyncs.count = value as u64;
            } else if name == "_sum" {
                fsyncs.sum_s = value;
            }
        }
        fsyncs.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        seen.then_some(fsyncs)
    }

    /// Adds another node's (or run's) histogram with the same buckets.
    pub fn add(&mut self, other: &Fsyncs) {
        if self.buckets.is_empty() {
            self.buckets = other.buckets.iter().map(|&(le, _)| (le, 0)).collect();
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            mine.1 += theirs.1;
        }
        self.count += other.count;
        self.sum_s += other.sum_s;
    }

    /// What was counted since `before` (a counter reset counts from zero).
    pub fn since(&self, before: &Fsyncs) -> Fsyncs {
        let mut delta = self.clone();
        if before.count > self.count {
            return delta;
        }
        for (now, then) in delta.buckets.iter_mut().zip(&before.buckets) {
            now.1 = now.1.saturating_sub(then.1);
        }
        delta.count -= before.count;
        delta.sum_s = (delta.sum_s - before.sum_s).max(0.0);
        delta
    }

    pub fn mean_ms(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            self.sum_s * 1000.0 / self.count as f64
        }
    }

    /// The bucket bound (ms) at or below which a share `q` of the fsyncs fell: an
    /// upper bound of the quantile (infinite when only +Inf holds it).
    pub fn quantile_bound_ms(&self, q: f64) -> f64 {
        let wanted = (q * self.count as f64).ceil() as u64;
        self.buckets
            .iter()
            .find(|&&(_, n)| n >= wanted)
            .map_or(f64::INFINITY, |&(le, _)| le * 1000.0)
    }

    /// How many fsyncs took at most `ms` (a bucket bound; infinity: all of them).
    pub fn at_most_ms(&self, ms: f64) -> Option<u64> {
        if ms.is_infinite() {
            return Some(self.count);
        }
        self.buckets
            .iter()
            .find(|&&(le, _)| (le * 1000.0 - ms).abs() < 1e-9)
            .map(|&(_, n)| n)
    }
}

/// The fsync histograms of Tacos nodes on these HTTP ports, summed (None when a node
/// does not answer or has none).
pub fn scrape(http_ports: &[u16]) -> Option<Fsyncs> {
    let mut total = Fsyncs::default();
    for &port in http_ports {
        let answer = http::get(port, "/metrics", None, Duration::from_secs(5)).ok()?;
        if answer.status != 200 {
            return None;
        }
        total.add(&Fsyncs::parse(&answer.body)?);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# TYPE tacos_log_fsync_seconds histogram
tacos_log_fsync_seconds_bucket{le=\"0.00025\"} 10
tacos_log_fsync_seconds_bucket{le=\"0.0005\"} 90
tacos_log_fsync_seconds_bucket{le=\"0.001\"} 99
tacos_log_fsync_seconds_bucket{le=\"0.01\"} 100
tacos_log_fsync_seconds_bucket{le=\"+Inf\"} 100
tacos_log_fsync_seconds_sum 0.05
tacos_log_fsync_seconds_count 100
tacos_log_fsync_seconds_other 7
tacos_http_requests_total{route=\"/x\"} 3
";

    #[test]
    fn reads_the_histogram_and_its_bounds() {
        let f = Fsyncs::parse(TEXT).unwrap();
        assert_eq!(f.count, 100);
        assert_eq!(f.buckets.len(), 5);
        assert!((f.mean_ms() - 0.5).abs() < 1e-9);
        assert_eq!(f.quantile_bound_ms(0.5), 0.5);
        assert_eq!(f.quantile_bound_ms(0.99), 1.0);
        assert_eq!(f.quantile_bound_ms(0.999), 10.0);
        assert_eq!(f.at_most_ms(1.0), Some(99));
        assert_eq!(f.at_most_ms(f64::INFINITY), Some(100));
        assert_eq!(f.at_most_ms(3.0), None);
        assert_eq!(Fsyncs::parse("tacos_http_requests_total 3\n"), None);
    }

    #[test]
    fn nodes_add_up_and_runs_subtract() {
        let one = Fsyncs::parse(TEXT).unwrap();
        let mut two = Fsyncs::default();
        two.add(&one);
        two.add(&one);
        assert_eq!(two.count, 200);
        assert_eq!(two.buckets[1], (0.0005, 180));
        let delta = two.since(&one);
        assert_eq!(delta, one);
        // A restarted node starts over: the later reading is taken whole.
        assert_eq!(one.since(&two), one);
    }
}
