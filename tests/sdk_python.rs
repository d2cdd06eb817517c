//! The official Python SDK's HTTP client (PyPI nacos-sdk-python 2.0.x)
//! against the real binary: publish, get, watch, remove, namespaces.
//! `scripts/test.sh` installs the SDK.

mod common;

use std::process::Command;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_http_client_publishes_reads_and_watches() {
    run(&[], &[]).await;
}

/// With --open-api-auth the client logs in (`/nacos/v1/auth/login`) and
/// sends the token it gets.
#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_http_client_works_with_open_api_auth() {
    run(&["--open-api-auth"], &["nacos", common::ADMIN_PASSWORD]).await;
}

async fn run(server_args: &[&str], credentials: &[&str]) {
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
    let server = common::Server::start_with_args(&tmp, server_args).await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/python_http_client.py"
    );
    let addr = format!("127.0.0.1:{}", server.port());
    let mut args = vec!["-u", script, addr.as_str()];
    args.extend_from_slice(credentials);
    let (ok, stdout, stderr) =
        common::run_sdk_script("python3", &args, tmp.path(), Duration::from_secs(90));
    println!("{stdout}");
    let stderr: Vec<&str> = stderr.lines().filter(|l| !l.contains("DEBUG")).collect();
    assert!(
        ok && stdout.contains("all ok"),
        "python SDK run failed:\n{stdout}\n{}",
        stderr.join("\n")
    );
}
