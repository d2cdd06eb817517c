//! The official Node.js SDK (npm `nacos`, an HTTP client that long-polls)
//! against the real binary: publish, get, subscribe, remove.
//! `scripts/test.sh` installs it into tests/sdk/node_modules.

mod common;

use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn node_sdk_publishes_reads_and_subscribes() {
    run(&[], &[]).await;
}

/// With --open-api-auth the client sends `username`/`password` on every
/// request (its way of logging in).
#[tokio::test(flavor = "multi_thread")]
async fn node_sdk_works_with_open_api_auth() {
    run(&["--open-api-auth"], &["nacos", common::ADMIN_PASSWORD]).await;
}

async fn run(server_args: &[&str], credentials: &[&str]) {
    let sdk_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    assert!(
        sdk_dir.join("node_modules/nacos").is_dir(),
        "npm `nacos` is not installed: run scripts/test.sh (it installs it) or `cd tests/sdk && npm install`"
    );
    let tmp = tempfile::tempdir().unwrap();
    let server = common::Server::start_with_args(&tmp, server_args).await;
    let script = sdk_dir.join("node_http_client.js");
    let addr = format!("127.0.0.1:{}", server.port());
    let mut args = vec![script.to_str().unwrap(), addr.as_str()];
    args.extend_from_slice(credentials);
    let (ok, stdout, stderr) =
        common::run_sdk_script("node", &args, tmp.path(), Duration::from_secs(90));
    println!("{stdout}");
    assert!(
        ok && stdout.contains("all ok"),
        "node SDK run failed:\n{stdout}\n{stderr}"
    );
}
