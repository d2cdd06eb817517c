//! Nacos open API v1: configs, listener (long polling), history, namespaces.

use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use super::guard::{Need, Routes};
use super::nacos_config::{
    export_filter, history_page, history_row, key_from, namespace_configs, publish_request, search,
    RowLookupError,
};
use super::params::{
    all_values, client_ip, header, multipart, paging, read_labels, url_decode, url_encode, Params,
};
use super::render::{
    content_type_for, filter_refusal, http_date, rest_ok, v1_error, v1_service_error, BetaInfo,
    ConfigDetail,
};
use super::{listeners, transfer, AppState};
use crate::api::call::{Call, FormCall};
use crate::api::guard::refusal;
use tacos_app::auth::Principal;
use tacos_app::gray_match;
use tacos_app::query::{
    configs_with_ids, visible_namespaces, HistoryLookup, PUBLIC_NAMESPACE_DESC,
};
use tacos_app::read::Reader;
use tacos_app::service::{Caller, ServiceError};
use tacos_app::transfer::Layout;
use tacos_app::watch::{changed_keys, Cancel, Hold, HoldOutcome, ListenKey, Polled, WatchHub};
use tacos_core::validate::{self, InvalidInput, KeyRules};
use tacos_state::{canonical_namespace, ConfigKey, State};
use tacos_state::{ClientLabels, GrayRule, BETA_GRAY};

pub fn routes(r: &mut Routes) {
    r.get("/nacos/v1/cs/configs", Need::OpenApi, get_config)
        .post("/nacos/v1/cs/configs", Need::OpenApi, publish_config)
        .delete("/nacos/v1/cs/configs", Need::OpenApi, delete_config)
        .post("/nacos/v1/cs/configs/listener", Need::OpenApi, listener)
        .get(
            "/nacos/v1/cs/configs/listener",
            Need::OpenApi,
            listeners_of_config,
        )
        .get("/nacos/v1/cs/listener", Need::OpenApi, listened_by_ip)
        .get("/nacos/v1/cs/history", Need::OpenApi, history)
        .get(
            "/nacos/v1/cs/history/previous",
            Need::OpenApi,
            history_previous,
        )
        .get(
            "/nacos/v1/cs/history/configs",
            Need::OpenApi,
            history_configs,
        )
        .get("/nacos/v1/console/namespaces", Need::Login, list_namespaces)
        .post(
            "/nacos/v1/console/namespaces",
            Need::Admin,
            create_namespace,
        )
        .put(
            "/nacos/v1/console/namespaces",
            Need::Admin,
            update_namespace,
        )
        .delete(
            "/nacos/v1/console/namespaces",
            Need::Admin,
            delete_namespace,
        );
}

fn bad_request(error: InvalidInput) -> HttpResponse {
    filter_refusal(&error).unwrap_or_else(|| v1_error(StatusCode::BAD_REQUEST, error))
}

fn ok_true() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain;charset=UTF-8")
        .body("true")
}

fn caller(req: &HttpRequest, params: &Params, principal: &Principal) -> Caller {
    principal.caller(params.str("src_user"), client_ip(req))
}

fn no_cache(builder: &mut actix_web::HttpResponseBuilder) -> &mut actix_web::HttpResponseBuilder {
    builder
        .insert_header((header::PRAGMA, NO_CACHE))
        .insert_header((header::EXPIRES, EXPIRED))
        .insert_header((header::CACHE_CONTROL, NO_STORE))
}

/// Header values of every config read, made once (a `&str` is parsed and
/// checked on every response).
const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");
/// Nacos' `setDateHeader("Expires", 0)`: the epoch as an HTTP date.
const EXPIRED: HeaderValue = HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-cache,no-store");

/// Header names of a config read, made once: an `(&str, _)` pair parses
/// its name on every response.
const CONFIG_TYPE: HeaderName = HeaderName::from_static("config-type");
const CONTENT_MD5: HeaderName = HeaderName::from_static("content-md5");

async fn get_config(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
        ..
    }) = call;
    // Exports and searches show what the caller may read; one config needs
    // read on it.
    let listing = ["export", "exportV2"]
        .iter()
        .any(|p| params.get(p) == Some("true"))
        || params.get("search").is_some();
    let reader = Reader::new(&principal);
    let allowed = if listing {
        reader.list(params.str("tenant"))
    } else {
        reader.named(
            params.str("tenant"),
            params.str("group"),
            params.str("dataId"),
        )
    };
    if let Err(denied) = allowed {
        return refusal(&denied);
    }
    if let Err(response) = super::read_barrier(&app, &req, &params).await {
        return response;
    }
    if params.get("export") == Some("true") {
        return export(&req, &body, &app, &principal, &params, Layout::Nacos1).await;
    }
    if params.get("exportV2") == Some("true") {
        return export(&req, &body, &app, &principal, &params, Layout::Nacos2).await;
    }
    if let Some(mode) = params.get("search") {
        return match search(&app.service.state(), &principal, &params, mode, "tenant") {
            Ok(page) => HttpResponse::Ok().json(page),
            Err(e) => bad_request(e),
        };
    }
    let key = match key_from(&params, "tenant") {
        Ok(key) => key,
        Err(e) => return bad_request(e),
    };
    let state = app.service.state();
    let config = state.config(&key);
    if params.get("beta") == Some("true") {
        // Nacos' queryBeta: the beta itself, whoever asks.
        let beta = state
            .gray(&key, BETA_GRAY)
            .map(|b| BetaInfo::new(&key, b, config.map(|c| c.as_ref())));
        return rest_ok(Some("query beta ok"), beta);
    }
    if params.get("show") == Some("all") {
        return match config {
            Some(c) => HttpResponse::Ok().json(ConfigDetail::new(&key, c)),
            None => HttpResponse::NotFound().body("config data not exist\n"),
        };
    }
    let (labels, explicit_tag) = read_labels(&req, &params, !state.grays(&key).is_empty());
    let config_type = config.map_or("text", |c| c.config_type.as_str());
    let Some(served) = gray_match::served(&state, &key, &labels, explicit_tag) else {
        return HttpResponse::NotFound()
            .content_type("text/plain;charset=UTF-8")
            .body("config data not exist\n");
    };
    let mut answer = HttpResponse::Ok();
    no_cache(&mut answer)
        .insert_header((CONFIG_TYPE, config_type))
        .insert_header((CONTENT_MD5, served.md5()))
        .insert_header((header::LAST_MODIFIED, http_date(served.modify_time())));
    // Nacos' ConfigServletInner: the key a client's encryption plugin
    // needs to decrypt the content (sent here only when there is one).
    if !served.encrypted_data_key().is_empty() {
        answer.insert_header(("Encrypted-Data-Key", served.encrypted_data_key()));
    }
    // Which gray answered, as Nacos' ConfigServletInner says it.
    match served.gray().map(|g| &g.rule) {
        Some(GrayRule::Beta { .. }) => {
            answer.insert_header(("isBeta", "true"));
        }
        Some(GrayRule::Tag { tag }) => {
            answer.insert_header(("tag", url_encode(tag)));
        }
        None => {}
    }
    answer
        .content_type(content_type_for(config_type))
        .body(served.content().to_string())
}

async fn publish_config(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
        ..
    }) = call;
    if params.get("import") == Some("true") {
        return import(&req, &body, &app, &principal, &params).await;
    }
    if params.get("clone") == Some("true") {
        return clone(&req, &body, &app, &principal, &params).await;
    }
    let request = match publish_request(
        &params,
        "tenant",
        header(&req, "betaIps"),
        header(&req, "casMd5"),
    ) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    match app
        .service
        .publish(request, &caller(&req, &params, &principal))
        .await
    {
        Ok(()) => ok_true(),
        Err(e) => v1_service_error(&e),
    }
}

async fn delete_config(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
        ..
    }) = call;
    if params.get("delType") == Some("ids") {
        return delete_configs_by_id(&req, &body, &app, &principal, &params).await;
    }
    let caller = caller(&req, &params, &principal);
    let (namespace, group, data_id) = match (params.required("dataId"), params.required("group")) {
        (Ok(d), Ok(g)) => (params.str("tenant"), g, d),
        (Err(e), _) | (_, Err(e)) => return bad_request(e),
    };
    if params.get("beta") == Some("true") {
        // Nacos' stopBeta answers its RestResult, not the plain `true`.
        return match app
            .service
            .stop_beta(namespace, group, data_id, &caller)
            .await
        {
            Ok(_) => rest_ok(Some("stop beta ok"), true),
            Err(e) => v1_service_error(&e),
        };
    }
    match app
        .service
        .remove(namespace, group, data_id, params.str("tag"), &caller)
        .await
    {
        Ok(_) => ok_true(),
        Err(e) => v1_service_error(&e),
    }
}

/// `DELETE ?delType=ids&ids=1,2`: removes the configs with these ids (ids
/// of no config are skipped, as Nacos does), each its own write; answers
/// Nacos' `RestResult` `{code:200, message:null, data:true}`.
async fn delete_configs_by_id(
    req: &HttpRequest,
    body: &[u8],
    app: &AppState,
    principal: &Principal,
    params: &Params,
) -> HttpResponse {
    let Some(raw) = all_values(req, body, "ids") else {
        return bad_request(InvalidInput::Missing("ids"));
    };
    let ids: Vec<u64> = match raw.iter().map(|id| id.parse()).collect() {
        Ok(ids) => ids,
        Err(_) => return bad_request(InvalidInput::Other("ids", raw.join(","))),
    };
    let keys = configs_with_ids(&app.service.state(), &ids);
    match app
        .service
        .remove_each(&keys, &caller(req, params, principal))
        .await
    {
        Ok(_) => rest_ok(None, true),
        Err(e) => v1_service_error(&e),
    }
}

// ---- export, import, clone ---------------------------------------------------

/// `GET ?export=true` (Nacos 1's zip: `.meta.yml` of app names) and
/// `?exportV2=true` (Nacos 2's `.metadata.yml`): the configs of `tenant`
/// matching `dataId`, `group` (`*` wildcards, else exact) and `appName`,
/// and `ids` when given.
async fn export(
    req: &HttpRequest,
    body: &[u8],
    app: &AppState,
    principal: &Principal,
    params: &Params,
    layout: Layout,
) -> HttpResponse {
    let ids = match config_ids(req, body) {
        Ok(ids) => ids,
        Err(e) => return bad_request(e),
    };
    let namespace = params.str("tenant");
    if let Err(e) = validate::namespace(namespace) {
        return bad_request(e);
    }
    let filter = export_filter(params);
    match transfer::export(app, principal, namespace, filter, &ids, layout).await {
        Ok(zip) => zip,
        Err(e) => v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `ids` (`1,2` or repeated), none when absent.
fn config_ids(req: &HttpRequest, body: &[u8]) -> Result<Vec<u64>, InvalidInput> {
    let raw = all_values(req, body, "ids").unwrap_or_default();
    raw.iter()
        .map(|id| id.parse())
        .collect::<Result<_, _>>()
        .map_err(|_| InvalidInput::Other("ids", raw.join(",")))
}

/// Nacos' `RestResult` of an import or clone.
fn transfer_answer(
    result: Result<serde_json::Map<String, serde_json::Value>, transfer::Refused>,
    message: &str,
) -> HttpResponse {
    match result {
        Ok(data) => rest_ok(Some(message), data),
        Err(transfer::Refused::Coded(coded, data)) => {
            let (code, message) = coded.v1();
            HttpResponse::Ok()
                .json(serde_json::json!({"code": code, "message": message, "data": data}))
        }
        Err(transfer::Refused::Invalid(reason)) => v1_error(StatusCode::BAD_REQUEST, reason),
        Err(transfer::Refused::Denied(response)) => *response,
        Err(transfer::Refused::Service(e)) => v1_service_error(&e),
    }
}

/// `POST ?import=true`: a zip (multipart `file`) into `namespace` with
/// `policy` (`ABORT`, `SKIP`, `OVERWRITE`), as one write.
async fn import(
    req: &HttpRequest,
    body: &[u8],
    app: &AppState,
    principal: &Principal,
    params: &Params,
) -> HttpResponse {
    let form = match multipart(req, body).transpose() {
        Ok(form) => form.unwrap_or_default(),
        Err(e) => return bad_request(e),
    };
    let field = |name: &str| {
        params
            .get(name)
            .or(form.fields.get(name).map(String::as_str))
    };
    let policy = match transfer::policy(field("policy")) {
        Ok(policy) => policy,
        Err(other) => return bad_request(InvalidInput::Other("policy", other)),
    };
    let namespace = field("namespace").unwrap_or_default();
    let caller = principal.caller(field("src_user").unwrap_or_default(), client_ip(req));
    let file = form.files.get("file").cloned();
    let result = transfer::import_zip(app, &caller, namespace, policy, file, true).await;
    transfer_answer(result, "import success")
}

/// `POST ?clone=true&tenant=`: the configs of a JSON body
/// `[{cfgId, dataId, group}]` copied into `tenant` (required) with
/// `policy`, as one write.
async fn clone(
    req: &HttpRequest,
    body: &[u8],
    app: &AppState,
    principal: &Principal,
    params: &Params,
) -> HttpResponse {
    let namespace = match params.required("tenant") {
        Ok(namespace) => namespace,
        Err(e) => return bad_request(e),
    };
    let policy = match transfer::policy(params.get("policy")) {
        Ok(policy) => policy,
        Err(other) => return bad_request(InvalidInput::Other("policy", other)),
    };
    let targets = match transfer::clone_targets(body, true) {
        Ok(targets) => targets,
        Err(reason) => return v1_error(StatusCode::BAD_REQUEST, reason),
    };
    let caller = caller(req, params, principal);
    let result = transfer::clone(app, &caller, namespace, policy, &targets).await;
    transfer_answer(result, "Clone Completed Successfully")
}

// ---- listener ---------------------------------------------------------------

const WORD_SEPARATOR: char = '\u{2}';
const LINE_SEPARATOR: char = '\u{1}';

/// Parses `Listening-Configs` (already form-decoded once; decoded again here,
/// as Nacos does): records `dataId^2group^2md5[^2tenant]^1`.
pub fn parse_listening_configs(raw: &str, max_keys: usize) -> Result<Vec<ListenKey>, InvalidInput> {
    let decoded = url_decode(raw);
    let invalid = || InvalidInput::Other("Listening-Configs", "invalid probeModify".into());
    let mut keys = Vec::new();
    for record in decoded.split(LINE_SEPARATOR) {
        if record.is_empty() {
            continue;
        }
        let fields: Vec<&str> = record.split(WORD_SEPARATOR).collect();
        let (data_id, group, md5, tenant) = match fields.as_slice() {
            [d, g, m] => (*d, *g, *m, ""),
            [d, g, m, t] => (*d, *g, *m, *t),
            _ => return Err(invalid()),
        };
        if data_id.is_empty() || group.is_empty() {
            return Err(invalid());
        }
        // Nacos checks listened keys only with its parameter filter on.
        KeyRules::current().filter_only(tenant, group, data_id)?;
        keys.push(ListenKey {
            key: ConfigKey::new(tenant, group, data_id),
            data_id: data_id.to_string(),
            group: group.to_string(),
            tenant: tenant.to_string(),
            md5: md5.to_string(),
        });
        if keys.len() > max_keys {
            return Err(InvalidInput::Other(
                "Listening-Configs",
                format!("more than {max_keys} keys in one request"),
            ));
        }
    }
    if keys.is_empty() {
        return Err(invalid());
    }
    Ok(keys)
}

/// The listener reply: URL-encoded `dataId^2group[^2tenant]^1...` and a newline.
pub fn listener_body(changed: &[ListenKey]) -> String {
    let mut raw = String::new();
    for k in changed {
        raw.push_str(&k.data_id);
        raw.push(WORD_SEPARATOR);
        raw.push_str(&k.group);
        if !k.tenant.is_empty() {
            raw.push(WORD_SEPARATOR);
            raw.push_str(&k.tenant);
        }
        raw.push(LINE_SEPARATOR);
    }
    format!("{}\n", url_encode(&raw))
}

fn listener_reply(changed: &[ListenKey]) -> HttpResponse {
    let body = if changed.is_empty() {
        String::new()
    } else {
        listener_body(changed)
    };
    no_cache(&mut HttpResponse::Ok())
        .content_type("text/html;charset=UTF-8")
        .body(body)
}

/// Cancels a hold if the request goes away before it is answered.
struct HoldGuard {
    hub: actix::Addr<WatchHub>,
    id: Option<u64>,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.hub.do_send(Cancel(id));
        }
    }
}

async fn listener(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
    }) = call;
    let keys = {
        let Some(raw) = params.get("Listening-Configs") else {
            return bad_request(InvalidInput::Missing("Listening-Configs"));
        };
        match parse_listening_configs(raw, app.max_listen_keys) {
            Ok(keys) => keys,
            Err(e) => return bad_request(e),
        }
    };
    // actix reads a body into a buffer of at least 8 KiB; kept, it would stay
    // allocated for as long as the poll is held (a quarter of a held poll's
    // memory, heaptrack with 5,000 of them); so would the parameters.
    drop(body);
    drop(params);
    // A learner too far behind: 503, and the client polls another node.
    if let Err(behind) = app.service.readable() {
        return v1_error(StatusCode::SERVICE_UNAVAILABLE, behind);
    }
    if let Err(denied) = Reader::new(&principal).watch(keys.iter().map(|k| &k.key)) {
        return refusal(&denied);
    }
    let ip = client_ip(&req);
    // A long poll's tag travels in the `Vipserver-Tag` header (Nacos'
    // NacosMd5Comparator); its IP matches betas.
    let tag = gray_match::labels(&ip, header(&req, gray_match::TAG_LABEL).as_deref()).tag;
    let labels = ClientLabels {
        ip: ip.clone(),
        tag: tag.clone(),
    };
    let changed = changed_keys(&app.service.state(), &keys, &labels);
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let timeout = header("Long-Pulling-Timeout").and_then(|t| t.trim().parse::<u64>().ok());
    // Answered without a hold: the hub still hears of the poll, for the
    // listeners view (a client holding a stale md5 shows up as not in sync).
    let answer_now = |keys: Vec<ListenKey>, client_ip: String| {
        app.hub.do_send(Polled {
            keys,
            client_ip,
            tag: labels.tag.clone(),
        });
        listener_reply(&changed)
    };
    let Some(timeout) = timeout else {
        return answer_now(keys, ip);
    };
    if !changed.is_empty() || header("Long-Pulling-Timeout-No-Hangup") == Some("true") {
        return answer_now(keys, ip);
    }
    let hold_for = Duration::from_millis(timeout.saturating_sub(500).max(10_000));
    let (reply, answer) = tokio::sync::oneshot::channel();
    let outcome = app
        .hub
        .send(Hold {
            keys,
            client_ip: ip,
            tag,
            reply,
        })
        .await;
    let mut guard = HoldGuard {
        hub: app.hub.clone(),
        id: None,
    };
    match outcome {
        Ok(HoldOutcome::Held(id)) => guard.id = Some(id),
        Ok(HoldOutcome::Answered) => {}
        Ok(HoldOutcome::Full { limit }) => {
            return v1_error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("too many listeners are waiting (limit {limit}); retry later"),
            )
        }
        Err(e) => return v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
    match tokio::time::timeout(hold_for, answer).await {
        Ok(Ok(changed)) => {
            guard.id = None;
            listener_reply(&changed)
        }
        // Timed out, or the hub let go (shutdown): nothing changed.
        Ok(Err(_)) | Err(_) => listener_reply(&[]),
    }
}

// ---- listener views -----------------------------------------------------------

/// Nacos' `GroupkeyListenserStatus` (its spelling): `collectStatus` 200
/// and a map of client IP → md5 (one config) or group key → md5 (one IP).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupkeyListenserStatus {
    collect_status: u16,
    lisenters_groupkey_status: BTreeMap<String, String>,
}

/// `aggregation` (a Tacos extension, default `true`: ask every member, as
/// Nacos always does) and `all` of the listener views; a value that is no
/// boolean is 400.
fn view_flags(params: &Params) -> Result<(bool, bool), InvalidInput> {
    let flag = |name: &'static str, default| {
        listeners::boolean(params.get(name), default).map_err(|v| InvalidInput::Other(name, v))
    };
    Ok((flag("aggregation", true)?, flag("all", false)?))
}

/// Adds what the other members answer (unless `aggregation=false`) and
/// renders the view.
async fn listener_view(
    app: &AppState,
    req: &HttpRequest,
    aggregation: bool,
    mut status: BTreeMap<String, String>,
) -> HttpResponse {
    if aggregation {
        for answer in listeners::other_members::<GroupkeyListenserStatus>(app, req).await {
            status.extend(answer.lisenters_groupkey_status);
        }
    }
    HttpResponse::Ok().json(GroupkeyListenserStatus {
        collect_status: 200,
        lisenters_groupkey_status: status,
    })
}

/// `GET /nacos/v1/cs/configs/listener`: who listens to one config (`dataId`,
/// `group`: blank is `DEFAULT_GROUP`, `tenant`), client IP → md5, on every
/// member (Nacos' `ConfigController.getListeners`).
async fn listeners_of_config(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let (data_id, group) = match (params.required("dataId"), params.required("group")) {
        (Ok(d), Ok(g)) if g.trim().is_empty() => (d, "DEFAULT_GROUP"),
        (Ok(d), Ok(g)) => (d, g),
        (Err(e), _) | (_, Err(e)) => return bad_request(e),
    };
    let key = match tacos_app::service::checked_key(params.str("tenant"), group, data_id) {
        Ok(key) => key,
        Err(e) => return bad_request(e),
    };
    let (aggregation, _) = match view_flags(&params) {
        Ok(flags) => flags,
        Err(e) => return bad_request(e),
    };
    if let Err(denied) = Reader::new(&principal).key(&key) {
        return refusal(&denied);
    }
    match listeners::listening_to(&app, &key).await {
        Ok(status) => listener_view(&app, &req, aggregation, status).await,
        Err(e) => v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `GET /nacos/v1/cs/listener?ip=`: what the client at `ip` listens to,
/// group key → md5, on every member (Nacos' `ListenerController`): the
/// public namespace's keys and those of `tenant`, or every key with
/// `all=true`; only namespaces the caller may read.
async fn listened_by_ip(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let ip = match params.required("ip") {
        Ok(ip) => ip.trim(),
        Err(e) => return bad_request(e),
    };
    let namespace = params.str("tenant");
    if let Err(e) = validate::namespace(namespace) {
        return bad_request(e);
    }
    let (aggregation, all) = match view_flags(&params) {
        Ok(flags) => flags,
        Err(e) => return bad_request(e),
    };
    let shown = listeners::KeysShown {
        namespace: canonical_namespace(namespace),
        all,
    };
    match listeners::listened_by(&app, &principal, ip, shown).await {
        Ok(status) => listener_view(&app, &req, aggregation, status).await,
        Err(e) => v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

// ---- history ----------------------------------------------------------------

async fn history(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req: _,
        ..
    } = call;
    let state = app.service.state();
    if params.get("nid").is_some() {
        return match history_row(&state, &principal, &params, HistoryLookup::This) {
            Ok(item) => HttpResponse::Ok().json(item),
            Err(e) => v1_row_error(e),
        };
    }
    let reader = Reader::new(&principal);
    if let Err(denied) = reader.named(
        params.str("tenant"),
        params.str("group"),
        params.str("dataId"),
    ) {
        return refusal(&denied);
    }
    let result = key_from(&params, "tenant").and_then(|key| Ok((key, paging(&params, 100)?)));
    match result {
        Ok((key, (page_no, page_size))) => {
            HttpResponse::Ok().json(history_page(&state, &key, page_no, page_size))
        }
        Err(e) => bad_request(e),
    }
}

async fn history_previous(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req: _,
        ..
    } = call;
    let state = app.service.state();
    match history_row(&state, &principal, &params, HistoryLookup::Previous) {
        Ok(item) => HttpResponse::Ok().json(item),
        Err(e) => v1_row_error(e),
    }
}

fn v1_row_error(error: RowLookupError) -> HttpResponse {
    match error {
        RowLookupError::Invalid(e) => bad_request(e),
        RowLookupError::NotFound(message) => v1_error(StatusCode::NOT_FOUND, message),
    }
}

async fn history_configs(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req: _,
        ..
    } = call;
    let namespace = params.str("tenant");
    if let Err(denied) = Reader::new(&principal).list(namespace) {
        return refusal(&denied);
    }
    if let Err(e) = validate::namespace(namespace) {
        return bad_request(e);
    }
    HttpResponse::Ok().json(namespace_configs(
        &app.service.state(),
        &principal,
        namespace,
    ))
}

// ---- namespaces -------------------------------------------------------------

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct NamespaceItem {
    namespace: String,
    namespace_show_name: String,
    namespace_desc: String,
    quota: u32,
    config_count: usize,
    #[serde(rename = "type")]
    kind: u8,
}

/// The namespaces `principal` may read, public first.
fn namespace_items(state: &State, principal: &Principal) -> Vec<NamespaceItem> {
    visible_namespaces(state, principal, PUBLIC_NAMESPACE_DESC)
        .into_iter()
        .map(|n| NamespaceItem {
            kind: if n.is_public() { 0 } else { 2 },
            namespace: n.id,
            namespace_show_name: n.name,
            namespace_desc: n.desc,
            quota: 200,
            config_count: n.config_count,
        })
        .collect()
}

async fn list_namespaces(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req: _,
        ..
    } = call;
    let state = app.service.state();
    let items = namespace_items(&state, &principal);
    if params.get("show") == Some("all") {
        let id = canonical_namespace(params.str("namespaceId"));
        return match items.into_iter().find(|n| n.namespace == id) {
            Some(item) => HttpResponse::Ok().json(item),
            None => v1_error(StatusCode::NOT_FOUND, format!("namespace not exist: {id}")),
        };
    }
    rest_ok(None, items)
}

fn namespace_result(result: Result<(), ServiceError>) -> HttpResponse {
    match result {
        Ok(()) => ok_true(),
        Err(e) => v1_service_error(&e),
    }
}

async fn create_namespace(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let caller = caller(&req, &params, &principal);
    let result = app
        .service
        .create_namespace(
            params.str("customNamespaceId"),
            params.str("namespaceName"),
            params.str("namespaceDesc"),
            &caller,
        )
        .await;
    namespace_result(result.map(|_| ()))
}

async fn update_namespace(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let caller = caller(&req, &params, &principal);
    let id = match params.required("namespace") {
        Ok(id) => id,
        Err(e) => return bad_request(e),
    };
    let result = app
        .service
        .update_namespace(
            id,
            params.str("namespaceShowName"),
            params.str("namespaceDesc"),
            &caller,
        )
        .await;
    namespace_result(result)
}

async fn delete_namespace(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let caller = caller(&req, &params, &principal);
    let id = match params.required("namespaceId") {
        Ok(id) => id,
        Err(e) => return bad_request(e),
    };
    namespace_result(app.service.remove_namespace(id, &caller).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_configs_parse_and_reply_round_trip() {
        let raw = url_encode("a.yaml\u{2}DEFAULT_GROUP\u{2}abc\u{1}b\u{2}G\u{2}\u{2}dev\u{1}");
        let keys = parse_listening_configs(&raw, 10).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].tenant, "");
        assert_eq!(keys[1].key.namespace, "dev");
        assert_eq!(keys[1].md5, "");
        assert_eq!(
            listener_body(&keys),
            "a.yaml%02DEFAULT_GROUP%01b%02G%02dev%01\n"
        );
        assert!(parse_listening_configs("a\u{2}b\u{1}", 10).is_err());
        assert!(parse_listening_configs("", 10).is_err());
        let many: String = (0..3).map(|i| format!("d{i}\u{2}g\u{2}m\u{1}")).collect();
        assert!(parse_listening_configs(&many, 2).is_err());
        // "public" is the public namespace, echoed back as sent.
        let keys = parse_listening_configs("d\u{2}g\u{2}m\u{2}public\u{1}", 10).unwrap();
        assert_eq!(keys[0].key.namespace, "");
        assert_eq!(listener_body(&keys), "d%02g%02public%01\n");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Any form value: refused or parsed, never a panic, never more
        /// keys than the limit, and what parses round-trips.
        #[test]
        fn listening_configs_never_panic(raw in "[\u{1}\u{2}a-zA-Z0-9_.:%+-]{0,200}", max in 1usize..8) {
            if let Ok(keys) = parse_listening_configs(&raw, max) {
                proptest::prop_assert!(keys.len() <= max);
                let body = listener_body(&keys);
                proptest::prop_assert!(body.ends_with('\n'));
            }
        }

        #[test]
        fn arbitrary_unicode_never_panics(raw in "\\PC{0,100}") {
            let _ = parse_listening_configs(&raw, 10_000);
        }
    }
}
