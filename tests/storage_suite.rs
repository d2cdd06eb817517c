//! openraft's storage test suite against the real log store and state
//! machine on real files, plus state-machine snapshot behaviour.

use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::testing::{StoreBuilder, Suite};
use openraft::{EntryPayload, RaftSnapshotBuilder, StorageIOError};
use tacos_core::command as pb;
use tacos_core::types::{Entry, LogId, StorageError, TypeConfig};
use tacos_core::{md5_hex, Command, Op};
use tacos_raft::log_storage::RaftLog;
use tacos_raft::state_machine::StateMachine;
use tacos_state::{ConfigKey, State};
use tacos_store::{LogOptions, LogStore, StdFs};
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<TypeConfig, RaftLog, StateMachine, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, RaftLog, StateMachine), StorageError> {
        let dir = tempfile::tempdir().map_err(|e| StorageIOError::write_logs(&e))?;
        let fs = Arc::new(StdFs);
        let (log, _) = LogStore::open(fs.clone(), dir.path(), LogOptions::default())
            .map_err(|e| StorageIOError::write_logs(&e))?;
        let sm = StateMachine::open(fs, dir.path(), None)
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
        Ok((dir, RaftLog::new(log), sm))
    }
}

#[test]
fn openraft_storage_suite_passes() {
    Suite::test_all(Builder).unwrap();
}

fn put(index: u64, key: &str, value: &str) -> Entry {
    Entry {
        log_id: LogId::new(openraft::CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(
            Command::of(Op::PublishConfig(pb::PublishConfig {
                key: Some(pb::ConfigKey {
                    namespace: String::new(),
                    group: "DEFAULT_GROUP".into(),
                    data_id: key.into(),
                }),
                content: value.into(),
                md5: md5_hex(value),
                history_limit: 10,
                ..Default::default()
            }))
            .into(),
        ),
    }
}

fn content(state: &State, data_id: &str) -> Option<String> {
    state
        .config(&ConfigKey::new("", "DEFAULT_GROUP", data_id))
        .map(|c| c.content.to_string())
}

#[tokio::test]
async fn snapshots_are_point_in_time_and_reload_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(StdFs);
    let mut sm = StateMachine::open(fs.clone(), dir.path(), None).unwrap();
    sm.apply([put(1, "a", "1"), put(2, "b", "2")])
        .await
        .unwrap();

    // The builder captures the state now; later applies do not leak in.
    let mut builder = sm.get_snapshot_builder().await;
    sm.apply([put(3, "a", "changed"), put(4, "c", "3")])
        .await
        .unwrap();
    let snapshot = builder.build_snapshot().await.unwrap();
    assert_eq!(snapshot.meta.last_log_id.map(|l| l.index), Some(2));
    assert_eq!(content(&sm.state().load(), "a").as_deref(), Some("changed"));
    drop(sm);

    let sm = StateMachine::open(fs, dir.path(), None).unwrap();
    let state = sm.state().load_full();
    assert_eq!(state.last_applied.map(|l| l.index), Some(2));
    assert_eq!(content(&state, "a").as_deref(), Some("1"));
    assert_eq!(content(&state, "b").as_deref(), Some("2"));
    assert_eq!(content(&state, "c"), None);
}
