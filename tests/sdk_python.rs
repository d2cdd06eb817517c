//! The official Python SDK's HTTP client (PyPI nacos-sdk-python 2.0.x)
//! against the real binary: publish, get, watch, remove, namespaces.
//! `scripts/test.sh` installs the SDK.

mod common;

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_http_client_publishes_reads_and_watches() {
    let installed = Command::new("python3")
        .args(["-c", "import nacos"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        installed,
        "nacos-sdk-python is not installed: run scripts/test.sh (it installs it) or `pip install 'nacos-sdk-python>=2,<3'`"
    );
    let tmp = tempfile::tempdir().unwrap();
    let server = common::Server::start(&tmp).await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/python_http_client.py"
    );
    let out_path = tmp.path().join("python.out");
    let err_path = tmp.path().join("python.err");
    // The SDK starts a multiprocessing manager (a child process): run the
    // script in its own process group and end the whole group afterwards.
    let mut child = Command::new("python3")
        .args(["-u", script, &format!("127.0.0.1:{}", server.port())])
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .expect("python3 runs");
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: kill(2) on the process group this test created.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    println!("{stdout}");
    assert!(
        status.is_some_and(|s| s.success()) && stdout.contains("all ok"),
        "python SDK run failed ({status:?}):\n{stdout}\n{}",
        stderr
            .lines()
            .filter(|l| !l.contains("DEBUG"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
