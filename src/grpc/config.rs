//! Config requests over gRPC: query, publish, remove, batch listen. The same
//! service layer and watch hub as HTTP serve them.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::payload::{self, code, Incoming, Reply};
use super::GrpcState;
use tacos_app::auth::Principal;
use tacos_app::service::{checked_key, comma_list, PublishRequest, ServiceError};
use tacos_app::watch::{changed_keys, ListenKey, Subscribe, Unsubscribe};
use tacos_core::command::Expect;
use tacos_state::{Access, ApplyError};

/// `ConfigQueryRequest{dataId, group, tenant}` → `ConfigQueryResponse`; a
/// client whose IP is in the beta list gets the beta with `beta: true`.
pub fn query(app: &GrpcState, req: &Incoming, client_ip: &str, principal: &Principal) -> Reply {
    const KIND: &str = "ConfigQueryResponse";
    let rid = req.request_id();
    // The Rust client requires `lastModified` and `beta` on failures too.
    let failed = |code, message: &str| {
        let empty = json!({
            "content": "",
            "contentType": "",
            "md5": "",
            "encryptedDataKey": "",
            "lastModified": 0,
            "beta": false,
        });
        payload::fail_with(KIND, &rid, code, message, empty)
    };
    let key = match checked_key(req.str("tenant"), req.str("group"), req.str("dataId")) {
        Ok(key) => key,
        Err(e) => return failed(code::INVALID_PARAM, &e.to_string()),
    };
    if let Err(e) = principal.require(&key.namespace, Access::Read) {
        return failed(code::NO_RIGHT, &e.to_string());
    }
    let state = app.service.state();
    let config = state.config(&key);
    let content_type = config.map_or("text", |c| c.config_type.as_str());
    if let Some(beta) = state.beta(&key).filter(|b| b.serves(client_ip)) {
        let body = QueryBody {
            content: &beta.content,
            content_type,
            md5: &beta.md5,
            encrypted_data_key: "",
            last_modified: beta.modify_time,
            beta: true,
        };
        return payload::ok_with(KIND, &rid, &body);
    }
    match config {
        Some(c) => {
            let body = QueryBody {
                content: &c.content,
                content_type: &c.config_type,
                md5: &c.md5,
                encrypted_data_key: "",
                last_modified: c.modify_time,
                beta: false,
            };
            payload::ok_with(KIND, &rid, &body)
        }
        None => failed(code::CONFIG_NOT_FOUND, "config data not exist"),
    }
}

/// The fields of a `ConfigQueryResponse`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryBody<'a> {
    content: &'a str,
    content_type: &'a str,
    md5: &'a str,
    encrypted_data_key: &'a str,
    last_modified: i64,
    beta: bool,
}

/// The Nacos error code and message for a failed write.
fn write_failure(error: &ServiceError) -> (i32, String) {
    let code = match error {
        ServiceError::Invalid(_) => code::INVALID_PARAM,
        ServiceError::Rejected(ApplyError::CasMismatch) => code::SERVER_ERROR,
        ServiceError::Rejected(_) => code::INVALID_PARAM,
        ServiceError::Write(_) | ServiceError::Internal(_) => code::SERVER_ERROR,
    };
    (code, error.to_string())
}

/// `ConfigPublishRequest{dataId, group, tenant, content, casMd5, additionMap}`.
pub async fn publish(
    app: &GrpcState,
    req: &Incoming,
    client_ip: &str,
    principal: &Principal,
) -> Reply {
    const KIND: &str = "ConfigPublishResponse";
    let rid = req.request_id();
    if let Err(e) = principal.require(req.str("tenant"), Access::ReadWrite) {
        return payload::fail(KIND, &rid, code::NO_RIGHT, &e.to_string());
    }
    let addition: std::collections::HashMap<String, String> = match req.field("additionMap") {
        Ok(map) => map.unwrap_or_default(),
        Err(e) => return payload::fail(KIND, &rid, code::INVALID_PARAM, &e.to_string()),
    };
    let extra = |name: &str| addition.get(name).cloned().unwrap_or_default();
    let request = PublishRequest {
        namespace: req.str("tenant").to_string(),
        group: req.str("group").to_string(),
        data_id: req.str("dataId").to_string(),
        content: req.str("content").to_string(),
        config_type: extra("type"),
        desc: extra("desc"),
        app_name: extra("appName"),
        tags: extra("config_tags"),
        cas_md5: req.opt_str("casMd5").map(str::to_string),
        expect: Expect::Any,
        tag: extra("tag"),
        beta_ips: comma_list(&extra("betaIps")),
    };
    let caller = principal.caller(&extra("src_user"), client_ip.to_string());
    match app.service.publish(request, &caller).await {
        Ok(()) => payload::ok(KIND, &rid, json!({})),
        Err(e) => {
            let (code, message) = write_failure(&e);
            payload::fail(KIND, &rid, code, &message)
        }
    }
}

/// `ConfigRemoveRequest{dataId, group, tenant}` (succeeds when absent too).
pub async fn remove(
    app: &GrpcState,
    req: &Incoming,
    client_ip: &str,
    principal: &Principal,
) -> Reply {
    const KIND: &str = "ConfigRemoveResponse";
    let rid = req.request_id();
    if let Err(e) = principal.require(req.str("tenant"), Access::ReadWrite) {
        return payload::fail(KIND, &rid, code::NO_RIGHT, &e.to_string());
    }
    let caller = principal.caller(req.str("srcUser"), client_ip.to_string());
    let removed = app
        .service
        .remove(
            req.str("tenant"),
            req.str("group"),
            req.str("dataId"),
            req.str("tag"),
            &caller,
        )
        .await;
    match removed {
        Ok(_) => payload::ok(KIND, &rid, json!({})),
        Err(e) => {
            let (code, message) = write_failure(&e);
            payload::fail(KIND, &rid, code, &message)
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListenContext {
    data_id: String,
    group: String,
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    md5: String,
}

/// `ConfigBatchListenRequest{listen, configListenContexts}`: with
/// `listen: true` the keys are registered on the caller's connection (pushes
/// follow) and the keys whose md5 differs come back; with `false` they are
/// unregistered.
pub async fn batch_listen(
    app: &GrpcState,
    req: &Incoming,
    client_ip: &str,
    peer: Option<SocketAddr>,
    principal: &Principal,
) -> Reply {
    const KIND: &str = "ConfigChangeBatchListenResponse";
    let rid = req.request_id();
    let contexts: Vec<ListenContext> = match req.field("configListenContexts") {
        Ok(contexts) => contexts.unwrap_or_default(),
        Err(e) => return payload::fail(KIND, &rid, code::INVALID_PARAM, &e.to_string()),
    };
    if contexts.len() > app.max_listen_keys {
        let message = format!(
            "too many keys in one listen request: {} (at most {})",
            contexts.len(),
            app.max_listen_keys
        );
        return payload::fail(KIND, &rid, code::INVALID_PARAM, &message);
    }
    let mut keys = Vec::with_capacity(contexts.len());
    for c in contexts {
        let key = match checked_key(&c.tenant, &c.group, &c.data_id) {
            Ok(key) => key,
            Err(e) => return payload::fail(KIND, &rid, code::INVALID_PARAM, &e.to_string()),
        };
        if let Err(e) = principal.require(&key.namespace, Access::Read) {
            return payload::fail(KIND, &rid, code::NO_RIGHT, &e.to_string());
        }
        keys.push(ListenKey {
            key,
            data_id: c.data_id,
            group: c.group,
            tenant: c.tenant,
            md5: c.md5,
        });
    }
    let listen = req
        .body
        .get("listen")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    let conn = peer.and_then(|p| app.connections.get(p));
    if !listen {
        if let Some(conn) = conn {
            let keys = keys.into_iter().map(|k| k.key).collect();
            app.hub.do_send(Unsubscribe {
                conn: conn.num,
                keys,
            });
        }
        return payload::ok(KIND, &rid, json!({ "changedConfigs": [] }));
    }
    let Some(conn) = conn else {
        return payload::fail(
            KIND,
            &rid,
            code::UNREGISTERED,
            "Connection is unregistered: open the bi-directional stream first",
        );
    };
    // Register first, then compare: a change applied in between is either
    // seen by the comparison or pushed.
    let subscribed = app
        .hub
        .send(Subscribe {
            conn: conn.num,
            keys: keys.clone(),
            queue: conn.queue.clone(),
            client: peer.map(|p| p.to_string()).unwrap_or_default(),
        })
        .await;
    if subscribed.is_err() {
        return payload::fail(KIND, &rid, code::SERVER_ERROR, "the watch hub stopped");
    }
    let changed: Vec<_> = changed_keys(&app.service.state(), &keys, client_ip)
        .into_iter()
        .map(|k| json!({ "dataId": k.data_id, "group": k.group, "tenant": k.tenant }))
        .collect();
    payload::ok(KIND, &rid, json!({ "changedConfigs": changed }))
}
