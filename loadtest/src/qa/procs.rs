//! Processes the qa tool starts, and what `/proc` says about them.
//!
//! Every child is registered by pid while it runs, so [`kill_registered`] (called on
//! Ctrl-C and when the tool exits early) can stop exactly the processes this tool
//! started, and nothing else. Signals go to a pid only while its [`Proc`] has not been
//! reaped, so a pid can never be reused under us.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::QaError;

/// Pids of the children alive now.
static REGISTERED: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Set (under the `REGISTERED` lock) once [`kill_registered`] began: no child may start
/// after it took its list, or it would outlive the tool.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

fn unregister(pid: u32) {
    if let Ok(mut pids) = REGISTERED.lock() {
        pids.retain(|&p| p != pid);
    }
}

/// The pids of the children still running.
pub fn registered() -> Vec<u32> {
    REGISTERED.lock().map(|p| p.clone()).unwrap_or_default()
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) has no memory effects; the pid is one of our own children
        // that has not been reaped (it is unregistered before it is waited for).
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// SIGTERM to every registered child, then SIGKILL to those still there after `grace`;
/// no child can start after this began. For the Ctrl-C handler and early exits: the
/// normal path stops each [`Proc`] itself.
pub fn kill_registered(grace: Duration) {
    let pids = match REGISTERED.lock() {
        Ok(pids) => {
            SHUTTING_DOWN.store(true, Ordering::SeqCst);
            pids.clone()
        }
        Err(_) => {
            SHUTTING_DOWN.store(true, Ordering::SeqCst);
            Vec::new()
        }
    };
    for &pid in &pids {
        signal(pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && pids.iter().any(|&p| alive(p)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &pid in &pids {
        if alive(pid) {
            signal(pid, libc::SIGKILL);
        }
    }
}

/// Whether `/proc/<pid>` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// A child process with its output in a log file.
#[derive(Debug)]
pub struct Proc {
    pub name: String,
    pub log: PathBuf,
    child: Option<Child>,
    pid: u32,
}

impl Proc {
    /// Starts `command` with stdin closed and stdout and stderr appended to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> Result<Proc, QaError> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| QaError::io(format!("opening {}", log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| QaError::io(format!("opening {}", log.display()), e))?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        // Spawn and register under the lock, so a concurrent kill_registered either
        // sees this child or keeps it from starting.
        let mut pids = REGISTERED
            .lock()
            .map_err(|_| QaError::Setup("the process list is poisoned".into()))?;
        if SHUTTING_DOWN.load(Ordering::SeqCst) {
            return Err(QaError::Interrupted);
        }
        let child = command.spawn().map_err(|e| {
            QaError::io(
                format!(
                    "starting {name} ({})",
                    command.get_program().to_string_lossy()
                ),
                e,
            )
        })?;
        let pid = child.id();
        pids.push(pid);
        drop(pids);
        Ok(Proc {
            name: name.to_string(),
            log: log.to_path_buf(),
            child: Some(child),
            pid,
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The exit status if it has exited (and reaps it).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => {
                unregister(self.pid);
                self.child = None;
                Some(status)
            }
            _ => None,
        }
    }

    /// Waits at most `timeout` for it to exit by itself; `None` if it is still running.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if self.child.is_none() || Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM if it is still running (without waiting).
    pub fn terminate(&mut self) {
        if let Some(child) = self.child.as_mut() {
            if let Ok(None) = child.try_wait() {
                signal(self.pid, libc::SIGTERM);
            }
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for it either way.
    pub fn stop(&mut self, grace: Duration) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        if let Ok(None) = child.try_wait() {
            signal(self.pid, libc::SIGTERM);
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
        }
        let _ = child.wait();
        unregister(self.pid);
        self.child = None;
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        self.child.is_some() && self.try_wait().is_none()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// CPU time and memory of one process at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcSample {
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
    /// VmRSS, KiB.
    pub rss_kib: u64,
}

/// Parses utime + stime (fields 14 and 15) from `/proc/<pid>/stat` text. The command
/// name (field 2) may hold spaces and parentheses, so fields count from the last `)`.
pub fn parse_stat_cpu(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 -> index 11.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Parses `VmRSS` (KiB) from `/proc/<pid>/status` text.
pub fn parse_status_rss(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Reads one process's sample; `None` once it is gone.
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(ProcSample {
        cpu_ticks: parse_stat_cpu(&stat)?,
        rss_kib: parse_status_rss(&status).unwrap_or(0),
    })
}

/// Summed RSS of `pids` now, MiB (a process that is gone counts 0).
pub fn rss_mib(pids: &[u32]) -> f64 {
    let kib: u64 = pids
        .iter()
        .filter_map(|&p| sample(p))
        .map(|s| s.rss_kib)
        .sum();
    kib as f64 / 1024.0
}

/// The lowest summed RSS of `pids` over [`IDLE_WINDOW`] (read every 250 ms), MiB: a
/// fresh server's idle memory, past the moment of start-up work it may still be doing
/// when it first answers (see [`Usage::rss_idle_mib`]).
pub fn idle_rss_mib(pids: &[u32]) -> f64 {
    let until = Instant::now() + IDLE_WINDOW;
    let mut lowest = rss_mib(pids);
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(250));
        lowest = lowest.min(rss_mib(pids));
    }
    lowest
}

/// Busy and total jiffies of the whole machine, from the `cpu` line of `/proc/stat`
/// (busy = user + nice + system + irq + softirq + steal; total adds idle + iowait).
pub fn parse_machine_cpu(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    if v.len() < 8 {
        return None;
    }
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    let total = busy + v[3] + v[4];
    Some((busy, total))
}

/// The machine's busy and total jiffies now.
pub fn machine_cpu() -> Option<(u64, u64)> {
    parse_machine_cpu(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Clock ticks per second (`getconf CLK_TCK`), 100 if unknown.
pub fn clk_tck() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// Everything sampled at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub at: Instant,
    /// One per server process, in the order given (`None`: gone).
    pub servers: Vec<Option<ProcSample>>,
    /// The load generator.
    pub client: Option<ProcSample>,
    /// The machine's (busy, total) jiffies.
    pub machine: Option<(u64, u64)>,
}

/// Samples the server processes and the load generator every `interval` on a thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<Sample>>>,
}

impl Sampler {
    pub fn start(servers: Vec<u32>, client: Option<u32>, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut samples = Vec::new();
            loop {
                samples.push(Sample {
                    at: Instant::now(),
                    servers: servers.iter().map(|&p| sample(p)).collect(),
                    client: client.and_then(sample),
                    machine: machine_cpu(),
                });
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                // Sleep in small steps so stop() returns quickly.
                let until = Instant::now() + interval;
                while Instant::now() < until && !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            samples
        });
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    /// Takes a last sample and returns them all.
    pub fn stop(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// What the processes used over a window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// CPU of all server processes together, in cores (1.0 = one core busy).
    pub server_cores: f64,
    /// CPU of the load generator, in cores.
    pub client_cores: f64,
    /// CPU of everything else on the machine, in cores.
    pub other_cores: f64,
    /// Summed RSS of the server processes at the end of the window, MiB.
    pub rss_end_mib: f64,
    /// Highest summed RSS seen in the window, MiB.
    pub rss_peak_mib: f64,
    /// The fresh server's RSS before the load tool started ([`idle_rss_mib`]), MiB.
    pub rss_idle_mib: f64,
    /// Length of the window measured, seconds.
    pub seconds: f64,
}

/// How long [`idle_rss_mib`] watches a fresh server: the lowest RSS over it, not the
/// first, because a server that just became ready may still be finishing its start
/// (Tacos hashes the admin password then: a 19 MiB buffer for a moment). It watches
/// before the load tool starts: a tool that connects at once (fan-out: 10,000
/// listeners) would otherwise be counted as idle memory.
pub const IDLE_WINDOW: Duration = Duration::from_secs(1);

/// Summed server RSS, KiB.
fn rss(s: &Sample) -> u64 {
    s.servers.iter().flatten().map(|p| p.rss_kib).sum()
}

/// CPU and memory over `[from, to]` from `samples` (the first sample at or after
/// `from`, the last at or before `to`), with `rss_idle_mib` read before the load
/// started. A process missing from a sample counts with its last known CPU time.
pub fn usage(
    samples: &[Sample],
    from: Instant,
    to: Instant,
    ticks_per_s: f64,
    rss_idle_mib: f64,
) -> Option<Usage> {
    let first = samples.iter().position(|s| s.at >= from)?;
    let last = samples.iter().rposition(|s| s.at <= to)?;
    if last <= first {
        return None;
    }
    let (a, b) = (&samples[first], &samples[last]);
    let seconds = (b.at - a.at).as_secs_f64();
    if seconds <= 0.0 {
        return None;
    }
    // Per server: CPU at the last sample it appears in, minus at the first.
    let n = a.servers.len();
    let mut server_ticks = 0u64;
    for i in 0..n {
        let start = samples[first..=last]
            .iter()
            .find_map(|s| s.servers.get(i).copied().flatten());
        let end = samples[first..=last]
            .iter()
            .rev()
            .find_map(|s| s.servers.get(i).copied().flatten());
        if let (Some(s), Some(e)) = (start, end) {
            server_ticks += e.cpu_ticks.saturating_sub(s.cpu_ticks);
        }
    }
    let client_start = samples[first..=last].iter().find_map(|s| s.client);
    let client_end = samples[first..=last].iter().rev().find_map(|s| s.client);
    let client_ticks = match (client_start, client_end) {
        (Some(s), Some(e)) => e.cpu_ticks.saturating_sub(s.cpu_ticks),
        _ => 0,
    };
    let machine_busy = match (a.machine, b.machine) {
        (Some((b0, _)), Some((b1, _))) => b1.saturating_sub(b0),
        _ => 0,
    };
    let other = machine_busy.saturating_sub(server_ticks + client_ticks);
    let peak = samples[first..=last].iter().map(rss).max().unwrap_or(0);
    let mib = |kib: u64| kib as f64 / 1024.0;
    let cores = |ticks: u64| ticks as f64 / ticks_per_s / seconds;
    Some(Usage {
        server_cores: cores(server_ticks),
        client_cores: cores(client_ticks),
        other_cores: cores(other),
        rss_end_mib: mib(rss(b)),
        rss_peak_mib: mib(peak),
        rss_idle_mib,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let stat = "1234 (tacos (worker) x) S 1 1234 1234 0 -1 4194560 5000 0 0 0 \
                    150 50 0 0 20 0 9 0 100 200000000 5000 18446744073709551615";
        assert_eq!(parse_stat_cpu(stat), Some(200));
        assert_eq!(parse_stat_cpu("garbage"), None);
        let status = "Name:\ttacos\nVmPeak:\t  300 kB\nVmRSS:\t   45678 kB\nThreads: 9\n";
        assert_eq!(parse_status_rss(status), Some(45678));
        assert_eq!(parse_status_rss("Name: x\n"), None);
        let machine = "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8\n";
        assert_eq!(parse_machine_cpu(machine), Some((161, 1181)));
    }

    #[test]
    fn reads_this_process() {
        let me = sample(std::process::id()).expect("our own /proc entry");
        assert!(me.rss_kib > 0);
        assert!(rss_mib(&[std::process::id()]) > 0.0);
        assert!(alive(std::process::id()));
        assert!(machine_cpu().is_some());
        assert!(clk_tck() > 0.0);
    }

    fn s(at: Instant, server: &[Option<(u64, u64)>], client: u64, busy: u64) -> Sample {
        Sample {
            at,
            servers: server
                .iter()
                .map(|p| p.map(|(cpu_ticks, rss_kib)| ProcSample { cpu_ticks, rss_kib }))
                .collect(),
            client: Some(ProcSample {
                cpu_ticks: client,
                rss_kib: 1,
            }),
            machine: Some((busy, busy * 2)),
        }
    }

    #[test]
    fn usage_over_a_window() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let samples = vec![
            s(at(0), &[Some((0, 1024)), Some((0, 1024))], 0, 0),
            s(at(1000), &[Some((100, 2048)), Some((50, 1024))], 40, 250),
            s(at(2000), &[Some((200, 4096)), Some((100, 2048))], 80, 500),
            s(at(3000), &[Some((300, 1024)), None], 120, 700),
        ];
        // Window 1..2 s: servers 150 ticks in 1 s at 100 ticks/s = 1.5 cores.
        let u = usage(&samples, at(1000), at(2000), 100.0, 1.5).unwrap();
        assert!((u.server_cores - 1.5).abs() < 1e-9);
        assert!((u.client_cores - 0.4).abs() < 1e-9);
        // Machine busy 250 ticks: 250 - 150 - 40 = 60 others.
        assert!((u.other_cores - 0.6).abs() < 1e-9);
        assert_eq!(u.rss_end_mib, 6.0);
        assert_eq!(u.rss_peak_mib, 6.0);
        // Idle is what the caller read before the tool started.
        assert_eq!(u.rss_idle_mib, 1.5);
        // The second server vanished in the last sample: its last known CPU counts.
        let u = usage(&samples, at(0), at(3000), 100.0, 1.5).unwrap();
        assert!((u.server_cores - 400.0 / 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(u.rss_end_mib, 1.0);
        assert_eq!(u.rss_peak_mib, 6.0);
        // No two samples in the window: nothing to say.
        assert!(usage(&samples, at(2500), at(2600), 100.0, 1.5).is_none());
    }

    #[test]
    fn children_are_registered_while_they_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut p = Proc::spawn("sleep", cmd, &dir.path().join("sleep.log")).unwrap();
        assert!(registered().contains(&p.pid()));
        assert!(p.running());
        let started = Instant::now();
        p.stop(Duration::from_secs(5));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!registered().contains(&p.pid()));
        assert!(!p.running());
        let mut cmd = Command::new("true");
        cmd.arg("x");
        let mut q = Proc::spawn("true", cmd, &dir.path().join("true.log")).unwrap();
        assert!(q.wait_timeout(Duration::from_secs(5)).is_some());
        assert!(!registered().contains(&q.pid()));
    }
}
