//! A private MariaDB server for the Java Nacos (MySQL) tests, and the shared fixture.
//!
//! [`MariaDb::start`] initializes a data dir in a temp dir (`mariadb-install-db`),
//! starts `mariadbd` on a free loopback port (and a socket in the same temp dir) with
//! its clock in UTC, waits until it answers, and creates a reader account with a real
//! password (`SELECT` only). Dropping the guard kills the server; the temp dir goes
//! with it. `scripts/test.sh` installs Debian's `mariadb-server` when it is missing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::server::free_port;

/// The account the tests read with (only `SELECT` granted).
pub const READER_USER: &str = "nacos_reader";
pub const READER_PASSWORD: &str = "reader-Pass-9";

/// The shared Java Nacos MySQL fixture: `$TACOS_SHARED/fixtures/nacos-mysql` if set, else
/// the first `shared/fixtures/nacos-mysql` beside the repository or one of its parents,
/// else `/work/shared/...` (as the r-nacos fixtures).
pub fn nacos_fixture() -> PathBuf {
    const FIXTURE: &str = "fixtures/nacos-mysql";
    if let Some(shared) = std::env::var_os("TACOS_SHARED") {
        return PathBuf::from(shared).join(FIXTURE);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .map(|dir| dir.join("shared").join(FIXTURE))
        .find(|candidate| candidate.join("dump.sql").is_file())
        .unwrap_or_else(|| {
            let fallback = PathBuf::from("/work/shared").join(FIXTURE);
            assert!(
                fallback.join("dump.sql").is_file(),
                "no shared/fixtures/nacos-mysql beside {} (nor {}); set TACOS_SHARED",
                manifest.display(),
                fallback.display()
            );
            fallback
        })
}

/// `expected.json` of the fixture.
pub fn nacos_expected() -> serde_json::Value {
    let path = nacos_fixture().join("expected.json");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("parse expected.json")
}

fn find_program(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"].map(PathBuf::from));
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} not found: install Debian's mariadb-server (scripts/test.sh does)")
        })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A running private `mariadbd`; killed on drop.
pub struct MariaDb {
    child: Child,
    socket: PathBuf,
    port: u16,
    dir: tempfile::TempDir,
}

impl MariaDb {
    /// Initializes and starts a server, then creates the reader account.
    pub fn start() -> MariaDb {
        let dir = tempfile::Builder::new()
            .prefix("tacos-mariadb-")
            .tempdir()
            .expect("tempdir");
        let data = dir.path().join("data");
        let socket = dir.path().join("m.sock");
        let root = is_root();
        let install = |attempt: u32| {
            let _ = fs::remove_dir_all(&data);
            let mut install = Command::new(find_program("mariadb-install-db"));
            install
                .arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg("--auth-root-authentication-method=normal")
                .arg("--skip-test-db")
                .arg("--innodb-buffer-pool-size=32M");
            if root {
                install.arg("--user=root");
            }
            let out = install.output().expect("run mariadb-install-db");
            let said = format!(
                "mariadb-install-db (attempt {attempt}) failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.success(), said)
        };
        // One more try if the bootstrap fails (seen once on a busy machine, with two
        // tests bootstrapping at the same time); the first failure is printed.
        let (ok, said) = install(1);
        if !ok {
            eprintln!("{said}");
            let (ok, said) = install(2);
            assert!(ok, "{said}");
        }

        let port = free_port();
        let log = dir.path().join("error.log");
        let mut cmd = Command::new(find_program("mariadbd"));
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.path().join("m.pid").display()))
            .arg(format!("--log-error={}", log.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--default-time-zone=+00:00")
            .arg("--skip-name-resolve")
            .arg("--innodb-buffer-pool-size=32M")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if root {
            cmd.arg("--user=root");
        }
        let child = cmd.spawn().expect("start mariadbd");
        let mut db = MariaDb {
            child,
            socket,
            port,
            dir,
        };
        db.wait_ready(&log);
        db.sql(
            None,
            &format!(
                "CREATE USER '{READER_USER}'@'127.0.0.1' IDENTIFIED BY '{READER_PASSWORD}'; \
                 CREATE USER '{READER_USER}'@'localhost' IDENTIFIED BY '{READER_PASSWORD}'; \
                 GRANT SELECT ON *.* TO '{READER_USER}'@'127.0.0.1'; \
                 GRANT SELECT ON *.* TO '{READER_USER}'@'localhost';"
            ),
        );
        db
    }

    fn wait_ready(&mut self, log: &Path) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "mariadbd exited ({status}): {}",
                    fs::read_to_string(log).unwrap_or_default()
                );
            }
            let ok = self
                .client(None)
                .arg("-e")
                .arg("SELECT 1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd did not answer: {}",
                fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The `mariadb` client as root over the socket, on `database` if given.
    fn client(&self, database: Option<&str>) -> Command {
        let mut cmd = Command::new(find_program("mariadb"));
        cmd.arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .arg("--user=root")
            .arg("--default-character-set=utf8mb4");
        if let Some(db) = database {
            cmd.arg(db);
        }
        cmd
    }

    /// Runs `sql` as root; panics with the client's message if it fails.
    pub fn sql(&self, database: Option<&str>, sql: &str) {
        let out = self
            .client(database)
            .arg("-e")
            .arg(sql)
            .output()
            .expect("run mariadb");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `sql` as root and returns its tab-separated output (no column names).
    pub fn query(&self, database: &str, sql: &str) -> String {
        let out = self
            .client(Some(database))
            .arg("--batch")
            .arg("--skip-column-names")
            .arg("-e")
            .arg(sql)
            .output()
            .expect("run mariadb");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Creates `database` (utf8mb4_bin, as the fixture's README says) and loads `dump`
    /// into it.
    pub fn load(&self, database: &str, dump: &Path) {
        self.sql(
            None,
            &format!("CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
        );
        let file = fs::File::open(dump).unwrap_or_else(|e| panic!("{}: {e}", dump.display()));
        let out = self
            .client(Some(database))
            .stdin(file)
            .output()
            .expect("run mariadb");
        assert!(
            out.status.success(),
            "loading {}: {}",
            dump.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Loads one of the fixture's dumps (`dump.sql` or `dump-3x.sql`) into `database`.
    pub fn load_fixture(&self, database: &str, dump: &str) {
        self.load(database, &nacos_fixture().join(dump));
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `mysql://` URL of `database` for the reader account.
    pub fn url(&self, database: &str) -> String {
        self.url_as(READER_USER, READER_PASSWORD, database)
    }

    pub fn url_as(&self, user: &str, password: &str, database: &str) -> String {
        format!(
            "mysql://{user}:{password}@127.0.0.1:{}/{database}",
            self.port
        )
    }

    /// The temp dir the server lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
