//! Resource permissions as Nacos has them (`NS:GROUP:config/DATAID`, `*`
//! patterns, `r` / `w` / `rw`), against the real binary with
//! `--open-api-auth`: a table over every config route (v1, v2, v3 client
//! and admin, the console API, history, export/import, listeners) and every
//! gRPC config request (query, publish, remove, batch listen, fuzzy watch),
//! for users holding a group-level grant through a role, a dataId-level
//! grant given directly, and a write-only dataId pattern through a role:
//! each allowed where its grant covers the config and refused (403, gRPC
//! errorCode 403) where not, both ways. Lists show only what the user may
//! read. The roles API round trip grants and revokes such resources.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{basic_auth, free_port, temp_dir, Server, ADMIN_PASSWORD};
use futures::channel::mpsc::{unbounded, UnboundedSender};
use reqwest::{Method, RequestBuilder};
use serde_json::{json, Value};
use tacos::grpc::pb::bi_request_stream_client::BiRequestStreamClient;
use tacos::grpc::pb::request_client::RequestClient;
use tacos::grpc::pb::{Metadata, Payload};
use tonic::transport::{Channel, Endpoint};

const ROLES: &str = "/nacos/v1/auth/roles";
const ROLE_PERMISSIONS: &str = "/nacos/v1/auth/permissions";
const USER_PERMISSIONS: &str = "/tacos/v1/auth/permissions";

struct Http {
    client: reqwest::Client,
    base: String,
}

impl Http {
    fn new(port: u16) -> Http {
        Http {
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    fn admin(&self, method: Method, path: &str) -> RequestBuilder {
        self.request(method, path)
            .header("Authorization", basic_auth("nacos", ADMIN_PASSWORD))
    }

    fn as_user(&self, token: &str, method: Method, path: &str) -> RequestBuilder {
        self.request(method, path).header("accessToken", token)
    }

    async fn send(&self, request: RequestBuilder) -> (u16, Vec<u8>) {
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        (status, response.bytes().await.expect("body").to_vec())
    }

    async fn ok(&self, request: RequestBuilder, what: &str) -> String {
        let (status, body) = self.send(request).await;
        let body = String::from_utf8_lossy(&body).to_string();
        assert_eq!(status, 200, "{what}: {body}");
        body
    }

    async fn token(&self, user: &str, password: &str) -> String {
        let body = self
            .ok(
                self.request(Method::POST, "/nacos/v1/auth/login")
                    .form(&[("username", user), ("password", password)]),
                "login",
            )
            .await;
        let reply: Value = serde_json::from_str(&body).unwrap();
        reply["accessToken"].as_str().unwrap().to_string()
    }

    async fn publish(&self, namespace: &str, group: &str, data_id: &str) {
        self.ok(
            self.admin(Method::POST, "/nacos/v1/cs/configs").form(&[
                ("dataId", data_id),
                ("group", group),
                ("tenant", namespace),
                ("content", &format!("{group}/{data_id}: 1")),
            ]),
            "publish",
        )
        .await;
    }
}

/// A config the table asks about.
#[derive(Clone, Copy)]
struct Key {
    ns: &'static str,
    group: &'static str,
    data_id: &'static str,
}

const G_APP: Key = Key {
    ns: "dev",
    group: "G",
    data_id: "app.yaml",
};
const G_DB: Key = Key {
    ns: "dev",
    group: "G",
    data_id: "db.yaml",
};
const H_APP: Key = Key {
    ns: "dev",
    group: "H",
    data_id: "app.yaml",
};

/// Every HTTP route that reads one config (`nid`: a history row of it),
/// as `(name, request)`.
fn reads(http: &Http, token: &str, k: Key, nid: u64) -> Vec<(&'static str, RequestBuilder)> {
    let nid = nid.to_string();
    let v1 = [("dataId", k.data_id), ("group", k.group), ("tenant", k.ns)];
    let v2 = [
        ("dataId", k.data_id),
        ("group", k.group),
        ("namespaceId", k.ns),
    ];
    let v3 = [
        ("dataId", k.data_id),
        ("groupName", k.group),
        ("namespaceId", k.ns),
    ];
    let console = [
        ("dataId", k.data_id),
        ("group", k.group),
        ("namespace", k.ns),
    ];
    let get = |path| http.as_user(token, Method::GET, path);
    let listening = format!("{}\u{2}{}\u{2}\u{2}{}\u{1}", k.data_id, k.group, k.ns);
    vec![
        ("v1 get", get("/nacos/v1/cs/configs").query(&v1)),
        (
            "v1 history",
            get("/nacos/v1/cs/history")
                .query(&v1)
                .query(&[("search", "accurate")]),
        ),
        (
            "v1 listeners of",
            get("/nacos/v1/cs/configs/listener").query(&v1),
        ),
        (
            "v1 listener",
            http.as_user(token, Method::POST, "/nacos/v1/cs/configs/listener")
                .form(&[("Listening-Configs", listening.as_str())]),
        ),
        ("v2 get", get("/nacos/v2/cs/config").query(&v2)),
        ("v2 history", get("/nacos/v2/cs/history/list").query(&v2)),
        (
            "v3 client get",
            get("/nacos/v3/client/cs/config").query(&v3),
        ),
        ("v3 admin get", get("/nacos/v3/admin/cs/config").query(&v3)),
        (
            "v3 admin history",
            get("/nacos/v3/admin/cs/history/list")
                .query(&v3)
                .query(&[("pageNo", "1"), ("pageSize", "10")]),
        ),
        (
            "console get",
            get("/tacos/api/console/config").query(&console),
        ),
        (
            "console history",
            get("/tacos/api/console/history").query(&console),
        ),
        (
            "console history item",
            get("/tacos/api/console/history/item").query(&[("id", &nid)]),
        ),
        (
            "v3 admin history row",
            get("/nacos/v3/admin/cs/history")
                .query(&v3)
                .query(&[("nid", &nid)]),
        ),
        (
            "console preview",
            http.as_user(token, Method::POST, "/tacos/api/console/config/preview")
                .json(
                    &json!({"namespace": k.ns, "group": k.group, "dataId": k.data_id,
                    "content": "a: 2", "type": "yaml"}),
                ),
        ),
    ]
}

/// The id of the newest history row of `k` (as the admin sees it).
async fn history_id(http: &Http, k: Key) -> u64 {
    let body = http
        .ok(
            http.admin(Method::GET, "/nacos/v1/cs/history").query(&[
                ("search", "accurate"),
                ("dataId", k.data_id),
                ("group", k.group),
                ("tenant", k.ns),
            ]),
            "history",
        )
        .await;
    let page: Value = serde_json::from_str(&body).unwrap();
    let id = &page["pageItems"][0]["id"];
    id.as_str()
        .map(|id| id.parse().unwrap())
        .or_else(|| id.as_u64())
        .expect("a history row id")
}

/// Every HTTP route that publishes one config.
fn writes(http: &Http, token: &str, k: Key) -> Vec<(&'static str, RequestBuilder)> {
    let content = format!("{}/{}: 2", k.group, k.data_id);
    let post = |path| http.as_user(token, Method::POST, path);
    vec![
        (
            "v3 admin listeners (write, as Nacos 3)",
            http.as_user(token, Method::GET, "/nacos/v3/admin/cs/config/listener")
                .query(&[
                    ("dataId", k.data_id),
                    ("groupName", k.group),
                    ("namespaceId", k.ns),
                ]),
        ),
        (
            "v1 publish",
            post("/nacos/v1/cs/configs").form(&[
                ("dataId", k.data_id),
                ("group", k.group),
                ("tenant", k.ns),
                ("content", &content),
            ]),
        ),
        (
            "v2 publish",
            post("/nacos/v2/cs/config").form(&[
                ("dataId", k.data_id),
                ("group", k.group),
                ("namespaceId", k.ns),
                ("content", &content),
            ]),
        ),
        (
            "v3 admin publish",
            post("/nacos/v3/admin/cs/config").form(&[
                ("dataId", k.data_id),
                ("groupName", k.group),
                ("namespaceId", k.ns),
                ("content", &content),
            ]),
        ),
        (
            "console publish",
            post("/tacos/api/console/config").json(&json!({
                "namespace": k.ns, "group": k.group, "dataId": k.data_id,
                "content": content, "type": "yaml",
            })),
        ),
    ]
}

/// Every HTTP route that removes one config.
fn deletes(http: &Http, token: &str, k: Key) -> Vec<(&'static str, RequestBuilder)> {
    let delete = |path| http.as_user(token, Method::DELETE, path);
    vec![
        (
            "v1 delete",
            delete("/nacos/v1/cs/configs").query(&[
                ("dataId", k.data_id),
                ("group", k.group),
                ("tenant", k.ns),
            ]),
        ),
        (
            "v2 delete",
            delete("/nacos/v2/cs/config").query(&[
                ("dataId", k.data_id),
                ("group", k.group),
                ("namespaceId", k.ns),
            ]),
        ),
        (
            "v3 admin delete",
            delete("/nacos/v3/admin/cs/config").query(&[
                ("dataId", k.data_id),
                ("groupName", k.group),
                ("namespaceId", k.ns),
            ]),
        ),
        (
            "console delete",
            delete("/tacos/api/console/config").query(&[
                ("dataId", k.data_id),
                ("group", k.group),
                ("namespace", k.ns),
            ]),
        ),
    ]
}

fn payload(kind: &str, token: &str, mut body: Value) -> Payload {
    body["requestId"] = json!("1");
    body["headers"] = json!({ "accessToken": token });
    Payload {
        metadata: Some(Metadata {
            r#type: kind.to_string(),
            client_ip: "127.0.0.1".to_string(),
            headers: HashMap::from([("accessToken".to_string(), token.to_string())]),
        }),
        body: Some(prost_types::Any {
            type_url: String::new(),
            value: serde_json::to_vec(&body).unwrap(),
        }),
    }
}

/// A gRPC connection registered as the SDKs register theirs (the
/// bi-directional stream and `ConnectionSetupRequest`), so listens and
/// fuzzy watches are served; every request carries its own user's token.
struct Grpc {
    client: RequestClient<Channel>,
    _stream: UnboundedSender<Payload>,
    _inbound: tonic::Streaming<Payload>,
}

impl Grpc {
    async fn connect(port: u16, admin_token: &str) -> Grpc {
        let channel = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect()
            .await
            .expect("connecting over gRPC");
        let (outbound, rx) = unbounded::<Payload>();
        let inbound = BiRequestStreamClient::new(channel.clone())
            .request_bi_stream(rx)
            .await
            .expect("opening the stream")
            .into_inner();
        let setup = json!({"clientVersion": "Nacos-Java-Client:v2.4.0", "abilities": {},
            "tenant": "", "labels": {"source": "sdk", "module": "config"}});
        outbound
            .unbounded_send(payload("ConnectionSetupRequest", "", setup))
            .unwrap();
        let mut conn = Grpc {
            client: RequestClient::new(channel),
            _stream: outbound,
            _inbound: inbound,
        };
        // The setup is handled on the stream: wait (bounded) until a listen
        // is served on this connection.
        let listen = json!({"listen": false, "configListenContexts": []});
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let probe = json!({"groupKeyPattern": "dev>>G>>*", "watchType": "WATCH",
                "receivedGroupKeys": [], "initializing": true});
            let reply = conn
                .call(admin_token, "ConfigFuzzyWatchRequest", probe)
                .await;
            if reply["resultCode"] == 200 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "never registered: {reply}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let reply = conn
            .call(admin_token, "ConfigBatchListenRequest", listen)
            .await;
        assert_eq!(reply["resultCode"], 200, "{reply}");
        conn
    }

    /// One request as the user of `token`; its JSON reply.
    async fn call(&mut self, token: &str, kind: &str, body: Value) -> Value {
        let reply = self
            .client
            .request(payload(kind, token, body))
            .await
            .expect("a gRPC reply");
        serde_json::from_slice(&reply.into_inner().body.unwrap().value).unwrap()
    }
}

/// Every gRPC config request about `k` needing `read` (or write) access.
fn grpc_requests(k: Key, read: bool) -> Vec<(&'static str, Value)> {
    let key = json!({"dataId": k.data_id, "group": k.group, "tenant": k.ns});
    if read {
        vec![
            ("ConfigQueryRequest", key),
            (
                "ConfigBatchListenRequest",
                json!({"listen": true, "configListenContexts": [
                    {"dataId": k.data_id, "group": k.group, "tenant": k.ns, "md5": ""}
                ]}),
            ),
            (
                "ConfigFuzzyWatchRequest",
                json!({
                    "groupKeyPattern": format!("{}>>{}>>{}", k.ns, k.group, k.data_id),
                    "watchType": "WATCH", "receivedGroupKeys": [], "initializing": true,
                }),
            ),
        ]
    } else {
        let mut publish = key.clone();
        publish["content"] = json!("grpc: 1");
        vec![
            ("ConfigPublishRequest", publish),
            ("ConfigRemoveRequest", key),
        ]
    }
}

struct Setup {
    _tmp: tempfile::TempDir,
    _server: Server,
    http: Http,
    grpc: u16,
}

/// A server with `dev/G/app.yaml`, `dev/G/db.yaml`, `dev/H/app.yaml`,
/// `prod/G/app.yaml` and three users:
/// * `grp`: role `g-readers`, `dev:G:*` read (a group, through a role);
/// * `one`: its own grant, namespace `dev` group `H` dataId `app.yaml`, rw;
/// * `wo`: role `writers`, `dev:G:config/app*` write-only.
async fn setup() -> Setup {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server =
        Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg, "--open-api-auth"]).await;
    let http = Http::new(server.port());
    for ns in ["dev", "prod"] {
        http.ok(
            http.admin(Method::POST, "/nacos/v1/console/namespaces")
                .form(&[("customNamespaceId", ns), ("namespaceName", ns)]),
            "namespace",
        )
        .await;
    }
    for k in [G_APP, G_DB, H_APP] {
        http.publish(k.ns, k.group, k.data_id).await;
    }
    http.publish("prod", "G", "app.yaml").await;
    for user in ["grp", "one", "wo"] {
        http.ok(
            http.admin(Method::POST, "/nacos/v1/auth/users").form(&[
                ("username", user),
                ("password", &format!("{user}-password-1")),
            ]),
            "user",
        )
        .await;
    }
    for (role, user, resource, action) in [
        ("g-readers", "grp", "dev:G:*", "r"),
        ("writers", "wo", "dev:G:config/app*", "w"),
    ] {
        http.ok(
            http.admin(Method::POST, ROLES)
                .form(&[("role", role), ("username", user)]),
            "bind",
        )
        .await;
        http.ok(
            http.admin(Method::POST, ROLE_PERMISSIONS).form(&[
                ("role", role),
                ("resource", resource),
                ("action", action),
            ]),
            "role grant",
        )
        .await;
    }
    http.ok(
        http.admin(Method::POST, USER_PERMISSIONS).form(&[
            ("username", "one"),
            ("namespace", "dev"),
            ("group", "H"),
            ("dataId", "app.yaml"),
            ("action", "rw"),
        ]),
        "direct grant",
    )
    .await;
    Setup {
        _tmp: tmp,
        _server: server,
        http,
        grpc,
    }
}

/// Sends each request; `allowed` ones must answer 200, the others 403.
async fn expect(http: &Http, who: &str, requests: Vec<(&str, RequestBuilder)>, allowed: bool) {
    for (name, request) in requests {
        let (status, body) = http.send(request).await;
        let body = String::from_utf8_lossy(&body);
        let want = if allowed { 200 } else { 403 };
        assert_eq!(status, want, "{who}: {name}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_config_route_and_grpc_request_checks_group_and_data_id_grants() {
    let s = setup().await;
    let http = &s.http;
    let grp = http.token("grp", "grp-password-1").await;
    let one = http.token("one", "one-password-1").await;
    let wo = http.token("wo", "wo-password-1").await;
    let admin = http.token("nacos", ADMIN_PASSWORD).await;
    let mut grpc = Grpc::connect(s.grpc, &admin).await;

    // Reads: (user, key, allowed).
    for (who, token, key, allowed) in [
        ("grp", &grp, G_APP, true),
        ("grp", &grp, G_DB, true),
        ("grp", &grp, H_APP, false),
        ("one", &one, H_APP, true),
        ("one", &one, G_APP, false),
        ("wo", &wo, G_APP, false),
    ] {
        let nid = history_id(http, key).await;
        expect(http, who, reads(http, token, key, nid), allowed).await;
        // A history row by id the caller may not read is not found (as if
        // it did not exist), on v1 and v2.
        for path in ["/nacos/v1/cs/history", "/nacos/v2/cs/history"] {
            let request = http
                .as_user(token, Method::GET, path)
                .query(&[("nid", nid.to_string())]);
            let status = http.send(request).await.0;
            assert_eq!(status, if allowed { 200 } else { 404 }, "{who}: {path}?nid");
        }
        for (kind, body) in grpc_requests(key, true) {
            let reply = grpc.call(token, kind, body).await;
            if allowed {
                assert_eq!(reply["resultCode"], 200, "{who}: {kind}: {reply}");
            } else {
                assert_eq!(reply["errorCode"], 403, "{who}: {kind}: {reply}");
            }
        }
    }

    // Writes: publishes and deletes (each allowed delete is undone).
    for (who, token, key, allowed) in [
        ("grp", &grp, G_APP, false),
        ("one", &one, H_APP, true),
        ("one", &one, G_APP, false),
        ("wo", &wo, G_APP, true),
        ("wo", &wo, G_DB, false),
    ] {
        expect(http, who, writes(http, token, key), allowed).await;
        for (name, request) in deletes(http, token, key) {
            expect(http, who, vec![(name, request)], allowed).await;
            http.publish(key.ns, key.group, key.data_id).await;
        }
        for (kind, body) in grpc_requests(key, false) {
            let reply = grpc.call(token, kind, body).await;
            if allowed {
                assert_eq!(reply["resultCode"], 200, "{who}: {kind}: {reply}");
            } else {
                assert_eq!(reply["errorCode"], 403, "{who}: {kind}: {reply}");
            }
        }
        http.publish(key.ns, key.group, key.data_id).await;
    }

    // The console's rollback reads the row it restores: rw may, the
    // write-only may not.
    for (who, token, key, status) in [("one", &one, H_APP, 200), ("wo", &wo, G_APP, 403)] {
        // A change, so the newest row (an update) holds other content.
        http.ok(
            http.admin(Method::POST, "/nacos/v1/cs/configs").form(&[
                ("dataId", key.data_id),
                ("group", key.group),
                ("tenant", key.ns),
                ("content", "changed: 1"),
            ]),
            "change",
        )
        .await;
        let id = history_id(http, key).await;
        let request = http
            .as_user(token, Method::POST, "/tacos/api/console/history/rollback")
            .json(&json!({ "id": id }));
        let (got, body) = http.send(request).await;
        assert_eq!(
            got,
            status,
            "{who}: rollback: {}",
            String::from_utf8_lossy(&body)
        );
    }
    // A fuzzy watch wider than the grant is refused; one inside it is not.
    for (pattern, allowed) in [
        ("dev>>G>>*", true),
        ("dev>>*>>*", false),
        ("dev>>G*>>*", false),
    ] {
        let body = json!({"groupKeyPattern": pattern, "watchType": "WATCH",
            "receivedGroupKeys": [], "initializing": true});
        let reply = grpc.call(&grp, "ConfigFuzzyWatchRequest", body).await;
        let code = if allowed { 0 } else { 403 };
        assert_eq!(reply["errorCode"], code, "{pattern}: {reply}");
    }
    // A batch listen with one key the user may not read is refused whole.
    let body = json!({"listen": true, "configListenContexts": [
        {"dataId": "app.yaml", "group": "G", "tenant": "dev", "md5": ""},
        {"dataId": "app.yaml", "group": "H", "tenant": "dev", "md5": ""},
    ]});
    let reply = grpc.call(&grp, "ConfigBatchListenRequest", body).await;
    assert_eq!(reply["errorCode"], 403, "{reply}");
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_exports_and_imports_show_and_take_only_what_a_grant_covers() {
    let s = setup().await;
    let http = &s.http;
    let grp = http.token("grp", "grp-password-1").await;
    let one = http.token("one", "one-password-1").await;
    let get = |token: &str, path: &str| http.as_user(token, Method::GET, path);
    let json_of = |body: String| serde_json::from_str::<Value>(&body).unwrap();

    // Searches: grp sees group G of dev (2), one sees H/app.yaml (1).
    for (token, total) in [(&grp, 2), (&one, 1)] {
        let v1 = json_of(
            http.ok(
                get(token, "/nacos/v1/cs/configs").query(&[
                    ("search", "blur"),
                    ("tenant", "dev"),
                    ("dataId", ""),
                    ("group", ""),
                    ("pageNo", "1"),
                    ("pageSize", "10"),
                ]),
                "v1 search",
            )
            .await,
        );
        assert_eq!(v1["totalCount"], total, "{v1}");
        let v2 = json_of(
            http.ok(
                get(token, "/nacos/v2/cs/config/searchDetail").query(&[
                    ("namespaceId", "dev"),
                    ("pageNo", "1"),
                    ("pageSize", "10"),
                ]),
                "v2 search",
            )
            .await,
        );
        assert_eq!(v2["data"]["totalCount"], total, "{v2}");
        let v3 = json_of(
            http.ok(
                get(token, "/nacos/v3/admin/cs/config/list").query(&[
                    ("namespaceId", "dev"),
                    ("pageNo", "1"),
                    ("pageSize", "10"),
                ]),
                "v3 list",
            )
            .await,
        );
        assert_eq!(v3["data"]["totalCount"], total, "{v3}");
        let console = json_of(
            http.ok(
                get(token, "/tacos/api/console/configs").query(&[("namespace", "dev")]),
                "console list",
            )
            .await,
        );
        assert_eq!(console["totalCount"], total, "{console}");
        let history = json_of(
            http.ok(
                get(token, "/nacos/v1/cs/history/configs").query(&[("tenant", "dev")]),
                "history configs",
            )
            .await,
        );
        assert_eq!(history.as_array().unwrap().len(), total, "{history}");
    }

    // Exports hold only what the user may read.
    let (status, zip) = http
        .send(get(&grp, "/nacos/v1/cs/configs").query(&[
            ("exportV2", "true"),
            ("tenant", "dev"),
            ("dataId", ""),
            ("group", ""),
        ]))
        .await;
    assert_eq!(status, 200);
    let names = String::from_utf8_lossy(&zip);
    assert!(names.contains("G/app.yaml") && names.contains("G/db.yaml"));
    assert!(!names.contains("H/app.yaml"), "H is not grp's");

    // Nothing in prod: lists and exports of it are refused.
    for request in [
        get(&grp, "/nacos/v1/cs/configs").query(&[("search", "blur"), ("tenant", "prod")]),
        get(&grp, "/tacos/api/console/configs").query(&[("namespace", "prod")]),
        get(&grp, "/tacos/api/console/export").query(&[("namespace", "prod")]),
    ] {
        assert_eq!(http.send(request).await.0, 403);
    }

    // The namespace list shows dev (some grant there), not prod.
    let namespaces = json_of(
        http.ok(get(&one, "/nacos/v1/console/namespaces"), "namespaces")
            .await,
    );
    let ids: Vec<&str> = namespaces["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["dev"], "{namespaces}");

    // A clone needs read on each source and write on each target.
    let config_id = |k: Key| {
        http.admin(Method::GET, "/nacos/v3/admin/cs/config")
            .query(&[
                ("dataId", k.data_id),
                ("groupName", k.group),
                ("namespaceId", k.ns),
            ])
    };
    let id_of = |body: String| json_of(body)["data"]["id"].as_str().unwrap().to_string();
    let g_app = id_of(http.ok(config_id(G_APP), "id").await);
    let h_app = id_of(http.ok(config_id(H_APP), "id").await);
    for (source, group, status) in [(&g_app, "H", 403), (&h_app, "G", 403), (&h_app, "H", 200)] {
        let body = json!([{"cfgId": source, "dataId": "app.yaml", "group": group}]);
        let (got, reply) = http
            .send(
                http.as_user(&one, Method::POST, "/nacos/v1/cs/configs")
                    .query(&[
                        ("clone", "true"),
                        ("tenant", "dev"),
                        ("policy", "OVERWRITE"),
                    ])
                    .json(&body),
            )
            .await;
        let reply = String::from_utf8_lossy(&reply);
        assert_eq!(got, status, "clone {source} to {group}: {reply}");
        if status == 200 {
            assert_eq!(json_of(reply.to_string())["code"], 200, "{reply}");
        }
    }

    // An import writes all or nothing: the zip grp exported holds keys of
    // group G, which `one` may not write.
    let (status, body) = http
        .send(
            http.as_user(&one, Method::POST, "/tacos/api/console/import")
                .query(&[("namespace", "dev"), ("policy", "overwrite")])
                .body(zip.clone()),
        )
        .await;
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_roles_api_grants_and_revokes_group_and_data_id_resources() {
    let s = setup().await;
    let http = &s.http;
    let grp = http.token("grp", "grp-password-1").await;
    let read_g = || {
        http.as_user(&grp, Method::GET, "/nacos/v1/cs/configs")
            .query(&[("dataId", "app.yaml"), ("group", "G"), ("tenant", "dev")])
    };

    // The list shows the resources as they were granted.
    let list: Value = serde_json::from_str(
        &http
            .ok(
                http.admin(Method::GET, ROLE_PERMISSIONS)
                    .query(&[("pageNo", "1"), ("pageSize", "10")]),
                "list",
            )
            .await,
    )
    .unwrap();
    let rows: Vec<(String, String, String)> = list["pageItems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |f: &str| r[f].as_str().unwrap().to_string();
            (s("role"), s("resource"), s("action"))
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("g-readers".into(), "dev:G:*".into(), "r".into()),
            ("writers".into(), "dev:G:config/app*".into(), "w".into()),
        ]
    );
    // Nacos 3's duplicate check: held with this action (or rw).
    let duplicate = |action: &'static str| {
        http.admin(Method::GET, "/nacos/v3/auth/permission")
            .query(&[
                ("role", "g-readers"),
                ("resource", "dev:G:*"),
                ("action", action),
            ])
    };
    assert!(http.ok(duplicate("r"), "dup r").await.contains("true"));
    assert!(http.ok(duplicate("w"), "dup w").await.contains("false"));

    // The user's own grants show by resource.
    let own = http
        .ok(
            http.admin(Method::GET, USER_PERMISSIONS)
                .query(&[("username", "one")]),
            "own",
        )
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&own).unwrap(),
        json!({"dev:H:config/app.yaml": "rw"})
    );

    // Revoking with another action keeps it (Nacos deletes the exact row);
    // with its own action it goes, and the read is refused.
    for (action, status) in [("rw", 200), ("r", 403)] {
        http.ok(
            http.admin(Method::DELETE, ROLE_PERMISSIONS).query(&[
                ("role", "g-readers"),
                ("resource", "dev:G:*"),
                ("action", action),
            ]),
            "revoke",
        )
        .await;
        assert_eq!(
            http.send(read_g()).await.0,
            status,
            "after revoking {action}"
        );
    }
    // Granted again through v3, with a dataId pattern: app.yaml only.
    http.ok(
        http.admin(Method::POST, "/nacos/v3/auth/permission")
            .form(&[
                ("role", "g-readers"),
                ("resource", "dev:G:config/app.*"),
                ("action", "rw"),
            ]),
        "v3 grant",
    )
    .await;
    assert_eq!(http.send(read_g()).await.0, 200);
    let read_db = http
        .as_user(&grp, Method::GET, "/nacos/v1/cs/configs")
        .query(&[("dataId", "db.yaml"), ("group", "G"), ("tenant", "dev")]);
    assert_eq!(http.send(read_db).await.0, 403);
    // Shapes Tacos cannot honour are refused and change nothing.
    for resource in ["dev:G:app.yaml", "dev*:*:*", "dev:G:naming/x"] {
        let (status, body) = http
            .send(http.admin(Method::POST, ROLE_PERMISSIONS).form(&[
                ("role", "g-readers"),
                ("resource", resource),
                ("action", "r"),
            ]))
            .await;
        assert_eq!(
            status,
            400,
            "{resource}: {}",
            String::from_utf8_lossy(&body)
        );
    }
}
