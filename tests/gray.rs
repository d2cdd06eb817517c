//! Gray versions on the real binary, beyond one process's lifetime: a gray
//! survives a restart (log replay and snapshot load), and a gray published
//! on a follower is matched the same on every node of a cluster.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, GROUP};
use common::{admin_headers, NacosApi, Server};
use reqwest::StatusCode;

/// `GET /nacos/v1/cs/configs` for `data_id` with extra headers and query
/// pairs: status and body.
async fn read(
    api: &NacosApi,
    data_id: &str,
    headers: &[(&str, &str)],
    query: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = api
        .client()
        .get(api.url("/nacos/v1/cs/configs"))
        .query(&[("dataId", data_id), ("group", GROUP)])
        .query(query);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("GET config");
    let status = response.status();
    (status, response.text().await.expect("body"))
}

/// What three clients read: tagged `canary`, at the beta IP, plain.
async fn views(api: &NacosApi, data_id: &str) -> [String; 3] {
    let tagged = read(api, data_id, &[("Vipserver-Tag", "canary")], &[]).await;
    let beta = read(api, data_id, &[("X-Forwarded-For", "10.9.9.9")], &[]).await;
    let plain = read(api, data_id, &[], &[]).await;
    for (status, body) in [&tagged, &beta, &plain] {
        assert_eq!(*status, StatusCode::OK, "{body}");
    }
    [tagged.1, beta.1, plain.1]
}

fn expected() -> [String; 3] {
    ["canary".into(), "beta".into(), "formal".into()]
}

async fn publish_grays(api: &NacosApi, data_id: &str) {
    for (content, tag, beta_ips) in [
        ("formal", "", ""),
        ("canary", "canary", ""),
        ("beta", "", "10.9.9.9"),
    ] {
        let form = [
            ("dataId", data_id),
            ("group", GROUP),
            ("content", content),
            ("tag", tag),
        ];
        let headers: Vec<(&str, &str)> = if beta_ips.is_empty() {
            Vec::new()
        } else {
            vec![("betaIps", beta_ips)]
        };
        let reply = api.publish_with(&form, &headers).await;
        assert_eq!(reply.text().await.unwrap(), "true", "publish {content}");
    }
}

async fn digest(api: &NacosApi) -> serde_json::Value {
    api.client()
        .get(api.url("/tacos/v1/admin/digest"))
        .headers(admin_headers())
        .send()
        .await
        .expect("digest")
        .json()
        .await
        .expect("digest JSON")
}

fn snapshot_count(data_dir: &Path) -> usize {
    std::fs::read_dir(data_dir.join("snapshots"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".snap"))
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn grays_survive_a_restart_from_the_log_and_from_a_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["--snapshot-entries", "8"];
    let mut server = Server::start_with_args(&tmp, &args).await;
    let api = server.api();
    publish_grays(&api, "g.yaml").await;
    assert_eq!(views(&api, "g.yaml").await, expected());
    let before = digest(&api).await;

    // From the log.
    assert!(server.stop().await.success());
    let mut server = Server::start_with_args(&tmp, &args).await;
    let api = server.api();
    assert_eq!(views(&api, "g.yaml").await, expected());
    assert_eq!(digest(&api).await["digest"], before["digest"]);

    // Enough writes for a snapshot, then one from it.
    for i in 0..20 {
        let reply = api.publish(&format!("pad-{i}"), GROUP, "", "x").await;
        assert_eq!(reply.text().await.unwrap(), "true");
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while snapshot_count(server.data_dir()) == 0 {
        assert!(Instant::now() < deadline, "no snapshot was written");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let before = digest(&api).await;
    assert!(server.stop().await.success());
    let server = Server::start_with_args(&tmp, &args).await;
    let api = server.api();
    assert!(
        server.log().contains("loaded snapshot"),
        "memory was not rebuilt from a snapshot:\n{}",
        server.log()
    );
    assert_eq!(views(&api, "g.yaml").await, expected());
    assert_eq!(digest(&api).await["digest"], before["digest"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gray_published_on_a_follower_is_matched_the_same_on_every_node() {
    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.leader().await.expect("a leader");
    let follower = (0..cluster.len()).find(|&i| i != leader).unwrap();
    publish_grays(&cluster.api(follower), "cluster.yaml").await;
    cluster.wait_converged().await;
    for i in 0..cluster.len() {
        assert_eq!(
            views(&cluster.api(i), "cluster.yaml").await,
            expected(),
            "node {i}"
        );
    }
}
