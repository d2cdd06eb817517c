//! `--console-port`: the web console and its API move to a port of their
//! own (with the login, user, role and admin routes its pages call), and
//! the HTTP port the applications use no longer serves them; the console
//! port does not serve the Nacos config API.

mod common;

use common::{admin_basic_auth, free_port, Server};

#[tokio::test(flavor = "multi_thread")]
async fn the_console_moves_to_its_own_port() {
    let tmp = common::temp_dir();
    let console = free_port();
    let console_arg = console.to_string();
    let server = Server::start_with_args(&tmp, &["--console-port", &console_arg]).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let on = |port: u16, path: &str| format!("http://127.0.0.1:{port}{path}");
    let get = |url: String| {
        let http = http.clone();
        async move {
            let reply = http
                .get(url)
                .header("Authorization", admin_basic_auth())
                .send()
                .await
                .expect("request");
            let status = reply.status().as_u16();
            (status, reply.text().await.unwrap_or_default())
        }
    };

    // The console port: pages, console API, login, admin.
    let (status, page) = get(on(console, "/")).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<html"), "{page}");
    let (status, body) = get(on(console, "/tacos/api/console/namespaces")).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = get(on(console, "/tacos/v1/admin/audit")).await;
    assert_eq!(status, 200, "{body}");
    let login = http
        .post(on(console, "/nacos/v1/auth/login"))
        .form(&[("username", "nacos"), ("password", common::ADMIN_PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    // ... but not the Nacos config API.
    let (status, _) = get(on(console, "/nacos/v1/cs/configs?dataId=a&group=b")).await;
    assert_eq!(status, 404);
    let (status, _) = get(on(console, "/nacos/v3/client/cs/config?dataId=a")).await;
    assert_eq!(status, 404);

    // The HTTP port: the Nacos API, not the console.
    let (status, _) = get(on(server.port(), "/")).await;
    assert_eq!(status, 404);
    let (status, _) = get(on(server.port(), "/tacos/api/console/namespaces")).await;
    assert_eq!(status, 404);
    let published = http
        .post(on(server.port(), "/nacos/v1/cs/configs"))
        .form(&[("dataId", "a"), ("group", "b"), ("content", "c")])
        .send()
        .await
        .unwrap();
    assert_eq!(published.text().await.unwrap(), "true");
    let (status, body) = get(on(server.port(), "/nacos/v1/cs/configs?dataId=a&group=b")).await;
    assert_eq!((status, body.as_str()), (200, "c"));
    // The console sees what the API wrote.
    let (status, body) = get(on(console, "/tacos/api/console/configs?dataId=a")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"dataId\":\"a\""), "{body}");
    // The dashboard is a console route; the samples route it asks the
    // other members for is an admin route, so every port serves it.
    let (status, body) = get(on(console, "/tacos/api/console/dashboard")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = get(on(server.port(), "/tacos/api/console/dashboard")).await;
    assert_eq!(status, 404);
    let (status, body) = get(on(server.port(), "/tacos/v1/admin/samples")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"fine\""), "{body}");
}

#[test]
fn a_console_port_equal_to_another_port_is_refused() {
    let tmp = common::temp_dir();
    let http = free_port().to_string();
    let data = tmp.path().join("data");
    let exited = common::run_to_exit(
        tmp.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--http-port",
            &http,
            "--console-port",
            &http,
        ],
        &[],
    );
    assert!(!exited.status.success());
    assert!(
        exited.stderr.contains("console-port") && exited.stderr.contains("must differ"),
        "{}",
        exited.stderr
    );
    assert!(!data.exists(), "a refused start touched the data dir");
}
