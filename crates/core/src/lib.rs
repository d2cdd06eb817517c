//! The bottom layer: the vocabulary every other crate speaks.
//!
//! Commands and snapshot records (prost), config keys, the Nacos input rules
//! ([`validate`]), what apply answers ([`Response`], [`ApplyError`]), the
//! openraft type configuration ([`types`]), md5 and the wall clock. Nothing
//! here does I/O, and nothing here knows another Tacos crate. Commands and snapshot records are generated from
//! `proto/*.proto` by prost, so the bytes in the Raft log and in snapshot
//! files have a schema that can evolve (new fields, new `oneof` arms).

/// Commands, the only way replicated state changes (`proto/command.proto`).
#[allow(clippy::module_inception)]
pub mod command {
    include!(concat!(env!("OUT_DIR"), "/tacos.command.rs"));
}

/// Snapshot records (`proto/snapshot.proto`).
pub mod snapshot {
    include!(concat!(env!("OUT_DIR"), "/tacos.snapshot.rs"));
}

pub mod key;
pub mod response;
pub mod types;
pub mod validate;

pub use key::{canonical_namespace, shown_namespace, ConfigKey, KeyParts, PUBLIC_NAMESPACE};
pub use response::{ApplyError, Response};

pub use command::command::Op;
pub use command::{Batch, Command};

impl From<Command> for Batch {
    fn from(command: Command) -> Self {
        Batch {
            commands: vec![command],
        }
    }
}

/// An entry's payload ([`types::TypeConfig`]'s `D`) of one command.
impl From<Command> for std::sync::Arc<Batch> {
    fn from(command: Command) -> Self {
        std::sync::Arc::new(Batch::from(command))
    }
}

impl Command {
    /// Wraps one operation (not audited).
    pub fn of(op: Op) -> Self {
        Command {
            op: Some(op),
            actor: None,
        }
    }

    /// Wraps one operation done by `actor` (recorded in the audit log).
    pub fn by(op: Op, actor: command::Actor) -> Self {
        Command {
            op: Some(op),
            actor: Some(actor),
        }
    }
}

/// Wall-clock milliseconds since the Unix epoch (0 if the clock is before it).
///
/// Only the node that accepts a write reads the clock: it stamps the time
/// into the command, so apply stays deterministic.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Lowercase hex md5 of the UTF-8 bytes, as Nacos reports it.
pub fn md5_hex(content: &str) -> String {
    format!("{:x}", md5::compute(content.as_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn md5_is_lowercase_hex_of_utf8_bytes() {
        assert_eq!(super::md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            super::md5_hex("配置"),
            format!("{:x}", md5::compute("配置".as_bytes()))
        );
        assert_eq!(super::md5_hex("a"), "0cc175b9c0f1b6a831c399e269772661");
    }
}
