//! Configs: the client's read (`/nacos/v3/client/cs/config`) and the admin
//! routes (`/nacos/v3/admin/cs/config...`: one, publish, delete, list,
//! batch delete, beta, listeners).

use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::http::header::AUTHORIZATION;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::model::{
    ConfigBasicInfo, ConfigDetailInfo, ConfigGrayInfo, ConfigListenerInfo, ConfigQueryResponse,
};
use super::{
    allow, config_key, fail, fail_without_data, filled, invalid, missing_field, missing_param,
    namespace_of, not_a_number, ok, page, param_filter, service_error, Answer, Refusal,
    PARAMETER_VALIDATE_ERROR, RESOURCE_NOT_FOUND,
};
use crate::api::guard::Authed;
use crate::api::params::{all_values, client_ip, header, Params};
use crate::api::render::{v1_error, Page};
use crate::api::AppState;
use tacos_app::query::{configs_with_ids, search_configs, ConfigFilter};
use tacos_app::service::{comma_list, PublishRequest};
use tacos_app::watch::ListenersOf;
use tacos_core::command::Expect;
use tacos_core::validate;
use tacos_state::{canonical_namespace, Access};

// ---- the client's read ----------------------------------------------------------

/// `GET /nacos/v3/client/cs/config`: what a client at this IP gets (the
/// beta when its IP is in the beta list). Not found is not an HTTP error
/// in Nacos 3 (200, code 20004); its bad input is plain text (the route is
/// outside Nacos' v2/v3 error envelope): `caused: ...;`.
pub async fn client_get(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &[]);
    param_filter(&params)?;
    let plain = |message: String| v1_error(StatusCode::BAD_REQUEST, message);
    let group = filled(&params, "groupName")
        .ok_or_else(|| plain("Required parameter 'groupName' type String is not present".into()))?;
    let data_id = filled(&params, "dataId")
        .ok_or_else(|| plain("Required parameter 'dataId' type String is not present".into()))?;
    let key = tacos_app::service::checked_key(namespace_of(&params), group, data_id)
        .map_err(|e| invalid(&e))?;
    allow(&principal, &key.namespace, Access::Read)?;
    crate::api::read_barrier(&app, &req, &params).await?;
    let state = app.service.state();
    let config = state.config(&key);
    let content_type = config.map_or("text", |c| c.config_type.as_str());
    // Nacos 3's open API read matches by the client IP only (its
    // `buildQueryChainRequest` sets no tag label), so only a beta can
    // answer here.
    let labels = tacos_app::gray::labels(&client_ip(&req), None);
    if let Some(beta) = tacos_app::gray::matching_gray(&state, &key, &labels) {
        let found = ConfigQueryResponse::found(
            &beta.content,
            content_type,
            &beta.md5,
            beta.modify_time,
            beta.rule.kind() == "beta",
        );
        return ok(found);
    }
    match config {
        Some(c) => ok(ConfigQueryResponse::found(
            &c.content,
            content_type,
            &c.md5,
            c.modify_time,
            false,
        )),
        None => Ok(fail_without_data(StatusCode::OK, RESOURCE_NOT_FOUND)),
    }
}

// ---- admin: one config ----------------------------------------------------------

pub async fn get(req: HttpRequest, app: web::Data<AppState>, Authed(principal): Authed) -> Answer {
    let params = Params::parse(&req, &[]);
    let key = config_key(&params)?;
    allow(&principal, &key.namespace, Access::Read)?;
    crate::api::read_barrier(&app, &req, &params).await?;
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
pub async fn publish(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &body);
    let key = config_key(&params)?;
    let content = filled(&params, "content").ok_or_else(|| missing_field("content"))?;
    allow(&principal, &key.namespace, Access::ReadWrite)?;
    let request = PublishRequest {
        namespace: key.namespace.clone(),
        group: key.group.clone(),
        data_id: key.data_id.clone(),
        content: content.to_string(),
        config_type: params.str("type").to_string(),
        desc: params.str("desc").to_string(),
        app_name: params.str("appName").to_string(),
        tags: params.str("configTags").to_string(),
        cas_md5: header(&req, "casMd5"),
        expect: Expect::Any,
        beta_ips: comma_list(&header(&req, "betaIps").unwrap_or_default()),
        tag: params.str("tag").to_string(),
    };
    let caller = principal.caller(params.str("srcUser"), client_ip(&req));
    match app.service.publish(request, &caller).await {
        Ok(()) => ok(true),
        Err(e) => Err(service_error(&e).into()),
    }
}

/// `DELETE`: removes the config (`true` when absent too). With a `tag`
/// Nacos removes that tag's gray release only; Tacos has none, so that is
/// `true` and nothing changes (the rule is the use case's).
pub async fn delete(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &body);
    let key = config_key(&params)?;
    allow(&principal, &key.namespace, Access::ReadWrite)?;
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
pub async fn list(req: HttpRequest, app: web::Data<AppState>, Authed(principal): Authed) -> Answer {
    let params = Params::parse(&req, &[]);
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
    allow(&principal, namespace, Access::Read)?;
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
    };
    let state = app.service.state();
    let found: Vec<ConfigBasicInfo> =
        search_configs(&state, canonical_namespace(namespace), filter)
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
/// the other as Nacos does; unknown ids are skipped. The caller must may
/// write every namespace they are in (checked before any is removed).
pub async fn delete_batch(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let raw = all_values(&req, &body, "ids").ok_or_else(|| missing_param("ids", "List", false))?;
    let ids = raw
        .iter()
        .map(|id| {
            id.parse::<u64>()
                .map_err(|_| Refusal::from(not_a_number(id, "java.lang.Long")))
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let keys = configs_with_ids(&app.service.state(), &ids);
    for key in &keys {
        allow(&principal, &key.namespace, Access::ReadWrite)?;
    }
    let caller = principal.caller("", client_ip(&req));
    match app.service.remove_each(&keys, &caller).await {
        Ok(_) => ok(true),
        Err(e) => Err(service_error(&e).into()),
    }
}

// ---- admin: beta ----------------------------------------------------------------

/// `GET /beta`: the beta as Nacos 3's `ConfigGrayInfo`; 404 when none.
pub async fn beta(req: HttpRequest, app: web::Data<AppState>, Authed(principal): Authed) -> Answer {
    let params = Params::parse(&req, &[]);
    let key = config_key(&params)?;
    allow(&principal, &key.namespace, Access::Read)?;
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
pub async fn stop_beta(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &body);
    let key = config_key(&params)?;
    allow(&principal, &key.namespace, Access::ReadWrite)?;
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

// ---- admin: listeners -------------------------------------------------------------

/// How long the hub and each other member may take.
const LISTENERS_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /listener`: who listens to the config, client IP → the md5 it
/// holds: this node's watch hub (long polls held or between polls, gRPC
/// connections by their peer IP) and, unless `aggregation=false`, every
/// other member's answer to the same route (asked with the caller's
/// credentials; a member that does not answer is left out, as in Nacos).
/// Nacos asks for the write right here, and so does Tacos.
pub async fn listeners(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &[]);
    let key = config_key(&params)?;
    let aggregation = match params.get("aggregation").map(str::trim) {
        None | Some("") => true,
        Some("true" | "on" | "yes" | "1") => true,
        Some("false" | "off" | "no" | "0") => false,
        Some(other) => {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                PARAMETER_VALIDATE_ERROR,
                format!("Invalid boolean value [{other}]"),
            )
            .into())
        }
    };
    allow(&principal, &key.namespace, Access::ReadWrite)?;
    let found = app
        .hub
        .send(ListenersOf(key.clone()))
        .await
        .map_err(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, super::SERVER_ERROR, e))?;
    let mut status: BTreeMap<String, String> = found
        .into_iter()
        .map(|l| (ip_of(&l.client).to_string(), l.md5))
        .collect();
    if aggregation {
        status.extend(other_members_listening(&app, &req).await);
    }
    ok(ConfigListenerInfo {
        query_type: "config".into(),
        listeners_status: status,
    })
}

/// The IP of a listener: HTTP listeners are known by IP, gRPC connections
/// by their peer address (`ip:port`, `[v6]:port`).
fn ip_of(client: &str) -> &str {
    match client.parse::<std::net::SocketAddr>() {
        Ok(_) => {
            let host = client.rsplit_once(':').map_or(client, |(host, _)| host);
            host.trim_start_matches('[').trim_end_matches(']')
        }
        Err(_) => client,
    }
}

/// What every other member answers to this route with `aggregation=false`.
async fn other_members_listening(app: &AppState, req: &HttpRequest) -> BTreeMap<String, String> {
    let members: Vec<String> = {
        let metrics = app.node.metrics();
        let membership = metrics.membership_config.membership();
        membership
            .nodes()
            .filter(|(id, _)| **id != app.node.id)
            .map(|(_, node)| node.http_addr.clone())
            .collect()
    };
    if members.is_empty() {
        return BTreeMap::new();
    }
    let Ok(client) = reqwest::Client::builder()
        .no_proxy()
        .timeout(LISTENERS_TIMEOUT)
        .build()
    else {
        return BTreeMap::new();
    };
    let mut query: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    query.retain(|(k, _)| k != "aggregation");
    query.push(("aggregation".into(), "false".into()));
    let query = serde_urlencoded::to_string(&query).unwrap_or_default();
    let forwarded: Vec<(&str, String)> = [AUTHORIZATION.as_str(), "accessToken"]
        .into_iter()
        .filter_map(|name| header(req, name).map(|v| (name, v)))
        .collect();
    #[derive(Deserialize)]
    struct Envelope {
        data: ConfigListenerInfo,
    }
    let asks = members.iter().map(|addr| {
        let mut request = client.get(format!(
            "http://{addr}/nacos/v3/admin/cs/config/listener?{query}"
        ));
        for (name, value) in &forwarded {
            request = request.header(*name, value);
        }
        async move {
            let answer = request.send().await.and_then(|r| r.error_for_status());
            match answer {
                Ok(response) => {
                    let body = response.bytes().await.ok()?;
                    serde_json::from_slice::<Envelope>(&body).ok()
                }
                Err(e) => {
                    tracing::warn!("listeners of {addr}: {e}");
                    None
                }
            }
        }
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .flat_map(|answer| answer.data.listeners_status)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ip_of;

    #[test]
    fn listener_ips() {
        assert_eq!(ip_of("10.0.0.7"), "10.0.0.7");
        assert_eq!(ip_of("10.0.0.7:51234"), "10.0.0.7");
        assert_eq!(ip_of("[::1]:51234"), "::1");
        assert_eq!(ip_of("connection 4"), "connection 4");
    }
}
