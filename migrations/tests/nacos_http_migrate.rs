//! End to end: a real `tacos` (the source) filled over HTTP, `tacos-migrate --from
//! http://127.0.0.1:PORT` from it, a second `tacos` on the result, and every config,
//! namespace and history row compared over HTTP; and the ways a server is refused
//! (unreachable, wrong password, not a Nacos server), each with a clear message and
//! nothing written.
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
