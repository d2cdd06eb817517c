//! What the unit tests of the use cases share: a service over a [`Local`]
//! engine (no node, no network, no HTTP) and principals with grants.

use std::sync::Arc;

use tacos_state::{Access, Resource, User};

use crate::auth::{Auth, AuthSettings, Principal};
use crate::engine::{Engine, Local};
use crate::service::{Caller, ConfigService, Limits};

/// A config service and the auth use cases over one in-memory state.
pub(crate) fn services() -> (ConfigService, Auth, Arc<Local>) {
    let engine = Arc::new(Local::new());
    let limits = Limits {
        max_content_size: 1024 * 1024,
        history_limit: 10,
        max_grays: 10,
        audit_limit: 100,
        create_namespaces: true,
    };
    let dyn_engine: Arc<dyn Engine> = engine.clone();
    let service = ConfigService::new(dyn_engine.clone(), limits);
    let auth = Auth::new(dyn_engine, AuthSettings::new(true, 3600, 100)).expect("auth");
    (service, auth, engine)
}

/// A user `name` holding `grants` (namespace, group, dataId, access).
pub(crate) fn user(name: &str, admin: bool, grants: &[(&str, &str, &str, Access)]) -> Principal {
    let resources: Vec<(Resource, Access)> = grants
        .iter()
        .map(|(ns, group, data_id, access)| (Resource::new(ns, group, data_id), *access))
        .collect();
    user_holding(name, admin, &resources)
}

/// A user `name` holding `permissions`.
pub(crate) fn user_holding(
    name: &str,
    admin: bool,
    permissions: &[(Resource, Access)],
) -> Principal {
    Principal::User(Arc::new(User {
        username: name.into(),
        password_hash: String::new(),
        admin,
        enabled: true,
        create_time: 0,
        modify_time: 0,
        generation: 0,
        permissions: permissions.iter().cloned().collect(),
    }))
}

/// `who` writing from 127.0.0.1.
pub(crate) fn caller(who: &Principal) -> Caller {
    who.caller("", "127.0.0.1".into())
}
