//! Users, logins, tokens, permissions and the audit log, against the real
//! binary.
//!
//! * Login (`/nacos/v1/auth/login` and `/users/login`, form or query) and
//!   each accepted way of presenting it: `Authorization: Bearer`, the
//!   `accessToken` header, query parameter and form field, `username` +
//!   `password` parameters, HTTP Basic, and the gRPC `accessToken` header.
//! * Expired, forged and superseded (password changed) tokens are refused;
//!   a wrong password is 403; failed logins lock the account for a while
//!   (429 saying until when), and the lock ends; new passwords must meet
//!   the password policy, old ones keep working.
//! * A read-only user cannot publish (HTTP and gRPC) and sees only its
//!   namespaces.
//! * The route table: every declared route (`tacos routes --json`) is
//!   requested without credentials and gives its declared outcome, so a
//!   route cannot be added unprotected by accident; the known Nacos bypasses
//!   (`User-Agent: Nacos-Server`, `serverIdentity`, a trailing or double
//!   slash) fail.
//! * The audit log has a row for every kind of write.
//! * A token issued by one node is valid on every node of a cluster.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::cluster::Cluster;
use common::{basic_auth, free_port, run_to_exit, temp_dir, Server, ADMIN_PASSWORD};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tacos::grpc::pb::request_client::RequestClient;
use tacos::grpc::pb::{Metadata, Payload};

const CONFIGS: &str = "/nacos/v1/cs/configs";
const LOGIN: &str = "/nacos/v1/auth/login";
const USERS: &str = "/nacos/v1/auth/users";
const PERMISSIONS: &str = "/tacos/v1/auth/permissions";
const NAMESPACES: &str = "/nacos/v1/console/namespaces";
const AUDIT: &str = "/tacos/v1/admin/audit";
const ME: &str = "/tacos/v1/auth/me";

/// A client without default credentials.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("building the HTTP client")
}

struct Http {
    client: reqwest::Client,
    base: String,
}

impl Http {
    fn new(port: u16) -> Http {
        Http {
            client: client(),
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, self.url(path))
    }

    fn admin(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.request(method, path)
            .header("Authorization", basic_auth("nacos", ADMIN_PASSWORD))
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (StatusCode, String) {
        let response = request.send().await.expect("request sent");
        let status = response.status();
        (status, response.text().await.expect("body"))
    }

    /// Logs in with a form; the JSON answer on 200.
    async fn login(&self, user: &str, password: &str) -> (StatusCode, String) {
        self.send(
            self.request(Method::POST, LOGIN)
                .form(&[("username", user), ("password", password)]),
        )
        .await
    }

    async fn token(&self, user: &str, password: &str) -> String {
        let (status, body) = self.login(user, password).await;
        assert_eq!(status, 200, "login {user}: {body}");
        let reply: Value = serde_json::from_str(&body).expect("login JSON");
        reply["accessToken"].as_str().expect("a token").to_string()
    }

    async fn create_user(&self, user: &str, password: &str) {
        let (status, body) = self
            .send(
                self.admin(Method::POST, USERS)
                    .form(&[("username", user), ("password", password)]),
            )
            .await;
        assert_eq!(status, 200, "create {user}: {body}");
    }

    async fn grant(&self, user: &str, namespace: &str, action: &str) {
        let (status, body) = self
            .send(self.admin(Method::POST, PERMISSIONS).form(&[
                ("username", user),
                ("namespace", namespace),
                ("action", action),
            ]))
            .await;
        assert_eq!(status, 200, "grant {user} {namespace} {action}: {body}");
    }

    async fn create_namespace(&self, id: &str) {
        let (status, body) = self
            .send(self.admin(Method::POST, NAMESPACES).form(&[
                ("customNamespaceId", id),
                ("namespaceName", id),
                ("namespaceDesc", "test"),
            ]))
            .await;
        assert_eq!((status.as_u16(), body.as_str()), (200, "true"));
    }

    /// Publishes as the admin.
    async fn publish(&self, tenant: &str, data_id: &str, content: &str) {
        let (status, body) = self
            .send(self.admin(Method::POST, CONFIGS).form(&[
                ("dataId", data_id),
                ("group", "DEFAULT_GROUP"),
                ("tenant", tenant),
                ("content", content),
            ]))
            .await;
        assert_eq!((status.as_u16(), body.as_str()), (200, "true"));
    }
}

fn get_config_query(tenant: &str) -> [(&'static str, String); 3] {
    [
        ("dataId", "app.yaml".to_string()),
        ("group", "DEFAULT_GROUP".to_string()),
        ("tenant", tenant.to_string()),
    ]
}

async fn start(extra: &[&str]) -> (tempfile::TempDir, Server, Http, u16) {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let mut args = vec!["--grpc-port", grpc_arg.as_str()];
    args.extend_from_slice(extra);
    let server = Server::start_with_args(&tmp, &args).await;
    let http = Http::new(server.port());
    (tmp, server, http, grpc)
}

#[tokio::test(flavor = "multi_thread")]
async fn login_and_every_way_of_presenting_it() {
    let (_tmp, _server, http, grpc) = start(&["--open-api-auth"]).await;
    http.publish("", "app.yaml", "a: 1").await;

    // Login by form and by query, on both paths.
    let (status, body) = http.login("nacos", ADMIN_PASSWORD).await;
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["tokenTtl"], 18000);
    assert_eq!(reply["globalAdmin"], true);
    assert_eq!(reply["username"], "nacos");
    let token = reply["accessToken"].as_str().unwrap().to_string();
    let (status, body) = http
        .send(
            http.request(Method::POST, "/nacos/v1/auth/users/login")
                .query(&[("username", "nacos"), ("password", ADMIN_PASSWORD)]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("accessToken"), "{body}");

    // Wrong password and unknown user: 403, no token.
    let (status, body) = http.login("nacos", "wrong-password").await;
    assert_eq!((status.as_u16(), body.as_str()), (403, "unknown user!"));
    let (status, _) = http.login("nobody", "wrong-password").await;
    assert_eq!(status, 403);

    // No credentials: refused.
    let query = get_config_query("");
    let (status, _) = http
        .send(http.request(Method::GET, CONFIGS).query(&query))
        .await;
    assert_eq!(status, 403);

    // Each accepted form.
    let bearer = http
        .request(Method::GET, CONFIGS)
        .query(&query)
        .header("Authorization", format!("Bearer {token}"));
    let header = http
        .request(Method::GET, CONFIGS)
        .query(&query)
        .header("accessToken", &token);
    let in_query = http
        .request(Method::GET, CONFIGS)
        .query(&query)
        .query(&[("accessToken", &token)]);
    let pair = http
        .request(Method::GET, CONFIGS)
        .query(&query)
        .query(&[("username", "nacos"), ("password", ADMIN_PASSWORD)]);
    let basic = http
        .request(Method::GET, CONFIGS)
        .query(&query)
        .header("Authorization", basic_auth("nacos", ADMIN_PASSWORD));
    for (what, request) in [
        ("bearer", bearer),
        ("accessToken header", header),
        ("accessToken query", in_query),
        ("username/password", pair),
        ("basic", basic),
    ] {
        let (status, body) = http.send(request).await;
        assert_eq!((status.as_u16(), body.as_str()), (200, "a: 1"), "{what}");
    }
    // In a form body (POST), as a Nacos HTTP client sends it.
    for credentials in [
        vec![("accessToken", token.as_str())],
        vec![("username", "nacos"), ("password", ADMIN_PASSWORD)],
    ] {
        let mut form = vec![
            ("dataId", "app.yaml"),
            ("group", "DEFAULT_GROUP"),
            ("content", "a: 2"),
        ];
        form.extend(credentials.iter().copied());
        let (status, body) = http
            .send(http.request(Method::POST, CONFIGS).form(&form))
            .await;
        assert_eq!((status.as_u16(), body.as_str()), (200, "true"), "{form:?}");
    }

    // gRPC: the token in the request headers.
    let query_body = json!({"dataId": "app.yaml", "group": "DEFAULT_GROUP", "tenant": ""});
    let reply = grpc_call(grpc, "ConfigQueryRequest", query_body.clone(), None).await;
    assert_eq!(reply["errorCode"], 403, "{reply}");
    let reply = grpc_call(grpc, "ConfigQueryRequest", query_body.clone(), Some(&token)).await;
    assert_eq!(reply["errorCode"], 0, "{reply}");
    assert_eq!(reply["content"], "a: 2");
    let reply = grpc_call(
        grpc,
        "ConfigQueryRequest",
        query_body,
        Some("forged.token.x"),
    )
    .await;
    assert_eq!(reply["errorCode"], 403, "{reply}");

    // Missing login fields are a bad request, not a crash.
    let (status, _) = http.send(http.request(Method::POST, LOGIN)).await;
    assert_eq!(status, 400);
}

/// One unary gRPC request; its JSON body (with `errorCode`).
async fn grpc_call(port: u16, kind: &str, mut body: Value, token: Option<&str>) -> Value {
    body["requestId"] = json!("1");
    let mut headers = HashMap::new();
    if let Some(token) = token {
        body["headers"] = json!({ "accessToken": token });
        headers.insert("accessToken".to_string(), token.to_string());
    }
    let mut client = RequestClient::connect(format!("http://127.0.0.1:{port}"))
        .await
        .expect("connecting over gRPC");
    let payload = Payload {
        metadata: Some(Metadata {
            r#type: kind.to_string(),
            client_ip: "127.0.0.1".to_string(),
            headers,
        }),
        body: Some(prost_types::Any {
            type_url: String::new(),
            value: serde_json::to_vec(&body).unwrap(),
        }),
    };
    let reply = client.request(payload).await.expect("a gRPC reply");
    let any = reply.into_inner().body.expect("a body");
    serde_json::from_slice(&any.value).expect("a JSON body")
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_forged_and_superseded_tokens_are_refused() {
    let (_tmp, _server, http, _) = start(&["--open-api-auth", "--token-ttl", "1"]).await;
    http.create_user("carol", "carol-pass-1").await;
    let token = http.token("carol", "carol-pass-1").await;
    let me = |token: &str| {
        http.request(Method::GET, ME)
            .header("Authorization", format!("Bearer {token}"))
    };
    let (status, body) = http.send(me(&token)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"username\":\"carol\""), "{body}");

    // Forged: the payload of another token under this signature, a token
    // signed with another key, and an unsigned one.
    let parts: Vec<&str> = token.split('.').collect();
    let admin = http.token("nacos", ADMIN_PASSWORD).await;
    let admin_payload = admin.split('.').nth(1).unwrap();
    let spliced = format!("{}.{admin_payload}.{}", parts[0], parts[2]);
    let other_key = tacos_app::auth::token::issue(&[7u8; 32], "nacos", 0, now(), 600).unwrap();
    let unsigned = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{admin_payload}.");
    for forged in [spliced.as_str(), other_key.as_str(), unsigned.as_str()] {
        let (status, body) = http.send(me(forged)).await;
        assert_eq!((status.as_u16(), body.as_str()), (403, "token invalid!"));
    }

    // Expired (ttl 1 s, no leeway).
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, body) = http.send(me(&token)).await;
    assert_eq!((status.as_u16(), body.as_str()), (403, "token expired!"));

    // A password change ends the tokens issued before it.
    let fresh = http.token("carol", "carol-pass-1").await;
    let (status, _) = http.send(me(&fresh)).await;
    assert_eq!(status, 200);
    let (status, body) = http
        .send(
            http.request(Method::PUT, USERS)
                .header("accessToken", &fresh)
                .form(&[("username", "carol"), ("newPassword", "carol-pass-2")]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = http.send(me(&fresh)).await;
    assert_eq!(status, 403);
    let (status, _) = http.login("carol", "carol-pass-1").await;
    assert_eq!(status, 403);
    http.token("carol", "carol-pass-2").await;

    // A disabled user cannot log in; a deleted user's token is refused.
    let token = http.token("carol", "carol-pass-2").await;
    let (status, body) = http
        .send(
            http.admin(Method::PUT, USERS)
                .form(&[("username", "carol"), ("enabled", "false")]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = http.login("carol", "carol-pass-2").await;
    assert_eq!((status.as_u16(), body.as_str()), (403, "user is disabled"));
    let (status, _) = http.send(me(&token)).await;
    assert_eq!(status, 403);
    let (status, _) = http
        .send(
            http.admin(Method::DELETE, USERS)
                .query(&[("username", "carol")]),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = http.send(me(&token)).await;
    assert_eq!(status, 403);

    // An admin is not deleted (Nacos' rule, on v1 as on v3); the last
    // admin is not demoted either.
    let (status, body) = http
        .send(
            http.admin(Method::DELETE, USERS)
                .query(&[("username", "nacos")]),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("cannot delete admin: nacos"), "{body}");
    let (status, body) = http
        .send(
            http.admin(Method::PUT, USERS)
                .form(&[("username", "nacos"), ("admin", "false")]),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("last enabled admin"), "{body}");
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_logins_are_rate_limited() {
    let (_tmp, server, http, _) = start(&[]).await;
    http.create_user("dave", "dave-pass-1").await;
    for _ in 0..5 {
        let (status, _) = http.login("dave", "wrong-pass").await;
        assert_eq!(status, 403);
    }
    // Limited now, even with the right password, and the answer says when
    // to come back.
    let response = http
        .request(Method::POST, LOGIN)
        .form(&[("username", "dave"), ("password", "dave-pass-1")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry), "{retry}");
    let body = response.text().await.unwrap();
    assert!(
        body.starts_with("account locked after 5 failed logins, until 20"),
        "{body}"
    );
    // Other users are not limited by dave's failures.
    http.token("nacos", ADMIN_PASSWORD).await;

    // Logins are counted by outcome and logged (refusals by the limiter
    // only counted); the password never shows.
    let (_, metrics) = http.send(http.request(Method::GET, "/metrics")).await;
    let count = |outcome: &str| {
        let series = format!("tacos_logins_total{{outcome=\"{outcome}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(series.as_str()))
            .unwrap_or_else(|| panic!("no {series} in {metrics}"))
            .trim()
            .to_string()
    };
    assert_eq!(count("wrong_credentials"), "5");
    assert_eq!(count("locked"), "1");
    assert_eq!(count("ok"), "1");
    let log = server.log();
    assert_eq!(
        log.matches("login refused: unknown user or wrong password")
            .count(),
        5,
        "{log}"
    );
    assert!(log.contains("user=\"dave\""), "{log}");
    assert!(
        !log.contains("wrong-pass") && !log.contains("dave-pass-1"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lockout_ends_and_the_password_policy_applies_to_new_passwords_only() {
    // A user whose password predates the policy.
    let (tmp, mut server, http, _) = start(&[]).await;
    http.create_user("old", "oldpassword").await;
    server.stop().await;

    let policy = [
        "--password-min-length",
        "12",
        "--password-min-classes",
        "3",
        "--login-lockout-failures",
        "3",
        "--login-lockout-seconds",
        "2",
    ];
    let grpc = free_port().to_string();
    let mut args = vec!["--grpc-port", grpc.as_str()];
    args.extend_from_slice(&policy);
    let server = Server::start_with_args(&tmp, &args).await;
    let http = Http::new(server.port());
    // The old password keeps working.
    http.token("old", "oldpassword").await;
    // New ones must meet the policy, on create and on change, with a reason.
    let (status, body) = http
        .send(
            http.admin(Method::POST, USERS)
                .form(&[("username", "newbie"), ("password", "Short-1")]),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("at least 12 characters"), "{body}");
    http.create_user("newbie", "lower-digit-1").await;
    let (status, body) = http
        .send(
            http.admin(Method::POST, USERS)
                .form(&[("username", "weak"), ("password", "alllowercase")]),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("must mix at least 3 of"), "{body}");
    assert!(body.contains("(it has 1)"), "{body}");
    let old_token = http.token("old", "oldpassword").await;
    let (status, body) = http
        .send(
            http.request(Method::PUT, USERS)
                .header("accessToken", &old_token)
                .form(&[("username", "old"), ("newPassword", "stillweakpass")]),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = http
        .send(
            http.request(Method::PUT, USERS)
                .header("accessToken", &old_token)
                .form(&[("username", "old"), ("newPassword", "Now-Strong-Pass-1")]),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // 3 failures lock the account for 2 s, even for the right password;
    // then the lock ends by itself.
    for _ in 0..3 {
        let (status, _) = http.login("old", "wrong-password").await;
        assert_eq!(status, 403);
    }
    let (status, body) = http.login("old", "Now-Strong-Pass-1").await;
    assert_eq!(status, 429, "{body}");
    assert!(
        body.contains("account locked after 3 failed logins, until"),
        "{body}"
    );
    // Another user is not locked by old's failures.
    http.token("newbie", "lower-digit-1").await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    http.token("old", "Now-Strong-Pass-1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_user_reads_only_its_namespaces_and_cannot_write() {
    let (_tmp, _server, http, grpc) = start(&["--open-api-auth"]).await;
    http.create_namespace("dev").await;
    http.create_namespace("prod").await;
    http.publish("dev", "app.yaml", "dev: 1").await;
    http.publish("prod", "app.yaml", "prod: 1").await;
    http.create_user("reader", "reader-pass-1").await;
    http.grant("reader", "dev", "r").await;
    let token = http.token("reader", "reader-pass-1").await;
    let as_reader =
        |method: Method, path: &str| http.request(method, path).header("accessToken", &token);

    // Reads in dev, nothing in prod.
    let (status, body) = http
        .send(as_reader(Method::GET, CONFIGS).query(&get_config_query("dev")))
        .await;
    assert_eq!((status.as_u16(), body.as_str()), (200, "dev: 1"));
    let (status, body) = http
        .send(as_reader(Method::GET, CONFIGS).query(&get_config_query("prod")))
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("may not read prod:DEFAULT_GROUP:config/app.yaml"),
        "{body}"
    );

    // Sees only dev in the namespace list.
    let (status, body) = http.send(as_reader(Method::GET, NAMESPACES)).await;
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["dev"]);

    // Cannot publish or delete over HTTP, v1 and v2.
    let (status, _) = http
        .send(as_reader(Method::POST, CONFIGS).form(&[
            ("dataId", "app.yaml"),
            ("group", "DEFAULT_GROUP"),
            ("tenant", "dev"),
            ("content", "hacked"),
        ]))
        .await;
    assert_eq!(status, 403);
    let (status, _) = http
        .send(as_reader(Method::POST, "/nacos/v2/cs/config").form(&[
            ("dataId", "app.yaml"),
            ("group", "DEFAULT_GROUP"),
            ("namespaceId", "dev"),
            ("content", "hacked"),
        ]))
        .await;
    assert_eq!(status, 403);
    let (status, _) = http
        .send(as_reader(Method::DELETE, CONFIGS).query(&get_config_query("dev")))
        .await;
    assert_eq!(status, 403);
    // Nor listen to prod.
    let listen = "app.yaml\u{2}DEFAULT_GROUP\u{2}\u{2}prod\u{1}";
    let (status, _) = http
        .send(
            as_reader(Method::POST, "/nacos/v1/cs/configs/listener")
                .form(&[("Listening-Configs", listen)]),
        )
        .await;
    assert_eq!(status, 403);
    // Nor reach admin routes.
    let (status, _) = http.send(as_reader(Method::GET, USERS)).await;
    assert_eq!(status, 403);

    // gRPC: reads dev, cannot publish there, cannot read or listen to prod.
    let query =
        |tenant: &str| json!({"dataId": "app.yaml", "group": "DEFAULT_GROUP", "tenant": tenant});
    let reply = grpc_call(grpc, "ConfigQueryRequest", query("dev"), Some(&token)).await;
    assert_eq!(
        (reply["errorCode"].clone(), reply["content"].clone()),
        (json!(0), json!("dev: 1"))
    );
    let reply = grpc_call(grpc, "ConfigQueryRequest", query("prod"), Some(&token)).await;
    assert_eq!(reply["errorCode"], 403, "{reply}");
    let mut publish = query("dev");
    publish["content"] = json!("hacked");
    let reply = grpc_call(grpc, "ConfigPublishRequest", publish, Some(&token)).await;
    assert_eq!(reply["errorCode"], 403, "{reply}");
    let listen = json!({"listen": true, "configListenContexts": [
        {"dataId": "app.yaml", "group": "DEFAULT_GROUP", "tenant": "prod", "md5": ""}
    ]});
    let reply = grpc_call(grpc, "ConfigBatchListenRequest", listen, Some(&token)).await;
    assert_eq!(reply["errorCode"], 403, "{reply}");

    // Nothing changed.
    let (_, body) = http
        .send(
            http.admin(Method::GET, CONFIGS)
                .query(&get_config_query("dev")),
        )
        .await;
    assert_eq!(body, "dev: 1");

    // Granted rw, the same user can write dev (and still not prod).
    http.grant("reader", "dev", "rw").await;
    let (status, body) = http
        .send(as_reader(Method::POST, CONFIGS).form(&[
            ("dataId", "app.yaml"),
            ("group", "DEFAULT_GROUP"),
            ("tenant", "dev"),
            ("content", "dev: 2"),
        ]))
        .await;
    assert_eq!((status.as_u16(), body.as_str()), (200, "true"));
    let mut publish = query("prod");
    publish["content"] = json!("hacked");
    let reply = grpc_call(grpc, "ConfigPublishRequest", publish, Some(&token)).await;
    assert_eq!(reply["errorCode"], 403, "{reply}");
    // With open-API auth on, the audit names the logged-in writer.
    let (_, body) = http
        .send(http.admin(Method::GET, AUDIT).query(&[("user", "reader")]))
        .await;
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["totalCount"], 1, "{body}");
    assert_eq!(page["pageItems"][0]["action"], "config.publish", "{body}");
}

/// What a request without credentials must get, by declared need.
fn expected(need: &str, open_api_auth: bool) -> &'static str {
    match need {
        "public" => "served",
        "open-api" if !open_api_auth => "served",
        _ => "refused",
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_declared_route_gives_its_declared_outcome_without_credentials() {
    let tmp = temp_dir();
    let listed = run_to_exit(tmp.path(), &["routes", "--json"], &[]);
    assert!(listed.status.success(), "{listed:?}");
    let routes: Vec<Value> = serde_json::from_str(&listed.stdout).expect("routes JSON");
    assert!(routes.len() > 30, "{routes:?}");

    for open_api_auth in [true, false] {
        let extra: &[&str] = if open_api_auth {
            &["--open-api-auth"]
        } else {
            &[]
        };
        let (_tmp, mut server, http, _) = start(extra).await;
        for route in &routes {
            let method: Method = route["method"].as_str().unwrap().parse().unwrap();
            let path = route["path"].as_str().unwrap();
            let need = route["need"].as_str().unwrap();
            // Enough parameters that a served request gets past parsing.
            let request = http
                .request(method.clone(), path)
                .query(&[("dataId", "x"), ("group", "g"), ("id", "1"), ("nid", "1")])
                .header("User-Agent", "Nacos-Server")
                .header("serverIdentity", "security");
            let (status, body) = http.send(request).await;
            // A login route's own answer to a missing password (Nacos 3's
            // `403 unknown user!`) is the handler speaking, not the guard.
            let handler_refused = body == "unknown user!";
            let outcome = if status == 403 && !handler_refused
                || status == 404 && body == "no such route\n"
            {
                "refused"
            } else {
                "served"
            };
            assert_eq!(
                outcome,
                expected(need, open_api_auth),
                "{method} {path} ({need}, open-api-auth {open_api_auth}): {status} {body}"
            );
            // The path with a trailing or a doubled slash is never served
            // when the route is protected.
            if expected(need, open_api_auth) == "refused" {
                for variant in [
                    format!("{path}/"),
                    format!("/{path}"),
                    path.replace("/v1/", "//v1/"),
                ] {
                    let (status, body) = http.send(http.request(method.clone(), &variant)).await;
                    assert!(
                        status == 403 || status == 404,
                        "{method} {variant}: {status} {body}"
                    );
                }
            }
        }
        assert!(server.stop().await.success());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn nacos_roles_grant_namespaces_to_their_users() {
    const ROLES: &str = "/nacos/v1/auth/roles";
    const PERMISSIONS: &str = "/nacos/v1/auth/permissions";
    let (_tmp, _server, http, _) = start(&["--open-api-auth"]).await;
    http.create_namespace("dev").await;
    http.publish("dev", "app.yaml", "dev: 1").await;
    http.create_user("dana", "dana-pass-1").await;
    let token = http.token("dana", "dana-pass-1").await;
    let read_dev = || {
        http.request(Method::GET, CONFIGS)
            .header("accessToken", &token)
            .query(&get_config_query("dev"))
    };
    let (status, _) = http.send(read_dev()).await;
    assert_eq!(status, 403, "no role yet");

    // The Nacos way: bind the user to a role, grant the role the namespace.
    let (status, body) = http
        .send(
            http.admin(Method::POST, ROLES)
                .form(&[("role", "devs"), ("username", "dana")]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("add role ok!"), "{body}");
    let (status, body) = http
        .send(http.admin(Method::POST, PERMISSIONS).form(&[
            ("role", "devs"),
            ("resource", "dev:*:*"),
            ("action", "r"),
        ]))
        .await;
    assert_eq!(status, 200, "{body}");
    // The same token now reads dev (permissions are looked up per request).
    let (status, body) = http.send(read_dev()).await;
    assert_eq!((status.as_u16(), body.as_str()), (200, "dev: 1"));
    // Read only: publishing is still refused.
    let (status, _) = http
        .send(
            http.request(Method::POST, CONFIGS)
                .header("accessToken", &token)
                .form(&[
                    ("dataId", "app.yaml"),
                    ("group", "DEFAULT_GROUP"),
                    ("tenant", "dev"),
                    ("content", "dev: 2"),
                ]),
        )
        .await;
    assert_eq!(status, 403);

    // Listings in Nacos' page shape; admins show as ROLE_ADMIN.
    let (status, body) = http
        .send(http.admin(Method::GET, ROLES).query(&[
            ("pageNo", "1"),
            ("pageSize", "10"),
            ("search", "accurate"),
        ]))
        .await;
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        page["pageItems"],
        json!([
            {"role": "ROLE_ADMIN", "username": "nacos"},
            {"role": "devs", "username": "dana"}
        ]),
        "{body}"
    );
    let (_, body) = http
        .send(http.admin(Method::GET, PERMISSIONS).query(&[
            ("role", "devs"),
            ("pageNo", "1"),
            ("pageSize", "10"),
            ("search", "accurate"),
        ]))
        .await;
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        page["pageItems"],
        json!([{"role": "devs", "resource": "dev:*:*", "action": "r"}]),
        "{body}"
    );
    let (_, body) = http
        .send(
            http.admin(Method::GET, "/nacos/v1/auth/roles/search")
                .query(&[("role", "dev")]),
        )
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!(["devs"])
    );

    // What Tacos cannot honour is refused, saying why, and changes nothing.
    for (role, resource, action, status, message) in [
        (
            "devs",
            "dev:DEFAULT_GROUP:app.yaml",
            "r",
            400,
            "the third part must be * or config/DATAID",
        ),
        ("devs", "dev:*:*", "x", 400, "(r, w or rw)"),
        ("nobody", "dev:*:*", "r", 404, "role not found: nobody"),
        ("devs", "nope:*:*", "r", 400, "namespace not exist: nope"),
        ("ROLE_ADMIN", "dev:*:*", "rw", 400, "reserved"),
    ] {
        let (got, body) = http
            .send(http.admin(Method::POST, PERMISSIONS).form(&[
                ("role", role),
                ("resource", resource),
                ("action", action),
            ]))
            .await;
        assert_eq!(got.as_u16(), status, "{role} {resource} {action}: {body}");
        assert!(body.contains(message), "{role} {resource} {action}: {body}");
    }
    let (status, body) = http
        .send(
            http.admin(Method::POST, ROLES)
                .form(&[("role", "ROLE_ADMIN"), ("username", "dana")]),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = http
        .send(
            http.admin(Method::POST, ROLES)
                .form(&[("role", "devs"), ("username", "dana")]),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("already bound"), "{body}");
    // Only admins manage roles.
    let (status, _) = http
        .send(
            http.request(Method::POST, ROLES)
                .header("accessToken", &token)
                .form(&[("role", "devs"), ("username", "dana")]),
        )
        .await;
    assert_eq!(status, 403);

    // Deleting with another action keeps the permission (Nacos deletes the
    // exact row); with the right one it goes, and so does the access.
    for action in ["rw", "r"] {
        let (status, body) = http
            .send(http.admin(Method::DELETE, PERMISSIONS).query(&[
                ("role", "devs"),
                ("resource", "dev:*:*"),
                ("action", action),
            ]))
            .await;
        assert_eq!(status, 200, "{body}");
        let (status, _) = http.send(read_dev()).await;
        assert_eq!(
            status,
            if action == "rw" { 200 } else { 403 },
            "after deleting {action}"
        );
    }
    // Removing the role (no username) is audited like every write.
    let (status, body) = http
        .send(http.admin(Method::DELETE, ROLES).query(&[("role", "devs")]))
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = http
        .send(http.admin(Method::GET, AUDIT).query(&[("action", "role.")]))
        .await;
    let page: Value = serde_json::from_str(&body).unwrap();
    let actions: Vec<&str> = page["pageItems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "ok")
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "role.remove",
            "role.permission",
            "role.permission",
            "role.bind"
        ],
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_kind_of_write_is_audited() {
    let (_tmp, _server, http, _) = start(&[]).await;
    http.create_namespace("dev").await;
    let (status, _) = http
        .send(http.admin(Method::PUT, NAMESPACES).form(&[
            ("namespace", "dev"),
            ("namespaceShowName", "Development"),
            ("namespaceDesc", ""),
        ]))
        .await;
    assert_eq!(status, 200);
    http.publish("dev", "app.yaml", "a: 1").await;
    let (status, _) = http
        .send(
            http.request(Method::POST, CONFIGS)
                .header("betaIps", "10.0.0.1")
                .form(&[
                    ("dataId", "app.yaml"),
                    ("group", "DEFAULT_GROUP"),
                    ("tenant", "dev"),
                    ("content", "a: beta"),
                    ("src_user", "someone"),
                ]),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = http
        .send(
            http.admin(Method::DELETE, CONFIGS)
                .query(&get_config_query("dev")),
        )
        .await;
    assert_eq!(status, 200);
    // A console import is one write, audited per config.
    let zip = {
        use std::io::Write;
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, content) in [
            ("DEFAULT_GROUP/one.txt", "1"),
            ("DEFAULT_GROUP/two.txt", "2"),
        ] {
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(content.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    };
    let (status, body) = http
        .send(
            http.admin(Method::POST, "/tacos/api/console/import")
                .query(&[("namespace", ""), ("policy", "abort")])
                .body(zip),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let report: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        report["created"],
        json!(["DEFAULT_GROUP/one.txt", "DEFAULT_GROUP/two.txt"]),
        "{body}"
    );
    http.create_user("erin", "erin-pass-1").await;
    http.grant("erin", "dev", "r").await;
    let (status, _) = http
        .send(
            http.admin(Method::PUT, USERS)
                .form(&[("username", "erin"), ("newPassword", "erin-pass-2")]),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = http
        .send(
            http.admin(Method::DELETE, USERS)
                .query(&[("username", "erin")]),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = http
        .send(
            http.admin(Method::DELETE, NAMESPACES)
                .query(&[("namespaceId", "dev")]),
        )
        .await;
    assert_eq!(status, 200);
    // Membership: add a learner that does not exist, then remove it.
    let (status, body) = http
        .send(
            http.admin(Method::POST, "/tacos/v1/admin/cluster/learners")
                .form(&[
                    ("id", "9"),
                    ("clusterAddr", "127.0.0.1:1"),
                    ("httpAddr", "127.0.0.1:2"),
                ]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = http
        .send(
            http.admin(Method::DELETE, "/tacos/v1/admin/cluster/members")
                .query(&[("id", "9")]),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = http
        .send(http.admin(Method::GET, AUDIT).query(&[("pageSize", "100")]))
        .await;
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    let rows = page["pageItems"].as_array().unwrap();
    let find = |action: &str, target: &str| {
        rows.iter()
            .find(|r| r["action"] == action && r["target"].as_str().unwrap().contains(target))
            .unwrap_or_else(|| panic!("no {action} {target} row in {body}"))
    };
    let auth_init = find("auth.init", "nacos");
    assert_eq!(auth_init["user"], "system");
    for (action, target) in [
        ("namespace.create", "dev"),
        ("namespace.update", "dev"),
        ("config.publish", "dev/DEFAULT_GROUP/app.yaml"),
        ("config.gray.publish", "dev/DEFAULT_GROUP/app.yaml"),
        ("config.remove", "dev/DEFAULT_GROUP/app.yaml"),
        ("config.import", "public/DEFAULT_GROUP/one.txt"),
        ("config.import", "public/DEFAULT_GROUP/two.txt"),
        ("user.create", "erin"),
        ("permission.set", "erin"),
        ("user.update", "erin"),
        ("user.remove", "erin"),
        ("namespace.remove", "dev"),
        ("membership.add-learner", "node 9"),
        ("membership.remove", "node 9"),
    ] {
        let row = find(action, target);
        assert_eq!(row["outcome"], "ok", "{row}");
        assert_eq!(row["ip"], "127.0.0.1", "{row}");
        assert!(row["time"].as_i64().unwrap() > 1_700_000_000_000, "{row}");
        // Open-API auth is off, so config writes are anonymous whatever
        // credentials ride along; a claimed src_user is recorded as such.
        let user = match action {
            "config.gray.publish" => "anonymous:someone",
            "config.publish" | "config.remove" => "anonymous",
            _ => "nacos",
        };
        assert_eq!(row["user"], user, "{row}");
    }
    // Nothing secret in the log.
    assert!(
        !body.contains("argon2") && !body.contains("erin-pass"),
        "{body}"
    );
    // Rows come newest first, and filters narrow them.
    let ids: Vec<u64> = rows.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    let (_, body) = http
        .send(
            http.admin(Method::GET, AUDIT)
                .query(&[("action", "user."), ("target", "erin")]),
        )
        .await;
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["totalCount"], 3, "{body}");
    // A write the state refuses is audited with its reason.
    let (status, _) = http
        .send(
            http.admin(Method::PUT, USERS)
                .form(&[("username", "nacos"), ("admin", "false")]),
        )
        .await;
    assert_eq!(status, 409);
    let (_, body) = http
        .send(
            http.admin(Method::GET, AUDIT)
                .query(&[("action", "user.update"), ("target", "nacos")]),
        )
        .await;
    assert!(
        body.contains("refused: nacos is the last enabled admin"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_generated_admin_password_is_written_once_and_works() {
    // A short --admin-password is refused: the server does not start.
    let tmp = temp_dir();
    let refused = run_to_exit(tmp.path(), &["--admin-password", "short"], &[]);
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("--admin-password: password must be at least 8"),
        "{refused:?}"
    );

    let tmp = temp_dir();
    let mut server = Server::start_with_args(&tmp, &[common::NO_ADMIN_PASSWORD]).await;
    let file = server.data_dir().join("initial-admin-password");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !file.exists() {
        assert!(std::time::Instant::now() < deadline, "no password file");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let password = std::fs::read_to_string(&file).unwrap().trim().to_string();
    assert_eq!(password.len(), 24);
    let http = Http::new(server.port());
    http.token("nacos", &password).await;
    // The line is printed once the init commits, which may be a moment after
    // the login above (which only waits for the apply); give it that moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut log = server.log();
    while !log.contains(&password) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        log = server.log();
    }
    assert_eq!(log.matches(&password).count(), 1, "printed once: {log}");
    assert!(!log.contains("accessToken"), "{log}");
    assert!(server.stop().await.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_from_one_node_is_valid_on_every_node() {
    let cluster = Cluster::start(3, &["--open-api-auth"]).await;
    let api = cluster.api(0);
    let http = Http::new(api.url("").rsplit(':').next().unwrap().parse().unwrap());
    let token = http.token("nacos", ADMIN_PASSWORD).await;
    for i in 0..3 {
        let node = cluster.api(i);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let response = client()
                .get(node.url(ME))
                .header("Authorization", format!("Bearer {token}"))
                .send()
                .await
                .unwrap();
            if response.status() == 200 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "node {i}: {}",
                response.status()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // The joins were audited. A join's row is written after the membership
    // change the cluster start waited for, so give the last one a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = http
            .send(
                http.admin(Method::GET, AUDIT)
                    .query(&[("action", "membership.join")]),
            )
            .await;
        let page: Value = serde_json::from_str(&body).unwrap();
        if page["totalCount"] == 2 || std::time::Instant::now() >= deadline {
            assert_eq!(page["totalCount"], 2, "{body}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
