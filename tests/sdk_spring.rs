//! Spring Cloud Alibaba against the real binary, as most Java users run
//! Nacos: a Spring Boot 3 app (`tests/spring/`, Spring Cloud Alibaba's
//! `spring-cloud-starter-alibaba-nacos-config`, which brings the official
//! Java `nacos-client`) imports three configs with
//! `spring.config.import=nacos:...` from a namespace, logged in as the admin
//! on a server with `--open-api-auth`: a main config, a shared one and an
//! extension one whose dataId and group are Chinese. Its `GET /values`
//! shows a `@RefreshScope` bean's `@Value` fields and a
//! `@ConfigurationProperties` bean; the test checks every config was read at
//! start, then publishes changes and waits until the running app shows them.
//!
//! `tests/spring/prepare.sh` builds the app's jar (Maven, JDK 17).

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_true, free_port, md5_hex, NacosApi, Reply, Server};
use serde_json::{json, Value};

/// The app's executable jar (built by `tests/spring/prepare.sh`).
const JAR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/spring/target/tacos-spring-app.jar"
);
/// The namespace the app reads, created first through the namespace API.
const NAMESPACE: &str = "spring-it";
/// The main config: `spring.application.name` + `.yaml`, default group.
const MAIN_ID: &str = "tacos-spring-app.yaml";
const MAIN_GROUP: &str = "DEFAULT_GROUP";
/// The shared config (a properties file, in a group of its own).
const SHARED_ID: &str = "shared-common.properties";
const SHARED_GROUP: &str = "SHARED_GROUP";
/// The extension config: dataId and group in Chinese, as Java Nacos'
/// `ParamUtils.isValid` allows (letters of any script).
const EXT_ID: &str = "订单服务配置.yaml";
const EXT_GROUP: &str = "支付组";
/// How long the app may take to start and answer (JVM, Spring, the imports).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a published change may take to show in the running app.
const REFRESH_TIMEOUT: Duration = Duration::from_secs(60);

const MAIN_V1: &str = "app:\n  greeting: hello from tacos\n  layer: main\n";
const SHARED_V1: &str = "shared.region=eu-west-1\nshared.timeout-ms=1500\napp.layer=shared\n";
const EXT_V1: &str = "orders:\n  currency: 人民币\n  limit: 42\n  channels:\n    - 支付宝\n    - wechat\napp:\n  layer: extension\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spring_cloud_alibaba_app_reads_configs_and_refreshes_without_restart() {
    let started = Instant::now();
    let tmp = common::temp_dir();
    let (server, grpc) = start_server_with_configs(&tmp).await;
    let api = server.api();

    let app = App::start(tmp.path(), server.port(), grpc, common::ADMIN_PASSWORD).await;
    let values = app.values().await.expect("the app answered before");
    println!("app values at start: {values}");

    // Every config was read at start: the main one (a @RefreshScope bean's
    // @Value), the shared one (@Value and the raw environment) and the
    // Chinese-named extension one (@ConfigurationProperties, with Chinese
    // values and a list).
    assert_eq!(
        values["greeting"], "hello from tacos",
        "main config: {values}"
    );
    assert_eq!(values["region"], "eu-west-1", "shared config: {values}");
    assert_eq!(values["sharedTimeoutMs"], "1500", "shared config: {values}");
    assert_eq!(
        values["ordersCurrency"], "人民币",
        "extension config: {values}"
    );
    assert_eq!(values["ordersLimit"], 42, "extension config: {values}");
    assert_eq!(
        values["ordersChannels"],
        json!(["支付宝", "wechat"]),
        "extension config: {values}"
    );
    // All three set app.layer; the import declared last (the main config)
    // wins, as Spring Boot documents for spring.config.import.
    assert_eq!(values["layer"], "main", "import precedence: {values}");
    assert_eq!(values["environmentChanges"], 0, "{values}");

    // The app listens to all three keys (over gRPC) with the md5 of what it
    // read: Tacos' listener view of each config lists it.
    for (data_id, group, content) in [
        (MAIN_ID, MAIN_GROUP, MAIN_V1),
        (SHARED_ID, SHARED_GROUP, SHARED_V1),
        (EXT_ID, EXT_GROUP, EXT_V1),
    ] {
        wait_listened(&api, data_id, group, &md5_hex(content)).await;
    }

    // A change to the main config: Spring Cloud refreshes the environment
    // (naming the key that changed) and builds the @RefreshScope bean anew
    // with the new @Value, without a restart.
    let built_before = values["greetingBuiltAtMillis"].as_u64().expect("a number");
    let main_v2 = MAIN_V1.replace("hello from tacos", "hello again, refreshed");
    publish_and_wait(&api, &app, (MAIN_ID, MAIN_GROUP, "yaml"), &main_v2, |v| {
        v["greeting"] == "hello again, refreshed" && changed(v, "app.greeting")
    })
    .await;
    let values = app.values().await.expect("the app answers");
    assert!(
        values["greetingBuiltAtMillis"].as_u64().expect("a number") > built_before
            && values["environmentChanges"] == 1,
        "one refresh, a new bean: {values}"
    );

    // A change to the Chinese-named extension config: the
    // @ConfigurationProperties bean is rebound.
    let ext_v2 = EXT_V1
        .replace("limit: 42", "limit: 7")
        .replace("人民币", "港币");
    publish_and_wait(&api, &app, (EXT_ID, EXT_GROUP, "yaml"), &ext_v2, |v| {
        v["ordersLimit"] == 7
            && v["ordersCurrency"] == "港币"
            && changed(v, "orders.limit")
            && changed(v, "orders.currency")
    })
    .await;

    // A change to the shared config.
    let shared_v2 = SHARED_V1.replace("eu-west-1", "ap-east-1");
    let shared = (SHARED_ID, SHARED_GROUP, "properties");
    publish_and_wait(&api, &app, shared, &shared_v2, |v| {
        v["region"] == "ap-east-1" && changed(v, "shared.region")
    })
    .await;

    // Each change kept the others' values; three refreshes in all.
    let values = app.values().await.expect("the app answers");
    assert_eq!(values["greeting"], "hello again, refreshed", "{values}");
    assert_eq!(values["ordersLimit"], 7, "{values}");
    assert_eq!(values["ordersCurrency"], "港币", "{values}");
    assert_eq!(
        values["ordersChannels"],
        json!(["支付宝", "wechat"]),
        "{values}"
    );
    assert_eq!(values["region"], "ap-east-1", "{values}");
    assert_eq!(values["sharedTimeoutMs"], "1500", "{values}");
    assert_eq!(values["layer"], "main", "{values}");
    assert_eq!(values["environmentChanges"], 3, "{values}");
    println!("test run time: {:?}", started.elapsed());
}

/// The imports are not `optional:`, so with a wrong password (Tacos refuses
/// the login and, with --open-api-auth, the config queries) the app does
/// not start: Spring Boot names the import it could not load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spring_cloud_alibaba_app_does_not_start_with_a_wrong_password() {
    let tmp = common::temp_dir();
    let (server, grpc) = start_server_with_configs(&tmp).await;
    let mut app = App::spawn(tmp.path(), server.port(), grpc, "not-the-password");
    let began = Instant::now();
    let status = loop {
        if let Some(status) = app.child.try_wait().expect("waiting on the app") {
            break status;
        }
        assert!(
            app.values().await.is_none(),
            "the app answered without a login; log:\n{}",
            app.log()
        );
        assert!(
            began.elapsed() < START_TIMEOUT,
            "the app still runs after {START_TIMEOUT:?} with a wrong password; log:\n{}",
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let log = app.log();
    assert!(
        !status.success() && log.contains("APPLICATION FAILED TO START") && log.contains("nacos:"),
        "expected a failed start naming a nacos: import, got {status}; log:\n{log}"
    );
    // The Java client logged its refused login in its own log.
    let client_log = common::read_lossy(&tmp.path().join("app-home/logs/nacos/config.log"));
    assert!(
        client_log.contains("login failed") && client_log.contains("403"),
        "nacos-client's config.log shows no refused login:\n{client_log}"
    );
    println!("the app exited ({status}) after {:?}", began.elapsed());
}

/// Starts Tacos with --open-api-auth on a gRPC port of its own, creates the
/// namespace and publishes the three configs; returns the server and its
/// gRPC port.
async fn start_server_with_configs(tmp: &tempfile::TempDir) -> (Server, u16) {
    assert!(
        Path::new(JAR).is_file(),
        "{JAR} is missing: run tests/spring/prepare.sh (Maven and JDK 17 build the Spring app)"
    );
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(tmp, &["--open-api-auth", "--grpc-port", &grpc_arg]).await;
    let api = server.api();
    create_namespace(&api).await;
    publish(&api, MAIN_ID, MAIN_GROUP, MAIN_V1, "yaml").await;
    publish(&api, SHARED_ID, SHARED_GROUP, SHARED_V1, "properties").await;
    publish(&api, EXT_ID, EXT_GROUP, EXT_V1, "yaml").await;
    (server, grpc)
}

/// `POST /nacos/v1/console/namespaces` as the admin.
async fn create_namespace(api: &NacosApi) {
    let form = [
        ("customNamespaceId", NAMESPACE),
        ("namespaceName", "Spring Cloud Alibaba"),
        ("namespaceDesc", "tests/sdk_spring.rs"),
    ];
    let response = api
        .client()
        .post(api.url("/nacos/v1/console/namespaces"))
        .form(&form)
        .send()
        .await
        .expect("POST /nacos/v1/console/namespaces");
    assert_true(response, "creating the namespace").await;
}

/// Publishes one config of the namespace with its type (as the console does).
async fn publish(api: &NacosApi, data_id: &str, group: &str, content: &str, kind: &str) {
    let form = [
        ("dataId", data_id),
        ("group", group),
        ("tenant", NAMESPACE),
        ("content", content),
        ("type", kind),
    ];
    assert_true(
        api.publish_with(&form, &[]).await,
        &format!("publishing {group}/{data_id}"),
    )
    .await;
}

/// Publishes `content` and polls the app until `shows_it` holds; returns the
/// time from sending the publish to the first view that shows it (and
/// prints when the publish was answered).
async fn publish_and_wait(
    api: &NacosApi,
    app: &App,
    (data_id, group, kind): (&str, &str, &str),
    content: &str,
    shows_it: impl Fn(&Value) -> bool,
) -> Duration {
    let sent = Instant::now();
    publish(api, data_id, group, content, kind).await;
    let answered = sent.elapsed();
    let mut last = Value::Null;
    while sent.elapsed() < answered + REFRESH_TIMEOUT {
        if let Some(values) = app.values().await {
            if shows_it(&values) {
                let shown = sent.elapsed();
                println!(
                    "{group}/{data_id}: publish answered after {answered:?}, \
                     the app showed the change {shown:?} after the publish was sent"
                );
                return shown;
            }
            last = values;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the app did not show the change of {group}/{data_id} within {REFRESH_TIMEOUT:?}; \
         last values {last}; app log:\n{}",
        app.log()
    );
}

/// Whether Spring Cloud's last `EnvironmentChangeEvent` named `key`.
fn changed(values: &Value, key: &str) -> bool {
    values["lastChangedKeys"]
        .as_array()
        .is_some_and(|keys| keys.iter().any(|k| k == key))
}

/// Polls Tacos' listener view of a config until a client listens to it with
/// `md5` (the app reports the md5 of what it read).
async fn wait_listened(api: &NacosApi, data_id: &str, group: &str, md5: &str) {
    let query =
        serde_urlencoded::to_string([("dataId", data_id), ("group", group), ("tenant", NAMESPACE)])
            .expect("encoding a query");
    let path = format!("/nacos/v1/cs/configs/listener?{query}");
    let deadline = Instant::now() + REFRESH_TIMEOUT;
    loop {
        let reply: Reply = api
            .get_path(&path)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let view = reply.json();
        let listeners = view["lisentersGroupkeyStatus"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        if listeners.values().any(|m| m == md5) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no listener of {group}/{data_id} with md5 {md5} within {REFRESH_TIMEOUT:?}: {view}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The running Spring app; dropping it kills the JVM.
struct App {
    child: Child,
    port: u16,
    log_path: PathBuf,
    client: reqwest::Client,
}

impl App {
    /// Starts the jar against Tacos on `http_port` (gRPC on `grpc_port`),
    /// logged in as the admin with `password`, without waiting.
    fn spawn(dir: &Path, http_port: u16, grpc_port: u16, password: &str) -> App {
        let port = free_port();
        let home = dir.join("app-home");
        std::fs::create_dir_all(&home).expect("creating the app's home dir");
        let log_path = dir.join("spring-app.log");
        let log = File::create(&log_path).expect("creating the app log");
        let log_err = log.try_clone().expect("cloning the log handle");
        // The Java client finds gRPC at the HTTP port + this offset (1000
        // unless told).
        let offset = i32::from(grpc_port) - i32::from(http_port);
        let child = Command::new(common::drivers::java_bin())
            .arg(format!("-Dnacos.server.grpc.port.offset={offset}"))
            // nacos-client keeps its config snapshots and logs under the
            // home dir: one of the test's own.
            .arg(format!("-Duser.home={}", home.display()))
            .arg("-Xmx256m")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-jar")
            .arg(JAR)
            .arg(format!("--server.port={port}"))
            .arg("--server.address=127.0.0.1")
            .arg(format!(
                "--spring.cloud.nacos.config.server-addr=127.0.0.1:{http_port}"
            ))
            .arg(format!("--spring.cloud.nacos.config.namespace={NAMESPACE}"))
            .arg(format!(
                "--spring.cloud.nacos.config.username={}",
                common::ADMIN_USER
            ))
            .arg(format!("--spring.cloud.nacos.config.password={password}"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "starting `{} -jar {JAR}`: {e}",
                    common::drivers::java_bin().display()
                )
            });
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("building the HTTP client");
        App {
            child,
            port,
            log_path,
            client,
        }
    }

    /// [`App::spawn`], then waits until `GET /values` answers 200.
    async fn start(dir: &Path, http_port: u16, grpc_port: u16, password: &str) -> App {
        let mut app = App::spawn(dir, http_port, grpc_port, password);
        let began = Instant::now();
        loop {
            if let Some(status) = app.child.try_wait().expect("waiting on the app") {
                panic!(
                    "the Spring app exited ({status}) at start; log:\n{}",
                    app.log()
                );
            }
            if app.values().await.is_some() {
                println!("the Spring app answered after {:?}", began.elapsed());
                return app;
            }
            assert!(
                began.elapsed() < START_TIMEOUT,
                "the Spring app did not answer on port {} within {START_TIMEOUT:?}; log:\n{}",
                app.port,
                app.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// `GET /values` as JSON, or None while the app does not answer 200.
    async fn values(&self) -> Option<Value> {
        let url = format!("http://127.0.0.1:{}/values", self.port);
        let response = self.client.get(url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json().await.ok()
    }

    fn log(&self) -> String {
        common::read_lossy(&self.log_path)
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
