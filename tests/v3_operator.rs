//! One flow a Nacos 3 operator does with v3 calls only, against the real
//! binary: log in, create a namespace, publish, list, read from the client
//! route, change, read history and the previous version, roll back (publish
//! the old content), export, delete, import the export, clone into another
//! namespace. (tests/scenarios/v3_operator.txt checks each answer's shape;
//! this one carries a real exported zip back in.)

mod common;

use serde_json::Value;

const NS: &str = "shop-prod";
const COPY: &str = "shop-copy";
const GROUP: &str = "SHOP";

struct V3 {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl V3 {
    /// A request to `path` carrying the login's token.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .header("accessToken", &self.token)
    }

    /// Sends `request` and returns the `data` of its envelope, which must
    /// say 200 and code 0.
    async fn data(request: reqwest::RequestBuilder, what: &str) -> Value {
        let reply = request.send().await.expect("request");
        let status = reply.status();
        let body = reply.text().await.unwrap_or_default();
        assert_eq!(status, 200, "{what}: {body}");
        let v: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: {e}: {body}"));
        assert_eq!(v["code"], 0, "{what}: {body}");
        v["data"].clone()
    }

    async fn call(&self, method: reqwest::Method, path: &str, params: &[(&str, &str)]) -> Value {
        let request = if method == reqwest::Method::GET || method == reqwest::Method::DELETE {
            self.request(method, path).query(params)
        } else {
            self.request(method, path).form(params)
        };
        V3::data(request, path).await
    }

    async fn get(&self, path: &str, params: &[(&str, &str)]) -> Value {
        self.call(reqwest::Method::GET, path, params).await
    }

    async fn post(&self, path: &str, params: &[(&str, &str)]) -> Value {
        self.call(reqwest::Method::POST, path, params).await
    }

    async fn delete(&self, path: &str, params: &[(&str, &str)]) -> Value {
        self.call(reqwest::Method::DELETE, path, params).await
    }

    async fn publish(&self, data_id: &str, content: &str) {
        let done = self
            .post(
                "/nacos/v3/admin/cs/config",
                &[
                    ("namespaceId", NS),
                    ("groupName", GROUP),
                    ("dataId", data_id),
                    ("type", "properties"),
                    ("content", content),
                ],
            )
            .await;
        assert_eq!(done, true);
    }

    /// The client route's content of a config, `None` when absent.
    async fn client_read(&self, namespace: &str, data_id: &str) -> Option<String> {
        let reply = self
            .http
            .get(format!("{}/nacos/v3/client/cs/config", self.base))
            .query(&[
                ("namespaceId", namespace),
                ("groupName", GROUP),
                ("dataId", data_id),
            ])
            .send()
            .await
            .expect("request");
        let v: Value = reply.json().await.expect("json");
        (v["code"] == 0).then(|| {
            v["data"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nacos_3_operator_flow_with_v3_calls_only() {
    let tmp = common::temp_dir();
    let server = common::Server::start(&tmp).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let base = format!("http://127.0.0.1:{}", server.port());

    // Log in as Nacos 3's clients do.
    let login: Value = http
        .post(format!("{base}/nacos/v3/auth/user/login"))
        .form(&[("username", "nacos"), ("password", common::ADMIN_PASSWORD)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["accessToken"].as_str().expect("a token").to_string();
    let v3 = V3 { http, base, token };

    for (id, name) in [(NS, "Shop (prod)"), (COPY, "Shop (copy)")] {
        let created = v3
            .post(
                "/nacos/v3/admin/core/namespace",
                &[("namespaceId", id), ("namespaceName", name)],
            )
            .await;
        assert_eq!(created, true);
    }

    v3.publish("db.properties", "pool=10").await;
    v3.publish("cache.properties", "ttl=60").await;
    let list = v3
        .get(
            "/nacos/v3/admin/cs/config/list",
            &[("namespaceId", NS), ("pageNo", "1"), ("pageSize", "10")],
        )
        .await;
    assert_eq!(list["totalCount"], 2, "{list}");
    assert_eq!(
        v3.client_read(NS, "db.properties").await.as_deref(),
        Some("pool=10")
    );

    // Change, then history and the previous version, then roll back.
    v3.publish("db.properties", "pool=50").await;
    let key = [
        ("namespaceId", NS),
        ("groupName", GROUP),
        ("dataId", "db.properties"),
    ];
    let history = v3
        .get(
            "/nacos/v3/admin/cs/history/list",
            &[key[0], key[1], key[2], ("pageNo", "1"), ("pageSize", "10")],
        )
        .await;
    let rows = history["pageItems"].as_array().expect("history rows");
    assert_eq!(rows.len(), 2, "{history}");
    // As in Nacos, `previous` takes the config's id and answers its newest
    // history row: the version before the current one.
    let config = v3.get("/nacos/v3/admin/cs/config", &key).await;
    let config_id = config["id"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| config["id"].to_string());
    let previous = v3
        .get(
            "/nacos/v3/admin/cs/history/previous",
            &[key[0], key[1], key[2], ("id", &config_id)],
        )
        .await;
    let old = previous["content"]
        .as_str()
        .expect("previous content")
        .to_string();
    assert_eq!(old, "pool=10", "{previous}");
    v3.publish("db.properties", &old).await;
    assert_eq!(
        v3.client_read(NS, "db.properties").await.as_deref(),
        Some("pool=10")
    );

    // Export, delete everything, import the export.
    let exported = v3
        .request(reqwest::Method::GET, "/nacos/v3/admin/cs/config/export")
        .query(&[("namespaceId", NS)])
        .send()
        .await
        .unwrap();
    assert_eq!(exported.status(), 200);
    let zip = exported.bytes().await.unwrap().to_vec();
    assert!(zip.starts_with(b"PK"), "not a zip");
    for data_id in ["db.properties", "cache.properties"] {
        v3.delete(
            "/nacos/v3/admin/cs/config",
            &[
                ("namespaceId", NS),
                ("groupName", GROUP),
                ("dataId", data_id),
            ],
        )
        .await;
        assert_eq!(v3.client_read(NS, data_id).await, None);
    }
    let boundary = "tacos-v3-operator-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"export.zip\"\r\nContent-Type: application/zip\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&zip);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let import = v3
        .request(reqwest::Method::POST, "/nacos/v3/admin/cs/config/import")
        .query(&[("namespaceId", NS), ("policy", "ABORT")])
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body);
    let imported = V3::data(import, "import").await;
    assert_eq!(imported["succCount"], 2, "{imported}");
    assert_eq!(
        v3.client_read(NS, "db.properties").await.as_deref(),
        Some("pool=10")
    );
    assert_eq!(
        v3.client_read(NS, "cache.properties").await.as_deref(),
        Some("ttl=60")
    );

    // Clone both into the other namespace.
    let list = v3
        .get(
            "/nacos/v3/admin/cs/config/list",
            &[("namespaceId", NS), ("pageNo", "1"), ("pageSize", "10")],
        )
        .await;
    let items: Vec<Value> = list["pageItems"]
        .as_array()
        .expect("items")
        .iter()
        .map(|c| {
            serde_json::json!({
                "configId": c["id"],
                "targetGroupName": c["groupName"],
                "targetDataId": c["dataId"],
            })
        })
        .collect();
    assert_eq!(items.len(), 2, "{list}");
    let clone = v3
        .request(reqwest::Method::POST, "/nacos/v3/admin/cs/config/clone")
        .query(&[("namespaceId", COPY), ("policy", "ABORT")])
        .json(&items);
    let cloned = V3::data(clone, "clone").await;
    assert_eq!(cloned["succCount"], 2, "{cloned}");
    assert_eq!(
        v3.client_read(COPY, "db.properties").await.as_deref(),
        Some("pool=10")
    );
    assert_eq!(
        v3.client_read(COPY, "cache.properties").await.as_deref(),
        Some("ttl=60")
    );
}
