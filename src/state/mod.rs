//! The replicated state: in-memory tables and the deterministic `apply`.
//!
//! The tables are persistent (structurally shared) maps from `imbl`, so
//! cloning a [`State`] is O(1). The state machine keeps the current state in
//! an `ArcSwap`: readers load it without a lock or an actor hop, `apply`
//! builds the next version and swaps it in, and a snapshot is just a clone
//! taken at one applied index, encoded off the write path.
//!
//! Applying a [`Command`] depends only on the command and the state: no
//! clock, no randomness. Deterministic refusals are returned as
//! [`Response::Rejected`] to the caller; they never stop the node.

use imbl::OrdMap;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::model::snapshot::KvRecord;
use crate::model::Command;
use crate::model::Op;
use crate::raft::types::{LogId, StoredMembership};

/// What applying one log entry produced, returned to the proposer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// A blank or membership entry: nothing for a client.
    Empty,
    /// A put; `created` is false when the key existed before.
    Put { created: bool },
    /// A remove; `existed` is false when the key was absent.
    Removed { existed: bool },
    /// The command was refused; the state did not change.
    Rejected(ApplyError),
}

/// A deterministic refusal: every node refuses the same command the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ApplyError {
    #[error("the command carries no operation this node understands")]
    UnknownCommand,
}

/// Why snapshot records could not be turned back into a state.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("empty snapshot record")]
    Empty,
    #[error("unknown snapshot record kind {0}")]
    UnknownKind(u8),
    #[error("bad snapshot record: {0}")]
    Protobuf(#[from] prost::DecodeError),
}

/// Snapshot record kinds: the first payload byte, then a protobuf message.
const RECORD_KV: u8 = 1;

/// The state at one applied log index.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// The last log entry applied to this state.
    pub last_applied: Option<LogId>,
    /// The membership as of `last_applied`.
    pub membership: StoredMembership,
    kv: OrdMap<String, String>,
}

impl State {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&String> {
        self.kv.get(key)
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.kv.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.kv.is_empty()
    }

    /// All entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.kv.iter()
    }

    /// Applies one command.
    pub fn apply(&mut self, command: &Command) -> Response {
        match &command.op {
            Some(Op::Put(put)) => {
                let previous = self.kv.insert(put.key.clone(), put.value.clone());
                Response::Put {
                    created: previous.is_none(),
                }
            }
            Some(Op::Remove(remove)) => Response::Removed {
                existed: self.kv.remove(&remove.key).is_some(),
            },
            None => Response::Rejected(ApplyError::UnknownCommand),
        }
    }

    /// The table contents as snapshot record payloads.
    pub fn snapshot_records(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        self.kv.iter().map(|(key, value)| {
            let record = KvRecord {
                key: key.clone(),
                value: value.clone(),
            };
            let mut buf = Vec::with_capacity(1 + record.encoded_len());
            buf.push(RECORD_KV);
            record.encode(&mut buf).expect("a Vec grows as needed");
            buf
        })
    }

    /// Adds one snapshot record (from [`State::snapshot_records`]) to the tables.
    pub fn load_snapshot_record(&mut self, payload: &[u8]) -> Result<(), DecodeError> {
        let (&kind, body) = payload.split_first().ok_or(DecodeError::Empty)?;
        match kind {
            RECORD_KV => {
                let record = KvRecord::decode(body)?;
                self.kv.insert(record.key, record.value);
                Ok(())
            }
            other => Err(DecodeError::UnknownKind(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_is_deterministic_and_snapshots_round_trip() {
        let mut state = State::default();
        assert_eq!(
            state.apply(&Command::put("a", "1")),
            Response::Put { created: true }
        );
        assert_eq!(
            state.apply(&Command::put("a", "2")),
            Response::Put { created: false }
        );
        assert_eq!(
            state.apply(&Command::put("b", "3")),
            Response::Put { created: true }
        );
        assert_eq!(
            state.apply(&Command::remove("b")),
            Response::Removed { existed: true }
        );
        assert_eq!(
            state.apply(&Command::remove("b")),
            Response::Removed { existed: false }
        );
        assert_eq!(
            state.apply(&Command { op: None }),
            Response::Rejected(ApplyError::UnknownCommand)
        );
        let before = state.clone();
        state.apply(&Command::put("c", "4"));
        assert_eq!(before.len(), 1, "a clone is a point-in-time view");

        let mut loaded = State::default();
        for record in state.snapshot_records() {
            loaded.load_snapshot_record(&record).unwrap();
        }
        assert_eq!(
            loaded.iter().collect::<Vec<_>>(),
            state.iter().collect::<Vec<_>>()
        );
        assert!(matches!(
            loaded.load_snapshot_record(&[9, 1, 2]),
            Err(DecodeError::UnknownKind(9))
        ));
    }
}
