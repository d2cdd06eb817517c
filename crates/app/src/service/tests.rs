//! The use cases' rules, each on its own, over a local engine: who may
//! write (decided here, for every surface), and what a refused write
//! leaves (nothing). The surfaces' own tests (`tests/permissions.rs`) show
//! each rule answered the same on v1, v2, v3, the console and gRPC.

use tacos_core::command::Expect;
use tacos_state::{Access, ConfigKey};

use super::{CloneTarget, PublishRequest, ServiceError};
use crate::auth::AuthError;
use crate::service::clone_items;
use crate::testing::{caller, services, user};
use crate::transfer::{Item, Policy};

fn publish(group: &str, data_id: &str, content: &str) -> PublishRequest {
    PublishRequest {
        namespace: String::new(),
        group: group.into(),
        data_id: data_id.into(),
        content: content.into(),
        expect: Expect::Any,
        ..Default::default()
    }
}

fn item(group: &str, data_id: &str) -> Item {
    Item {
        group: group.into(),
        data_id: data_id.into(),
        content: "x".into(),
        config_type: "text".into(),
        desc: String::new(),
        app_name: String::new(),
    }
}

fn denied<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> bool {
    matches!(result, Err(ServiceError::Denied(AuthError::Forbidden(_))))
}

#[tokio::test]
async fn a_publish_needs_the_write_right_on_what_it_names() {
    let (service, _, _) = services();
    let reader = user("r", false, &[("", "*", "*", Access::Read)]);
    let writer = user("w", false, &[("", "app", "*", Access::Write)]);
    assert!(denied(
        service
            .publish(publish("app", "a", "1"), &caller(&reader))
            .await
    ));
    assert!(service.state().configs_in("").next().is_none());

    service
        .publish(publish("app", "a", "1"), &caller(&writer))
        .await
        .expect("a writer publishes");
    assert!(denied(
        service
            .publish(publish("other", "a", "1"), &caller(&writer))
            .await
    ));
}

#[tokio::test]
async fn a_blank_name_asks_for_every_one_before_the_names_are_checked() {
    let (service, _, _) = services();
    let writer = user("w", false, &[("", "app", "*", Access::Write)]);
    // A blank group names every group: more than the grant; refused (403)
    // before the blank group is found missing (400), as in Nacos.
    assert!(denied(
        service
            .publish(publish("", "a", "1"), &caller(&writer))
            .await
    ));
    // Within the grant, the names are then checked.
    assert!(matches!(
        service
            .publish(publish("app", "", "1"), &caller(&writer))
            .await,
        Err(ServiceError::Invalid(_))
    ));
}

#[tokio::test]
async fn removals_and_gray_writes_ask_the_same_right() {
    let (service, _, _) = services();
    let admin = user("admin", true, &[]);
    let reader = user("r", false, &[("", "*", "*", Access::Read)]);
    let mut beta = publish("app", "a", "beta");
    beta.beta_ips = vec!["10.0.0.1".into()];
    service
        .publish(publish("app", "a", "1"), &caller(&admin))
        .await
        .unwrap();
    service.publish(beta, &caller(&admin)).await.unwrap();
    let key = ConfigKey::new("", "app", "a");

    assert!(denied(
        service.remove("", "app", "a", "", &caller(&reader)).await
    ));
    assert!(denied(
        service.stop_beta("", "app", "a", &caller(&reader)).await
    ));
    let gray = service
        .state()
        .gray(&key, tacos_state::BETA_GRAY)
        .cloned()
        .unwrap();
    assert!(denied(
        service
            .promote_beta(&key, &gray.md5, None, &caller(&reader))
            .await
    ));
    assert!(denied(service.gray_base(&key, &caller(&reader))));
    let row = service.state().history(&key).next_back().unwrap();
    assert!(denied(service.rollback(&row, None, &caller(&reader)).await));
    // Nothing of it happened.
    assert!(service.state().config(&key).is_some());
    assert!(service.state().gray(&key, tacos_state::BETA_GRAY).is_some());

    assert!(service.gray_base(&key, &caller(&admin)).unwrap().is_some());
    let absent = ConfigKey::new("", "app", "none");
    assert!(service
        .gray_base(&absent, &caller(&admin))
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_batch_removal_is_refused_whole_when_one_key_is_not_writable() {
    let (service, _, _) = services();
    let admin = user("admin", true, &[]);
    let writer = user("w", false, &[("", "app", "*", Access::Write)]);
    for (group, id) in [("app", "a"), ("other", "b")] {
        service
            .publish(publish(group, id, "1"), &caller(&admin))
            .await
            .unwrap();
    }
    let keys = [
        ConfigKey::new("", "app", "a"),
        ConfigKey::new("", "other", "b"),
    ];
    assert!(denied(service.remove_each(&keys, &caller(&writer)).await));
    assert_eq!(service.state().configs_in("").count(), 2);
}

#[tokio::test]
async fn an_import_is_refused_whole_when_one_item_is_not_writable() {
    let (service, _, _) = services();
    let writer = user("w", false, &[("", "app", "*", Access::Write)]);
    let outsider = user("o", false, &[("other-ns", "*", "*", Access::Write)]);
    // Nothing to write in the namespace at all: refused before the items.
    assert!(matches!(
        service.import_target("", &caller(&outsider)),
        Err(super::ImportError::Service(ServiceError::Denied(_)))
    ));
    let items = vec![item("app", "a"), item("other", "b")];
    let refused = service
        .import_items("", items, Policy::Overwrite, &caller(&writer))
        .await;
    assert!(matches!(
        refused,
        Err(super::ImportError::Service(ServiceError::Denied(_)))
    ));
    assert_eq!(service.state().configs_in("").count(), 0);

    let outcome = service
        .import_items(
            "",
            vec![item("app", "a")],
            Policy::Overwrite,
            &caller(&writer),
        )
        .await
        .expect("an import within the grant");
    assert_eq!(outcome.created, vec!["app/a".to_string()]);
}

#[tokio::test]
async fn a_clone_reads_every_source_it_copies() {
    let (service, _, _) = services();
    let admin = user("admin", true, &[]);
    service
        .publish(publish("secret", "s", "1"), &caller(&admin))
        .await
        .unwrap();
    let state = service.state();
    let id = state.config(&ConfigKey::new("", "secret", "s")).unwrap().id;
    let target = CloneTarget {
        id,
        group: "copy".into(),
        data_id: String::new(),
    };
    let reader = user("r", false, &[("", "app", "*", Access::Read)]);
    assert!(clone_items(&state, &reader, std::slice::from_ref(&target)).is_err());
    let items = clone_items(&state, &admin, &[target]).expect("admin reads all");
    assert_eq!(
        (items[0].group.as_str(), items[0].data_id.as_str()),
        ("copy", "s")
    );
}

#[tokio::test]
async fn admins_are_not_deleted_and_users_change_only_their_own_password() {
    let (_, auth, _) = services();
    let admin = user("admin", true, &[]);
    auth.create_user("boss", "boss-password-1", true, &caller(&admin))
        .await
        .unwrap();
    auth.create_user("dev", "dev-password-1", false, &caller(&admin))
        .await
        .unwrap();
    assert!(matches!(
        auth.remove_user("boss", &caller(&admin)).await,
        Err(ServiceError::AdminNotDeletable(name)) if name == "boss"
    ));

    let dev = user("dev", false, &[]);
    assert!(denied(
        auth.update_user(
            &dev,
            "boss",
            Some("new-password-1"),
            None,
            None,
            "127.0.0.1"
        )
        .await
    ));
    assert!(denied(
        auth.update_user(&dev, "dev", None, Some(true), None, "127.0.0.1")
            .await
    ));
    auth.update_user(&dev, "dev", Some("new-password-2"), None, None, "127.0.0.1")
        .await
        .expect("a user changes their own password");
    auth.remove_user("dev", &caller(&admin))
        .await
        .expect("a user is deleted");
}

#[tokio::test]
async fn a_beta_lists_client_ips_only() {
    let (service, _, _) = services();
    let admin = user("admin", true, &[]);
    service
        .publish(publish("app", "a", "1"), &caller(&admin))
        .await
        .unwrap();
    let mut beta = publish("app", "a", "beta");
    beta.beta_ips = super::beta_list("10.0.0.1, host-a");
    let refused = service.publish(beta.clone(), &caller(&admin)).await;
    assert_eq!(
        refused.unwrap_err().to_string(),
        "invalid betaIps: \"host-a\" is not an IP (a beta is served to the client IPs it lists)"
    );
    let key = ConfigKey::new("", "app", "a");
    assert!(service.state().gray(&key, tacos_state::BETA_GRAY).is_none());
    beta.beta_ips = super::beta_list("10.0.0.1,\n::1");
    service
        .publish(beta, &caller(&admin))
        .await
        .expect("IPs are a beta");
    assert!(service.state().gray(&key, tacos_state::BETA_GRAY).is_some());
}

#[tokio::test]
async fn an_editor_creates_new_configs_and_edits_loaded_ones() {
    use super::edit_expectation;
    let (service, _, _) = services();
    let admin = user("admin", true, &[]);
    let mut create = publish("app", "a", "1");
    create.expect = edit_expectation(true, None);
    let published = service
        .publish(create.clone(), &caller(&admin))
        .await
        .unwrap();
    assert_eq!(published.md5, tacos_core::md5_hex("1"));
    // Created twice: the second finds it there, and writes nothing.
    create.content = "2".into();
    assert!(matches!(
        service.publish(create, &caller(&admin)).await,
        Err(ServiceError::Rejected(_))
    ));
    // An edit of the version loaded; then of one someone else replaced.
    let mut edit = publish("app", "a", "3");
    edit.cas_md5 = Some(published.md5.clone());
    edit.expect = edit_expectation(false, Some(&published.md5));
    service
        .publish(edit.clone(), &caller(&admin))
        .await
        .unwrap();
    edit.content = "4".into();
    assert!(service.publish(edit, &caller(&admin)).await.is_err());
    let key = ConfigKey::new("", "app", "a");
    assert_eq!(&*service.state().config(&key).unwrap().content, "3");
    // An edit of a config removed meanwhile is not a create.
    service
        .remove("", "app", "a", "", &caller(&admin))
        .await
        .unwrap();
    let mut gone = publish("app", "a", "5");
    gone.expect = edit_expectation(false, Some("whatever"));
    assert!(service.publish(gone, &caller(&admin)).await.is_err());
    assert!(service.state().config(&key).is_none());
}
