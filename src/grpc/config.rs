//! Config requests over gRPC: query, publish, remove, batch listen, fuzzy
//! watch. The same service layer and watch hub as HTTP serve them.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::payload::{self, code, Incoming, Reply};
use super::state::GrpcState;
use crate::api::params::url_encode;
use tacos_app::auth::Principal;
use tacos_app::gray_match;
use tacos_app::read::Reader;
use tacos_app::service::{beta_list, checked_key, PublishRequest, ServiceError};
use tacos_app::watch::fuzzy::{
    self, FuzzyCancel, FuzzyWatch, GroupKeyPattern, MATCH_COUNT_OVER_LIMIT,
    MATCH_COUNT_OVER_LIMIT_MESSAGE,
};
use tacos_app::watch::{changed_keys, ListenKey, Subscribe, Unsubscribe};
use tacos_core::command::Expect;
use tacos_core::validate::InvalidInput;
use tacos_state::{ApplyError, GrayRule};

/// `ConfigQueryRequest{dataId, group, tenant, tag}` → `ConfigQueryResponse`:
/// the version the client sees ([`tacos_app::gray_match`]) by its IP and the
/// request's `tag` (else its connection's tag label). A beta answers with
/// `beta: true`, a tag gray with its tag (URL-encoded) in `tag`, as Nacos'
/// `ConfigQueryRequestHandler`.
pub fn query(
    app: &GrpcState,
    req: &Incoming,
    client_ip: &str,
    peer: Option<SocketAddr>,
    principal: &Principal,
) -> Reply {
    const KIND: &str = "ConfigQueryResponse";
    let rid = req.request_id();
    let asked_tag = req.str("tag").trim();
    // The Rust client requires `lastModified` and `beta` on failures too.
    let failed = |code, message: &str| {
        let mut empty = json!({
            "content": "",
            "contentType": "",
            "md5": "",
            "encryptedDataKey": "",
            "lastModified": 0,
            "beta": false,
        });
        // Nacos echoes the asked tag when no gray of it was found.
        if !asked_tag.is_empty() {
            empty["tag"] = json!(asked_tag);
        }
        payload::fail_with(KIND, &rid, code, message, empty)
    };
    let key = match checked_key(req.str("tenant"), req.str("group"), req.str("dataId")) {
        Ok(key) => key,
        Err(e) => return failed(code::INVALID_PARAM, &invalid_message(&e)),
    };
    // A learner too far behind: a failure (code 500), never "not found".
    if let Err(behind) = app.service.readable() {
        return failed(code::SERVER_ERROR, &behind.to_string());
    }
    if let Err(e) = Reader::new(principal).key(&key) {
        return failed(code::NO_RIGHT, &e.to_string());
    }
    let state = app.service.state();
    let (labels, explicit) = if asked_tag.is_empty() {
        let tag = peer
            .and_then(|p| app.connections.get(p))
            .and_then(|c| c.tag());
        (gray_match::labels(client_ip, tag.as_deref()), false)
    } else {
        (gray_match::labels(client_ip, Some(asked_tag)), true)
    };
    let content_type = state
        .config(&key)
        .map_or("text", |c| c.config_type.as_str());
    let Some(served) = gray_match::served(&state, &key, &labels, explicit) else {
        return failed(code::CONFIG_NOT_FOUND, "config data not exist");
    };
    let rule = served.gray().map(|g| &g.rule);
    let body = QueryBody {
        content: served.content(),
        content_type,
        md5: served.md5(),
        encrypted_data_key: served.encrypted_data_key(),
        last_modified: served.modify_time(),
        beta: matches!(rule, Some(GrayRule::Beta { .. })),
        tag: match rule {
            Some(GrayRule::Tag { tag }) => Some(url_encode(tag)),
            _ => None,
        },
    };
    payload::ok_with(KIND, &rid, &body)
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
    /// Only when a tag gray answered (never a JSON null).
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
}

/// The message of bad input: the parameter filter's refusals (`--param-check`)
/// as Nacos' `RemoteParamCheckFilter` words them, the rest as they are.
fn invalid_message(error: &InvalidInput) -> String {
    if error.is_filter_refusal() {
        format!("Param check invalid:{error}")
    } else {
        error.to_string()
    }
}

/// The Nacos error code and message for a failed write.
fn write_failure(error: &ServiceError) -> (i32, String) {
    let code = match error {
        ServiceError::Invalid(invalid) => return (code::INVALID_PARAM, invalid_message(invalid)),
        ServiceError::Rejected(ApplyError::CasMismatch) => code::SERVER_ERROR,
        ServiceError::Rejected(_) | ServiceError::AdminNotDeletable(_) => code::INVALID_PARAM,
        ServiceError::Denied(_) => code::NO_RIGHT,
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
        app_name: addition.get("appName").cloned(),
        tags: addition.get("config_tags").cloned(),
        cas_md5: req.opt_str("casMd5").map(str::to_string),
        expect: Expect::Any,
        tag: extra("tag"),
        beta_ips: beta_list(&extra("betaIps")),
        // Nacos' ConfigPublishRequestHandler reads it from the additionMap.
        encrypted_data_key: extra("encryptedDataKey"),
    };
    let caller = principal.caller(&extra("src_user"), client_ip.to_string());
    match app.service.publish(request, &caller).await {
        Ok(_) => payload::ok(KIND, &rid, json!({})),
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
    if let Err(behind) = app.service.readable() {
        return payload::fail(KIND, &rid, code::SERVER_ERROR, &behind.to_string());
    }
    let mut keys = Vec::with_capacity(contexts.len());
    for c in contexts {
        let key = match checked_key(&c.tenant, &c.group, &c.data_id) {
            Ok(key) => key,
            Err(e) => return payload::fail(KIND, &rid, code::INVALID_PARAM, &invalid_message(&e)),
        };
        // Every key, where Nacos checks the first one's namespace only.
        if let Err(e) = Reader::new(principal).key(&key) {
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
    // Matched to grays by its IP and the request's `Vipserver-Tag` header,
    // else its connection's tag (Nacos' ConfigChangeBatchListenRequestHandler).
    let tag = req
        .header(gray_match::TAG_LABEL)
        .map(str::to_string)
        .or_else(|| conn.tag());
    let labels = gray_match::labels(client_ip, tag.as_deref());
    let subscribed = app
        .hub
        .send(Subscribe {
            conn: conn.num,
            keys: keys.clone(),
            queue: conn.queue.clone(),
            client: peer.map(|p| p.to_string()).unwrap_or_default(),
            labels: labels.clone(),
        })
        .await;
    if subscribed.is_err() {
        return payload::fail(KIND, &rid, code::SERVER_ERROR, "the watch hub stopped");
    }
    let changed: Vec<_> = changed_keys(&app.service.state(), &keys, &labels)
        .into_iter()
        .map(|k| json!({ "dataId": k.data_id, "group": k.group, "tenant": k.tenant }))
        .collect();
    payload::ok(KIND, &rid, json!({ "changedConfigs": changed }))
}

/// `ConfigFuzzyWatchRequest{groupKeyPattern, watchType, receivedGroupKeys,
/// initializing}` → `ConfigFuzzyWatchResponse` (Nacos 3's
/// `ConfigFuzzyWatchRequestHandler`; the rule is
/// [`tacos_app::watch::fuzzy`]). `WATCH` registers the pattern on the
/// caller's connection, whose stream then gets the sync and the change
/// notices; past the connection's pattern limit errorCode 50310, on a
/// pattern whose matched set is full errorCode 50311 (registered all the
/// same). `CANCEL_WATCH` drops it; any other type does nothing.
pub async fn fuzzy_watch(
    app: &GrpcState,
    req: &Incoming,
    peer: Option<SocketAddr>,
    principal: &Principal,
) -> Reply {
    const KIND: &str = "ConfigFuzzyWatchResponse";
    let rid = req.request_id();
    let pattern = match GroupKeyPattern::parse(req.str("groupKeyPattern")) {
        Ok(pattern) => pattern,
        Err(e) => return payload::fail(KIND, &rid, code::INVALID_PARAM, &e.to_string()),
    };
    // The pattern itself: a grant must cover every key it could match.
    if let Err(e) = Reader::new(principal).watch_pattern(
        pattern.namespace(),
        pattern.group(),
        pattern.data_id(),
    ) {
        return payload::fail(KIND, &rid, code::NO_RIGHT, &e.to_string());
    }
    let conn = peer.and_then(|p| app.connections.get(p));
    match req.str("watchType") {
        fuzzy::WATCH_TYPE_WATCH => {}
        fuzzy::WATCH_TYPE_CANCEL_WATCH => {
            if let Some(conn) = conn {
                app.hub.do_send(FuzzyCancel {
                    conn: conn.num,
                    pattern,
                });
            }
            return payload::ok(KIND, &rid, json!({}));
        }
        _ => return payload::ok(KIND, &rid, json!({})),
    }
    let received: std::collections::HashSet<String> = match req.field("receivedGroupKeys") {
        Ok(keys) => keys.unwrap_or_default(),
        Err(e) => return payload::fail(KIND, &rid, code::INVALID_PARAM, &e.to_string()),
    };
    // Java's Jackson writes `isInitializing()` as `initializing`.
    let initializing = ["initializing", "isInitializing"]
        .iter()
        .find_map(|name| req.body.get(*name).and_then(|v| v.as_bool()))
        .unwrap_or(false);
    let Some(conn) = conn else {
        return payload::fail(
            KIND,
            &rid,
            code::UNREGISTERED,
            "Connection is unregistered: open the bi-directional stream first",
        );
    };
    let watched = app
        .hub
        .send(FuzzyWatch {
            conn: conn.num,
            pattern,
            received,
            initializing,
            queue: conn.fuzzy.clone(),
        })
        .await;
    match watched {
        Err(_) => payload::fail(KIND, &rid, code::SERVER_ERROR, "the watch hub stopped"),
        Ok(Err(e)) => payload::fail(KIND, &rid, e.code(), &e.to_string()),
        Ok(Ok(outcome)) if outcome.match_over_limit => {
            let message = format!(
                "{MATCH_COUNT_OVER_LIMIT_MESSAGE}: the pattern matches {} configs or more; only those are watched",
                outcome.max_matched
            );
            payload::fail(KIND, &rid, MATCH_COUNT_OVER_LIMIT, &message)
        }
        Ok(Ok(_)) => payload::ok(KIND, &rid, json!({})),
    }
}
