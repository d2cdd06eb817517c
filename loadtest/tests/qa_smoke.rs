//! CI smoke tests of the `qa` tool against the tacos binary of this workspace: `qa
//! --smoke` (one node, no baseline, a tiny matrix, a few seconds) and the restart
//! scenario on a small fill; each checks the report (and plots) were written with the
//! expected sections and that nothing it started is still running.
//!
//! `cargo test --workspace` builds the `tacos` binary before the tests run; with
//! `cargo test -p loadtest` alone, build it first (`cargo build --bin tacos`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tacos binary: next to `qa` (same target dir and profile), else the workspace's
/// `target/debug`.
fn tacos_binary() -> PathBuf {
    let qa = Path::new(env!("CARGO_BIN_EXE_qa"));
    let beside = qa.with_file_name("tacos");
    if beside.is_file() {
        return beside;
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("loadtest sits in the workspace");
    let debug = workspace.join("target/debug/tacos");
    assert!(
        debug.is_file(),
        "the tacos binary is missing (looked for {} and {}): build it with \
         `cargo build --bin tacos`, or run `cargo test --workspace`, which builds it",
        beside.display(),
        debug.display()
    );
    debug
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}

/// Runs `qa` with `args` (plus `--out`, `--work-dir` under `dir`), killing it after
/// `limit`; returns the report's text (`<label>.md`), after checking that qa succeeded,
/// that the report shows no path of this machine and that nothing it started is left.
fn run_qa(dir: &Path, label: &str, args: &[&str], limit: Duration) -> String {
    let tacos = tacos_binary();
    let out = dir.join("out");
    let work = dir.join("work");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_qa"))
        .arg("--server")
        .arg(&tacos)
        .arg("--out")
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .args(["--label", label])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qa");
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for qa") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("qa {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = child.wait_with_output().expect("qa output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        status.success(),
        "qa {args:?} failed ({status}):\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    eprintln!("qa {args:?} took {:.1?}", started.elapsed());

    let report = out.join(format!("{label}.md"));
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no report at {}: {e}\nstderr:\n{stderr}", report.display()));
    // The report names binaries, never this machine's directories.
    for path in [tacos.parent().expect("a dir"), dir] {
        let path = path.display().to_string();
        assert!(
            !text.contains(&path),
            "the report shows the path {path}:\n{text}"
        );
    }
    assert!(text.contains("(binary `tacos`)"), "{text}");
    // Nothing it started is left: every server ran with a data dir under the work dir.
    let left = processes_mentioning(&work.display().to_string());
    assert!(left.is_empty(), "processes left running: {left:?}");
    text
}

#[test]
fn qa_smoke_writes_a_report() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Bounded: a smoke run takes well under 30 s; killed if it hangs.
    let text = run_qa(
        dir.path(),
        "smoke",
        &["--smoke", "--base-port", "36000"],
        Duration::from_secs(150),
    );
    for section in [
        "# QA report: tacos smoke",
        "**Verdict: ",
        "## Summary",
        "## 1 node",
        "### Saturation (1 node)",
        "#### set (",
        "#### query (",
        "### At the operating point (1 node)",
        "#### listen",
        "| budget | limit | measured | verdict |",
        "## Noise",
        "Load average (1 / 5 / 15 min) before the run",
        "## All runs",
        "## Reproduce",
    ] {
        assert!(
            text.contains(section),
            "the report lacks {section:?}:\n{text}"
        );
    }
    // The set runs' log fsyncs were read from the real server's /metrics: a table
    // with a row for tacos that counted some.
    let fsyncs = text
        .split("Log fsyncs during these runs (`tacos_log_fsync_seconds`")
        .nth(1)
        .and_then(|rest| rest.lines().find(|l| l.starts_with("| tacos | ")))
        .unwrap_or_else(|| panic!("no fsync table with a tacos row:\n{text}"));
    let counted: u64 = fsyncs
        .split('|')
        .nth(2)
        .and_then(|cell| cell.trim().parse().ok())
        .unwrap_or_else(|| panic!("no fsync count in {fsyncs:?}"));
    assert!(counted > 0, "no fsync counted: {fsyncs}");
    // Every run worked: the servers started and the scenarios measured something.
    assert!(
        text.contains("; 0 of 7 runs failed."),
        "some runs failed:\n{text}"
    );
    let out = dir.path().join("out");
    for plot in [
        "smoke-1n-set-saturation.svg",
        "smoke-1n-query-saturation.svg",
        "smoke-1n-latency.svg",
    ] {
        let svg = std::fs::read_to_string(out.join(plot))
            .unwrap_or_else(|e| panic!("no plot {plot}: {e}"));
        assert!(svg.starts_with("<svg"), "{plot} is not an SVG");
        assert!(text.contains(plot), "the report does not show {plot}");
    }
}

/// The restart scenario end to end on a small fill, on one node and on a 3-node
/// cluster: qa fills fresh nodes, stops them, starts them on the same data dirs and
/// reports how long until the last write read back on every node.
#[test]
fn qa_restart_scenario_reports_a_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let text = run_qa(
        dir.path(),
        "restart",
        &[
            "--scenarios",
            "restart",
            "--nodes",
            "1,3",
            "--restart-configs",
            "200",
            "--restart-versions",
            "2",
            "--restart-settle",
            "0",
            "--rounds",
            "1",
            "--wait-load",
            "0",
            "--quiet-cores",
            "0",
            "--base-port",
            "36500",
            "--deadline",
            "2m",
        ],
        Duration::from_secs(240),
    );
    for section in [
        "#### restart",
        "Load: 200 configs x 2 publishes each",
        "| fill rate (publishes/s) |",
        "| restart: until all state was served (s) |",
        "| server RSS 2 s after the restart MiB |",
        "| failures | 0 failed of 400 |",
    ] {
        assert!(
            text.contains(section),
            "the report lacks {section:?}:\n{text}"
        );
    }
    assert!(text.contains("## 3 nodes"), "{text}");
    assert!(
        text.contains("; 0 of 2 runs failed."),
        "a run failed:\n{text}"
    );
}
