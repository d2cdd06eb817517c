//! `--config FILE` on the real binary: a server whose ports, data dir and
//! history limit come from the file serves with them; every setting follows
//! flag > environment > file > default; a bad file stops the start with the
//! problem (and the file) named on stderr.

mod common;

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use common::{
    assert_true, data_dir, free_port, read_lossy, run_to_exit, tacos_command, temp_dir, NacosApi,
    POLL, READY_TIMEOUT, STOP_TIMEOUT,
};

/// `key = "value"` with the value quoted as TOML wants.
fn toml_string(key: &str, value: &Path) -> String {
    let value = value.to_str().expect("temp paths are UTF-8");
    format!("{key} = {}\n", toml::Value::from(value))
}

/// Writes `text` to `name` in `dir` and returns its path.
fn write_config(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writing the config file");
    path
}

/// A `tacos --config FILE` process, killed if still running when dropped.
struct Running {
    child: Option<Child>,
    log: PathBuf,
}

impl Running {
    fn log(&self) -> String {
        read_lossy(&self.log)
    }

    /// Exit status if it has exited.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        child.try_wait().expect("waiting on tacos")
    }

    /// SIGTERM, then waits (bounded) for the exit.
    async fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = libc::pid_t::try_from(child.id()).expect("pid fits pid_t");
        // SAFETY: kill(2) on our own child, not reaped yet (we hold its Child).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().expect("waiting on tacos") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "tacos did not stop within {STOP_TIMEOUT:?}; log:\n{}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `tacos --config <file>` where the file sets the ports (free ones),
/// the data dir and the history limit, and waits until `/health` is 200.
/// Retries with fresh ports if one was taken meanwhile.
async fn start_from_file(dir: &Path, history_limit: u32) -> (Running, NacosApi) {
    const ATTEMPTS: usize = 3;
    for attempt in 1..=ATTEMPTS {
        let port = free_port();
        let text = format!(
            "# set by the test\n{}http-port = {port}\ngrpc-port = {}\ncluster_port = {}\nhistory-limit = {history_limit}\n",
            toml_string("data-dir", &dir.join("data")),
            free_port(),
            free_port(),
        );
        let config = write_config(dir, &format!("tacos-{attempt}.toml"), &text);
        let log = dir.join(format!("tacos-{attempt}.log"));
        let out = File::create(&log).expect("creating the log file");
        let err = out.try_clone().expect("cloning the log file handle");
        let child = tacos_command()
            .arg("--config")
            .arg(&config)
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawning tacos");
        let mut running = Running {
            child: Some(child),
            log,
        };
        let api = NacosApi::new(port);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = running.exited() {
                let log = running.log();
                if attempt < ATTEMPTS && log.contains("cannot listen on") {
                    eprintln!("a port was taken, retrying: {log}");
                    break;
                }
                panic!("tacos --config exited ({status}) before serving; log:\n{log}");
            }
            if matches!(api.health().await, Ok(reply) if reply.status == 200) {
                return (running, api);
            }
            if Instant::now() > deadline {
                panic!(
                    "tacos --config not healthy on port {port} within {READY_TIMEOUT:?}; log:\n{}",
                    running.log()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_with_ports_data_dir_and_history_limit_from_the_file() {
    let tmp = temp_dir();
    let (mut server, api) = start_from_file(tmp.path(), 2).await;
    assert!(
        data_dir(&tmp).join("LOCK").exists(),
        "the data dir from the file is not in use; log:\n{}",
        server.log()
    );
    for version in 1..=5 {
        let content = format!("version: {version}");
        assert_true(
            api.publish("app.yaml", "DEFAULT_GROUP", "", &content).await,
            "publish",
        )
        .await;
    }
    let (status, body, _) = api.get("app.yaml", "DEFAULT_GROUP", "").await;
    assert_eq!((status.as_u16(), body.as_str()), (200, "version: 5"));
    let history = api.history("app.yaml", "DEFAULT_GROUP", "", 1, 100).await;
    assert_eq!(
        history.total_count, 2,
        "history-limit = 2 from the file should keep 2 rows: {history:?}"
    );
    assert!(server.stop().await.success(), "log:\n{}", server.log());
}

/// Runs the binary with `args` and `envs` until it exits (bounded) and
/// checks it failed, naming `expected` on stderr, without touching `data`.
fn refused(dir: &Path, args: &[OsString], envs: &[(&str, &str)], data: &Path, expected: &[&str]) {
    let exited = run_to_exit(dir, args, envs);
    let case = format!("args {args:?} env {envs:?}");
    assert!(!exited.status.success(), "{case} was accepted: {exited:?}");
    assert!(
        exited.status.code().is_some(),
        "{case}: exited by a signal: {exited:?}"
    );
    for text in expected {
        assert!(
            exited.stderr.contains(text),
            "{case}: stderr does not contain {text:?}: {exited:?}"
        );
    }
    assert!(!data.exists(), "{case}: the data dir was created anyway");
}

/// The file sets three settings to values the validation refuses; which one
/// is reported shows where each setting came from.
#[test]
fn flag_beats_env_beats_file_beats_default() {
    let tmp = temp_dir();
    let data = tmp.path().join("data");
    let text = format!(
        "{}http-port = {}\nhistory-limit = 0\nmax-listen-keys = 0\nsnapshot-entries = 0\n",
        toml_string("data-dir", &data),
        free_port()
    );
    let config = write_config(tmp.path(), "tacos.toml", &text);
    let with_config = |rest: &[&str]| {
        let mut args: Vec<OsString> = vec!["--config".into(), config.clone().into()];
        args.extend(rest.iter().map(OsString::from));
        args
    };
    // File beats default: the file's history-limit = 0 is what is checked.
    refused(
        tmp.path(),
        &with_config(&[]),
        &[],
        &data,
        &["invalid setting --history-limit"],
    );
    // Env beats file: TACOS_HISTORY_LIMIT=5 hides the file's 0.
    refused(
        tmp.path(),
        &with_config(&[]),
        &[("TACOS_HISTORY_LIMIT", "5")],
        &data,
        &["invalid setting --max-listen-keys"],
    );
    // Flag beats env (and file): --max-listen-keys 7 over TACOS_MAX_LISTEN_KEYS=0;
    // the file itself named through TACOS_CONFIG.
    let config_env = config.to_str().expect("UTF-8 path");
    refused(
        tmp.path(),
        &[OsString::from("--max-listen-keys"), OsString::from("7")],
        &[
            ("TACOS_CONFIG", config_env),
            ("TACOS_HISTORY_LIMIT", "5"),
            ("TACOS_MAX_LISTEN_KEYS", "0"),
        ],
        &data,
        &["invalid setting --snapshot-entries"],
    );
}

#[test]
fn bad_config_files_are_refused_with_the_problem_named() {
    let tmp = temp_dir();
    let data = tmp.path().join("data");
    let data_line = toml_string("data-dir", &data);
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "typo.toml",
            "htp-port = 9000\n",
            &["unknown setting `htp-port`", "did you mean `http-port`"],
        ),
        (
            "type.toml",
            "history-limit = \"ten\"\n",
            &["`history-limit` must be an integer", "a string (\"ten\")"],
        ),
        (
            "range.toml",
            "http-port = 123456\n",
            &["`http-port = 123456` is invalid"],
        ),
        ("syntax.toml", "http-port = = 1\n", &["is not valid TOML"]),
        // A setting that needs another names the missing one.
        (
            "requires.toml",
            "learner = true\n",
            &["required arguments were not provided: --join <ADDR>"],
        ),
    ];
    for (name, text, expected) in cases {
        let config = write_config(tmp.path(), name, &format!("{data_line}{text}"));
        let shown = config.display().to_string();
        let mut expected = expected.to_vec();
        expected.push(&shown);
        let args = [OsString::from("--config"), config.clone().into()];
        refused(tmp.path(), &args, &[], &data, &expected);
    }
    // TLS settings come in their groups (checked with the other settings).
    let config = write_config(
        tmp.path(),
        "tls.toml",
        &format!(
            "{data_line}client-cert-auth = true\ncert-file = \"tls.crt\"\nkey-file = \"tls.key\"\n"
        ),
    );
    refused(
        tmp.path(),
        &[OsString::from("--config"), config.into()],
        &[],
        &data,
        &["invalid setting --client-cert-auth: needs --trusted-ca-file"],
    );
    let missing = tmp.path().join("missing.toml");
    let shown = missing.display().to_string();
    refused(
        tmp.path(),
        &[OsString::from("--config"), missing.into()],
        &[],
        &data,
        &["cannot read config file", &shown],
    );
}

#[test]
fn help_documents_the_config_file_and_the_precedence() {
    let tmp = temp_dir();
    let exited = run_to_exit(tmp.path(), &["--help"], &[]);
    assert!(exited.status.success(), "{exited:?}");
    // clap wraps help to the terminal's width: compare with lines joined.
    let help = exited
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for text in [
        "--config <FILE>",
        "TACOS_CONFIG",
        "flag > environment > file > default",
    ] {
        assert!(
            help.contains(text),
            "--help lacks {text:?}: {}",
            exited.stdout
        );
    }
}
