//! Nacos wire compatibility as scenario scripts: `tests/scenarios/*.txt`.
//!
//! Each script runs against a fresh `tacos` node (the real binary, started
//! on a temp dir with the test admin password, see `tests/common`), one
//! `#[test]` per script (a plain test with its own Tokio runtime: the
//! goldenscript runner is synchronous). A script is a [goldenscript]:
//! blocks of commands, a `---` line, and the expected output of the block
//! below it, up to a blank line (`#` starts a comment; a command in
//! parentheses runs with its output left out):
//!
//! ```text
//! # A comment.
//! post nacos/v1/cs/configs dataId=a.yaml group=DEFAULT_GROUP content="port: 1"
//! ---
//! 200 true
//!
//! get nacos/v1/cs/configs dataId=a.yaml group=DEFAULT_GROUP [Content-MD5]
//! ---
//! 200 port: 1
//! Content-MD5: <md5 of body>
//! ```
//!
//! The expected output is not written by hand: write the commands with an
//! empty output (`---` and a blank line), run
//!
//! ```sh
//! UPDATE_GOLDENFILES=1 cargo test --test scenarios
//! ```
//!
//! and review the diff of the script (`git diff tests/scenarios`). Without
//! the variable a script whose output differs fails, naming `file:line` of
//! the first difference and writing the whole new output next to the test
//! binary's temp dir. A command that cannot run (bad syntax, no answer
//! within its bound) fails with `file`, its line and the reason. New
//! scripts go into the `scenarios!` list below (a test fails while a
//! script is not listed).
//!
//! Strings follow goldenscript: unquoted words hold `[A-Za-z0-9_-./@]` and
//! do not start with `/`; anything else is quoted (`"..."`, with `\n`, `\t`,
//! `\"`, `\x01`, `\u{1F680}` escapes). `key=` is an empty value.
//!
//! # Commands
//!
//! * `start [flag=value | flag]...`: starts the node with extra flags
//!   (`max-content-size=1024` is `--max-content-size 1024`). Only as the
//!   first command; without it the node starts with the defaults at the
//!   first command that needs it.
//! * `get|post|put|delete PATH ["Name: value"]... [key=value]... [options]`:
//!   one HTTP request. `PATH` is relative to the node (`nacos/v1/cs/configs`
//!   or `"/nacos/v1/cs/configs?dataId=a&group=b"`, a query string as
//!   written). Quoted `"Name: value"` arguments are request headers
//!   (`"casMd5: ..."`, `"betaIps: 10.1.2.3"`, `"X-Forwarded-For: ..."`).
//!   `key=value` pairs go into the query string for GET and DELETE and
//!   into an `application/x-www-form-urlencoded` body for POST and PUT.
//!   Options (tags in `[...]`, comma separated):
//!   * `query` / `form`: the pairs go into the query string / a form body
//!     whatever the method (`form` also sends an empty form);
//!   * `java`: the form body encoded as the Java client does
//!     (`URLEncoder.encode`, `Content-Type:
//!     application/x-www-form-urlencoded;charset=UTF-8`);
//!   * `with-creds` / `with-token`: client noise in the query string, as
//!     the npm client (`username=nacos&password=nacos`) and the Java client
//!     (`accessToken=<a token that is not valid>`) send it; with open-API
//!     auth off the node must ignore it;
//!   * `json`: the pairs go into a JSON object body (the console API's
//!     form): a value that parses as JSON (`true`, `12`, `null`, `[...]`)
//!     is that value, anything else a string (`"\"12\""` is the string
//!     `12`);
//!   * `raw`: print a JSON body as text (byte for byte), not normalized;
//!   * `multipart`: the pairs go into a `multipart/form-data` body; a
//!     value `@zip` is a file part holding the last zip answer (`zip`),
//!     `@zip:NAME=CONTENT|NAME=CONTENT...` a file part holding a zip of
//!     these entries, `@text:CONTENT` a file part holding CONTENT;
//!   * `body`: the value of the one pair `body=TEXT` is the request body,
//!     sent as `application/json` (a JSON list, as clone routes take);
//!   * `zip`: the answer is a zip: print its entries (name and content, in
//!     the zip's order) and keep it for `@zip`;
//!   * any other word is a response header to print (`Content-MD5`,
//!     `Config-Type`, ...; printed in alphabetical order, `(absent)` when
//!     missing).
//!
//!   Requests are answered within [`AT_ONCE`] or the script fails.
//! * `login [user] [password] [v3]`: `POST /nacos/v1/auth/login` (the test
//!   admin by default; `v3`: `POST /nacos/v3/auth/user/login`); later requests carry the token as `accessToken` in the
//!   query string (unless they send an `accessToken` of their own).
//! * `let name=path...`: sets `${name}` to a field of the last JSON answer
//!   (`data.1.namespace`: object keys and array indexes, dot separated).
//! * `show path...`: the status of the last answer and the given fields of
//!   its JSON, masked (paths as for `let`; a key applied to an array
//!   selects it in every item: `pageItems.dataId`). After a silenced
//!   request (`(get ...)`) it prints just what a case is about.
//! * `save name` / `changes name`: keeps the last JSON answer; `changes`
//!   compares the last answer with a kept one field by field: `same: ...`,
//!   then each changed field as `old → new` (numbers: `later`/`earlier`).
//! * `listen RECORDS ["Name: value"]... [sorted]`: one listener request
//!   (`POST /nacos/v1/cs/configs/listener`), which must be answered within
//!   [`AT_ONCE`] (shorter than the shortest hold, 10 s). `RECORDS` is the
//!   `Listening-Configs` value as Nacos documents it, with `^2` between the
//!   fields and `^1` after each record (`a.yaml^2DEFAULT_GROUP^2md5^1`);
//!   it is sent as real clients send it: URL-encoded once (Java style),
//!   then form-encoded. `sorted` prints the changed keys of the answer one
//!   per line, sorted, after checking the body is their exact encoding.
//! * `poll name RECORDS ["Name: value"]...`: the same request in the
//!   background, with `Long-Pulling-Timeout: 30000` unless a
//!   `Long-Pulling-Timeout` header is given.
//! * `held name... [after=600ms]`: waits (default 600 ms) and then prints,
//!   per poll, `held` or what it was answered. Nothing tells from outside
//!   that a poll reached the node, so this is the only timing the scripts
//!   see: "not answered yet".
//! * `await name... [within=20s] [sorted]`: waits (at most `within`, by
//!   default [`AWAIT_BOUND`]) for the polls and prints their answers.
//! * `grpc TYPE [key=value]...`: one Nacos gRPC request of class `TYPE`
//!   (`ConfigPublishRequest`, `ConfigQueryRequest`, ...) on the script's
//!   gRPC connection, opened at the first `grpc` as the SDKs open theirs
//!   (tests/common/grpc.rs: server check, the stream with its setup,
//!   registered). The pairs are the request's JSON fields, a value that
//!   parses as JSON being that value (as the `json` option); `requestId`
//!   and `headers` are added. Prints the answer's class and its JSON,
//!   without the fields that are empty or `null` and without a
//!   `requestId` that echoes the request's (Java Nacos leaves out what it
//!   did not set; see `show_grpc`).
//! * `pushes [within=1s]`: waits `within`, then prints what the server
//!   pushed on the connection's stream since the last `pushes` (each one
//!   acknowledged as the SDKs do), sorted, or `(none)`; lists of objects
//!   in them are sets (a sync's `contexts`) and print sorted.
//! * `stop`: SIGTERM to the node; waits (bounded) for it to exit and
//!   prints its exit status.
//!
//! Inside any argument: `${name}` is a variable (`let`), `${md5:TEXT}` the
//! md5 (hex) of TEXT, `${repeat:N:TEXT}` TEXT N times (these nest).
//!
//! # Output
//!
//! A request prints its status and its body: text on the status line
//! (quoted and escaped unless it is one plain line; `""` is empty), JSON
//! objects and arrays normalized (keys sorted) on the status line when
//! short, else pretty below it. A text longer than 512 bytes prints as
//! `<N × "unit">` when it is one unit repeated, else `<N bytes, md5 ...>`.
//! Requested headers follow the status line.
//!
//! Masking: values that change from run to run are replaced, and only after
//! they passed a check, so a value failing its check shows up as itself
//! and fails the comparison:
//! * JSON fields named `*Time`/`*time`/`*Modified` that hold a time after
//!   2020 and not in the future → `"<time ms>"` (a number of
//!   milliseconds), `"<time ms text>"` (the same as a string) or
//!   `"<time rfc3339>"` (an RFC 3339 string); `modifyTime` and
//!   `lastModifiedTime` only when not before the `createTime` /
//!   `createdTime` of the same object;
//! * `md5` fields equal to the md5 of the `content` of the same object →
//!   `"<md5 of content>"`; a `Content-MD5` header equal to the md5 of the
//!   body → `<md5 of body>`;
//! * `accessToken` fields → `"<token>"`; in gRPC answers and pushes,
//!   `connectionId` → `"<connection id>"` and a pushed `requestId` →
//!   `"<request id>"` (the server makes them up); an `Authorization: Bearer` header
//!   holding the `accessToken` of the body → `Bearer <token>`; UUIDs
//!   anywhere → `<uuid>`;
//! * `Date`, `Expires` and `Last-Modified` headers holding an HTTP date
//!   after 2020 and not in the future → `<http-date>`.
//!
//! Ids (config and history ids count from 1 on a fresh node) are printed
//! as they are.
//!
//! [goldenscript]: https://docs.rs/goldenscript

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{java_encode, Server};
use serde_json::Value;
use tempfile::TempDir;
use tokio::task::JoinHandle;

/// Bound on a request that must be answered at once (every foreground
/// request): below the 10 s a listener is held at least.
const AT_ONCE: Duration = Duration::from_secs(8);
/// Bound on `await` (a poll held 10 s is answered within it).
const AWAIT_BOUND: Duration = Duration::from_secs(20);
/// Default wait of `held`.
const HELD_AFTER: Duration = Duration::from_millis(600);
/// Texts longer than this are abbreviated.
const LONG_TEXT: usize = 512;
/// JSON shorter than this (compact) stays on the status line.
const SHORT_JSON: usize = 100;
/// The noise real clients send along (`with-token`).
const FAKE_TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.e30.not-a-real-token";

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_script(stringify!($name));
            }
        )*
        /// Every script with a test.
        const LISTED: &[&str] = &[$(stringify!($name)),*];
    };
}

scenarios! {
    console_beta_promote,
    console_publish_conditions,
    core_server_cluster,
    grpc_config,
    grpc_fuzzy_watch,
    grpc_gray,
    health,
    keys_any_script,
    keys_param_check,
    listener_at_once,
    listener_beta,
    listener_delete,
    listener_gray,
    listener_held_until_timeout,
    listener_malformed,
    listener_no_hangup,
    listener_sigterm,
    listener_tenant_echo,
    listener_views,
    listener_views_auth,
    listener_wake,
    rules_across_surfaces,
    v1_auth_users,
    v1_bad_input,
    v1_beta,
    v1_cas,
    v1_content_limit,
    v1_delete_by_ids,
    v1_export_import_clone,
    v1_gray_tag,
    v1_history,
    v1_namespaces,
    v1_params_query_and_form,
    v1_public_namespace,
    v1_publish_get,
    v1_search_paging_delete,
    v1_strict_namespaces,
    v1_unicode,
    v2_config_history,
    v2_namespaces,
    v3_admin_config,
    v3_auth,
    v3_auth_admin,
    v3_client_config,
    v3_content_limit,
    v3_export_import_clone,
    v3_history,
    v3_namespaces,
    v3_open_api_auth,
    v3_operator,
    v3_server,
    v3_strict_namespaces,
}

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios")
}

#[test]
fn every_script_has_a_test() {
    let mut on_disk = BTreeSet::new();
    for entry in std::fs::read_dir(scripts_dir()).expect("reading tests/scenarios") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "txt") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            on_disk.insert(stem);
        }
    }
    assert!(
        LISTED.is_sorted(),
        "keep the `scenarios!` list in tests/scenarios.rs sorted"
    );
    let listed: BTreeSet<String> = LISTED.iter().map(|s| s.to_string()).collect();
    let unlisted: Vec<_> = on_disk.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&on_disk).collect();
    assert!(
        unlisted.is_empty() && missing.is_empty(),
        "scripts without a test (add them to `scenarios!` in tests/scenarios.rs): \
         {unlisted:?}; tests without a script: {missing:?}"
    );
}

/// Runs `tests/scenarios/{name}.txt` against a fresh node and compares (or,
/// with `UPDATE_GOLDENFILES=1`, rewrites) its output.
fn run_script(name: &str) {
    let path = scripts_dir().join(format!("{name}.txt"));
    let shown = format!("tests/scenarios/{name}.txt");
    let input = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {shown}: {e}"));
    let reference = Reference::from_env();
    let mut runner = Scenario::new(reference.clone());
    let generated = goldenscript::generate(&mut runner, &input);
    let log = runner.log_tail();
    drop(runner);
    let output = generated.unwrap_or_else(|e| panic!("{shown}: {e}\nnode log (tail):\n{log}"));
    if let Some(reference) = reference {
        let out = reference.out.join(format!("{name}.txt"));
        std::fs::write(&out, &output).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
        eprintln!(
            "recorded {shown} from {} into {}",
            reference.url,
            out.display()
        );
        return;
    }
    if output == input {
        return;
    }
    if std::env::var("UPDATE_GOLDENFILES").as_deref() == Ok("1") {
        std::fs::write(&path, &output).unwrap_or_else(|e| panic!("writing {shown}: {e}"));
        eprintln!("updated {shown}");
        return;
    }
    let new_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("scenarios-{name}.txt"));
    let _ = std::fs::write(&new_path, &output);
    panic!(
        "{shown}:{}\n(the whole new output is in {}; run with UPDATE_GOLDENFILES=1 to accept it)",
        first_difference(&input, &output),
        new_path.display()
    );
}

/// `LINE: ...` of the first line where `output` differs from `input`, with
/// the expected and the actual lines from there to the end of the block.
fn first_difference(input: &str, output: &str) -> String {
    let expected: Vec<&str> = input.lines().collect();
    let actual: Vec<&str> = output.lines().collect();
    let at = expected
        .iter()
        .zip(&actual)
        .position(|(e, a)| e != a)
        .unwrap_or(expected.len().min(actual.len()));
    let block = |lines: &[&str]| -> String {
        lines[at.min(lines.len())..]
            .iter()
            .take_while(|l| !l.is_empty())
            .take(40)
            .map(|l| format!("    {l}\n"))
            .collect()
    };
    format!(
        "{}: output differs\n  expected:\n{}  actual:\n{}",
        at + 1,
        block(&expected),
        block(&actual)
    )
}

/// Recording a script from Java Nacos instead of checking Tacos against it
/// (tests/reference/README.md): `REFERENCE_NACOS_URL` names a running
/// reference server (`scripts/reference-nacos.sh`), `REFERENCE_OUT` the
/// folder the script with the reference's answers is written to, and
/// `REFERENCE_NACOS_PASSWORD` the admin password it was given.
#[derive(Clone)]
struct Reference {
    url: String,
    out: PathBuf,
    password: String,
}

impl Reference {
    fn from_env() -> Option<Reference> {
        let url = std::env::var("REFERENCE_NACOS_URL").ok()?;
        let out = std::env::var("REFERENCE_OUT")
            .expect("REFERENCE_OUT names the folder a recording from REFERENCE_NACOS_URL goes to");
        Some(Reference {
            url: url.trim_end_matches('/').to_string(),
            out: PathBuf::from(out),
            password: std::env::var("REFERENCE_NACOS_PASSWORD")
                .unwrap_or_else(|_| common::ADMIN_PASSWORD.to_string()),
        })
    }
}

/// How long a recording waits after a write to Java Nacos.
const REFERENCE_SETTLE: Duration = Duration::from_millis(300);

/// What a recording prints for a command it does not send.
const NOT_SENT: &str = "(not sent: a Tacos route)";

// ---- the runner ----------------------------------------------------------------

type Failure = Box<dyn Error>;

/// An answer: status, headers, body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
    bytes: Vec<u8>,
}

/// The state of one script: its node, client and what the commands kept.
struct Scenario {
    rt: tokio::runtime::Runtime,
    /// Set while recording from Java Nacos: requests go there.
    reference: Option<Reference>,
    tmp: TempDir,
    server: Option<Server>,
    stopped: bool,
    client: reqwest::Client,
    token: Option<String>,
    vars: HashMap<String, String>,
    last_status: Option<u16>,
    last_json: Option<Value>,
    saved: HashMap<String, Value>,
    last_zip: Option<Vec<u8>>,
    polls: BTreeMap<String, JoinHandle<Result<Answer, String>>>,
    /// The script's gRPC connection (`grpc`), opened at first use.
    grpc: Option<common::grpc::GrpcClient>,
}

impl Scenario {
    fn new(reference: Option<Reference>) -> Scenario {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(2))
            // Longer than the 29.5 s hold of a 30000 ms poll.
            .timeout(Duration::from_secs(45))
            .build()
            .expect("building the HTTP client");
        Scenario {
            rt,
            reference,
            tmp: common::temp_dir(),
            server: None,
            stopped: false,
            client,
            token: None,
            vars: HashMap::new(),
            last_status: None,
            last_json: None,
            saved: HashMap::new(),
            last_zip: None,
            polls: BTreeMap::new(),
            grpc: None,
        }
    }

    fn log_tail(&self) -> String {
        if let Some(reference) = &self.reference {
            return format!(
                "(the reference server at {} keeps its own log)",
                reference.url
            );
        }
        let Some(server) = &self.server else {
            return "(not started)".into();
        };
        let log = server.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn start(&mut self, flags: &[String]) -> Result<(), Failure> {
        if self.server.is_some() {
            return Err("the node is already started (`start` must come first)".into());
        }
        if self.reference.is_some() {
            // The flags are Tacos'; the script's `# reference: ... with`
            // properties set the reference server up in Nacos' words
            // (tests/differential.rs checks every flagged script has them).
            return Ok(());
        }
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let server = self.rt.block_on(Server::start_with_args(&self.tmp, &flags));
        self.server = Some(server);
        Ok(())
    }

    /// `http://127.0.0.1:PORT`, starting the node if needed.
    fn base(&mut self) -> Result<String, Failure> {
        if let Some(reference) = &self.reference {
            return Ok(reference.url.clone());
        }
        if self.server.is_none() {
            self.start(&[])?;
        }
        if self.stopped {
            return Err("the node was stopped".into());
        }
        Ok(format!(
            "http://127.0.0.1:{}",
            self.server.as_ref().unwrap().port()
        ))
    }

    // -- expansion --

    /// Expands `${name}`, `${md5:TEXT}` and `${repeat:N:TEXT}`.
    fn expand(&self, s: &str) -> Result<String, Failure> {
        let mut out = String::new();
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let mut depth = 1;
            let mut end = None;
            for (i, c) in after.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let end = end.ok_or_else(|| format!("unclosed ${{ in {s:?}"))?;
            let inner = self.expand(&after[..end])?;
            out.push_str(&self.evaluate(&inner)?);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn evaluate(&self, expr: &str) -> Result<String, Failure> {
        if let Some(text) = expr.strip_prefix("md5:") {
            return Ok(md5_hex(text));
        }
        if let Some(rest) = expr.strip_prefix("repeat:") {
            let (n, text) = rest.split_once(':').ok_or("expected ${repeat:N:TEXT}")?;
            let n: usize = n.parse().map_err(|e| format!("repeat count {n:?}: {e}"))?;
            return Ok(text.repeat(n));
        }
        self.vars
            .get(expr)
            .cloned()
            .ok_or_else(|| format!("no variable {expr:?} (set one with `let`)").into())
    }

    // -- requests --

    fn request(
        &mut self,
        method: reqwest::Method,
        command: &goldenscript::Command,
        tags: &BTreeSet<String>,
    ) -> Result<String, Failure> {
        let base = self.base()?;
        let mut positional = Vec::new();
        let mut pairs = Vec::new();
        for arg in &command.args {
            match arg {
                goldenscript::Argument::Positional(v) => positional.push(self.expand(v)?),
                goldenscript::Argument::KeyValue(k, v) => {
                    pairs.push((self.expand(k)?, self.expand(v)?))
                }
                other => return Err(format!("unsupported argument {other}").into()),
            }
        }
        let mut positional = positional.into_iter();
        let path = positional.next().ok_or("no path given")?;
        if self.reference.is_some() && common::reference::tacos_route(&path) {
            self.last_status = None;
            self.last_json = None;
            return Ok(NOT_SENT.into());
        }
        let headers = positional
            .map(|line| header_line(&line))
            .collect::<Result<Vec<_>, _>>()?;

        let mut options = Options::default();
        let mut show = Vec::new();
        for tag in tags {
            match tag.as_str() {
                "query" => options.query = true,
                "form" => options.form = true,
                "java" => options.java = true,
                "json" => options.json = true,
                "raw" => options.raw = true,
                "with-creds" => options.creds = true,
                "with-token" => options.fake_token = true,
                "multipart" => options.multipart = true,
                "zip" => options.zip = true,
                "body" => options.body = true,
                "sorted" => return Err("`sorted` is for listen and await".into()),
                header => show.push(header.to_string()),
            }
        }
        if [
            options.query,
            options.form,
            options.java,
            options.json,
            options.multipart,
            options.body,
        ]
        .iter()
        .filter(|o| **o)
        .count()
            > 1
        {
            return Err(
                "`query`, `form`, `java`, `json`, `multipart` and `body` exclude each other".into(),
            );
        }
        let in_body = options.form
            || options.java
            || options.json
            || options.multipart
            || options.body
            || (!options.query && matches!(method, reqwest::Method::POST | reqwest::Method::PUT));
        let (mut query, form) = if in_body {
            (Vec::new(), Some(pairs))
        } else {
            (pairs, None)
        };
        if options.creds {
            query.push(("username".into(), "nacos".into()));
            query.push(("password".into(), "nacos".into()));
        }
        if options.fake_token {
            query.push(("accessToken".into(), FAKE_TOKEN.into()));
        }
        let sends_token = query
            .iter()
            .chain(form.iter().flatten())
            .any(|(k, _)| k == "accessToken");
        if let (Some(token), false) = (&self.token, sends_token) {
            query.push(("accessToken".into(), token.clone()));
        }

        let path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        let mut builder = self
            .client
            .request(method.clone(), format!("{base}{path}"))
            .timeout(AT_ONCE);
        if !query.is_empty() {
            builder = builder.query(&query);
        }
        if let Some(form) = &form {
            if options.body {
                let [(name, text)] = form.as_slice() else {
                    return Err("`body` takes one pair, body=TEXT".into());
                };
                if name != "body" {
                    return Err("`body` takes one pair, body=TEXT".into());
                }
                builder = builder
                    .header("Content-Type", "application/json")
                    .body(text.clone());
            } else if options.multipart {
                let (content_type, body) = self.multipart_body(form)?;
                builder = builder.header("Content-Type", content_type).body(body);
            } else if options.json {
                let object: serde_json::Map<String, Value> = form
                    .iter()
                    .map(|(k, v)| {
                        let value = serde_json::from_str::<Value>(v)
                            .unwrap_or_else(|_| Value::String(v.clone()));
                        (k.clone(), value)
                    })
                    .collect();
                builder = builder.json(&object);
            } else if options.java {
                let body = form
                    .iter()
                    .map(|(k, v)| format!("{}={}", java_encode(k), java_encode(v)))
                    .collect::<Vec<_>>()
                    .join("&");
                builder = builder
                    .header(
                        "Content-Type",
                        "application/x-www-form-urlencoded;charset=UTF-8",
                    )
                    .body(body);
            } else {
                builder = builder.form(form);
            }
        }
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let answer = self
            .rt
            .block_on(send(builder))
            .map_err(|e| format!("{} {path}: {e}", command.name))?;
        if self.reference.is_some() && method != reqwest::Method::GET {
            // Java Nacos answers a write before its cache has the change
            // (an asynchronous dump): give it time, so the recording shows
            // what its clients see a moment later, not the race.
            std::thread::sleep(REFERENCE_SETTLE);
        }
        if options.zip {
            return self.render_zip(&answer, &show);
        }
        Ok(self.render(&answer, &show, options.raw))
    }

    /// A `multipart/form-data` body of `pairs` (see `multipart`).
    fn multipart_body(&self, pairs: &[(String, String)]) -> Result<(String, Vec<u8>), Failure> {
        const BOUNDARY: &str = "scenario-boundary-7MA4YWxkTrZu0gW";
        let mut body = Vec::new();
        for (name, value) in pairs {
            let file: Option<Vec<u8>> = if value == "@zip" {
                Some(self.last_zip.clone().ok_or("no zip answer yet for @zip")?)
            } else if let Some(entries) = value.strip_prefix("@zip:") {
                let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
                for entry in entries.split('|') {
                    let (entry_name, content) = entry
                        .split_once('=')
                        .ok_or_else(|| format!("@zip entry {entry:?} is not NAME=CONTENT"))?;
                    zip.start_file(entry_name, zip::write::SimpleFileOptions::default())?;
                    std::io::Write::write_all(&mut zip, content.as_bytes())?;
                }
                Some(zip.finish()?.into_inner())
            } else {
                value.strip_prefix("@text:").map(|t| t.as_bytes().to_vec())
            };
            body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
            match file {
                Some(bytes) => {
                    body.extend_from_slice(
                        format!(
                            "Content-Disposition: form-data; name=\"{name}\"; filename=\"upload.zip\"\r\nContent-Type: application/zip\r\n\r\n"
                        )
                        .as_bytes(),
                    );
                    body.extend_from_slice(&bytes);
                }
                None => {
                    body.extend_from_slice(
                        format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n")
                            .as_bytes(),
                    );
                    body.extend_from_slice(value.as_bytes());
                }
            }
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        Ok((format!("multipart/form-data; boundary={BOUNDARY}"), body))
    }

    /// A zip answer: status, the requested headers, then each entry and
    /// its content. Not a zip: printed as any answer.
    fn render_zip(&mut self, answer: &Answer, show: &[String]) -> Result<String, Failure> {
        let Ok(mut archive) = zip::ZipArchive::new(std::io::Cursor::new(&answer.bytes)) else {
            return Ok(self.render(answer, show, false));
        };
        self.last_zip = Some(answer.bytes.clone());
        self.last_status = Some(answer.status);
        self.last_json = None;
        let mut out = format!("{} zip\n", answer.status);
        for name in show {
            let value = answer
                .headers
                .get(name.as_str())
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let shown = match value {
                Some(v) => mask_export_name(&v),
                None => "(absent)".into(),
            };
            writeln!(out, "{name}: {shown}").unwrap();
        }
        for i in 0..archive.len() {
            let mut file = archive.by_index(i)?;
            let name = file.name()?.to_string();
            let mut content = String::new();
            std::io::Read::read_to_string(&mut file, &mut content)?;
            writeln!(out, "  {name}: {}", show_text(&content)).unwrap();
        }
        Ok(out)
    }

    fn login(&mut self, command: &goldenscript::Command) -> Result<String, Failure> {
        let base = self.base()?;
        let mut args = command.consume_args();
        let user = args.next_pos().unwrap_or(common::ADMIN_USER).to_string();
        let default_password = match &self.reference {
            Some(reference) => reference.password.as_str(),
            None => common::ADMIN_PASSWORD,
        };
        let password = args.next_pos().unwrap_or(default_password).to_string();
        // Nacos 3 logs users in on its v3 route only (its v1 login refuses
        // a user who is not an admin).
        let route = match args.next_pos() {
            None => "/nacos/v1/auth/login",
            Some("v3") => "/nacos/v3/auth/user/login",
            Some(other) => return Err(format!("login route {other:?} (only v3)").into()),
        };
        args.reject_next()?;
        let builder = self
            .client
            .post(format!("{base}{route}"))
            .timeout(AT_ONCE)
            .form(&[("username", user), ("password", password)]);
        let answer = self.rt.block_on(send(builder))?;
        let token = serde_json::from_str::<Value>(&answer.body)
            .ok()
            .and_then(|v| v["accessToken"].as_str().map(str::to_string));
        if let Some(token) = token {
            self.token = Some(token);
        }
        Ok(self.render(&answer, &[], false))
    }

    /// Prints an answer (and keeps its JSON for `let`, `save`, `changes`).
    fn render(&mut self, answer: &Answer, show: &[String], raw: bool) -> String {
        let json = (!raw).then(|| parse_json_body(&answer.body)).flatten();
        self.last_status = Some(answer.status);
        self.last_json = json.clone();
        let mut out = format!("{}", answer.status);
        let mut below = String::new();
        match json {
            Some(json) => {
                let masked = mask_json(&json);
                let compact = masked.to_string();
                if compact.chars().count() <= SHORT_JSON {
                    write!(out, " {compact}").unwrap();
                } else {
                    below = serde_json::to_string_pretty(&masked).unwrap();
                    below.push('\n');
                }
            }
            None => write!(out, " {}", show_text(&mask_text(&answer.body))).unwrap(),
        }
        out.push('\n');
        for name in show {
            let values: Vec<String> = answer
                .headers
                .get_all(name.as_str())
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect();
            let shown = match values.is_empty() {
                true => "(absent)".to_string(),
                false => mask_header(name, &values.join(", "), &answer.body),
            };
            writeln!(out, "{name}: {shown}").unwrap();
        }
        out.push_str(&below);
        out
    }

    // -- JSON answers --

    fn last_json(&self) -> Result<&Value, Failure> {
        self.last_json
            .as_ref()
            .ok_or_else(|| "the last answer was not JSON".into())
    }

    fn let_vars(&mut self, command: &goldenscript::Command) -> Result<String, Failure> {
        for arg in &command.args {
            let goldenscript::Argument::KeyValue(name, path) = arg else {
                return Err(format!("expected name=path, got {arg}").into());
            };
            let steps: Vec<&str> = path.split('.').collect();
            let value = select(self.last_json()?, &steps)
                .ok_or_else(|| format!("the last answer has no {path:?}"))?;
            let value = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            self.vars.insert(name.clone(), value);
        }
        Ok(String::new())
    }

    /// The status of the last answer and the given fields of its JSON.
    fn show(&self, command: &goldenscript::Command) -> Result<String, Failure> {
        let status = self.last_status.ok_or("no answer yet")?;
        let masked = mask_json(self.last_json()?);
        let mut out = format!("{status}\n");
        let mut args = command.consume_args();
        let paths: Vec<&str> = std::iter::from_fn(|| args.next_pos()).collect();
        args.reject_next()?;
        if paths.is_empty() {
            return Err("show PATH...".into());
        }
        for path in paths {
            let steps: Vec<&str> = path.split('.').collect();
            let value = select(&masked, &steps)
                .ok_or_else(|| format!("the last answer has no {path:?}"))?;
            writeln!(out, "{path}: {}", show_value(&value)).unwrap();
        }
        Ok(out)
    }

    fn changes(&self, name: &str) -> Result<String, Failure> {
        let before = self
            .saved
            .get(name)
            .ok_or_else(|| format!("nothing saved as {name:?}"))?;
        let after = self.last_json()?;
        let (Some(before), Some(after)) = (before.as_object(), after.as_object()) else {
            return Err("`changes` compares JSON objects".into());
        };
        let (masked_before, masked_after) = (
            mask_json(&Value::Object(before.clone())),
            mask_json(&Value::Object(after.clone())),
        );
        let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        let mut same = Vec::new();
        let mut out = String::new();
        for key in keys {
            let (old, new) = (before.get(key), after.get(key));
            if old == new {
                same.push(key.as_str());
                continue;
            }
            let number = |v: Option<&Value>| -> Option<f64> {
                match v? {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.parse().ok(),
                    _ => None,
                }
            };
            match (number(old), number(new)) {
                (Some(o), Some(n)) if n > o => writeln!(out, "{key}: later").unwrap(),
                (Some(o), Some(n)) if n < o => writeln!(out, "{key}: earlier").unwrap(),
                _ => {
                    let show = |m: &Value| m.get(key).map_or("(absent)".into(), show_value);
                    writeln!(
                        out,
                        "{key}: {} → {}",
                        show(&masked_before),
                        show(&masked_after)
                    )
                    .unwrap();
                }
            }
        }
        Ok(format!("same: {}\n{out}", same.join(", ")))
    }

    // -- listeners --

    /// The listener request of `listen` and `poll`.
    fn listener_request(
        &mut self,
        records: &str,
        headers: &[String],
        default_timeout: bool,
    ) -> Result<reqwest::RequestBuilder, Failure> {
        let base = self.base()?;
        let probe = self
            .expand(records)?
            .replace("^1", "\u{1}")
            .replace("^2", "\u{2}");
        let mut headers = headers
            .iter()
            .map(|h| header_line(&self.expand(h)?))
            .collect::<Result<Vec<_>, _>>()?;
        if default_timeout
            && !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("Long-Pulling-Timeout"))
        {
            headers.push(("Long-Pulling-Timeout".into(), "30000".into()));
        }
        let mut builder = self
            .client
            .post(format!("{base}/nacos/v1/cs/configs/listener"))
            .form(&[("Listening-Configs", java_encode(&probe))]);
        if let Some(token) = &self.token {
            builder = builder.query(&[("accessToken", token)]);
        }
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        Ok(builder)
    }

    fn listen(
        &mut self,
        command: &goldenscript::Command,
        tags: &BTreeSet<String>,
    ) -> Result<String, Failure> {
        let sorted = sorted_tag(tags)?;
        let mut args = command.consume_args();
        let records = args.next_pos().ok_or("no records given")?;
        let headers: Vec<String> = std::iter::from_fn(|| args.next_pos())
            .map(str::to_string)
            .collect();
        args.reject_next()?;
        let builder = self
            .listener_request(records, &headers, false)?
            .timeout(AT_ONCE);
        let answer = self
            .rt
            .block_on(send(builder))
            .map_err(|e| format!("listener: {e}"))?;
        show_listener_answer(&answer, sorted)
    }

    fn poll(&mut self, command: &goldenscript::Command) -> Result<String, Failure> {
        let mut args = command.consume_args();
        let name = args.next_pos().ok_or("no poll name given")?.to_string();
        let records = args.next_pos().ok_or("no records given")?;
        let headers: Vec<String> = std::iter::from_fn(|| args.next_pos())
            .map(str::to_string)
            .collect();
        args.reject_next()?;
        if self.polls.contains_key(&name) {
            return Err(format!("a poll named {name} is running (await it first)").into());
        }
        let builder = self.listener_request(records, &headers, true)?;
        let handle = self
            .rt
            .spawn(async move { send(builder).await.map_err(|e| e.to_string()) });
        self.polls.insert(name, handle);
        Ok(String::new())
    }

    fn held(&mut self, command: &goldenscript::Command) -> Result<String, Failure> {
        let mut args = command.consume_args();
        let after = match args.take_key("after") {
            Some(d) => parse_duration(d)?,
            None => HELD_AFTER,
        };
        let names: Vec<String> = std::iter::from_fn(|| args.next_pos())
            .map(str::to_string)
            .collect();
        args.reject_next()?;
        if names.is_empty() {
            return Err("no poll named".into());
        }
        self.rt.block_on(async { tokio::time::sleep(after).await });
        let mut out = String::new();
        for name in names {
            let finished = self
                .polls
                .get(&name)
                .ok_or_else(|| format!("no poll named {name}"))?
                .is_finished();
            if finished {
                let handle = self.polls.remove(&name).unwrap();
                let answer = self.rt.block_on(handle)?;
                let shown = match answer {
                    Ok(answer) => show_listener_answer(&answer, false)?,
                    Err(e) => format!("{e}\n"),
                };
                write!(out, "{name}: answered: {shown}").unwrap();
            } else {
                writeln!(out, "{name}: held").unwrap();
            }
        }
        Ok(out)
    }

    fn await_polls(
        &mut self,
        command: &goldenscript::Command,
        tags: &BTreeSet<String>,
    ) -> Result<String, Failure> {
        let sorted = sorted_tag(tags)?;
        let mut args = command.consume_args();
        let within = match args.take_key("within") {
            Some(d) => parse_duration(d)?,
            None => AWAIT_BOUND,
        };
        let names: Vec<String> = std::iter::from_fn(|| args.next_pos())
            .map(str::to_string)
            .collect();
        args.reject_next()?;
        if names.is_empty() {
            return Err("no poll named".into());
        }
        let mut handles = Vec::new();
        for name in &names {
            let handle = self
                .polls
                .remove(name)
                .ok_or_else(|| format!("no poll named {name}"))?;
            handles.push(handle);
        }
        let answers = self.rt.block_on(async {
            let deadline = tokio::time::Instant::now() + within;
            let mut answers = Vec::new();
            for mut handle in handles {
                answers.push(match tokio::time::timeout_at(deadline, &mut handle).await {
                    Ok(Ok(answer)) => answer,
                    Ok(Err(e)) => Err(format!("poll task: {e}")),
                    Err(_) => {
                        handle.abort();
                        Err(format!("not answered within {AWAIT_BOUND:?}"))
                    }
                });
            }
            answers
        });
        let mut out = String::new();
        for (name, answer) in names.iter().zip(answers) {
            let shown = match answer {
                Ok(answer) => show_listener_answer(&answer, sorted)?,
                Err(e) => format!("{e}\n"),
            };
            write!(out, "{name}: {shown}").unwrap();
        }
        Ok(out)
    }

    // -- gRPC --

    /// The gRPC port's `host:port`: the HTTP port + 1000 of the reference,
    /// or the node's.
    fn grpc_addr(&mut self) -> Result<String, Failure> {
        let base = self.base()?;
        if self.reference.is_some() {
            let (host, port) = base
                .trim_start_matches("http://")
                .rsplit_once(':')
                .ok_or("the reference URL names no port")?;
            let port: u16 = port.parse()?;
            return Ok(format!("{host}:{}", port + 1000));
        }
        let port = self.server.as_ref().ok_or("not started")?.grpc_port();
        Ok(format!("127.0.0.1:{port}"))
    }

    fn grpc(&mut self, command: &goldenscript::Command) -> Result<String, Failure> {
        let mut args = command.args.iter();
        let Some(goldenscript::Argument::Positional(kind)) = args.next() else {
            return Err("grpc TYPE [key=value]...".into());
        };
        let kind = kind.clone();
        let mut body = serde_json::Map::new();
        for arg in args {
            let goldenscript::Argument::KeyValue(k, v) = arg else {
                return Err(format!("expected key=value, got {arg}").into());
            };
            let v = self.expand(v)?;
            let value = serde_json::from_str::<Value>(&v).unwrap_or(Value::String(v));
            body.insert(self.expand(k)?, value);
        }
        if self.grpc.is_none() {
            let addr = self.grpc_addr()?;
            let client = self.rt.block_on(common::grpc::GrpcClient::connect(&addr))?;
            self.grpc = Some(client);
        }
        let client = self.grpc.as_mut().ok_or("no connection")?;
        let (sent_id, (answer_kind, answer)) =
            self.rt.block_on(client.call(&kind, Value::Object(body)))?;
        if self.reference.is_some() && !kind.contains("Query") && !kind.contains("Listen") {
            std::thread::sleep(REFERENCE_SETTLE);
        }
        self.last_status = answer["resultCode"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok());
        self.last_json = Some(answer.clone());
        Ok(show_grpc(&answer_kind, &answer, Some(&sent_id)))
    }

    fn pushes(&mut self, command: &goldenscript::Command) -> Result<String, Failure> {
        let mut args = command.consume_args();
        let within = match args.take_key("within") {
            Some(text) => parse_duration(text)?,
            None => Duration::from_secs(1),
        };
        args.reject_next()?;
        let client = self
            .grpc
            .as_ref()
            .ok_or("no gRPC connection yet (`grpc` opens it)")?;
        std::thread::sleep(within);
        let mut shown: Vec<String> = client
            .take_pushes()
            .into_iter()
            .map(|(kind, mut body)| {
                if body.get("requestId").is_some() {
                    body["requestId"] = Value::String("<request id>".into());
                }
                sort_object_lists(&mut body);
                show_grpc(&kind, &body, None)
            })
            .collect();
        shown.sort();
        if shown.is_empty() {
            return Ok("(none)\n".into());
        }
        Ok(shown.concat())
    }

    fn stop(&mut self) -> Result<String, Failure> {
        if self.reference.is_some() {
            return Err("`stop` signals a Tacos node: not the reference server".into());
        }
        let server = self.server.as_mut().ok_or("the node is not started")?;
        let status = self.rt.block_on(server.stop());
        self.stopped = true;
        Ok(format!("stopped ({status})\n"))
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        for (_, handle) in std::mem::take(&mut self.polls) {
            handle.abort();
        }
    }
}

#[derive(Default)]
struct Options {
    query: bool,
    form: bool,
    java: bool,
    json: bool,
    raw: bool,
    creds: bool,
    fake_token: bool,
    multipart: bool,
    zip: bool,
    body: bool,
}

impl goldenscript::Runner for Scenario {
    type Command = goldenscript::Command;

    fn run(
        &mut self,
        command: &goldenscript::Command,
        context: &goldenscript::Context,
    ) -> Result<String, Failure> {
        let result = self.dispatch(command, context);
        match (&self.reference, result) {
            // A recording keeps going: what failed against Java Nacos (a
            // field it does not have, a variable never set) is its answer.
            (Some(_), Err(e)) => Ok(format!("(failed: {e})\n")),
            (_, result) => result,
        }
    }
}

impl Scenario {
    fn dispatch(
        &mut self,
        command: &goldenscript::Command,
        context: &goldenscript::Context,
    ) -> Result<String, Failure> {
        let tags = &context.tags;
        let no_tags = || -> Result<(), Failure> {
            match tags.is_empty() {
                true => Ok(()),
                false => Err(format!("{} takes no options", command.name).into()),
            }
        };
        match command.name.as_str() {
            "get" => self.request(reqwest::Method::GET, command, tags),
            "post" => self.request(reqwest::Method::POST, command, tags),
            "put" => self.request(reqwest::Method::PUT, command, tags),
            "delete" => self.request(reqwest::Method::DELETE, command, tags),
            "start" => {
                no_tags()?;
                let mut flags = Vec::new();
                for arg in &command.args {
                    match arg {
                        goldenscript::Argument::KeyValue(k, v) => {
                            flags.push(format!("--{k}"));
                            flags.push(v.clone());
                        }
                        goldenscript::Argument::Positional(flag) => flags.push(format!("--{flag}")),
                        other => return Err(format!("unsupported argument {other}").into()),
                    }
                }
                self.start(&flags)?;
                Ok(String::new())
            }
            "login" => {
                no_tags()?;
                self.login(command)
            }
            "let" => {
                no_tags()?;
                self.let_vars(command)
            }
            "save" => {
                no_tags()?;
                let mut args = command.consume_args();
                let name = args.next_pos().ok_or("save NAME")?.to_string();
                args.reject_next()?;
                let json = self.last_json()?.clone();
                self.saved.insert(name, json);
                Ok(String::new())
            }
            "show" => {
                no_tags()?;
                self.show(command)
            }
            "changes" => {
                no_tags()?;
                let mut args = command.consume_args();
                let name = args.next_pos().ok_or("changes NAME")?.to_string();
                args.reject_next()?;
                self.changes(&name)
            }
            "listen" => self.listen(command, tags),
            "poll" => {
                no_tags()?;
                self.poll(command)
            }
            "held" => {
                no_tags()?;
                self.held(command)
            }
            "await" => self.await_polls(command, tags),
            "stop" => {
                no_tags()?;
                self.stop()
            }
            "grpc" => {
                no_tags()?;
                self.grpc(command)
            }
            "pushes" => {
                no_tags()?;
                self.pushes(command)
            }
            other => Err(format!("unknown command {other:?}").into()),
        }
    }
}

// ---- helpers --------------------------------------------------------------------

/// Sorts every list of objects in `value` (by their JSON): a push's lists
/// are sets (a fuzzy watch sync's `contexts`), in no order a client relies on.
fn sort_object_lists(value: &mut Value) {
    match value {
        Value::Array(items) => {
            items.iter_mut().for_each(sort_object_lists);
            if items.iter().all(Value::is_object) {
                items.sort_by_key(|item| item.to_string());
            }
        }
        Value::Object(map) => map.values_mut().for_each(sort_object_lists),
        _ => {}
    }
}

/// A gRPC message: its class, then its masked JSON (on the same line when
/// short, else pretty below). Top-level fields that are an empty string or
/// `null` are left out: Java Nacos leaves out every field it did not set
/// (Jackson's NON_NULL), Tacos sends each one, empty (its clients'
/// decoders need them; docs/compat-diff.md), and clients read absent,
/// `null` and `""` alike. `requestId` is left out when it echoes the
/// request's (Java Nacos does not echo it).
fn show_grpc(kind: &str, body: &Value, sent_id: Option<&str>) -> String {
    let mut body = body.clone();
    if let Value::Object(map) = &mut body {
        map.retain(|key, value| {
            let empty = value.is_null() || value.as_str() == Some("");
            let echo = key == "requestId" && sent_id.is_some() && value.as_str() == sent_id;
            !empty && !echo
        });
    }
    if body.get("connectionId").is_some_and(Value::is_string) {
        body["connectionId"] = Value::String("<connection id>".into());
    }
    let masked = mask_json(&body);
    let compact = masked.to_string();
    if compact.chars().count() <= SHORT_JSON {
        format!("{kind} {compact}\n")
    } else {
        format!(
            "{kind}\n{}\n",
            serde_json::to_string_pretty(&masked).unwrap_or(compact)
        )
    }
}

async fn send(builder: reqwest::RequestBuilder) -> Result<Answer, reqwest::Error> {
    let response = builder.send().await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await?;
    let body = match String::from_utf8(bytes.to_vec()) {
        Ok(text) => text,
        Err(_) => format!("<not UTF-8: {} bytes>", bytes.len()),
    };
    Ok(Answer {
        status,
        headers,
        body,
        bytes: bytes.to_vec(),
    })
}

/// The value at `steps`: object keys and array indexes; a key applied to
/// an array selects it in every item.
fn select(value: &Value, steps: &[&str]) -> Option<Value> {
    let Some((step, rest)) = steps.split_first() else {
        return Some(value.clone());
    };
    match (value, step.parse::<usize>()) {
        (Value::Array(items), Ok(i)) => select(items.get(i)?, rest),
        // A name on an array: that field of every item.
        (Value::Array(items), Err(_)) => items
            .iter()
            .map(|item| select(item, steps))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        (_, _) => select(value.get(*step)?, rest),
    }
}

/// `"Name: value"` → `(Name, value)`.
fn header_line(line: &str) -> Result<(String, String), Failure> {
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| format!("expected a header \"Name: value\", got {line:?}"))?;
    Ok((name.trim().to_string(), value.trim().to_string()))
}

fn sorted_tag(tags: &BTreeSet<String>) -> Result<bool, Failure> {
    match tags.iter().find(|t| *t != "sorted") {
        Some(other) => Err(format!("unknown option {other:?} (only `sorted`)").into()),
        None => Ok(tags.contains("sorted")),
    }
}

/// `600ms`, `2s`.
fn parse_duration(s: &str) -> Result<Duration, Failure> {
    if let Some(ms) = s.strip_suffix("ms") {
        return Ok(Duration::from_millis(ms.parse()?));
    }
    if let Some(secs) = s.strip_suffix('s') {
        return Ok(Duration::from_secs(secs.parse()?));
    }
    Err(format!("a duration is `600ms` or `2s`, not {s:?}").into())
}

fn md5_hex(s: &str) -> String {
    format!("{:x}", md5::compute(s.as_bytes()))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A time in milliseconds after 2020 and not in the future (a minute of
/// slack).
fn plausible_ms(v: i64) -> bool {
    (1_577_836_800_000..=now_ms() + 60_000).contains(&v)
}

fn parse_json_body(body: &str) -> Option<Value> {
    let trimmed = body.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str(body).ok()
}

/// A time as milliseconds since the epoch: a number, or a string holding
/// one or an RFC 3339 time.
fn as_ms(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok().or_else(|| {
            chrono::DateTime::parse_from_rfc3339(s)
                .ok()
                .map(|t| t.timestamp_millis())
        }),
        _ => None,
    }
}

/// What a time is masked as: its form stays visible.
fn time_placeholder(v: &Value) -> &'static str {
    match v {
        Value::Number(_) => "<time ms>",
        Value::String(s) if s.bytes().all(|b| b.is_ascii_digit()) => "<time ms text>",
        _ => "<time rfc3339>",
    }
}

/// Keys that hold a time (`createTime`, `lastModifiedTime`, `lastModified`).
fn is_time_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.ends_with("time") || key.ends_with("modified")
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Masks the volatile values of a JSON answer (see the module docs).
fn mask_json(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, v) in map {
                let masked = if is_time_key(key) {
                    let earliest = match key.as_str() {
                        "modifyTime" => map.get("createTime").and_then(as_ms),
                        "lastModifiedTime" => map.get("createdTime").and_then(as_ms),
                        _ => None,
                    };
                    match as_ms(v) {
                        Some(ms) if plausible_ms(ms) && earliest.is_none_or(|e| ms >= e) => {
                            Value::String(time_placeholder(v).into())
                        }
                        _ => mask_json(v),
                    }
                } else if key == "md5"
                    && map
                        .get("content")
                        .and_then(Value::as_str)
                        .is_some_and(|c| v.as_str() == Some(md5_hex(c).as_str()))
                {
                    Value::String("<md5 of content>".into())
                } else if key == "accessToken" && v.is_string() {
                    Value::String("<token>".into())
                } else {
                    mask_json(v)
                };
                out.insert(key.clone(), masked);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(mask_json).collect()),
        Value::String(s) => Value::String(mask_text(s)),
        other => other.clone(),
    }
}

/// UUIDs → `<uuid>`.
fn mask_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let bytes = s.as_bytes();
    while i < s.len() {
        if i + 36 <= s.len() && s.is_char_boundary(i + 36) && is_uuid(&s[i..i + 36]) {
            let before_ok = i == 0 || !bytes[i - 1].is_ascii_hexdigit();
            let after_ok = i + 36 == s.len() || !bytes[i + 36].is_ascii_hexdigit();
            if before_ok && after_ok {
                out.push_str("<uuid>");
                i += 36;
                continue;
            }
        }
        let c = s[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

fn mask_header(name: &str, value: &str, body: &str) -> String {
    if name.eq_ignore_ascii_case("Content-MD5") && value == md5_hex(body) {
        return "<md5 of body>".into();
    }
    let body_token = parse_json_body(body).and_then(|json| {
        json.get("accessToken")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if name.eq_ignore_ascii_case("Authorization")
        && body_token.is_some_and(|token| value == format!("Bearer {token}"))
    {
        return "Bearer <token>".into();
    }
    let is_date = ["Date", "Expires", "Last-Modified"]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name));
    if is_date {
        if let Ok(at) = httpdate::parse_http_date(value) {
            let ms = at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            if plausible_ms(ms) {
                return "<http-date>".into();
            }
        }
    }
    mask_text(value)
}

/// An export's file name with its time stamp (`..._20250101120000.zip`)
/// masked.
fn mask_export_name(value: &str) -> String {
    match value.rsplit_once('_') {
        Some((head, tail))
            if tail.len() == 18
                && tail.ends_with(".zip")
                && tail[..14].bytes().all(|b| b.is_ascii_digit()) =>
        {
            format!("{head}_<yyyyMMddHHmmss>.zip")
        }
        _ => value.to_string(),
    }
}

/// A text body or value as printed: plain when it is one plain line,
/// else quoted and escaped; long texts abbreviated.
fn show_text(s: &str) -> String {
    if s.len() > LONG_TEXT {
        if let Some((unit, n)) = repetition(s) {
            return format!("<{n} × {unit:?}>");
        }
        return format!("<{} bytes, md5 {}>", s.len(), md5_hex(s));
    }
    let debug = format!("{s:?}");
    let plain =
        !s.is_empty() && debug[1..debug.len() - 1] == *s && s.trim() == s && !s.starts_with('<');
    if plain {
        s.to_string()
    } else {
        debug
    }
}

/// A JSON value on one line; a string escaped as Rust does (so characters
/// that do not show, like zero-width joiners, do).
fn show_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// `(unit, n)` when `s` is `unit` repeated `n` times (`unit` at most 16
/// characters).
fn repetition(s: &str) -> Option<(&str, usize)> {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    for unit_chars in 1..=16.min(chars.len()) {
        if !chars.len().is_multiple_of(unit_chars) {
            continue;
        }
        let unit_end = chars.get(unit_chars).map_or(s.len(), |(i, _)| *i);
        let unit = &s[..unit_end];
        let n = s.len() / unit.len();
        if unit.len() * n == s.len() && unit.repeat(n) == s {
            return Some((unit, n));
        }
    }
    None
}

/// A listener answer: status and body (raw), or with `sorted` the changed
/// keys one per line after checking the body is exactly their encoding.
fn show_listener_answer(answer: &Answer, sorted: bool) -> Result<String, Failure> {
    if !sorted || answer.status != 200 || answer.body.is_empty() {
        return Ok(format!("{} {}\n", answer.status, show_text(&answer.body)));
    }
    let encoded = answer
        .body
        .strip_suffix('\n')
        .ok_or_else(|| format!("listener answer without a final newline: {:?}", answer.body))?;
    let raw = java_decode(encoded)?;
    if java_encode(&raw) != encoded {
        return Err(format!("listener answer is not Java-URL-encoded: {:?}", answer.body).into());
    }
    if !raw.ends_with('\u{1}') {
        return Err(format!("listener records do not end with ^1: {raw:?}").into());
    }
    let mut records: Vec<String> = raw
        .split('\u{1}')
        .filter(|r| !r.is_empty())
        .map(|r| r.replace('\u{2}', "^2") + "^1")
        .collect();
    records.sort();
    let mut out = format!("{} (records, sorted)\n", answer.status);
    for record in records {
        writeln!(out, "  {record}").unwrap();
    }
    Ok(out)
}

/// Java's `URLDecoder.decode(s, "UTF-8")`.
fn java_decode(s: &str) -> Result<String, Failure> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])?;
                out.push(u8::from_str_radix(hex, 16)?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Ok(String::from_utf8(out)?)
}

#[test]
fn helpers() {
    assert_eq!(java_decode("a+b%02c%01").unwrap(), "a b\u{2}c\u{1}");
    assert_eq!(java_decode("%E9%85%8D%").unwrap(), "配%");
    assert_eq!(show_text("true"), "true");
    assert_eq!(show_text(""), "\"\"");
    assert_eq!(show_text("a\n"), "\"a\\n\"");
    assert_eq!(show_text(&"a".repeat(1024)), "<1024 × \"a\">");
    assert_eq!(show_text(&"配".repeat(342)), "<342 × \"配\">");
    assert_eq!(
        mask_text("id 123e4567-e89b-42d3-a456-426614174000."),
        "id <uuid>."
    );
    let mut runner = Scenario::new(None);
    runner.vars.insert("x".into(), "1".into());
    assert_eq!(
        runner.expand("${x}-${md5:${repeat:2:a}}").unwrap(),
        format!("1-{}", md5_hex("aa"))
    );
    assert_eq!(
        runner.expand("${md5:{\"a\": 1}}").unwrap(),
        md5_hex("{\"a\": 1}")
    );
}
