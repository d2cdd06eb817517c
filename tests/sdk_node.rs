//! The official Node.js SDK (npm `nacos`, an HTTP client that long-polls)
//! against the real binary: publish, get, subscribe, remove; also over
//! HTTPS and mutual TLS. `scripts/test.sh` installs it into
//! tests/sdk/node_modules.

mod common;

use std::path::Path;
use std::time::Duration;

use common::tls::Pki;

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

/// Over HTTPS, with login (--open-api-auth): the SDK's option `ssl: true`
/// (tests/sdk/node_http_client.js sets it for an `https://` address). The
/// SDK verifies no server certificate (it passes `rejectUnauthorized:
/// false` itself), so what this shows is that it speaks TLS: the server
/// runs TLS-only, and a plaintext request to its port must fail.
#[tokio::test(flavor = "multi_thread")]
async fn node_sdk_over_https() {
    let pki = Pki::new();
    let mut args = pki.server_args();
    args.push("--open-api-auth".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args, &["nacos", common::ADMIN_PASSWORD]).await;
}

/// Mutual TLS (--client-cert-auth): the SDK has no certificate option of
/// its own, so the script gives it its `httpclient` option, urllib with the
/// CA (verified), `client.crt` and `client.key` added to each request. The
/// server refuses a client without a certificate, so passing shows the
/// SDK's requests went through that client with it.
#[tokio::test(flavor = "multi_thread")]
async fn node_sdk_over_mutual_tls_with_its_httpclient_option() {
    let pki = Pki::new();
    let args = pki.mutual_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let files = ["ca.crt", "client.crt", "client.key"]
        .map(|f| pki.path(f).to_str().expect("utf-8 path").to_string());
    let tls = [
        "--ca",
        files[0].as_str(),
        "--cert",
        files[1].as_str(),
        "--key",
        files[2].as_str(),
    ];
    run(&args, &tls).await;
}

async fn run(server_args: &[&str], script_args: &[&str]) {
    let sdk_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    assert!(
        sdk_dir.join("node_modules/nacos").is_dir(),
        "npm `nacos` is not installed: run scripts/test.sh (it installs it) or `cd tests/sdk && npm install`"
    );
    let tmp = tempfile::tempdir().unwrap();
    let server = common::Server::start_with_args(&tmp, server_args).await;
    let script = sdk_dir.join("node_http_client.js");
    let tls = server_args.contains(&"--cert-file");
    if tls {
        common::tls::assert_plaintext_refused(server.port(), None).await;
    }
    let scheme = if tls { "https" } else { "http" };
    let addr = format!("{scheme}://127.0.0.1:{}", server.port());
    let mut args = vec![script.to_str().unwrap(), addr.as_str()];
    args.extend_from_slice(script_args);
    let (ok, stdout, stderr) =
        common::run_sdk_script("node", &args, tmp.path(), Duration::from_secs(90));
    println!("{stdout}");
    assert!(
        ok && stdout.contains("all ok"),
        "node SDK run failed:\n{stdout}\n{stderr}"
    );
}
