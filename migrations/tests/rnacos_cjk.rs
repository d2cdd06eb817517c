//! Keys in other scripts moving in: migrate (a copy of) the real r-nacos 0.8.8 dir with
//! Chinese and Latin-1 dataIds, groups and namespace names (`fixtures/rnacos-0.8.8-cjk`)
//! without `--skip-bad`, start the real `tacos` on the result and check it against the
//! fixture's `expected.json` over HTTP: every config (content, md5, type), its history,
//! the deleted key, the namespace's name, the users; then the surfaces that carry such
//! keys: v1, v2 and v3 reads, blur search on non-ASCII, the v1 long-poll listener
//! (`Listening-Configs` with multibyte keys, URL-encoded answers) and a publish.
//!
//! Needs the `tacos` binary (see `common::server`).

mod common;

use std::time::Duration;

use common::server::*;
use common::{copy_data_dir_fixture, data_dir_fixture, expected_of, md5_hex};
use serde_json::Value;

const ORDER_ID: &str = "订单服务配置.yaml";
const PAY_GROUP: &str = "支付组";

/// Java's `URLDecoder.decode` of a listener answer (`+` is a space).
fn url_decode(s: &str) -> String {
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .expect("UTF-8 listener answer")
        .into_owned()
}

/// `POST /nacos/v1/cs/configs` as `nacos`: the answer's status.
fn publish(server: &Server, tenant: &str, group: &str, data_id: &str, content: &str) -> u16 {
    server
        .http
        .post(server.url("/nacos/v1/cs/configs"))
        .basic_auth("nacos", Some(ADMIN_PASSWORD))
        .form(&[
            ("dataId", data_id),
            ("group", group),
            ("tenant", tenant),
            ("content", content),
        ])
        .send()
        .expect("publish")
        .status()
        .as_u16()
}

/// A v1 long poll on the given `dataId^2group^2md5[^2tenant]^1` records: the decoded
/// answer.
fn listen(server: &Server, records: &str, timeout_ms: u64) -> String {
    let reply = server
        .http
        .post(server.url("/nacos/v1/cs/configs/listener"))
        .basic_auth("nacos", Some(ADMIN_PASSWORD))
        .header("Long-Pulling-Timeout", timeout_ms.to_string())
        .form(&[("Listening-Configs", records)])
        .send()
        .expect("listen");
    assert_eq!(reply.status(), 200);
    url_decode(reply.text().expect("listener body").trim_end())
}

/// The dataIds of a v1 search page.
fn searched(server: &Server, query: &[(&str, &str)]) -> Vec<String> {
    let mut query = query.to_vec();
    query.extend([("pageNo", "1"), ("pageSize", "100"), ("tenant", "")]);
    let reply = server.get("/nacos/v1/cs/configs", &query);
    assert_eq!(reply.status(), 200, "search {query:?}");
    let page: Value = reply.json().expect("search JSON");
    let mut ids: Vec<String> = page["pageItems"]
        .as_array()
        .expect("pageItems")
        .iter()
        .map(|item| s(item, "dataId").to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn chinese_and_latin1_keys_migrate_without_skip_bad_and_are_served() {
    let root = data_dir_fixture("rnacos-0.8.8-cjk");
    let expected = expected_of(&root);
    let (tmp, source) = copy_data_dir_fixture(&root);
    let target = tmp.path().join("tacos_data");
    let (ports, _report) = migrate_fixture_copy(
        &source,
        &target,
        &[
            "configs:      6",
            "history rows: 8",
            "Skipped: nothing",
            "md5 check: 6 of 6 configs match",
        ],
    );

    let mut server = Server::start_with(&target, ports, &["--open-api-auth"]);
    server.basic = Some(("nacos".into(), ADMIN_PASSWORD.into()));

    // Every config: content and md5, type, history (md5s and op users, newest first).
    let configs = expected["configs"].as_array().expect("configs");
    assert_eq!(configs.len(), 6);
    for c in configs {
        let (tenant, group, data_id) = (s(c, "tenant"), s(c, "group"), s(c, "dataId"));
        assert_config(&server, tenant, group, data_id, s(c, "content"));
        let all: Value = server
            .get(
                "/nacos/v1/cs/configs",
                &[
                    ("dataId", data_id),
                    ("group", group),
                    ("tenant", tenant),
                    ("show", "all"),
                ],
            )
            .json()
            .expect("show=all JSON");
        assert_eq!(all["dataId"], data_id);
        assert_eq!(all["group"], group);
        assert_eq!(all["type"], c["type"].as_str().unwrap_or("text"));
        assert_rnacos_history(&server, c);
    }

    // Deleted keys are absent; namespaces keep their names.
    assert_deleted_absent(&server, &expected);
    assert_namespaces_named(&server, &expected);

    // The users log in with their r-nacos passwords.
    for u in expected["users"].as_array().expect("users") {
        let (status, body) = server.login(s(u, "username"), s(u, "password"));
        assert_eq!(status, 200, "login of {u}: {body}");
    }

    // v2 and v3 reads of a Chinese key.
    let order = configs
        .iter()
        .find(|c| s(c, "dataId") == ORDER_ID)
        .expect("the order config");
    let v2: Value = server
        .get(
            "/nacos/v2/cs/config",
            &[("dataId", ORDER_ID), ("group", "DEFAULT_GROUP")],
        )
        .json()
        .expect("v2 JSON");
    assert_eq!(v2["data"], order["content"], "v2 read: {v2}");
    let v3: Value = server
        .get(
            "/nacos/v3/client/cs/config",
            &[("dataId", ORDER_ID), ("groupName", "DEFAULT_GROUP")],
        )
        .json()
        .expect("v3 JSON");
    assert_eq!(v3["data"]["content"], order["content"], "v3 read: {v3}");

    // Blur search on non-ASCII: `*` wildcards, dataId and group (a name
    // without `*` is matched whole, as Nacos' LIKE).
    assert_eq!(
        searched(&server, &[("search", "blur"), ("dataId", "订单")]),
        Vec::<String>::new()
    );
    assert_eq!(
        searched(&server, &[("search", "blur"), ("dataId", "订单*")]),
        [ORDER_ID]
    );
    assert_eq!(
        searched(&server, &[("search", "blur"), ("dataId", "*规则.json")]),
        ["风控规则.json"]
    );
    assert_eq!(
        searched(&server, &[("search", "blur"), ("group", "*支付*")]),
        ["payment.properties", "风控规则.json"]
    );
    assert_eq!(
        searched(
            &server,
            &[
                ("search", "accurate"),
                ("dataId", ORDER_ID),
                ("group", "DEFAULT_GROUP")
            ]
        ),
        [ORDER_ID]
    );

    // The v1 long-poll listener: a stale md5 is answered at once with the key, a
    // current one is held until a publish changes it.
    let md5 = md5_hex(s(order, "content"));
    let record = |md5: &str| format!("{ORDER_ID}\u{2}DEFAULT_GROUP\u{2}{md5}\u{1}");
    assert_eq!(
        listen(&server, &record("stale"), 30_000),
        format!("{ORDER_ID}\u{2}DEFAULT_GROUP\u{1}")
    );
    let dev_record = "größe.txt\u{2}ÜBER-Gruppe\u{2}stale\u{2}dev\u{1}";
    assert_eq!(
        listen(&server, dev_record, 30_000),
        "größe.txt\u{2}ÜBER-Gruppe\u{2}dev\u{1}"
    );
    std::thread::scope(|scope| {
        let held = scope.spawn(|| listen(&server, &record(&md5), 30_000));
        // The poll is held (an answer now would be a bug) before the publish.
        std::thread::sleep(Duration::from_millis(500));
        assert!(!held.is_finished(), "a current md5 was answered at once");
        assert_eq!(
            publish(&server, "", "DEFAULT_GROUP", ORDER_ID, "order: 2\n"),
            200
        );
        assert_eq!(
            held.join().expect("listener thread"),
            format!("{ORDER_ID}\u{2}DEFAULT_GROUP\u{1}")
        );
    });
    assert_config(&server, "", "DEFAULT_GROUP", ORDER_ID, "order: 2\n");

    // A new key in a Chinese group, and one with an emoji, refused as Java refuses it.
    assert_eq!(
        publish(&server, "dev", PAY_GROUP, "退款.yaml", "refund: on\n"),
        200
    );
    assert_config(&server, "dev", PAY_GROUP, "退款.yaml", "refund: on\n");
    assert_eq!(
        publish(&server, "", "DEFAULT_GROUP", "emoji🚀.yaml", "x: 1\n"),
        400
    );
}
