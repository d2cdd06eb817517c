//! The pure data model: Commands and the records a snapshot holds.
//!
//! Nothing here does I/O. The types are generated from `proto/*.proto` by
//! prost, so the bytes in the Raft log and in snapshot files have a schema
//! that can evolve (new fields, new `oneof` arms) without breaking old data.

/// Commands, the only way replicated state changes (`proto/command.proto`).
#[allow(clippy::module_inception)]
pub mod command {
    include!(concat!(env!("OUT_DIR"), "/tacos.command.rs"));
}

/// Snapshot records (`proto/snapshot.proto`).
pub mod snapshot {
    include!(concat!(env!("OUT_DIR"), "/tacos.snapshot.rs"));
}

pub use command::command::Op;
pub use command::Command;

/// The longest key a Command may carry, in bytes.
pub const MAX_KEY_LEN: usize = 256;

/// Why a Command was refused before it was proposed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidCommand {
    #[error("key must not be empty")]
    EmptyKey,
    #[error("key is {0} bytes; the limit is {MAX_KEY_LEN}")]
    KeyTooLong(usize),
    #[error("value is {len} bytes; the limit is {limit}")]
    ValueTooLarge { len: usize, limit: usize },
}

impl Command {
    /// A command that sets `key` to `value`.
    pub fn put(key: impl Into<String>, value: impl Into<String>) -> Self {
        Command {
            op: Some(Op::Put(command::Put {
                key: key.into(),
                value: value.into(),
            })),
        }
    }

    /// A command that removes `key`.
    pub fn remove(key: impl Into<String>) -> Self {
        Command {
            op: Some(Op::Remove(command::Remove { key: key.into() })),
        }
    }

    /// Checks the command against the limits, before it is proposed.
    pub fn validate(&self, max_value_len: usize) -> Result<(), InvalidCommand> {
        let check_key = |key: &str| {
            if key.is_empty() {
                Err(InvalidCommand::EmptyKey)
            } else if key.len() > MAX_KEY_LEN {
                Err(InvalidCommand::KeyTooLong(key.len()))
            } else {
                Ok(())
            }
        };
        match &self.op {
            Some(Op::Put(put)) => {
                check_key(&put.key)?;
                if put.value.len() > max_value_len {
                    return Err(InvalidCommand::ValueTooLarge {
                        len: put.value.len(),
                        limit: max_value_len,
                    });
                }
                Ok(())
            }
            Some(Op::Remove(remove)) => check_key(&remove.key),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_rejects_bad_keys_and_large_values() {
        assert_eq!(
            Command::put("", "v").validate(10),
            Err(InvalidCommand::EmptyKey)
        );
        let long = "k".repeat(MAX_KEY_LEN + 1);
        assert_eq!(
            Command::remove(long).validate(10),
            Err(InvalidCommand::KeyTooLong(MAX_KEY_LEN + 1))
        );
        assert_eq!(
            Command::put("k", "12345678901").validate(10),
            Err(InvalidCommand::ValueTooLarge { len: 11, limit: 10 })
        );
        assert_eq!(Command::put("k", "1234567890").validate(10), Ok(()));
    }
}
