//! End to end: a real `tacos` (the source) filled over HTTP, `tacos-migrate --from
//! http://127.0.0.1:PORT` from it, a second `tacos` on the result, and every config,
//! namespace and history row compared over HTTP; the same over HTTPS (`--from
//! https://localhost:PORT --cacert`); and the ways a server is refused (unreachable,
//! wrong password, not a Nacos server, a certificate of no trusted CA), each with a
//! clear message and nothing written.
//!
//! Needs the `tacos` binary (see `common::server`).

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::server::{clean_command, free_port, text, Ports, Server, ADMIN_PASSWORD};
use serde_json::Value;

const PASSWORD_ENV: &str = "TACOS_MIGRATE_FROM_PASSWORD";

fn token(server: &Server) -> String {
    let (status, body) = server.login("nacos", ADMIN_PASSWORD);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("login JSON");
    v["accessToken"].as_str().expect("accessToken").to_string()
}

fn post(server: &Server, token: &str, path: &str, form: &[(&str, &str)]) {
    let reply = server
        .http
        .post(server.url(path))
        .query(&[("accessToken", token)])
        .form(form)
        .send()
        .expect("POST");
    let status = reply.status();
    assert_eq!(
        status,
        200,
        "POST {path} {form:?}: {}",
        reply.text().unwrap()
    );
}

fn get_json(server: &Server, token: &str, path: &str, query: &[(&str, &str)]) -> Value {
    let reply = server
        .http
        .get(server.url(path))
        .query(query)
        .query(&[("accessToken", token)])
        .send()
        .expect("GET");
    assert_eq!(reply.status(), 200, "GET {path} {query:?}");
    reply.json().expect("JSON")
}

fn publish(
    server: &Server,
    token: &str,
    tenant: &str,
    data_id: &str,
    content: &str,
    extra: &[(&str, &str)],
) {
    let mut form = vec![
        ("tenant", tenant),
        ("group", "DEFAULT_GROUP"),
        ("dataId", data_id),
        ("content", content),
    ];
    form.extend_from_slice(extra);
    post(server, token, "/nacos/v1/cs/configs", &form);
}

/// Every (tenant, group, dataId) the server lists, over the namespaces it lists.
fn keys(server: &Server, token: &str) -> Vec<(String, String, String)> {
    let namespaces = get_json(server, token, "/nacos/v1/console/namespaces", &[]);
    let mut out = Vec::new();
    for ns in namespaces["data"].as_array().expect("data") {
        let tenant = ns["namespace"].as_str().expect("namespace");
        let page = get_json(
            server,
            token,
            "/nacos/v1/cs/configs",
            &[
                ("search", "blur"),
                ("dataId", ""),
                ("group", ""),
                ("tenant", tenant),
                ("pageNo", "1"),
                ("pageSize", "100"),
            ],
        );
        for item in page["pageItems"].as_array().expect("pageItems") {
            out.push((
                tenant.to_string(),
                item["group"].as_str().expect("group").to_string(),
                item["dataId"].as_str().expect("dataId").to_string(),
            ));
        }
    }
    out.sort();
    out
}

/// What a config looks like over HTTP: its `show=all` fields that must survive, and its
/// history rows (id, op, md5, content, author), newest first.
fn snapshot(server: &Server, token: &str, key: &(String, String, String)) -> (Value, Vec<Value>) {
    let q = [
        ("tenant", key.0.as_str()),
        ("group", key.1.as_str()),
        ("dataId", key.2.as_str()),
    ];
    let mut all = q.to_vec();
    all.push(("show", "all"));
    let d = get_json(server, token, "/nacos/v1/cs/configs", &all);
    let config = serde_json::json!({
        "content": d["content"], "md5": d["md5"], "type": d["type"], "desc": d["desc"],
        "appName": d["appName"], "configTags": tags(&d["configTags"]),
        "createUser": d["createUser"], "modifyTime": d["modifyTime"],
    });
    let mut h = q.to_vec();
    h.extend([("search", "accurate"), ("pageNo", "1"), ("pageSize", "100")]);
    let page = get_json(server, token, "/nacos/v1/cs/history", &h);
    // Gray rows are not carried (the v1 API does not list grays).
    let rows = page["pageItems"]
        .as_array()
        .expect("pageItems")
        .iter()
        .filter(|r| r["publishType"] != "gray")
        .map(|r| {
            serde_json::json!({
                "id": r["id"], "opType": r["opType"], "md5": r["md5"],
                "content": r["content"], "srcUser": r["srcUser"],
                "lastModifiedTime": r["lastModifiedTime"],
            })
        })
        .collect();
    (config, rows)
}

/// Tags as a sorted list (Tacos keeps them as given; a migration sorts them).
fn tags(v: &Value) -> Vec<String> {
    let mut tags: Vec<String> = v
        .as_str()
        .unwrap_or_default()
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    tags.sort();
    tags
}

fn namespaces(server: &Server, token: &str) -> Vec<Value> {
    let v = get_json(server, token, "/nacos/v1/console/namespaces", &[]);
    v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|n| {
            serde_json::json!({
                "namespace": n["namespace"], "name": n["namespaceShowName"],
                "desc": n["namespaceDesc"],
            })
        })
        .collect()
}

fn migrate_cmd(
    from: &str,
    to: &Path,
    ports: Ports,
    extra: &[&str],
    password: Option<&str>,
) -> Output {
    let mut command: Command = clean_command(Path::new(env!("CARGO_BIN_EXE_tacos-migrate")));
    command
        .args(["--from", from, "--to"])
        .arg(to)
        .args(ports.args())
        .args(extra);
    if let Some(password) = password {
        command.env(PASSWORD_ENV, password);
    }
    command.output().expect("run tacos-migrate")
}

fn assert_refused(out: &Output, to: &Path, needles: &[&str], password: &str) {
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "should fail:\n{}", text(&out.stdout));
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
    }
    assert!(!stderr.contains(password), "password shown:\n{stderr}");
    assert!(!to.exists(), "{} was written", to.display());
}

#[test]
fn migrates_a_live_tacos_over_http() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src_ports = Ports::new();
    let source = Server::start(&tmp.path().join("source"), src_ports);
    let t = token(&source);

    post(
        &source,
        &t,
        "/nacos/v1/console/namespaces",
        &[
            ("customNamespaceId", "dev"),
            ("namespaceName", "Development"),
            ("namespaceDesc", "the dev namespace"),
        ],
    );
    post(
        &source,
        &t,
        "/nacos/v1/console/namespaces",
        &[
            ("customNamespaceId", "prod"),
            ("namespaceName", "Production"),
        ],
    );
    publish(
        &source,
        &t,
        "",
        "app.yaml",
        "a: 1\n",
        &[("type", "yaml"), ("desc", "the app")],
    );
    publish(
        &source,
        &t,
        "",
        "app.yaml",
        "a: 2\n",
        &[("type", "yaml"), ("desc", "the app")],
    );
    publish(
        &source,
        &t,
        "",
        "app.yaml",
        "a: 3\n",
        &[("type", "yaml"), ("desc", "the app, v3")],
    );
    publish(&source, &t, "", "plain", "no type, ünïcode ✓", &[]);
    publish(
        &source,
        &t,
        "dev",
        "db.json",
        "{\"url\": \"x\"}",
        &[
            ("type", "json"),
            ("appName", "shop"),
            ("config_tags", "b,a"),
        ],
    );
    publish(
        &source,
        &t,
        "dev",
        "db.json",
        "{\"url\": \"y\"}",
        &[
            ("type", "json"),
            ("appName", "shop"),
            ("config_tags", "b,a"),
        ],
    );
    publish(
        &source,
        &t,
        "dev",
        "gone.properties",
        "k=v",
        &[("type", "properties")],
    );
    let reply = source
        .http
        .delete(source.url("/nacos/v1/cs/configs"))
        .query(&[
            ("accessToken", t.as_str()),
            ("tenant", "dev"),
            ("group", "DEFAULT_GROUP"),
            ("dataId", "gone.properties"),
        ])
        .send()
        .expect("DELETE");
    assert_eq!(reply.status(), 200);
    publish(
        &source,
        &t,
        "prod",
        "app.yaml",
        "a: prod\n",
        &[("type", "yaml"), ("desc", "prod app")],
    );

    // A beta: its history rows are gray ones, left out with a note.
    let reply = source
        .http
        .post(source.url("/nacos/v1/cs/configs"))
        .query(&[("accessToken", t.as_str())])
        .header("betaIps", "10.0.0.7")
        .form(&[
            ("tenant", "prod"),
            ("group", "DEFAULT_GROUP"),
            ("dataId", "app.yaml"),
            ("content", "a: beta\n"),
            ("type", "yaml"),
        ])
        .send()
        .expect("POST beta");
    assert_eq!(reply.status(), 200);

    // Migrate: the password from the environment.
    let to = tmp.path().join("target");
    let dst_ports = Ports::new();
    let from = format!("http://127.0.0.1:{}", src_ports.http);
    let out = migrate_cmd(
        &from,
        &to,
        dst_ports,
        &["--from-username", "nacos"],
        Some(ADMIN_PASSWORD),
    );
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "tacos-migrate failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(!stdout.contains(ADMIN_PASSWORD), "{stdout}");
    assert!(
        stdout.contains("users not carried: the API does not expose password hashes"),
        "{stdout}"
    );

    assert!(stdout.contains("gray history row(s)"), "{stdout}");
    assert!(
        stdout.contains("gray versions (betas, tag grays) are not carried"),
        "{stdout}"
    );

    let target = Server::start(&to, dst_ports);
    let t2 = token(&target);
    assert_eq!(namespaces(&source, &t), namespaces(&target, &t2));
    let keys_src = keys(&source, &t);
    assert_eq!(keys_src.len(), 4, "{keys_src:?}");
    assert_eq!(keys_src, keys(&target, &t2));
    for key in &keys_src {
        let (config, rows) = snapshot(&source, &t, key);
        let (config2, rows2) = snapshot(&target, &t2, key);
        assert_eq!(config, config2, "{key:?}");
        assert_eq!(rows, rows2, "history of {key:?}");
        assert!(!rows.is_empty(), "{key:?}");
    }
    let (app, rows) = snapshot(
        &source,
        &t,
        &(String::new(), "DEFAULT_GROUP".into(), "app.yaml".into()),
    );
    assert_eq!(app["desc"], "the app, v3");
    assert_eq!(rows.len(), 3);
    // The deleted config stays deleted.
    let gone = target
        .http
        .get(target.url("/nacos/v1/cs/configs"))
        .query(&[
            ("accessToken", t2.as_str()),
            ("tenant", "dev"),
            ("group", "DEFAULT_GROUP"),
            ("dataId", "gone.properties"),
        ])
        .send()
        .expect("GET");
    assert_eq!(gone.status(), 404);
    // The source was only read: its configs and history are as they were.
    assert_eq!(keys(&source, &t), keys_src);

    // Refusals, with the source still up.
    let wrong = "not-the-password";
    let to = tmp.path().join("wrong-password");
    let out = migrate_cmd(
        &from,
        &to,
        Ports::new(),
        &["--from-username", "nacos", "--from-password", wrong],
        None,
    );
    assert_refused(
        &out,
        &to,
        &["refused the login of user \"nacos\"", "HTTP 403", &from],
        wrong,
    );
    drop(source);
}

#[test]
fn migrates_a_live_tacos_over_https_trusting_cacert() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let pki = tmp.path().join("pki");
    std::fs::create_dir(&pki).expect("pki dir");
    common::server::write_pki(&pki);
    let src_ports = Ports::new();
    let source = Server::start_tls(&tmp.path().join("source"), src_ports, &pki);
    let t = token(&source);
    publish(&source, &t, "", "app.yaml", "a: 1\n", &[("type", "yaml")]);
    publish(&source, &t, "", "app.yaml", "a: 2\n", &[("type", "yaml")]);
    publish(&source, &t, "", "plain", "over TLS ✓", &[]);

    let from = format!("https://localhost:{}", src_ports.http);
    let ca = pki.join("ca.crt").display().to_string();
    let other_ca = pki.join("other-ca.crt").display().to_string();

    // A certificate no trusted CA signed is refused, naming the flag; nothing is written.
    for extra in [vec![], vec!["--cacert", other_ca.as_str()]] {
        let to = tmp.path().join("untrusted");
        let mut args = vec!["--from-username", "nacos"];
        args.extend(&extra);
        let out = migrate_cmd(&from, &to, Ports::new(), &args, Some(ADMIN_PASSWORD));
        assert_refused(
            &out,
            &to,
            &["cannot reach", &from, "certificate", "--cacert"],
            ADMIN_PASSWORD,
        );
    }
    // --cacert is for https only.
    let to = tmp.path().join("plain");
    let plain = format!("http://127.0.0.1:{}", src_ports.http);
    let out = migrate_cmd(&plain, &to, Ports::new(), &["--cacert", &ca], None);
    assert_refused(
        &out,
        &to,
        &["--cacert is for an https:// server"],
        "no-password",
    );

    let to = tmp.path().join("target");
    let dst_ports = Ports::new();
    let out = migrate_cmd(
        &from,
        &to,
        dst_ports,
        &["--from-username", "nacos", "--cacert", &ca],
        Some(ADMIN_PASSWORD),
    );
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "tacos-migrate failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    let target = Server::start(&to, dst_ports);
    let t2 = token(&target);
    let keys_src = keys(&source, &t);
    assert_eq!(keys_src.len(), 2, "{keys_src:?}");
    assert_eq!(keys_src, keys(&target, &t2));
    for key in &keys_src {
        assert_eq!(
            snapshot(&source, &t, key),
            snapshot(&target, &t2, key),
            "{key:?}"
        );
    }
}

#[test]
fn refuses_an_unreachable_server() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let to = tmp.path().join("target");
    let from = format!("http://127.0.0.1:{}", free_port());
    let out = migrate_cmd(
        &from,
        &to,
        Ports::new(),
        &["--from-username", "nacos"],
        Some("secret-pw"),
    );
    assert_refused(&out, &to, &["cannot reach", &from], "secret-pw");
}

/// A server answering every request with an HTML 404 page.
fn not_nacos_server() -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html><body><h1>Not Found</h1></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, handle)
}

#[test]
fn refuses_a_server_that_is_not_nacos() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let to: PathBuf = tmp.path().join("target");
    let (port, _server) = not_nacos_server();
    let from = format!("http://127.0.0.1:{port}");
    let out = migrate_cmd(&from, &to, Ports::new(), &[], None);
    assert_refused(
        &out,
        &to,
        &[
            "does not look like a Nacos-compatible server",
            "/nacos/v1/console/namespaces",
            "HTTP 404",
        ],
        "(no password)",
    );
}

// ---- a Java Nacos-shaped server -------------------------------------------------------

/// Nacos' default `nacos` user: the BCrypt hash of `nacos` in its schema scripts.
const NACOS_HASH: &str = "$2a$10$EuWPZHzz32dJN7jexM34MOeYirDdFAZm2kuWj7VEOJhhZkDrxfvUu";

fn md5_hex(text: &str) -> String {
    format!("{:x}", md5::compute(text.as_bytes()))
}

/// The answer of a Java Nacos 2.x/3.x to `method path?query` (3.x namespaces: public is
/// `public`; history lists without content, details by `nid`; times as epoch ms and
/// op types padded as the `CHAR(10)` column holds them; user hashes listed).
fn java_nacos_answer(
    method: &str,
    path: &str,
    q: &std::collections::BTreeMap<String, String>,
) -> (u16, String) {
    let p = |name: &str| q.get(name).map(String::as_str).unwrap_or("");
    let page = |items: Value| {
        serde_json::json!({"totalCount": items.as_array().map_or(0, Vec::len),
            "pageNumber": 1, "pagesAvailable": 1, "pageItems": items})
        .to_string()
    };
    let (a1, a2) = ("a: 1\n", "a: 2\n");
    match (method, path) {
        ("POST", "/nacos/v1/auth/login") => (
            200,
            r#"{"accessToken":"tok-1","tokenTtl":18000,"globalAdmin":true}"#.to_string(),
        ),
        (_, _) if p("accessToken") != "tok-1" => (403, "no token".to_string()),
        ("GET", "/nacos/v1/console/namespaces") => (
            200,
            serde_json::json!({"code": 200, "message": null, "data": [
                {"namespace": "public", "namespaceShowName": "public", "namespaceDesc": "Public Namespace", "type": 0},
                {"namespace": "dev", "namespaceShowName": "Dev", "namespaceDesc": "the dev one", "type": 2},
            ]})
            .to_string(),
        ),
        ("GET", "/nacos/v1/cs/configs") if p("search") == "blur" => match p("tenant") {
            "" => (200, page(serde_json::json!([{"id": 1, "dataId": "a.yaml", "group": "G", "content": a2, "md5": md5_hex(a2), "type": "yaml", "tenant": ""}]))),
            "dev" => (200, page(serde_json::json!([{"id": 2, "dataId": "b.properties", "group": "G", "content": "k=v", "md5": md5_hex("k=v"), "type": "properties", "tenant": "dev"}]))),
            _ => (200, page(serde_json::json!([]))),
        },
        ("GET", "/nacos/v1/cs/configs") if p("show") == "all" => match (p("tenant"), p("dataId")) {
            ("", "a.yaml") => (200, serde_json::json!({"id": 1, "dataId": "a.yaml", "group": "G", "tenant": "", "content": a2, "md5": md5_hex(a2), "type": "yaml", "desc": "the a", "appName": "shop", "configTags": "t2,t1", "createUser": "ann", "createIp": "10.0.0.1", "createTime": 1714993692000i64, "modifyTime": 1714993700000i64, "encryptedDataKey": ""}).to_string()),
            ("dev", "b.properties") => (200, serde_json::json!({"id": 2, "dataId": "b.properties", "group": "G", "tenant": "dev", "content": "k=v", "md5": md5_hex("k=v"), "type": "properties", "desc": null, "createTime": 1714993692000i64, "modifyTime": 1714993692000i64}).to_string()),
            _ => (404, "config data not exist".to_string()),
        },
        ("GET", "/nacos/v1/cs/history") if p("search") == "accurate" => match (p("tenant"), p("dataId")) {
            ("", "a.yaml") => (200, page(serde_json::json!([
                {"id": 12, "lastId": -1, "dataId": "a.yaml", "group": "G", "tenant": "", "md5": md5_hex(a1), "srcUser": "bob", "srcIp": "10.0.0.2", "opType": "U         ", "createdTime": 1714993700000i64, "lastModifiedTime": 1714993700000i64},
                {"id": 11, "lastId": -1, "dataId": "a.yaml", "group": "G", "tenant": "", "md5": md5_hex(a1), "srcUser": "ann", "srcIp": "10.0.0.1", "opType": "I         ", "createdTime": 1714993692000i64, "lastModifiedTime": 1714993692000i64},
            ]))),
            _ => (200, page(serde_json::json!([]))),
        },
        ("GET", "/nacos/v1/cs/history") => match p("nid") {
            "11" | "12" => (200, serde_json::json!({"id": p("nid"), "dataId": "a.yaml", "group": "G", "tenant": "", "content": a1, "md5": md5_hex(a1), "opType": if p("nid") == "11" { "I         " } else { "U         " }, "srcUser": if p("nid") == "11" { "ann" } else { "bob" }, "lastModifiedTime": if p("nid") == "11" { 1714993692000i64 } else { 1714993700000i64 }}).to_string()),
            _ => (404, "not found".to_string()),
        },
        // Java Nacos maps these lists by `search=accurate|blur` (500 without).
        ("GET", "/nacos/v1/auth/users") if p("search") == "accurate" => (200, page(serde_json::json!([{"username": "nacos", "password": NACOS_HASH}]))),
        ("GET", "/nacos/v1/auth/roles") if p("search") == "accurate" => (200, page(serde_json::json!([{"role": "ROLE_ADMIN", "username": "nacos"}]))),
        ("GET", "/nacos/v1/auth/users" | "/nacos/v1/auth/roles") => (
            500,
            "caused: Parameter conditions \"search=blur\" OR \"search=accurate\" not met".to_string(),
        ),
        _ => (404, "<html>no</html>".to_string()),
    }
}

/// Serves [`java_nacos_answer`] on a loopback port; returns the port and the requests
/// seen (`METHOD path`).
fn java_nacos_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut data = Vec::new();
            let mut buf = [0u8; 8192];
            // Headers, then the body by Content-Length.
            let (head, body_start) = loop {
                let Ok(n) = stream.read(&mut buf) else {
                    break (String::new(), 0);
                };
                if n == 0 {
                    break (String::new(), 0);
                }
                data.extend_from_slice(&buf[..n]);
                if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    break (String::from_utf8_lossy(&data[..at]).into_owned(), at + 4);
                }
            };
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            while data.len() < body_start + length {
                let Ok(n) = stream.read(&mut buf) else { break };
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buf[..n]);
            }
            let body = String::from_utf8_lossy(&data[body_start.min(data.len())..]).into_owned();
            let mut words = head.split_whitespace();
            let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            let mut q = std::collections::BTreeMap::new();
            for pair in query
                .split('&')
                .chain(body.split('&'))
                .filter(|p| !p.is_empty())
            {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                q.insert(k.to_string(), v.replace("%2F", "/"));
            }
            log.lock().unwrap().push(format!("{method} {path}"));
            let (status, answer) = java_nacos_answer(method, path, &q);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (port, seen)
}

#[test]
fn migrates_a_java_nacos_shaped_server() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (port, seen) = java_nacos_server();
    let from = format!("http://127.0.0.1:{port}/nacos");
    let to = tmp.path().join("target");
    let ports = Ports::new();
    let out = migrate_cmd(
        &from,
        &to,
        ports,
        &["--from-username", "nacos"],
        Some("nacos-pw"),
    );
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "tacos-migrate failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    // Only the login POST and GETs; each history row's content fetched by nid.
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|r| r.starts_with("GET ") || r == "POST /nacos/v1/auth/login"),
        "{seen:?}"
    );
    assert_eq!(
        seen.iter()
            .filter(|r| *r == "GET /nacos/v1/cs/history")
            .count(),
        4,
        "{seen:?}"
    );
    assert!(
        stdout.contains("users carried with their BCrypt hashes"),
        "{stdout}"
    );

    // Tacos on the result: the user logs in with the Nacos password; configs, metadata,
    // namespaces and history as the fake server had them.
    let target = Server::start(&to, ports);
    let (status, body) = target.login("nacos", "nacos");
    assert_eq!(status, 200, "{body}");
    let t: Value = serde_json::from_str(&body).expect("login JSON");
    let t = t["accessToken"].as_str().expect("token").to_string();
    let ns = namespaces(&target, &t);
    assert_eq!(ns.len(), 2, "{ns:?}");
    assert_eq!(
        ns[1],
        serde_json::json!({"namespace": "dev", "name": "Dev", "desc": "the dev one"})
    );
    let (a, rows) = snapshot(&target, &t, &(String::new(), "G".into(), "a.yaml".into()));
    assert_eq!(a["content"], "a: 2\n");
    assert_eq!(
        (&a["type"], &a["desc"], &a["appName"]),
        (&"yaml".into(), &"the a".into(), &"shop".into())
    );
    assert_eq!(a["configTags"], serde_json::json!(["t1", "t2"]));
    assert_eq!(a["createUser"], "ann");
    let ids: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap_or(""),
                r["opType"].as_str().unwrap_or(""),
                r["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(ids, [("12", "U", "a: 1\n"), ("11", "I", "a: 1\n")]);
    let (b, _) = snapshot(
        &target,
        &t,
        &("dev".into(), "G".into(), "b.properties".into()),
    );
    assert_eq!(
        (&b["content"], &b["type"]),
        (&"k=v".into(), &"properties".into())
    );
}
