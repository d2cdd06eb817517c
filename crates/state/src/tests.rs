//! Apply rules of the config tables.

use super::*;
use tacos_core::md5_hex;

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

/// The md5 a client at `ip` (no tag) is served: the first matching gray,
/// else the config's (the app layer's rule, restated for these tests).
fn md5_for(s: &State, k: &ConfigKey, ip: &str) -> String {
    let labels = ClientLabels {
        ip: ip.into(),
        tag: None,
    };
    s.grays(k)
        .iter()
        .find(|g| g.serves(&labels))
        .map(|g| g.md5.to_string())
        .or_else(|| s.config(k).map(|c| c.md5.to_string()))
        .unwrap_or_default()
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
        (c.content.as_ref(), c.create_time, c.modify_time, c.id),
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
    let rows: Vec<(u64, &str, String, u64)> = s
        .history(&k)
        .map(|r| (r.id, r.op.code(), r.content.to_string(), r.last_id))
        .collect();
    // Insert keeps the new content; update and delete keep the replaced one.
    assert_eq!(
        rows,
        vec![
            (1, "I", "one".into(), 0),
            (2, "U", "one".into(), 1),
            (3, "D", "two".into(), 2)
        ]
    );
    assert_eq!(s.previous_history_row(3).unwrap().id, 2);
    assert!(s.previous_history_row(1).is_none());
    assert_eq!(md5_for(&s, &k, "10.0.0.1"), "");
}

/// A removed config's history stays under its key, but the key is no
/// config: not counted, not listed, not in the snapshot's configs.
/// A publish of `app_name`/`tags`, or (`None`) without them.
fn publish_labelled(content: &str, app: Option<&str>, tags: Option<&str>) -> Command {
    let Some(Op::PublishConfig(mut p)) = publish("", "a", content, 20).op else {
        unreachable!("publish() makes a PublishConfig")
    };
    p.keep_app_name = app.is_none();
    p.keep_tags = tags.is_none();
    p.app_name = app.unwrap_or_default().into();
    p.tags = tags.unwrap_or_default().into();
    Command::of(Op::PublishConfig(p))
}

#[test]
fn an_update_without_app_name_or_tags_keeps_them_as_nacos_does() {
    let mut s = State::default();
    let a = ConfigKey::new("", "DEFAULT_GROUP", "a");
    let labels = |s: &State| {
        let c = s.config(&a).expect("config a");
        (c.app_name.clone(), c.tags.clone())
    };
    // A create without them has none.
    apply(&mut s, publish_labelled("one", None, None));
    assert_eq!(labels(&s), (String::new(), String::new()));
    apply(&mut s, publish_labelled("two", Some("shop"), Some("t1,t2")));
    assert_eq!(labels(&s), ("shop".into(), "t1,t2".into()));
    // An SDK's publish sends neither: both stay.
    apply(&mut s, publish_labelled("three", None, None));
    assert_eq!(labels(&s), ("shop".into(), "t1,t2".into()));
    // Sent empty, each is cleared on its own.
    apply(&mut s, publish_labelled("four", Some(""), None));
    assert_eq!(labels(&s), (String::new(), "t1,t2".into()));
    apply(&mut s, publish_labelled("five", None, Some("")));
    assert_eq!(labels(&s), (String::new(), String::new()));
    // The same after a snapshot round trip and a replay.
    let loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
    assert_eq!(labels(&loaded), labels(&s));
}

#[test]
fn removed_configs_keep_their_history_but_are_not_configs() {
    let mut s = State::default();
    apply(&mut s, publish("", "a", "one", 10));
    apply(&mut s, publish("", "b", "two", 11));
    apply(&mut s, remove("", "a"));
    let a = ConfigKey::new("", "DEFAULT_GROUP", "a");
    let b = ConfigKey::new("", "DEFAULT_GROUP", "b");
    let check = |s: &State| {
        assert_eq!(s.config_count(), 1);
        assert!(s.config(&a).is_none());
        let listed: Vec<&ConfigKey> = s.configs_in("").map(|(k, _)| k).collect();
        assert_eq!(listed, vec![&b]);
        let ops: Vec<&str> = s.history(&a).map(|r| r.op.code()).collect();
        assert_eq!(ops, vec!["I", "D"]);
    };
    check(&s);
    let mut loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
    check(&loaded);
    // Published again: a config again, its history goes on.
    apply(&mut loaded, publish("", "a", "three", 12));
    assert_eq!(loaded.config_count(), 2);
    assert_eq!(loaded.configs_in("").count(), 2);
    let ids: Vec<u64> = loaded.history(&a).map(|r| r.id).collect();
    assert_eq!(ids, vec![1, 3, 4]);
    // Removing one that is gone changes nothing.
    apply(&mut loaded, remove("", "a"));
    apply(&mut loaded, remove("", "a"));
    assert_eq!(loaded.config_count(), 1);
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

    let mut loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
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
    assert_eq!(md5_for(&s, &k, "10.0.0.9"), md5_hex("beta"));
    assert_eq!(md5_for(&s, &k, "10.0.0.8"), md5_hex("two"));
    let stop = Command::of(Op::StopBeta(pb::StopBeta {
        key: Some(key("", "a")),
    }));
    assert_eq!(
        apply(&mut s, stop),
        (Response::Removed { existed: true }, vec![k.clone()])
    );
    assert_eq!(md5_for(&s, &k, "10.0.0.9"), md5_hex("two"));
    assert_eq!(
        apply(&mut s, Command::default()).0,
        Response::Rejected(ApplyError::UnknownCommand)
    );
}

fn import(publishes: Vec<Command>, time: i64) -> Command {
    let publishes = publishes
        .into_iter()
        .map(|c| match c.op {
            Some(Op::PublishConfig(p)) => p,
            other => panic!("not a publish: {other:?}"),
        })
        .collect();
    Command::by(
        Op::ImportConfigs(pb::ImportConfigs { publishes }),
        actor("alice", time, 100),
    )
}

#[test]
fn an_import_applies_every_publish_or_none() {
    let mut s = State::default();
    apply(&mut s, publish("", "a", "one", 1));
    let audit_before = s.audit().len();

    // The second publish's compare-and-set fails: nothing of the import
    // is applied, not even the first (a new config), and no listener is told.
    let mut stale = publish("", "a", "two", 2);
    if let Some(Op::PublishConfig(p)) = stale.op.as_mut() {
        p.cas_md5 = Some("stale".into());
    }
    let (response, changed) = apply(&mut s, import(vec![publish("", "b", "new", 2), stale], 2));
    assert_eq!(
        response,
        Response::Rejected(ApplyError::ImportRefused {
            entry: "DEFAULT_GROUP/a".into(),
            reason: Box::new(ApplyError::CasMismatch),
        })
    );
    assert!(changed.is_empty());
    assert!(s
        .config(&ConfigKey::new("", "DEFAULT_GROUP", "b"))
        .is_none());
    assert_eq!(
        s.config(&ConfigKey::new("", "DEFAULT_GROUP", "a"))
            .unwrap()
            .content
            .as_ref(),
        "one"
    );
    // Only the audit log moved: a row per config, each saying it was refused.
    let rows: Vec<_> = s.audit().skip(audit_before).collect();
    assert_eq!(
        rows.iter()
            .map(|r| (&*r.action, r.target.as_str()))
            .collect::<Vec<_>>(),
        [
            ("config.import", "public/DEFAULT_GROUP/b"),
            ("config.import", "public/DEFAULT_GROUP/a")
        ]
    );
    assert!(rows.iter().all(|r| *r.outcome
        == *"refused: nothing imported: DEFAULT_GROUP/a was refused: \
            Cas publish fail, server md5 may have changed."));
    let mut without_audit = s.clone();
    without_audit.audit = Default::default();
    without_audit.next_audit_id = 0;
    let mut expected = State::default();
    apply(&mut expected, publish("", "a", "one", 1));
    assert_eq!(without_audit.digest(), expected.digest());

    // A namespace that does not exist refuses the whole import too.
    let (response, _) = apply(
        &mut s,
        import(
            vec![publish("", "c", "x", 3), publish("nope", "d", "y", 3)],
            3,
        ),
    );
    assert!(matches!(
        response,
        Response::Rejected(ApplyError::ImportRefused { ref reason, .. })
            if **reason == ApplyError::NamespaceNotFound("nope".into())
    ));
    assert!(s
        .config(&ConfigKey::new("", "DEFAULT_GROUP", "c"))
        .is_none());

    // All accepted: every config is written, with history, and each
    // changed key is reported once.
    let mut cas = publish("", "a", "two", 4);
    if let Some(Op::PublishConfig(p)) = cas.op.as_mut() {
        p.cas_md5 = Some(md5_hex("one"));
    }
    let (response, changed) = apply(&mut s, import(vec![publish("", "b", "new", 4), cas], 4));
    assert_eq!(response, Response::Done);
    assert_eq!(
        changed,
        [
            ConfigKey::new("", "DEFAULT_GROUP", "b"),
            ConfigKey::new("", "DEFAULT_GROUP", "a")
        ]
    );
    assert_eq!(
        s.config(&ConfigKey::new("", "DEFAULT_GROUP", "a"))
            .unwrap()
            .content
            .as_ref(),
        "two"
    );
    assert_eq!(
        s.config(&ConfigKey::new("", "DEFAULT_GROUP", "b"))
            .unwrap()
            .content
            .as_ref(),
        "new"
    );
    let ops: Vec<&str> = s
        .history(&ConfigKey::new("", "DEFAULT_GROUP", "a"))
        .map(|r| r.op.code())
        .collect();
    assert_eq!(ops, ["I", "U"]);
    assert!(s
        .audit()
        .rev()
        .take(2)
        .all(|r| &*r.outcome == "ok" && &*r.action == "config.import"));
}

// ---- auth tables and the audit log ---------------------------------------------

fn actor(user: &str, time: i64, limit: u32) -> pb::Actor {
    pb::Actor {
        user: user.into(),
        ip: "10.0.0.9".into(),
        time_ms: time,
        audit_limit: limit,
    }
}

fn init_auth(admin: &str) -> Command {
    Command::by(
        Op::InitAuth(pb::InitAuth {
            token_key: vec![1; 32],
            admin_username: admin.into(),
            admin_password_hash: "$argon2id$stand-in".into(),
            time_ms: 5,
        }),
        actor("system", 5, 100),
    )
}

fn create_user(name: &str, admin: bool) -> Command {
    Command::by(
        Op::CreateUser(pb::CreateUser {
            username: name.into(),
            password_hash: format!("hash-of-{name}"),
            admin,
            time_ms: 6,
        }),
        actor("nacos", 6, 100),
    )
}

fn set_permission(name: &str, namespace: &str, access: pb::Access) -> Command {
    Command::by(
        Op::SetPermission(pb::SetPermission {
            username: name.into(),
            namespace: namespace.into(),
            access: access as i32,
            // As entries from before group/dataId grants: the whole namespace.
            ..Default::default()
        }),
        actor("nacos", 7, 100),
    )
}

#[test]
fn auth_is_initialized_once_and_the_first_init_wins() {
    let mut s = State::default();
    assert!(s.auth_key().is_none());
    assert_eq!(apply(&mut s, init_auth("nacos")).0, Response::Done);
    assert_eq!(s.auth_key().unwrap().token_key, vec![1; 32]);
    let admin = s.user("nacos").unwrap();
    assert!(admin.admin && admin.enabled);
    assert_eq!(
        apply(&mut s, init_auth("other")).0,
        Response::Rejected(ApplyError::AuthInitialized)
    );
    assert!(s.user("other").is_none());
}

#[test]
fn an_existing_user_keeps_its_password_at_init() {
    let mut s = State::default();
    apply(&mut s, create_user("nacos", false));
    apply(&mut s, init_auth("nacos"));
    let user = s.user("nacos").unwrap();
    assert_eq!(user.password_hash, "hash-of-nacos");
}

#[test]
fn permissions_grant_namespaces_and_the_last_admin_stays() {
    let mut s = State::default();
    apply(&mut s, init_auth("nacos"));
    apply(
        &mut s,
        Command::of(Op::CreateNamespace(pb::CreateNamespace {
            id: "dev".into(),
            name: "dev".into(),
            ..Default::default()
        })),
    );
    assert_eq!(apply(&mut s, create_user("bob", false)).0, Response::Done);
    assert_eq!(
        apply(&mut s, create_user("bob", false)).0,
        Response::Rejected(ApplyError::UserExists("bob".into()))
    );
    apply(&mut s, set_permission("bob", "dev", pb::Access::Read));
    let bob = s.user("bob").unwrap().clone();
    assert_eq!(bob.namespace_access("dev"), Some(Access::Read));
    assert_eq!(bob.namespace_access(""), None);
    assert_eq!(bob.namespace_access("public"), None);
    apply(&mut s, set_permission("bob", "*", pb::Access::ReadWrite));
    assert_eq!(
        s.user("bob").unwrap().namespace_access("prod"),
        Some(Access::ReadWrite)
    );
    assert_eq!(
        apply(&mut s, set_permission("bob", "nope", pb::Access::Read)).0,
        Response::Rejected(ApplyError::NamespaceNotFound("nope".into()))
    );
    // Revoking, and removing the namespace drops permissions in it.
    apply(&mut s, set_permission("bob", "*", pb::Access::None));
    assert_eq!(s.user("bob").unwrap().namespace_access("prod"), None);
    apply(
        &mut s,
        Command::of(Op::RemoveNamespace(pb::RemoveNamespace {
            id: "dev".into(),
        })),
    );
    assert!(s.user("bob").unwrap().permissions.is_empty());

    let remove = |name: &str| {
        Command::of(Op::RemoveUser(pb::RemoveUser {
            username: name.into(),
        }))
    };
    assert_eq!(
        apply(&mut s, remove("nacos")).0,
        Response::Rejected(ApplyError::LastAdmin("nacos".into()))
    );
    let demote = Command::of(Op::UpdateUser(pb::UpdateUser {
        username: "nacos".into(),
        admin: Some(false),
        ..Default::default()
    }));
    assert_eq!(
        apply(&mut s, demote.clone()).0,
        Response::Rejected(ApplyError::LastAdmin("nacos".into()))
    );
    apply(&mut s, create_user("root", true));
    assert_eq!(apply(&mut s, demote).0, Response::Done);
    assert_eq!(
        apply(&mut s, remove("nacos")).0,
        Response::Removed { existed: true }
    );
}

#[test]
fn a_new_password_bumps_the_generation() {
    let mut s = State::default();
    apply(&mut s, create_user("bob", false));
    let change = Command::of(Op::UpdateUser(pb::UpdateUser {
        username: "bob".into(),
        password_hash: Some("new-hash".into()),
        time_ms: 9,
        ..Default::default()
    }));
    apply(&mut s, change);
    let bob = s.user("bob").unwrap();
    assert_eq!(
        (bob.generation, bob.password_hash.as_str()),
        (1, "new-hash")
    );
    assert_eq!(bob.modify_time, 9);
}

fn rehash(name: &str, expected: &str, new: &str) -> Command {
    Command::by(
        Op::RehashPassword(pb::RehashPassword {
            username: name.into(),
            expected_hash: expected.into(),
            new_hash: new.into(),
        }),
        actor(name, 20, 100),
    )
}

#[test]
fn a_rehash_replaces_only_the_hash_the_login_verified() {
    let mut s = State::default();
    apply(&mut s, create_user("bob", false));
    let before = s.user("bob").unwrap().clone();

    // A login verified "hash-of-bob": replaced, tokens kept (same generation).
    let (response, _) = apply(&mut s, rehash("bob", "hash-of-bob", "$argon2id$new"));
    assert_eq!(response, Response::Done);
    let bob = s.user("bob").unwrap();
    assert_eq!(bob.password_hash, "$argon2id$new");
    assert_eq!(
        (bob.generation, bob.modify_time, bob.admin),
        (before.generation, before.modify_time, before.admin)
    );

    // A second login that verified the old hash (a concurrent one) changes nothing.
    let (response, _) = apply(&mut s, rehash("bob", "hash-of-bob", "$argon2id$other"));
    assert_eq!(
        response,
        Response::Rejected(ApplyError::PasswordHashChanged("bob".into()))
    );
    assert_eq!(s.user("bob").unwrap().password_hash, "$argon2id$new");

    // Nor after a password change, nor for a user that is gone.
    let change = Command::of(Op::UpdateUser(pb::UpdateUser {
        username: "bob".into(),
        password_hash: Some("changed".into()),
        time_ms: 21,
        ..Default::default()
    }));
    apply(&mut s, change);
    let (response, _) = apply(&mut s, rehash("bob", "$argon2id$new", "$argon2id$late"));
    assert!(matches!(response, Response::Rejected(_)), "{response:?}");
    assert_eq!(s.user("bob").unwrap().password_hash, "changed");
    let (response, _) = apply(&mut s, rehash("carol", "x", "y"));
    assert_eq!(
        response,
        Response::Rejected(ApplyError::UserNotFound("carol".into()))
    );

    // Audited, without a hash.
    let rows: Vec<_> = s.audit().filter(|r| &*r.action == "user.rehash").collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(&*rows[0].outcome, "ok");
    assert_eq!(rows[0].detail, "bcrypt -> argon2id");
    assert!(rows
        .iter()
        .all(|r| !r.detail.contains("argon2id$") && !r.detail.contains("hash-of")));
}

#[test]
fn the_audit_log_records_outcomes_and_keeps_its_limit() {
    let mut s = State::default();
    let mut published = publish("", "a", "one", 10);
    published.actor = Some(actor("alice", 10, 3));
    apply(&mut s, published);
    apply(&mut s, init_auth("nacos"));
    apply(&mut s, init_auth("nacos")); // refused, still recorded
    let rows: Vec<_> = s.audit().collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(&*rows[0].action, "config.publish");
    assert_eq!(rows[0].target, "public/DEFAULT_GROUP/a");
    assert_eq!((&*rows[0].user, &*rows[0].ip), ("alice", "10.0.0.9"));
    assert_eq!(&*rows[2].outcome, "refused: auth is already initialized");
    // What repeats from one row to the next is stored once.
    assert!(Arc::ptr_eq(&rows[1].user, &rows[2].user));
    assert!(Arc::ptr_eq(&rows[0].outcome, &rows[1].outcome));
    assert!(!Arc::ptr_eq(&rows[0].user, &rows[1].user));
    // Commands without an actor are not audited; a smaller limit trims.
    apply(&mut s, publish("", "b", "two", 11));
    assert_eq!(s.audit().len(), 3);
    let mut trimmed = publish("", "c", "three", 12);
    trimmed.actor = Some(actor("alice", 12, 2));
    apply(&mut s, trimmed);
    let ids: Vec<u64> = s.audit().map(|r| r.id).collect();
    assert_eq!(ids, [3, 4]);
}

/// Auth set up, user bob with read rights everywhere: three audited writes.
fn state_with_bob() -> State {
    let mut s = State::default();
    apply(&mut s, init_auth("nacos"));
    apply(&mut s, create_user("bob", false));
    apply(&mut s, set_permission("bob", "*", pb::Access::Read));
    s
}

#[test]
fn users_and_audit_survive_a_snapshot_round_trip() {
    let s = state_with_bob();
    let loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
    assert_eq!(loaded.digest(), s.digest());
    assert_eq!(loaded.user("bob"), s.user("bob"));
    assert_eq!(loaded.auth_key(), s.auth_key());
    assert_eq!(loaded.audit().len(), 3);
    let rows: Vec<_> = loaded.audit().collect();
    assert!(
        Arc::ptr_eq(&rows[1].user, &rows[2].user),
        "loading shares too"
    );
    // Debug never shows a hash or the key.
    let shown = format!("{:?} {:?}", loaded.user("bob"), loaded.auth_key());
    assert!(
        !shown.contains("hash-of") && !shown.contains("[1, 1"),
        "{shown}"
    );
}

#[test]
fn records_decode_back_to_what_re_encodes_the_same() {
    let s = state_with_bob();
    let mut decoded = 0;
    for bytes in s.snapshot_records() {
        // The auth key's record is the state's own: not a migration's `Record`.
        if let Some(record) = Record::decode(&bytes) {
            assert_eq!(record.encode(), bytes);
            decoded += 1;
        }
    }
    assert!(decoded >= 3, "{decoded}");
    assert!(Record::decode(&[]).is_none());
    assert!(Record::decode(&[0xEE, 1, 2]).is_none());
}

// ---- roles -------------------------------------------------------------------

fn role_op(op: Op) -> Command {
    Command::by(op, actor("nacos", 8, 100))
}

fn bind(role: &str, user: &str) -> Command {
    role_op(Op::BindRole(pb::BindRole {
        role: role.into(),
        username: user.into(),
    }))
}

fn unbind(role: &str, user: &str) -> Command {
    role_op(Op::UnbindRole(pb::UnbindRole {
        role: role.into(),
        username: user.into(),
    }))
}

fn grant_role(role: &str, namespace: &str, access: pb::Access) -> Command {
    role_op(Op::SetRolePermission(pb::SetRolePermission {
        role: role.into(),
        namespace: namespace.into(),
        access: access as i32,
        ..Default::default()
    }))
}

fn namespace(id: &str) -> Command {
    Command::of(Op::CreateNamespace(pb::CreateNamespace {
        id: id.into(),
        name: id.into(),
        ..Default::default()
    }))
}

#[test]
fn roles_grant_their_namespaces_to_every_bound_user() {
    let mut s = State::default();
    apply(&mut s, init_auth("nacos"));
    apply(&mut s, namespace("dev"));
    apply(&mut s, namespace("prod"));
    apply(&mut s, create_user("bob", false));
    apply(&mut s, create_user("carol", false));
    apply(&mut s, set_permission("bob", "prod", pb::Access::Read));

    // A permission needs the role to exist; binding creates it.
    assert_eq!(
        apply(&mut s, grant_role("devs", "dev", pb::Access::ReadWrite)).0,
        Response::Rejected(ApplyError::RoleNotFound("devs".into()))
    );
    assert_eq!(apply(&mut s, bind("devs", "bob")).0, Response::Done);
    assert_eq!(apply(&mut s, bind("devs", "carol")).0, Response::Done);
    assert_eq!(
        apply(&mut s, bind("devs", "bob")).0,
        Response::Rejected(ApplyError::RoleBound {
            role: "devs".into(),
            username: "bob".into()
        })
    );
    assert_eq!(
        apply(&mut s, bind("devs", "nobody")).0,
        Response::Rejected(ApplyError::UserNotFound("nobody".into()))
    );
    assert_eq!(
        apply(&mut s, bind(ADMIN_ROLE, "bob")).0,
        Response::Rejected(ApplyError::RoleReserved(ADMIN_ROLE.into()))
    );
    assert_eq!(
        apply(&mut s, grant_role("devs", "nope", pb::Access::Read)).0,
        Response::Rejected(ApplyError::NamespaceNotFound("nope".into()))
    );
    apply(&mut s, grant_role("devs", "dev", pb::Access::ReadWrite));
    apply(&mut s, grant_role("devs", "prod", pb::Access::Read));

    // Own and role permissions fold together, the stronger winning; the
    // stored user keeps only its own.
    let bob = s.user_with_roles("bob").unwrap();
    assert_eq!(bob.namespace_access("dev"), Some(Access::ReadWrite));
    assert_eq!(bob.namespace_access("prod"), Some(Access::Read));
    assert_eq!(bob.namespace_access(""), None);
    assert_eq!(s.user("bob").unwrap().namespace_access("dev"), None);
    assert_eq!(
        s.user_with_roles("carol").unwrap().namespace_access("dev"),
        Some(Access::ReadWrite)
    );
    // An admin is all-powerful anyway; no user, no answer.
    assert!(Arc::ptr_eq(
        &s.user_with_roles("nacos").unwrap(),
        s.user("nacos").unwrap()
    ));
    assert!(s.user_with_roles("nobody").is_none());

    // Survives a snapshot.
    let loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
    assert_eq!(loaded.digest(), s.digest());
    assert_eq!(loaded.role("devs"), s.role("devs"));

    // Unbinding ends the grant for that user only; revoking for all.
    assert_eq!(
        apply(&mut s, unbind("devs", "carol")).0,
        Response::Removed { existed: true }
    );
    assert_eq!(
        s.user_with_roles("carol").unwrap().namespace_access("dev"),
        None
    );
    apply(&mut s, grant_role("devs", "prod", pb::Access::None));
    assert_eq!(
        s.user_with_roles("bob").unwrap().namespace_access("prod"),
        Some(Access::Read),
        "bob's own permission stays"
    );
    // Removing a namespace or a user leaves the roles clean.
    apply(&mut s, set_permission("bob", "prod", pb::Access::None));
    apply(
        &mut s,
        Command::of(Op::RemoveNamespace(pb::RemoveNamespace {
            id: "dev".into(),
        })),
    );
    assert!(s.role("devs").unwrap().permissions.is_empty());
    apply(
        &mut s,
        Command::of(Op::RemoveUser(pb::RemoveUser {
            username: "bob".into(),
        })),
    );
    assert!(s.role("devs").is_none(), "no users, no permissions: gone");

    // A role with permissions outlives its last user, until removed.
    apply(&mut s, bind("ops", "carol"));
    apply(&mut s, grant_role("ops", "*", pb::Access::Read));
    apply(&mut s, unbind("ops", "carol"));
    assert_eq!(s.role("ops").unwrap().permissions.len(), 1);
    assert_eq!(
        apply(&mut s, unbind("ops", "")).0,
        Response::Removed { existed: true }
    );
    assert!(s.role("ops").is_none());
    assert_eq!(
        apply(&mut s, unbind(ADMIN_ROLE, "")).0,
        Response::Rejected(ApplyError::RoleReserved(ADMIN_ROLE.into()))
    );

    let actions: Vec<(String, String, String)> = s
        .audit()
        .filter(|r| r.action.starts_with("role."))
        .map(|r| (r.action.to_string(), r.target.clone(), r.detail.clone()))
        .take(3)
        .collect();
    assert_eq!(
        actions[0],
        (
            "role.permission".to_string(),
            "devs".to_string(),
            "namespace=dev access=rw".to_string()
        )
    );
    assert_eq!(actions[1].0, "role.bind");
    assert_eq!(actions[1].2, "user=bob");
}

fn beta(data_id: &str, content: &str) -> Command {
    Command::of(Op::PublishBeta(pb::PublishBeta {
        key: Some(key("", data_id)),
        content: content.into(),
        md5: md5_hex(content),
        beta_ips: vec!["10.0.0.9".into()],
        ..Default::default()
    }))
}

fn promote(data_id: &str, beta_md5: &str, cas_md5: Option<&str>) -> Command {
    Command::of(Op::PromoteBeta(pb::PromoteBeta {
        key: Some(key("", data_id)),
        beta_md5: beta_md5.into(),
        cas_md5: cas_md5.map(str::to_string),
        origin: Some(pb::Origin {
            src_user: "bob".into(),
            src_ip: "10.0.0.2".into(),
            time_ms: 30,
        }),
        history_limit: 3,
    }))
}

#[test]
fn promoting_a_beta_publishes_it_and_ends_it_in_one_apply() {
    let mut s = State::default();
    let k = ConfigKey::new("", "DEFAULT_GROUP", "a");
    let mut first = publish("", "a", "one", 10);
    if let Some(Op::PublishConfig(p)) = &mut first.op {
        p.config_type = "yaml".into();
        p.desc = "the app's settings".into();
        p.tags = "t1".into();
    }
    apply(&mut s, first);
    assert_eq!(
        apply(&mut s, promote("a", &md5_hex("beta"), None)).0,
        Response::Rejected(ApplyError::GrayNotFound(BETA_GRAY.into()))
    );
    apply(&mut s, beta("a", "beta"));

    // Refusals leave both the config and the beta as they were.
    let before = (s.config(&k).cloned(), s.gray(&k, BETA_GRAY).cloned());
    assert_eq!(
        apply(&mut s, promote("a", &md5_hex("another beta"), None)).0,
        Response::Rejected(ApplyError::GrayReplaced(BETA_GRAY.into()))
    );
    assert_eq!(
        apply(
            &mut s,
            promote("a", &md5_hex("beta"), Some(&md5_hex("stale")))
        )
        .0,
        Response::Rejected(ApplyError::CasMismatch)
    );
    assert_eq!(
        (s.config(&k).cloned(), s.gray(&k, BETA_GRAY).cloned()),
        before
    );

    assert_eq!(
        apply(
            &mut s,
            promote("a", &md5_hex("beta"), Some(&md5_hex("one")))
        ),
        (Response::Done, vec![k.clone()])
    );
    let c = s.config(&k).unwrap();
    assert_eq!(
        (
            c.content.as_ref(),
            c.config_type.as_str(),
            c.desc.as_str(),
            c.tags.as_str()
        ),
        ("beta", "yaml", "the app's settings", "t1"),
        "the config's metadata is kept"
    );
    assert_eq!((c.src_user.as_ref(), c.modify_time), ("bob", 30));
    assert!(s.gray(&k, BETA_GRAY).is_none());
    assert_eq!(md5_for(&s, &k, "10.0.0.9"), md5_hex("beta"));
    // Recorded as an update, like any publish over a config.
    let last = s.history(&k).next_back().unwrap();
    assert_eq!((last.op, last.content.as_ref()), (OpType::Update, "one"));
}

#[test]
fn a_publish_can_expect_the_config_absent_or_present() {
    let mut s = State::default();
    let with = |expect: pb::Expect, content: &str, cas: Option<&str>| {
        let mut command = publish("", "a", content, 10);
        if let Some(Op::PublishConfig(p)) = &mut command.op {
            p.expect = expect.into();
            p.cas_md5 = cas.map(str::to_string);
        }
        command
    };
    let gone = ApplyError::ConfigGone {
        group: "DEFAULT_GROUP".into(),
        data_id: "a".into(),
    };
    assert_eq!(
        apply(&mut s, with(pb::Expect::Present, "one", Some("x"))).0,
        Response::Rejected(gone.clone())
    );
    assert_eq!(s.config_count(), 0);
    assert_eq!(
        apply(&mut s, with(pb::Expect::Absent, "one", None)).0,
        Response::Done
    );
    assert_eq!(
        apply(&mut s, with(pb::Expect::Absent, "two", None)).0,
        Response::Rejected(ApplyError::ConfigExists {
            namespace: "public".into(),
            group: "DEFAULT_GROUP".into(),
            data_id: "a".into(),
        })
    );
    assert_eq!(
        apply(
            &mut s,
            with(pb::Expect::Present, "two", Some(&md5_hex("one")))
        )
        .0,
        Response::Done
    );
    apply(&mut s, remove("", "a"));
    assert_eq!(
        apply(
            &mut s,
            with(pb::Expect::Present, "three", Some(&md5_hex("two")))
        )
        .0,
        Response::Rejected(gone)
    );
    // Nacos' own publish (Any) with a CAS md5 over nothing creates it.
    assert_eq!(
        apply(
            &mut s,
            with(pb::Expect::Any, "three", Some(&md5_hex("two")))
        )
        .0,
        Response::Done
    );
}

#[test]
fn a_publish_may_create_its_namespace_once_every_check_passed() {
    let mut s = State::default();
    let with = |create: bool, cas: Option<&str>| {
        let mut command = publish("ops.core", "a", "one", 10);
        if let Some(Op::PublishConfig(p)) = &mut command.op {
            p.create_namespace = create;
            p.cas_md5 = cas.map(str::to_string);
            p.expect = pb::Expect::Present.into();
        }
        command
    };
    // Strict: refused. A publish that fails another check creates nothing.
    assert_eq!(
        apply(&mut s, with(false, None)).0,
        Response::Rejected(ApplyError::NamespaceNotFound("ops.core".into()))
    );
    assert!(matches!(
        apply(&mut s, with(true, Some("x"))).0,
        Response::Rejected(ApplyError::ConfigGone { .. })
    ));
    assert!(!s.has_namespace("ops.core"));
    let mut ok = publish("ops.core", "a", "one", 10);
    if let Some(Op::PublishConfig(p)) = &mut ok.op {
        p.create_namespace = true;
    }
    assert_eq!(apply(&mut s, ok).0, Response::Done);
    let ns = s.namespaces().find(|n| n.id == "ops.core").unwrap();
    assert_eq!((ns.name.as_str(), ns.create_time), ("ops.core", 10));
    assert_eq!(s.configs_in("ops.core").count(), 1);
}

// ---- group and dataId grants (cluster protocol 6) ----------------------------

fn grant_resource(role: &str, ns: &str, group: &str, data_id: &str, access: pb::Access) -> Command {
    role_op(Op::SetRolePermission(pb::SetRolePermission {
        role: role.into(),
        namespace: ns.into(),
        access: access as i32,
        group: group.into(),
        data_id: data_id.into(),
    }))
}

#[test]
fn group_and_data_id_grants_apply_survive_a_snapshot_and_old_records_cover_namespaces() {
    let mut s = State::default();
    apply(&mut s, init_auth("nacos"));
    apply(&mut s, namespace("dev"));
    apply(&mut s, create_user("bob", false));
    apply(&mut s, bind("devs", "bob"));
    apply(
        &mut s,
        grant_resource("devs", "dev", "G", "*", pb::Access::Read),
    );
    apply(
        &mut s,
        grant_resource("devs", "dev", "H", "app*", pb::Access::Write),
    );
    apply(
        &mut s,
        Command::by(
            Op::SetPermission(pb::SetPermission {
                username: "bob".into(),
                namespace: "".into(),
                access: pb::Access::ReadWrite as i32,
                group: "P".into(),
                data_id: "one.yaml".into(),
            }),
            actor("nacos", 9, 100),
        ),
    );
    let bob = s.user_with_roles("bob").unwrap();
    assert!(bob.allows("dev", "G", "x", Access::Read));
    assert!(!bob.allows("dev", "G", "x", Access::Write));
    assert!(bob.allows("dev", "H", "app.yaml", Access::Write));
    assert!(
        !bob.allows("dev", "H", "app.yaml", Access::Read),
        "w is write-only"
    );
    assert!(!bob.allows("dev", "H", "other", Access::Write));
    assert!(bob.allows("public", "P", "one.yaml", Access::Read));
    assert!(!bob.allows("", "P", "two.yaml", Access::Read));
    assert!(
        !bob.allows("dev", "*", "*", Access::Read),
        "no namespace-wide grant"
    );
    assert!(bob.allows_some("dev", Access::Read));
    assert_eq!(bob.namespace_access("dev"), None);
    let audit: Vec<String> = s
        .audit()
        .filter(|r| &*r.action == "role.permission")
        .map(|r| r.detail.clone())
        .collect();
    assert_eq!(audit[1], "namespace=dev group=H dataId=app* access=w");

    // A snapshot keeps them.
    let loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
    assert_eq!(loaded.digest(), s.digest());
    assert_eq!(loaded.user("bob"), s.user("bob"));
    assert_eq!(loaded.role("devs"), s.role("devs"));

    // A record written before group/dataId grants (no group, no dataId)
    // covers its whole namespace.
    let old = tacos_core::snapshot::RoleRecord {
        role: "old".into(),
        usernames: vec!["bob".into()],
        permissions: vec![tacos_core::snapshot::PermissionRecord {
            namespace: "dev".into(),
            access: pb::Access::Read as i32,
            ..Default::default()
        }],
    };
    let from_old = State::from_snapshot_records([crate::Record::Role(old).encode()]).unwrap();
    let role = from_old.role("old").unwrap();
    assert_eq!(
        role.permissions.keys().collect::<Vec<_>>(),
        vec![&crate::Resource::namespace("dev")]
    );
}

/// Nacos' encryptedDataKey travels with its version: the config, the history
/// row that records the version, a gray and its promotion, and a snapshot.
#[test]
fn the_encrypted_data_key_stays_with_its_version() {
    let with_key = |content: &str, data_key: &str, time: i64| {
        let mut command = publish("", "cipher-aes-db", content, time);
        if let Some(Op::PublishConfig(p)) = command.op.as_mut() {
            p.encrypted_data_key = data_key.into();
        }
        command
    };
    let mut s = State::default();
    let k = ConfigKey::from(&key("", "cipher-aes-db"));
    apply(&mut s, with_key("c1", "key-1", 1));
    apply(&mut s, with_key("c2", "key-2", 2));
    assert_eq!(
        data_key_text(&s.config(&k).unwrap().encrypted_data_key),
        "key-2"
    );
    let rows = s.history(&k);
    // An insert records the new version, an update the replaced one.
    let keys: Vec<String> = rows
        .map(|r| data_key_text(&r.encrypted_data_key).to_string())
        .collect();
    assert_eq!(keys, ["key-1", "key-1"]);
    apply(&mut s, with_key("plain", "", 3));
    assert_eq!(s.config(&k).unwrap().encrypted_data_key, None);

    let gray = Command::of(Op::PublishGray(pb::PublishGray {
        key: Some(key("", "cipher-aes-db")),
        name: "beta".into(),
        rule: Some(pb::GrayRule {
            r#type: "beta".into(),
            version: GRAY_RULE_VERSION.into(),
            expr: "10.0.0.9".into(),
            priority: BETA_PRIORITY,
        }),
        content: "g".into(),
        md5: md5_hex("g"),
        max_grays: 10,
        history_limit: 10,
        encrypted_data_key: "gray-key".into(),
        ..Default::default()
    }));
    apply(&mut s, gray);
    assert_eq!(
        data_key_text(&s.gray(&k, "beta").unwrap().encrypted_data_key),
        "gray-key"
    );

    let loaded = State::from_snapshot_records(s.snapshot_records()).unwrap();
    assert_eq!(loaded.digest(), s.digest());
    assert_eq!(
        data_key_text(&loaded.gray(&k, "beta").unwrap().encrypted_data_key),
        "gray-key"
    );
    let keys: Vec<String> = loaded
        .history(&k)
        .map(|r| data_key_text(&r.encrypted_data_key).to_string())
        .collect();
    assert_eq!(keys, ["key-1", "key-1", "key-2", "gray-key"]);

    let promote = Command::of(Op::PromoteGray(pb::PromoteGray {
        key: Some(key("", "cipher-aes-db")),
        name: "beta".into(),
        gray_md5: md5_hex("g"),
        history_limit: 10,
        ..Default::default()
    }));
    let (response, _) = apply(&mut s, promote);
    assert_eq!(response, Response::Done);
    assert_eq!(
        data_key_text(&s.config(&k).unwrap().encrypted_data_key),
        "gray-key"
    );
}

/// Keys in other scripts (what Java Nacos' `ParamUtils.isValid` accepts:
/// CJK, Latin-1, Cyrillic) survive both ways a node rebuilds its memory:
/// replaying the log (each command encoded as the log stores it, decoded,
/// applied to a fresh state) and loading a snapshot, with their history.
#[test]
fn keys_in_any_script_survive_log_replay_and_a_snapshot() {
    use prost::Message;
    let keys = [
        ("", "支付组", "订单服务配置.yaml"),
        ("dev", "ÜBER-Gruppe", "größe.txt"),
        ("équipe", "DEFAULT_GROUP", "é.yaml"),
        ("开发环境", "Группа", "ключ:конфиг"),
    ];
    let mut commands = Vec::new();
    for (i, (ns, group, data_id)) in keys.iter().enumerate() {
        for rev in 0..2 {
            let content = format!("{data_id} = {rev}");
            let mut command = publish(ns, data_id, &content, 1_000 + i as i64 * 10 + rev);
            if let Some(Op::PublishConfig(p)) = command.op.as_mut() {
                p.key.as_mut().expect("key").group = group.to_string();
                p.create_namespace = true;
            }
            commands.push(command);
        }
    }
    let mut s = State::default();
    for command in &commands {
        let (response, changed) = apply(&mut s, command.clone());
        assert_eq!(response, Response::Done);
        assert_eq!(changed.len(), 1);
    }

    // Replay from the log's bytes.
    let mut replayed = State::default();
    for command in &commands {
        let bytes = command.encode_to_vec();
        let decoded = Command::decode(bytes.as_slice()).expect("decode a logged command");
        apply(&mut replayed, decoded);
    }
    // And from a snapshot.
    let loaded = State::from_snapshot_records(s.snapshot_records()).expect("load snapshot");
    for rebuilt in [&replayed, &loaded] {
        assert_eq!(rebuilt.digest(), s.digest());
        for (ns, group, data_id) in keys {
            let k = ConfigKey::new(ns, group, data_id);
            let config = rebuilt.config(&k).expect("the config is there");
            assert_eq!(config.content.as_ref(), format!("{data_id} = 1"));
            assert_eq!(rebuilt.history(&k).count(), 2, "history of {k:?}");
            assert_eq!(k.data_id, data_id);
            assert_eq!(k.group, group);
        }
    }
}
