//! Apply rules of gray versions (Nacos 2.5+'s gray model), and loading
//! betas written before it.

use super::*;
use prost::Message;
use tacos_core::md5_hex;
use tacos_core::snapshot as snap;

fn key(data_id: &str) -> pb::ConfigKey {
    pb::ConfigKey {
        namespace: String::new(),
        group: "DEFAULT_GROUP".into(),
        data_id: data_id.into(),
    }
}

fn origin(time: i64) -> Option<pb::Origin> {
    Some(pb::Origin {
        src_user: "alice".into(),
        src_ip: "10.0.0.1".into(),
        time_ms: time,
    })
}

fn publish(data_id: &str, content: &str) -> Command {
    Command::of(Op::PublishConfig(pb::PublishConfig {
        key: Some(key(data_id)),
        content: content.into(),
        md5: md5_hex(content),
        config_type: "yaml".into(),
        origin: origin(1),
        history_limit: 20,
        ..Default::default()
    }))
}

fn gray(
    data_id: &str,
    name: &str,
    kind: &str,
    expr: &str,
    priority: i32,
    content: &str,
) -> Command {
    Command::of(Op::PublishGray(pb::PublishGray {
        key: Some(key(data_id)),
        name: name.into(),
        rule: Some(pb::GrayRule {
            r#type: kind.into(),
            version: GRAY_RULE_VERSION.into(),
            expr: expr.into(),
            priority,
        }),
        content: content.into(),
        md5: md5_hex(content),
        config_type: "yaml".into(),
        app_name: "app".into(),
        origin: origin(5),
        cas_md5: None,
        max_grays: 10,
        history_limit: 20,
        encrypted_data_key: String::new(),
    }))
}

fn tag(data_id: &str, tag: &str, content: &str) -> Command {
    gray(
        data_id,
        &tag_gray_name(tag),
        "tag",
        tag,
        TAG_PRIORITY,
        content,
    )
}

fn apply(state: &mut State, command: Command) -> Response {
    let mut changed = Vec::new();
    state.apply(&command, &mut changed)
}

fn labels(ip: &str, tag: Option<&str>) -> ClientLabels {
    ClientLabels {
        ip: ip.into(),
        tag: tag.map(str::to_string),
    }
}

/// The content a client is served (first matching gray, else formal).
fn served(s: &State, data_id: &str, labels: &ClientLabels) -> String {
    let k = ConfigKey::from(&key(data_id));
    s.grays(&k)
        .iter()
        .find(|g| g.serves(labels))
        .map(|g| g.content.to_string())
        .or_else(|| s.config(&k).map(|c| c.content.to_string()))
        .unwrap_or_default()
}

#[test]
fn grays_match_by_priority_then_name() {
    let mut s = State::default();
    apply(&mut s, publish("a", "formal"));
    assert_eq!(apply(&mut s, tag("a", "canary", "tagged")), Response::Done);
    assert_eq!(
        apply(
            &mut s,
            gray(
                "a",
                BETA_GRAY,
                "beta",
                "10.0.0.9,10.0.0.8",
                BETA_PRIORITY,
                "beta"
            )
        ),
        Response::Done
    );
    // Two grays of one priority: by name.
    apply(&mut s, gray("a", "tag_b", "tag", "same", 7, "b"));
    apply(&mut s, gray("a", "tag_a", "tag", "same", 7, "a"));
    let k = ConfigKey::from(&key("a"));
    let names: Vec<_> = s.grays(&k).iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["beta", "tag_canary", "tag_a", "tag_b"]);

    assert_eq!(served(&s, "a", &labels("10.0.0.1", None)), "formal");
    assert_eq!(
        served(&s, "a", &labels("10.0.0.1", Some("canary"))),
        "tagged"
    );
    assert_eq!(served(&s, "a", &labels("10.0.0.8", None)), "beta");
    // The beta outranks the tag.
    assert_eq!(served(&s, "a", &labels("10.0.0.9", Some("canary"))), "beta");
    assert_eq!(served(&s, "a", &labels("10.0.0.1", Some("same"))), "a");
    assert_eq!(
        served(&s, "a", &labels("10.0.0.1", Some("other"))),
        "formal"
    );

    let beta = s.gray(&k, BETA_GRAY).unwrap();
    assert_eq!(
        beta.rule_json(),
        r#"{"type":"beta","version":"1.0.0","expr":"10.0.0.9,10.0.0.8","priority":2147483647}"#
    );
}

#[test]
fn the_gray_limit_refuses_a_new_name_with_nacos_text_but_not_a_replacement() {
    let mut s = State::default();
    apply(&mut s, publish("a", "formal"));
    for i in 0..10 {
        assert_eq!(
            apply(&mut s, tag("a", &format!("t{i}"), "x")),
            Response::Done
        );
    }
    let refused = apply(&mut s, tag("a", "t10", "x"));
    assert_eq!(
        refused,
        Response::Rejected(ApplyError::GrayOverMaxCount(10))
    );
    if let Response::Rejected(e) = refused {
        assert_eq!(e.to_string(), "gray config version is over max count :10");
    }
    assert_eq!(s.grays(&ConfigKey::from(&key("a"))).len(), 10);
    // Replacing one of the ten is not a new version.
    assert_eq!(apply(&mut s, tag("a", "t3", "y")), Response::Done);
    // The limit travels in the command: a larger one lets the 11th in.
    let mut eleventh = tag("a", "t10", "x");
    if let Some(Op::PublishGray(g)) = eleventh.op.as_mut() {
        g.max_grays = 11;
    }
    assert_eq!(apply(&mut s, eleventh), Response::Done);
}

#[test]
fn gray_writes_record_history_rows_with_the_gray_name() {
    let mut s = State::default();
    apply(&mut s, publish("a", "formal"));
    apply(&mut s, tag("a", "canary", "one"));
    apply(&mut s, tag("a", "canary", "two"));
    let stop = Command::of(Op::StopGray(pb::StopGray {
        key: Some(key("a")),
        name: "tag_canary".into(),
        origin: origin(9),
        history_limit: 20,
    }));
    let mut changed = Vec::new();
    assert_eq!(
        s.apply(&stop, &mut changed),
        Response::Removed { existed: true }
    );
    assert_eq!(changed, [ConfigKey::from(&key("a"))]);
    assert_eq!(apply(&mut s, stop), Response::Removed { existed: false });
    let k = ConfigKey::from(&key("a"));
    let held: Vec<_> = s.history(&k).collect();
    let rows: Vec<_> = held
        .iter()
        .map(|r| (r.op.code(), r.content.as_ref(), r.gray_name.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("I", "formal", ""),
            ("I", "one", "tag_canary"),
            ("U", "one", "tag_canary"),
            ("D", "two", "tag_canary"),
        ]
    );
}

#[test]
fn an_unknown_rule_type_or_version_is_refused() {
    let mut s = State::default();
    assert_eq!(
        apply(&mut s, gray("a", "x", "label", "k=v", 1, "c")),
        Response::Rejected(ApplyError::GrayRuleVersionInvalid)
    );
    let mut other_version = tag("a", "t", "c");
    if let Some(Op::PublishGray(g)) = other_version.op.as_mut() {
        if let Some(rule) = g.rule.as_mut() {
            rule.version = "2.0.0".into();
        }
    }
    assert_eq!(
        apply(&mut s, other_version),
        Response::Rejected(ApplyError::GrayRuleVersionInvalid)
    );
    assert!(s.all_grays().next().is_none());
}

fn promote(name: &str, gray_md5: &str, cas: Option<&str>) -> Command {
    Command::of(Op::PromoteGray(pb::PromoteGray {
        key: Some(key("a")),
        name: name.into(),
        gray_md5: gray_md5.into(),
        cas_md5: cas.map(str::to_string),
        origin: origin(30),
        history_limit: 20,
    }))
}

#[test]
fn promoting_a_gray_is_one_apply_or_nothing() {
    let mut s = State::default();
    apply(&mut s, publish("a", "formal"));
    apply(&mut s, tag("a", "canary", "tagged"));
    let k = ConfigKey::from(&key("a"));
    let before = s.digest();
    assert_eq!(
        apply(&mut s, promote("tag_other", &md5_hex("tagged"), None)),
        Response::Rejected(ApplyError::GrayNotFound("tag_other".into()))
    );
    assert_eq!(
        apply(&mut s, promote("tag_canary", &md5_hex("older"), None)),
        Response::Rejected(ApplyError::GrayReplaced("tag_canary".into()))
    );
    assert_eq!(
        apply(
            &mut s,
            promote("tag_canary", &md5_hex("tagged"), Some(&md5_hex("stale")))
        ),
        Response::Rejected(ApplyError::CasMismatch)
    );
    assert_eq!(s.digest(), before, "a refused promotion changes nothing");

    let mut changed = Vec::new();
    let done = s.apply(
        &promote("tag_canary", &md5_hex("tagged"), Some(&md5_hex("formal"))),
        &mut changed,
    );
    assert_eq!(done, Response::Done);
    assert!(changed.contains(&k));
    let c = s.config(&k).unwrap();
    assert_eq!(
        (c.content.as_ref(), c.config_type.as_str()),
        ("tagged", "yaml")
    );
    assert!(s.grays(&k).is_empty());
    let held: Vec<_> = s.history(&k).rev().take(2).collect();
    let rows: Vec<_> = held
        .iter()
        .map(|r| (r.op.code(), r.content.as_ref(), r.gray_name.as_str()))
        .collect();
    // The formal update (replaced content), then the gray's removal.
    assert_eq!(rows, [("D", "tagged", "tag_canary"), ("U", "formal", "")]);
}

#[test]
fn grays_survive_a_snapshot_round_trip() {
    let mut s = State::default();
    apply(&mut s, publish("a", "formal"));
    apply(&mut s, tag("a", "canary", "tagged"));
    apply(
        &mut s,
        gray("a", BETA_GRAY, "beta", "10.0.0.9", BETA_PRIORITY, "beta"),
    );
    apply(&mut s, tag("b", "x", "only a gray"));
    let loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
    assert_eq!(loaded.digest(), s.digest());
    for data_id in ["a", "b"] {
        let k = ConfigKey::from(&key(data_id));
        assert_eq!(loaded.grays(&k), s.grays(&k));
        assert_eq!(
            loaded.history(&k).collect::<Vec<_>>(),
            s.history(&k).collect::<Vec<_>>()
        );
    }
}

/// A snapshot and a log written before cluster protocol 4 (a `BetaRecord`,
/// `PublishBeta` / `StopBeta` / `PromoteBeta` commands) load into the gray
/// model: the gray named "beta", served to the same clients, with the same
/// state whether it came from the snapshot or from replaying the log.
#[test]
fn betas_of_old_snapshots_and_logs_load_as_the_beta_gray() {
    // The bytes an old snapshot holds: kind 4, then a BetaRecord.
    let old = snap::BetaRecord {
        key: Some(key("a")),
        content: "beta".into(),
        md5: md5_hex("beta"),
        beta_ips: vec!["10.0.0.9".into(), "10.0.0.8".into()],
        src_user: "bob".into(),
        src_ip: "10.0.0.2".into(),
        modify_time: 7,
    };
    let mut bytes = vec![4u8];
    old.encode(&mut bytes).unwrap();
    let from_snapshot = State::from_snapshot_records([bytes]).unwrap();

    // The same beta from an old log entry.
    let mut from_log = State::default();
    let old_publish = Command::of(Op::PublishBeta(pb::PublishBeta {
        key: Some(key("a")),
        content: "beta".into(),
        md5: md5_hex("beta"),
        beta_ips: vec!["10.0.0.9".into(), "10.0.0.8".into()],
        origin: Some(pb::Origin {
            src_user: "bob".into(),
            src_ip: "10.0.0.2".into(),
            time_ms: 7,
        }),
        config_type: "yaml".into(),
        app_name: "app".into(),
    }));
    // Encoded and decoded as the log stores it.
    let decoded = Command::decode(old_publish.encode_to_vec().as_slice()).unwrap();
    assert_eq!(apply(&mut from_log, decoded), Response::Done);
    assert_eq!(from_log.digest(), from_snapshot.digest());

    let k = ConfigKey::from(&key("a"));
    for s in [&from_snapshot, &from_log] {
        let beta = s.gray(&k, BETA_GRAY).expect("the beta is a gray");
        assert_eq!(beta.priority, BETA_PRIORITY);
        assert_eq!(served(s, "a", &labels("10.0.0.8", None)), "beta");
        assert_eq!(served(s, "a", &labels("10.0.0.7", None)), "");
        assert!(s.history(&k).next().is_none(), "old betas wrote no history");
    }
    // Re-snapshotted, it is a gray record now, and loads the same.
    let records: Vec<Vec<u8>> = from_log.snapshot_records().collect();
    for record in &records {
        assert_ne!(record.first(), Some(&4), "no beta records are written");
    }
    let again = State::from_snapshot_records(records).unwrap();
    assert_eq!(again.digest(), from_log.digest());

    // Old stop and promote commands act on it.
    let mut promoted = from_log.clone();
    let old_promote = Command::of(Op::PromoteBeta(pb::PromoteBeta {
        key: Some(key("a")),
        beta_md5: md5_hex("beta"),
        cas_md5: None,
        origin: origin(9),
        history_limit: 10,
    }));
    assert_eq!(apply(&mut promoted, old_promote), Response::Done);
    assert_eq!(&*promoted.config(&k).unwrap().content, "beta");
    assert!(promoted.grays(&k).is_empty());
    let old_stop = Command::of(Op::StopBeta(pb::StopBeta {
        key: Some(key("a")),
    }));
    assert_eq!(
        apply(&mut from_log, old_stop),
        Response::Removed { existed: true }
    );
    assert!(from_log.grays(&k).is_empty());
}
