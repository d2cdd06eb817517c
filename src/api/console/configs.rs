//! Console routes for namespaces, configs, betas, listeners (gathered
//! from every node) and import/export.
//!
//! Every handler checks the caller's right in the namespace it touches
//! (read to look, read-write to change) before it reads or writes. A
//! publish is checked in this order, and the first failure is the answer,
//! with nothing written: the key (Nacos' dataId/group rules), the content
//! (not blank, not too large), the syntax for the declared type, then the
//! state (create refuses an existing config; an edit refuses a config that
//! is gone or was changed since the editor loaded it: CAS on its md5).

use std::net::IpAddr;
use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use super::transfer::{self, Existing, Item, Policy, TransferError};
use super::{diff, json_body, ok_json, syntax, ConsoleError};
use crate::api::guard::Authed;
use crate::api::params::{client_ip, paging, Params};
use crate::api::render::Page;
use crate::api::AppState;
use tacos_app::query::NameMatch;
use tacos_app::service::{checked_key, PublishRequest, ServiceError};
use tacos_app::watch::{ListenProtocol, ListenState, ListenersOf};
use tacos_core::command::Expect;
use tacos_core::md5_hex;
use tacos_core::shown_namespace;
use tacos_core::validate::{self, InvalidInput};
use tacos_state::{canonical_namespace, Access, ApplyError, Config, ConfigKey, State};

/// How long the listeners page waits for the watch hub.
const HUB_TIMEOUT: Duration = Duration::from_secs(5);

/// The config key named by the `namespace`, `group` and `dataId` query
/// parameters.
pub(super) fn key_param(params: &Params) -> Result<ConfigKey, ConsoleError> {
    Ok(checked_key(
        params.str("namespace"),
        params.required("group")?,
        params.required("dataId")?,
    )?)
}

// ---- namespaces ---------------------------------------------------------------

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NamespaceView {
    /// "" for the public namespace.
    id: String,
    name: String,
    desc: String,
    config_count: usize,
    /// The caller's right here: `r` or `rw`.
    access: &'static str,
    create_time: i64,
}

pub async fn list_namespaces(app: web::Data<AppState>, Authed(principal): Authed) -> HttpResponse {
    let state = app.service.state();
    let mut all = vec![NamespaceView {
        id: String::new(),
        name: "public".into(),
        desc: "the default namespace".into(),
        config_count: state.configs_in("").count(),
        access: "",
        create_time: 0,
    }];
    all.extend(state.namespaces().map(|n| NamespaceView {
        id: n.id.clone(),
        name: n.name.clone(),
        desc: n.desc.clone(),
        config_count: state.configs_in(&n.id).count(),
        access: "",
        create_time: n.create_time,
    }));
    let visible: Vec<NamespaceView> = all
        .into_iter()
        .filter_map(|mut n| {
            n.access = if principal.can(&n.id, Access::ReadWrite) {
                "rw"
            } else if principal.can(&n.id, Access::Read) {
                "r"
            } else {
                return None;
            };
            Some(n)
        })
        .collect();
    ok_json(visible)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NamespaceBody {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    desc: String,
}

pub async fn create_namespace(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let form: NamespaceBody = json_body(&body)?;
    let caller = principal.caller("", client_ip(&req));
    let id = app
        .service
        .create_namespace(&form.id, form.name.trim(), form.desc.trim(), &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "id": id })))
}

pub async fn update_namespace(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let form: NamespaceBody = json_body(&body)?;
    if canonical_namespace(&form.id).is_empty() {
        return Err(ConsoleError::Invalid(InvalidInput::Other(
            "id",
            "the public namespace cannot be renamed".into(),
        )));
    }
    let caller = principal.caller("", client_ip(&req));
    app.service
        .update_namespace(&form.id, form.name.trim(), form.desc.trim(), &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "id": form.id })))
}

pub async fn delete_namespace(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let id = params.required("id")?;
    if canonical_namespace(id).is_empty() {
        return Err(ConsoleError::Invalid(InvalidInput::Other(
            "id",
            "the public namespace cannot be deleted".into(),
        )));
    }
    let caller = principal.caller("", client_ip(&req));
    app.service.remove_namespace(id, &caller).await?;
    Ok(ok_json(serde_json::json!({ "id": id })))
}

// ---- config list --------------------------------------------------------------

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigRow {
    id: u64,
    namespace: String,
    data_id: String,
    group: String,
    #[serde(rename = "type")]
    config_type: String,
    md5: String,
    app_name: String,
    desc: String,
    tags: String,
    size: usize,
    modify_time: i64,
    modified_by: String,
    /// A beta of this config is out.
    beta: bool,
}

impl ConfigRow {
    fn of(state: &State, key: &ConfigKey, c: &Config) -> Self {
        ConfigRow {
            id: c.id,
            namespace: key.namespace.clone(),
            data_id: key.data_id.clone(),
            group: key.group.clone(),
            config_type: c.config_type.clone(),
            md5: c.md5.clone(),
            app_name: c.app_name.clone(),
            desc: c.desc.clone(),
            tags: c.tags.clone(),
            size: c.content.len(),
            modify_time: c.modify_time,
            modified_by: c.src_user.clone(),
            beta: state.beta(key).is_some(),
        }
    }
}

/// The configs of `namespace` matching the filters of `params`: `dataId`,
/// `group` (blur: `*` wildcards or substring; accurate: equal), `type`,
/// `appName`, `content` (substring).
fn matching<'a>(
    state: &'a State,
    namespace: &'a str,
    params: &'a Params,
) -> Result<impl Iterator<Item = (&'a ConfigKey, &'a std::sync::Arc<Config>)> + 'a, ConsoleError> {
    let blur = match params.get("search").unwrap_or("blur") {
        "blur" | "" => true,
        "accurate" => false,
        other => {
            return Err(
                InvalidInput::Other("search", format!("{other:?} (blur or accurate)")).into(),
            )
        }
    };
    let field = move |pattern, value: &str| NameMatch { pattern, blur }.matches(value);
    let (data_id, group) = (params.str("dataId").trim(), params.str("group").trim());
    let config_type = params.str("type");
    let app_name = params.str("appName");
    let content = params.str("content");
    Ok(state.configs_in(namespace).filter(move |(k, c)| {
        field(data_id, &k.data_id)
            && field(group, &k.group)
            && (config_type.is_empty() || c.config_type == config_type)
            && (app_name.is_empty() || c.app_name == app_name)
            && (content.is_empty() || c.content.contains(content))
    }))
}

pub async fn list(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let namespace = params.str("namespace");
    validate::namespace(namespace)?;
    principal.require(namespace, Access::Read)?;
    let (page_no, page_size) = paging(&params, 20)?;
    let state = app.service.state();
    let namespace = canonical_namespace(namespace);
    let found: Vec<_> = matching(&state, namespace, &params)?.collect();
    let total = found.len();
    Ok(ok_json(Page::of(
        found.into_iter().map(|(k, c)| ConfigRow::of(&state, k, c)),
        total,
        page_no,
        page_size,
    )))
}

// ---- one config ---------------------------------------------------------------

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigView {
    #[serde(flatten)]
    row: ConfigRow,
    content: String,
    create_time: i64,
    modified_from: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BetaView {
    content: String,
    md5: String,
    ips: Vec<String>,
    modify_time: i64,
    modified_by: String,
}

pub async fn get(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let key = key_param(&params)?;
    principal.require(&key.namespace, Access::Read)?;
    let state = app.service.state();
    let config = state.config(&key).map(|c| ConfigView {
        row: ConfigRow::of(&state, &key, c),
        content: c.content.clone(),
        create_time: c.create_time,
        modified_from: c.src_ip.clone(),
    });
    let beta = state.beta(&key).map(|b| BetaView {
        content: b.content.clone(),
        md5: b.md5.clone(),
        ips: b.ips.clone(),
        modify_time: b.modify_time,
        modified_by: b.src_user.clone(),
    });
    if config.is_none() && beta.is_none() {
        return Err(not_found(&key));
    }
    Ok(ok_json(
        serde_json::json!({ "config": config, "beta": beta }),
    ))
}

fn not_found(key: &ConfigKey) -> ConsoleError {
    ConsoleError::NotFound(format!(
        "config {}/{} does not exist in namespace {}",
        key.group,
        key.data_id,
        shown_namespace(&key.namespace)
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PublishBody {
    #[serde(default)]
    namespace: String,
    group: String,
    data_id: String,
    content: String,
    #[serde(default, rename = "type")]
    config_type: String,
    #[serde(default)]
    desc: String,
    #[serde(default)]
    app_name: String,
    #[serde(default)]
    tags: String,
    /// The md5 the editor loaded; the publish fails if the config changed.
    #[serde(default)]
    cas_md5: Option<String>,
    /// A new config: refused if one exists already.
    #[serde(default)]
    create: bool,
}

/// The checks every console publish passes before anything is proposed:
/// key, content, syntax. Returns the canonical key.
pub(super) fn checked_publish(
    namespace: &str,
    group: &str,
    data_id: &str,
    content: &str,
    config_type: &str,
    max_content: usize,
) -> Result<ConfigKey, ConsoleError> {
    let key = checked_key(namespace, group, data_id)?;
    validate::content(content, max_content)?;
    syntax::check(config_type, content)?;
    Ok(key)
}

pub async fn publish(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let form: PublishBody = json_body(&body)?;
    validate::namespace(&form.namespace)?;
    principal.require(&form.namespace, Access::ReadWrite)?;
    checked_publish(
        &form.namespace,
        &form.group,
        &form.data_id,
        &form.content,
        &form.config_type,
        app.service.max_content_size(),
    )?;
    let cas_md5 = form.cas_md5.filter(|m| !m.is_empty());
    // A new config must not exist yet; an edit of a loaded version must
    // still exist (and match it): both checked in apply, atomically.
    let expect = match (form.create, &cas_md5) {
        (true, _) => Expect::Absent,
        (false, Some(_)) => Expect::Present,
        (false, None) => Expect::Any,
    };
    let md5 = md5_hex(&form.content);
    let request = PublishRequest {
        namespace: form.namespace,
        group: form.group,
        data_id: form.data_id,
        content: form.content,
        config_type: form.config_type,
        desc: form.desc,
        app_name: form.app_name,
        tags: form.tags,
        cas_md5,
        expect,
        beta_ips: Vec::new(),
    };
    let caller = principal.caller("", client_ip(&req));
    app.service.publish(request, &caller).await?;
    Ok(ok_json(serde_json::json!({ "md5": md5 })))
}

pub async fn remove(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let key = key_param(&params)?;
    principal.require(&key.namespace, Access::ReadWrite)?;
    let caller = principal.caller("", client_ip(&req));
    let existed = app
        .service
        .remove(&key.namespace, &key.group, &key.data_id, &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "removed": existed })))
}

// ---- check and preview ----------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CheckBody {
    #[serde(default, rename = "type")]
    config_type: String,
    content: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CheckView {
    valid: bool,
    /// The type that was checked (`text` and `html` are not checked).
    #[serde(rename = "type")]
    config_type: &'static str,
    warnings: Vec<String>,
    error: Option<syntax::SyntaxError>,
}

fn check_view(config_type: &str, content: &str) -> CheckView {
    let (warnings, error) = match syntax::check(config_type, content) {
        Ok(warnings) => (warnings, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    CheckView {
        valid: error.is_none(),
        config_type: validate::config_type(config_type),
        warnings,
        error,
    }
}

pub async fn check(body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: CheckBody = json_body(&body)?;
    Ok(ok_json(check_view(&form.config_type, &form.content)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PreviewBody {
    #[serde(default)]
    namespace: String,
    group: String,
    data_id: String,
    content: String,
    #[serde(default, rename = "type")]
    config_type: String,
    /// The md5 the editor loaded ("" for a new config).
    #[serde(default)]
    base_md5: String,
}

pub async fn preview(
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let form: PreviewBody = json_body(&body)?;
    let key = checked_key(&form.namespace, &form.group, &form.data_id)?;
    principal.require(&key.namespace, Access::Read)?;
    let content_error = validate::content(&form.content, app.service.max_content_size())
        .err()
        .map(|e| e.to_string());
    let state = app.service.state();
    let current = state.config(&key);
    let current_md5 = current.map_or("", |c| c.md5.as_str());
    let diff = diff::diff(current.map_or("", |c| c.content.as_str()), &form.content, 3);
    Ok(ok_json(serde_json::json!({
        "check": check_view(&form.config_type, &form.content),
        "contentError": content_error,
        "exists": current.is_some(),
        "currentMd5": current_md5,
        "newMd5": md5_hex(&form.content),
        "typeChange": current
            .map(|c| c.config_type.as_str())
            .filter(|t| *t != validate::config_type(&form.config_type)),
        "stale": !form.base_md5.is_empty() && form.base_md5 != current_md5,
        "diff": diff,
    })))
}

// ---- beta ---------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BetaBody {
    #[serde(default)]
    namespace: String,
    group: String,
    data_id: String,
    content: String,
    /// Comma-separated client IPs.
    beta_ips: String,
}

/// Client IPs, each checked.
fn beta_ips(text: &str) -> Result<Vec<String>, InvalidInput> {
    let ips: Vec<String> = text
        .split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|ip| !ip.is_empty())
        .map(str::to_string)
        .collect();
    if ips.is_empty() {
        return Err(InvalidInput::Other(
            "betaIps",
            "list at least one client IP".into(),
        ));
    }
    if let Some(bad) = ips.iter().find(|ip| ip.parse::<IpAddr>().is_err()) {
        return Err(InvalidInput::Other(
            "betaIps",
            format!("{bad:?} is not an IP"),
        ));
    }
    Ok(ips)
}

pub async fn publish_beta(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let form: BetaBody = json_body(&body)?;
    validate::namespace(&form.namespace)?;
    principal.require(&form.namespace, Access::ReadWrite)?;
    let key = checked_key(&form.namespace, &form.group, &form.data_id)?;
    let ips = beta_ips(&form.beta_ips)?;
    let state = app.service.state();
    let Some(config) = state.config(&key).cloned() else {
        return Err(ConsoleError::NotFound(format!(
            "config {}/{} does not exist: publish it before a beta",
            key.group, key.data_id
        )));
    };
    drop(state);
    checked_publish(
        &form.namespace,
        &form.group,
        &form.data_id,
        &form.content,
        &config.config_type,
        app.service.max_content_size(),
    )?;
    let request = PublishRequest {
        namespace: form.namespace,
        group: form.group,
        data_id: form.data_id,
        content: form.content,
        config_type: config.config_type.clone(),
        app_name: config.app_name.clone(),
        beta_ips: ips,
        ..Default::default()
    };
    let caller = principal.caller("", client_ip(&req));
    app.service.publish(request, &caller).await?;
    Ok(ok_json(serde_json::json!({ "ok": true })))
}

pub async fn stop_beta(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let key = key_param(&params)?;
    principal.require(&key.namespace, Access::ReadWrite)?;
    let caller = principal.caller("", client_ip(&req));
    let existed = app
        .service
        .stop_beta(&key.namespace, &key.group, &key.data_id, &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "stopped": existed })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromoteBody {
    #[serde(default)]
    namespace: String,
    group: String,
    data_id: String,
    /// The beta the user saw; refused if another beta replaced it.
    beta_md5: String,
    /// The config version the user saw (CAS).
    #[serde(default)]
    cas_md5: Option<String>,
}

/// Publishes the beta's content as the config (a CAS against the version
/// the user saw) and ends the beta, as one write.
pub async fn promote_beta(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let form: PromoteBody = json_body(&body)?;
    let key = checked_key(&form.namespace, &form.group, &form.data_id)?;
    principal.require(&key.namespace, Access::ReadWrite)?;
    let caller = principal.caller("", client_ip(&req));
    app.service
        .promote_beta(&key, &form.beta_md5, form.cas_md5, &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "md5": form.beta_md5 })))
}

// ---- listeners ----------------------------------------------------------------

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListenerView {
    /// The node the client is connected to.
    #[serde(default)]
    node: u64,
    protocol: String,
    /// HTTP: the client IP; gRPC: `connection N` (numbered per node).
    client: String,
    md5: String,
    /// Whether `md5` is what this client should hold; `None` when that
    /// cannot be told (a gRPC client while a beta is out: its IP is not
    /// known to the hub).
    in_sync: Option<bool>,
    /// `waiting` (a long poll held now), `between-polls`, `subscribed`,
    /// `push-pending`.
    state: String,
    /// Since the poll started or ended, in ms (HTTP).
    age_ms: u64,
}

/// What one node answers for its own listeners.
#[derive(Deserialize)]
struct NodeListeners {
    listeners: Vec<ListenerView>,
}

/// The listeners this node's watch hub holds for `key`.
async fn local_listeners(
    app: &AppState,
    key: &ConfigKey,
) -> Result<Vec<ListenerView>, ConsoleError> {
    let found = app
        .hub
        .send(ListenersOf(key.clone()))
        .timeout(HUB_TIMEOUT)
        .await
        .map_err(|e| ConsoleError::Internal(format!("the watch hub did not answer: {e}")))?;
    let state = app.service.state();
    let current = state.config(key).map_or("", |c| c.md5.as_str());
    let beta = state.beta(key);
    Ok(found
        .into_iter()
        .map(|l| {
            let (protocol, client, in_sync) = match l.protocol {
                ListenProtocol::Http => {
                    let expected = state.md5_for(key, &l.client);
                    ("http", l.client.clone(), Some(l.md5 == expected))
                }
                ListenProtocol::Grpc => (
                    "grpc",
                    format!("connection {}", l.client),
                    match beta {
                        Some(b) if b.md5 == l.md5 => None,
                        Some(_) if l.md5 != current => None,
                        _ => Some(l.md5 == current),
                    },
                ),
            };
            let state = match l.state {
                ListenState::Waiting => "waiting",
                ListenState::BetweenPolls => "between-polls",
                ListenState::Subscribed {
                    push_pending: false,
                } => "subscribed",
                ListenState::Subscribed { push_pending: true } => "push-pending",
            };
            ListenerView {
                node: app.node.id,
                protocol: protocol.into(),
                client,
                md5: l.md5,
                in_sync,
                state: state.into(),
                age_ms: l.age.as_millis() as u64,
            }
        })
        .collect())
}

/// Who listens to a config on every node of the cluster: this node's
/// watch hub, and every other member asked over HTTP (`local=true`, with
/// the caller's credentials). A member that does not answer is listed in
/// `unreachable`.
pub async fn listeners(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let key = key_param(&params)?;
    principal.require(&key.namespace, Access::Read)?;
    let mut rows = local_listeners(&app, &key).await?;
    let mut unreachable = Vec::new();
    if params.get("local") != Some("true") {
        let client = super::cluster::peer_client()?;
        let authorization = super::cluster::authorization(&req);
        let query = serde_urlencoded::to_string([
            ("namespace", key.namespace.as_str()),
            ("group", key.group.as_str()),
            ("dataId", key.data_id.as_str()),
            ("local", "true"),
        ])
        .map_err(|e| ConsoleError::Internal(e.to_string()))?;
        let path = format!("/tacos/api/console/config/listeners?{query}");
        let asks = super::cluster::other_members(&app)
            .into_iter()
            .map(|(id, addr)| {
                let (client, path, authorization) = (&client, &path, authorization.as_deref());
                async move {
                    let answer: Result<NodeListeners, String> =
                        super::cluster::get_json(client, &addr, path, authorization).await;
                    (id, answer)
                }
            });
        for (id, answer) in futures::future::join_all(asks).await {
            match answer {
                Ok(found) => rows.extend(found.listeners),
                Err(error) => unreachable.push(serde_json::json!({ "node": id, "error": error })),
            }
        }
    }
    rows.sort_by(|a, b| (a.node, &a.protocol, &a.client).cmp(&(b.node, &b.protocol, &b.client)));
    let state = app.service.state();
    let beta = state.beta(&key);
    Ok(ok_json(serde_json::json!({
        "currentMd5": state.config(&key).map_or("", |c| c.md5.as_str()),
        "beta": beta.map(|b| serde_json::json!({ "md5": b.md5, "ips": b.ips })),
        "listeners": rows,
        "unreachable": unreachable,
    })))
}

// ---- import / export ----------------------------------------------------------

pub async fn export(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let namespace = params.str("namespace");
    validate::namespace(namespace)?;
    principal.require(namespace, Access::Read)?;
    let ids: Vec<u64> = params
        .str("ids")
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| {
            id.parse()
                .map_err(|_| InvalidInput::Other("ids", format!("{id:?} is not a config id")))
        })
        .collect::<Result<_, _>>()?;
    let state = app.service.state();
    let items: Vec<Item> = matching(&state, canonical_namespace(namespace), &params)?
        .filter(|(_, c)| ids.is_empty() || ids.contains(&c.id))
        .map(|(k, c)| Item {
            group: k.group.clone(),
            data_id: k.data_id.clone(),
            content: c.content.clone(),
            config_type: c.config_type.clone(),
            desc: c.desc.clone(),
            app_name: c.app_name.clone(),
        })
        .collect();
    drop(state);
    if items.is_empty() {
        return Err(ConsoleError::NotFound(
            "no config matches; nothing to export".into(),
        ));
    }
    let bytes = web::block(move || transfer::write_zip(&items))
        .await
        .map_err(|e| ConsoleError::Internal(e.to_string()))??;
    let stamp = chrono::Utc::now().format("%Y%m%d%H%M%S");
    Ok(HttpResponse::Ok()
        .content_type("application/zip")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header((
            "Content-Disposition",
            format!(
                "attachment; filename=\"tacos_config_export_{}_{stamp}.zip\"",
                shown_namespace(namespace)
            ),
        ))
        .body(bytes))
}

/// What an import did.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct ImportReport {
    created: Vec<String>,
    overwritten: Vec<String>,
    skipped: Vec<String>,
    unchanged: Vec<String>,
    unrecognized: Vec<transfer::EntryProblem>,
}

pub async fn import(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Result<HttpResponse, ConsoleError> {
    let params = Params::parse(&req, &[]);
    let namespace = params.str("namespace").to_string();
    validate::namespace(&namespace)?;
    principal.require(&namespace, Access::ReadWrite)?;
    let policy = Policy::parse(params.str("policy")).ok_or_else(|| {
        InvalidInput::Other(
            "policy",
            format!("{:?} (abort, skip or overwrite)", params.str("policy")),
        )
    })?;
    if !app
        .service
        .state()
        .has_namespace(canonical_namespace(&namespace))
    {
        return Err(ConsoleError::NotFound(format!(
            "namespace {namespace} does not exist"
        )));
    }
    if body.is_empty() {
        return Err(ConsoleError::Body("send the zip file as the body".into()));
    }
    let max = app.service.max_content_size();
    let unzipped = web::block(move || transfer::read_zip(&body, max))
        .await
        .map_err(|e| ConsoleError::Internal(e.to_string()))??;
    if !unzipped.invalid.is_empty() {
        return Err(TransferError::Invalid(unzipped.invalid).into());
    }
    let state = app.service.state();
    let ns = canonical_namespace(&namespace).to_string();
    let plan = transfer::plan(unzipped.items, policy, |group, data_id| {
        state
            .config(&ConfigKey::new(&ns, group, data_id))
            .map(|c| Existing {
                md5: c.md5.clone(),
                content: c.content.clone(),
                config_type: c.config_type.clone(),
                desc: c.desc.clone(),
                app_name: c.app_name.clone(),
            })
    })?;
    drop(state);
    let mut report = ImportReport {
        skipped: plan.skip,
        unchanged: plan.unchanged,
        unrecognized: unzipped.unrecognized,
        ..Default::default()
    };
    let caller = principal.caller("", client_ip(&req));
    let request = |item: transfer::Item, cas_md5: Option<String>| PublishRequest {
        namespace: namespace.clone(),
        group: item.group,
        data_id: item.data_id,
        content: item.content,
        config_type: item.config_type,
        desc: item.desc,
        app_name: item.app_name,
        tags: String::new(),
        // A planned create must still be absent, a planned overwrite still
        // the version the plan saw: checked in apply, for the whole import.
        expect: if cas_md5.is_some() {
            Expect::Present
        } else {
            Expect::Absent
        },
        cas_md5,
        beta_ips: Vec::new(),
    };
    report.created = plan.create.iter().map(Item::entry).collect();
    report.overwritten = plan
        .overwrite
        .iter()
        .map(|(item, _)| item.entry())
        .collect();
    let requests: Vec<PublishRequest> = plan
        .create
        .into_iter()
        .map(|item| request(item, None))
        .chain(
            plan.overwrite
                .into_iter()
                .map(|(item, md5)| request(item, Some(md5))),
        )
        .collect();
    if requests.is_empty() {
        return Ok(ok_json(report));
    }
    // One write: every config of the plan, or none. The two refusals a
    // user can cause by racing the import get the console's own words.
    app.service
        .import(requests, &caller)
        .await
        .map_err(|e| match &e {
            ServiceError::Rejected(ApplyError::ImportRefused { entry, reason }) => match **reason {
                ApplyError::CasMismatch => ConsoleError::Conflict(format!(
                    "nothing imported: {entry} was changed by someone else during the \
                     import; import again to see the new plan"
                )),
                ApplyError::NamespaceNotFound(_) => ConsoleError::NotFound(format!(
                    "nothing imported: namespace {namespace} was removed during the import"
                )),
                _ => ConsoleError::Service(e),
            },
            _ => ConsoleError::Service(e),
        })?;
    Ok(ok_json(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishes_are_checked_key_then_content_then_syntax() {
        let check = |data_id: &str, content: &str, t: &str| {
            checked_publish("", "DEFAULT_GROUP", data_id, content, t, 100)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            check("bad id", "{", "json"),
            Err("invalid dataId : bad id".into())
        );
        assert_eq!(
            check("a.json", "  ", "json"),
            Err("content is blank".into())
        );
        assert_eq!(
            check("a.json", &"x".repeat(101), "text"),
            Err("invalid content, over 100".into())
        );
        let e = check("a.json", "{\"a\": }", "json").unwrap_err();
        assert!(e.starts_with("invalid json at line 1, column 7"), "{e}");
        assert_eq!(check("a.json", "{\"a\": 1}", "json"), Ok(()));
        assert!(checked_publish("bad.ns", "G", "d", "x", "text", 100).is_err());
    }

    #[test]
    fn beta_ips_must_be_ips() {
        assert_eq!(
            beta_ips("10.0.0.1, 10.0.0.2\n::1").unwrap(),
            ["10.0.0.1", "10.0.0.2", "::1"]
        );
        assert!(beta_ips(" , ").is_err());
        assert_eq!(
            beta_ips("10.0.0.1,host-a").unwrap_err().to_string(),
            "invalid betaIps: \"host-a\" is not an IP"
        );
    }
}
