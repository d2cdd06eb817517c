//! Every setting in one struct: command-line flags with `TACOS_*` environment
//! twins (flag > env > default), validated before anything starts.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;

/// The largest content a single write may carry (hard ceiling of the settings).
pub const MAX_CONTENT_CEILING: usize = 32 * 1024 * 1024;

/// Tacos: a config center that speaks the Nacos protocols, replicated with Raft.
///
/// With no arguments it serves one node on 127.0.0.1:8848 with its data in
/// ./tacos_data. Writes are answered only after they are fsynced and applied.
#[derive(Debug, Clone, Parser)]
#[command(name = "tacos", version, about, long_about)]
pub struct Settings {
    /// Directory for the Raft log, metadata and snapshots (created if missing).
    /// Only one process may use it at a time.
    #[arg(long, env = "TACOS_DATA_DIR", default_value = "tacos_data")]
    pub data_dir: PathBuf,

    /// Address to listen on (use 0.0.0.0 to accept connections from other hosts).
    #[arg(long, env = "TACOS_BIND", default_value = "127.0.0.1")]
    pub bind: IpAddr,

    /// HTTP port for the API.
    #[arg(long, env = "TACOS_HTTP_PORT", default_value_t = 8848)]
    pub http_port: u16,

    /// This node's Raft id (1 or more).
    #[arg(long, env = "TACOS_NODE_ID", default_value_t = 1)]
    pub node_id: u64,

    /// HTTP worker threads (default: one per CPU).
    #[arg(long, env = "TACOS_HTTP_WORKERS")]
    pub http_workers: Option<usize>,

    /// Largest value (config content) accepted, in bytes.
    #[arg(long, env = "TACOS_MAX_CONTENT_SIZE", default_value_t = 10 * 1024 * 1024)]
    pub max_content_size: usize,

    /// A log segment file is closed and a new one started at this size, in bytes.
    #[arg(long, env = "TACOS_SEGMENT_SIZE", default_value_t = 64 * 1024 * 1024)]
    pub segment_size: u64,

    /// History rows kept per config (older rows are dropped).
    #[arg(long, env = "TACOS_HISTORY_LIMIT", default_value_t = 100)]
    pub history_limit: u32,

    /// Most keys one listener request may watch.
    #[arg(long, env = "TACOS_MAX_LISTEN_KEYS", default_value_t = 10_000)]
    pub max_listen_keys: usize,

    /// Most long-poll requests held at once; more are refused with 503.
    #[arg(long, env = "TACOS_MAX_LONG_POLLS", default_value_t = 20_000)]
    pub max_long_polls: usize,

    /// Take a snapshot (and purge the log behind it) once this many bytes of
    /// entries were appended since the last one.
    #[arg(long, env = "TACOS_SNAPSHOT_LOG_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub snapshot_log_bytes: u64,

    /// Take a snapshot (and purge the log behind it) after this many new log entries.
    #[arg(long, env = "TACOS_SNAPSHOT_ENTRIES", default_value_t = 20_000)]
    pub snapshot_entries: u64,
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
        if self.max_listen_keys == 0 {
            return invalid("max-listen-keys", "must be 1 or more".into());
        }
        if self.max_long_polls == 0 {
            return invalid("max-long-polls", "must be 1 or more".into());
        }
        if self.snapshot_log_bytes < 4096 {
            return invalid("snapshot-log-bytes", "must be at least 4096".into());
        }
        if self.snapshot_entries == 0 {
            return invalid("snapshot-entries", "must be 1 or more".into());
        }
        Ok(())
    }

    /// The address clients use for HTTP.
    pub fn http_addr(&self) -> String {
        format!("{}:{}", self.bind, self.http_port)
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
    }
}
