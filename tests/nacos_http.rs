//! The Nacos HTTP surface (open API v1 and v2) against the real binary.
//!
//! Requests are shaped like real Nacos HTTP clients send them: form bodies
//! (`application/x-www-form-urlencoded`), sometimes parameters in the query
//! string of a POST, an empty `tenant=`, and `username`/`password` or
//! `accessToken` riding along (auth is off, so they must be ignored).
//!
//! Each test starts its own server on its own data dir.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Server;
use reqwest::Method;
use serde_json::Value;
use tempfile::TempDir;

// ---- small HTTP helpers -------------------------------------------------------

/// Credentials that real clients send along on every request; with auth off
/// the server must ignore them.
const AUTH_NOISE: [(&str, &str); 3] = [
    ("username", "nacos"),
    ("password", "nacos"),
    ("accessToken", "eyJhbGciOiJIUzI1NiJ9.e30.not-a-real-token"),
];

const V1_CONFIGS: &str = "/nacos/v1/cs/configs";
const V2_CONFIG: &str = "/nacos/v2/cs/config";
const NAMESPACES: &str = "/nacos/v1/console/namespaces";
const NOT_FOUND_BODY: &str = "config data not exist\n";
const CAS_FAIL_BODY: &str = "caused: Cas publish fail, server md5 may have changed.;";

/// A form body as the Java client builds it.
fn java_form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", common::java_encode(k), common::java_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn md5_hex(s: &str) -> String {
    format!("{:x}", md5::compute(s.as_bytes()))
}

/// An HTTP answer with its body read.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("body is UTF-8")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("header is ASCII").to_string())
    }

    /// Panics with the request's description unless the status is `status`.
    fn expect_status(&self, status: u16, what: &str) -> &Self {
        assert_eq!(
            self.status,
            status,
            "{what}: expected {status}, got {} with body {:?}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        self
    }
}

/// A request to send: method, path, query pairs, optional form body, headers.
struct Req<'a> {
    method: Method,
    path: &'a str,
    query: Vec<(&'a str, &'a str)>,
    form: Option<Vec<(&'a str, &'a str)>>,
    raw_body: Option<String>,
    headers: Vec<(&'a str, &'a str)>,
}

impl<'a> Req<'a> {
    fn new(method: Method, path: &'a str) -> Self {
        Req {
            method,
            path,
            query: Vec::new(),
            form: None,
            raw_body: None,
            headers: Vec::new(),
        }
    }

    fn get(path: &'a str) -> Self {
        Req::new(Method::GET, path)
    }

    fn post(path: &'a str) -> Self {
        Req::new(Method::POST, path)
    }

    fn put(path: &'a str) -> Self {
        Req::new(Method::PUT, path)
    }

    fn delete(path: &'a str) -> Self {
        Req::new(Method::DELETE, path)
    }

    fn query(mut self, pairs: &[(&'a str, &'a str)]) -> Self {
        self.query.extend_from_slice(pairs);
        self
    }

    fn form(mut self, pairs: &[(&'a str, &'a str)]) -> Self {
        self.form
            .get_or_insert_with(Vec::new)
            .extend_from_slice(pairs);
        self
    }

    /// A body sent as is (set `Content-Type` with [`Req::header`]).
    fn raw_body(mut self, body: String) -> Self {
        self.raw_body = Some(body);
        self
    }

    fn header(mut self, name: &'a str, value: &'a str) -> Self {
        self.headers.push((name, value));
        self
    }

    /// `username`/`password` in the query string, as the npm client does.
    fn with_credentials(self) -> Self {
        self.query(&AUTH_NOISE[..2])
    }

    /// `accessToken` in the query string, as the Java client does.
    fn with_token(self) -> Self {
        self.query(&AUTH_NOISE[2..])
    }
}

/// A plain-HTTP client for one server.
struct Http {
    client: reqwest::Client,
    base: String,
}

impl Http {
    fn new(port: u16) -> Self {
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(30))
            .default_headers(common::admin_headers())
            .build()
            .expect("building the HTTP client");
        Http {
            client,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    async fn send(&self, req: Req<'_>) -> Reply {
        let what = format!("{} {}", req.method, req.path);
        let mut builder = self
            .client
            .request(req.method, format!("{}{}", self.base, req.path));
        if !req.query.is_empty() {
            builder = builder.query(&req.query);
        }
        if let Some(form) = &req.form {
            builder = builder.form(form);
        }
        if let Some(body) = req.raw_body {
            builder = builder.body(body);
        }
        for (name, value) in &req.headers {
            builder = builder.header(*name, *value);
        }
        let response = builder
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{what}: reading the body: {e}"))
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    // -- v1 configs, shaped like the Java/npm clients send them --

    /// `POST /nacos/v1/cs/configs`, everything in a form body plus `extra`
    /// form fields; credentials ride along in the query string.
    async fn publish(
        &self,
        tenant: &str,
        group: &str,
        data_id: &str,
        content: &str,
        extra: &[(&str, &str)],
    ) -> Reply {
        let req = Req::post(V1_CONFIGS)
            .with_credentials()
            .form(&[
                ("dataId", data_id),
                ("group", group),
                ("content", content),
                ("tenant", tenant),
            ])
            .form(extra);
        self.send(req).await
    }

    /// Publishes and insists on `200 true`.
    async fn publish_ok(&self, tenant: &str, group: &str, data_id: &str, content: &str) {
        let reply = self.publish(tenant, group, data_id, content, &[]).await;
        assert_eq!(
            (reply.status, reply.text().as_str()),
            (200, "true"),
            "publishing {data_id}/{group}/{tenant:?}"
        );
    }

    /// `GET /nacos/v1/cs/configs?dataId&group&tenant` with a token.
    async fn get_config(&self, tenant: &str, group: &str, data_id: &str) -> Reply {
        let req = Req::get(V1_CONFIGS).with_token().query(&[
            ("dataId", data_id),
            ("group", group),
            ("tenant", tenant),
        ]);
        self.send(req).await
    }

    /// The content of a config, or `None` on 404 (panics on anything else).
    async fn content(&self, tenant: &str, group: &str, data_id: &str) -> Option<String> {
        let reply = self.get_config(tenant, group, data_id).await;
        match reply.status {
            200 => Some(reply.text()),
            404 => {
                assert_eq!(reply.text(), NOT_FOUND_BODY);
                None
            }
            other => panic!(
                "GET {data_id}/{group}/{tenant:?} answered {other}: {}",
                reply.text()
            ),
        }
    }

    /// `DELETE /nacos/v1/cs/configs` with the parameters in the query string.
    async fn delete_config(&self, tenant: &str, group: &str, data_id: &str) -> Reply {
        let req = Req::delete(V1_CONFIGS).with_credentials().query(&[
            ("dataId", data_id),
            ("group", group),
            ("tenant", tenant),
        ]);
        self.send(req).await
    }

    /// `GET /nacos/v1/cs/configs?search=...`, parsed (must be 200).
    async fn search(
        &self,
        mode: &str,
        tenant: &str,
        group: &str,
        data_id: &str,
        page_no: u32,
        page_size: u32,
    ) -> Value {
        let (page_no, page_size) = (page_no.to_string(), page_size.to_string());
        let req = Req::get(V1_CONFIGS).with_credentials().query(&[
            ("search", mode),
            ("dataId", data_id),
            ("group", group),
            ("tenant", tenant),
            ("appName", ""),
            ("config_tags", ""),
            ("pageNo", &page_no),
            ("pageSize", &page_size),
        ]);
        let reply = self.send(req).await;
        reply.expect_status(200, "search");
        reply.json()
    }

    /// Total number of configs in a namespace (blur search over everything).
    async fn count_in(&self, tenant: &str) -> u64 {
        self.search("blur", tenant, "", "", 1, 10)
            .await
            .get("totalCount")
            .and_then(Value::as_u64)
            .expect("totalCount")
    }

    /// `GET /nacos/v1/console/namespaces`, the `data` array.
    async fn namespaces(&self) -> Vec<Value> {
        let reply = self.send(Req::get(NAMESPACES)).await;
        reply.expect_status(200, "GET namespaces");
        let body = reply.json();
        assert_eq!(body["code"], 200, "{body}");
        assert!(body["message"].is_null(), "{body}");
        body["data"].as_array().expect("data is an array").clone()
    }
}

async fn start(tmp: &TempDir) -> (Server, Http) {
    let server = Server::start(tmp).await;
    let http = Http::new(server.port());
    (server, http)
}

fn temp_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("tacos-nacos-http-")
        .tempdir()
        .expect("creating a temp dir")
}

fn page_data_ids(page: &Value) -> Vec<String> {
    page["pageItems"]
        .as_array()
        .expect("pageItems is an array")
        .iter()
        .map(|item| item["dataId"].as_str().expect("dataId").to_string())
        .collect()
}

fn assert_no_cache(reply: &Reply, what: &str) {
    let cache_control = reply.header("Cache-Control").unwrap_or_default();
    assert!(
        cache_control.contains("no-cache"),
        "{what}: Cache-Control {cache_control:?}"
    );
    assert_eq!(
        reply.header("Pragma").as_deref(),
        Some("no-cache"),
        "{what}: Pragma"
    );
    assert!(reply.header("Expires").is_some(), "{what}: Expires");
}

// ---- publish / get / search / delete -------------------------------------------

#[tokio::test]
async fn publish_get_headers_and_show_all() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;

    // A JSON config with all the metadata a console sends.
    let json = "{\"a\": 1, \"b\": [true, null]}";
    let reply = http
        .publish(
            "",
            "DEFAULT_GROUP",
            "app.json",
            json,
            &[
                ("type", "json"),
                ("appName", "shop"),
                ("desc", "the shop settings"),
                ("config_tags", "t1,t2"),
                ("src_user", "alice"),
            ],
        )
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));

    let reply = http.get_config("", "DEFAULT_GROUP", "app.json").await;
    reply.expect_status(200, "GET app.json");
    assert_eq!(reply.text(), json);
    assert_eq!(reply.header("Content-MD5"), Some(md5_hex(json)));
    assert_eq!(reply.header("Config-Type").as_deref(), Some("json"));
    assert_eq!(
        reply.header("Content-Type").as_deref(),
        Some("application/json;charset=UTF-8")
    );
    assert!(reply.header("Last-Modified").is_some(), "Last-Modified");
    assert_no_cache(&reply, "GET app.json");
    assert!(
        reply.header("Content-Encoding").is_none(),
        "responses are not compressed"
    );

    // Content-Type follows the type; unknown types are stored as text.
    let cases = [
        ("page.xml", "xml", "xml", "<a>1</a>", "application/xml"),
        ("page.html", "html", "html", "<p>hi</p>", "text/html"),
        ("app.yaml", "yaml", "yaml", "a: 1\n", "text/plain"),
        ("app.props", "properties", "properties", "a=1", "text/plain"),
        ("app.weird", "weird", "text", "whatever", "text/plain"),
        ("app.none", "", "text", "no type", "text/plain"),
    ];
    for (data_id, sent_type, stored_type, content, mime) in cases {
        let reply = http
            .publish(
                "",
                "DEFAULT_GROUP",
                data_id,
                content,
                &[("type", sent_type)],
            )
            .await;
        reply.expect_status(200, data_id);
        let reply = http.get_config("", "DEFAULT_GROUP", data_id).await;
        reply.expect_status(200, data_id);
        assert_eq!(reply.text(), content, "{data_id}");
        assert_eq!(
            reply.header("Config-Type").as_deref(),
            Some(stored_type),
            "{data_id}"
        );
        let content_type = reply.header("Content-Type").unwrap_or_default();
        assert!(
            content_type.starts_with(mime) && content_type.contains("charset=UTF-8"),
            "{data_id}: Content-Type {content_type:?}, expected {mime};charset=UTF-8"
        );
        assert_eq!(reply.header("Content-MD5"), Some(md5_hex(content)));
        assert_no_cache(&reply, data_id);
    }

    // show=all: every field Nacos' console reads.
    let reply = http
        .send(Req::get(V1_CONFIGS).with_token().query(&[
            ("dataId", "app.json"),
            ("group", "DEFAULT_GROUP"),
            ("tenant", ""),
            ("show", "all"),
        ]))
        .await;
    reply.expect_status(200, "show=all");
    let detail = reply.json();
    for field in [
        "id",
        "dataId",
        "group",
        "content",
        "md5",
        "tenant",
        "appName",
        "type",
        "createTime",
        "modifyTime",
        "desc",
        "configTags",
    ] {
        assert!(
            detail.get(field).is_some(),
            "show=all lacks {field}: {detail}"
        );
    }
    assert_eq!(detail["dataId"], "app.json");
    assert_eq!(detail["group"], "DEFAULT_GROUP");
    assert_eq!(detail["content"], json);
    assert_eq!(detail["md5"], md5_hex(json));
    assert!(
        detail["tenant"] == "" || detail["tenant"] == "public",
        "tenant of a public config: {detail}"
    );
    assert_eq!(detail["appName"], "shop");
    assert_eq!(detail["type"], "json");
    assert_eq!(detail["desc"], "the shop settings");
    assert_eq!(detail["configTags"], "t1,t2");
    let id = &detail["id"];
    assert!(
        id.as_str().is_some_and(|s| !s.is_empty()) || id.as_u64().is_some(),
        "id: {detail}"
    );
    let created = detail["createTime"]
        .as_i64()
        .expect("createTime is a number");
    let modified = detail["modifyTime"]
        .as_i64()
        .expect("modifyTime is a number");
    assert!(created > 1_600_000_000_000, "createTime in ms: {created}");
    assert!(modified >= created);

    // An update keeps id and createTime, moves modifyTime, changes md5.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let updated = "{\"a\": 2}";
    http.publish(
        "",
        "DEFAULT_GROUP",
        "app.json",
        updated,
        &[("type", "json")],
    )
    .await
    .expect_status(200, "update app.json");
    let reply = http
        .send(Req::get(V1_CONFIGS).query(&[
            ("dataId", "app.json"),
            ("group", "DEFAULT_GROUP"),
            ("tenant", ""),
            ("show", "all"),
        ]))
        .await;
    let after = reply.json();
    assert_eq!(after["id"], detail["id"]);
    assert_eq!(after["createTime"], detail["createTime"]);
    assert!(after["modifyTime"].as_i64().unwrap() > modified, "{after}");
    assert_eq!(after["md5"], md5_hex(updated));
    assert_eq!(after["content"], updated);

    // show=all of a missing config is a 404.
    let reply = http
        .send(Req::get(V1_CONFIGS).query(&[
            ("dataId", "missing.json"),
            ("group", "DEFAULT_GROUP"),
            ("tenant", ""),
            ("show", "all"),
        ]))
        .await;
    assert!(
        reply.status == 404 || (reply.status == 200 && reply.body.is_empty()),
        "show=all of a missing config: {} {:?}",
        reply.status,
        reply.text()
    );
}

#[tokio::test]
async fn parameters_in_query_string_and_form_are_both_accepted() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;

    // Everything in the query string of a POST, no body (as some clients do).
    let reply = http
        .send(Req::post(V1_CONFIGS).with_token().query(&[
            ("dataId", "q.properties"),
            ("group", "G1"),
            ("tenant", ""),
            ("content", "a=1\nb=2"),
            ("type", "properties"),
        ]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    assert_eq!(
        http.content("", "G1", "q.properties").await.as_deref(),
        Some("a=1\nb=2")
    );

    // Split between query string and form body.
    let reply = http
        .send(
            Req::post(V1_CONFIGS)
                .query(&[("dataId", "split.txt"), ("group", "G1")])
                .with_credentials()
                .form(&[("content", "split content"), ("tenant", "")])
                .form(&AUTH_NOISE),
        )
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    assert_eq!(
        http.content("", "G1", "split.txt").await.as_deref(),
        Some("split content")
    );

    // DELETE with a form body instead of a query string.
    let reply = http
        .send(Req::delete(V1_CONFIGS).form(&[
            ("dataId", "split.txt"),
            ("group", "G1"),
            ("tenant", ""),
            ("username", "nacos"),
            ("password", "nacos"),
        ]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    assert_eq!(http.content("", "G1", "split.txt").await, None);

    // A form body exactly as the Java client's HTTP agent sends it, with a
    // charset in the Content-Type and the token in the body.
    let content = "server:\n  port: 8080 # 端口\n  name: a+b & c=d*e%f\n";
    let body = java_form(&[
        ("dataId", "java.yaml"),
        ("group", "DEFAULT_GROUP"),
        ("content", content),
        ("tenant", ""),
        ("type", "yaml"),
        ("accessToken", AUTH_NOISE[2].1),
    ]);
    let reply = http
        .send(
            Req::post(V1_CONFIGS)
                .header(
                    "Content-Type",
                    "application/x-www-form-urlencoded;charset=UTF-8",
                )
                .raw_body(body),
        )
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let reply = http.get_config("", "DEFAULT_GROUP", "java.yaml").await;
    assert_eq!(reply.text(), content);
    assert_eq!(reply.header("Content-MD5"), Some(md5_hex(content)));
    assert_eq!(reply.header("Config-Type").as_deref(), Some("yaml"));

    // GET without a tenant parameter at all is the public namespace.
    let reply = http
        .send(
            Req::get(V1_CONFIGS)
                .query(&[("dataId", "q.properties"), ("group", "G1")])
                .with_credentials(),
        )
        .await;
    reply.expect_status(200, "GET without tenant");
    assert_eq!(reply.text(), "a=1\nb=2");
}

#[tokio::test]
async fn search_paging_and_delete() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;

    for i in 1..=5 {
        let data_id = format!("svc-{i}.yaml");
        http.publish_ok("", "PAGE_GROUP", &data_id, &format!("n: {i}"))
            .await;
    }
    http.publish_ok("", "OTHER_GROUP", "svc-1.yaml", "other")
        .await;
    http.publish_ok("", "OTHER_GROUP", "unrelated.txt", "x")
        .await;

    // Accurate search: exact dataId and group.
    let page = http
        .search("accurate", "", "PAGE_GROUP", "svc-3.yaml", 1, 10)
        .await;
    assert_eq!(page["totalCount"], 1, "{page}");
    assert_eq!(page["pageNumber"], 1, "{page}");
    assert_eq!(page["pagesAvailable"], 1, "{page}");
    let item = &page["pageItems"][0];
    assert_eq!(item["dataId"], "svc-3.yaml");
    assert_eq!(item["group"], "PAGE_GROUP");
    assert_eq!(item["content"], "n: 3");
    assert_eq!(item["md5"], md5_hex("n: 3"));
    for field in ["id", "tenant", "appName", "type"] {
        assert!(
            item.get(field).is_some(),
            "search item lacks {field}: {item}"
        );
    }

    // Accurate search by dataId only spans groups.
    let page = http.search("accurate", "", "", "svc-1.yaml", 1, 10).await;
    assert_eq!(page["totalCount"], 2, "{page}");

    // Accurate search for a prefix finds nothing.
    let page = http
        .search("accurate", "", "PAGE_GROUP", "svc", 1, 10)
        .await;
    assert_eq!(page["totalCount"], 0, "{page}");
    assert_eq!(page["pageItems"], serde_json::json!([]), "{page}");

    // Blur search with a wildcard, paged by 2.
    let mut seen = Vec::new();
    for page_no in 1..=3 {
        let page = http
            .search("blur", "", "PAGE_GROUP", "svc-*", page_no, 2)
            .await;
        assert_eq!(page["totalCount"], 5, "{page}");
        assert_eq!(page["pageNumber"], page_no, "{page}");
        assert_eq!(page["pagesAvailable"], 3, "{page}");
        let ids = page_data_ids(&page);
        assert_eq!(ids.len(), if page_no < 3 { 2 } else { 1 }, "{page}");
        seen.extend(ids);
    }
    seen.sort();
    let expected: Vec<String> = (1..=5).map(|i| format!("svc-{i}.yaml")).collect();
    assert_eq!(seen, expected, "pages cover every match exactly once");

    // Past the last page: no items, totals still right.
    let page = http.search("blur", "", "PAGE_GROUP", "svc-*", 4, 2).await;
    assert_eq!(page["totalCount"], 5, "{page}");
    assert_eq!(page["pageItems"], serde_json::json!([]), "{page}");

    // Blur over groups with a wildcard; all configs with "*".
    let page = http.search("blur", "", "*_GROUP", "*.yaml", 1, 100).await;
    assert_eq!(page["totalCount"], 6, "{page}");
    let page = http.search("blur", "", "", "*", 1, 100).await;
    assert_eq!(page["totalCount"], 7, "{page}");

    // Delete answers true, also for something that is not there.
    let reply = http.delete_config("", "PAGE_GROUP", "svc-3.yaml").await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let reply = http.delete_config("", "PAGE_GROUP", "svc-3.yaml").await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let reply = http.delete_config("", "PAGE_GROUP", "never-was.yaml").await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));

    // Then GET is a 404 with Nacos' exact body.
    let reply = http.get_config("", "PAGE_GROUP", "svc-3.yaml").await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.text(), NOT_FOUND_BODY);
    let page = http.search("blur", "", "PAGE_GROUP", "svc-*", 1, 10).await;
    assert_eq!(page["totalCount"], 4, "{page}");
    assert!(!page_data_ids(&page).contains(&"svc-3.yaml".to_string()));
}

#[tokio::test]
async fn unicode_and_large_contents_round_trip_and_public_is_empty_tenant() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;

    // CJK, emoji, several kinds of line ends and characters forms like to mangle.
    let unicode = "# 配置文件\nname: 服务端 🚀✨\r\nemoji: 👩‍👩‍👧‍👦\n\ttab + plus & amp = eq % pct\n\
                   quote \"q\" 'q' \\ backslash\nend ü ß é 日本語 한국어\n\n";
    http.publish_ok("", "DEFAULT_GROUP", "unicode.yaml", unicode)
        .await;
    let reply = http.get_config("", "DEFAULT_GROUP", "unicode.yaml").await;
    reply.expect_status(200, "GET unicode.yaml");
    assert_eq!(
        reply.body,
        unicode.as_bytes(),
        "unicode content byte for byte"
    );
    assert_eq!(reply.header("Content-MD5"), Some(md5_hex(unicode)));
    let page = http
        .search("accurate", "", "DEFAULT_GROUP", "unicode.yaml", 1, 10)
        .await;
    assert_eq!(page["pageItems"][0]["content"], unicode);
    assert_eq!(page["pageItems"][0]["md5"], md5_hex(unicode));

    // Leading and trailing whitespace is content too.
    let padded = "  \n  padded value \t\r\n\n";
    http.publish_ok("", "DEFAULT_GROUP", "padded.txt", padded)
        .await;
    let reply = http.get_config("", "DEFAULT_GROUP", "padded.txt").await;
    assert_eq!(
        reply.body,
        padded.as_bytes(),
        "padded content byte for byte"
    );
    assert_eq!(reply.header("Content-MD5"), Some(md5_hex(padded)));

    // Exactly 1 MiB of mixed ASCII and multi-byte text.
    let mut big = String::with_capacity(1 << 20);
    let mut line = 0u64;
    while big.len() < (1 << 20) - 64 {
        big.push_str(&format!("line {line}: 配置 value=🚀 {}\n", line * 7919));
        line += 1;
    }
    while big.len() < 1 << 20 {
        big.push('x');
    }
    assert_eq!(big.len(), 1 << 20);
    http.publish_ok("", "DEFAULT_GROUP", "big.txt", &big).await;
    let reply = http.get_config("", "DEFAULT_GROUP", "big.txt").await;
    reply.expect_status(200, "GET big.txt");
    assert_eq!(reply.body.len(), big.len(), "size of the 1 MiB content");
    assert!(reply.body == big.as_bytes(), "1 MiB content byte for byte");
    assert_eq!(reply.header("Content-MD5"), Some(md5_hex(&big)));

    // "public" and "" are the same namespace, in both directions.
    http.publish_ok("public", "DEFAULT_GROUP", "via-public.txt", "p1")
        .await;
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "via-public.txt")
            .await
            .as_deref(),
        Some("p1")
    );
    http.publish_ok("", "DEFAULT_GROUP", "via-empty.txt", "e1")
        .await;
    assert_eq!(
        http.content("public", "DEFAULT_GROUP", "via-empty.txt")
            .await
            .as_deref(),
        Some("e1")
    );
    // An update through the other spelling replaces the same config.
    http.publish_ok("", "DEFAULT_GROUP", "via-public.txt", "p2")
        .await;
    assert_eq!(
        http.content("public", "DEFAULT_GROUP", "via-public.txt")
            .await
            .as_deref(),
        Some("p2")
    );
    assert_eq!(http.count_in("").await, 5);
    assert_eq!(http.count_in("public").await, 5);
    // Deleting through "public" deletes the "" config.
    http.delete_config("public", "DEFAULT_GROUP", "via-empty.txt")
        .await
        .expect_status(200, "delete via public");
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "via-empty.txt").await,
        None
    );
    assert_eq!(http.count_in("").await, 4);
}

// ---- CAS -------------------------------------------------------------------

#[tokio::test]
async fn cas_publish() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;

    http.publish_ok("", "DEFAULT_GROUP", "cas.txt", "v1").await;
    let md5_v1 = md5_hex("v1");

    // A stale md5: refused with Nacos' message, content unchanged.
    let stale = md5_hex("something else");
    let reply = http
        .send(
            Req::post(V1_CONFIGS)
                .with_token()
                .header("casMd5", &stale)
                .form(&[
                    ("dataId", "cas.txt"),
                    ("group", "DEFAULT_GROUP"),
                    ("content", "v2"),
                    ("tenant", ""),
                ]),
        )
        .await;
    assert_eq!(reply.status, 500, "CAS with a stale md5: {}", reply.text());
    assert_eq!(reply.text(), CAS_FAIL_BODY);
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "cas.txt")
            .await
            .as_deref(),
        Some("v1")
    );

    // The right md5: accepted.
    let reply = http
        .send(
            Req::post(V1_CONFIGS)
                .with_credentials()
                .header("casMd5", &md5_v1)
                .form(&[
                    ("dataId", "cas.txt"),
                    ("group", "DEFAULT_GROUP"),
                    ("content", "v2"),
                    ("tenant", ""),
                ]),
        )
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let reply = http.get_config("", "DEFAULT_GROUP", "cas.txt").await;
    assert_eq!(reply.text(), "v2");
    assert_eq!(reply.header("Content-MD5"), Some(md5_hex("v2")));

    // The old md5 is stale now.
    let reply = http
        .send(Req::post(V1_CONFIGS).header("casMd5", &md5_v1).form(&[
            ("dataId", "cas.txt"),
            ("group", "DEFAULT_GROUP"),
            ("content", "v3"),
            ("tenant", ""),
        ]))
        .await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.text(), CAS_FAIL_BODY);
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "cas.txt")
            .await
            .as_deref(),
        Some("v2")
    );

    // A failed CAS leaves no history row.
    let reply = http
        .send(Req::get("/nacos/v1/cs/history").query(&[
            ("search", "accurate"),
            ("dataId", "cas.txt"),
            ("group", "DEFAULT_GROUP"),
            ("tenant", ""),
            ("pageNo", "1"),
            ("pageSize", "10"),
        ]))
        .await;
    reply.expect_status(200, "history of cas.txt");
    assert_eq!(reply.json()["totalCount"], 2, "{}", reply.text());
}

// ---- beta -------------------------------------------------------------------

#[tokio::test]
async fn beta_publish_get_and_stop() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;
    let (group, data_id) = ("DEFAULT_GROUP", "gray.properties");

    http.publish_ok("", group, data_id, "mode=normal").await;

    let reply = http
        .send(
            Req::post(V1_CONFIGS)
                .with_token()
                .header("betaIps", "10.1.2.3,10.1.2.4")
                .form(&[
                    ("dataId", data_id),
                    ("group", group),
                    ("content", "mode=beta"),
                    ("tenant", ""),
                    ("type", "properties"),
                ]),
        )
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));

    let get_from = |ip: Option<&'static str>| {
        let mut req = Req::get(V1_CONFIGS).with_credentials().query(&[
            ("dataId", data_id),
            ("group", group),
            ("tenant", ""),
        ]);
        if let Some(ip) = ip {
            req = req.header("X-Forwarded-For", ip);
        }
        http.send(req)
    };

    // A beta IP gets the beta content, marked as beta.
    for ip in ["10.1.2.3", "10.1.2.4"] {
        let reply = get_from(Some(ip)).await;
        reply.expect_status(200, "GET as a beta IP");
        assert_eq!(reply.text(), "mode=beta", "{ip}");
        assert_eq!(reply.header("isBeta").as_deref(), Some("true"), "{ip}");
        assert_eq!(reply.header("Content-MD5"), Some(md5_hex("mode=beta")));
    }
    // Everyone else gets the normal content.
    for ip in [None, Some("10.9.9.9")] {
        let reply = get_from(ip).await;
        reply.expect_status(200, "GET as a normal client");
        assert_eq!(reply.text(), "mode=normal", "{ip:?}");
        assert_ne!(reply.header("isBeta").as_deref(), Some("true"), "{ip:?}");
        assert_eq!(reply.header("Content-MD5"), Some(md5_hex("mode=normal")));
    }
    // The beta did not touch the published config.
    let page = http.search("accurate", "", group, data_id, 1, 10).await;
    assert_eq!(page["pageItems"][0]["content"], "mode=normal", "{page}");

    // Stop the beta.
    let reply = http
        .send(Req::delete(V1_CONFIGS).with_token().query(&[
            ("dataId", data_id),
            ("group", group),
            ("tenant", ""),
            ("beta", "true"),
        ]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));

    // The beta IP now gets the normal content; the config still exists.
    let reply = get_from(Some("10.1.2.3")).await;
    reply.expect_status(200, "GET as the former beta IP");
    assert_eq!(reply.text(), "mode=normal");
    assert_ne!(reply.header("isBeta").as_deref(), Some("true"));
    assert_eq!(reply.header("Content-MD5"), Some(md5_hex("mode=normal")));

    // A beta of a config that has no normal release yet: only beta IPs see it.
    let reply = http
        .send(Req::post(V1_CONFIGS).header("betaIps", "10.1.2.3").form(&[
            ("dataId", "only-beta.txt"),
            ("group", group),
            ("content", "beta only"),
            ("tenant", ""),
        ]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let reply = http
        .send(
            Req::get(V1_CONFIGS)
                .header("X-Forwarded-For", "10.1.2.3")
                .query(&[
                    ("dataId", "only-beta.txt"),
                    ("group", group),
                    ("tenant", ""),
                ]),
        )
        .await;
    reply.expect_status(200, "beta-only config as the beta IP");
    assert_eq!(reply.text(), "beta only");
    assert_eq!(reply.header("isBeta").as_deref(), Some("true"));
    assert_eq!(http.content("", group, "only-beta.txt").await, None);
    assert_eq!(
        http.count_in("").await,
        1,
        "a beta is not a published config"
    );
}

// ---- history ----------------------------------------------------------------

#[tokio::test]
async fn history_insert_update_delete() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;
    let (group, data_id) = ("HIST_GROUP", "hist.yaml");

    let reply = http
        .publish("", group, data_id, "v: 1", &[("src_user", "alice")])
        .await;
    reply.expect_status(200, "insert");
    http.publish_ok("", group, data_id, "v: 2").await;
    http.delete_config("", group, data_id)
        .await
        .expect_status(200, "delete");
    // Another config, still present, for history/configs.
    http.publish_ok("", group, "kept.yaml", "kept").await;

    let reply = http
        .send(Req::get("/nacos/v1/cs/history").with_credentials().query(&[
            ("search", "accurate"),
            ("dataId", data_id),
            ("group", group),
            ("tenant", ""),
            ("pageNo", "1"),
            ("pageSize", "10"),
        ]))
        .await;
    reply.expect_status(200, "history list");
    let page = reply.json();
    assert_eq!(page["totalCount"], 3, "{page}");
    assert_eq!(page["pageNumber"], 1, "{page}");
    assert_eq!(page["pagesAvailable"], 1, "{page}");
    let rows = page["pageItems"].as_array().expect("pageItems").clone();
    assert_eq!(rows.len(), 3, "{page}");
    for row in &rows {
        for field in [
            "id",
            "lastId",
            "dataId",
            "group",
            "tenant",
            "appName",
            "md5",
            "content",
            "srcIp",
            "srcUser",
            "opType",
            "createdTime",
            "lastModifiedTime",
        ] {
            assert!(row.get(field).is_some(), "history row lacks {field}: {row}");
        }
        assert_eq!(row["dataId"], data_id);
        assert_eq!(row["group"], group);
    }
    // Newest first: D (content before the delete), U (content before the
    // update), I (the inserted content).
    let ops: Vec<&str> = rows.iter().map(|r| r["opType"].as_str().unwrap()).collect();
    assert_eq!(ops, ["D", "U", "I"], "{page}");
    let contents: Vec<&str> = rows
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["v: 2", "v: 1", "v: 1"], "{page}");
    for row in &rows {
        assert_eq!(
            row["md5"],
            md5_hex(row["content"].as_str().unwrap()),
            "{row}"
        );
    }
    let id_of = |row: &Value| -> u64 {
        match &row["id"] {
            Value::String(s) => s.parse().expect("numeric id"),
            other => other.as_u64().expect("numeric id"),
        }
    };
    let ids: Vec<u64> = rows.iter().map(id_of).collect();
    assert!(
        ids[0] > ids[1] && ids[1] > ids[2],
        "ids newest first: {ids:?}"
    );
    let (d_id, u_id, i_id) = (ids[0], ids[1], ids[2]);
    assert_eq!(rows[2]["srcUser"], "alice", "{}", rows[2]);
    assert_eq!(rows[2]["srcIp"], "127.0.0.1", "{}", rows[2]);

    // Paging the history.
    let reply = http
        .send(Req::get("/nacos/v1/cs/history").query(&[
            ("search", "accurate"),
            ("dataId", data_id),
            ("group", group),
            ("tenant", ""),
            ("pageNo", "2"),
            ("pageSize", "2"),
        ]))
        .await;
    let page2 = reply.json();
    assert_eq!(page2["totalCount"], 3, "{page2}");
    assert_eq!(page2["pagesAvailable"], 2, "{page2}");
    assert_eq!(page2["pageItems"].as_array().unwrap().len(), 1, "{page2}");
    assert_eq!(page2["pageItems"][0]["opType"], "I", "{page2}");

    // One row by nid.
    let u_id_s = u_id.to_string();
    let reply = http
        .send(
            Req::get("/nacos/v1/cs/history")
                .with_token()
                .query(&[("nid", &u_id_s)]),
        )
        .await;
    reply.expect_status(200, "history?nid");
    let row = reply.json();
    assert_eq!(id_of(&row), u_id, "{row}");
    assert_eq!(row["opType"], "U", "{row}");
    assert_eq!(row["content"], "v: 1", "{row}");
    assert_eq!(row["dataId"], data_id, "{row}");

    // The row before the delete is the update; before the update, the insert.
    let d_id_s = d_id.to_string();
    let reply = http
        .send(Req::get("/nacos/v1/cs/history/previous").query(&[("id", &d_id_s)]))
        .await;
    reply.expect_status(200, "history/previous of D");
    let prev = reply.json();
    assert_eq!(id_of(&prev), u_id, "{prev}");
    assert_eq!(prev["opType"], "U", "{prev}");
    let reply = http
        .send(Req::get("/nacos/v1/cs/history/previous").query(&[("id", &u_id_s)]))
        .await;
    reply.expect_status(200, "history/previous of U");
    assert_eq!(id_of(&reply.json()), i_id);
    // Nothing before the insert.
    let i_id_s = i_id.to_string();
    let reply = http
        .send(Req::get("/nacos/v1/cs/history/previous").query(&[("id", &i_id_s)]))
        .await;
    assert_ne!(reply.status, 200, "nothing before the first row");

    // The configs of the namespace.
    let reply = http
        .send(
            Req::get("/nacos/v1/cs/history/configs")
                .with_credentials()
                .query(&[("tenant", "")]),
        )
        .await;
    reply.expect_status(200, "history/configs");
    let configs = reply.json();
    let list = configs.as_array().expect("history/configs is an array");
    assert_eq!(list.len(), 1, "{configs}");
    assert_eq!(list[0]["dataId"], "kept.yaml", "{configs}");
    assert_eq!(list[0]["group"], group, "{configs}");
}

// ---- namespaces ---------------------------------------------------------------

#[tokio::test]
async fn namespaces_crud() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;

    let list = http.namespaces().await;
    assert!(!list.is_empty());
    let public = &list[0];
    for field in [
        "namespace",
        "namespaceShowName",
        "namespaceDesc",
        "quota",
        "configCount",
        "type",
    ] {
        assert!(
            public.get(field).is_some(),
            "namespace lacks {field}: {public}"
        );
    }
    assert_eq!(public["namespaceShowName"], "public", "{public}");
    assert!(
        public["namespace"] == "" || public["namespace"] == "public",
        "{public}"
    );
    assert_eq!(public["configCount"], 0, "{public}");

    // Create one.
    let reply = http
        .send(Req::post(NAMESPACES).with_credentials().form(&[
            ("customNamespaceId", "dev-it_1"),
            ("namespaceName", "Development"),
            ("namespaceDesc", "for the tests"),
        ]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let find = |list: &[Value], id: &str| list.iter().find(|n| n["namespace"] == id).cloned();
    let list = http.namespaces().await;
    assert_eq!(list[0]["namespaceShowName"], "public", "public stays first");
    let dev = find(&list, "dev-it_1").expect("the new namespace is listed");
    assert_eq!(dev["namespaceShowName"], "Development", "{dev}");
    assert_eq!(dev["namespaceDesc"], "for the tests", "{dev}");
    assert_eq!(dev["configCount"], 0, "{dev}");
    assert_eq!(dev["type"], 2, "{dev}");

    // Publish into it: configCount moves, public's does not.
    http.publish_ok("dev-it_1", "DEFAULT_GROUP", "in-dev.txt", "dev!")
        .await;
    http.publish_ok("", "DEFAULT_GROUP", "in-public.txt", "pub!")
        .await;
    assert_eq!(
        http.content("dev-it_1", "DEFAULT_GROUP", "in-dev.txt")
            .await
            .as_deref(),
        Some("dev!")
    );
    assert_eq!(http.content("", "DEFAULT_GROUP", "in-dev.txt").await, None);
    let list = http.namespaces().await;
    assert_eq!(find(&list, "dev-it_1").unwrap()["configCount"], 1);
    assert_eq!(list[0]["configCount"], 1, "public: {}", list[0]);
    assert_eq!(http.count_in("dev-it_1").await, 1);

    // Rename it.
    let reply = http
        .send(Req::put(NAMESPACES).form(&[
            ("namespace", "dev-it_1"),
            ("namespaceShowName", "Dev (renamed)"),
            ("namespaceDesc", "new desc"),
        ]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let dev = find(&http.namespaces().await, "dev-it_1").unwrap();
    assert_eq!(dev["namespaceShowName"], "Dev (renamed)", "{dev}");
    assert_eq!(dev["namespaceDesc"], "new desc", "{dev}");

    // Deleting it while it holds a config is refused.
    let reply = http
        .send(
            Req::delete(NAMESPACES)
                .with_credentials()
                .query(&[("namespaceId", "dev-it_1")]),
        )
        .await;
    assert!(
        (400..500).contains(&reply.status) && reply.text() != "true",
        "deleting a namespace with configs: {} {}",
        reply.status,
        reply.text()
    );
    assert!(find(&http.namespaces().await, "dev-it_1").is_some());
    assert_eq!(
        http.content("dev-it_1", "DEFAULT_GROUP", "in-dev.txt")
            .await
            .as_deref(),
        Some("dev!")
    );

    // Emptied, it can be deleted.
    http.delete_config("dev-it_1", "DEFAULT_GROUP", "in-dev.txt")
        .await
        .expect_status(200, "delete in-dev.txt");
    let reply = http
        .send(
            Req::delete(NAMESPACES)
                .with_credentials()
                .query(&[("namespaceId", "dev-it_1")]),
        )
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let list = http.namespaces().await;
    assert!(find(&list, "dev-it_1").is_none(), "{list:?}");

    // Without an id, the server makes one up.
    let reply = http
        .send(Req::post(NAMESPACES).form(&[
            ("customNamespaceId", ""),
            ("namespaceName", "Generated"),
            ("namespaceDesc", ""),
        ]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));
    let list = http.namespaces().await;
    assert_eq!(list.len(), 2, "{list:?}");
    let generated = list[1]["namespace"].as_str().unwrap().to_string();
    assert!(!generated.is_empty(), "{list:?}");
    assert_eq!(list[1]["namespaceShowName"], "Generated");
    // The same id twice, or an update of an unknown one, is refused.
    let reply = http
        .send(Req::post(NAMESPACES).form(&[
            ("customNamespaceId", &generated),
            ("namespaceName", "Again"),
            ("namespaceDesc", ""),
        ]))
        .await;
    assert_ne!(reply.status, 200, "duplicate namespace: {}", reply.text());
    let reply = http
        .send(Req::put(NAMESPACES).form(&[
            ("namespace", "no-such-ns"),
            ("namespaceShowName", "x"),
            ("namespaceDesc", ""),
        ]))
        .await;
    assert_ne!(reply.status, 200, "update of an unknown namespace");
    let reply = http
        .send(Req::delete(NAMESPACES).query(&[("namespaceId", &generated)]))
        .await;
    assert_eq!((reply.status, reply.text().as_str()), (200, "true"));

    // Publishing into an unknown namespace creates nothing.
    for unknown in ["dev-it_1", "no-such-ns"] {
        let reply = http
            .publish(unknown, "DEFAULT_GROUP", "lost.txt", "lost", &[])
            .await;
        assert_eq!(reply.status, 400, "{unknown}: {}", reply.text());
        assert_eq!(
            reply.text(),
            format!("caused: namespace not exist: {unknown};")
        );
        assert_eq!(
            http.content(unknown, "DEFAULT_GROUP", "lost.txt").await,
            None
        );
        assert_eq!(http.count_in(unknown).await, 0);
    }
    let list = http.namespaces().await;
    assert_eq!(list.len(), 1, "only public is left: {list:?}");
    assert_eq!(list[0]["configCount"], 1);
}

// ---- bad input ----------------------------------------------------------------

/// Asserts a v1 error: `status` and a `caused: ...;` body containing `needle`.
fn assert_v1_error(reply: &Reply, status: u16, needle: &str, what: &str) {
    let body = reply.text();
    assert_eq!(reply.status, status, "{what}: body {body:?}");
    assert!(
        body.starts_with("caused: ") && body.ends_with(';') && body.contains(needle),
        "{what}: body {body:?} should be `caused: ...{needle}...;`"
    );
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;
    http.publish_ok("", "DEFAULT_GROUP", "good.txt", "original")
        .await;

    // Illegal dataId characters: Nacos' exact message.
    for bad in ["bad id", "bad/id", "配置", "a#b", "x?y"] {
        let reply = http.publish("", "DEFAULT_GROUP", bad, "c", &[]).await;
        assert_eq!(reply.status, 400, "dataId {bad:?}: {}", reply.text());
        assert_eq!(reply.text(), format!("caused: invalid dataId : {bad};"));
    }
    // Too long dataId (257) and group (129); 256/128 are fine.
    let long_id = "d".repeat(257);
    let reply = http.publish("", "DEFAULT_GROUP", &long_id, "c", &[]).await;
    assert_v1_error(&reply, 400, "dataId", "dataId of 257 chars");
    let long_group = "g".repeat(129);
    let reply = http.publish("", &long_group, "x.txt", "c", &[]).await;
    assert_v1_error(&reply, 400, "group", "group of 129 chars");
    let reply = http.publish("", "bad group", "x.txt", "c", &[]).await;
    assert_v1_error(&reply, 400, "group", "group with a space");
    http.publish_ok("", &"g".repeat(128), &"d".repeat(256), "edge")
        .await;

    // Blank content, for a new key and for an existing one.
    for blank in ["", "   ", "\n\t "] {
        let reply = http
            .publish("", "DEFAULT_GROUP", "new.txt", blank, &[])
            .await;
        assert_v1_error(&reply, 400, "content", &format!("content {blank:?}"));
        let reply = http
            .publish("", "DEFAULT_GROUP", "good.txt", blank, &[])
            .await;
        assert_v1_error(&reply, 400, "content", &format!("content {blank:?}"));
    }

    // Missing parameters.
    let reply = http
        .send(Req::post(V1_CONFIGS).with_token().form(&[
            ("group", "DEFAULT_GROUP"),
            ("content", "c"),
            ("tenant", ""),
        ]))
        .await;
    assert_v1_error(&reply, 400, "dataId", "missing dataId");
    let reply = http
        .send(Req::post(V1_CONFIGS).with_token().form(&[
            ("dataId", "new.txt"),
            ("content", "c"),
            ("tenant", ""),
        ]))
        .await;
    assert_v1_error(&reply, 400, "group", "missing group");
    let reply = http
        .send(Req::post(V1_CONFIGS).with_token().form(&[
            ("dataId", "new.txt"),
            ("group", "DEFAULT_GROUP"),
            ("tenant", ""),
        ]))
        .await;
    assert_v1_error(&reply, 400, "content", "missing content");
    let reply = http
        .send(
            Req::get(V1_CONFIGS)
                .with_token()
                .query(&[("group", "DEFAULT_GROUP"), ("tenant", "")]),
        )
        .await;
    assert_v1_error(&reply, 400, "dataId", "GET without dataId");
    let reply = http
        .send(
            Req::delete(V1_CONFIGS)
                .with_token()
                .query(&[("group", "DEFAULT_GROUP"), ("tenant", "")]),
        )
        .await;
    assert_v1_error(&reply, 400, "dataId", "DELETE without dataId");

    // Bad tenant characters and a too-long tenant.
    let long_tenant = "t".repeat(129);
    for tenant in ["dev.1", "dev 1", "de@v", long_tenant.as_str()] {
        let reply = http
            .publish(tenant, "DEFAULT_GROUP", "new.txt", "c", &[])
            .await;
        assert_v1_error(&reply, 400, "tenant", &format!("tenant {tenant:?}"));
        let reply = http.get_config(tenant, "DEFAULT_GROUP", "new.txt").await;
        assert_v1_error(&reply, 400, "tenant", &format!("GET tenant {tenant:?}"));
    }

    // A bad dataId on GET and DELETE is refused too.
    let reply = http.get_config("", "DEFAULT_GROUP", "bad id").await;
    assert_v1_error(&reply, 400, "dataId", "GET bad dataId");
    let reply = http.delete_config("", "DEFAULT_GROUP", "bad id").await;
    assert_v1_error(&reply, 400, "dataId", "DELETE bad dataId");

    // Nothing changed: the good config is intact, the edge config is the only
    // new one, and nothing else was created.
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "good.txt")
            .await
            .as_deref(),
        Some("original")
    );
    assert_eq!(http.content("", "DEFAULT_GROUP", "new.txt").await, None);
    assert_eq!(http.content("", "DEFAULT_GROUP", "x.txt").await, None);
    assert_eq!(http.count_in("").await, 2);
    let list = http.namespaces().await;
    assert_eq!(list.len(), 1, "no namespace appeared: {list:?}");
}

/// A server started by this file with extra flags (the content limit).
struct OwnServer {
    child: Child,
    port: u16,
}

impl OwnServer {
    async fn start(tmp: &TempDir, extra: &[&str]) -> OwnServer {
        for attempt in 1..=3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("picking a free port")
                .port();
            let log_path = tmp.path().join(format!("own-{port}.log"));
            let log = std::fs::File::create(&log_path).expect("creating the log file");
            let mut command = Command::new(env!("CARGO_BIN_EXE_tacos"));
            for (name, _) in std::env::vars_os() {
                if name.to_string_lossy().starts_with("TACOS_") {
                    command.env_remove(name);
                }
            }
            let child = command
                .arg("--data-dir")
                .arg(tmp.path().join("own-data"))
                .arg("--http-port")
                .arg(port.to_string())
                .args(extra)
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("cloning the log handle"))
                .stderr(log)
                .spawn()
                .expect("spawning tacos");
            let mut server = OwnServer { child, port };
            match server.wait_healthy(&log_path).await {
                Ok(()) => return server,
                Err(log) if attempt < 3 && log.contains("listen") => continue,
                Err(log) => panic!("tacos {extra:?} did not start; log:\n{log}"),
            }
        }
        unreachable!()
    }

    /// Waits for `GET /health` to answer 200; `Err(log)` if the process exits.
    async fn wait_healthy(&mut self, log_path: &Path) -> Result<(), String> {
        let http = Http::new(self.port);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.child.try_wait().expect("try_wait").is_some() {
                return Err(std::fs::read_to_string(log_path).unwrap_or_default());
            }
            let ok = http
                .client
                .get(format!("{}/health", http.base))
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().as_u16() == 200);
            if ok {
                return Ok(());
            }
            assert!(
                Instant::now() < deadline,
                "tacos not healthy within 30 s; log:\n{}",
                std::fs::read_to_string(log_path).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn content_over_the_limit_is_refused() {
    let tmp = temp_dir();
    let server = OwnServer::start(&tmp, &["--max-content-size", "1024"]).await;
    let http = Http::new(server.port);

    // At the limit: fine (in bytes, multi-byte characters count as bytes).
    let at_limit = "a".repeat(1024);
    http.publish_ok("", "DEFAULT_GROUP", "limit.txt", &at_limit)
        .await;

    // One byte over: refused, the old content stays.
    let over = "b".repeat(1025);
    let reply = http
        .publish("", "DEFAULT_GROUP", "limit.txt", &over, &[])
        .await;
    assert_v1_error(&reply, 400, "content", "1025 bytes");
    let multibyte_over = "配".repeat(342); // 1026 bytes, 342 characters
    let reply = http
        .publish("", "DEFAULT_GROUP", "limit.txt", &multibyte_over, &[])
        .await;
    assert_v1_error(&reply, 400, "content", "342 CJK characters");
    let reply = http
        .publish("", "DEFAULT_GROUP", "new-limit.txt", &over, &[])
        .await;
    assert_v1_error(&reply, 400, "content", "1025 bytes, new key");
    // v2 says it in its envelope.
    let reply = http
        .send(Req::post(V2_CONFIG).form(&[
            ("dataId", "new-limit.txt"),
            ("group", "DEFAULT_GROUP"),
            ("namespaceId", ""),
            ("content", &over),
        ]))
        .await;
    assert_eq!(reply.status, 400, "v2 over the limit: {}", reply.text());
    assert_ne!(reply.json()["code"], 0);

    assert_eq!(
        http.content("", "DEFAULT_GROUP", "limit.txt")
            .await
            .as_deref(),
        Some(at_limit.as_str())
    );
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "new-limit.txt").await,
        None
    );
    assert_eq!(http.count_in("").await, 1);
}

// ---- v2 -------------------------------------------------------------------------

#[tokio::test]
async fn v2_config_and_history() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;
    let key = [("dataId", "v2.yaml"), ("group", "DEFAULT_GROUP")];

    // Not found: 404 with code 20004.
    let reply = http
        .send(
            Req::get(V2_CONFIG)
                .with_token()
                .query(&key)
                .query(&[("namespaceId", "")]),
        )
        .await;
    assert_eq!(reply.status, 404, "{}", reply.text());
    assert_eq!(reply.json()["code"], 20004, "{}", reply.text());

    // Publish (form body) and read back.
    let reply = http
        .send(Req::post(V2_CONFIG).with_credentials().form(&key).form(&[
            ("namespaceId", ""),
            ("content", "v2: 配置 🚀"),
            ("type", "yaml"),
        ]))
        .await;
    reply.expect_status(200, "v2 publish");
    assert_eq!(
        reply.json(),
        serde_json::json!({"code": 0, "message": "success", "data": true})
    );
    let reply = http
        .send(
            Req::get(V2_CONFIG)
                .with_token()
                .query(&key)
                .query(&[("namespaceId", "public")]),
        )
        .await;
    reply.expect_status(200, "v2 get");
    assert_eq!(
        reply.json(),
        serde_json::json!({"code": 0, "message": "success", "data": "v2: 配置 🚀"})
    );
    // The same config through v1.
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "v2.yaml")
            .await
            .as_deref(),
        Some("v2: 配置 🚀")
    );

    // Update through the query string.
    let reply = http
        .send(
            Req::post(V2_CONFIG)
                .query(&key)
                .query(&[("namespaceId", ""), ("content", "v2: second")]),
        )
        .await;
    assert_eq!(reply.json()["data"], true, "{}", reply.text());

    // Bad input: 400 with a non-zero code; nothing changes.
    let bad_requests = [
        vec![
            ("dataId", "bad id"),
            ("group", "DEFAULT_GROUP"),
            ("namespaceId", ""),
            ("content", "x"),
        ],
        vec![
            ("dataId", "v2.yaml"),
            ("group", "DEFAULT_GROUP"),
            ("namespaceId", ""),
            ("content", "  "),
        ],
        vec![
            ("group", "DEFAULT_GROUP"),
            ("namespaceId", ""),
            ("content", "x"),
        ],
        vec![
            ("dataId", "v2.yaml"),
            ("group", "DEFAULT_GROUP"),
            ("namespaceId", "bad.ns"),
            ("content", "x"),
        ],
    ];
    for form in &bad_requests {
        let reply = http
            .send(Req::post(V2_CONFIG).with_token().form(form))
            .await;
        assert_eq!(reply.status, 400, "{form:?}: {}", reply.text());
        let body = reply.json();
        assert!(
            body["code"].as_u64().is_some_and(|c| c != 0),
            "{form:?}: {body}"
        );
        assert!(
            body.get("message").is_some() && body.get("data").is_some(),
            "{body}"
        );
    }
    let reply = http
        .send(Req::get(V2_CONFIG).query(&[("dataId", "bad id"), ("group", "DEFAULT_GROUP")]))
        .await;
    assert_eq!(reply.status, 400, "v2 GET bad dataId: {}", reply.text());
    assert_ne!(reply.json()["code"], 0);
    assert_eq!(
        http.content("", "DEFAULT_GROUP", "v2.yaml")
            .await
            .as_deref(),
        Some("v2: second")
    );
    assert_eq!(http.count_in("").await, 1);

    // v2 history list: newest first, U then I.
    let reply = http
        .send(
            Req::get("/nacos/v2/cs/history/list")
                .with_token()
                .query(&key)
                .query(&[("namespaceId", ""), ("pageNo", "1"), ("pageSize", "10")]),
        )
        .await;
    reply.expect_status(200, "v2 history list");
    let body = reply.json();
    assert_eq!(body["code"], 0, "{body}");
    assert_eq!(body["message"], "success", "{body}");
    assert_eq!(body["data"]["totalCount"], 2, "{body}");
    let ops: Vec<&str> = body["data"]["pageItems"]
        .as_array()
        .expect("pageItems")
        .iter()
        .map(|r| r["opType"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["U", "I"], "{body}");

    // Delete, with the parameters in the query string.
    let reply = http
        .send(
            Req::delete(V2_CONFIG)
                .with_credentials()
                .query(&key)
                .query(&[("namespaceId", "")]),
        )
        .await;
    reply.expect_status(200, "v2 delete");
    assert_eq!(
        reply.json(),
        serde_json::json!({"code": 0, "message": "success", "data": true})
    );
    let reply = http
        .send(
            Req::get(V2_CONFIG)
                .query(&key)
                .query(&[("namespaceId", "")]),
        )
        .await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.json()["code"], 20004);
    assert_eq!(http.content("", "DEFAULT_GROUP", "v2.yaml").await, None);
}

// ---- health -------------------------------------------------------------------

#[tokio::test]
async fn health_routes_answer_200() {
    let tmp = temp_dir();
    let (_server, http) = start(&tmp).await;
    for path in [
        "/nacos/v1/console/health/liveness",
        "/nacos/v1/console/health/readiness",
        "/health",
    ] {
        let reply = http.send(Req::get(path)).await;
        reply.expect_status(200, path);
    }
}
