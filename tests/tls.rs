//! TLS on every port, against the real binary with certificates made in
//! the test (tests/common/tls.rs): HTTPS and HTTP/2 by ALPN, gRPC over TLS,
//! mutual TLS for clients, plaintext and strangers refused at once, bad
//! certificates refused at start with the file named, a rotation picked up
//! under load with no failed request, and a 3-node cluster over mutual TLS
//! that survives its leader's death and refuses a node of another CA.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::cluster::{member_ids, Cluster};
use common::tls::{https_builder, Pki, Usage};
use common::{run_to_exit, temp_dir, Server};
use serde_json::{json, Value};
use tacos::grpc::pb::request_client::RequestClient;
use tacos::grpc::pb::{Metadata, Payload};
use tonic::transport::Endpoint;

/// Bound on a client's attempt that must fail (it must fail, not hang).
const REFUSAL_BOUND: Duration = Duration::from_secs(10);

fn args(list: &[String]) -> Vec<&str> {
    list.iter().map(String::as_str).collect()
}

#[tokio::test]
async fn https_serves_the_api_and_refuses_plaintext_and_unknown_cas() {
    let pki = Pki::new();
    let tmp = temp_dir();
    let mut server = Server::start_with_args(&tmp, &args(&pki.server_args())).await;
    let api = server.api().clone();
    assert!(api.url("/").starts_with("https://"), "{}", api.url("/"));
    api.publish("tls-a", "G", "", "over https").await;
    assert_eq!(api.get("tls-a", "G", "").await.1, "over https");

    // Plaintext HTTP to the TLS port: an error at once, never an answer.
    let plain = reqwest::Client::builder()
        .no_proxy()
        .timeout(REFUSAL_BOUND)
        .build()
        .unwrap();
    let err = plain
        .get(format!("http://127.0.0.1:{}/health", server.port()))
        .send()
        .await
        .expect_err("plaintext must not be answered");
    assert!(
        !err.is_timeout(),
        "plaintext hung instead of failing: {err}"
    );

    // A client that trusts another CA refuses the server's certificate.
    let other = Pki::named("Another CA");
    let err = other
        .client(false)
        .get(format!("https://localhost:{}/health", server.port()))
        .send()
        .await
        .expect_err("a certificate of an unknown CA must be refused");
    assert!(!err.is_timeout(), "{err}");
    server.stop().await;
}

#[tokio::test]
async fn https_offers_http2_by_alpn() {
    let pki = Pki::new();
    let tmp = temp_dir();
    let mut server = Server::start_with_args(&tmp, &args(&pki.server_args())).await;
    let roots = tacos_tls::load_roots(&pki.ca()).unwrap();
    let config = tacos_tls::client_config(roots, None, &[b"h2", b"http/1.1"]).unwrap();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", server.port()))
        .await
        .unwrap();
    let name = tacos_tls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tacos_tls::tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    server.stop().await;
}

/// A unary gRPC `ServerCheckRequest` (what every SDK sends first).
fn server_check() -> Payload {
    Payload {
        metadata: Some(Metadata {
            r#type: "ServerCheckRequest".into(),
            client_ip: "127.0.0.1".into(),
            headers: HashMap::new(),
        }),
        body: Some(prost_types::Any {
            type_url: String::new(),
            value: serde_json::to_vec(&json!({"requestId": "1", "headers": {}})).unwrap(),
        }),
    }
}

/// Sends [`server_check`] over TLS (trusting `ca`, presenting `identity`
/// when given) and returns the answer.
async fn grpc_check_over_tls(
    port: u16,
    ca: &std::path::Path,
    identity: Option<Arc<tacos_tls::ReloadingIdentity>>,
) -> Result<Value, String> {
    let roots = tacos_tls::load_roots(ca).unwrap();
    let config = tacos_tls::client_config(roots, identity, &[b"h2"]).unwrap();
    let connector = tacos_tls::TlsConnector::new(Arc::new(config), None);
    let endpoint = Endpoint::from_shared(format!("http://localhost:{port}"))
        .unwrap()
        .connect_timeout(REFUSAL_BOUND);
    let channel = endpoint.connect_with_connector(connector).await;
    grpc_check(channel).await
}

/// Sends [`server_check`] in plaintext and returns the answer.
async fn grpc_check_plain(port: u16) -> Result<Value, String> {
    let endpoint = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect_timeout(REFUSAL_BOUND);
    grpc_check(endpoint.connect().await).await
}

async fn grpc_check(
    channel: Result<tonic::transport::Channel, tonic::transport::Error>,
) -> Result<Value, String> {
    let channel = channel.map_err(|e| format!("{e:?}"))?;
    let reply = tokio::time::timeout(
        REFUSAL_BOUND,
        RequestClient::new(channel).request(server_check()),
    )
    .await
    .map_err(|_| "timed out".to_string())?
    .map_err(|s| format!("{s:?}"))?;
    let body = reply.into_inner().body.ok_or("an answer without a body")?;
    serde_json::from_slice(&body.value).map_err(|e| e.to_string())
}

#[tokio::test]
async fn grpc_over_tls_and_the_compatibility_mode() {
    let pki = Pki::new();
    let tmp = temp_dir();
    let mut server = Server::start_with_args(&tmp, &args(&pki.server_args())).await;
    let grpc = server.grpc_port();
    let answer = grpc_check_over_tls(grpc, &pki.ca(), None).await.unwrap();
    assert_eq!(answer["resultCode"], 200, "{answer}");
    assert!(answer["connectionId"]
        .as_str()
        .is_some_and(|c| !c.is_empty()));
    // TLS only by default: a plaintext gRPC client fails, and fails fast.
    let err = grpc_check_plain(grpc)
        .await
        .expect_err("plaintext gRPC on a TLS port");
    assert!(!err.contains("timed out"), "{err}");
    server.stop().await;

    // --grpc-tls-compatibility: both, told apart by the first byte.
    let tmp = temp_dir();
    let mut flags = pki.server_args();
    flags.push("--grpc-tls-compatibility".into());
    let mut server = Server::start_with_args(&tmp, &args(&flags)).await;
    let grpc = server.grpc_port();
    let tls = grpc_check_over_tls(grpc, &pki.ca(), None).await.unwrap();
    let plain = grpc_check_plain(grpc).await.unwrap();
    assert_eq!(
        (tls["resultCode"].clone(), plain["resultCode"].clone()),
        (json!(200), json!(200))
    );
    server.stop().await;
}

#[tokio::test]
async fn client_certificates_are_required_with_client_cert_auth() {
    let pki = Pki::new();
    let tmp = temp_dir();
    let mut server = Server::start_with_args(&tmp, &args(&pki.mutual_args())).await;
    // The harness presents client.pem: it is served.
    server.api().publish("mtls", "G", "", "x").await;
    // Without a client certificate: refused in the handshake.
    let anonymous = pki.client(false);
    let err = anonymous
        .get(format!("https://localhost:{}/health", server.port()))
        .send()
        .await
        .expect_err("no client certificate");
    assert!(!err.is_timeout(), "{err}");
    // A client certificate of another CA: refused too.
    let other = Pki::named("Another CA");
    let stranger = https_builder(&pki.ca(), Some(other.path("client.pem")))
        .build()
        .unwrap();
    stranger
        .get(format!("https://localhost:{}/health", server.port()))
        .send()
        .await
        .expect_err("a client certificate of another CA");
    // gRPC asks for one as well.
    let err = grpc_check_over_tls(server.grpc_port(), &pki.ca(), None)
        .await
        .expect_err("gRPC without a client certificate");
    assert!(!err.contains("timed out"), "{err}");
    let client_id =
        tacos_tls::ReloadingIdentity::load(&pki.path("client.crt"), &pki.path("client.key"), &[])
            .unwrap();
    let answer = grpc_check_over_tls(server.grpc_port(), &pki.ca(), Some(client_id))
        .await
        .unwrap();
    assert_eq!(answer["resultCode"], 200, "{answer}");
    server.stop().await;
}

#[test]
fn a_bad_certificate_stops_the_start_and_names_the_file() {
    let pki = Pki::new();
    let (expired, expired_key) = pki.issue("expired", Usage::Server, -30, -1);
    let (_, other_key) = pki.issue("other", Usage::Server, -1, 90);
    let missing = pki.path("missing.crt");
    let server_crt = pki.path("server.crt");
    let cases = [
        (
            expired.clone(),
            expired_key.clone(),
            "expired.crt",
            "expired",
        ),
        (
            server_crt.clone(),
            other_key.clone(),
            "other.key",
            "does not belong",
        ),
        (
            missing.clone(),
            expired_key.clone(),
            "missing.crt",
            "cannot read",
        ),
    ];
    for (cert, key, file, words) in cases {
        let tmp = temp_dir();
        let data = tmp.path().join("data");
        let exited = run_to_exit(
            tmp.path(),
            &[
                "--data-dir",
                data.to_str().unwrap(),
                "--http-port",
                &common::free_port().to_string(),
                "--cert-file",
                cert.to_str().unwrap(),
                "--key-file",
                key.to_str().unwrap(),
            ],
            &[],
        );
        assert!(!exited.status.success(), "started with {file}");
        assert!(
            exited.stderr.contains(file) && exited.stderr.contains(words),
            "{file}: {}",
            exited.stderr
        );
        assert!(!data.exists(), "the data dir was touched before the check");
    }
    // The peer certificate is checked the same way.
    let tmp = temp_dir();
    let exited = run_to_exit(
        tmp.path(),
        &[
            "--data-dir",
            tmp.path().join("data").to_str().unwrap(),
            "--http-port",
            &common::free_port().to_string(),
            "--peer-cert-file",
            expired.to_str().unwrap(),
            "--peer-key-file",
            expired_key.to_str().unwrap(),
            "--peer-trusted-ca-file",
            pki.ca().to_str().unwrap(),
        ],
        &[],
    );
    assert!(!exited.status.success());
    assert!(
        exited.stderr.contains("--peer-cert-file") && exited.stderr.contains("expired.crt"),
        "{}",
        exited.stderr
    );
}

/// The DER of the first certificate in a PEM file.
fn der_of(path: &std::path::Path) -> Vec<u8> {
    tacos_tls::identity::read_certificates(path).unwrap()[0].to_vec()
}

/// The certificate a new connection is served (reqwest's TLS info).
async fn served_certificate(pki: &Pki, port: u16) -> Vec<u8> {
    let client = https_builder(&pki.ca(), None)
        .tls_info(true)
        .build()
        .unwrap();
    let response = client
        .get(format!("https://localhost:{port}/health"))
        .send()
        .await
        .unwrap();
    response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|i| i.peer_certificate())
        .expect("tls info")
        .to_vec()
}

#[tokio::test]
async fn a_rotated_certificate_is_served_without_a_restart_and_no_request_fails() {
    let pki = Pki::new();
    let tmp = temp_dir();
    let mut server = Server::start_with_args(&tmp, &args(&pki.server_args())).await;
    let port = server.port();
    assert_eq!(
        served_certificate(&pki, port).await,
        der_of(&pki.path("server.crt"))
    );
    // Load on kept-alive connections and on new ones, through the rotation.
    let stop = Arc::new(AtomicBool::new(false));
    let (done, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut workers = Vec::new();
    for w in 0..4 {
        let (stop, done, failed, api) = (
            stop.clone(),
            done.clone(),
            failed.clone(),
            server.api().clone(),
        );
        let fresh = pki.ca();
        workers.push(tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let ok = if w % 2 == 0 {
                    let content = format!("{w}-{i}");
                    let data_id = format!("rot-{w}");
                    api.try_publish(&data_id, "G", "", &content)
                        .await
                        .is_ok_and(|r| r.status() == 200)
                } else {
                    // A new connection (and handshake) per request.
                    let client = https_builder(&fresh, None).build().unwrap();
                    client
                        .get(format!("https://localhost:{port}/health"))
                        .send()
                        .await
                        .is_ok_and(|r| r.status() == 200)
                };
                if ok { &done } else { &failed }.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Rotate: the new pair replaces the files at once (rename), then SIGHUP.
    let (new_crt, new_key) = pki.issue("server2", Usage::Server, -1, 120);
    std::fs::rename(&new_key, pki.path("server.key")).unwrap();
    std::fs::rename(&new_crt, pki.path("server.crt")).unwrap();
    server.hangup();
    let rotated = der_of(&pki.path("server.crt"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while served_certificate(&pki, port).await != rotated {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the rotated certificate is not served; log:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let (done, failed) = (done.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert!(
        done > 0 && failed == 0,
        "{done} requests served, {failed} failed"
    );
    // The expiry metric follows the new certificate (120 days, not 90).
    let metrics = server.api().get_path("/metrics").await.unwrap().body;
    let line = metrics
        .lines()
        .find(|l| l.starts_with("tacos_tls_cert_expiry_timestamp_seconds{port=\"http\"}"))
        .unwrap_or_else(|| panic!("no expiry metric:\n{metrics}"));
    let expiry: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let days = (expiry - now) / 86_400.0;
    assert!((100.0..=121.0).contains(&days), "{days} days");
    server.stop().await;
}

#[tokio::test]
async fn a_cluster_over_mutual_tls_survives_its_leader_and_refuses_strangers() {
    let pki = Pki::new();
    let mut common_args = pki.server_args();
    common_args.extend(pki.peer_args());
    let mut cluster = Cluster::start(3, &args(&common_args)).await;
    cluster.publish(0, "tls-cluster", "one").await;
    let leader = cluster.wait_for_leader(Duration::from_secs(30)).await;
    cluster.kill9(leader);
    let survivor = (0..3).find(|i| *i != leader).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if matches!(cluster.leader().await, Ok(l) if l != leader) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no new leader over TLS"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    cluster.publish(survivor, "tls-cluster", "two").await;
    for i in cluster.live() {
        assert_eq!(
            cluster.read_linearizable(i, "tls-cluster").await.as_deref(),
            Some("two")
        );
    }
    // The leader comes back and catches up over TLS.
    cluster.start_node(leader).await;
    cluster.wait_converged().await;

    // A node whose peer certificate is of another CA cannot join: refused
    // in the handshake, with a line on both sides.
    let other = Pki::named("Another CA");
    let mut stranger_args = pki.server_args();
    stranger_args.extend(other.peer_args());
    let stranger = cluster.add_node_with(Some(survivor), stranger_args);
    cluster.spawn(stranger);
    let refused = cluster
        .log_with(
            survivor,
            "refused a node on the cluster port",
            Duration::from_secs(30),
        )
        .await;
    assert!(refused.contains("TLS handshake failed"), "{refused}");
    let failed = cluster
        .log_with(stranger, "join failed", Duration::from_secs(30))
        .await;
    assert!(failed.contains("TLS"), "{failed}");
    let members = cluster.members(survivor).await.unwrap();
    assert_eq!(member_ids(&members["voters"]), vec![1, 2, 3], "{members}");
    assert_eq!(
        member_ids(&members["learners"]),
        Vec::<u64>::new(),
        "{members}"
    );
}

#[tokio::test]
async fn a_node_without_peer_tls_is_refused_by_one_with_it() {
    let pki = Pki::new();
    let mut cluster = Cluster::start(1, &args(&pki.peer_args())).await;
    let plain = cluster.add_node_with(Some(0), Vec::new());
    cluster.spawn(plain);
    cluster
        .log_with(
            0,
            "refused a node on the cluster port",
            Duration::from_secs(30),
        )
        .await;
    cluster
        .log_with(plain, "join failed", Duration::from_secs(30))
        .await;
    let members = cluster.members(0).await.unwrap();
    assert_eq!(member_ids(&members["voters"]), vec![1], "{members}");
    assert_eq!(
        member_ids(&members["learners"]),
        Vec::<u64>::new(),
        "{members}"
    );
}
