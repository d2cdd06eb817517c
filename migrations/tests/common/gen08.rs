//! Writes a synthetic r-nacos 0.8 data dir, in the format r-nacos 0.8 writes and reads
//! (its `raft/filestore`): `index`, `log_<id>` files (32-byte header, an index area with a
//! varint byte delta per 128 records, records from byte 4096, zero padding in 1 MiB
//! steps; a file is closed when its index area is full, as r-nacos closes it, or earlier
//! at `records_per_file`), optionally a `snapshot_1` of the state after the first
//! records, and an empty `db_lock`. Used by the scale example and the reader tests.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use prost::Message;

/// The BCrypt hash r-nacos 0.8.8 wrote for the password `admin` (from the fixture).
pub const ADMIN_HASH: &str = "$2b$10$fDtLlWV8dIBuUsm.YqRYG.aLeGVSJ6545h1ALGBY4YnCCnwCy6K3W";

const DATA_AREA: u64 = 4096;
const INDEX_INTERVAL: u64 = 128;
const GROW: u64 = 1 << 20;

#[derive(Clone, PartialEq, prost::Message)]
struct RaftIndex {
    #[prost(message, repeated, tag = "1")]
    logs: Vec<LogRange>,
    #[prost(uint64, tag = "2")]
    current_log: u64,
    #[prost(message, repeated, tag = "3")]
    snapshots: Vec<SnapshotRange>,
    #[prost(uint64, tag = "7")]
    current_term: u64,
    #[prost(uint64, tag = "8")]
    voted_for: u64,
    #[prost(uint64, repeated, tag = "9")]
    member: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct LogRange {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(uint64, tag = "2")]
    pre_term: u64,
    #[prost(uint64, tag = "3")]
    start_index: u64,
    #[prost(uint64, tag = "4")]
    record_count: u64,
    #[prost(uint64, tag = "5")]
    split_off_index: u64,
    #[prost(bool, tag = "6")]
    is_close: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SnapshotRange {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(uint64, tag = "2")]
    end_index: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct LogRecord {
    #[prost(uint64, tag = "1")]
    index: u64,
    #[prost(uint64, tag = "2")]
    term: u64,
    #[prost(bytes = "vec", tag = "5")]
    value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SnapshotHeader {
    #[prost(uint64, tag = "1")]
    last_index: u64,
    #[prost(uint64, tag = "2")]
    last_term: u64,
    #[prost(uint64, repeated, tag = "3")]
    member: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SnapshotItem {
    #[prost(string, tag = "1")]
    tree: String,
    #[prost(bytes = "vec", tag = "4")]
    key: Vec<u8>,
    #[prost(bytes = "vec", tag = "5")]
    value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ConfigValueDo {
    #[prost(string, optional, tag = "1")]
    content: Option<String>,
    #[prost(message, repeated, tag = "2")]
    histories: Vec<HistoryDo>,
    #[prost(string, optional, tag = "3")]
    config_type: Option<String>,
    #[prost(string, optional, tag = "4")]
    desc: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HistoryDo {
    #[prost(uint64, optional, tag = "1")]
    id: Option<u64>,
    #[prost(string, optional, tag = "2")]
    content: Option<String>,
    #[prost(int64, optional, tag = "3")]
    last_time: Option<i64>,
    #[prost(string, optional, tag = "4")]
    op_user: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct UserDo {
    #[prost(string, tag = "1")]
    username: String,
    #[prost(string, tag = "3")]
    nickname: String,
    #[prost(uint32, tag = "4")]
    gmt_create: u32,
    #[prost(uint32, tag = "5")]
    gmt_modified: u32,
    #[prost(bool, tag = "6")]
    enable: bool,
    #[prost(string, repeated, tag = "7")]
    roles: Vec<String>,
    #[prost(string, optional, tag = "9")]
    password_hash: Option<String>,
    #[prost(uint32, optional, tag = "10")]
    namespace_privilege_flags: Option<u32>,
    #[prost(string, repeated, tag = "11")]
    namespace_white_list: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct NamespaceDo {
    #[prost(string, optional, tag = "1")]
    namespace_id: Option<String>,
    #[prost(string, optional, tag = "2")]
    namespace_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    r#type: Option<String>,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct Spec {
    pub configs: usize,
    /// Versions per config (each a history row).
    pub history: usize,
    /// Close a log file after this many records (r-nacos closes it when its index area is
    /// full, about 173k records; whichever comes first).
    pub records_per_file: u64,
    /// Write `snapshot_1` with the state after this many config versions (and the log
    /// files whole, as r-nacos keeps them until its next snapshot).
    pub snapshot_after: Option<usize>,
}

/// What was generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub last_index: u64,
    pub log_files: usize,
    pub configs: usize,
    pub history_rows: usize,
}

/// The tenant, group and data id of config `i`.
pub fn key_of(i: usize) -> (&'static str, String, String) {
    let tenant = ["", "dev", "team.alpha"][i % 3];
    (
        tenant,
        format!("GROUP_{}", i % 7),
        format!("config-{i}.yaml"),
    )
}

/// The content of version `rev` of config `i` (about 100 bytes).
pub fn content_of(i: usize, rev: usize) -> String {
    format!(
        "server:\n  port: {}\nspring:\n  application:\n    name: config-{i}\n# revision {rev}\n",
        8000 + i % 1000
    )
}

fn raft_key(i: usize) -> String {
    let (tenant, group, data_id) = key_of(i);
    if tenant.is_empty() {
        format!("{data_id}\x02{group}")
    } else {
        format!("{data_id}\x02{group}\x02{tenant}")
    }
}

fn normal(data: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "Normal": { "data": data } })).expect("json")
}

fn user_do(name: &str, roles: &[&str], whitelist: Option<&[&str]>) -> UserDo {
    UserDo {
        username: name.into(),
        nickname: name.into(),
        gmt_create: 1_796_000_000,
        gmt_modified: 1_796_000_000,
        enable: true,
        roles: roles.iter().map(|r| r.to_string()).collect(),
        password_hash: Some(ADMIN_HASH.into()),
        // Enabled, white list "all" unless a list is given.
        namespace_privilege_flags: Some(if whitelist.is_some() { 1 } else { 3 }),
        namespace_white_list: whitelist
            .unwrap_or_default()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

/// The users every generated dir has (all with password `admin`): `admin` (manager),
/// `dev` (developer) and `viewer` (visitor limited to namespace `dev`).
fn users() -> Vec<UserDo> {
    vec![
        user_do("admin", &["0"], None),
        user_do("dev", &["1"], None),
        user_do("viewer", &["2"], Some(&["dev"])),
    ]
}

struct LogWriter<'a> {
    dir: &'a Path,
    ranges: Vec<LogRange>,
    file: Option<BufWriter<File>>,
    /// Data cursor and index-area cursor of the open file.
    data_cursor: u64,
    index_cursor: u64,
    index_area: Vec<u8>,
    last_indexed: u64,
    in_file: u64,
    records_per_file: u64,
    next_index: u64,
}

impl LogWriter<'_> {
    fn open(&mut self) {
        let id = self.ranges.len() as u64 + 1;
        let path = self.dir.join(format!("log_{id}"));
        let mut file = BufWriter::with_capacity(1 << 20, File::create(path).expect("create log"));
        let mut header = Vec::with_capacity(32);
        header.extend(0x4231_3644u32.to_be_bytes());
        header.extend(0u16.to_be_bytes());
        header.extend(1u64.to_be_bytes()); // last term
        header.extend(self.next_index.to_be_bytes());
        header.extend((DATA_AREA as u16).to_be_bytes());
        header.extend((INDEX_INTERVAL as u16).to_be_bytes());
        header.extend([0u8; 6]);
        file.write_all(&header).expect("write");
        file.seek(SeekFrom::Start(DATA_AREA)).expect("seek");
        self.ranges.push(LogRange {
            id,
            pre_term: 1,
            start_index: self.next_index,
            split_off_index: self.next_index,
            ..LogRange::default()
        });
        self.file = Some(file);
        self.data_cursor = DATA_AREA;
        self.index_cursor = 32;
        self.index_area.clear();
        self.last_indexed = DATA_AREA;
        self.in_file = 0;
    }

    fn close(&mut self, last: bool) {
        let Some(mut file) = self.file.take() else {
            return;
        };
        // The index area, then zero padding to a whole number of MiB past the data.
        file.seek(SeekFrom::Start(32)).expect("seek");
        file.write_all(&self.index_area).expect("write index area");
        let len = (self.data_cursor / GROW + 1) * GROW;
        let file = file.into_inner().expect("flush log");
        file.set_len(len).expect("set_len");
        let range = self.ranges.last_mut().expect("range");
        if !last {
            range.is_close = true;
            range.record_count = self.in_file;
        }
    }

    fn push(&mut self, value: Vec<u8>) {
        if self.file.is_none() {
            self.open();
        }
        let record = LogRecord {
            index: self.next_index,
            term: 1,
            value,
        }
        .encode_length_delimited_to_vec();
        let file = self.file.as_mut().expect("open");
        file.write_all(&record).expect("write record");
        self.data_cursor += record.len() as u64;
        self.in_file += 1;
        self.next_index += 1;
        if self.in_file.is_multiple_of(INDEX_INTERVAL) {
            let mut delta = self.data_cursor - self.last_indexed;
            while delta > 0x7f {
                self.index_area.push((delta as u8 & 0x7f) | 0x80);
                self.index_cursor += 1;
                delta >>= 7;
            }
            self.index_area.push(delta as u8);
            self.index_cursor += 1;
            self.last_indexed = self.data_cursor;
        }
        if self.index_cursor + 10 >= DATA_AREA || self.in_file >= self.records_per_file {
            self.close(false);
        }
    }
}

/// A config's state while generating (for the snapshot).
struct State {
    content: String,
    rows: VecDeque<HistoryDo>,
}

/// Writes the dir `dir` (created; must not exist).
pub fn write(dir: &Path, spec: &Spec) -> Written {
    fs::create_dir_all(dir).expect("mkdir");
    File::create(dir.join("db_lock")).expect("db_lock");
    let mut log = LogWriter {
        dir,
        ranges: Vec::new(),
        file: None,
        data_cursor: 0,
        index_cursor: 0,
        index_area: Vec::new(),
        last_indexed: 0,
        in_file: 0,
        records_per_file: spec.records_per_file,
        next_index: 1,
    };
    log.push(
        serde_json::to_vec(&serde_json::json!({"ConfigChange": {"membership": {
            "members": [1], "members_after_consensus": null}}}))
        .expect("json"),
    );
    for user in users() {
        log.push(normal(serde_json::json!({"TableManagerReq": {"Set": {
            "table_name": "T_USER", "key": user.username.as_bytes(),
            "value": user.encode_to_vec(), "last_seq_id": null}}})));
    }
    for (id, name) in [("dev", "Development"), ("team.alpha", "Team Alpha")] {
        log.push(normal(serde_json::json!({"NamespaceReq": {"Set": {
            "namespace_id": id, "namespace_name": name, "type": null}}})));
    }
    let mut states: Vec<State> = (0..spec.configs)
        .map(|_| State {
            content: String::new(),
            rows: VecDeque::new(),
        })
        .collect();
    let mut snapshot_index = None;
    let mut versions = 0;
    let mut history_id = 0u64;
    for rev in 0..spec.history {
        for i in 0..states.len() {
            history_id += 1;
            let content = content_of(i, rev);
            let op_time = 1_796_000_000_000 + history_id as i64;
            let op_user = (rev % 2 == 1).then_some("dev");
            log.push(normal(serde_json::json!({"ConfigSet": {
                "key": raft_key(i), "value": content, "config_type": "yaml",
                "desc": if rev == 0 { Some(format!("config {i}")) } else { None },
                "history_id": history_id, "history_table_id": null,
                "op_time": op_time, "op_user": op_user}})));
            let state = &mut states[i];
            state.content = content.clone();
            state.rows.push_back(HistoryDo {
                id: Some(history_id),
                content: Some(content),
                last_time: Some(op_time),
                op_user: op_user.map(str::to_string),
            });
            if state.rows.len() > 100 {
                state.rows.pop_front();
            }
            versions += 1;
            if Some(versions) == spec.snapshot_after {
                snapshot_index = Some(log.next_index - 1);
                write_snapshot(dir, log.next_index - 1, &states_view(&states, i, rev), spec);
            }
        }
    }
    log.push(serde_json::to_vec("Blank").expect("json"));
    log.close(true);
    let last_index = log.next_index - 1;
    let index = RaftIndex {
        current_log: log.ranges.last().map_or(0, |r| r.id),
        logs: log.ranges.clone(),
        snapshots: snapshot_index
            .map(|end_index| vec![SnapshotRange { id: 1, end_index }])
            .unwrap_or_default(),
        current_term: 1,
        voted_for: 1,
        member: vec![1],
    };
    let mut bytes = last_index.to_be_bytes().to_vec();
    bytes.extend(index.encode_length_delimited_to_vec());
    fs::write(dir.join("index"), bytes).expect("write index");
    Written {
        last_index,
        log_files: log.ranges.len(),
        configs: spec.configs,
        history_rows: states.iter().map(|s| s.rows.len()).sum(),
    }
}

/// (raft key, content, rows, first-version desc) of every config written so far, after
/// version `rev` of config `upto`.
fn states_view(
    states: &[State],
    upto: usize,
    rev: usize,
) -> Vec<(String, String, Vec<HistoryDo>, usize)> {
    states
        .iter()
        .enumerate()
        .filter(|(i, _)| rev > 0 || *i <= upto)
        .map(|(i, s)| {
            (
                raft_key(i),
                s.content.clone(),
                s.rows.iter().cloned().collect(),
                i,
            )
        })
        .collect()
}

fn write_snapshot(
    dir: &Path,
    last_index: u64,
    configs: &[(String, String, Vec<HistoryDo>, usize)],
    _spec: &Spec,
) {
    let mut out = BufWriter::new(File::create(dir.join("snapshot_1")).expect("snapshot"));
    let header = SnapshotHeader {
        last_index,
        last_term: 1,
        member: vec![1],
    };
    out.write_all(&header.encode_length_delimited_to_vec())
        .expect("write");
    let mut item = |tree: &str, key: Vec<u8>, value: Vec<u8>| {
        let bytes = SnapshotItem {
            tree: tree.into(),
            key,
            value,
        }
        .encode_length_delimited_to_vec();
        out.write_all(&bytes).expect("write");
    };
    for (key, content, rows, i) in configs {
        let value = ConfigValueDo {
            content: Some(content.clone()),
            histories: rows.clone(),
            config_type: Some("yaml".into()),
            desc: Some(format!("config {i}")),
        };
        item("T_CONFIG", key.as_bytes().to_vec(), value.encode_to_vec());
    }
    for user in users() {
        item(
            "T_USER",
            user.username.as_bytes().to_vec(),
            user.encode_to_vec(),
        );
    }
    for (id, name) in [("dev", "Development"), ("team.alpha", "Team Alpha")] {
        let ns = NamespaceDo {
            namespace_id: Some(id.into()),
            namespace_name: Some(name.into()),
            r#type: Some("user".into()),
        };
        item("T_NAMESPACE", id.as_bytes().to_vec(), ns.encode_to_vec());
    }
    item(
        "T_SEQUENCE",
        b"SEQ_CONFIG".to_vec(),
        0u64.to_be_bytes().to_vec(),
    );
    out.flush().expect("flush snapshot");
}
