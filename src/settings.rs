//! Every setting in one struct: command-line flags with `TACOS_*` environment
//! twins and keys of an optional TOML file (flag > env > file > default, see
//! [`file`]), validated before anything starts.

pub mod file;

pub use crate::secret::Secret;

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;

/// The largest content a single write may carry (hard ceiling of the settings).
pub const MAX_CONTENT_CEILING: usize = 32 * 1024 * 1024;

/// Tacos: a config center that speaks the Nacos protocols, replicated with Raft.
///
/// With no arguments it serves one node on 127.0.0.1:8848 with its data in
/// ./tacos_data. Writes are answered only after they are fsynced and applied.
///
/// Every setting below can be given as a flag, as its TACOS_* environment
/// variable, or as a key of the --config file; a flag wins over the
/// environment, which wins over the file, which wins over the default.
///
/// The subcommands are operator tools that run and exit (see
/// docs/operations.md); without one, tacos serves.
#[derive(Debug, Clone, Parser)]
#[command(name = "tacos", version, about, long_about)]
pub struct Settings {
    // An operator tool to run instead of serving. The settings are global
    // (accepted before or after the subcommand name) because `restore`
    // needs the node's id, addresses and data dir.
    #[command(subcommand)]
    pub command: Option<crate::ops::Command>,

    /// Read settings from this TOML file: keys are the flag names without
    /// the dashes in front (`http-port = 8848`, `data-dir = "/var/lib/tacos"`).
    /// Precedence: flag > environment > file > default.
    #[arg(long, global = true, env = "TACOS_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Directory for the Raft log, metadata and snapshots (created if missing).
    /// Only one process may use it at a time.
    #[arg(
        long,
        global = true,
        env = "TACOS_DATA_DIR",
        default_value = "tacos_data"
    )]
    pub data_dir: PathBuf,

    /// Address to listen on (use 0.0.0.0 to accept connections from other hosts).
    #[arg(long, global = true, env = "TACOS_BIND", default_value = "127.0.0.1")]
    pub bind: IpAddr,

    /// HTTP port for the API.
    #[arg(long, global = true, env = "TACOS_HTTP_PORT", default_value_t = 8848)]
    pub http_port: u16,

    /// This node's Raft id (1 or more), unique in the cluster.
    #[arg(long, global = true, env = "TACOS_NODE_ID", default_value_t = 1)]
    pub node_id: u64,

    /// Port for the Nacos 2.x gRPC API (what the official SDKs use by
    /// default). Default: the HTTP port + 1000.
    #[arg(long, global = true, env = "TACOS_GRPC_PORT")]
    pub grpc_port: Option<u16>,

    /// Worker threads for the gRPC API (default: one per CPU).
    #[arg(long, global = true, env = "TACOS_GRPC_WORKERS")]
    pub grpc_workers: Option<usize>,

    /// Port for traffic between nodes (Raft, forwarded writes, joins).
    /// Default: the HTTP port + 1001.
    #[arg(long, global = true, env = "TACOS_CLUSTER_PORT")]
    pub cluster_port: Option<u16>,

    /// Serve the web console (its pages and its JSON API) on this port of
    /// its own, as Nacos 3 and r-nacos do, so it can stay off the network
    /// the applications use: the HTTP port then no longer serves it. The
    /// console port also serves the login, user, role, permission, admin
    /// and health routes the console calls, and not the Nacos config API.
    /// Off by default (the console is on the HTTP port).
    #[arg(long, global = true, env = "TACOS_CONSOLE_PORT")]
    pub console_port: Option<u16>,

    /// Host name or IP that other nodes and clients use to reach this node.
    /// Default: the --bind address (required when binding 0.0.0.0 or ::).
    #[arg(long, global = true, env = "TACOS_ADVERTISE")]
    pub advertise: Option<String>,

    /// Join an existing cluster through any member's cluster address
    /// (host:port); retried with backoff until this node is a voter.
    /// Ignored once the data dir belongs to a cluster.
    #[arg(
        long,
        global = true,
        env = "TACOS_JOIN",
        value_name = "ADDR",
        conflicts_with = "init"
    )]
    pub join: Option<String>,

    /// With --join: join as a learner, and stay one. A learner receives the
    /// log and serves reads, long polls, gRPC queries and listens from its
    /// own state (writes are forwarded to the leader), but is not part of
    /// the commit quorum: add learners to serve more clients (or a remote
    /// data center) without slowing commits. See docs/cluster.md.
    #[arg(long, global = true, env = "TACOS_LEARNER", requires = "join")]
    pub learner: bool,

    /// A learner answers reads with 503 while it is more than this many log
    /// entries behind the leader's read index (it checks every second), so
    /// its clients move to another node; a request can ask for a stale
    /// read instead (HTTP `consistency=stale`).
    #[arg(
        long,
        global = true,
        env = "TACOS_LEARNER_MAX_LAG",
        default_value_t = 1000,
        value_name = "ENTRIES"
    )]
    pub learner_max_lag: u64,

    /// A learner that has not reached the leader for this many seconds does
    /// not know how far behind it is, and answers reads with 503 as if
    /// too far behind (see --learner-max-lag).
    #[arg(
        long,
        global = true,
        env = "TACOS_LEARNER_STALE_SECONDS",
        default_value_t = 10
    )]
    pub learner_stale_seconds: u64,

    /// The zone (data center, rack: any name) this node is in. The
    /// address-server list (`GET /nacos/serverlist`, what SDKs configured
    /// with an `endpoint` fetch) hands clients the serving nodes of the
    /// zone they ask in (`?zone=`, else this node's), its learners when it
    /// has serving ones. Default: none.
    #[arg(long, global = true, env = "TACOS_ZONE", value_name = "NAME")]
    pub zone: Option<String>,

    /// Initialize a new cluster with this node as its only voter, when the
    /// data dir is empty. Node 1 does this by default unless --join is given;
    /// any other new node waits to be added.
    #[arg(long, global = true, env = "TACOS_INIT")]
    pub init: bool,

    /// Shared secret every internal request between nodes must carry (at
    /// least 16 characters). Required when the cluster address or the bind
    /// address is not loopback.
    #[arg(
        long,
        global = true,
        env = "TACOS_CLUSTER_TOKEN",
        hide_env_values = true
    )]
    pub cluster_token: Option<String>,

    /// Serve the client ports (HTTP API, console, gRPC) over TLS with this
    /// PEM certificate: the leaf first, then its intermediates. With
    /// --key-file. A rotated pair is picked up without a restart (the files
    /// are checked every 10 s, and reread on SIGHUP). See docs/security.md.
    #[arg(long, global = true, env = "TACOS_CERT_FILE", value_name = "FILE")]
    pub cert_file: Option<PathBuf>,

    /// The PEM private key of --cert-file (PKCS#8, RSA or EC).
    #[arg(long, global = true, env = "TACOS_KEY_FILE", value_name = "FILE")]
    pub key_file: Option<PathBuf>,

    /// With --client-cert-auth: PEM file of the CA(s) client certificates
    /// must be signed by.
    #[arg(
        long,
        global = true,
        env = "TACOS_TRUSTED_CA_FILE",
        value_name = "FILE"
    )]
    pub trusted_ca_file: Option<PathBuf>,

    /// Require a client certificate signed by --trusted-ca-file on the
    /// client ports (mutual TLS); clients without one are refused in the
    /// handshake.
    #[arg(long, global = true, env = "TACOS_CLIENT_CERT_AUTH")]
    pub client_cert_auth: bool,

    /// With --cert-file: also accept plaintext gRPC clients on the gRPC
    /// port while they move over to TLS (as Nacos'
    /// `nacos.remote.server.rpc.tls.compatibility`, which is on there by
    /// default). Off: a plaintext client is refused at once.
    #[arg(long, global = true, env = "TACOS_GRPC_TLS_COMPATIBILITY")]
    pub grpc_tls_compatibility: bool,

    /// Mutual TLS on the cluster port: this node's PEM certificate, which
    /// it serves to the nodes that call it and presents when it calls them
    /// (so it must be valid for the address other nodes reach it at,
    /// --advertise, as a DNS name or IP SAN). With --peer-key-file and
    /// --peer-trusted-ca-file; every node of the cluster needs them.
    #[arg(long, global = true, env = "TACOS_PEER_CERT_FILE", value_name = "FILE")]
    pub peer_cert_file: Option<PathBuf>,

    /// The PEM private key of --peer-cert-file.
    #[arg(long, global = true, env = "TACOS_PEER_KEY_FILE", value_name = "FILE")]
    pub peer_key_file: Option<PathBuf>,

    /// PEM file of the CA(s) every node's peer certificate is signed by: a
    /// node accepts calls only from, and calls only, nodes whose
    /// certificate chains to it.
    #[arg(
        long,
        global = true,
        env = "TACOS_PEER_TRUSTED_CA_FILE",
        value_name = "FILE"
    )]
    pub peer_trusted_ca_file: Option<PathBuf>,

    /// Require a login (token or username/password) on the Nacos open API
    /// (configs, listener, history, gRPC). Off by default, as in Nacos; the
    /// console, user and admin routes always require one.
    #[arg(long, global = true, env = "TACOS_OPEN_API_AUTH")]
    pub open_api_auth: bool,

    /// Refuse a config write into a namespace id that was never created
    /// (400 "namespace not exist"). Off by default: as in Nacos, a client may
    /// name any tenant, and the first publish into one creates it (named as
    /// its id), so it shows in namespace lists and the console.
    #[arg(long, global = true, env = "TACOS_STRICT_NAMESPACES")]
    pub strict_namespaces: bool,

    /// Run Nacos 2.3+'s parameter filter on client requests
    /// (`nacos.core.param.check.enabled`): dataIds and groups only
    /// `a-zA-Z0-9-_:.`, namespace ids only `[a-zA-Z0-9_-]` and at most 64,
    /// answered with the filter's "Param '...' is illegal" messages. Off by
    /// default: keys follow Java Nacos' own check (`ParamUtils.isValid`:
    /// letters and digits of any script plus `- _ : .`), as Nacos up to
    /// 2.2 and r-nacos do, so Chinese dataIds and groups move in.
    #[arg(long, global = true, env = "TACOS_PARAM_CHECK")]
    pub param_check: bool,

    /// Name of the first admin, created when the cluster is initialized.
    #[arg(
        long,
        global = true,
        env = "TACOS_ADMIN_USERNAME",
        default_value = "nacos"
    )]
    pub admin_username: String,

    /// Password of the first admin (at least 8 characters), used once, when
    /// the cluster is initialized. Without it a random one is generated,
    /// printed once in the log and written to DATA_DIR/initial-admin-password
    /// (mode 0600). Change it later with the users API.
    #[arg(
        long,
        global = true,
        env = "TACOS_ADMIN_PASSWORD",
        hide_env_values = true
    )]
    pub admin_password: Option<Secret>,

    /// Key that signs access tokens (base64 of at least 32 bytes), used once,
    /// when the cluster is initialized; it is then replicated to every node.
    /// Without it a random key is generated.
    #[arg(
        long,
        global = true,
        env = "TACOS_TOKEN_SECRET",
        hide_env_values = true
    )]
    pub token_secret: Option<Secret>,

    /// Lifetime of an access token, in seconds.
    #[arg(long, global = true, env = "TACOS_TOKEN_TTL", default_value_t = 18_000)]
    pub token_ttl: u64,

    /// Audit log rows kept (older rows are dropped).
    #[arg(
        long,
        global = true,
        env = "TACOS_AUDIT_LIMIT",
        default_value_t = 100_000
    )]
    pub audit_limit: u32,

    /// Lock an account (any username tried) after this many failed logins
    /// within --login-lockout-seconds; while locked even the right password
    /// is refused (429, saying until when). Counted per node, in memory.
    /// 0: never lock (the per-IP limit of 20 failures a minute stays).
    #[arg(
        long,
        global = true,
        env = "TACOS_LOGIN_LOCKOUT_FAILURES",
        default_value_t = 5
    )]
    pub login_lockout_failures: u32,

    /// How long a locked account stays locked, in seconds (also the window
    /// in which --login-lockout-failures are counted).
    #[arg(
        long,
        global = true,
        env = "TACOS_LOGIN_LOCKOUT_SECONDS",
        default_value_t = 300
    )]
    pub login_lockout_seconds: u64,

    /// Shortest password accepted when a local user's password is set
    /// (8 to 128). Existing passwords keep working.
    #[arg(
        long,
        global = true,
        env = "TACOS_PASSWORD_MIN_LENGTH",
        default_value_t = 8
    )]
    pub password_min_length: usize,

    /// How many of the classes lowercase, uppercase, digit and other a new
    /// local password must mix (1 to 4).
    #[arg(
        long,
        global = true,
        env = "TACOS_PASSWORD_MIN_CLASSES",
        default_value_t = 1
    )]
    pub password_min_classes: u8,

    /// Check logins against this LDAP directory too: ldap://HOST:PORT
    /// (with --ldap-starttls for TLS) or ldaps://HOST:PORT. See
    /// docs/auth.md. Default: none (local users only).
    #[arg(long, global = true, env = "TACOS_LDAP_URL", value_name = "URL")]
    pub ldap_url: Option<String>,

    /// Upgrade the ldap:// connection to TLS with StartTLS.
    #[arg(long, global = true, env = "TACOS_LDAP_STARTTLS")]
    pub ldap_starttls: bool,

    /// PEM file of the CA(s) the directory's TLS certificate must chain to.
    /// Default: the system's CA certificates.
    #[arg(long, global = true, env = "TACOS_LDAP_CA_FILE", value_name = "FILE")]
    pub ldap_ca_file: Option<PathBuf>,

    /// DN of the service account that searches for users (with
    /// --ldap-bind-password). Default: search anonymously.
    #[arg(long, global = true, env = "TACOS_LDAP_BIND_DN", value_name = "DN")]
    pub ldap_bind_dn: Option<String>,

    /// Password of --ldap-bind-dn.
    #[arg(
        long,
        global = true,
        env = "TACOS_LDAP_BIND_PASSWORD",
        hide_env_values = true
    )]
    pub ldap_bind_password: Option<Secret>,

    /// Where users are searched (subtree), e.g. ou=people,dc=example,dc=org.
    /// Required with --ldap-url.
    #[arg(long, global = true, env = "TACOS_LDAP_USER_BASE", value_name = "DN")]
    pub ldap_user_base: Option<String>,

    /// The filter that finds a user; {username} is the login name (escaped).
    /// A user it does not match cannot log in: add a condition to shut out
    /// disabled accounts, e.g. (&(uid={username})(!(employeeType=disabled))).
    #[arg(
        long,
        global = true,
        env = "TACOS_LDAP_USER_FILTER",
        default_value = "(uid={username})"
    )]
    pub ldap_user_filter: String,

    /// Where groups are searched (subtree) with --ldap-group-filter. Without
    /// it a user's groups are its memberOf values only.
    #[arg(long, global = true, env = "TACOS_LDAP_GROUP_BASE", value_name = "DN")]
    pub ldap_group_base: Option<String>,

    /// The filter that finds a user's groups under --ldap-group-base; {dn}
    /// is the user's DN (escaped).
    #[arg(
        long,
        global = true,
        env = "TACOS_LDAP_GROUP_FILTER",
        default_value = "(|(member={dn})(uniqueMember={dn}))"
    )]
    pub ldap_group_filter: String,

    /// GROUP_DN=ROLE: members of the group get the Tacos role (its namespace
    /// permissions; ROLE_ADMIN makes them admins). Repeat the flag, or
    /// separate pairs with ';' (in the environment and the config file).
    #[arg(
        long,
        global = true,
        env = "TACOS_LDAP_GROUP_ROLE",
        value_name = "GROUP_DN=ROLE",
        value_delimiter = ';'
    )]
    pub ldap_group_role: Vec<String>,

    /// The role of a directory user in no mapped group. Default: none (it
    /// may log in, and may do nothing that needs a permission).
    #[arg(
        long,
        global = true,
        env = "TACOS_LDAP_DEFAULT_ROLE",
        value_name = "ROLE"
    )]
    pub ldap_default_role: Option<String>,

    /// Which account a login uses for a name both a local user and the
    /// directory have: `local` (the directory is not asked) or `directory`
    /// (the local user is used only when the directory has no such user
    /// or is down).
    #[arg(
        long,
        global = true,
        env = "TACOS_LDAP_PRECEDENCE",
        default_value = "local",
        value_parser = parse_precedence
    )]
    pub ldap_precedence: tacos_app::auth::ldap::Precedence,

    /// Bound on connecting to the directory and on each request to it, in
    /// milliseconds; past it the login is answered 503 (local users still
    /// log in).
    #[arg(
        long,
        global = true,
        env = "TACOS_LDAP_TIMEOUT_MS",
        default_value_t = 5000
    )]
    pub ldap_timeout_ms: u64,

    /// HTTP worker threads (default: one per CPU).
    #[arg(long, global = true, env = "TACOS_HTTP_WORKERS")]
    pub http_workers: Option<usize>,

    /// Largest value (config content) accepted, in bytes.
    #[arg(long, global = true, env = "TACOS_MAX_CONTENT_SIZE", default_value_t = 10 * 1024 * 1024)]
    pub max_content_size: usize,

    /// A log segment file is closed and a new one started at this size, in bytes.
    #[arg(long, global = true, env = "TACOS_SEGMENT_SIZE", default_value_t = 64 * 1024 * 1024)]
    pub segment_size: u64,

    /// Encrypt the data dir at rest: the file holding the key-encryption key
    /// (32 bytes as 64 hex digits, base64, or raw; make one with `openssl
    /// rand -hex 32`). The log, snapshots and backups are then written
    /// encrypted; a data dir once encrypted refuses to start without it.
    /// Give every node of a cluster the same key (docs/security.md).
    #[arg(
        long,
        global = true,
        env = "TACOS_ENCRYPTION_KEY_FILE",
        value_name = "FILE"
    )]
    pub encryption_key_file: Option<PathBuf>,

    /// History rows kept per config (older rows are dropped).
    #[arg(
        long,
        global = true,
        env = "TACOS_HISTORY_LIMIT",
        default_value_t = 100
    )]
    pub history_limit: u32,

    /// Most gray versions (beta, tags) one config may have; a publish of
    /// one more is refused (Nacos' `nacos.config.gray.version.max.count`).
    #[arg(
        long,
        global = true,
        env = "TACOS_MAX_GRAYS_PER_CONFIG",
        default_value_t = 10
    )]
    pub max_grays_per_config: u32,

    /// Most keys one listener request may watch.
    #[arg(
        long,
        global = true,
        env = "TACOS_MAX_LISTEN_KEYS",
        default_value_t = 10_000
    )]
    pub max_listen_keys: usize,

    /// Most long-poll requests held at once; more are refused with 503.
    #[arg(
        long,
        global = true,
        env = "TACOS_MAX_LONG_POLLS",
        default_value_t = 20_000
    )]
    pub max_long_polls: usize,

    /// On SIGTERM/SIGINT: close the gRPC port to new connections, ask every
    /// connected gRPC client to move to another node (`ConnectResetRequest`),
    /// and wait at most this many seconds for them to go before stopping.
    /// 0: stop at once, without asking.
    #[arg(long, global = true, env = "TACOS_DRAIN_SECONDS", default_value_t = 3)]
    pub drain_seconds: u64,

    /// For this many seconds after a gRPC config connection is set up, and
    /// until its first listen request, notify it of every change in its
    /// namespace (at setup also of the changes made in as many seconds
    /// before): nacos-sdk 0.8 (Rust) listens again only once a minute after
    /// a reconnect. 0: off.
    #[arg(
        long,
        global = true,
        env = "TACOS_UNLISTENED_PUSH_SECONDS",
        default_value_t = 90
    )]
    pub unlistened_push_seconds: u64,

    /// Most gRPC client connections this node keeps: above it, every 5 s it
    /// asks the longest-connected clients to move to another node of their
    /// server list (`ConnectResetRequest`, as Nacos' loader does; at most
    /// 50 a round) and ends the streams of those still here 5 s later, so
    /// clients spread over the nodes added after they connected. 0: off.
    #[arg(
        long,
        global = true,
        env = "TACOS_GRPC_CONNECTION_TARGET",
        default_value_t = 0,
        value_name = "CONNECTIONS"
    )]
    pub grpc_connection_target: usize,

    /// Most fuzzy watch patterns one gRPC connection may watch (Nacos 3's
    /// `ConfigFuzzyWatchRequest`); one more is refused with errorCode 50310
    /// (Nacos' `nacos.config.fuzzy.watch.max.pattern.count`, which Nacos
    /// counts over the whole server).
    #[arg(
        long,
        global = true,
        env = "TACOS_FUZZY_WATCH_MAX_PATTERNS",
        default_value_t = 20
    )]
    pub fuzzy_watch_max_patterns: usize,

    /// Most configs one fuzzy watch pattern tracks; past it new keys are
    /// not notified and a watch is answered with errorCode 50311 (Nacos'
    /// `nacos.config.fuzzy.watch.max.pattern.match.config.count`).
    #[arg(
        long,
        global = true,
        env = "TACOS_FUZZY_WATCH_MAX_MATCHED",
        default_value_t = 500
    )]
    pub fuzzy_watch_max_matched: usize,

    /// Take a snapshot (and purge the log behind it) once this many bytes of
    /// entries were appended since the last one.
    #[arg(long, global = true, env = "TACOS_SNAPSHOT_LOG_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub snapshot_log_bytes: u64,

    /// Take a snapshot (and purge the log behind it) after this many new log entries.
    #[arg(
        long,
        global = true,
        env = "TACOS_SNAPSHOT_ENTRIES",
        default_value_t = 20_000
    )]
    pub snapshot_entries: u64,

    /// Log output: `text` for people, `json` for log collectors (one object
    /// per line). The level comes from RUST_LOG (default `info,openraft=warn`).
    #[arg(long, global = true, env = "TACOS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

fn parse_precedence(s: &str) -> Result<tacos_app::auth::ldap::Precedence, String> {
    s.parse()
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// A setting that is out of range.
#[derive(Debug, thiserror::Error)]
#[error("invalid setting --{name}: {reason}")]
pub struct InvalidSetting {
    pub name: &'static str,
    pub reason: String,
}

impl Settings {
    /// Checks ranges that clap's types cannot express.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        let invalid = |name, reason: String| Err(InvalidSetting { name, reason });
        if self.node_id == 0 {
            return invalid("node-id", "must be 1 or more".into());
        }
        if self.cluster_port().is_none() {
            return invalid(
                "cluster-port",
                "the default (HTTP port + 1001) is past 65535; set it".into(),
            );
        }
        if self.grpc_port().is_none() {
            return invalid(
                "grpc-port",
                "the default (HTTP port + 1000) is past 65535; set it".into(),
            );
        }
        let ports = [Some(self.http_port), self.grpc_port(), self.cluster_port()];
        if ports[0] == ports[1] || ports[0] == ports[2] || ports[1] == ports[2] {
            return invalid(
                "cluster-port",
                format!(
                    "the HTTP ({}), gRPC ({}) and cluster ({}) ports must differ",
                    self.http_port,
                    self.grpc_port().unwrap_or_default(),
                    self.cluster_port().unwrap_or_default()
                ),
            );
        }
        if let Some(console) = self.console_port {
            if ports.contains(&Some(console)) {
                return invalid(
                    "console-port",
                    format!(
                        "must differ from the HTTP ({}), gRPC ({}) and cluster ({}) ports",
                        self.http_port,
                        self.grpc_port().unwrap_or_default(),
                        self.cluster_port().unwrap_or_default()
                    ),
                );
            }
        }
        if self.grpc_workers == Some(0) {
            return invalid("grpc-workers", "must be 1 or more".into());
        }
        if self.bind.is_unspecified() && self.advertise.is_none() {
            return invalid(
                "advertise",
                format!(
                    "required when --bind is {}: other nodes need an address to reach this one",
                    self.bind
                ),
            );
        }
        if let Some(host) = &self.advertise {
            if host.is_empty() || host.contains([':', '/', ' ']) && host.parse::<IpAddr>().is_err()
            {
                return invalid("advertise", format!("{host:?} is not a host name or IP"));
            }
        }
        match &self.cluster_token {
            Some(token) if token.len() < 16 || !token.is_ascii() => {
                return invalid(
                    "cluster-token",
                    "must be at least 16 ASCII characters".into(),
                );
            }
            None if !self.cluster_is_loopback() => {
                return invalid(
                    "cluster-token",
                    format!(
                        "required: the cluster port would be reachable from other hosts ({}:{}, bind {}), and without a token anyone who reaches it could write to the Raft log",
                        self.advertise_host(),
                        self.cluster_port().unwrap_or_default(),
                        self.bind
                    ),
                );
            }
            _ => {}
        }
        if let Err((name, reason)) = self.tls_complete() {
            return invalid(name, reason.into());
        }
        if let Some(password) = &self.admin_password {
            if let Err(reason) = tacos_app::auth::password::check_new(&password.0) {
                return invalid("admin-password", reason.to_string());
            }
        }
        if let Err(reason) = tacos_app::auth::check_username(&self.admin_username) {
            return invalid("admin-username", reason.to_string());
        }
        if let Some(secret) = &self.token_secret {
            if let Err(reason) = tacos_app::auth::token::decode_secret(&secret.0) {
                return invalid("token-secret", reason);
            }
        }
        if self.token_ttl == 0 || self.token_ttl > 366 * 24 * 3600 {
            return invalid("token-ttl", "must be between 1 and 31622400 seconds".into());
        }
        if self.audit_limit == 0 {
            return invalid("audit-limit", "must be 1 or more".into());
        }
        if self.login_lockout_seconds == 0 || self.login_lockout_seconds > 24 * 3600 {
            return invalid(
                "login-lockout-seconds",
                "must be between 1 and 86400".into(),
            );
        }
        if !(8..=128).contains(&self.password_min_length) {
            return invalid("password-min-length", "must be between 8 and 128".into());
        }
        if !(1..=4).contains(&self.password_min_classes) {
            return invalid("password-min-classes", "must be between 1 and 4".into());
        }
        if let Err(e) = self.directory() {
            return Err(InvalidSetting {
                name: e.name,
                reason: e.reason,
            });
        }
        if let Some(join) = &self.join {
            if !join.contains(':') {
                return invalid("join", format!("{join:?} is not host:port"));
            }
        }
        if self.http_workers == Some(0) {
            return invalid("http-workers", "must be 1 or more".into());
        }
        if self.max_content_size == 0 || self.max_content_size > MAX_CONTENT_CEILING {
            return invalid(
                "max-content-size",
                format!("must be between 1 and {MAX_CONTENT_CEILING} bytes"),
            );
        }
        if self.segment_size < 4096 {
            return invalid("segment-size", "must be at least 4096 bytes".into());
        }
        if self.history_limit == 0 || self.history_limit > 10_000 {
            return invalid("history-limit", "must be between 1 and 10000".into());
        }
        if self.max_grays_per_config == 0 || self.max_grays_per_config > 1000 {
            return invalid("max-grays-per-config", "must be between 1 and 1000".into());
        }
        if self.max_listen_keys == 0 {
            return invalid("max-listen-keys", "must be 1 or more".into());
        }
        if self.max_long_polls == 0 {
            return invalid("max-long-polls", "must be 1 or more".into());
        }
        if let Some(zone) = &self.zone {
            let ok = !zone.is_empty()
                && zone.len() <= 64
                && zone
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !ok {
                return invalid(
                    "zone",
                    format!("{zone:?}: 1 to 64 letters, digits, '-', '_' or '.'"),
                );
            }
        }
        if self.learner_stale_seconds == 0 || self.learner_stale_seconds > 3600 {
            return invalid("learner-stale-seconds", "must be between 1 and 3600".into());
        }
        if self.drain_seconds > 600 {
            return invalid("drain-seconds", "must be between 0 and 600".into());
        }
        if self.unlistened_push_seconds > 3600 {
            return invalid(
                "unlistened-push-seconds",
                "must be between 0 and 3600".into(),
            );
        }
        if self.fuzzy_watch_max_patterns == 0 || self.fuzzy_watch_max_patterns > 10_000 {
            return invalid(
                "fuzzy-watch-max-patterns",
                "must be between 1 and 10000".into(),
            );
        }
        if self.fuzzy_watch_max_matched == 0 || self.fuzzy_watch_max_matched > 1_000_000 {
            return invalid(
                "fuzzy-watch-max-matched",
                "must be between 1 and 1000000".into(),
            );
        }
        if self.snapshot_log_bytes < 4096 {
            return invalid("snapshot-log-bytes", "must be at least 4096".into());
        }
        if self.snapshot_entries == 0 {
            return invalid("snapshot-entries", "must be 1 or more".into());
        }
        Ok(())
    }

    /// The password policy for new local passwords.
    pub fn password_policy(&self) -> tacos_app::auth::password::PasswordPolicy {
        tacos_app::auth::password::PasswordPolicy {
            min_length: self.password_min_length,
            min_classes: self.password_min_classes,
        }
    }

    /// The LDAP directory, when --ldap-url is set (settings checked).
    pub fn directory(
        &self,
    ) -> Result<Option<tacos_app::auth::ldap::Directory>, tacos_app::auth::ldap::BadDirectorySetting>
    {
        use tacos_app::auth::ldap::{BadDirectorySetting, Directory, DirectorySettings};
        let Some(url) = &self.ldap_url else {
            let ldap_only = self.ldap_user_base.is_some()
                || self.ldap_bind_dn.is_some()
                || self.ldap_bind_password.is_some()
                || self.ldap_ca_file.is_some()
                || self.ldap_group_base.is_some()
                || !self.ldap_group_role.is_empty()
                || self.ldap_default_role.is_some()
                || self.ldap_starttls;
            return if ldap_only {
                Err(BadDirectorySetting {
                    name: "ldap-url",
                    reason: "required by the other --ldap-* settings given".into(),
                })
            } else {
                Ok(None)
            };
        };
        if self.ldap_timeout_ms == 0 || self.ldap_timeout_ms > 60_000 {
            return Err(BadDirectorySetting {
                name: "ldap-timeout-ms",
                reason: "must be between 1 and 60000".into(),
            });
        }
        Directory::new(DirectorySettings {
            url: url.clone(),
            starttls: self.ldap_starttls,
            ca_file: self.ldap_ca_file.clone(),
            bind_dn: self.ldap_bind_dn.clone(),
            bind_password: self.ldap_bind_password.as_ref().map(|p| p.0.clone()),
            user_base: self.ldap_user_base.clone().unwrap_or_default(),
            user_filter: self.ldap_user_filter.clone(),
            group_base: self.ldap_group_base.clone(),
            group_filter: self.ldap_group_filter.clone(),
            group_roles: self.ldap_group_role.clone(),
            default_role: self.ldap_default_role.clone(),
            precedence: self.ldap_precedence,
            timeout: std::time::Duration::from_millis(self.ldap_timeout_ms),
        })
        .map(Some)
    }

    /// The gRPC port (HTTP port + 1000 unless set); `None` if the default
    /// would overflow.
    pub fn grpc_port(&self) -> Option<u16> {
        self.grpc_port.or_else(|| self.http_port.checked_add(1000))
    }

    /// The cluster port (HTTP port + 1001 unless set); `None` if the
    /// default would overflow.
    pub fn cluster_port(&self) -> Option<u16> {
        self.cluster_port
            .or_else(|| self.http_port.checked_add(1001))
    }

    /// The host other nodes and clients use to reach this node.
    pub fn advertise_host(&self) -> String {
        match &self.advertise {
            Some(host) => host.clone(),
            None => match self.bind {
                IpAddr::V6(ip) => format!("[{ip}]"),
                IpAddr::V4(ip) => ip.to_string(),
            },
        }
    }

    /// The address clients use for HTTP.
    /// What the raft layer needs of these settings to start a node.
    /// The key-encryption key of `--encryption-key-file`, read now (never
    /// kept beyond the process).
    pub fn kek(&self) -> anyhow::Result<Option<std::sync::Arc<tacos_store::Kek>>> {
        self.encryption_key_file
            .as_deref()
            .map(|path| {
                tacos_store::Kek::load(path)
                    .map(std::sync::Arc::new)
                    .map_err(|e| anyhow::anyhow!("--encryption-key-file: {e}"))
            })
            .transpose()
    }

    /// The TLS settings come in their groups: a certificate with its key,
    /// client certificates with their CA, peer TLS with all three files.
    fn tls_complete(&self) -> Result<(), (&'static str, &'static str)> {
        let client = self.cert_file.is_some();
        if client != self.key_file.is_some() {
            return Err(("cert-file", "--cert-file and --key-file go together"));
        }
        if self.trusted_ca_file.is_some() && !client {
            return Err(("trusted-ca-file", "needs --cert-file and --key-file"));
        }
        if self.client_cert_auth && self.trusted_ca_file.is_none() {
            return Err((
                "client-cert-auth",
                "needs --trusted-ca-file (the CA client certificates are checked against)",
            ));
        }
        if self.grpc_tls_compatibility && !client {
            return Err(("grpc-tls-compatibility", "needs --cert-file and --key-file"));
        }
        let peer = [
            self.peer_cert_file.is_some(),
            self.peer_key_file.is_some(),
            self.peer_trusted_ca_file.is_some(),
        ];
        if peer.contains(&true) && peer.contains(&false) {
            return Err((
                "peer-cert-file",
                "--peer-cert-file, --peer-key-file and --peer-trusted-ca-file go together",
            ));
        }
        Ok(())
    }

    pub fn node_options(&self) -> anyhow::Result<tacos_raft::NodeOptions> {
        #[cfg(feature = "fault-injection")]
        let fs = tacos_store::failpoint_fs::from_env();
        #[cfg(not(feature = "fault-injection"))]
        let fs: std::sync::Arc<dyn tacos_store::Fs> = std::sync::Arc::new(tacos_store::StdFs);
        Ok(tacos_raft::NodeOptions {
            node_id: self.node_id,
            data_dir: self.data_dir.clone(),
            fs,
            me: tacos_core::types::NodeInfo {
                cluster_addr: self.cluster_addr(),
                http_addr: self.http_addr(),
            },
            // Outgoing cluster connections leave from the bind address when
            // it is a specific one, else from whatever the kernel picks.
            local_addr: (!self.bind.is_unspecified()).then_some(self.bind),
            cluster_token: self.cluster_token.clone(),
            peer_tls: None,
            joining: self.join.is_some(),
            learner: self.learner,
            freshness: tacos_raft::freshness::Limits {
                max_lag: self.learner_max_lag,
                stale_after: std::time::Duration::from_secs(self.learner_stale_seconds),
            },
            init: self.init,
            segment_size: self.segment_size,
            kek: self.kek()?,
            snapshot_entries: self.snapshot_entries,
            snapshot_log_bytes: self.snapshot_log_bytes,
            audit_limit: self.audit_limit,
        })
    }

    pub fn http_addr(&self) -> String {
        format!("{}:{}", self.advertise_host(), self.http_port)
    }

    /// The address other nodes use for cluster traffic.
    pub fn cluster_addr(&self) -> String {
        format!(
            "{}:{}",
            self.advertise_host(),
            self.cluster_port().unwrap_or_default()
        )
    }

    /// Whether the cluster port is reachable from this host only.
    fn cluster_is_loopback(&self) -> bool {
        let advertised = match &self.advertise {
            None => true,
            Some(host) => {
                host == "localhost"
                    || host
                        .trim_matches(['[', ']'])
                        .parse::<IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            }
        };
        advertised && self.bind.is_loopback()
    }
}

impl crate::ops::NodeSettings for Settings {
    fn data_dir(&self) -> &std::path::Path {
        &self.data_dir
    }

    fn node_id(&self) -> u64 {
        self.node_id
    }

    fn cluster_addr(&self) -> String {
        Settings::cluster_addr(self)
    }

    fn http_addr(&self) -> String {
        Settings::http_addr(self)
    }

    fn kek(&self) -> anyhow::Result<Option<std::sync::Arc<tacos_store::Kek>>> {
        Settings::kek(self)
    }

    fn validate(&self) -> anyhow::Result<()> {
        Ok(Settings::validate(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_ranges_are_checked() {
        let settings = Settings::parse_from(["tacos"]);
        settings.validate().unwrap();
        assert_eq!(settings.http_port, 8848);
        let bad = Settings::parse_from(["tacos", "--node-id", "0"]);
        assert_eq!(bad.validate().unwrap_err().name, "node-id");
        let bad = Settings::parse_from(["tacos", "--segment-size", "10"]);
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("segment-size"));
        assert!(Settings::try_parse_from(["tacos", "--http-port", "99999"]).is_err());
        assert_eq!(settings.drain_seconds, 3);
        assert_eq!(settings.unlistened_push_seconds, 90);
        let bad = Settings::parse_from(["tacos", "--drain-seconds", "601"]);
        assert_eq!(bad.validate().unwrap_err().name, "drain-seconds");
        let bad = Settings::parse_from(["tacos", "--unlistened-push-seconds", "3601"]);
        assert_eq!(bad.validate().unwrap_err().name, "unlistened-push-seconds");
        let off = Settings::parse_from([
            "tacos",
            "--drain-seconds",
            "0",
            "--unlistened-push-seconds",
            "0",
        ]);
        off.validate().unwrap();
    }

    #[test]
    fn login_and_ldap_settings_are_checked() {
        let settings = Settings::parse_from(["tacos"]);
        assert_eq!(settings.login_lockout_failures, 5);
        assert!(settings.directory().unwrap().is_none());
        let name = |args: &[&str]| {
            let mut all = vec!["tacos"];
            all.extend_from_slice(args);
            Settings::parse_from(all).validate().err().map(|e| e.name)
        };
        assert_eq!(
            name(&["--password-min-length", "7"]),
            Some("password-min-length")
        );
        assert_eq!(
            name(&["--password-min-classes", "5"]),
            Some("password-min-classes")
        );
        assert_eq!(
            name(&["--login-lockout-seconds", "0"]),
            Some("login-lockout-seconds")
        );
        assert_eq!(name(&["--ldap-user-base", "ou=p,dc=x"]), Some("ldap-url"));
        assert_eq!(
            name(&["--ldap-url", "ldap://127.0.0.1:389"]),
            Some("ldap-user-base")
        );
        let ldap = [
            "--ldap-url",
            "ldap://127.0.0.1:389",
            "--ldap-user-base",
            "ou=people,dc=x",
            "--ldap-group-role",
            "cn=a,ou=g,dc=x=devs;cn=b,ou=g,dc=x=ROLE_ADMIN",
            "--ldap-group-role",
            "cn=c,ou=g,dc=x=ops",
            "--ldap-precedence",
            "directory",
        ];
        assert_eq!(name(&ldap), None);
        let settings = Settings::parse_from(std::iter::once("tacos").chain(ldap));
        assert_eq!(settings.ldap_group_role.len(), 3);
        assert!(settings.directory().unwrap().is_some());
        assert!(Settings::try_parse_from(["tacos", "--ldap-precedence", "both"]).is_err());
        // In a config file the pairs are one string, separated by ';'.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tacos.toml");
        std::fs::write(
            &path,
            "ldap-url = \"ldaps://127.0.0.1:636\"\nldap-user-base = \"ou=p,dc=x\"\n\
             ldap-group-role = \"cn=a,dc=x=devs;cn=b,dc=x=ROLE_ADMIN\"\n",
        )
        .unwrap();
        let from_file =
            file::load_from(["tacos".as_ref(), "--config".as_ref(), path.as_os_str()]).unwrap();
        assert_eq!(
            from_file.ldap_group_role,
            ["cn=a,dc=x=devs", "cn=b,dc=x=ROLE_ADMIN"]
        );
        let mut bad_role = ldap.to_vec();
        bad_role[5] = "cn=a,ou=g,dc=x=bad role";
        assert_eq!(name(&bad_role), Some("ldap-group-role"));
    }

    #[test]
    fn cluster_addresses_and_token_rules() {
        let settings = Settings::parse_from(["tacos", "--http-port", "9000"]);
        assert_eq!(settings.cluster_addr(), "127.0.0.1:10001");
        assert_eq!(settings.grpc_port(), Some(10000));
        let clash =
            Settings::parse_from(["tacos", "--grpc-port", "8849", "--cluster-port", "8849"]);
        assert_eq!(clash.validate().unwrap_err().name, "cluster-port");
        assert_eq!(settings.http_addr(), "127.0.0.1:9000");

        let open = Settings::parse_from(["tacos", "--bind", "0.0.0.0"]);
        assert_eq!(open.validate().unwrap_err().name, "advertise");
        let open = Settings::parse_from(["tacos", "--bind", "0.0.0.0", "--advertise", "10.0.0.5"]);
        let error = open.validate().unwrap_err();
        assert_eq!(error.name, "cluster-token");
        assert!(error.to_string().contains("10.0.0.5:9849"), "{error}");
        let open = Settings::parse_from([
            "tacos",
            "--bind",
            "0.0.0.0",
            "--advertise",
            "10.0.0.5",
            "--cluster-token",
            "0123456789abcdef",
        ]);
        open.validate().unwrap();
        assert_eq!(open.cluster_addr(), "10.0.0.5:9849");

        let short = Settings::parse_from(["tacos", "--cluster-token", "short"]);
        assert_eq!(short.validate().unwrap_err().name, "cluster-token");
        let high = Settings::parse_from(["tacos", "--http-port", "65000"]);
        assert_eq!(high.validate().unwrap_err().name, "cluster-port");
        let same = Settings::parse_from(["tacos", "--cluster-port", "8848"]);
        assert_eq!(same.validate().unwrap_err().name, "cluster-port");
        assert!(Settings::try_parse_from(["tacos", "--init", "--join", "h:1"]).is_err());
        let join = Settings::parse_from(["tacos", "--join", "nocolon"]);
        assert_eq!(join.validate().unwrap_err().name, "join");
    }
}
