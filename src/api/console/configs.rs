//! Console routes for configs: the list, one config (read, publish,
//! remove), and the syntax check and diff preview before a publish.
//! Namespaces, betas, listeners and import/export have files of their own.
//!
//! Every console handler checks the caller's right in the namespace it touches
//! (read to look, read-write to change) before it reads or writes. A
//! publish is checked in this order, and the first failure is the answer,
//! with nothing written: the key (Nacos' dataId/group rules), the content
//! (not blank, not too large), the syntax for the declared type, then the
//! state (create refuses an existing config; an edit refuses a config that
//! is gone or was changed since the editor loaded it: CAS on its md5).

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::answer::{json_body, ok_json, ConsoleError};
use super::diff;
use super::Call;
use crate::api::params::{config_filter, paging, Params};
use crate::api::render::Page;
use tacos_app::auth::Principal;
use tacos_app::query::{search_configs, ConfigFilter};
use tacos_app::service::{checked_key, edit_expectation, PublishRequest};
use tacos_core::md5_hex;
use tacos_core::shown_namespace;
use tacos_core::validate::{self, InvalidInput};
use tacos_state::{canonical_namespace, Config, ConfigKey, State, BETA_GRAY};

/// The config key named by the `namespace`, `group` and `dataId` query
/// parameters.
pub(super) fn key_param(params: &Params) -> Result<ConfigKey, ConsoleError> {
    Ok(checked_key(
        params.str("namespace"),
        params.required("group")?,
        params.required("dataId")?,
    )?)
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
            md5: c.md5.to_string(),
            app_name: c.app_name.clone(),
            desc: c.desc.clone(),
            tags: c.tags.clone(),
            size: c.content.len(),
            modify_time: c.modify_time,
            modified_by: c.src_user.to_string(),
            beta: state.gray(key, BETA_GRAY).is_some(),
        }
    }
}

/// The configs of `namespace` matching the search of `params`
/// (`config_filter`; blur unless `search=accurate`).
pub(super) fn matching<'a>(
    state: &'a State,
    principal: &'a Principal,
    namespace: &'a str,
    params: &'a Params,
) -> Result<impl Iterator<Item = (&'a ConfigKey, &'a std::sync::Arc<Config>)> + 'a, ConsoleError> {
    let blur = blur_of(params)?;
    Ok(search_configs(
        state,
        principal,
        namespace,
        // The search box finds parts of names, as Nacos' console UI
        // wraps what is typed in `*`.
        ConfigFilter {
            contains: true,
            ..config_filter(params, blur)
        },
    ))
}

/// `search`: `blur` (the default) or `accurate`.
pub(super) fn blur_of(params: &Params) -> Result<bool, ConsoleError> {
    match params.get("search").unwrap_or("blur") {
        "blur" | "" => Ok(true),
        "accurate" => Ok(false),
        other => Err(InvalidInput::Other("search", format!("{other:?} (blur or accurate)")).into()),
    }
}

pub async fn list(call: Call) -> Result<HttpResponse, ConsoleError> {
    let namespace = call.params.str("namespace");
    validate::namespace(namespace)?;
    call.reader().list(namespace)?;
    let (page_no, page_size) = paging(&call.params, 20)?;
    let state = call.app.service.state();
    let namespace = canonical_namespace(namespace);
    let found: Vec<_> = matching(&state, &call.principal, namespace, &call.params)?.collect();
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

pub async fn get(call: Call) -> Result<HttpResponse, ConsoleError> {
    let key = call.readable_config()?;
    let state = call.app.service.state();
    let config = state.config(&key).map(|c| ConfigView {
        row: ConfigRow::of(&state, &key, c),
        content: c.content.to_string(),
        create_time: c.create_time,
        modified_from: c.src_ip.to_string(),
    });
    let beta = state.gray(&key, BETA_GRAY).map(|b| BetaView {
        content: b.content.to_string(),
        md5: b.md5.to_string(),
        ips: b.beta_ips().to_vec(),
        modify_time: b.modify_time,
        modified_by: b.src_user.to_string(),
    });
    let grays: Vec<_> = state
        .grays(&key)
        .iter()
        .map(|g| {
            serde_json::json!({
                "name": g.name,
                "rule": g.rule_json(),
                "priority": g.priority,
                "content": g.content,
                "md5": g.md5,
                "modifyTime": g.modify_time,
                "modifiedBy": g.src_user,
            })
        })
        .collect();
    if config.is_none() && grays.is_empty() {
        return Err(not_found(&key));
    }
    Ok(ok_json(
        serde_json::json!({ "config": config, "beta": beta, "grays": grays }),
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
    tacos_app::syntax::check(config_type, content)?;
    Ok(key)
}

pub async fn publish(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: PublishBody = json_body(&body)?;
    validate::namespace(&form.namespace)?;
    checked_publish(
        &form.namespace,
        &form.group,
        &form.data_id,
        &form.content,
        &form.config_type,
        call.app.service.max_content_size(),
    )?;
    let cas_md5 = form.cas_md5.filter(|m| !m.is_empty());
    let expect = edit_expectation(form.create, cas_md5.as_deref());
    let request = PublishRequest {
        namespace: form.namespace,
        group: form.group,
        data_id: form.data_id,
        content: form.content,
        config_type: form.config_type,
        desc: form.desc,
        // The console's form sends both, as they should stay.
        app_name: Some(form.app_name),
        tags: Some(form.tags),
        cas_md5,
        expect,
        beta_ips: Vec::new(),
        tag: String::new(),
        // The console edits plain text, as Nacos' does without a server
        // side encryption plugin.
        encrypted_data_key: String::new(),
    };
    let caller = call.caller();
    let published = call.app.service.publish(request, &caller).await?;
    Ok(ok_json(serde_json::json!({ "md5": published.md5 })))
}

pub async fn remove(call: Call) -> Result<HttpResponse, ConsoleError> {
    let key = call.config()?;
    let caller = call.caller();
    let existed = call
        .app
        .service
        .remove(&key.namespace, &key.group, &key.data_id, "", &caller)
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
    error: Option<tacos_app::syntax::SyntaxError>,
}

fn check_view(config_type: &str, content: &str) -> CheckView {
    let (warnings, error) = match tacos_app::syntax::check(config_type, content) {
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

pub async fn preview(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: PreviewBody = json_body(&body)?;
    let key = checked_key(&form.namespace, &form.group, &form.data_id)?;
    call.reader().key(&key)?;
    let content_error = validate::content(&form.content, call.app.service.max_content_size())
        .err()
        .map(|e| e.to_string());
    let state = call.app.service.state();
    let current = state.config(&key);
    let current_md5 = current.map_or("", |c| c.md5.as_ref());
    let diff = diff::diff(current.map_or("", |c| c.content.as_ref()), &form.content, 3);
    Ok(ok_json(serde_json::json!({
        "check": check_view(&form.config_type, &form.content),
        "contentError": content_error,
        "exists": current.is_some(),
        "currentMd5": current_md5,
        "currentContent": current.map_or("", |c| c.content.as_ref()),
        "newMd5": md5_hex(&form.content),
        "typeChange": current
            .map(|c| c.config_type.as_str())
            .filter(|t| *t != validate::config_type(&form.config_type)),
        "stale": !form.base_md5.is_empty() && form.base_md5 != current_md5,
        "diff": diff,
    })))
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
        assert!(checked_publish("bad/ns", "G", "d", "x", "text", 100).is_err());
    }
}
