//! The official Rust client (crates.io `nacos-sdk`, gRPC) against the real
//! binary: get, publish, CAS, remove, listeners woken by HTTP writes and by
//! writes on another cluster node, and a listener that survives a restart;
//! and the SDK's encryption plugin (dataIds `cipher-{alg}-...`): what it
//! encrypts is stored and served as ciphertext with its `encryptedDataKey`,
//! and the SDK decrypts it on get and on a change.

mod common;

use std::sync::Arc;
use std::time::Duration;

use nacos_sdk::api::config::{
    ConfigChangeListener, ConfigResponse, ConfigService, ConfigServiceBuilder,
};
use nacos_sdk::api::error::Error as SdkError;
use nacos_sdk::api::props::ClientProps;
use tokio::sync::mpsc;

use common::cluster::Cluster;
use common::{assert_true, free_port, md5_hex, temp_dir, Server};

const GROUP: &str = "DEFAULT_GROUP";
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(15);

/// Sends every notification into a channel.
struct Forward(mpsc::UnboundedSender<ConfigResponse>);

impl ConfigChangeListener for Forward {
    fn notify(&self, config: ConfigResponse) {
        let _ = self.0.send(config);
    }
}

/// A client of the node whose HTTP port is `http` and gRPC port `grpc`; its
/// cache lives in `cache` so tests never share or reuse one.
async fn client(http: u16, grpc: u16, cache: &std::path::Path) -> ConfigService {
    build(props(http, grpc, cache), false).await
}

fn props(http: u16, grpc: u16, cache: &std::path::Path) -> ClientProps {
    props_for(&format!("127.0.0.1:{http}"), grpc, cache)
}

/// [`props`] for a list of servers (`host:port,...`) sharing one gRPC port.
fn props_for(servers: &str, grpc: u16, cache: &std::path::Path) -> ClientProps {
    ClientProps::new()
        .server_addr(servers.to_string())
        .remote_grpc_port(grpc)
        .namespace("")
        .app_name("tacos-sdk-test")
        .env_first(false)
        .config_load_cache_at_start(false)
        .cache_dir(cache.to_path_buf())
}

/// Builds the config service; with `auth`, it logs in over HTTP first and
/// sends the token with every gRPC request.
async fn build(props: ClientProps, auth: bool) -> ConfigService {
    let builder = ConfigServiceBuilder::new(props);
    let builder = if auth {
        builder.enable_auth_plugin_http()
    } else {
        builder
    };
    tokio::time::timeout(Duration::from_secs(30), builder.build())
        .await
        .expect("the SDK connects within 30 s")
        .expect("building the config service")
}

/// Adds a listener, then waits until the node at `http` has the SDK's
/// subscription: the SDK sends its listen request in the background and
/// ignores that request's answer, so a change made before the server has it
/// would only be seen on the SDK's next periodic re-listen (every 60 s).
async fn listen(
    service: &ConfigService,
    http: u16,
    data_id: &str,
) -> mpsc::UnboundedReceiver<ConfigResponse> {
    let (tx, rx) = mpsc::unbounded_channel();
    service
        .add_listener(data_id.into(), GROUP.into(), Arc::new(Forward(tx)))
        .await
        .expect("adding a listener");
    wait_subscribed(http).await;
    rx
}

/// Waits until some gRPC connection listens to a key on the node at `http`.
async fn wait_subscribed(http: u16) {
    wait_subscribed_keys(http, 1).await
}

/// Waits until gRPC connections listen to at least `want` keys on the node
/// at `http`.
async fn wait_subscribed_keys(http: u16, want: u64) {
    let url = format!("http://127.0.0.1:{http}/tacos/v1/admin/listeners");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let request = reqwest::Client::new()
            .get(&url)
            .header("Authorization", common::admin_basic_auth());
        let keys = match request.send().await {
            Ok(reply) => reply.json::<serde_json::Value>().await.ok(),
            Err(_) => None,
        }
        .and_then(|v| v["grpcKeys"].as_u64())
        .unwrap_or(0);
        if keys >= want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the SDK's listen request did not reach the server within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for a notification carrying `content` (earlier ones are skipped).
async fn expect_notified(rx: &mut mpsc::UnboundedReceiver<ConfigResponse>, content: &str) {
    let deadline = tokio::time::Instant::now() + NOTIFY_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(config)) if config.content() == content => {
                assert_eq!(config.md5(), &md5_hex(content));
                return;
            }
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the listener channel closed"),
            Err(_) => panic!("no notification with {content:?} within {NOTIFY_TIMEOUT:?}"),
        }
    }
}

/// Keys in other scripts (what Java Nacos' `ParamUtils.isValid` accepts):
/// the SDK publishes, reads and listens on a Chinese dataId in a Chinese
/// group, and a Latin-1 one, over gRPC; HTTP sees what it wrote and its
/// listener hears an HTTP write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_reads_writes_and_listens_on_keys_in_any_script() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg]).await;
    let cache = temp_dir();
    let sdk = client(server.port(), grpc, cache.path()).await;
    for (n, (group, data_id)) in [("支付组", "订单服务配置.yaml"), (GROUP, "é.yaml")]
        .into_iter()
        .enumerate()
    {
        let published = sdk
            .publish_config(data_id.into(), group.into(), "v: 1".into(), None)
            .await
            .expect("publish over gRPC");
        assert!(published, "{group}/{data_id}");
        let got = sdk
            .get_config(data_id.into(), group.into())
            .await
            .expect("get");
        assert_eq!(got.content(), "v: 1");
        assert_eq!(got.data_id(), data_id);
        assert_eq!(got.group(), group);
        let (status, body, _) = server.api().get(data_id, group, "").await;
        assert_eq!((status.as_u16(), body.as_str()), (200, "v: 1"));

        let (tx, mut rx) = mpsc::unbounded_channel();
        sdk.add_listener(data_id.into(), group.into(), Arc::new(Forward(tx)))
            .await
            .expect("adding a listener");
        wait_subscribed_keys(server.port(), n as u64 + 1).await;
        let reply = server.api().publish(data_id, group, "", "v: 2").await;
        assert_true(reply, "HTTP publish").await;
        expect_notified(&mut rx, "v: 2").await;
    }
}

/// With --open-api-auth: the SDK logs in (HTTP) and its gRPC requests carry
/// the token; without credentials the same requests are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_with_open_api_auth_logs_in_and_works() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server =
        Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg, "--open-api-auth"]).await;
    let cache = temp_dir();
    let props = props(server.port(), grpc, cache.path())
        .auth_username("nacos")
        .auth_password(common::ADMIN_PASSWORD);
    let sdk = build(props, true).await;
    let published = sdk
        .publish_config("auth.yaml".into(), GROUP.into(), "a: 1".into(), None)
        .await
        .expect("publish over gRPC with a token");
    assert!(published);
    let mut rx = listen(&sdk, server.port(), "auth.yaml").await;
    assert_true(
        server.api().publish("auth.yaml", GROUP, "", "a: 2").await,
        "publish over HTTP as the admin",
    )
    .await;
    expect_notified(&mut rx, "a: 2").await;

    let anonymous_cache = temp_dir();
    let anonymous = client(server.port(), grpc, anonymous_cache.path()).await;
    let refused = anonymous
        .publish_config("auth.yaml".into(), GROUP.into(), "hacked".into(), None)
        .await;
    assert!(refused.is_err(), "{refused:?}");
    let got = sdk
        .get_config("auth.yaml".into(), GROUP.into())
        .await
        .expect("get");
    assert_eq!(got.content(), "a: 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_reads_writes_and_listens_over_grpc() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg]).await;
    let cache = temp_dir();
    let sdk = client(server.port(), grpc, cache.path()).await;

    // publish and get
    let published = sdk
        .publish_config(
            "app.yaml".into(),
            GROUP.into(),
            "port: 1".into(),
            Some("yaml".into()),
        )
        .await
        .expect("publish over gRPC");
    assert!(published);
    let got = sdk
        .get_config("app.yaml".into(), GROUP.into())
        .await
        .expect("get");
    assert_eq!(got.content(), "port: 1");
    assert_eq!(got.md5(), &md5_hex("port: 1"));
    assert_eq!(got.content_type(), "yaml");
    // what the SDK wrote is what HTTP clients read
    let (status, body, _) = server.api().get("app.yaml", GROUP, "").await;
    assert_eq!(status, 200);
    assert_eq!(body, "port: 1");

    // compare-and-set
    let stale = sdk
        .publish_config_cas(
            "app.yaml".into(),
            GROUP.into(),
            "port: 2".into(),
            None,
            md5_hex("not the current content"),
        )
        .await;
    assert!(
        !matches!(stale, Ok(true)),
        "a CAS publish with a stale md5 must not succeed: {stale:?}"
    );
    assert!(sdk
        .publish_config_cas(
            "app.yaml".into(),
            GROUP.into(),
            "port: 2".into(),
            None,
            md5_hex("port: 1")
        )
        .await
        .expect("CAS publish with the current md5"));

    // a listener is woken by a write made over HTTP
    let mut changes = listen(&sdk, server.port(), "app.yaml").await;
    assert_true(
        server.api().publish("app.yaml", GROUP, "", "port: 3").await,
        "HTTP publish",
    )
    .await;
    expect_notified(&mut changes, "port: 3").await;

    // remove: HTTP sees it gone. (The SDK itself keeps answering a listened
    // key from its cache, so "not found" is checked on a key it does not
    // listen to.)
    assert!(sdk
        .remove_config("app.yaml".into(), GROUP.into())
        .await
        .expect("remove"));
    let (status, _, _) = server.api().get("app.yaml", GROUP, "").await;
    assert_eq!(status, 404);
    assert!(sdk
        .publish_config("gone.txt".into(), GROUP.into(), "x".into(), None)
        .await
        .expect("publish"));
    assert_eq!(
        sdk.get_config("gone.txt".into(), GROUP.into())
            .await
            .expect("get")
            .content(),
        "x"
    );
    assert!(sdk
        .remove_config("gone.txt".into(), GROUP.into())
        .await
        .expect("remove"));
    match sdk.get_config("gone.txt".into(), GROUP.into()).await {
        Err(SdkError::ConfigNotFound(_)) => {}
        other => panic!("expected ConfigNotFound after remove, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_listener_survives_a_server_restart() {
    let tmp = temp_dir();
    let http = free_port();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let mut server = Server::spawn(&tmp, http, &["--grpc-port", &grpc_arg]);
    server.wait_healthy().await;
    assert_true(
        server.api().publish("watched", GROUP, "", "v1").await,
        "publish v1",
    )
    .await;

    let cache = temp_dir();
    let sdk = client(http, grpc, cache.path()).await;
    let mut changes = listen(&sdk, http, "watched").await;

    server.stop().await;
    let mut server = Server::spawn(&tmp, http, &["--grpc-port", &grpc_arg]);
    server.wait_healthy().await;
    // The SDK reconnects on its own, but nacos-sdk 0.8 re-sends its listen
    // request only in its periodic loop (every 60 s). The node notifies a
    // config connection that has not listened yet of every change in its
    // namespace, and at setup of those made just before (the SDK may
    // reconnect after this publish), so the listener fires well before that
    // loop: the bound is generous, the mechanism needs the SDK's reconnect
    // back-off (seconds).
    assert_true(
        server.api().publish("watched", GROUP, "", "v2").await,
        "publish v2",
    )
    .await;
    let bound = Duration::from_secs(30);
    let published = tokio::time::Instant::now();
    loop {
        let left = (published + bound).saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, changes.recv()).await {
            Ok(Some(config)) if config.content() == "v2" => break,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the listener channel closed"),
            Err(_) => panic!(
                "the SDK's listener saw no change within {bound:?} of the restart; server log:\n{}",
                server.log()
            ),
        }
    }
    eprintln!(
        "the change reached the SDK's listener {:?} after its publish",
        published.elapsed()
    );
    // A further change reaches it too: pushed whether or not the SDK has
    // listened on its new connection by now.
    assert_true(
        server.api().publish("watched", GROUP, "", "v3").await,
        "publish v3",
    )
    .await;
    expect_notified(&mut changes, "v3").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_on_a_follower_hears_a_write_made_on_another_node() {
    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_for_leader(Duration::from_secs(10)).await;
    let follower = (0..3).find(|&i| i != leader).expect("a follower");
    let other = (0..3)
        .find(|&i| i != leader && i != follower)
        .expect("a third node");

    let cache = temp_dir();
    let sdk = client(
        cluster.http_port(follower),
        cluster.grpc_port(follower),
        cache.path(),
    )
    .await;
    cluster.publish(leader, "shared", "one").await;
    cluster.wait_converged().await;
    let got = sdk
        .get_config("shared".into(), GROUP.into())
        .await
        .expect("get on a follower");
    assert_eq!(got.content(), "one");

    let mut changes = listen(&sdk, cluster.http_port(follower), "shared").await;
    cluster.publish(other, "shared", "two").await;
    expect_notified(&mut changes, "two").await;

    // the SDK's own write on the follower is forwarded to the leader
    assert!(sdk
        .publish_config("shared".into(), GROUP.into(), "three".into(), None)
        .await
        .expect("publish through a follower"));
    cluster.wait_converged().await;
    for i in 0..3 {
        assert_eq!(
            cluster.read(i, "shared").await.as_deref(),
            Some("three"),
            "node {i}"
        );
    }
}

/// Gray release by tag with the Rust SDK: it cannot put a tag on a query,
/// but its `ClientProps::labels` go into the connection's setup labels, and
/// the label `app_Vipserver-Tag` is the tag Nacos matches a connection by.
/// Its `publish_config_param` with `tag` makes the gray (`additionMap`).
/// The labelled client reads and hears the gray; a plain one the formal
/// version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_with_a_tag_label_reads_and_hears_its_gray() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg]).await;
    let http = server.port();
    let (tagged_cache, plain_cache) = (temp_dir(), temp_dir());
    let labels =
        std::collections::HashMap::from([("app_Vipserver-Tag".to_string(), "canary".to_string())]);
    let tagged = build(props(http, grpc, tagged_cache.path()).labels(labels), false).await;
    let plain = client(http, grpc, plain_cache.path()).await;
    let publish_tagged = |content: &str| {
        let params = std::collections::HashMap::from([("tag".to_string(), "canary".to_string())]);
        plain.publish_config_param(
            "gray.yaml".into(),
            GROUP.into(),
            content.into(),
            None,
            None,
            params,
        )
    };
    assert!(plain
        .publish_config("gray.yaml".into(), GROUP.into(), "formal".into(), None)
        .await
        .expect("formal publish"));
    assert!(publish_tagged("canary").await.expect("gray publish"));

    let read = |sdk: &ConfigService| {
        let sdk = sdk.clone();
        async move {
            sdk.get_config("gray.yaml".into(), GROUP.into())
                .await
                .expect("get_config")
                .content()
                .clone()
        }
    };
    assert_eq!(read(&tagged).await, "canary");
    assert_eq!(read(&plain).await, "formal");

    let mut notified = listen(&tagged, http, "gray.yaml").await;
    assert!(publish_tagged("canary 2").await.expect("gray publish"));
    expect_notified(&mut notified, "canary 2").await;
}

/// The gRPC connections node `i` holds (`/tacos/v1/admin/listeners`).
async fn grpc_connections(cluster: &Cluster, i: usize) -> Result<u64, String> {
    let view = cluster.get_json(i, "/tacos/v1/admin/listeners").await?;
    view["grpcConnections"]
        .as_u64()
        .ok_or_else(|| format!("no grpcConnections in {view}"))
}

/// `--grpc-connection-target 2` on three nodes and six Rust SDK clients
/// that all start on node 1 (every address in their list leads there at
/// first): once two of the addresses lead to nodes 2 and 3, node 1 asks its excess to move (`ConnectResetRequest`; this
/// SDK ignores the request, so the node ends their streams 5 s later) and
/// the clients reconnect to the next server of their list until every node
/// holds two. Every client still hears a change made afterwards: none lost
/// its listener on the way.
///
/// The SDK is given one gRPC port for all servers, so each node is reached
/// through a proxy on its own loopback address (127.0.2.N) with the same
/// ports; a proxy turned to its own node is how that node is "added" (the
/// SDK will not start while the first server it picks is unreachable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_clients_of_a_node_over_its_connection_target_spread_and_keep_listening() {
    use common::proxy::Proxy;
    const CLIENTS: usize = 6;
    let cluster = Cluster::start(3, &["--grpc-connection-target", "2"]).await;
    let (http_port, grpc_port) = (free_port(), free_port());
    let ip = |i: usize| format!("127.0.2.{}", i + 1);
    let node = |i: usize| -> std::net::SocketAddr {
        format!("127.0.0.1:{}", cluster.grpc_port(i))
            .parse()
            .expect("an address")
    };
    let mut proxies = Vec::new();
    for i in 0..3 {
        let listen = format!("{}:{grpc_port}", ip(i))
            .parse()
            .expect("an address");
        proxies.push(Proxy::start(listen, node(0)).await);
    }
    let servers = (0..3)
        .map(|i| format!("{}:{http_port}", ip(i)))
        .collect::<Vec<_>>()
        .join(",");

    cluster.publish(0, "spread", "v1").await;
    cluster.wait_converged().await;
    let tmp = temp_dir();
    let mut clients = Vec::new();
    for k in 0..CLIENTS {
        let cache = tmp.path().join(format!("client-{k}"));
        let props = props_for(&servers, grpc_port, &cache);
        let sdk = build(props, false).await;
        let (tx, rx) = mpsc::unbounded_channel();
        sdk.add_listener("spread".into(), GROUP.into(), Arc::new(Forward(tx)))
            .await
            .expect("adding a listener");
        clients.push((sdk, rx));
    }
    // (Node 1 is over its target from the start: it already asks clients
    // to move, and they come back through the other addresses.)
    let mut before = Vec::new();
    for i in 0..3 {
        before.push(grpc_connections(&cluster, i).await.expect("connections"));
    }
    assert_eq!(before[1] + before[2], 0, "connections per node: {before:?}");
    eprintln!("connections per node before: {before:?}");

    // Nodes 2 and 3 are "added"; node 1 sheds its excess.
    proxies[1].retarget(node(1));
    proxies[2].retarget(node(2));
    let spread = cluster
        .poll_until(
            "every node at or under its target",
            Duration::from_secs(120),
            || async {
                let mut counts = Vec::new();
                for i in 0..3 {
                    counts.push(grpc_connections(&cluster, i).await?);
                }
                if counts.iter().all(|&n| n <= 2) && counts.iter().sum::<u64>() == CLIENTS as u64 {
                    Ok(counts)
                } else {
                    Err(format!("connections per node: {counts:?}"))
                }
            },
        )
        .await;
    eprintln!("connections per node after spreading: {spread:?}");
    let metrics = cluster.get(0, "/metrics").await.expect("/metrics");
    assert!(
        metrics
            .body
            .lines()
            .any(|l| l.starts_with("tacos_grpc_rebalanced_total")),
        "node 1 counted no move:\n{}",
        metrics.body
    );

    // Every client, wherever it is now, hears the next change.
    cluster.publish(1, "spread", "v2").await;
    for (k, (_, rx)) in clients.iter_mut().enumerate() {
        eprintln!("client {k}");
        expect_notified(rx, "v2").await;
    }
}

/// A stand-in for an encryption plugin (the SDK's `EncryptionPlugin`; Nacos'
/// own is the Java AES one): content XORed with a random per-publish key,
/// as hex; the key "encrypted" by XOR with a fixed byte. What matters here is
/// the server's part: it must store and return the ciphertext and the key.
struct XorPlugin;

fn xor_hex(key: &[u8], data: &[u8]) -> String {
    data.iter()
        .zip(key.iter().cycle())
        .map(|(d, k)| format!("{:02x}", d ^ k))
        .collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

#[async_trait::async_trait]
impl nacos_sdk::api::plugin::EncryptionPlugin for XorPlugin {
    async fn encrypt(&self, secret_key: &str, content: &str) -> String {
        xor_hex(&unhex(secret_key), content.as_bytes())
    }
    async fn decrypt(&self, secret_key: &str, content: &str) -> String {
        String::from_utf8(unhex(&xor_hex(&unhex(secret_key), &unhex(content)))).expect("UTF-8")
    }
    async fn generate_secret_key(&self) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        format!("{:032x}", nanos.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
    fn algorithm_name(&self) -> String {
        "xor".into()
    }
    async fn encrypt_secret_key(&self, secret_key: &str) -> String {
        xor_hex(&[0x5a], &unhex(secret_key))
    }
    async fn decrypt_secret_key(&self, secret_key: &str) -> String {
        xor_hex(&[0x5a], &unhex(secret_key))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sdk_with_an_encryption_plugin_round_trips_through_the_server() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg]).await;
    let http = server.port();
    let cache = temp_dir();
    let sdk = tokio::time::timeout(
        Duration::from_secs(30),
        ConfigServiceBuilder::new(props(http, grpc, cache.path()))
            .with_encryption_plugins(vec![Box::new(XorPlugin)])
            .build(),
    )
    .await
    .expect("the SDK connects within 30 s")
    .expect("building the config service");
    let data_id = "cipher-xor-db.properties";
    let secret = "password=hunter2";
    assert!(sdk
        .publish_config(data_id.into(), GROUP.into(), secret.into(), None)
        .await
        .expect("publish over gRPC"));
    let got = sdk
        .get_config(data_id.into(), GROUP.into())
        .await
        .expect("get");
    assert_eq!(got.content(), secret, "the SDK decrypts what it encrypted");

    // The server holds ciphertext and the key the SDK sent: HTTP readers get
    // both, the key in Nacos' Encrypted-Data-Key header.
    let (status, stored, headers) = server.api().get(data_id, GROUP, "").await;
    assert_eq!(status, 200);
    assert_ne!(stored, secret);
    let data_key = common::header_str(&headers, "encrypted-data-key").to_string();
    assert_eq!(data_key.len(), 32, "{headers:?}");
    let key = unhex(&xor_hex(&[0x5a], &unhex(&data_key)));
    assert_eq!(
        String::from_utf8(unhex(&xor_hex(&key, &unhex(&stored)))).unwrap(),
        secret
    );
    let detail: serde_json::Value = server
        .api()
        .client()
        .get(server.api().url("/nacos/v1/cs/configs"))
        .query(&[("dataId", data_id), ("group", GROUP), ("show", "all")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(detail["encryptedDataKey"], data_key.as_str());

    // A change pushed to a listener arrives decrypted, with its new key.
    let mut notified = listen(&sdk, http, data_id).await;
    assert!(sdk
        .publish_config(data_id.into(), GROUP.into(), "password=2".into(), None)
        .await
        .expect("publish over gRPC"));
    expect_notified_content(&mut notified, "password=2").await;
    // History keeps each version's key: the insert row holds the first one.
    let history = server.api().history(data_id, GROUP, "", 1, 10).await;
    let first = history.page_items.last().expect("a history row");
    assert_eq!(first.content, stored);
    let row: serde_json::Value = server
        .api()
        .client()
        .get(server.api().url("/nacos/v1/cs/history"))
        .query(&[("dataId", data_id), ("group", GROUP), ("nid", &first.id)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(row["encryptedDataKey"], data_key.as_str(), "{row}");
}

/// Waits for a notification whose (decrypted) content is `content`; the md5
/// the SDK reports is the stored ciphertext's, so it is not checked here.
async fn expect_notified_content(rx: &mut mpsc::UnboundedReceiver<ConfigResponse>, content: &str) {
    let deadline = tokio::time::Instant::now() + NOTIFY_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(config)) if config.content() == content => return,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the listener channel closed"),
            Err(_) => panic!("no notification with {content:?} within {NOTIFY_TIMEOUT:?}"),
        }
    }
}
