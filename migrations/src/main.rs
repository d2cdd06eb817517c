//! `tacos-migrate`: moves an r-nacos data dir (0.4 to 0.8), a Java Nacos MySQL/MariaDB
//! database or a live Nacos-compatible server (`--from http://...`) into a new Tacos
//! data dir.
//!
//! `tacos-migrate --from nacos_db --to tacos_data` finds the kind of the r-nacos dir
//! ([`tacos_migrate::detect`], or `--from-kind`); `--from mysql://...` names a Java Nacos
//! database. It reads the source without modifying it, converts it, checks the result
//! and writes the Tacos data dir the way `tacos restore` does; `--dry-run` stops before
//! writing. See the library docs and docs/migration.md.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use tacos_migrate::convert::Progress;
use tacos_migrate::nacos_http::Endpoint;
use tacos_migrate::nacos_mysql::Url;
use tacos_migrate::write::Target;
use tacos_migrate::{report, DirKind, Input, Options, ReadOptions};

/// Move the data of an r-nacos server (0.4 to 0.8), a Java Nacos database or a live
/// Nacos-compatible server (over HTTP) into a new Tacos data dir.
///
/// --from names the r-nacos data dir; its kind is found from its files, or given with
/// --from-kind:
///
///   rnacos04  r-nacos 0.4.x: a sled database (`conf`, `db`; by default `nacos_db`).
///             Passwords are plain text there and are hashed with argon2id.
///
///   rnacos    r-nacos 0.5 to 0.8: Raft files (`index`, `log_*`, `snapshot_*`; the dir
///             RNACOS_DATA_DIR names). Read as r-nacos reads them at start: the last
///             snapshot, then the log after it (docs/migration.md). BCrypt password
///             hashes are kept; Tacos checks them at login and re-hashes the password
///             with argon2id at each user's first login.
///
/// --from http://HOST:PORT reads a live Nacos-compatible server (Java Nacos 1.x-3.x,
/// r-nacos, Tacos) over its v1 HTTP API, only with GETs after a login
/// (--from-username, and --from-password or TACOS_MIGRATE_FROM_PASSWORD): namespaces,
/// configs (type, description, app, tags; every md5 checked) and their history. Not
/// over the API: users (unless the server lists their BCrypt hashes; Tacos never does:
/// re-create them), roles and permissions, grays, history of deleted configs. Over TLS
/// as --from https://HOST:PORT: the server's certificate must be for HOST and signed
/// by a CA of the system or of --cacert FILE.
///
/// --from mysql://USER:PASSWORD@HOST:PORT/DATABASE reads a Java Nacos database (2.x, or
/// 2.5+/3.x with config_info_gray) on MySQL or MariaDB, only with SELECTs, in one
/// read-only consistent-snapshot transaction (TCP, no TLS). Configs keep type,
/// description, app name, tags, author and betas/tag grays; history keeps Nacos' op
/// types and ids, deleted configs' too; users keep their BCrypt hashes (re-hashed with
/// argon2id at first login); ROLE_ADMIN makes an admin, other roles move with their
/// config permissions (NAMESPACE:GROUP:config/DATAID patterns, r/w/rw); the report lists
/// what cannot move.
///
/// Moves namespaces, configs with their history (contents, md5s, timestamps, and for 0.5+
/// types, descriptions and who wrote each version) and users, so every user logs in with
/// the same password. Roles: 0 (manager) becomes an admin, 1 (developer) read-write and 2
/// (visitor) read on every namespace, or on the namespaces an r-nacos 0.6+ namespace
/// privilege allows.
///
/// The r-nacos dir is only read (0.4: through a temporary copy), and may not be in use by
/// a running r-nacos. The Tacos dir is written like `tacos restore` writes one: the node
/// (--node-id and its addresses) is the only voter of a new cluster, and a dir that is
/// not empty is refused unless --force (then it is moved aside, never deleted). At the
/// end a report lists what moved, what was skipped and why, and an md5 check of every
/// config.
///
/// No login secret is written: the first start of tacos on the new dir creates the token
/// key and the admin named by its --admin-username (default nacos), with its
/// --admin-password or a generated one, unless a user of that name was migrated.
#[derive(Debug, Parser)]
#[command(
    name = "tacos-migrate",
    version,
    about,
    long_about,
    verbatim_doc_comment
)]
struct Args {
    /// The r-nacos data dir, a Java Nacos database as
    /// mysql://USER:PASSWORD@HOST:PORT/DATABASE, or a live server as http://HOST:PORT
    /// (https://HOST:PORT over TLS). It is only read.
    #[arg(long, value_name = "DIR|URL")]
    from: PathBuf,
    /// A PEM file of CA certificates to trust, besides the system's, when --from is an
    /// https:// server (the CA that signed its certificate).
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// The user to log in as when --from is an http:// server (an admin, to read every
    /// namespace and the user list). Without it no login is made.
    #[arg(long, value_name = "USER")]
    from_username: Option<String>,
    /// That user's password (better: the TACOS_MIGRATE_FROM_PASSWORD environment
    /// variable, which other users cannot see in the process list). Never printed.
    #[arg(long, value_name = "PASSWORD")]
    from_password: Option<String>,
    /// What kind of dir --from is (default: found from its files).
    #[arg(long, value_enum, value_name = "KIND")]
    from_kind: Option<Kind>,
    /// The Tacos data dir to create (start tacos with --data-dir DIR afterwards).
    #[arg(long, value_name = "DIR", required_unless_present = "dry_run")]
    to: Option<PathBuf>,
    /// Replace a --to dir that is not empty. Its old contents are not deleted: the dir is
    /// renamed to DIR.before-restore-TIME.
    #[arg(long)]
    force: bool,
    /// Only report what would move (and check it); write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Leave out, and list, entries that cannot be decoded or that Tacos cannot hold
    /// (keys or usernames it does not accept, unknown roles) instead of stopping.
    #[arg(long)]
    skip_bad: bool,
    /// Where to put the temporary copy of the r-nacos dir (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Raft id of the node that will serve the new dir (as tacos --node-id).
    #[arg(long, default_value_t = 1)]
    node_id: u64,
    /// The address that node listens on (as tacos --bind). A non-loopback cluster
    /// address needs TACOS_CLUSTER_TOKEN set, as for tacos.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// That node's HTTP port (as tacos --http-port).
    #[arg(long, default_value_t = 8848)]
    http_port: u16,
    /// That node's gRPC port (as tacos --grpc-port; default HTTP port + 1000).
    #[arg(long)]
    grpc_port: Option<u16>,
    /// That node's cluster port (as tacos --cluster-port; default HTTP port + 1001).
    #[arg(long)]
    cluster_port: Option<u16>,
    /// The host others reach that node at (as tacos --advertise; default the --bind
    /// address).
    #[arg(long)]
    advertise: Option<String>,
}

/// `--from-kind` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Kind {
    /// r-nacos 0.4.x (sled: `conf` and `db`).
    Rnacos04,
    /// r-nacos 0.5 to 0.8 (Raft: `index`, `log_*`, `snapshot_*`).
    Rnacos,
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
struct Bar(ProgressBar);

impl Progress for Bar {
    fn begin(&mut self, total: u64) {
        self.0.set_length(total);
        self.0.set_position(0);
        self.0.set_style(
            ProgressStyle::with_template("{msg:>8} [{bar:40}] {pos}/{len} ({elapsed})")
                .expect("a valid template")
                .progress_chars("=> "),
        );
    }

    fn phase(&mut self, name: &'static str) {
        self.0.set_message(name);
    }

    fn advance(&mut self, n: u64) {
        self.0.inc(n);
    }

    fn finish(&mut self) {
        self.0.finish_and_clear();
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let kind = args.from_kind.map(|kind| match kind {
        Kind::Rnacos04 => DirKind::Rnacos04,
        Kind::Rnacos => DirKind::Rnacos,
    });
    let from_text = args.from.to_str().unwrap_or_default();
    let from = if Endpoint::is_http(from_text) {
        anyhow::ensure!(
            kind.is_none(),
            "--from-kind is for data dirs; --from names a server"
        );
        let password = match args.from_password.clone() {
            Some(p) => Some(p),
            None => std::env::var("TACOS_MIGRATE_FROM_PASSWORD").ok(),
        };
        anyhow::ensure!(
            password.is_none() || args.from_username.is_some(),
            "a password for --from is given but no --from-username"
        );
        Input::NacosHttp(
            Endpoint::new(from_text, args.from_username.clone(), password)
                .with_cacert(args.cacert.clone()),
        )
    } else {
        anyhow::ensure!(
            args.from_username.is_none() && args.from_password.is_none(),
            "--from-username and --from-password are for --from http://HOST:PORT"
        );
        anyhow::ensure!(
            args.cacert.is_none(),
            "--cacert is for --from https://HOST:PORT"
        );
        match args.from.to_str().filter(|s| Url::is_mysql(s)) {
            Some(url) => {
                anyhow::ensure!(
                    kind.is_none(),
                    "--from-kind is for data dirs; --from names a MySQL database"
                );
                Input::NacosMysql(Url::new(url))
            }
            None => tacos_migrate::detect(&args.from, kind)
                .with_context(|| format!("cannot read --from {}", args.from.display()))?,
        }
    };
    let options = Options {
        from: from.clone(),
        read: ReadOptions {
            skip_bad: args.skip_bad,
            work_dir: args.work_dir.clone(),
        },
        target: args.to.as_ref().map(|to| Target {
            data_dir: to.clone(),
            force: args.force,
            node_id: args.node_id,
            bind: args.bind,
            http_port: args.http_port,
            grpc_port: args.grpc_port,
            cluster_port: args.cluster_port,
            advertise: args.advertise.clone(),
        }),
        dry_run: args.dry_run,
    };
    let bar = ProgressBar::new_spinner();
    bar.enable_steady_tick(Duration::from_millis(120));
    let mut progress = Bar(bar);
    let outcome = tacos_migrate::run(&options, &mut progress);
    progress.0.finish_and_clear();
    let outcome = outcome.with_context(|| format!("migrating the {from} failed"))?;
    let report = report::render(&outcome);
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(report.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // The migration is done; a reader that went away (`| head`) only
        // missed the end of the report (`print!` would panic).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("printing the report"),
    }
}
