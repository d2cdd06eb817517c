//! What the report says about the machine: CPU model, cores, memory, kernel, load.

use std::time::{Duration, Instant};

/// The machine a run happened on.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel: String,
}

impl Machine {
    pub fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        Machine {
            cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown CPU".into()),
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_gib: mem_total_kib(&meminfo).unwrap_or(0) as f64 / 1024.0 / 1024.0,
            kernel: if kernel.is_empty() {
                "unknown".into()
            } else {
                kernel
            },
        }
    }
}

/// `model name` from `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// `MemTotal` (KiB) from `/proc/meminfo` text.
pub fn mem_total_kib(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The 1-, 5- and 15-minute load averages.
pub fn loadavg() -> Option<(f64, f64, f64)> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

pub fn parse_loadavg(text: &str) -> Option<(f64, f64, f64)> {
    let mut f = text.split_whitespace().map(|v| v.parse::<f64>());
    Some((f.next()?.ok()?, f.next()?.ok()?, f.next()?.ok()?))
}

/// Waits until the 1-minute load average is below `threshold`, checking every `poll`,
/// for at most `max`; `progress` hears each reading. Returns the last reading and
/// how long it waited.
pub fn wait_for_quiet(
    threshold: f64,
    max: Duration,
    poll: Duration,
    mut progress: impl FnMut(f64, Duration),
) -> (Option<f64>, Duration) {
    let started = Instant::now();
    loop {
        let load = loadavg().map(|l| l.0);
        match load {
            Some(l) if l < threshold => return (Some(l), started.elapsed()),
            None => return (None, started.elapsed()),
            Some(l) => {
                if started.elapsed() >= max {
                    return (Some(l), started.elapsed());
                }
                progress(l, started.elapsed());
                std::thread::sleep(poll.min(max.saturating_sub(started.elapsed())));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_text() {
        assert_eq!(
            cpu_model("processor: 0\nmodel name\t: AMD EPYC 7B13\nflags: x\n").as_deref(),
            Some("AMD EPYC 7B13")
        );
        assert_eq!(
            mem_total_kib("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24_576_000)
        );
        assert_eq!(
            parse_loadavg("0.52 1.10 2.00 3/120 999\n"),
            Some((0.52, 1.10, 2.00))
        );
        assert_eq!(parse_loadavg("x"), None);
    }

    #[test]
    fn reads_this_machine() {
        let m = Machine::read();
        assert!(m.cores >= 1);
        assert!(loadavg().is_some());
        // A threshold no load reaches returns at once.
        let (load, waited) = wait_for_quiet(
            1e9,
            Duration::from_secs(1),
            Duration::from_secs(1),
            |_, _| {},
        );
        assert!(load.is_some());
        assert!(waited < Duration::from_secs(1));
    }
}
