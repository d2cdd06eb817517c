//! Property-based fuzzing (proptest) of everything that decodes bytes from
//! outside: log records, snapshot files and their records, Raft log entry
//! payloads (commands), internal cluster frames and Nacos gRPC payloads.
//! Garbage must be refused with an error, never a panic, and never make a
//! decoder allocate by a length it read (the decoders work on slices and
//! bound lengths; a test here feeds lengths up to `u32::MAX`). Valid input
//! with one byte changed must never decode to something else silently.
//!
//! The `Listening-Configs` parser is fuzzed beside it, in
//! `src/api/nacos_v1.rs` (it is private to the HTTP layer).

use proptest::prelude::*;
use prost::Message;
use tacos::grpc::payload::Incoming;
use tacos::grpc::pb::{Metadata, Payload};
use tacos_core::command as pb;
use tacos_core::types::SnapshotMeta;
use tacos_core::{Batch, Command, Op};
use tacos_state::{SnapshotLoader, State};
use tacos_store::record::{self, Decoded};
use tacos_store::snapshot;

fn cases() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        ..ProptestConfig::default()
    }
}

/// A small valid state: two configs with history, a namespace, a user.
fn sample_state() -> State {
    let mut state = State::default();
    let mut changed = Vec::new();
    let publish = |ns: &str, id: &str, content: &str| {
        Command::of(Op::PublishConfig(pb::PublishConfig {
            key: Some(pb::ConfigKey {
                namespace: ns.into(),
                group: "G".into(),
                data_id: id.into(),
            }),
            content: content.into(),
            md5: tacos_core::md5_hex(content),
            config_type: "text".into(),
            history_limit: 10,
            ..Default::default()
        }))
    };
    for command in [
        Command::of(Op::CreateNamespace(pb::CreateNamespace {
            id: "dev".into(),
            name: "Dev".into(),
            ..Default::default()
        })),
        publish("", "a", "one"),
        publish("dev", "b", "two"),
        publish("", "a", "three"),
        Command::of(Op::CreateUser(pb::CreateUser {
            username: "bob".into(),
            password_hash: "$argon2id$x".into(),
            ..Default::default()
        })),
    ] {
        state.apply(&command, &mut changed);
    }
    state
}

fn snapshot_bytes(state: &State) -> Vec<u8> {
    let meta = SnapshotMeta {
        last_log_id: None,
        last_membership: Default::default(),
        snapshot_id: "fuzz".into(),
    };
    snapshot::encode(&meta, state.snapshot_records())
}

fn decode_snapshot(bytes: &[u8]) -> Result<State, String> {
    let mut loader = SnapshotLoader::default();
    snapshot::decode(bytes, |r| loader.load(r)).map_err(|e| e.to_string())?;
    Ok(loader.finish())
}

/// The same file decoded as read from a reader, in small reads.
fn decode_snapshot_read(bytes: &[u8]) -> Result<State, String> {
    let mut loader = SnapshotLoader::default();
    let reader = std::io::BufReader::with_capacity(7, bytes);
    snapshot::decode_from(reader, |r| loader.load(r)).map_err(|e| e.to_string())?;
    Ok(loader.finish())
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn log_records_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), offset in 0usize..300) {
        if let Decoded::Record { payload, next } = record::decode_at(&bytes, offset) {
            prop_assert!(next <= bytes.len());
            prop_assert!(payload.len() < next);
        }
    }

    #[test]
    fn log_records_round_trip_and_catch_any_changed_byte(
        payload in proptest::collection::vec(any::<u8>(), 0..200),
        flip in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let mut framed = Vec::new();
        record::encode(&payload, &mut framed);
        match record::decode_at(&framed, 0) {
            Decoded::Record { payload: got, next } => {
                prop_assert_eq!(got, &payload[..]);
                prop_assert_eq!(next, framed.len());
            }
            other => prop_assert!(false, "{:?}", other),
        }
        let at = flip.index(framed.len());
        framed[at] ^= 1 << bit;
        if let Decoded::Record { payload: got, .. } = record::decode_at(&framed, 0) {
            prop_assert!(false, "a changed byte decoded as {:?}", got);
        }
    }

    #[test]
    fn huge_lengths_are_refused_without_allocating(len in any::<u32>(), tail in proptest::collection::vec(any::<u8>(), 4..64)) {
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend_from_slice(&tail);
        // Decoding works on the slice: whatever the length says, nothing
        // past the buffer is read or allocated.
        if let Decoded::Record { payload, .. } = record::decode_at(&bytes, 0) {
            prop_assert!(payload.len() <= tail.len());
        }
    }

    #[test]
    fn snapshot_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        // Read whole or a piece at a time, a file decodes the same or fails.
        let whole = decode_snapshot(&bytes).map(|s| s.digest());
        let read = decode_snapshot_read(&bytes).map(|s| s.digest());
        prop_assert_eq!(whole.is_ok(), read.is_ok());
        if let (Ok(whole), Ok(read)) = (whole, read) {
            prop_assert_eq!(whole, read);
        }
    }

    #[test]
    fn damaged_snapshots_are_refused_not_misread(flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        let state = sample_state();
        let mut bytes = snapshot_bytes(&state);
        let at = flip.index(bytes.len());
        bytes[at] ^= 1 << bit;
        prop_assert_eq!(decode_snapshot(&bytes).is_ok(), decode_snapshot_read(&bytes).is_ok());
        if let Ok(decoded) = decode_snapshot(&bytes) {
            // Only a change in a part without meaning may pass, and then
            // the state must be the same.
            prop_assert_eq!(decoded.digest(), state.digest());
        }
    }

    #[test]
    fn snapshot_records_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = State::from_snapshot_records([bytes]);
    }

    #[test]
    fn log_entry_payloads_never_panic_and_apply_safely(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(batch) = Batch::decode(&bytes[..]) {
            let mut state = sample_state();
            let mut changed = Vec::new();
            for command in &batch.commands {
                let _ = state.apply(command, &mut changed);
            }
        }
    }

    #[test]
    fn cluster_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let frame = tacos_raft::rpc::pb::Frame { payload: bytes };
        let _ = tacos_raft::rpc::decode::<tacos_raft::rpc::Forward>(&frame);
        let _ = tacos_raft::rpc::decode::<tacos_raft::rpc::ForwardReply>(&frame);
    }

    #[test]
    fn grpc_payloads_never_panic(
        kind in ".{0,40}",
        body in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..256)),
        json in proptest::option::of("[\\[\\]{}\":,a-z0-9 .\\-]{0,120}"),
    ) {
        let value = json.map(String::into_bytes).or(body);
        let payload = Payload {
            metadata: Some(Metadata { r#type: kind, client_ip: String::new(), headers: Default::default() }),
            body: value.map(|value| prost_types::Any { type_url: String::new(), value }),
        };
        if let Ok(incoming) = Incoming::parse(payload) {
            let _ = incoming.request_id();
            let _ = incoming.str("dataId");
            let _: Result<Option<Vec<serde_json::Value>>, _> = incoming.field("configListenContexts");
            let _ = incoming.header("accessToken");
        }
    }
}

#[test]
fn deeply_nested_grpc_json_is_refused_not_a_stack_overflow() {
    let json = "[".repeat(100_000);
    let payload = Payload {
        metadata: None,
        body: Some(prost_types::Any {
            type_url: String::new(),
            value: json.into_bytes(),
        }),
    };
    assert!(Incoming::parse(payload).is_err());
}
