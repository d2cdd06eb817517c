//! Latency over time for the `publish_timeline` tool: requests bucketed by when they
//! were due, so a stall (a snapshot being built, a slow fsync, a purge) shows up as the
//! buckets it delayed instead of vanishing into a run's percentiles.
//!
//! Latency is measured from the moment a request was *due* on its fixed schedule, not
//! from when it was sent: a request held up behind a stalled one counts the whole wait
//! (no coordinated omission). [`Timeline::csv`] and [`plot`] write what a run saw.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::latency::{percentile, round3, Summary};

/// One request: when it was due (seconds since the run's start), how long from then
/// until its answer (ms), and whether it succeeded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub due_s: f64,
    pub latency_ms: f64,
    pub ok: bool,
}

/// The requests due within one bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    /// Start of the bucket, seconds since the run's start.
    pub start_s: f64,
    pub requests: usize,
    pub failed: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// A run's requests in buckets of `bucket_s`, with the moments snapshots were seen.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub bucket_s: f64,
    pub buckets: Vec<Bucket>,
    /// Seconds since the run's start at which the server's snapshot index was seen to
    /// move (polled: each mark is up to one poll interval late).
    pub snapshots: Vec<f64>,
}

impl Timeline {
    /// Buckets `samples` by due time. Buckets without requests are left out.
    pub fn of(samples: &[Sample], bucket_s: f64, snapshots: Vec<f64>) -> Timeline {
        let bucket_s = if bucket_s > 0.0 { bucket_s } else { 1.0 };
        let mut by_bucket: std::collections::BTreeMap<u64, Vec<&Sample>> = Default::default();
        for s in samples {
            let i = (s.due_s.max(0.0) / bucket_s).floor() as u64;
            by_bucket.entry(i).or_default().push(s);
        }
        let buckets = by_bucket
            .into_iter()
            .map(|(i, in_bucket)| {
                let mut ms: Vec<f64> = in_bucket.iter().map(|s| s.latency_ms).collect();
                ms.sort_by(f64::total_cmp);
                Bucket {
                    start_s: i as f64 * bucket_s,
                    requests: in_bucket.len(),
                    failed: in_bucket.iter().filter(|s| !s.ok).count(),
                    p50_ms: percentile(&ms, 0.50).unwrap_or(0.0),
                    p99_ms: percentile(&ms, 0.99).unwrap_or(0.0),
                    max_ms: ms.last().copied().unwrap_or(0.0),
                }
            })
            .collect();
        Timeline {
            bucket_s,
            buckets,
            snapshots,
        }
    }

    /// `start_s,requests,failed,p50_ms,p99_ms,max_ms` per bucket, then one
    /// `snapshot,<s>` line per snapshot mark.
    pub fn csv(&self) -> String {
        let mut out = String::from("start_s,requests,failed,p50_ms,p99_ms,max_ms\n");
        for b in &self.buckets {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{}",
                round3(b.start_s),
                b.requests,
                b.failed,
                round3(b.p50_ms),
                round3(b.p99_ms),
                round3(b.max_ms)
            );
        }
        for s in &self.snapshots {
            let _ = writeln!(out, "snapshot,{}", round3(*s));
        }
        out
    }

    /// Buckets whose slowest request took more than `factor` times the whole run's p99:
    /// the stalls.
    pub fn stalls(&self, run: &Summary, factor: f64) -> Vec<&Bucket> {
        self.buckets
            .iter()
            .filter(|b| b.max_ms > run.p99 * factor)
            .collect()
    }
}

/// p99 and max per bucket over time, one dashed vertical line per snapshot mark.
pub fn plot(path: &Path, title: &str, timeline: &Timeline) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let end_s = timeline
        .buckets
        .last()
        .map_or(1.0, |b| b.start_s + timeline.bucket_s);
    let top_ms = timeline
        .buckets
        .iter()
        .map(|b| b.max_ms)
        .fold(1.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end_s, 0.0..top_ms)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("seconds into the run (by when a request was due)")
        .y_desc("latency ms")
        .draw()
        .map_err(|e| err(&e))?;
    let mid = |b: &Bucket| b.start_s + timeline.bucket_s / 2.0;
    let max_color = RGBColor(0x75, 0x70, 0xb3);
    let p99_color = RGBColor(0xd9, 0x5f, 0x02);
    let p50_color = RGBColor(0x1b, 0x9e, 0x77);
    for (name, color, value) in [
        (
            "max",
            max_color,
            (|b: &Bucket| b.max_ms) as fn(&Bucket) -> f64,
        ),
        ("p99", p99_color, |b: &Bucket| b.p99_ms),
        ("p50", p50_color, |b: &Bucket| b.p50_ms),
    ] {
        chart
            .draw_series(LineSeries::new(
                timeline.buckets.iter().map(|b| (mid(b), value(b))),
                color.stroke_width(1),
            ))
            .map_err(|e| err(&e))?
            .label(format!(
                "{name} per {} ms",
                round3(timeline.bucket_s * 1000.0)
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
    }
    let snapshot_color = RGBColor(0x66, 0x66, 0x66);
    for (i, s) in timeline.snapshots.iter().enumerate() {
        let series = chart
            .draw_series(DashedLineSeries::new(
                vec![(*s, 0.0), (*s, top_ms)],
                4,
                4,
                snapshot_color.stroke_width(1),
            ))
            .map_err(|e| err(&e))?;
        if i == 0 {
            series
                .label("snapshot seen")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], snapshot_color));
        }
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(due_s: f64, latency_ms: f64) -> Sample {
        Sample {
            due_s,
            latency_ms,
            ok: true,
        }
    }

    #[test]
    fn buckets_by_due_time_and_finds_the_stall() {
        let mut samples: Vec<Sample> = (0..100).map(|i| sample(i as f64 * 0.01, 2.0)).collect();
        // A stall in the second half second: one request held 300 ms.
        samples.push(sample(0.6, 300.0));
        samples.push(Sample {
            due_s: 0.7,
            latency_ms: 1.0,
            ok: false,
        });
        let t = Timeline::of(&samples, 0.5, vec![0.65]);
        assert_eq!(t.buckets.len(), 2);
        assert_eq!(t.buckets[0].requests, 50);
        assert_eq!(t.buckets[0].max_ms, 2.0);
        assert_eq!(t.buckets[1].requests, 52);
        assert_eq!(t.buckets[1].failed, 1);
        assert_eq!(t.buckets[1].max_ms, 300.0);
        let mut all: Vec<f64> = samples.iter().map(|s| s.latency_ms).collect();
        let run = Summary::of(&mut all);
        let stalls = t.stalls(&run, 2.0);
        assert_eq!(stalls.len(), 1);
        assert_eq!(stalls[0].start_s, 0.5);
        let csv = t.csv();
        assert!(csv.starts_with("start_s,requests,failed,p50_ms,p99_ms,max_ms\n0,50,0,2,2,2\n"));
        assert!(csv.ends_with("snapshot,0.65\n"), "{csv}");
    }

    #[test]
    fn plots_an_svg() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.svg");
        let samples: Vec<Sample> = (0..50)
            .map(|i| sample(i as f64 * 0.1, 1.0 + i as f64))
            .collect();
        plot(&path, "test", &Timeline::of(&samples, 1.0, vec![2.5])).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("read");
        assert!(
            svg.contains("<svg") && svg.contains("snapshot seen"),
            "{svg}"
        );
    }
}
