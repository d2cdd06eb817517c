//! End to end: `tacos-migrate --from mysql://...` on a real MariaDB holding the shared
//! Java Nacos fixture (2.4.3 and 3.0.3 dumps), then the real `tacos` server on the result,
//! read back over HTTP against `expected.json`; and the ways a MySQL source is refused
//! (unreachable, wrong password, a table missing, a permission Tacos cannot hold), each
//! with a clear message and nothing written.
//!
//! Needs Debian's `mariadb-server` (scripts/test.sh installs it) and the `tacos` binary
//! (see `common::server`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use common::mariadb::{nacos_expected, MariaDb, READER_PASSWORD, READER_USER};
use common::server::{free_port, migrate, text, Ports, Server};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tacos_app::auth::password::{self, HashForm};

/// The fixture's permission on a group and dataId pattern
/// (`dev:DEFAULT_GROUP:config/app-*`, role `readers`), as the report lists it once
/// carried over.
const GROUP_PERMISSION: &str = "read on dev, group DEFAULT_GROUP, dataId app-*";

fn s<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

fn sha256(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// `2024-05-06 11:08:12` (the fixture's UTC) as Tacos renders history times.
fn iso(datetime: &str) -> String {
    format!("{}T{}.000+00:00", &datetime[..10], &datetime[11..])
}

/// Runs `tacos-migrate --from URL --to TO` with the node's ports and `extra`.
fn run_migrate(url: &str, to: &Path, ports: Ports, extra: &[&str]) -> std::process::Output {
    let to = to.display().to_string();
    let port_args = ports.args();
    let mut args = vec!["--from", url, "--to", &to];
    args.extend(port_args.iter().map(String::as_str));
    args.extend(extra);
    migrate(&args)
}

/// Asserts a refused migration: exit status not 0, stderr naming every `needles`, the
/// password never shown, and nothing at `to`.
fn assert_refused(out: &std::process::Output, to: &Path, needles: &[&str]) {
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "should fail:\n{}", text(&out.stdout));
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
    }
    assert!(
        !stderr.contains(READER_PASSWORD),
        "password shown:\n{stderr}"
    );
    assert!(!to.exists(), "{} was written", to.display());
}

/// `GET path?query` with `token` (as `accessToken`) and `headers`.
fn get(
    server: &Server,
    path: &str,
    token: Option<&str>,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> reqwest::blocking::Response {
    let mut request = server.http.get(server.url(path)).query(query);
    if let Some(token) = token {
        request = request.query(&[("accessToken", token)]);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// Checks every config, history row, gray, namespace and user of `expected.json`
/// against the server; `admin` is a token of an admin.
fn assert_served(server: &Server, admin: &str) {
    let exp = nacos_expected();
    let get = |path: &str, query: &[(&str, &str)], headers: &[(&str, &str)]| {
        get(server, path, Some(admin), query, headers)
    };

    for c in exp["configs"].as_array().expect("configs") {
        let (ns, group, data_id) = (s(c, "namespace"), s(c, "group"), s(c, "dataId"));
        let name = format!("{ns}/{group}/{data_id}");
        let key = [("tenant", ns), ("group", group), ("dataId", data_id)];
        let reply = get("/nacos/v1/cs/configs", &key, &[]);
        assert_eq!(reply.status(), 200, "{name}");
        let headers = reply.headers().clone();
        let body = reply.text().expect("body");
        assert_eq!(sha256(&body), s(c, "content_sha256"), "content of {name}");
        assert_eq!(headers["content-md5"], s(c, "md5"), "{name}");
        let want_type = c["type"].as_str().unwrap_or("text");
        assert_eq!(headers["config-type"], want_type, "{name}");

        // Metadata (show=all): type, app, description, tags, author, times.
        let mut query = key.to_vec();
        query.push(("show", "all"));
        let detail: Value = get("/nacos/v1/cs/configs", &query, &[])
            .json()
            .expect("show=all JSON");
        assert_eq!(s(&detail, "type"), want_type, "{name}");
        assert_eq!(
            s(&detail, "appName"),
            c["appName"].as_str().unwrap_or(""),
            "{name}"
        );
        assert_eq!(
            s(&detail, "desc"),
            c["desc"].as_str().unwrap_or(""),
            "{name}"
        );
        let tags: Vec<&str> = c["tags"]
            .as_array()
            .expect("tags")
            .iter()
            .map(|t| t.as_str().expect("tag"))
            .collect();
        assert_eq!(s(&detail, "configTags"), tags.join(","), "{name}");
        assert_eq!(s(&detail, "createUser"), s(c, "src_user"), "{name}");
        assert_eq!(s(&detail, "createIp"), s(c, "src_ip"), "{name}");
        assert_history(server, admin, c);
    }

    // Deleted: gone, its history kept (as Nacos keeps it).
    for d in exp["deleted"].as_array().expect("deleted") {
        let key = [
            ("tenant", s(d, "namespace")),
            ("group", s(d, "group")),
            ("dataId", s(d, "dataId")),
        ];
        assert_eq!(get("/nacos/v1/cs/configs", &key, &[]).status(), 404);
        assert_history(server, admin, d);
    }

    // Betas: served to their IPs only, listed by beta=true.
    for b in exp["betas"].as_array().expect("betas") {
        let (ns, group, data_id) = (s(b, "namespace"), s(b, "group"), s(b, "dataId"));
        let key = [("tenant", ns), ("group", group), ("dataId", data_id)];
        let ips: Vec<&str> = b["betaIps"]
            .as_array()
            .expect("ips")
            .iter()
            .map(|v| v.as_str().expect("ip"))
            .collect();
        for ip in &ips {
            let reply = get("/nacos/v1/cs/configs", &key, &[("X-Forwarded-For", ip)]);
            assert_eq!(reply.status(), 200);
            assert_eq!(reply.headers()["isbeta"], "true", "{data_id} for {ip}");
            let body = reply.text().expect("body");
            assert_eq!(sha256(&body), s(b, "content_sha256"), "{data_id} for {ip}");
        }
        let other = get(
            "/nacos/v1/cs/configs",
            &key,
            &[("X-Forwarded-For", "10.9.9.9")],
        );
        assert!(other.headers().get("isbeta").is_none());
        assert_ne!(sha256(&other.text().expect("body")), s(b, "content_sha256"));
        let mut query = key.to_vec();
        query.push(("beta", "true"));
        let beta: Value = get("/nacos/v1/cs/configs", &query, &[])
            .json()
            .expect("beta JSON");
        assert_eq!(s(&beta["data"], "betaIps"), ips.join(","), "{data_id}");
        assert_eq!(s(&beta["data"], "md5"), s(b, "md5"));
        // (Its appName is the config's: Tacos's beta query shows that, not the beta's.)
    }

    // Tag grays: served to reads with that tag.
    for t in exp["tag_configs"].as_array().expect("tag configs") {
        let query = [
            ("tenant", s(t, "namespace")),
            ("group", s(t, "group")),
            ("dataId", s(t, "dataId")),
            ("tag", s(t, "tag")),
        ];
        let reply = get("/nacos/v1/cs/configs", &query, &[]);
        assert_eq!(reply.status(), 200);
        assert_eq!(reply.headers()["tag"], s(t, "tag"));
        assert_eq!(sha256(&reply.text().expect("body")), s(t, "content_sha256"));
        let untagged = get("/nacos/v1/cs/configs", &query[..3], &[]);
        assert_ne!(
            sha256(&untagged.text().expect("body")),
            s(t, "content_sha256")
        );
    }

    // Users (enabled as in Nacos) and role bindings (admins show as ROLE_ADMIN).
    let page: Value = get(
        "/nacos/v1/auth/users",
        &[("pageNo", "1"), ("pageSize", "100")],
        &[],
    )
    .json()
    .expect("users JSON");
    let mut users: Vec<(String, bool, bool)> = page["pageItems"]
        .as_array()
        .expect("pageItems")
        .iter()
        .map(|u| {
            (
                s(u, "username").to_string(),
                u["enabled"].as_bool().expect("enabled"),
                u["admin"].as_bool().expect("admin"),
            )
        })
        .collect();
    users.sort();
    let mut bindings: Vec<(String, String)> = Vec::new();
    let mut want: Vec<(String, bool, bool)> = Vec::new();
    for u in exp["users"].as_array().expect("users") {
        let roles: Vec<&str> = u["roles"]
            .as_array()
            .expect("roles")
            .iter()
            .map(|r| r.as_str().expect("role"))
            .collect();
        want.push((
            s(u, "username").to_string(),
            u["enabled"].as_bool().expect("enabled"),
            roles.contains(&"ROLE_ADMIN"),
        ));
        for role in roles {
            bindings.push((role.to_string(), s(u, "username").to_string()));
        }
    }
    want.sort();
    assert_eq!(users, want);
    let page: Value = get(
        "/nacos/v1/auth/roles",
        &[("pageNo", "1"), ("pageSize", "100")],
        &[],
    )
    .json()
    .expect("roles JSON");
    let mut listed: Vec<(String, String)> = page["pageItems"]
        .as_array()
        .expect("pageItems")
        .iter()
        .map(|b| (s(b, "role").to_string(), s(b, "username").to_string()))
        .collect();
    listed.sort();
    bindings.sort();
    assert_eq!(listed, bindings);

    // Namespaces: id, name, description (public first, no namespace "public").
    let listed: Value = get("/nacos/v1/console/namespaces", &[], &[])
        .json()
        .expect("namespaces JSON");
    let listed: Vec<(String, String)> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|n| {
            (
                s(n, "namespace").to_string(),
                s(n, "namespaceDesc").to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = exp["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .map(|n| {
            (
                s(n, "id").to_string(),
                n["desc"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    // The public namespace's description is Tacos's own.
    assert_eq!(listed.len(), want.len(), "{listed:?}");
    assert_eq!(listed[0].0, "");
    assert_eq!(&listed[1..], &want[1..]);
}

/// The server's history of `c` (expected.json entry) equals `c.history`, newest first.
fn assert_history(server: &Server, admin: &str, c: &Value) {
    let (ns, group, data_id) = (s(c, "namespace"), s(c, "group"), s(c, "dataId"));
    let reply = get(
        server,
        "/nacos/v1/cs/history",
        Some(admin),
        &[
            ("search", "accurate"),
            ("tenant", ns),
            ("group", group),
            ("dataId", data_id),
            ("pageNo", "1"),
            ("pageSize", "100"),
        ],
        &[],
    );
    assert_eq!(reply.status(), 200, "history of {ns}/{group}/{data_id}");
    let page: Value = reply.json().expect("history JSON");
    let got = page["pageItems"].as_array().expect("pageItems");
    let want = c["history"].as_array().expect("history");
    assert_eq!(got.len(), want.len(), "history of {ns}/{group}/{data_id}");
    for (g, w) in got.iter().zip(want) {
        let row = format!("{ns}/{group}/{data_id} nid {}", w["nid"]);
        assert_eq!(s(g, "id"), w["nid"].to_string(), "{row}");
        assert_eq!(s(g, "opType"), s(w, "op"), "{row}");
        assert_eq!(s(g, "md5"), s(w, "md5"), "{row}");
        assert_eq!(sha256(s(g, "content")), s(w, "content_sha256"), "{row}");
        assert_eq!(
            s(g, "appName"),
            w["app_name"].as_str().unwrap_or(""),
            "{row}"
        );
        assert_eq!(s(g, "srcUser"), s(w, "src_user"), "{row}");
        assert_eq!(s(g, "srcIp"), s(w, "src_ip"), "{row}");
        assert_eq!(s(g, "lastModifiedTime"), iso(s(w, "gmt_modified")), "{row}");
    }
}

/// Every user's stored password hash, from an admin backup of the server's state.
fn stored_hashes(server: &Server) -> BTreeMap<String, String> {
    let reply = server
        .http
        .get(server.url("/tacos/v1/admin/backup"))
        .basic_auth("nacos", Some("nacos"))
        .send()
        .expect("backup");
    assert_eq!(reply.status(), 200, "backup");
    let bytes = reply.bytes().expect("backup bytes");
    let (_, state) = tacos::ops::decode_snapshot(&bytes).expect("decode backup");
    state
        .users()
        .map(|u| (u.username.clone(), u.password_hash.clone()))
        .collect()
}

fn token(body: &str) -> String {
    let login: Value = serde_json::from_str(body).expect("login JSON");
    s(&login, "accessToken").to_string()
}

#[test]
fn both_fixture_dumps_migrate_and_tacos_serves_them() {
    let db = MariaDb::start();
    let exp = nacos_expected();
    for (database, dump) in [("nacos24", "dump.sql"), ("nacos30", "dump-3x.sql")] {
        db.load_fixture(database, dump);
        let url = db.url(database);
        let tmp = tempfile::tempdir().expect("tempdir");
        let target = tmp.path().join("tacos_data");
        let ports = Ports::new();

        // The permission on a group and data id pattern moves (it used to need
        // --skip-bad); --skip-bad stays for whatever else the fixture holds.
        let started = Instant::now();
        let out = run_migrate(&url, &target, ports, &["--skip-bad"]);
        let took = started.elapsed();
        let report = text(&out.stdout);
        assert!(
            out.status.success(),
            "{dump}: {report}\n{}",
            text(&out.stderr)
        );
        eprintln!("{dump}: migrated in {took:?}");
        for want in [
            "configs:      40",
            "md5 check: 40 of 40 configs match",
            GROUP_PERMISSION,
            "tenant_capacity",
            "mysql://nacos_reader:***@",
        ] {
            assert!(report.contains(want), "{dump}: {want:?} not in:\n{report}");
        }
        assert!(!report.contains(READER_PASSWORD), "{report}");

        let server = Server::start_with(&target, ports, &["--open-api-auth"]);
        // Java Nacos' users log in with their passwords: the BCrypt hash carried over
        // verifies, and the first login replaces it with an argon2id one (a disabled
        // user is refused and keeps its hash; so does a wrong password).
        let users = exp["users"].as_array().expect("users");
        let mut tokens = BTreeMap::new();
        for u in users {
            let (name, password) = (s(u, "username"), s(u, "password"));
            assert_eq!(server.login(name, "not-the-password").0, 403, "{name}");
            let (status, body) = server.login(name, password);
            if u["enabled"].as_bool().expect("enabled") {
                assert_eq!(status, 200, "{dump}: {name}: {body}");
                tokens.insert(name, token(&body));
            } else {
                assert_eq!(status, 403, "{dump}: disabled {name} logged in: {body}");
            }
        }
        let hashes = stored_hashes(&server);
        for u in users {
            let (name, password) = (s(u, "username"), s(u, "password"));
            if u["enabled"].as_bool().expect("enabled") {
                assert_eq!(password::form(&hashes[name]), HashForm::Argon2, "{name}");
                assert!(password::verify(password, &hashes[name]), "{name}");
            } else {
                assert_eq!(hashes[name], s(u, "password_hash"), "{name}");
            }
        }
        let admin = tokens["nacos"].clone();
        assert_served(&server, &admin);

        // Rights from Nacos' roles: alice (dev-rw: dev:*:* rw) reads dev, not prod.
        let alice = &tokens["alice"];
        let dev = [
            ("tenant", "dev"),
            ("group", "APP_GROUP"),
            ("dataId", "search.yaml"),
        ];
        assert_eq!(
            get(&server, "/nacos/v1/cs/configs", Some(alice), &dev, &[]).status(),
            200
        );
        let prod = [
            ("tenant", "prod"),
            ("group", "APP_GROUP"),
            ("dataId", "orders.properties"),
        ];
        assert_eq!(
            get(&server, "/nacos/v1/cs/configs", Some(alice), &prod, &[]).status(),
            403
        );

        // The second login works against the argon2id hash, which stays as it is.
        for name in ["nacos", "alice"] {
            let password = users
                .iter()
                .find(|u| s(u, "username") == name)
                .map(|u| s(u, "password"))
                .expect("user");
            let (status, body) = server.login(name, password);
            assert_eq!(status, 200, "{dump}: second login of {name}: {body}");
        }
        assert_eq!(stored_hashes(&server), hashes, "{dump}: re-hashed twice");
        drop(server);
        let _ = tmp;
    }
}

#[test]
fn bad_mysql_sources_fail_clearly_and_write_nothing() {
    let db = MariaDb::start();
    db.load_fixture("scratch", "dump.sql");
    let tmp = tempfile::tempdir().expect("tempdir");
    let target = tmp.path().join("tacos_data");
    let ports = Ports::new();

    // Nobody listens on the port.
    let closed = free_port();
    let url = format!("mysql://{READER_USER}:{READER_PASSWORD}@127.0.0.1:{closed}/scratch");
    let out = run_migrate(&url, &target, ports, &["--skip-bad"]);
    assert_refused(
        &out,
        &target,
        &["cannot connect", &format!("127.0.0.1:{closed}/scratch")],
    );

    // A wrong password.
    let url = db.url_as(READER_USER, "wrong-password", "scratch");
    let out = run_migrate(&url, &target, ports, &["--skip-bad"]);
    assert_refused(&out, &target, &["cannot connect", "Access denied"]);
    assert!(!text(&out.stderr).contains("wrong-password"));

    // A database that does not exist.
    let out = run_migrate(&db.url("no_such_db"), &target, ports, &["--skip-bad"]);
    assert_refused(&out, &target, &["no_such_db"]);

    // A table missing.
    db.sql(Some("scratch"), "DROP TABLE `permissions`");
    let out = run_migrate(&db.url("scratch"), &target, ports, &["--skip-bad"]);
    assert_refused(&out, &target, &["not a Java Nacos database", "permissions"]);

    // A column missing.
    db.load_fixture("scratch2", "dump-3x.sql");
    db.sql(
        Some("scratch2"),
        "ALTER TABLE `his_config_info` DROP COLUMN `op_type`",
    );
    let out = run_migrate(&db.url("scratch2"), &target, ports, &["--skip-bad"]);
    assert_refused(&out, &target, &["his_config_info", "op_type"]);

    // A config a client's encryption plugin encrypted (encrypted_data_key set):
    // it moves with its key and its history, like any other (dry run).
    db.load_fixture("scratch3", "dump.sql");
    db.sql(
        Some("scratch3"),
        "UPDATE config_info SET encrypted_data_key = 'k1' \
         WHERE tenant_id = 'prod' AND data_id = 'payments.json'",
    );
    let url = db.url("scratch3");
    let out = run_migrate(&url, &target, ports, &["--dry-run"]);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert!(report.contains("configs:      40"), "{report}");
    assert!(report.contains("history rows: 66"), "{report}");
    assert!(!report.contains("encrypt"), "{report}");
    assert!(!target.exists());

    // No database in the URL.
    let url = format!(
        "mysql://{READER_USER}:{READER_PASSWORD}@127.0.0.1:{}",
        db.port()
    );
    let out = run_migrate(&url, &target, ports, &[]);
    assert_refused(&out, &target, &["no database name"]);
}
