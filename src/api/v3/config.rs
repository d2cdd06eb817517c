//! Configs: the client's read (`/nacos/v3/client/cs/config`) and the admin
//! routes (`/nacos/v3/admin/cs/config...`: one, publish, delete, list,
//! batch delete, beta, listeners).

use crate::api::call::{Call, FormCall};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::answer::{
    fail, fail_without_data, invalid, missing_field, missing_param, ok, service_error, Answer,
    Refusal, PARAMETER_VALIDATE_ERROR, RESOURCE_NOT_FOUND,
};
use super::model::{
    ConfigBasicInfo, ConfigDetailInfo, ConfigGrayInfo, ConfigListenerInfo, ConfigQueryResponse,
};
use super::params::{
    config_key, filled, namespace_of, not_a_number, page, param_filter, required_string,
};
use crate::api::listener_views;
use crate::api::params::{all_values, client_ip, header, multipart, Params};
use crate::api::render::{v1_error, Page};
use crate::api::transfer;
use tacos_app::query::{configs_with_ids, search_configs, ConfigFilter};
use tacos_app::read::Reader;
use tacos_app::service::{beta_list, PublishRequest};
use tacos_app::transfer::{Layout, Policy};
use tacos_core::command::Expect;
use tacos_core::validate;
use tacos_state::canonical_namespace;

// ---- the client's read ----------------------------------------------------------

/// `GET /nacos/v3/client/cs/config`: what a client at this IP gets (the
/// beta when its IP is in the beta list). Not found is not an HTTP error
/// in Nacos 3 (200, code 20004); its bad input is plain text (the route is
/// outside Nacos' v2/v3 error envelope): `caused: ...;`.
pub async fn client_get(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    param_filter(&params)?;
    let plain = |message: String| v1_error(StatusCode::BAD_REQUEST, message);
    let group = filled(&params, "groupName")
        .ok_or_else(|| plain("Required parameter 'groupName' type String is not present".into()))?;
    let data_id = filled(&params, "dataId")
        .ok_or_else(|| plain("Required parameter 'dataId' type String is not present".into()))?;
    let key = tacos_app::service::checked_key(namespace_of(&params), group, data_id)
        .map_err(|e| invalid(&e))?;
    Reader::new(&principal).key(&key)?;
    crate::api::consistency::read_barrier(&app, &req, &params).await?;
    let state = app.service.state();
    let config = state.config(&key);
    let content_type = config.map_or("text", |c| c.config_type.as_str());
    // Nacos 3's open API read matches by the client IP only (its
    // `buildQueryChainRequest` sets no tag label), so only a beta can
    // answer here.
    let labels = tacos_app::gray_match::labels(&client_ip(&req), None);
    if let Some(beta) = tacos_app::gray_match::matching_gray(&state, &key, &labels) {
        let mut found = ConfigQueryResponse::found(
            &beta.content,
            content_type,
            &beta.md5,
            beta.modify_time,
            beta.rule.kind() == "beta",
        );
        found.encrypted_data_key = tacos_state::data_key_text(&beta.encrypted_data_key);
        return ok(found);
    }
    match config {
        Some(c) => {
            let mut found =
                ConfigQueryResponse::found(&c.content, content_type, &c.md5, c.modify_time, false);
            found.encrypted_data_key = tacos_state::data_key_text(&c.encrypted_data_key);
            ok(found)
        }
        None => Ok(fail_without_data(StatusCode::OK, RESOURCE_NOT_FOUND)),
    }
}

// ---- admin: one config ----------------------------------------------------------

pub async fn get(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let key = config_key(&params)?;
    Reader::new(&principal).key(&key)?;
    crate::api::consistency::read_barrier(&app, &req, &params).await?;
    match app.service.state().config(&key) {
        Some(config) => ok(ConfigDetailInfo::of(&key, config)),
        None => Err(not_found("Config not exist, please publish Config first.").into()),
    }
}

fn not_found(detail: &str) -> HttpResponse {
    fail(StatusCode::NOT_FOUND, RESOURCE_NOT_FOUND, detail)
}

/// `POST`: a publish with Nacos 3's form (`content`, `type`, `desc`,
/// `appName`, `configTags`, `srcUser`); CAS and beta come as headers
/// (`casMd5`, `betaIps`), as Nacos 3 reads them. A `tag` (Nacos' tag gray
/// release, which Tacos does not have) is refused rather than published
/// for everyone.
pub async fn publish(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let key = config_key(&params)?;
    let content = filled(&params, "content").ok_or_else(|| missing_field("content"))?;
    let request = PublishRequest {
        namespace: key.namespace.clone(),
        group: key.group.clone(),
        data_id: key.data_id.clone(),
        content: content.to_string(),
        config_type: params.str("type").to_string(),
        desc: params.str("desc").to_string(),
        app_name: params.get("appName").map(str::to_string),
        tags: params.get("configTags").map(str::to_string),
        cas_md5: header(&req, "casMd5"),
        expect: Expect::Any,
        beta_ips: beta_list(&header(&req, "betaIps").unwrap_or_default()),
        tag: params.str("tag").to_string(),
        encrypted_data_key: params.str("encryptedDataKey").to_string(),
    };
    let caller = principal.caller(params.str("srcUser"), client_ip(&req));
    match app.service.publish(request, &caller).await {
        Ok(_) => ok(true),
        Err(e) => Err(service_error(&e).into()),
    }
}

/// `DELETE`: removes the config (`true` when absent too). With a `tag`
/// only that tag's gray version goes, as in Nacos (the rule is the use
/// case's).
pub async fn delete(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let key = config_key(&params)?;
    let caller = principal.caller("", client_ip(&req));
    match app
        .service
        .remove(
            &key.namespace,
            &key.group,
            &key.data_id,
            params.str("tag"),
            &caller,
        )
        .await
    {
        Ok(_) => ok(true),
        Err(e) => Err(service_error(&e).into()),
    }
}

// ---- admin: list and batch delete ---------------------------------------------

/// `GET /list`: `search=blur` (the default: `*` wildcards, else substring,
/// the rule every Tacos list shares) or anything else for accurate names;
/// `dataId`, `groupName`, `appName`, `type`, `configTags` (all required),
/// `configDetail` (content substring); paging.
pub async fn list(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    let blur = params.get("search").is_none_or(|s| s == "blur");
    // Nacos' filter for this route skips blur searches (wildcards), and
    // otherwise checks the v1 names (`tenant`, `dataId`, `group`).
    if params.get("search") != Some("blur") {
        type Check = fn(&str) -> Result<(), validate::InvalidInput>;
        let checks: [(&str, Check); 3] = [
            ("tenant", validate::namespace),
            ("dataId", validate::data_id),
            ("group", validate::group),
        ];
        for (name, check) in checks {
            if let Some(value) = filled(&params, name) {
                check(value).map_err(|e| invalid(&e))?;
            }
        }
    }
    let paging = page(&params)?;
    let namespace = namespace_of(&params);
    validate::namespace(namespace).map_err(|e| invalid(&e))?;
    Reader::new(&principal).list(namespace)?;
    let filter = ConfigFilter {
        data_id: params.str("dataId").trim(),
        group: params.str("groupName").trim(),
        blur,
        app_name: params.str("appName"),
        config_type: params.str("type"),
        tags: params
            .str("configTags")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect(),
        content: params.str("configDetail"),
        contains: false,
    };
    let state = app.service.state();
    let found: Vec<ConfigBasicInfo> =
        search_configs(&state, &principal, canonical_namespace(namespace), filter)
            .map(|(key, config)| ConfigBasicInfo::of(key, config))
            .collect();
    let total = found.len();
    ok(Page::of(
        found.into_iter(),
        total,
        paging.page_no,
        paging.page_size,
    ))
}

/// `DELETE /batch?ids=1,2`: removes the configs with these ids, one after
/// the other as Nacos does; unknown ids are skipped. The caller must
/// write every one of them (checked before any is removed).
pub async fn delete_batch(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        req,
        body,
        ..
    }) = call;
    let raw = all_values(&req, &body, "ids").ok_or_else(|| missing_param("ids", "List", false))?;
    let ids = raw
        .iter()
        .map(|id| {
            id.parse::<u64>()
                .map_err(|_| Refusal::from(not_a_number(id, "java.lang.Long")))
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let keys = configs_with_ids(&app.service.state(), &ids);
    let caller = principal.caller("", client_ip(&req));
    match app.service.remove_each(&keys, &caller).await {
        Ok(_) => ok(true),
        Err(e) => Err(service_error(&e).into()),
    }
}

// ---- admin: beta ----------------------------------------------------------------

/// `GET /beta`: the beta as Nacos 3's `ConfigGrayInfo`; 404 when none.
pub async fn beta(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    let key = config_key(&params)?;
    Reader::new(&principal).key(&key)?;
    let state = app.service.state();
    match state.gray(&key, tacos_state::BETA_GRAY) {
        Some(beta) => ok(ConfigGrayInfo::of(
            &key,
            state.config(&key).map(|c| c.as_ref()),
            beta,
        )),
        None => Err(not_found("Config is not in beta.").into()),
    }
}

/// `DELETE /beta`: stops the beta (`true` when there was none too).
pub async fn stop_beta(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let key = config_key(&params)?;
    let caller = principal.caller("", client_ip(&req));
    match app
        .service
        .stop_beta(&key.namespace, &key.group, &key.data_id, &caller)
        .await
    {
        Ok(_) => ok(true),
        Err(e) => Err(service_error(&e).into()),
    }
}

// ---- admin: export, import, clone ------------------------------------------------

/// `policy` as Spring binds Nacos' `SameConfigPolicy`.
fn same_config_policy(raw: Option<&str>) -> Result<Policy, Refusal> {
    transfer::policy(raw).map_err(|other| {
        fail(
            StatusCode::BAD_REQUEST,
            PARAMETER_VALIDATE_ERROR,
            format!(
                "Failed to convert value of type 'java.lang.String' to required type 'com.alibaba.nacos.api.config.model.SameConfigPolicy'; No enum constant com.alibaba.nacos.api.config.model.SameConfigPolicy.{other}"
            ),
        )
        .into()
    })
}

/// An import's or clone's `Result`: `saveResult` on success; Nacos'
/// coded refusals with status 200.
fn transfer_answer(
    result: Result<serde_json::Map<String, serde_json::Value>, transfer::Refused>,
) -> Answer {
    match result {
        Ok(data) => ok(data),
        Err(transfer::Refused::Coded(coded, data)) => {
            let (code, message) = coded.v3();
            Err(HttpResponse::Ok()
                .json(serde_json::json!({"code": code, "message": message, "data": data}))
                .into())
        }
        Err(transfer::Refused::Invalid(reason)) => {
            Err(fail(StatusCode::BAD_REQUEST, PARAMETER_VALIDATE_ERROR, reason).into())
        }
        Err(transfer::Refused::Denied(response)) => Err(Refusal(response)),
        Err(transfer::Refused::Service(e)) => Err(service_error(&e).into()),
    }
}

/// `GET /export`: Nacos 3's zip (`.metadata.yml`) of the configs of
/// `namespaceId` matching `dataId`, `groupName` (`*` wildcards, else
/// exact), `appName`, and `ids` when given (an empty zip when none).
pub async fn export(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    param_filter(&params)?;
    let raw = all_values(&req, &[], "ids").unwrap_or_default();
    let mut ids = Vec::with_capacity(raw.len());
    for id in &raw {
        ids.push(id.parse().map_err(|_| not_a_number(id, "java.lang.Long"))?);
    }
    let namespace = namespace_of(&params);
    Reader::new(&principal).list(namespace)?;
    let filter = crate::api::nacos_config::export_filter(&params);
    Ok(
        transfer::export(&app, &principal, namespace, filter, &ids, Layout::Nacos2)
            .await
            .map_err(|e| {
                fail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    super::answer::SERVER_ERROR,
                    e,
                )
            })?,
    )
}

/// `POST /import`: a zip (multipart `file`) into `namespaceId` with
/// `policy`, as one write (Nacos 3's answer: `saveResult`).
pub async fn import(call: Call, body: web::Bytes) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let form = multipart(&req, &body)
        .transpose()
        .map_err(|e| invalid(&e))?
        .unwrap_or_default();
    let field = |name: &str| {
        params
            .get(name)
            .or(form.fields.get(name).map(String::as_str))
    };
    let policy = same_config_policy(field("policy"))?;
    let namespace = field("namespaceId")
        .filter(|n| !n.trim().is_empty())
        .unwrap_or("");
    let caller = principal.caller(field("src_user").unwrap_or_default(), client_ip(&req));
    let file = form.files.get("file").cloned();
    transfer_answer(transfer::import_zip(&app, &caller, namespace, policy, file, false).await)
}

/// `POST /clone?namespaceId=`: the configs of a JSON body `[{configId,
/// targetGroupName, targetDataId}]` copied into `namespaceId` (required)
/// with `policy`, as one write.
pub async fn clone(call: Call, body: web::Bytes) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let namespace = required_string(&params, "namespaceId")?;
    let policy = same_config_policy(params.get("policy"))?;
    let targets = transfer::clone_targets(&body, false)
        .map_err(|reason| fail(StatusCode::BAD_REQUEST, PARAMETER_VALIDATE_ERROR, reason))?;
    let caller = principal.caller(params.str("src_user"), client_ip(&req));
    transfer_answer(transfer::clone(&app, &caller, namespace, policy, &targets).await)
}

// ---- admin: listeners -------------------------------------------------------------

/// The v3 envelope of a member's listener answer.
#[derive(Deserialize)]
struct ListenerEnvelope {
    data: ConfigListenerInfo,
}

/// `aggregation` (default `true`), or Spring's refusal of a value that is
/// no boolean.
fn aggregation(params: &Params) -> Result<bool, Refusal> {
    listener_views::aggregation(params).map_err(|other| {
        fail(
            StatusCode::BAD_REQUEST,
            PARAMETER_VALIDATE_ERROR,
            format!("Invalid boolean value [{other}]"),
        )
        .into()
    })
}

/// `GET /listener`: who listens to the config, client IP → the md5 it
/// holds: this node's watch hub (long polls held or between polls, gRPC
/// connections by their peer IP) and, unless `aggregation=false`, every
/// other member's answer to the same route (asked with the caller's
/// credentials; a member that does not answer is left out, as in Nacos).
/// Nacos asks for the write right here, and so does Tacos.
pub async fn listeners(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let key = config_key(&params)?;
    let aggregation = aggregation(&params)?;
    Reader::new(&principal).admin_listeners(&key)?;
    let mut status = listener_views::listening_to(&app, &key)
        .await
        .map_err(|e| {
            fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                super::answer::SERVER_ERROR,
                e,
            )
        })?;
    if aggregation {
        for answer in listener_views::other_members::<ListenerEnvelope>(&app, &req).await {
            status.extend(answer.data.listeners_status);
        }
    }
    ok(ConfigListenerInfo {
        query_type: "config".into(),
        listeners_status: status,
    })
}

/// `GET /nacos/v3/admin/cs/listener?ip=`: what the client at `ip` listens
/// to, group key → the md5 it holds (Nacos' `ListenerControllerV3`): the
/// public namespace's keys and those of `namespaceId`, or every key with
/// `all=true`; in namespaces the caller may read; on every member unless
/// `aggregation=false`.
pub async fn listened_by_ip(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let ip = params
        .get("ip")
        .ok_or_else(|| missing_param("ip", "String", false))?;
    let all = listener_views::boolean(params.get("all"), false).map_err(|other| {
        fail(
            StatusCode::BAD_REQUEST,
            PARAMETER_VALIDATE_ERROR,
            format!("Invalid boolean value [{other}]"),
        )
    })?;
    param_filter(&params)?;
    let aggregation = aggregation(&params)?;
    let shown = listener_views::KeysShown {
        namespace: canonical_namespace(namespace_of(&params)),
        all,
    };
    let mut status = listener_views::listened_by(&app, &principal, ip.trim(), shown)
        .await
        .map_err(|e| {
            fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                super::answer::SERVER_ERROR,
                e,
            )
        })?;
    if aggregation {
        for answer in listener_views::other_members::<ListenerEnvelope>(&app, &req).await {
            status.extend(answer.data.listeners_status);
        }
    }
    ok(ConfigListenerInfo {
        query_type: "ip".into(),
        listeners_status: status,
    })
}
