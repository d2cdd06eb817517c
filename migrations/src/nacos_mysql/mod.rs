//! Reads the tables of a Java Nacos database (MySQL or MariaDB) into plain rows.
//!
//! [`read`] connects to `mysql://user:password@host:port/database` (TCP only; no TLS),
//! opens one read-only transaction `WITH CONSISTENT SNAPSHOT` (repeatable read), so
//! every table is read at the same point in time while Nacos may keep writing, runs
//! only `SELECT`s and rolls the transaction back. Nothing is written to the database.
//!
//! # Schema
//!
//! The tables are those of Nacos' `distribution/conf/mysql-schema.sql`. They are found
//! by name in `information_schema` and read by column name (Nacos 2.4.0 alone had an
//! extra `id` column in the auth tables). Two layouts ([`Schema`]):
//!
//! * **2.x** (up to 2.4.x): grays are `config_info_beta` (`beta_ips`, comma-separated)
//!   and `config_info_tag` (`tag_id`); `config_info_aggr` exists.
//! * **2.5+ / 3.x**: grays are `config_info_gray` (`gray_name`, `gray_rule` JSON
//!   `{"type","version","expr","priority"}`), and `his_config_info` gains
//!   `publish_type` (`formal` / `gray`), `gray_name` and `ext_info`. 2.5.0 has the old
//!   gray tables as well and keeps `config_info_gray` in step with them
//!   (`ConfigGrayModelMigrateService`), so when `config_info_gray` exists it is the one
//!   read, and rows in the old tables are listed in [`Tables::not_read`].
//!
//! Both need `config_info`, `his_config_info`, `config_tags_relation`, `tenant_info`,
//! `users`, `roles` and `permissions`; a database without one of them is refused
//! ([`ReadError::NotNacos`]). Columns added by later Nacos versions (`type`, `c_desc`,
//! `encrypted_data_key`, ...) read as NULL where the table lacks them; a key column
//! missing is [`ReadError::MissingColumn`].
//!
//! `DATETIME` columns hold the Nacos server's local time; they are read with
//! `UNIX_TIMESTAMP`, that is in the session's time zone, which is the database server's
//! default unless the URL sets another ([`Tables::time_zone`] says which). `tenant_info`
//! times are already epoch milliseconds.
//!
//! Rows are returned as the database holds them: nothing is folded, decoded or
//! checked here except that text is UTF-8. A row with text that is not UTF-8 stops the
//! read with [`ReadError::Corrupt`], or with [`ReadOptions::skip_bad`] is left out and
//! listed in [`Tables::skipped`]. What Tacos makes of the rows is the mapping's business
//! ([`map`]).

pub mod map;
mod url;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{IsolationLevel, Opts, OptsBuilder, TxOpts, Value};

pub use url::{redact, Url};

/// The tables every Nacos schema has and a migration reads.
pub const REQUIRED_TABLES: [&str; 7] = [
    "config_info",
    "his_config_info",
    "config_tags_relation",
    "tenant_info",
    "users",
    "roles",
    "permissions",
];

/// How to read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Leave out rows whose text is not UTF-8 (listed in [`Tables::skipped`]) instead of
    /// failing with [`ReadError::Corrupt`].
    pub skip_bad: bool,
    /// How long to wait for the connection (TCP and login).
    pub connect_timeout: Duration,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            skip_bad: false,
            connect_timeout: Duration::from_secs(30),
        }
    }
}

/// Which layout the database has (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// `config_info_beta` and `config_info_tag` (Nacos up to 2.4.x).
    V2,
    /// `config_info_gray` (Nacos 2.5+ and 3.x).
    V3,
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Schema::V2 => "Nacos 2.x (config_info_beta, config_info_tag)",
            Schema::V3 => "Nacos 2.5+/3.x (config_info_gray)",
        })
    }
}

/// Everything read from a Nacos database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tables {
    pub schema: Schema,
    /// The database's `VERSION()`.
    pub server_version: String,
    /// The database (schema) name.
    pub database: String,
    /// The session time zone the `DATETIME` columns were read in (`@@session.time_zone`,
    /// and for `SYSTEM` the server's `@@system_time_zone` in brackets).
    pub time_zone: String,
    /// `config_info`, by id.
    pub configs: Vec<ConfigRow>,
    /// `his_config_info`, by nid (empty from [`read_with`], which hands the rows over
    /// as it reads them).
    pub history: Vec<HistoryRow>,
    /// `config_info_beta` and `config_info_tag` (2.x) or `config_info_gray`, by table
    /// then id.
    pub grays: Vec<GrayRow>,
    /// `config_tags_relation`, by nid.
    pub tags: Vec<TagRow>,
    /// `tenant_info`, by id.
    pub tenants: Vec<TenantRow>,
    /// `users`, by username.
    pub users: Vec<UserRow>,
    /// `roles`, by username then role.
    pub roles: Vec<RoleRow>,
    /// `permissions`, by role, resource, action.
    pub permissions: Vec<PermissionRow>,
    /// Tables with rows that are not read, and why (aggregates, capacity quotas,
    /// superseded gray tables).
    pub not_read: Vec<NotRead>,
    /// Rows left out by [`ReadOptions::skip_bad`].
    pub skipped: Vec<SkippedRow>,
}

/// A `config_info` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRow {
    pub id: i64,
    /// `''` is the public namespace (3.x also copies it to `'public'`).
    pub tenant: String,
    pub group: String,
    pub data_id: String,
    pub content: String,
    pub md5: Option<String>,
    /// `type`; NULL on rows written by a Nacos without the column.
    pub config_type: Option<String>,
    /// `c_desc`.
    pub desc: Option<String>,
    pub app_name: Option<String>,
    /// `c_use`, `effect` and `c_schema`: columns Nacos declares but never writes.
    pub c_use: Option<String>,
    pub effect: Option<String>,
    pub c_schema: Option<String>,
    /// Non-empty when an encryption plugin encrypted the content.
    pub encrypted_data_key: String,
    pub src_user: Option<String>,
    pub src_ip: Option<String>,
    /// ms since the epoch.
    pub gmt_create_ms: i64,
    pub gmt_modified_ms: i64,
}

/// A `his_config_info` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    /// The global auto-increment: history order.
    pub nid: u64,
    /// 0 for `I`, else the config's id at the time.
    pub id: u64,
    pub tenant: String,
    pub group: String,
    pub data_id: String,
    pub app_name: Option<String>,
    pub content: String,
    pub md5: Option<String>,
    pub src_user: Option<String>,
    pub src_ip: Option<String>,
    /// `I`, `U` or `D` as stored (`char(10)`, trailing blanks removed).
    pub op_type: Option<String>,
    pub encrypted_data_key: String,
    /// 3.x: `formal` (config history) or `gray` (gray history); NULL before 2.5.
    pub publish_type: Option<String>,
    /// 3.x: the gray a `gray` row is about.
    pub gray_name: Option<String>,
    /// 3.x: JSON with the gray rule and the like.
    pub ext_info: Option<String>,
    pub gmt_create_ms: i64,
    pub gmt_modified_ms: i64,
}

/// Where a gray row came from, with what its table says about its rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraySource {
    /// `config_info_beta.beta_ips`: comma-separated client IPs.
    Beta { beta_ips: Option<String> },
    /// `config_info_tag.tag_id`.
    Tag { tag_id: String },
    /// `config_info_gray`: `gray_name` and the `gray_rule` JSON.
    Gray {
        gray_name: String,
        gray_rule: String,
    },
}

/// A gray (beta, tag or `config_info_gray`) row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrayRow {
    pub id: i64,
    pub source: GraySource,
    pub tenant: String,
    pub group: String,
    pub data_id: String,
    pub content: String,
    pub md5: Option<String>,
    pub app_name: Option<String>,
    pub encrypted_data_key: String,
    pub src_user: Option<String>,
    pub src_ip: Option<String>,
    pub gmt_create_ms: i64,
    pub gmt_modified_ms: i64,
}

impl GrayRow {
    /// The table the row is from.
    pub fn table(&self) -> &'static str {
        match self.source {
            GraySource::Beta { .. } => "config_info_beta",
            GraySource::Tag { .. } => "config_info_tag",
            GraySource::Gray { .. } => "config_info_gray",
        }
    }
}

/// A `config_tags_relation` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRow {
    pub nid: i64,
    /// The config's id (`id` column).
    pub config_id: i64,
    pub tag_name: String,
    pub tag_type: Option<String>,
    pub tenant: String,
    pub group: String,
    pub data_id: String,
}

/// A `tenant_info` row (a namespace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantRow {
    pub id: i64,
    pub kp: String,
    pub tenant_id: String,
    pub tenant_name: Option<String>,
    pub tenant_desc: Option<String>,
    pub create_source: Option<String>,
    /// Already ms since the epoch in this table.
    pub gmt_create_ms: i64,
    pub gmt_modified_ms: i64,
}

/// A `users` row.
#[derive(Clone, PartialEq, Eq)]
pub struct UserRow {
    pub username: String,
    /// As stored: a BCrypt hash (`$2a$10$...`) from Nacos' `PasswordEncoderUtil`.
    /// Not shown by `Debug`.
    pub password: String,
    pub enabled: bool,
}

impl fmt::Debug for UserRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserRow")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("enabled", &self.enabled)
            .finish()
    }
}

/// A `roles` row: `username` has `role`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleRow {
    pub username: String,
    pub role: String,
}

/// A `permissions` row: `role` may `action` (`r`, `w`, `rw`) on `resource`
/// (`<namespace>:<group>:<type>/<name>`, `*` wildcards).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRow {
    pub role: String,
    pub resource: String,
    pub action: String,
}

/// A table whose rows are not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRead {
    pub table: String,
    pub rows: u64,
    pub reason: String,
}

/// A row left out because it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRow {
    pub table: String,
    /// Which row (`id 7`, `nid 12`, `username ...`).
    pub row: String,
    pub reason: String,
}

/// Why reading failed. Nothing was written anywhere.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The `--from` URL is not `mysql://user:password@host:port/database`.
    #[error("bad MySQL URL {url}: {reason}")]
    BadUrl { url: String, reason: String },
    /// The client's runtime could not start.
    #[error("starting the MySQL client: {0}")]
    Runtime(#[source] std::io::Error),
    /// No connection: unreachable, refused, or the login was refused. `reason` is the
    /// innermost cause (`Connection refused ...`, `ERROR 28000 (1045): Access denied ...`).
    #[error("cannot connect to {url}: {reason}")]
    Connect { url: String, reason: String },
    /// No answer within [`ReadOptions::connect_timeout`].
    #[error("cannot connect to {url}: no answer within {}s", timeout.as_secs())]
    ConnectTimeout { url: String, timeout: Duration },
    /// A tables Nacos always has is missing.
    #[error(
        "database `{database}` is not a Java Nacos database: it lacks the table(s) {} \
         (it has: {})",
        missing.join(", "),
        if found.is_empty() { "no tables".to_string() } else { found.join(", ") }
    )]
    NotNacos {
        database: String,
        missing: Vec<String>,
        found: Vec<String>,
    },
    /// A table lacks a column the migration cannot do without.
    #[error("table `{table}` of database `{database}` lacks the column `{column}`")]
    MissingColumn {
        database: String,
        table: String,
        column: String,
    },
    /// A query failed (`reason` as for [`ReadError::Connect`]).
    #[error("reading {what}: {reason}")]
    Query { what: String, reason: String },
    /// A row could not be read (see [`ReadOptions::skip_bad`]).
    #[error("table `{table}`, {row}: {reason}")]
    Corrupt {
        table: String,
        row: String,
        reason: String,
    },
}

/// Reads the Nacos database at `url` (`mysql://user:password@host:port/database`); see
/// the module docs. The database is only read.
pub fn read(url: &str, options: &ReadOptions) -> Result<Tables, ReadError> {
    let mut history = Vec::new();
    let mut tables = read_with(url, options, |row| {
        history.push(row);
        Ok::<_, ReadError>(())
    })?;
    tables.history = history;
    Ok(tables)
}

/// As [`read`], but hands each `his_config_info` row to `each` as it is read, in nid
/// order, instead of collecting them: [`Tables::history`] comes back empty. The history
/// is the bulk of a database (a million rows held as read took about 700 MB), and a
/// migration keeps only what it maps of each row. An error from `each` stops the read.
pub fn read_with<E: From<ReadError>>(
    url: &str,
    options: &ReadOptions,
    mut each: impl FnMut(HistoryRow) -> Result<(), E>,
) -> Result<Tables, E> {
    let opts = url::parse(url)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ReadError::Runtime)?;
    runtime.block_on(read_async(url, opts, options, &mut each))
}

async fn read_async<E: From<ReadError>>(
    url: &str,
    opts: Opts,
    options: &ReadOptions,
    each: &mut dyn FnMut(HistoryRow) -> Result<(), E>,
) -> Result<Tables, E> {
    let shown = redact(url);
    let database = opts.db_name().unwrap_or_default().to_string();
    let opts = OptsBuilder::from_opts(opts).prefer_socket(false);
    let conn =
        match tokio::time::timeout(options.connect_timeout, mysql_async::Conn::new(opts)).await {
            Err(_) => {
                return Err(ReadError::ConnectTimeout {
                    url: shown,
                    timeout: options.connect_timeout,
                }
                .into())
            }
            Ok(Err(e)) => {
                return Err(ReadError::Connect {
                    url: shown,
                    reason: cause(&e),
                }
                .into())
            }
            Ok(Ok(conn)) => conn,
        };
    let mut conn = conn;
    let result = read_tables(&mut conn, &database, options, each).await;
    // The transaction was rolled back (or never started); a failing goodbye changes
    // nothing that was read.
    let _ = conn.disconnect().await;
    result
}

async fn read_tables<E: From<ReadError>>(
    conn: &mut mysql_async::Conn,
    database: &str,
    options: &ReadOptions,
    each: &mut dyn FnMut(HistoryRow) -> Result<(), E>,
) -> Result<Tables, E> {
    let mut tx_opts = TxOpts::default();
    tx_opts
        .with_consistent_snapshot(true)
        .with_isolation_level(IsolationLevel::RepeatableRead)
        .with_readonly(Some(true));
    let mut tx = conn
        .start_transaction(tx_opts)
        .await
        .map_err(|source| ReadError::Query {
            what: "(starting a read-only transaction)".to_string(),
            reason: cause(&source),
        })?;
    let columns = columns(&mut tx, database).await?;
    let schema = detect(database, &columns)?;

    let mut reader = Reader {
        database,
        columns: &columns,
        skip_bad: options.skip_bad,
        skipped: Vec::new(),
    };
    let (server_version, time_zone) = reader.server_info(&mut tx).await?;
    let configs = reader.configs(&mut tx).await?;
    reader.history(&mut tx, each).await?;
    let mut grays = Vec::new();
    match schema {
        Schema::V2 => {
            grays.extend(reader.betas(&mut tx).await?);
            grays.extend(reader.tag_grays(&mut tx).await?);
        }
        Schema::V3 => grays.extend(reader.grays(&mut tx).await?),
    }
    let tags = reader.tags(&mut tx).await?;
    let tenants = reader.tenants(&mut tx).await?;
    let users = reader.users(&mut tx).await?;
    let roles = reader.roles(&mut tx).await?;
    let permissions = reader.permissions(&mut tx).await?;
    let not_read = reader.not_read(&mut tx, schema).await?;
    tx.rollback().await.map_err(|source| ReadError::Query {
        what: "(ending the transaction)".to_string(),
        reason: cause(&source),
    })?;
    Ok(Tables {
        schema,
        server_version,
        database: database.to_string(),
        time_zone,
        configs,
        history: Vec::new(),
        grays,
        tags,
        tenants,
        users,
        roles,
        permissions,
        not_read,
        skipped: reader.skipped,
    })
}

/// The innermost cause of a client error: what the server or the OS said, without the
/// client's wrappers ("Input/output error: ...").
fn cause(e: &mysql_async::Error) -> String {
    let mut inner: &dyn std::error::Error = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}

/// Table → its columns (lowercase), for the connection's database.
type Columns = BTreeMap<String, BTreeSet<String>>;

async fn columns(conn: &mut impl Queryable, database: &str) -> Result<Columns, ReadError> {
    let rows: Vec<(Vec<u8>, Vec<u8>)> = conn
        .exec(
            "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ?",
            (database,),
        )
        .await
        .map_err(|source| ReadError::Query {
            what: format!("the tables of database `{database}` (information_schema)"),
            reason: cause(&source),
        })?;
    let mut columns = Columns::new();
    for (table, column) in rows {
        let table = String::from_utf8_lossy(&table).to_lowercase();
        let column = String::from_utf8_lossy(&column).to_lowercase();
        columns.entry(table).or_default().insert(column);
    }
    Ok(columns)
}

/// The layout, or [`ReadError::NotNacos`] naming what is missing.
fn detect(database: &str, columns: &Columns) -> Result<Schema, ReadError> {
    let has = |t: &str| columns.contains_key(t);
    let mut missing: Vec<String> = REQUIRED_TABLES
        .iter()
        .filter(|t| !has(t))
        .map(|t| t.to_string())
        .collect();
    let schema = match (
        has("config_info_gray"),
        has("config_info_beta"),
        has("config_info_tag"),
    ) {
        (true, _, _) => Schema::V3,
        (false, true, true) => Schema::V2,
        (false, true, false) => {
            missing.push("config_info_tag".to_string());
            Schema::V2
        }
        (false, false, true) => {
            missing.push("config_info_beta".to_string());
            Schema::V2
        }
        (false, false, false) => {
            missing.push(
                "config_info_gray (Nacos 2.5+/3.x) or config_info_beta and config_info_tag \
                 (2.x)"
                    .to_string(),
            );
            Schema::V2
        }
    };
    if missing.is_empty() {
        return Ok(schema);
    }
    Err(ReadError::NotNacos {
        database: database.to_string(),
        missing,
        found: columns.keys().cloned().collect(),
    })
}

/// How a column is selected and read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Int,
    /// A `DATETIME`, read as ms since the epoch in the session's time zone.
    Millis,
}

struct Col {
    name: &'static str,
    kind: Kind,
    /// Without it the table cannot be migrated; otherwise a missing column reads NULL.
    required: bool,
}

const fn req(name: &'static str, kind: Kind) -> Col {
    Col {
        name,
        kind,
        required: true,
    }
}

const fn opt(name: &'static str, kind: Kind) -> Col {
    Col {
        name,
        kind,
        required: false,
    }
}

use Kind::{Int, Millis, Text};

/// One row, as read: by column name.
struct Fields<'a> {
    table: &'a str,
    cols: &'a [Col],
    values: Vec<Value>,
}

impl Fields<'_> {
    fn value(&self, name: &str) -> Result<&Value, String> {
        self.cols
            .iter()
            .position(|c| c.name == name)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| format!("column `{name}` was not selected from `{}`", self.table))
    }

    fn text(&self, name: &str) -> Result<Option<String>, String> {
        match self.value(name)? {
            Value::NULL => Ok(None),
            Value::Bytes(bytes) => String::from_utf8(bytes.clone())
                .map(Some)
                .map_err(|e| format!("column `{name}` is not UTF-8 ({e})")),
            other => Ok(Some(other.as_sql(true))),
        }
    }

    /// A text column; NULL reads as `""`.
    fn string(&self, name: &str) -> Result<String, String> {
        Ok(self.text(name)?.unwrap_or_default())
    }

    fn int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.value(name)? {
            Value::NULL => Ok(None),
            Value::Int(i) => Ok(Some(*i)),
            Value::UInt(u) => i64::try_from(*u)
                .map(Some)
                .map_err(|_| format!("column `{name}` is out of range ({u})")),
            Value::Bytes(bytes) => std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .map(Some)
                .ok_or_else(|| {
                    format!(
                        "column `{name}` is not an integer ({:?})",
                        String::from_utf8_lossy(bytes)
                    )
                }),
            other => Err(format!("column `{name}` is not an integer ({other:?})")),
        }
    }

    /// An integer column; NULL reads as 0.
    fn int0(&self, name: &str) -> Result<i64, String> {
        Ok(self.int(name)?.unwrap_or(0))
    }

    fn uint0(&self, name: &str) -> Result<u64, String> {
        let v = self.int0(name)?;
        u64::try_from(v).map_err(|_| format!("column `{name}` is negative ({v})"))
    }
}

struct Reader<'a> {
    database: &'a str,
    columns: &'a Columns,
    skip_bad: bool,
    skipped: Vec<SkippedRow>,
}

impl Reader<'_> {
    async fn server_info(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<(String, String), ReadError> {
        let row: Option<(String, String, String)> = tx
            .query_first("SELECT VERSION(), @@session.time_zone, @@system_time_zone")
            .await
            .map_err(|source| ReadError::Query {
                what: "the server version and time zone".to_string(),
                reason: cause(&source),
            })?;
        let (version, zone, system) = row.unwrap_or_default();
        let zone = if zone.eq_ignore_ascii_case("SYSTEM") {
            format!("SYSTEM ({system})")
        } else {
            zone
        };
        Ok((version, zone))
    }

    /// `SELECT cols FROM table ORDER BY order`, each row turned into `T` by `make`;
    /// a row `make` refuses is [`ReadError::Corrupt`] or, with skip_bad, skipped.
    async fn select<T>(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
        table: &str,
        cols: &[Col],
        order: &str,
        ident: fn(&Fields<'_>) -> String,
        make: fn(&Fields<'_>) -> Result<T, String>,
    ) -> Result<Vec<T>, ReadError> {
        let mut out = Vec::new();
        self.select_each(tx, table, cols, order, ident, make, &mut |item| {
            out.push(item);
            Ok::<_, ReadError>(())
        })
        .await?;
        Ok(out)
    }

    /// As [`Reader::select`], handing each row to `each` as it is read.
    #[allow(clippy::too_many_arguments)]
    async fn select_each<T, E: From<ReadError>>(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
        table: &str,
        cols: &[Col],
        order: &str,
        ident: fn(&Fields<'_>) -> String,
        make: fn(&Fields<'_>) -> Result<T, String>,
        each: &mut dyn FnMut(T) -> Result<(), E>,
    ) -> Result<(), E> {
        let present = self.columns.get(table).cloned().unwrap_or_default();
        let mut exprs = Vec::with_capacity(cols.len());
        for col in cols {
            if !present.contains(col.name) {
                if col.required {
                    return Err(ReadError::MissingColumn {
                        database: self.database.to_string(),
                        table: table.to_string(),
                        column: col.name.to_string(),
                    }
                    .into());
                }
                exprs.push("NULL".to_string());
                continue;
            }
            exprs.push(match col.kind {
                Text | Int => format!("`{}`", col.name),
                Millis => format!(
                    "CAST(FLOOR(UNIX_TIMESTAMP(`{}`) * 1000) AS SIGNED)",
                    col.name
                ),
            });
        }
        let sql = format!(
            "SELECT {} FROM `{table}` ORDER BY {order}",
            exprs.join(", ")
        );
        let failed = |source: mysql_async::Error| ReadError::Query {
            what: format!("table `{table}`"),
            reason: cause(&source),
        };
        // Row by row: only one row is held twice (as read and as converted).
        let mut rows = tx.query_iter(sql).await.map_err(failed)?;
        while let Some(row) = rows.next().await.map_err(failed)? {
            let fields = Fields {
                table,
                cols,
                values: row.unwrap(),
            };
            match make(&fields) {
                Ok(item) => each(item)?,
                Err(reason) => {
                    let row = ident(&fields);
                    if !self.skip_bad {
                        return Err(ReadError::Corrupt {
                            table: table.to_string(),
                            row,
                            reason,
                        }
                        .into());
                    }
                    self.skipped.push(SkippedRow {
                        table: table.to_string(),
                        row,
                        reason,
                    });
                }
            }
        }
        Ok(())
    }

    async fn configs(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<ConfigRow>, ReadError> {
        const COLS: &[Col] = &[
            req("id", Int),
            req("tenant_id", Text),
            req("group_id", Text),
            req("data_id", Text),
            req("content", Text),
            opt("md5", Text),
            opt("type", Text),
            opt("c_desc", Text),
            opt("app_name", Text),
            opt("c_use", Text),
            opt("effect", Text),
            opt("c_schema", Text),
            opt("encrypted_data_key", Text),
            opt("src_user", Text),
            opt("src_ip", Text),
            req("gmt_create", Millis),
            req("gmt_modified", Millis),
        ];
        self.select(tx, "config_info", COLS, "`id`", ident_id, |f| {
            Ok(ConfigRow {
                id: f.int0("id")?,
                tenant: f.string("tenant_id")?,
                group: f.string("group_id")?,
                data_id: f.string("data_id")?,
                content: f.string("content")?,
                md5: f.text("md5")?,
                config_type: f.text("type")?,
                desc: f.text("c_desc")?,
                app_name: f.text("app_name")?,
                c_use: f.text("c_use")?,
                effect: f.text("effect")?,
                c_schema: f.text("c_schema")?,
                encrypted_data_key: f.string("encrypted_data_key")?,
                src_user: f.text("src_user")?,
                src_ip: f.text("src_ip")?,
                gmt_create_ms: f.int0("gmt_create")?,
                gmt_modified_ms: f.int0("gmt_modified")?,
            })
        })
        .await
    }

    async fn history<E: From<ReadError>>(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
        each: &mut dyn FnMut(HistoryRow) -> Result<(), E>,
    ) -> Result<(), E> {
        const COLS: &[Col] = &[
            req("nid", Int),
            req("id", Int),
            req("tenant_id", Text),
            req("group_id", Text),
            req("data_id", Text),
            opt("app_name", Text),
            req("content", Text),
            opt("md5", Text),
            opt("src_user", Text),
            opt("src_ip", Text),
            req("op_type", Text),
            opt("encrypted_data_key", Text),
            opt("publish_type", Text),
            opt("gray_name", Text),
            opt("ext_info", Text),
            req("gmt_create", Millis),
            req("gmt_modified", Millis),
        ];
        let make = |f: &Fields<'_>| {
            Ok(HistoryRow {
                nid: f.uint0("nid")?,
                id: f.uint0("id")?,
                tenant: f.string("tenant_id")?,
                group: f.string("group_id")?,
                data_id: f.string("data_id")?,
                app_name: f.text("app_name")?,
                content: f.string("content")?,
                md5: f.text("md5")?,
                src_user: f.text("src_user")?,
                src_ip: f.text("src_ip")?,
                op_type: f.text("op_type")?.map(|op| op.trim_end().to_string()),
                encrypted_data_key: f.string("encrypted_data_key")?,
                publish_type: f.text("publish_type")?,
                gray_name: f.text("gray_name")?,
                ext_info: f.text("ext_info")?,
                gmt_create_ms: f.int0("gmt_create")?,
                gmt_modified_ms: f.int0("gmt_modified")?,
            })
        };
        self.select_each(tx, "his_config_info", COLS, "`nid`", ident_nid, make, each)
            .await
    }

    async fn betas(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<GrayRow>, ReadError> {
        const COLS: &[Col] = &[
            req("id", Int),
            req("tenant_id", Text),
            req("group_id", Text),
            req("data_id", Text),
            req("content", Text),
            opt("md5", Text),
            opt("app_name", Text),
            req("beta_ips", Text),
            opt("encrypted_data_key", Text),
            opt("src_user", Text),
            opt("src_ip", Text),
            req("gmt_create", Millis),
            req("gmt_modified", Millis),
        ];
        self.select(tx, "config_info_beta", COLS, "`id`", ident_id, |f| {
            gray_row(
                f,
                GraySource::Beta {
                    beta_ips: f.text("beta_ips")?,
                },
            )
        })
        .await
    }

    async fn tag_grays(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<GrayRow>, ReadError> {
        const COLS: &[Col] = &[
            req("id", Int),
            req("tenant_id", Text),
            req("group_id", Text),
            req("data_id", Text),
            req("content", Text),
            opt("md5", Text),
            opt("app_name", Text),
            req("tag_id", Text),
            opt("encrypted_data_key", Text),
            opt("src_user", Text),
            opt("src_ip", Text),
            req("gmt_create", Millis),
            req("gmt_modified", Millis),
        ];
        self.select(tx, "config_info_tag", COLS, "`id`", ident_id, |f| {
            gray_row(
                f,
                GraySource::Tag {
                    tag_id: f.string("tag_id")?,
                },
            )
        })
        .await
    }

    async fn grays(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<GrayRow>, ReadError> {
        const COLS: &[Col] = &[
            req("id", Int),
            req("tenant_id", Text),
            req("group_id", Text),
            req("data_id", Text),
            req("content", Text),
            opt("md5", Text),
            opt("app_name", Text),
            req("gray_name", Text),
            req("gray_rule", Text),
            opt("encrypted_data_key", Text),
            opt("src_user", Text),
            opt("src_ip", Text),
            req("gmt_create", Millis),
            req("gmt_modified", Millis),
        ];
        self.select(tx, "config_info_gray", COLS, "`id`", ident_id, |f| {
            gray_row(
                f,
                GraySource::Gray {
                    gray_name: f.string("gray_name")?,
                    gray_rule: f.string("gray_rule")?,
                },
            )
        })
        .await
    }

    async fn tags(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<TagRow>, ReadError> {
        const COLS: &[Col] = &[
            req("nid", Int),
            req("id", Int),
            req("tag_name", Text),
            opt("tag_type", Text),
            req("tenant_id", Text),
            req("group_id", Text),
            req("data_id", Text),
        ];
        self.select(tx, "config_tags_relation", COLS, "`nid`", ident_nid, |f| {
            Ok(TagRow {
                nid: f.int0("nid")?,
                config_id: f.int0("id")?,
                tag_name: f.string("tag_name")?,
                tag_type: f.text("tag_type")?,
                tenant: f.string("tenant_id")?,
                group: f.string("group_id")?,
                data_id: f.string("data_id")?,
            })
        })
        .await
    }

    async fn tenants(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<TenantRow>, ReadError> {
        const COLS: &[Col] = &[
            req("id", Int),
            opt("kp", Text),
            req("tenant_id", Text),
            opt("tenant_name", Text),
            opt("tenant_desc", Text),
            opt("create_source", Text),
            opt("gmt_create", Int),
            opt("gmt_modified", Int),
        ];
        self.select(tx, "tenant_info", COLS, "`id`", ident_id, |f| {
            Ok(TenantRow {
                id: f.int0("id")?,
                kp: f.string("kp")?,
                tenant_id: f.string("tenant_id")?,
                tenant_name: f.text("tenant_name")?,
                tenant_desc: f.text("tenant_desc")?,
                create_source: f.text("create_source")?,
                gmt_create_ms: f.int0("gmt_create")?,
                gmt_modified_ms: f.int0("gmt_modified")?,
            })
        })
        .await
    }

    async fn users(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<UserRow>, ReadError> {
        const COLS: &[Col] = &[
            req("username", Text),
            req("password", Text),
            req("enabled", Int),
        ];
        self.select(
            tx,
            "users",
            COLS,
            "`username`",
            |f| {
                format!(
                    "username {:?}",
                    f.text("username").ok().flatten().unwrap_or_default()
                )
            },
            |f| {
                Ok(UserRow {
                    username: f.string("username")?,
                    password: f.string("password")?,
                    enabled: f.int0("enabled")? != 0,
                })
            },
        )
        .await
    }

    async fn roles(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<RoleRow>, ReadError> {
        const COLS: &[Col] = &[req("username", Text), req("role", Text)];
        self.select(
            tx,
            "roles",
            COLS,
            "`username`, `role`",
            |f| {
                format!(
                    "username {:?}",
                    f.text("username").ok().flatten().unwrap_or_default()
                )
            },
            |f| {
                Ok(RoleRow {
                    username: f.string("username")?,
                    role: f.string("role")?,
                })
            },
        )
        .await
    }

    async fn permissions(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
    ) -> Result<Vec<PermissionRow>, ReadError> {
        const COLS: &[Col] = &[
            req("role", Text),
            req("resource", Text),
            req("action", Text),
        ];
        self.select(
            tx,
            "permissions",
            COLS,
            "`role`, `resource`, `action`",
            |f| {
                format!(
                    "role {:?}",
                    f.text("role").ok().flatten().unwrap_or_default()
                )
            },
            |f| {
                Ok(PermissionRow {
                    role: f.string("role")?,
                    resource: f.string("resource")?,
                    action: f.string("action")?,
                })
            },
        )
        .await
    }

    /// The tables with rows that are not read (see [`Tables::not_read`]).
    async fn not_read(
        &mut self,
        tx: &mut mysql_async::Transaction<'_>,
        schema: Schema,
    ) -> Result<Vec<NotRead>, ReadError> {
        let mut candidates: Vec<(&str, &str)> = vec![
            (
                "config_info_aggr",
                "aggregated configs (datum_id parts, a Nacos 1.x feature 2.x no longer \
                 reads and 3.x drops); Tacos has no such thing",
            ),
            (
                "tenant_capacity",
                "namespace capacity quotas; Tacos has no quotas (its limits are server-wide \
                 flags)",
            ),
            (
                "group_capacity",
                "group capacity quotas; Tacos has no quotas (its limits are server-wide \
                 flags)",
            ),
        ];
        if schema == Schema::V3 {
            for table in ["config_info_beta", "config_info_tag"] {
                candidates.push((
                    table,
                    "superseded by config_info_gray, which Nacos 2.5+ keeps in step with it \
                     and reads instead",
                ));
            }
        }
        let mut out = Vec::new();
        for (table, reason) in candidates {
            if !self.columns.contains_key(table) {
                continue;
            }
            let rows: Option<u64> = tx
                .query_first(format!("SELECT COUNT(*) FROM `{table}`"))
                .await
                .map_err(|source| ReadError::Query {
                    what: format!("table `{table}`"),
                    reason: cause(&source),
                })?;
            let rows = rows.unwrap_or(0);
            if rows > 0 {
                out.push(NotRead {
                    table: table.to_string(),
                    rows,
                    reason: reason.to_string(),
                });
            }
        }
        Ok(out)
    }
}

fn gray_row(f: &Fields<'_>, source: GraySource) -> Result<GrayRow, String> {
    Ok(GrayRow {
        id: f.int0("id")?,
        source,
        tenant: f.string("tenant_id")?,
        group: f.string("group_id")?,
        data_id: f.string("data_id")?,
        content: f.string("content")?,
        md5: f.text("md5")?,
        app_name: f.text("app_name")?,
        encrypted_data_key: f.string("encrypted_data_key")?,
        src_user: f.text("src_user")?,
        src_ip: f.text("src_ip")?,
        gmt_create_ms: f.int0("gmt_create")?,
        gmt_modified_ms: f.int0("gmt_modified")?,
    })
}

fn ident_id(f: &Fields<'_>) -> String {
    match f.int("id") {
        Ok(Some(id)) => format!("id {id}"),
        _ => "id ?".to_string(),
    }
}

fn ident_nid(f: &Fields<'_>) -> String {
    match f.int("nid") {
        Ok(Some(nid)) => format!("nid {nid}"),
        _ => "nid ?".to_string(),
    }
}
