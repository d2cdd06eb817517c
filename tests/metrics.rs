//! `GET /metrics` on the real binary: every documented series is exposed,
//! and the counters move when traffic flows.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{assert_true, free_port, temp_dir, Server};
use tacos::grpc::pb;

/// The scrape as `series{labels} -> value` (comments dropped).
async fn scrape(server: &Server) -> HashMap<String, f64> {
    let reply = server
        .api()
        .get_path("/metrics")
        .await
        .expect("GET /metrics");
    assert_eq!(reply.status, 200);
    reply
        .body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

fn value(scrape: &HashMap<String, f64>, series: &str) -> f64 {
    *scrape
        .get(series)
        .unwrap_or_else(|| panic!("no series {series} in the scrape: {:?}", scrape.keys()))
}

fn has_family(scrape: &HashMap<String, f64>, name: &str) -> bool {
    scrape.keys().any(|k| {
        k == name || k.starts_with(&format!("{name}{{")) || k.starts_with(&format!("{name}_"))
    })
}

async fn grpc_query(grpc: u16) -> pb::Payload {
    let channel = tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{grpc}"))
        .expect("uri")
        .connect()
        .await
        .expect("connecting to the gRPC port");
    let mut client = pb::request_client::RequestClient::new(channel);
    let body = serde_json::json!({"dataId": "m", "group": "G", "tenant": "", "requestId": "1", "headers": {}});
    let payload = pb::Payload {
        metadata: Some(pb::Metadata {
            r#type: "ConfigQueryRequest".into(),
            client_ip: "127.0.0.1".into(),
            headers: HashMap::new(),
        }),
        body: Some(prost_types::Any {
            type_url: String::new(),
            value: serde_json::to_vec(&body).expect("json"),
        }),
    };
    client
        .request(payload)
        .await
        .expect("gRPC query")
        .into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_expose_the_documented_series_and_move_with_traffic() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg]).await;
    let api = server.api();

    // traffic: HTTP writes and reads, a long poll woken by a write, a gRPC read
    assert_true(api.publish("m", "G", "", "one").await, "publish").await;
    let _ = api.get("m", "G", "").await;
    let listener = {
        let api = server.api();
        let md5 = common::md5_hex("one");
        tokio::spawn(async move {
            api.client()
                .post(api.url("/nacos/v1/cs/configs/listener"))
                .header("Long-Pulling-Timeout", "20000")
                .form(&[("Listening-Configs", format!("m\u{2}G\u{2}{md5}\u{1}"))])
                .timeout(Duration::from_secs(30))
                .send()
                .await
                .expect("long poll")
                .text()
                .await
                .expect("long poll body")
        })
    };
    // the hold must be registered before the write that wakes it
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while value(
        &scrape(&server).await,
        "tacos_listeners{kind=\"long_poll\"}",
    ) < 1.0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the long poll was never held"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = scrape(&server).await;
    assert_true(api.publish("m", "G", "", "two").await, "publish").await;
    let woken = listener.await.expect("listener task");
    assert!(woken.contains('m'), "the long poll answered {woken:?}");
    let reply = grpc_query(grpc).await;
    assert_eq!(
        reply.metadata.expect("metadata").r#type,
        "ConfigQueryResponse"
    );
    let after = scrape(&server).await;

    for family in [
        "tacos_http_requests_total",
        "tacos_http_request_duration_seconds",
        "tacos_grpc_requests_total",
        "tacos_grpc_request_duration_seconds",
        "tacos_watch_notify_seconds",
        "tacos_log_fsync_seconds",
        "tacos_configs",
        "tacos_listeners",
        "tacos_raft_term",
        "tacos_raft_leader",
        "tacos_raft_is_leader",
        "tacos_raft_last_log_index",
        "tacos_raft_committed_index",
        "tacos_raft_applied_index",
        "tacos_raft_snapshot_index",
        "tacos_log_bytes",
        "tacos_snapshot_bytes",
        "tacos_process_resident_memory_bytes",
        "tacos_process_cpu_seconds_total",
    ] {
        assert!(has_family(&after, family), "{family} missing from /metrics");
    }

    let posts =
        r#"tacos_http_requests_total{method="POST",route="/nacos/v1/cs/configs",status="200"}"#;
    assert_eq!(value(&after, posts) - value(&before, posts), 1.0);
    assert!(value(&after, "tacos_raft_applied_index") > value(&before, "tacos_raft_applied_index"));
    assert!(
        value(&after, "tacos_log_fsync_seconds_count")
            > value(&before, "tacos_log_fsync_seconds_count")
    );
    assert_eq!(value(&after, "tacos_watch_notify_seconds_count"), 1.0);
    assert_eq!(
        value(
            &after,
            r#"tacos_grpc_requests_total{type="ConfigQueryRequest",result="ok"}"#
        ),
        1.0
    );
    assert_eq!(value(&after, "tacos_configs"), 1.0);
    assert_eq!(value(&after, "tacos_raft_is_leader"), 1.0);
    assert!(value(&after, "tacos_log_bytes") > 0.0);
    assert!(value(&after, "tacos_process_resident_memory_bytes") > 1e6);
    // a tag gray: held, and counted when it answers a read
    let form = [
        ("dataId", "m"),
        ("group", "G"),
        ("content", "canary"),
        ("tag", "canary"),
    ];
    let published = api
        .try_publish_with(&form, &[])
        .await
        .expect("gray publish");
    assert_true(published, "gray publish").await;
    let read = api
        .get_path("/nacos/v1/cs/configs?dataId=m&group=G&tag=canary")
        .await
        .expect("gray read");
    assert_eq!((read.status, read.body.as_str()), (200, "canary"));
    let grays = scrape(&server).await;
    assert_eq!(value(&grays, r#"tacos_grays{kind="tag"}"#), 1.0);
    assert_eq!(value(&grays, r#"tacos_grays{kind="beta"}"#), 0.0);
    assert_eq!(value(&grays, r#"tacos_gray_reads_total{kind="tag"}"#), 1.0);

    // routes are labelled by pattern, so a request for an unknown path does
    // not add a series per path
    let _ = api.get_path("/no/such/path/123").await;
    let _ = api.get_path("/no/such/path/456").await;
    let last = scrape(&server).await;
    assert!(
        last.keys().all(|k| !k.contains("/no/such/path")),
        "raw paths leaked into labels"
    );
    assert!(last.keys().any(|k| k.contains(r#"route="unmatched""#)));
}
