//! Goose load-test scenarios for Nacos-compatible config servers.
//!
//! Every scenario speaks only the Nacos HTTP open API v1 (`/nacos/v1/cs/configs` and,
//! when credentials are given, `/nacos/v1/auth/login`), so the same binary measures
//! Tacos, r-nacos and Java Nacos side by side. Each scenario is a binary in `src/bin/`;
//! this library holds what they share: settings read from the environment, the
//! `GooseAttack` with this crate's defaults, and the publish / query transactions.
//!
//! Settings that goose's own command line does not cover come from environment
//! variables (goose owns the command line and refuses unknown flags):
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `LOADTEST_KEYS` | how many distinct dataIds a scenario spreads over | per scenario |
//! | `LOADTEST_KEY_PREFIX` | dataId prefix; the dataIds are `<prefix><0..keys>` | per scenario |
//! | `LOADTEST_TENANT` | namespace sent as `tenant` | `` (public) |
//! | `LOADTEST_CONTENT_BYTES` | pad each published content to at least this many bytes | `0` |
//! | `LOADTEST_WAIT_MS` | per-user pause between requests, `N` or `MIN-MAX` ms | none |
//! | `LOADTEST_RATE_PER_USER` | requests/s each user sends at most (0 = unlimited) | unlimited |
//! | `LOADTEST_USERNAME`, `LOADTEST_PASSWORD` | log in first and send `accessToken` | none |
//!
//! The same settings are also command-line flags next to goose's own (`--keys`,
//! `--key-prefix`, `--tenant`, `--content-bytes`, `--rate-per-user`; a flag wins over its
//! variable): [`cli`] parses both, [`start`] turns them into a `GooseAttack`.
//!
//! Other modules: [`rate`] (the per-user rate limiter), [`nacos`] (request builders:
//! form bodies, `Listening-Configs`), [`listen`] (the `http_config_listen` scenario),
//! [`goose_report`] (reads goose's JSON reports), [`qa`] (the `qa` release report tool).
//!
//! The gRPC load tools (`grpc_config`, `grpc_fanout`) speak the Nacos 2.x gRPC API
//! through [`grpc`] instead, take ordinary command-line options (no goose), and
//! summarize their latencies with [`latency`]. `publish_timeline` plots publish latency
//! over time at a fixed offered load ([`timeline`]).

pub mod cli;
pub mod fanout;
pub mod goose_report;
pub mod grpc;
pub mod latency;
pub mod listen;
pub mod nacos;
pub mod qa;
pub mod rate;
pub mod timeline;
pub mod tls;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use goose::goose::GooseResponse;
use goose::prelude::*;

/// The Nacos v1 config resource.
pub const CONFIGS_PATH: &str = "/nacos/v1/cs/configs";
/// The Nacos v1 login resource.
pub const LOGIN_PATH: &str = "/nacos/v1/auth/login";
/// The group every scenario uses.
pub const GROUP: &str = "DEFAULT_GROUP";
/// Where the scenarios point when `--host` is not given.
pub const DEFAULT_HOST: &str = "http://127.0.0.1:8848";

/// Longest dataId Nacos accepts.
const MAX_DATA_ID_LEN: usize = 256;
/// Longest namespace id Nacos accepts.
const MAX_TENANT_LEN: usize = 128;

/// Scenario settings: command-line flags, else environment variables, else defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// How many distinct dataIds the scenario uses.
    pub keys: usize,
    /// The dataIds are `format!("{key_prefix}{i}")` for `i` in `0..keys`.
    pub key_prefix: String,
    /// The namespace, sent as `tenant` ("" is the public namespace).
    pub tenant: String,
    /// Published contents are padded with `.` to at least this many bytes.
    pub content_bytes: usize,
    /// Optional per-user pause between transactions (min, max).
    pub wait: Option<(Duration, Duration)>,
    /// Optional per-user rate limit, requests per second (see [`rate::RateLimiter`]).
    pub rate_per_user: Option<f64>,
    /// Optional username and password for `/nacos/v1/auth/login`.
    pub credentials: Option<(String, String)>,
}

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env(default_keys: usize, default_prefix: &str) -> Result<Self, GooseError> {
        Self::from_lookup(default_keys, default_prefix, |name| {
            std::env::var(name).ok()
        })
    }

    /// Reads the settings from `args` (flags) first and the environment second.
    pub fn from_args(
        args: &cli::ScenarioArgs,
        default_keys: usize,
        default_prefix: &str,
    ) -> Result<Self, GooseError> {
        Self::from_lookup(default_keys, default_prefix, |name| {
            args.lookup(name).or_else(|| std::env::var(name).ok())
        })
    }

    /// Reads the settings through `lookup` (the environment in production, a map in tests).
    pub fn from_lookup(
        default_keys: usize,
        default_prefix: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, GooseError> {
        let keys = match lookup("LOADTEST_KEYS") {
            Some(value) => match value.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => return Err(invalid("LOADTEST_KEYS", &value, "a whole number above 0")),
            },
            None => default_keys,
        };
        let key_prefix = lookup("LOADTEST_KEY_PREFIX").unwrap_or_else(|| default_prefix.into());
        let id_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.');
        if !key_prefix.chars().all(id_ok) {
            return Err(invalid(
                "LOADTEST_KEY_PREFIX",
                &key_prefix,
                "only letters, digits and - _ : . are valid in a Nacos dataId",
            ));
        }
        let longest = key_prefix.len() + (keys - 1).to_string().len();
        if longest > MAX_DATA_ID_LEN {
            return Err(invalid(
                "LOADTEST_KEY_PREFIX",
                &key_prefix,
                "the dataIds would be longer than 256 characters",
            ));
        }
        let tenant = lookup("LOADTEST_TENANT").unwrap_or_default();
        if tenant.len() > MAX_TENANT_LEN
            || !tenant
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(invalid(
                "LOADTEST_TENANT",
                &tenant,
                "a namespace id is letters, digits, _ and -, at most 128 characters",
            ));
        }
        let content_bytes = match lookup("LOADTEST_CONTENT_BYTES") {
            Some(value) => match value.trim().parse::<usize>() {
                Ok(n) if n <= 10 * 1024 * 1024 => n,
                _ => {
                    return Err(invalid(
                        "LOADTEST_CONTENT_BYTES",
                        &value,
                        "a byte count from 0 to 10485760",
                    ))
                }
            },
            None => 0,
        };
        let wait = match lookup("LOADTEST_WAIT_MS") {
            Some(value) => Some(parse_wait(&value).ok_or_else(|| {
                invalid(
                    "LOADTEST_WAIT_MS",
                    &value,
                    "milliseconds, `N` or `MIN-MAX` with MIN <= MAX",
                )
            })?),
            None => None,
        };
        let rate_per_user = match lookup("LOADTEST_RATE_PER_USER") {
            Some(value) => match value.trim().parse::<f64>() {
                Ok(0.0) => None,
                Ok(r) if r.is_finite() && r > 0.0 => Some(r),
                _ => {
                    return Err(invalid(
                        "LOADTEST_RATE_PER_USER",
                        &value,
                        "requests per second: a positive number, or 0 for unlimited",
                    ))
                }
            },
            None => None,
        };
        let credentials = match (lookup("LOADTEST_USERNAME"), lookup("LOADTEST_PASSWORD")) {
            (Some(user), Some(password)) => Some((user, password)),
            (None, None) => None,
            _ => {
                return Err(invalid(
                    "LOADTEST_USERNAME",
                    "",
                    "set both LOADTEST_USERNAME and LOADTEST_PASSWORD, or neither",
                ))
            }
        };
        Ok(Settings {
            keys,
            key_prefix,
            tenant,
            content_bytes,
            wait,
            rate_per_user,
            credentials,
        })
    }

    /// The dataId of key `i`.
    pub fn data_id(&self, i: usize) -> String {
        format!("{}{i}", self.key_prefix)
    }

    /// A key index drawn uniformly from `0..keys`.
    pub fn random_key(&self) -> usize {
        if self.keys == 1 {
            0
        } else {
            rand::random_range(0..self.keys)
        }
    }

    /// The content the query scenario seeds under dataId `data_id` and expects back.
    pub fn seed_content(&self, data_id: &str) -> String {
        self.pad(format!("loadtest seed {data_id}"))
    }

    /// A content no earlier request of this or an earlier run published.
    pub fn unique_content(&self, user_index: usize) -> String {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        self.pad(format!(
            "loadtest run={} user={user_index} seq={seq}",
            run_id()
        ))
    }

    /// Pads `content` with a space and dots to at least `content_bytes` bytes.
    pub fn pad(&self, mut content: String) -> String {
        if content.len() < self.content_bytes {
            content.push(' ');
            while content.len() < self.content_bytes {
                content.push('.');
            }
        }
        content
    }
}

/// Parses `N` or `MIN-MAX` milliseconds.
fn parse_wait(value: &str) -> Option<(Duration, Duration)> {
    let value = value.trim();
    let (min, max) = match value.split_once('-') {
        Some((min, max)) => (min.trim().parse().ok()?, max.trim().parse().ok()?),
        None => {
            let n = value.parse().ok()?;
            (n, n)
        }
    };
    (min <= max).then(|| (Duration::from_millis(min), Duration::from_millis(max)))
}

fn invalid(option: &str, value: &str, detail: &str) -> GooseError {
    GooseError::InvalidOption {
        option: option.to_string(),
        value: value.to_string(),
        detail: detail.to_string(),
    }
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
static SEQUENCE: AtomicU64 = AtomicU64::new(0);
static RUN_ID: OnceLock<u128> = OnceLock::new();

/// Milliseconds since the epoch when this process first asked: makes contents unique
/// across runs against the same server, so every publish really changes the config.
pub fn run_id() -> u128 {
    *RUN_ID.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default()
    })
}

/// Reads the settings from the environment once, for the transactions to use.
pub fn init(default_keys: usize, default_prefix: &str) -> Result<&'static Settings, GooseError> {
    let settings = Settings::from_env(default_keys, default_prefix)?;
    run_id();
    Ok(SETTINGS.get_or_init(|| settings))
}

/// Reads the settings from `args` and the environment once, for the transactions to use.
pub fn init_with(
    args: &cli::ScenarioArgs,
    default_keys: usize,
    default_prefix: &str,
) -> Result<&'static Settings, GooseError> {
    let settings = Settings::from_args(args, default_keys, default_prefix)?;
    run_id();
    Ok(SETTINGS.get_or_init(|| settings))
}

/// The settings [`init`] read.
pub fn settings() -> &'static Settings {
    SETTINGS
        .get()
        .expect("loadtest::init must run before the load test starts")
}

/// A `GooseAttack` with this crate's defaults: `--host` defaults to [`DEFAULT_HOST`] and
/// the telnet Controller is off (goose 0.19 keeps the WebSocket Controller off unless
/// `--websocket` is given), so a run opens no listening port.
pub fn attack() -> Result<GooseAttack, GooseError> {
    with_defaults(GooseAttack::initialize()?)
}

fn with_defaults(attack: GooseAttack) -> Result<GooseAttack, GooseError> {
    let attack = attack
        .set_default(GooseDefault::Host, DEFAULT_HOST)?
        .set_default(GooseDefault::NoTelnet, true)?;
    Ok(*attack)
}

/// What [`start`] gives a scenario binary.
pub struct Started<E> {
    /// The attack, with this crate's defaults.
    pub attack: GooseAttack,
    /// The scenario's own options.
    pub args: E,
    /// Goose's options as given (goose keeps its copy private).
    pub goose: goose::config::GooseConfiguration,
}

/// What a scenario binary starts from: parses its command line (goose's options plus
/// [`cli::ScenarioArgs`] plus the scenario's own `E`; `--help` lists them all and
/// exits), reads the settings once, and builds the `GooseAttack` with this crate's
/// defaults. `about` is the first line of `--help`.
pub fn start<E: clap::Args + clap::FromArgMatches>(
    about: &str,
    default_keys: usize,
    default_prefix: &str,
) -> Result<Started<E>, GooseError> {
    let cli = cli::parse::<E>(about);
    init_with(&cli.scenario, default_keys, default_prefix)?;
    let attack = with_defaults(GooseAttack::initialize_with_config(cli.goose.clone())?)?;
    Ok(Started {
        attack,
        args: cli.extra,
        goose: cli.goose,
    })
}

/// A scenario with the per-user pause from `LOADTEST_WAIT_MS` and, when credentials
/// are set, a login transaction that runs once as each user starts.
pub fn scenario(name: &str) -> Result<Scenario, GooseError> {
    let settings = settings();
    let mut scenario = Scenario::new(name);
    if let Some((min, max)) = settings.wait {
        scenario = scenario.set_wait_time(min, max)?;
    }
    if settings.credentials.is_some() {
        scenario =
            scenario.register_transaction(transaction!(login).set_name("login").set_on_start());
    }
    Ok(scenario)
}

/// What each goose user keeps between transactions (goose holds one session value per
/// user): its access token, its rate limiter and, in `http_config_listen`, what it
/// listens to.
#[derive(Debug, Clone, Default)]
pub struct UserState {
    pub token: Option<String>,
    pub limiter: Option<rate::RateLimiter>,
    pub listener: Option<listen::ListenerState>,
}

/// The user's [`UserState`], created empty on first use.
pub fn user_state(user: &mut GooseUser) -> &mut UserState {
    if user.get_session_data::<UserState>().is_none() {
        user.set_session_data(UserState::default());
    }
    user.get_session_data_unchecked_mut::<UserState>()
}

/// Waits for this user's next slot under `--rate-per-user` (no wait without one).
pub async fn pace(user: &mut GooseUser) {
    let Some(rate) = settings().rate_per_user else {
        return;
    };
    let state = user_state(user);
    if state.limiter.is_none() {
        // The rate was validated when the settings were read.
        state.limiter = rate::RateLimiter::new(rate).ok();
    }
    if let Some(limiter) = state.limiter.as_mut() {
        let delay = limiter.reserve(Instant::now());
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

/// Logs the user in with `LOADTEST_USERNAME` / `LOADTEST_PASSWORD` and keeps the token.
pub async fn login(user: &mut GooseUser) -> TransactionResult {
    let Some((username, password)) = settings().credentials.as_ref() else {
        return Ok(());
    };
    let params = [
        ("username", username.as_str()),
        ("password", password.as_str()),
    ];
    let goose = user.post_form(LOGIN_PATH, &params).await?;
    let mut request = goose.request;
    let body = match goose.response {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => return Ok(()),
    };
    let token = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("accessToken")?.as_str().map(str::to_string));
    match token {
        Some(token) => {
            user_state(user).token = Some(token);
            Ok(())
        }
        None => user.set_failure(
            "login: no accessToken in reply",
            &mut request,
            None,
            Some(&body),
        ),
    }
}

/// The access token this user got from [`login`], if any.
pub fn access_token(user: &GooseUser) -> Option<String> {
    user.get_session_data::<UserState>()
        .and_then(|s| s.token.clone())
}

/// A `POST` of the form `body` (already encoded, see [`nacos::form_body`]) to `path`,
/// recorded under `name`.
pub async fn post_form_body(
    user: &mut GooseUser,
    path: &str,
    name: &str,
    body: String,
) -> Result<GooseResponse, Box<TransactionError>> {
    let builder = user
        .get_request_builder(&GooseMethod::Post, path)?
        .header("Content-Type", nacos::FORM_CONTENT_TYPE)
        .body(body);
    let request = GooseRequest::builder()
        .method(GooseMethod::Post)
        .path(path)
        .name(name)
        .set_request_builder(builder)
        .build();
    user.request(request).await
}

/// Publishes `content` under `data_id`; the request fails unless the reply is `true`.
pub async fn publish(user: &mut GooseUser, data_id: &str, content: &str) -> TransactionResult {
    let settings = settings();
    let token = access_token(user);
    let body = nacos::publish_form(data_id, GROUP, content, &settings.tenant, token.as_deref());
    let goose = post_form_body(user, CONFIGS_PATH, CONFIGS_PATH, body).await?;
    check_body(user, goose, "publish: reply is not `true`", |body| {
        body.trim() == "true"
    })
    .await
}

/// Reads `data_id`; the request fails unless the reply is 200 with exactly `expected`.
pub async fn query(user: &mut GooseUser, data_id: &str, expected: &str) -> TransactionResult {
    let settings = settings();
    let token = access_token(user);
    let path = nacos::query_path(data_id, GROUP, &settings.tenant, token.as_deref());
    let request = GooseRequest::builder()
        .method(GooseMethod::Get)
        .path(path.as_str())
        .name(CONFIGS_PATH)
        .build();
    let goose = user.request(request).await?;
    check_body(
        user,
        goose,
        "query: content differs from the seed",
        |body| body == expected,
    )
    .await
}

/// Reads the whole reply body (so the connection is reused) and marks the request failed
/// when it was a success by status but `ok` rejects the body. Transport errors and
/// non-2xx statuses are already counted as failures by goose.
async fn check_body(
    user: &mut GooseUser,
    goose: GooseResponse,
    tag: &str,
    ok: impl FnOnce(&str) -> bool,
) -> TransactionResult {
    let mut request = goose.request;
    let Ok(response) = goose.response else {
        return Ok(());
    };
    let status_ok = response.status().is_success();
    match response.text().await {
        Ok(body) if status_ok && !ok(&body) => {
            user.set_failure(tag, &mut request, None, Some(&body))
        }
        Ok(_) => Ok(()),
        Err(e) => user.set_failure(
            &format!("{tag}: reading the body: {e}"),
            &mut request,
            None,
            None,
        ),
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Transaction: publish a unique content to a random key (`http_config_set`,
/// `http_config_set2`), at most `--rate-per-user` times per second.
pub async fn publish_random_key(user: &mut GooseUser) -> TransactionResult {
    pace(user).await;
    let settings = settings();
    let data_id = settings.data_id(settings.random_key());
    let content = settings.unique_content(user.weighted_users_index);
    publish(user, &data_id, &content).await
}

/// Transaction: read a random key and check it holds its seed (`http_config_query`), at
/// most `--rate-per-user` times per second.
pub async fn query_random_key(user: &mut GooseUser) -> TransactionResult {
    pace(user).await;
    let settings = settings();
    let data_id = settings.data_id(settings.random_key());
    let expected = settings.seed_content(&data_id);
    query(user, &data_id, &expected).await
}

/// How many seed publishes are in flight at once.
const SEED_CONCURRENCY: usize = 16;
/// How long a seeded key may take to read back its content: Java Nacos answers a
/// publish before its read cache has the new content (an asynchronous dump).
pub const SEED_READ_BACK_LIMIT: Duration = Duration::from_secs(30);

/// `test_start` transaction: publishes the seed content of every key once, before any
/// user starts (16 at a time, outside goose's metrics). Goose ignores what a
/// `test_start` transaction returns, so problems are printed here (and then show as
/// failed queries).
pub async fn seed_keys(user: &mut GooseUser) -> TransactionResult {
    let settings = settings();
    let started = Instant::now();
    if let Err(e) = login(user).await {
        eprintln!("seeding: login failed: {e}");
    }
    let token = access_token(user);
    let items: Vec<(String, String)> = (0..settings.keys)
        .map(|i| {
            let data_id = settings.data_id(i);
            let content = settings.seed_content(&data_id);
            (data_id, content)
        })
        .collect();
    let failed = seed(&user.base_url, &items, &settings.tenant, token.as_deref()).await;
    if failed.is_empty() {
        eprintln!(
            "seeded {} key(s) ({}0 .. {}{}) in {:.1?}",
            settings.keys,
            settings.key_prefix,
            settings.key_prefix,
            settings.keys - 1,
            started.elapsed()
        );
    } else {
        for e in failed.iter().take(3) {
            eprintln!("seeding: {e}");
        }
        eprintln!(
            "seeding: {} of {} keys failed: queries of them will fail",
            failed.len(),
            settings.keys
        );
    }
    Ok(())
}

/// Publishes each `(dataId, content)` of `items` to the server at `base`,
/// [`SEED_CONCURRENCY`] at a time, then waits (at most [`SEED_READ_BACK_LIMIT`]) until
/// each published key reads back its content; returns what failed.
pub async fn seed(
    base: &reqwest::Url,
    items: &[(String, String)],
    tenant: &str,
    token: Option<&str>,
) -> Vec<String> {
    let client = match tls::reqwest_builder(reqwest::Client::builder())
        .timeout(Duration::from_secs(30))
        .build()
    {
        Ok(client) => client,
        Err(e) => return vec![format!("building an HTTP client: {e}")],
    };
    let url = match base.join(CONFIGS_PATH) {
        Ok(url) => url,
        Err(e) => return vec![format!("{base}: {e}")],
    };
    let mut failed = Vec::new();
    let mut published = Vec::with_capacity(items.len());
    for chunk in items.chunks(SEED_CONCURRENCY) {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, (data_id, content)) in chunk.iter().enumerate() {
            let body = nacos::publish_form(data_id, GROUP, content, tenant, token);
            let request = client
                .post(url.clone())
                .header("Content-Type", nacos::FORM_CONTENT_TYPE)
                .body(body);
            let data_id = data_id.clone();
            tasks.spawn(async move {
                match request.send().await {
                    Ok(response) => {
                        let status = response.status();
                        let body = response.text().await.unwrap_or_default();
                        if status.is_success() && body.trim() == "true" {
                            Ok(i)
                        } else {
                            Err(format!("{data_id}: {status} {}", body.trim()))
                        }
                    }
                    Err(e) => Err(format!("{data_id}: {e}")),
                }
            });
        }
        while let Some(result) = tasks.join_next().await {
            match result {
                Ok(Ok(i)) => published.push(&chunk[i]),
                Ok(Err(e)) => failed.push(e),
                Err(e) => failed.push(format!("seed task: {e}")),
            }
        }
    }
    failed.extend(read_back(&client, base, &published, tenant, token).await);
    failed
}

/// Reads each `(dataId, content)` of `items` from the server at `base` until it
/// answers 200 with that content, again and again for at most
/// [`SEED_READ_BACK_LIMIT`]; returns the keys that never did.
async fn read_back(
    client: &reqwest::Client,
    base: &reqwest::Url,
    items: &[&(String, String)],
    tenant: &str,
    token: Option<&str>,
) -> Vec<String> {
    let deadline = Instant::now() + SEED_READ_BACK_LIMIT;
    let mut pending: Vec<(&(String, String), String)> =
        items.iter().map(|&item| (item, String::new())).collect();
    loop {
        let mut left = Vec::new();
        for chunk in pending.chunks(SEED_CONCURRENCY) {
            let mut tasks = tokio::task::JoinSet::new();
            for (i, ((data_id, content), _)) in chunk.iter().enumerate() {
                let path = nacos::query_path(data_id, GROUP, tenant, token);
                let url = match base.join(&path) {
                    Ok(url) => url,
                    Err(e) => return vec![format!("{base}{path}: {e}")],
                };
                let (request, content) = (client.get(url), content.clone());
                tasks.spawn(async move {
                    let last = match request.send().await {
                        Ok(response) => {
                            let status = response.status();
                            let body = response.text().await.unwrap_or_default();
                            if status.is_success() && body == content {
                                return (i, None);
                            }
                            format!("{status} {:?}", body.chars().take(60).collect::<String>())
                        }
                        Err(e) => e.to_string(),
                    };
                    (i, Some(last))
                });
            }
            while let Some(result) = tasks.join_next().await {
                match result {
                    Ok((_, None)) => {}
                    Ok((i, Some(last))) => left.push((chunk[i].0, last)),
                    Err(e) => left.push((chunk[0].0, format!("read-back task: {e}"))),
                }
            }
        }
        if left.is_empty() {
            return Vec::new();
        }
        if Instant::now() >= deadline {
            return left
                .into_iter()
                .map(|((data_id, _), last)| {
                    format!(
                        "{data_id}: published, but did not read back its content within \
                         {SEED_READ_BACK_LIMIT:?} (last answer: {last})"
                    )
                })
                .collect();
        }
        pending = left;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Publishes `content` of one key over the Nacos HTTP API (`url`: the configs
/// resource of a node), the public namespace; `Ok` only for 200 with body `true`.
/// The fan-out tools publish with it.
pub async fn publish_once(
    http: &reqwest::Client,
    url: &str,
    data_id: &str,
    group: &str,
    content: &str,
) -> Result<(), String> {
    let form = [
        ("dataId", data_id),
        ("group", group),
        ("content", content),
        ("tenant", ""),
    ];
    let response = http
        .post(url)
        .form(&form)
        .send()
        .await
        .map_err(|e| format!("HTTP publish: {e}"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if status.is_success() && body.trim() == "true" {
        Ok(())
    } else {
        Err(format!("HTTP publish: {status} {}", body.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<Settings, GooseError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(100, "lt-", |name| map.get(name).cloned())
    }

    #[test]
    fn defaults() {
        let s = read(&[]).unwrap();
        assert_eq!(s.keys, 100);
        assert_eq!(s.key_prefix, "lt-");
        assert_eq!(s.tenant, "");
        assert_eq!(s.wait, None);
        assert_eq!(s.rate_per_user, None);
        assert_eq!(s.credentials, None);
        assert_eq!(s.data_id(7), "lt-7");
    }

    #[test]
    fn overrides() {
        let s = read(&[
            ("LOADTEST_KEYS", "3"),
            ("LOADTEST_KEY_PREFIX", "a.b:c_"),
            ("LOADTEST_TENANT", "ns-1"),
            ("LOADTEST_WAIT_MS", "5-15"),
            ("LOADTEST_RATE_PER_USER", "2.5"),
            ("LOADTEST_CONTENT_BYTES", "64"),
            ("LOADTEST_USERNAME", "nacos"),
            ("LOADTEST_PASSWORD", "pw"),
        ])
        .unwrap();
        assert_eq!(s.keys, 3);
        assert_eq!(s.data_id(2), "a.b:c_2");
        assert_eq!(s.tenant, "ns-1");
        assert_eq!(
            s.wait,
            Some((Duration::from_millis(5), Duration::from_millis(15)))
        );
        assert_eq!(s.rate_per_user, Some(2.5));
        assert_eq!(s.credentials, Some(("nacos".into(), "pw".into())));
        assert_eq!(s.unique_content(0).len(), 64);
        assert_eq!(s.seed_content("x").len(), 64);
        for _ in 0..100 {
            assert!(s.random_key() < 3);
        }
    }

    #[test]
    fn rejects_bad_values() {
        assert!(read(&[("LOADTEST_KEYS", "0")]).is_err());
        assert!(read(&[("LOADTEST_KEYS", "x")]).is_err());
        assert!(read(&[("LOADTEST_KEY_PREFIX", "a/b")]).is_err());
        assert!(read(&[("LOADTEST_TENANT", "a b")]).is_err());
        assert!(read(&[("LOADTEST_WAIT_MS", "9-3")]).is_err());
        assert!(read(&[("LOADTEST_USERNAME", "nacos")]).is_err());
        assert!(read(&[("LOADTEST_CONTENT_BYTES", "99999999")]).is_err());
        assert!(read(&[("LOADTEST_RATE_PER_USER", "-1")]).is_err());
        assert!(read(&[("LOADTEST_RATE_PER_USER", "fast")]).is_err());
        assert!(read(&[("LOADTEST_RATE_PER_USER", "inf")]).is_err());
        assert_eq!(
            read(&[("LOADTEST_RATE_PER_USER", "0")])
                .unwrap()
                .rate_per_user,
            None
        );
    }

    #[test]
    fn wait_forms() {
        assert_eq!(
            parse_wait("10"),
            Some((Duration::from_millis(10), Duration::from_millis(10)))
        );
        assert_eq!(
            parse_wait(" 0 - 2 "),
            Some((Duration::ZERO, Duration::from_millis(2)))
        );
        assert_eq!(parse_wait("-1"), None);
    }

    #[test]
    fn contents_are_unique() {
        let s = read(&[]).unwrap();
        assert_ne!(s.unique_content(1), s.unique_content(1));
        assert_eq!(s.seed_content("lt-0"), "loadtest seed lt-0");
    }

    #[test]
    fn flags_win_over_the_environment() {
        let args = cli::ScenarioArgs {
            keys: Some(7),
            rate_per_user: Some(3.0),
            ..Default::default()
        };
        let map: HashMap<String, String> = [("LOADTEST_KEYS", "9"), ("LOADTEST_TENANT", "ns")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let s = Settings::from_lookup(100, "lt-", |name| {
            args.lookup(name).or_else(|| map.get(name).cloned())
        })
        .unwrap();
        assert_eq!(s.keys, 7);
        assert_eq!(s.tenant, "ns");
        assert_eq!(s.rate_per_user, Some(3.0));
        // Key naming: prefix + index, 0-based.
        assert_eq!(s.data_id(0), "lt-0");
        assert_eq!(s.data_id(6), "lt-6");
        assert_eq!(s.seed_content(&s.data_id(3)), "loadtest seed lt-3");
    }

    #[test]
    fn encodes_components() {
        assert_eq!(encode("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(encode("a b/+="), "a%20b%2F%2B%3D");
    }
}
