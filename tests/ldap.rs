//! LDAP logins against a real directory: Debian's `slapd`, started by the
//! test in a temp dir on loopback ports (plain + StartTLS, and ldaps) with a
//! throwaway CA and server certificate made with `openssl`, and a seeded
//! tree. `scripts/test.sh` installs `slapd`, `ldap-utils` and `openssl`;
//! without `slapd` these tests say so loudly and pass, except under CI
//! (`CI` set), where they fail.
//!
//! The tree (`dc=tacos,dc=test`):
//!
//! | entry | groups | what it shows |
//! |---|---|---|
//! | `uid=alice` | `cn=devs` | role `devs` (rw in namespace `dev`) |
//! | `uid=olga` | `cn=ops` | `ROLE_ADMIN`: an admin |
//! | `uid=carl` | none | the default role `readers` (r in `prod`) |
//! | `uid=dora` | `cn=devs` | disabled: `employeeType: disabled`, which the user filter excludes |
//! | `uid=bob` | none | also a local user, with another password: precedence |
//! | `uid=erin` | none | logs in first while the directory is down |
//!
//! Each case drives the real binary over HTTP: login ok, wrong password,
//! unknown user, disabled account, group → role mapping (what the token may
//! do), password on each request (Basic), lockout of a directory name,
//! precedence local vs directory, StartTLS and ldaps, and the directory
//! down (503 with a clear message; the local admin still logs in).

mod common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{basic_auth, free_port, temp_dir, Server, ADMIN_PASSWORD};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tempfile::TempDir;

const SUFFIX: &str = "dc=tacos,dc=test";
const SERVICE_DN: &str = "cn=tacos-svc,ou=services,dc=tacos,dc=test";
const SERVICE_PASSWORD: &str = "svc-secret-1";
const USER_FILTER: &str =
    "(&(objectClass=inetOrgPerson)(uid={username})(!(employeeType=disabled)))";

/// Where Debian installs slapd, if it is installed.
fn slapd_program() -> Option<PathBuf> {
    [
        "/usr/sbin/slapd",
        "/usr/local/sbin/slapd",
        "/usr/local/libexec/slapd",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// `None` (after a loud message) when slapd is missing outside CI.
fn slapd_or_skip(test: &str) -> Option<PathBuf> {
    match slapd_program() {
        Some(path) => Some(path),
        None if std::env::var_os("CI").is_some() => {
            panic!("{test}: slapd is not installed (scripts/test.sh installs Debian's slapd)")
        }
        None => {
            eprintln!(
                "\n!!!!! {test} SKIPPED: slapd is not installed; run scripts/test.sh \
                 (apt-get install slapd ldap-utils openssl) to run the LDAP tests !!!!!\n"
            );
            None
        }
    }
}

fn run(what: &str, command: &mut Command) {
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A throwaway CA and a server certificate for 127.0.0.1 it signed, and
/// another CA that signed nothing here.
fn make_certificates(dir: &Path) {
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    run(
        "openssl other CA",
        Command::new("openssl").args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=another CA",
            "-keyout",
            &path("other-ca.key"),
            "-out",
            &path("other-ca.pem"),
        ]),
    );
    run(
        "openssl CA",
        Command::new("openssl").args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=tacos test CA",
            "-keyout",
            &path("ca.key"),
            "-out",
            &path("ca.pem"),
        ]),
    );
    run(
        "openssl server request",
        Command::new("openssl").args([
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            &path("server.key"),
            "-out",
            &path("server.csr"),
        ]),
    );
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n\
         extendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(
        "openssl sign",
        Command::new("openssl").args([
            "x509",
            "-req",
            "-in",
            &path("server.csr"),
            "-CA",
            &path("ca.pem"),
            "-CAkey",
            &path("ca.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &path("server.ext"),
            "-out",
            &path("server.pem"),
        ]),
    );
}

fn person(uid: &str, password: &str, extra: &str) -> String {
    format!(
        "dn: uid={uid},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\n\
         sn: {uid}\nuserPassword: {password}\n{extra}\n"
    )
}

fn group(cn: &str, members: &[&str]) -> String {
    let members: String = members
        .iter()
        .map(|uid| format!("member: uid={uid},ou=people,{SUFFIX}\n"))
        .collect();
    format!("dn: cn={cn},ou=groups,{SUFFIX}\nobjectClass: groupOfNames\ncn: {cn}\n{members}\n")
}

/// A private slapd; killed on drop (the temp dir goes with it).
struct Slapd {
    child: Option<Child>,
    dir: TempDir,
    port: u16,
    ldaps_port: u16,
}

impl Slapd {
    fn start(program: &Path) -> Slapd {
        let dir = tempfile::Builder::new()
            .prefix("tacos-slapd-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        make_certificates(d);
        std::fs::create_dir(d.join("db")).unwrap();
        let conf = format!(
            "include /etc/ldap/schema/core.schema\n\
             include /etc/ldap/schema/cosine.schema\n\
             include /etc/ldap/schema/inetorgperson.schema\n\
             include /etc/ldap/schema/nis.schema\n\
             modulepath /usr/lib/ldap\n\
             moduleload back_mdb\n\
             pidfile {dir}/slapd.pid\n\
             TLSCACertificateFile {dir}/ca.pem\n\
             TLSCertificateFile {dir}/server.pem\n\
             TLSCertificateKeyFile {dir}/server.key\n\
             database mdb\n\
             maxsize 10485760\n\
             suffix \"{SUFFIX}\"\n\
             rootdn \"cn=admin,{SUFFIX}\"\n\
             rootpw admin-secret\n\
             directory {dir}/db\n",
            dir = d.display()
        );
        std::fs::write(d.join("slapd.conf"), conf).unwrap();
        let seed = [
            format!("dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: tacos\ndc: tacos\n\n"),
            format!("dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n\n"),
            format!("dn: ou=groups,{SUFFIX}\nobjectClass: organizationalUnit\nou: groups\n\n"),
            format!("dn: ou=services,{SUFFIX}\nobjectClass: organizationalUnit\nou: services\n\n"),
            format!(
                "dn: {SERVICE_DN}\nobjectClass: person\ncn: tacos-svc\nsn: svc\n\
                 userPassword: {SERVICE_PASSWORD}\n\n"
            ),
            person("alice", "alice-ldap-1", ""),
            person("olga", "olga-ldap-1", ""),
            person("carl", "carl-ldap-1", ""),
            person("dora", "dora-ldap-1", "employeeType: disabled\n"),
            person("bob", "bob-directory-1", ""),
            person("erin", "erin-ldap-1", ""),
            group("devs", &["alice", "dora"]),
            group("ops", &["olga"]),
        ]
        .concat();
        std::fs::write(d.join("seed.ldif"), seed).unwrap();
        let slapadd = program.with_file_name("slapadd");
        run(
            "slapadd",
            Command::new(slapadd)
                .arg("-f")
                .arg(d.join("slapd.conf"))
                .arg("-l")
                .arg(d.join("seed.ldif")),
        );
        let mut slapd = Slapd {
            child: None,
            dir,
            port: free_port(),
            ldaps_port: free_port(),
        };
        slapd.spawn(program);
        slapd
    }

    fn spawn(&mut self, program: &Path) {
        let d = self.dir.path();
        let log = std::fs::File::create(d.join("slapd.log")).unwrap();
        let urls = format!(
            "ldap://127.0.0.1:{}/ ldaps://127.0.0.1:{}/",
            self.port, self.ldaps_port
        );
        // -d 0: stay in the foreground (a child this test can kill), quiet.
        let child = Command::new(program)
            .arg("-f")
            .arg(d.join("slapd.conf"))
            .args(["-h", &urls, "-d", "0"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting slapd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("slapd exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "slapd did not listen: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("slapd.log")).unwrap_or_default()
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn ca(&self) -> String {
        self.dir
            .path()
            .join("ca.pem")
            .to_string_lossy()
            .into_owned()
    }

    fn other_ca(&self) -> String {
        self.dir
            .path()
            .join("other-ca.pem")
            .to_string_lossy()
            .into_owned()
    }

    fn url(&self) -> String {
        format!("ldap://127.0.0.1:{}", self.port)
    }

    fn ldaps_url(&self) -> String {
        format!("ldaps://127.0.0.1:{}", self.ldaps_port)
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The directory settings every server here uses, with `url`.
fn ldap_args(url: &str) -> Vec<String> {
    [
        "--ldap-url",
        url,
        "--ldap-bind-dn",
        SERVICE_DN,
        "--ldap-bind-password",
        SERVICE_PASSWORD,
        "--ldap-user-base",
        &format!("ou=people,{SUFFIX}"),
        "--ldap-user-filter",
        USER_FILTER,
        "--ldap-group-base",
        &format!("ou=groups,{SUFFIX}"),
        "--ldap-group-role",
        &format!("cn=devs,ou=groups,{SUFFIX}=devs;cn=ops,ou=groups,{SUFFIX}=ROLE_ADMIN"),
        "--ldap-default-role",
        "readers",
        "--ldap-timeout-ms",
        "3000",
    ]
    .map(str::to_string)
    .to_vec()
}

struct Http {
    client: reqwest::Client,
    base: String,
}

impl Http {
    fn new(server: &Server) -> Http {
        Http {
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            base: format!("http://127.0.0.1:{}", server.port()),
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (StatusCode, String) {
        let response = request.send().await.expect("request sent");
        let status = response.status();
        (status, response.text().await.expect("body"))
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    fn admin(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.request(method, path)
            .header("Authorization", basic_auth("nacos", ADMIN_PASSWORD))
    }

    async fn login(&self, user: &str, password: &str) -> (StatusCode, String) {
        self.send(
            self.request(Method::POST, "/nacos/v1/auth/login")
                .form(&[("username", user), ("password", password)]),
        )
        .await
    }

    async fn token(&self, user: &str, password: &str) -> Value {
        let (status, body) = self.login(user, password).await;
        assert_eq!(status, 200, "login {user}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    async fn admin_ok(&self, method: Method, path: &str, form: &[(&str, &str)]) {
        let (status, body) = self.send(self.admin(method, path).form(form)).await;
        assert_eq!(status, 200, "{path} {form:?}: {body}");
    }

    /// Publishes into `namespace` with `token`: the status.
    async fn publish(&self, token: &str, namespace: &str) -> StatusCode {
        let (status, _) = self
            .send(
                self.request(Method::POST, "/nacos/v1/cs/configs")
                    .query(&[("accessToken", token)])
                    .form(&[
                        ("dataId", "app.yaml"),
                        ("group", "DEFAULT_GROUP"),
                        ("tenant", namespace),
                        ("content", "a: 1"),
                    ]),
            )
            .await;
        status
    }

    /// Reads from `namespace` with `token`: the status (404: allowed, absent).
    async fn read(&self, token: &str, namespace: &str) -> StatusCode {
        let (status, _) = self
            .send(self.request(Method::GET, "/nacos/v1/cs/configs").query(&[
                ("accessToken", token),
                ("dataId", "app.yaml"),
                ("group", "DEFAULT_GROUP"),
                ("tenant", namespace),
            ]))
            .await;
        status
    }

    /// Namespaces dev and prod; role devs: rw in dev; role readers: r in prod.
    /// (A role is created by binding a user; the admin is bound and unbound,
    /// the role keeps its permissions.)
    async fn seed_roles(&self) {
        for ns in ["dev", "prod"] {
            self.admin_ok(
                Method::POST,
                "/nacos/v1/console/namespaces",
                &[("customNamespaceId", ns), ("namespaceName", ns)],
            )
            .await;
        }
        for (role, resource, action) in [("devs", "dev:*:*", "rw"), ("readers", "prod:*:*", "r")] {
            self.admin_ok(
                Method::POST,
                "/nacos/v1/auth/roles",
                &[("role", role), ("username", "nacos")],
            )
            .await;
            self.admin_ok(
                Method::POST,
                "/nacos/v1/auth/permissions",
                &[("role", role), ("resource", resource), ("action", action)],
            )
            .await;
            let (status, body) = self
                .send(
                    self.admin(Method::DELETE, "/nacos/v1/auth/roles")
                        .query(&[("role", role), ("username", "nacos")]),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
    }
}

async fn start_tacos(tmp: &TempDir, args: &[String]) -> (Server, Http) {
    let grpc = free_port().to_string();
    let mut all: Vec<&str> = vec!["--grpc-port", &grpc, "--open-api-auth"];
    all.extend(args.iter().map(String::as_str));
    let server = Server::start_with_args(tmp, &all).await;
    let http = Http::new(&server);
    (server, http)
}

#[tokio::test(flavor = "multi_thread")]
async fn directory_logins_roles_lockout_and_outage() {
    let Some(program) = slapd_or_skip("directory_logins_roles_lockout_and_outage") else {
        return;
    };
    let mut slapd = Slapd::start(&program);
    let tmp = temp_dir();
    let (server, http) = start_tacos(&tmp, &ldap_args(&slapd.url())).await;
    http.seed_roles().await;

    // Login ok: a token, not an admin; its role's rights and nothing more.
    let alice = http.token("alice", "alice-ldap-1").await;
    assert_eq!(alice["username"], "alice");
    assert_eq!(alice["globalAdmin"], false);
    let token = alice["accessToken"].as_str().unwrap();
    assert_eq!(http.publish(token, "dev").await, 200);
    assert_eq!(http.publish(token, "prod").await, 403);
    let (status, body) = http
        .send(
            http.request(Method::GET, "/tacos/v1/auth/me")
                .bearer_auth(token),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let me: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(me["permissions"]["dev"], "rw", "{me}");
    // Admin routes stay closed to her.
    let (status, _) = http
        .send(
            http.request(Method::GET, "/nacos/v1/auth/users")
                .bearer_auth(token),
        )
        .await;
    assert_eq!(status, 403);
    // The password on each request (the npm client, HTTP Basic) works too.
    let (status, body) = http
        .send(
            http.request(Method::GET, "/tacos/v1/auth/me")
                .header("Authorization", basic_auth("alice", "alice-ldap-1")),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // Wrong password, unknown user, disabled account, a name with filter
    // syntax: 403, the same answer.
    for (user, password) in [
        ("alice", "not-her-password"),
        ("zed", "whatever-1"),
        ("dora", "dora-ldap-1"),
        // Filter syntax in a name matches nothing (not every entry).
        ("a*", "alice-ldap-1"),
        ("*)(uid=*", "alice-ldap-1"),
    ] {
        let (status, body) = http.login(user, password).await;
        assert_eq!(status, 403, "{user}: {body}");
        assert_eq!(body, "unknown user!", "{user}");
    }
    // An empty password never binds (an LDAP unauthenticated bind).
    let (status, _) = http
        .send(
            http.request(Method::GET, "/tacos/v1/auth/me")
                .header("Authorization", basic_auth("alice", "")),
        )
        .await;
    assert_eq!(status, 403);

    // Group → role: ops is ROLE_ADMIN; no mapped group → the default role.
    let olga = http.token("olga", "olga-ldap-1").await;
    assert_eq!(olga["globalAdmin"], true);
    let (status, body) = http
        .send(
            http.request(Method::GET, "/nacos/v1/auth/users")
                .bearer_auth(olga["accessToken"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let carl = http.token("carl", "carl-ldap-1").await;
    let carl = carl["accessToken"].as_str().unwrap();
    assert_eq!(http.read(carl, "prod").await, 404, "allowed, nothing there");
    assert_eq!(http.publish(carl, "prod").await, 403);
    assert_eq!(http.read(carl, "dev").await, 403);
    // A role's permissions change takes effect on tokens already issued.
    http.admin_ok(
        Method::POST,
        "/nacos/v1/auth/permissions",
        &[
            ("role", "readers"),
            ("resource", "prod:*:*"),
            ("action", "rw"),
        ],
    )
    .await;
    assert_eq!(http.publish(carl, "prod").await, 200);

    // Precedence local (the default): the local bob wins, the directory's
    // password for that name does not work.
    http.admin_ok(
        Method::POST,
        "/nacos/v1/auth/users",
        &[("username", "bob"), ("password", "bob-local-1")],
    )
    .await;
    http.token("bob", "bob-local-1").await;
    let (status, _) = http.login("bob", "bob-directory-1").await;
    assert_eq!(status, 403);

    // Lockout counts directory names too: 5 failures (2 above) lock, even
    // the right password is refused, and the answer says until when.
    for _ in 0..3 {
        let (status, _) = http.login("alice", "wrong-password").await;
        assert_eq!(status, 403);
    }
    let response = http
        .request(Method::POST, "/nacos/v1/auth/login")
        .form(&[("username", "alice"), ("password", "alice-ldap-1")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body = response.text().await.unwrap();
    assert!(
        body.contains("account locked after 5 failed logins, until 20"),
        "{body}"
    );

    // The directory down: a directory login is 503 and says so; the local
    // admin (and local users) still log in; tokens already issued still work.
    // (erin has not logged in before: a pair verified in the last 5 minutes
    // is trusted without asking the directory again.)
    slapd.stop();
    let (status, body) = http.login("erin", "erin-ldap-1").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("LDAP directory cannot be reached"), "{body}");
    assert!(body.contains("local users can still log in"), "{body}");
    http.token("nacos", ADMIN_PASSWORD).await;
    http.token("bob", "bob-local-1").await;
    assert_eq!(http.publish(token, "dev").await, 200);
    // A directory outage is not a failed login: erin is not locked by it.
    for _ in 0..5 {
        let (status, _) = http.login("erin", "erin-ldap-1").await;
        assert_eq!(status, 503);
    }
    slapd.spawn(&program);
    http.token("erin", "erin-ldap-1").await;

    // Logins are counted by outcome.
    let (_, metrics) = http.send(http.request(Method::GET, "/metrics")).await;
    for outcome in ["ok", "wrong_credentials", "locked", "directory_unavailable"] {
        let series = format!("tacos_logins_total{{outcome=\"{outcome}\"}} ");
        assert!(metrics.contains(&series), "no {series}");
    }
    let log = server.log();
    assert!(!log.contains("alice-ldap-1") && !log.contains(SERVICE_PASSWORD));
}

#[tokio::test(flavor = "multi_thread")]
async fn directory_precedence_and_tls() {
    let Some(program) = slapd_or_skip("directory_precedence_and_tls") else {
        return;
    };
    let slapd = Slapd::start(&program);

    // ldaps://, the directory wins for a name both have.
    let tmp = temp_dir();
    let mut args = ldap_args(&slapd.ldaps_url());
    args.extend(
        [
            "--ldap-ca-file",
            &slapd.ca(),
            "--ldap-precedence",
            "directory",
        ]
        .map(str::to_string),
    );
    let (mut server, http) = start_tacos(&tmp, &args).await;
    http.admin_ok(
        Method::POST,
        "/nacos/v1/auth/users",
        &[("username", "bob"), ("password", "bob-local-1")],
    )
    .await;
    let bob = http.token("bob", "bob-directory-1").await;
    assert_eq!(bob["globalAdmin"], false);
    let (status, _) = http.login("bob", "bob-local-1").await;
    assert_eq!(status, 403, "the directory has bob: its password decides");
    // A name only local still logs in (the directory has no such user).
    http.token("nacos", ADMIN_PASSWORD).await;
    http.token("alice", "alice-ldap-1").await;
    server.stop().await;

    // StartTLS with the CA, then with a CA that did not sign the
    // directory's certificate: the TLS failure is a 503 naming the directory.
    let mut args = ldap_args(&slapd.url());
    args.extend(["--ldap-starttls", "--ldap-ca-file", &slapd.ca()].map(str::to_string));
    let tmp = temp_dir();
    let (mut server, http) = start_tacos(&tmp, &args).await;
    http.token("alice", "alice-ldap-1").await;
    server.stop().await;
    let mut args = ldap_args(&slapd.url());
    args.extend(["--ldap-starttls", "--ldap-ca-file", &slapd.other_ca()].map(str::to_string));
    let tmp = temp_dir();
    let (_server, http) = start_tacos(&tmp, &args).await;
    let (status, body) = http.login("alice", "alice-ldap-1").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("LDAP directory"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directory_token_from_one_node_works_on_every_node() {
    let Some(program) = slapd_or_skip("a_directory_token_from_one_node_works_on_every_node") else {
        return;
    };
    let slapd = Slapd::start(&program);
    let args = ldap_args(&slapd.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cluster = common::cluster::Cluster::start(3, &args).await;
    let http: Vec<Http> = (0..3)
        .map(|i| Http {
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            base: format!("http://127.0.0.1:{}", cluster.http_port(i)),
        })
        .collect();
    // Roles are created through node 1 (replicated); logins on node 3.
    http[0].seed_roles().await;
    let olga = http[2].token("olga", "olga-ldap-1").await;
    let alice = http[2].token("alice", "alice-ldap-1").await;
    for node in &http {
        let (status, body) = node
            .send(
                node.request(Method::GET, "/nacos/v1/auth/users")
                    .bearer_auth(olga["accessToken"].as_str().unwrap()),
            )
            .await;
        assert_eq!(status, 200, "olga on {}: {body}", node.base);
        // (A follower applies the role a moment after the leader answered.)
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, body) = node
                .send(
                    node.request(Method::GET, "/tacos/v1/auth/me")
                        .bearer_auth(alice["accessToken"].as_str().unwrap()),
                )
                .await;
            assert_eq!(status, 200, "alice on {}: {body}", node.base);
            let me: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(me["username"], "alice");
            if me["permissions"]["dev"] == "rw" {
                break;
            }
            assert!(Instant::now() < deadline, "{}: {me}", node.base);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
