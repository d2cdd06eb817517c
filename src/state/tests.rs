//! Apply rules of the config tables.

use super::*;
use crate::model::md5_hex;

fn key(ns: &str, data_id: &str) -> pb::ConfigKey {
    pb::ConfigKey {
        namespace: ns.into(),
        group: "DEFAULT_GROUP".into(),
        data_id: data_id.into(),
    }
}

fn publish(ns: &str, data_id: &str, content: &str, time: i64) -> Command {
    Command::of(Op::PublishConfig(pb::PublishConfig {
        key: Some(key(ns, data_id)),
        content: content.into(),
        md5: md5_hex(content),
        config_type: "text".into(),
        origin: Some(pb::Origin {
            src_user: "alice".into(),
            src_ip: "10.0.0.1".into(),
            time_ms: time,
        }),
        history_limit: 3,
        ..Default::default()
    }))
}

fn remove(ns: &str, data_id: &str) -> Command {
    Command::of(Op::RemoveConfig(pb::RemoveConfig {
        key: Some(key(ns, data_id)),
        origin: None,
        history_limit: 3,
    }))
}

fn apply(state: &mut State, command: Command) -> (Response, Vec<ConfigKey>) {
    let mut changed = Vec::new();
    let response = state.apply(&command, &mut changed);
    (response, changed)
}

#[test]
fn publish_update_delete_record_history_like_nacos() {
    let mut s = State::default();
    let k = ConfigKey::new("", "DEFAULT_GROUP", "a");
    assert_eq!(
        apply(&mut s, publish("", "a", "one", 10)),
        (Response::Done, vec![k.clone()])
    );
    assert_eq!(
        apply(&mut s, publish("public", "a", "two", 20)).0,
        Response::Done
    );
    let c = s.config(&k).unwrap();
    assert_eq!(
        (c.content.as_str(), c.create_time, c.modify_time, c.id),
        ("two", 10, 20, 1)
    );
    assert_eq!(
        apply(&mut s, remove("", "a")).0,
        Response::Removed { existed: true }
    );
    assert_eq!(
        apply(&mut s, remove("", "a")),
        (Response::Removed { existed: false }, vec![])
    );
    let rows: Vec<(u64, &str, &str, u64)> = s
        .history(&k)
        .map(|r| (r.id, r.op.code(), r.content.as_str(), r.last_id))
        .collect();
    // Insert keeps the new content; update and delete keep the replaced one.
    assert_eq!(
        rows,
        vec![(1, "I", "one", 0), (2, "U", "one", 1), (3, "D", "two", 2)]
    );
    assert_eq!(s.previous_history_row(3).unwrap().id, 2);
    assert!(s.previous_history_row(1).is_none());
    assert_eq!(s.md5_for(&k, "10.0.0.1"), "");
}

#[test]
fn history_is_bounded_and_ids_never_repeat_even_after_a_snapshot() {
    let mut s = State::default();
    for i in 0..5 {
        apply(&mut s, publish("", "a", &format!("v{i}"), i));
    }
    let k = ConfigKey::new("", "DEFAULT_GROUP", "a");
    let ids: Vec<u64> = s.history(&k).map(|r| r.id).collect();
    assert_eq!(ids, vec![3, 4, 5], "limit 3 keeps the newest");
    assert!(s.history_row(1).is_none());

    let mut loaded = State::default();
    for record in s.snapshot_records() {
        loaded.load_snapshot_record(&record).unwrap();
    }
    apply(&mut loaded, publish("", "b", "x", 9));
    let b = ConfigKey::new("", "DEFAULT_GROUP", "b");
    assert_eq!(loaded.history(&b).next().unwrap().id, 6);
    assert_eq!(loaded.config(&b).unwrap().id, 2);
    assert_eq!(loaded.config(&k), s.config(&k));
}

#[test]
fn cas_namespaces_and_betas_are_checked_at_apply() {
    let mut s = State::default();
    apply(&mut s, publish("", "a", "one", 1));
    let mut cas = publish("", "a", "two", 2);
    if let Some(Op::PublishConfig(p)) = cas.op.as_mut() {
        p.cas_md5 = Some("stale".into());
    }
    assert_eq!(
        apply(&mut s, cas.clone()),
        (Response::Rejected(ApplyError::CasMismatch), vec![])
    );
    if let Some(Op::PublishConfig(p)) = cas.op.as_mut() {
        p.cas_md5 = Some(md5_hex("one"));
    }
    assert_eq!(apply(&mut s, cas).0, Response::Done);

    assert_eq!(
        apply(&mut s, publish("dev", "a", "x", 3)).0,
        Response::Rejected(ApplyError::NamespaceNotFound("dev".into()))
    );
    let create = Command::of(Op::CreateNamespace(pb::CreateNamespace {
        id: "dev".into(),
        name: "Dev".into(),
        desc: String::new(),
        time_ms: 1,
    }));
    assert_eq!(apply(&mut s, create.clone()).0, Response::Done);
    assert_eq!(
        apply(&mut s, create).0,
        Response::Rejected(ApplyError::NamespaceExists("dev".into()))
    );
    assert_eq!(apply(&mut s, publish("dev", "a", "x", 3)).0, Response::Done);
    let drop_dev = Command::of(Op::RemoveNamespace(pb::RemoveNamespace {
        id: "dev".into(),
    }));
    assert_eq!(
        apply(&mut s, drop_dev.clone()).0,
        Response::Rejected(ApplyError::NamespaceNotEmpty("dev".into(), 1))
    );
    apply(&mut s, remove("dev", "a"));
    assert_eq!(
        apply(&mut s, drop_dev).0,
        Response::Removed { existed: true }
    );

    let k = ConfigKey::new("", "DEFAULT_GROUP", "a");
    let beta = Command::of(Op::PublishBeta(pb::PublishBeta {
        key: Some(key("", "a")),
        content: "beta".into(),
        md5: md5_hex("beta"),
        beta_ips: vec!["10.0.0.9".into()],
        ..Default::default()
    }));
    assert_eq!(apply(&mut s, beta), (Response::Done, vec![k.clone()]));
    assert_eq!(s.md5_for(&k, "10.0.0.9"), md5_hex("beta"));
    assert_eq!(s.md5_for(&k, "10.0.0.8"), md5_hex("two"));
    let stop = Command::of(Op::StopBeta(pb::StopBeta {
        key: Some(key("", "a")),
    }));
    assert_eq!(
        apply(&mut s, stop),
        (Response::Removed { existed: true }, vec![k.clone()])
    );
    assert_eq!(s.md5_for(&k, "10.0.0.9"), md5_hex("two"));
    assert_eq!(
        apply(&mut s, Command::default()).0,
        Response::Rejected(ApplyError::UnknownCommand)
    );
}
