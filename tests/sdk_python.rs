//! The official Python SDK's HTTP client (PyPI nacos-sdk-python 2.0.x)
//! against the real binary: publish, get, watch, remove, namespaces; and
//! over TLS, that client over HTTPS and the 3.x gRPC client (venv
//! tests/sdk/.venv-py3) with and without mutual TLS.
//! `scripts/test.sh` installs both SDKs.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::tls::Pki;

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
    let tls = server_args.contains(&"--cert-file");
    if tls {
        // TLS-only: a run that passes can only have passed over TLS.
        common::tls::assert_plaintext_refused(server.port(), None).await;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/python_http_client.py"
    );
    let scheme = if tls { "https://" } else { "" };
    let addr = format!("{scheme}127.0.0.1:{}", server.port());
    let mut args = vec!["-u", script, addr.as_str()];
    args.extend_from_slice(credentials);
    let (ok, stdout, stderr) =
        common::run_sdk_script("python3", &args, tmp.path(), Duration::from_secs(90));
    println!("{stdout}");
    let stderr: Vec<&str> = stderr.lines().filter(|l| !l.contains("DEBUG")).collect();
    assert!(
        ok && stdout.contains("all ok"),
        "python SDK run (tls: {tls}) failed:\n{stdout}\n{}",
        stderr.join("\n")
    );
}

// ---- over TLS --------------------------------------------------------------

/// The 2.x client over HTTPS, logging in over it too (--open-api-auth). Its
/// TLS switch is the scheme of the server address: `https://host:port`
/// (its `parse_nacos_server_addr` keeps `https://host` as the host, and
/// `_do_sync_req` uses an address starting with `http` as it is). It has no
/// option for a CA or a client certificate: every request gets a fresh
/// `ssl.SSLContext()`, which verifies nothing (CERT_NONE, no hostname
/// check), so `SSL_CERT_FILE` plays no part and mutual TLS is out of reach.
/// The server runs TLS-only; a plaintext request to its port must fail, so
/// the run can only have passed over TLS.
#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_http_client_over_https() {
    let pki = Pki::new();
    let mut server_args = pki.server_args();
    server_args.push("--open-api-auth".into());
    let server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    run(&server_args, &[common::ADMIN_USER, common::ADMIN_PASSWORD]).await;
}

/// The 3.x client (gRPC) over TLS: `TLSConfig(enabled=True, ca_file,
/// cert_file, key_file)` (tests/sdk/python_grpc_tls.py says what the SDK
/// does with it). The server runs TLS-only on both ports; plaintext to
/// either must fail.
#[tokio::test(flavor = "multi_thread")]
async fn python_3x_sdk_grpc_client_over_tls() {
    let pki = Pki::new();
    run_grpc_tls(&pki, pki.server_args(), false).await;
}

/// The same with mutual TLS (--client-cert-auth): the client presents
/// `client.crt`, and logs in over HTTPS (--open-api-auth) with the same
/// identity. A client without a certificate is refused
/// (tests/tls.rs), so passing shows the SDK presented it.
#[tokio::test(flavor = "multi_thread")]
async fn python_3x_sdk_grpc_client_over_mutual_tls_with_login() {
    let pki = Pki::new();
    let mut args = pki.mutual_args();
    args.push("--open-api-auth".into());
    run_grpc_tls(&pki, args, true).await;
}

async fn run_grpc_tls(pki: &Pki, mut server_args: Vec<String>, login: bool) {
    let sdk_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk");
    let python = format!("{sdk_dir}/.venv-py3/bin/python");
    assert!(
        Path::new(&python).exists(),
        "nacos-sdk-python 3.x is not installed: run scripts/test.sh (it makes the venv tests/sdk/.venv-py3)"
    );
    let grpc_port = common::free_port();
    server_args.extend(["--grpc-port".to_string(), grpc_port.to_string()]);
    let server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    let server = common::Server::start_with_args(&tmp, &server_args).await;
    common::tls::assert_plaintext_refused(server.port(), Some(grpc_port)).await;
    let addr = format!("https://127.0.0.1:{}", server.port());
    let grpc = grpc_port.to_string();
    let paths = ["ca.crt", "client.crt", "client.key"]
        .map(|f| pki.path(f).to_str().expect("utf-8 path").to_string());
    let workdir = tmp.path().join("py3");
    let script = format!("{sdk_dir}/python_grpc_tls.py");
    let mut args = vec![
        "-u",
        script.as_str(),
        addr.as_str(),
        grpc.as_str(),
        paths[0].as_str(),
        paths[1].as_str(),
        paths[2].as_str(),
        workdir.to_str().unwrap(),
    ];
    if login {
        args.extend([common::ADMIN_USER, common::ADMIN_PASSWORD]);
    }
    let (ok, stdout, stderr) =
        common::run_sdk_script(&python, &args, tmp.path(), Duration::from_secs(100));
    println!("{stdout}");
    assert!(
        ok && stdout.contains("all ok"),
        "python 3.x SDK run over TLS failed:\n{stdout}\n{stderr}\n---- tacos log (tail) ----\n{}",
        common::cluster::tail(&server.log(), 40)
    );
}
