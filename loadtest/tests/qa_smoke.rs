//! CI smoke test of the `qa` tool: `qa --smoke` against the tacos binary of this
//! workspace (one node, no baseline, a tiny matrix, a few seconds), then checks the
//! report and its plots were written with the expected sections and that nothing it
//! started is still running.
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

#[test]
fn qa_smoke_writes_a_report() {
    let tacos = tacos_binary();
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().join("out");
    let work = dir.path().join("work");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_qa"))
        .arg("--smoke")
        .arg("--server")
        .arg(&tacos)
        .arg("--out")
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .args(["--base-port", "36000"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qa");
    // Bounded: a smoke run takes well under 30 s; kill it if it hangs.
    let limit = Duration::from_secs(150);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for qa") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("qa --smoke did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = child.wait_with_output().expect("qa output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        status.success(),
        "qa --smoke failed ({status}):\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    eprintln!("qa --smoke took {:.1?}", started.elapsed());

    let report = out.join("smoke.md");
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no report at {}: {e}\nstderr:\n{stderr}", report.display()));
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
    // The report names binaries, never this machine's directories.
    for path in [tacos.parent().expect("a dir"), dir.path()] {
        let path = path.display().to_string();
        assert!(
            !text.contains(&path),
            "the report shows the path {path}:\n{text}"
        );
    }
    assert!(text.contains("(binary `tacos`)"), "{text}");
    // Every run worked: the servers started and the scenarios measured something.
    assert!(
        text.contains("; 0 of 7 runs failed."),
        "some runs failed:\n{text}\nstderr:\n{stderr}"
    );
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
    // Nothing it started is left: every server ran with a data dir under the work dir.
    let left = processes_mentioning(&work.display().to_string());
    assert!(left.is_empty(), "processes left running: {left:?}");
}
