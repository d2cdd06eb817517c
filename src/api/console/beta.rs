//! Console routes for a config's gray versions: the beta (gray release by
//! client IP) publish, stop, promote (one write: the beta becomes the
//! config and ends), a tag gray's publish, and stop and promote for any
//! gray by name.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::answer::{json_body, ok_json, ConsoleError};
use tacos_app::service::{beta_list, checked_key, PublishRequest};
use tacos_core::validate::{self, InvalidInput};

use super::configs::checked_publish;
use super::Call;

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

/// The client IPs of the console's beta form: at least one (each is
/// checked by the publish, as on every surface).
fn beta_ips(text: &str) -> Result<Vec<String>, InvalidInput> {
    let ips = beta_list(text);
    if ips.is_empty() {
        return Err(InvalidInput::Other(
            "betaIps",
            "list at least one client IP".into(),
        ));
    }
    Ok(ips)
}

pub async fn publish_beta(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: BetaBody = json_body(&body)?;
    let ips = beta_ips(&form.beta_ips)?;
    let gray = Gray {
        namespace: form.namespace,
        group: form.group,
        data_id: form.data_id,
        content: form.content,
        beta_ips: ips,
        tag: String::new(),
    };
    publish_gray_version(call, gray).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TagGrayBody {
    #[serde(default)]
    namespace: String,
    group: String,
    data_id: String,
    content: String,
    tag: String,
}

/// Publishes (or replaces) the gray `tag_{tag}`: clients that send the tag
/// see its content (see docs/gray.md).
pub async fn publish_tag_gray(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: TagGrayBody = json_body(&body)?;
    if form.tag.trim().is_empty() {
        return Err(InvalidInput::Missing("tag").into());
    }
    let gray = Gray {
        namespace: form.namespace,
        group: form.group,
        data_id: form.data_id,
        content: form.content,
        beta_ips: Vec::new(),
        tag: form.tag,
    };
    publish_gray_version(call, gray).await
}

/// A gray version to publish: by client IPs (the beta) or by tag.
struct Gray {
    namespace: String,
    group: String,
    data_id: String,
    content: String,
    beta_ips: Vec<String>,
    tag: String,
}

/// Publishes a gray version of an existing config, with the config's type
/// and app, after the same syntax check as the config's own publish.
async fn publish_gray_version(call: Call, form: Gray) -> Result<HttpResponse, ConsoleError> {
    validate::namespace(&form.namespace)?;
    let key = checked_key(&form.namespace, &form.group, &form.data_id)?;
    let caller = call.caller();
    let Some(config) = call.app.service.gray_base(&key, &caller)? else {
        return Err(ConsoleError::NotFound(format!(
            "config {}/{} does not exist: publish it before a gray version",
            key.group, key.data_id
        )));
    };
    checked_publish(
        &form.namespace,
        &form.group,
        &form.data_id,
        &form.content,
        &config.config_type,
        call.app.service.max_content_size(),
    )?;
    let request = PublishRequest {
        namespace: form.namespace,
        group: form.group,
        data_id: form.data_id,
        content: form.content,
        config_type: config.config_type.clone(),
        app_name: Some(config.app_name.clone()),
        beta_ips: form.beta_ips,
        tag: form.tag,
        ..Default::default()
    };
    call.app.service.publish(request, &caller).await?;
    Ok(ok_json(serde_json::json!({ "ok": true })))
}

pub async fn stop_beta(call: Call) -> Result<HttpResponse, ConsoleError> {
    let key = call.config()?;
    let caller = call.caller();
    let existed = call
        .app
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
pub async fn promote_beta(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: PromoteBody = json_body(&body)?;
    let key = checked_key(&form.namespace, &form.group, &form.data_id)?;
    let caller = call.caller();
    call.app
        .service
        .promote_beta(&key, &form.beta_md5, form.cas_md5, &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "md5": form.beta_md5 })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GrayPromoteBody {
    #[serde(default)]
    namespace: String,
    group: String,
    data_id: String,
    /// `beta` or `tag_{tag}`.
    gray_name: String,
    /// The gray version the user saw; refused if another replaced it.
    gray_md5: String,
    /// The config version the user saw (CAS).
    #[serde(default)]
    cas_md5: Option<String>,
}

/// Publishes a gray's content as the config and ends the gray, as one
/// write (`PromoteGray`).
pub async fn promote_gray(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: GrayPromoteBody = json_body(&body)?;
    let key = checked_key(&form.namespace, &form.group, &form.data_id)?;
    let caller = call.caller();
    call.app
        .service
        .promote_gray(&key, &form.gray_name, &form.gray_md5, form.cas_md5, &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "md5": form.gray_md5 })))
}

/// Ends the gray version `grayName`.
pub async fn stop_gray(call: Call) -> Result<HttpResponse, ConsoleError> {
    let key = call.config()?;
    let name = call.params.str("grayName").to_string();
    if name.is_empty() {
        return Err(InvalidInput::Missing("grayName").into());
    }
    let caller = call.caller();
    let existed = call
        .app
        .service
        .stop_gray(&key.namespace, &key.group, &key.data_id, &name, &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "stopped": existed })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_beta_form_lists_at_least_one_client() {
        assert_eq!(
            beta_ips("10.0.0.1, 10.0.0.2\n::1").unwrap(),
            ["10.0.0.1", "10.0.0.2", "::1"]
        );
        assert!(beta_ips(" , ").is_err());
        // Whether each is an IP is the publish's rule, on every surface
        // (tacos-app's service tests; tests/scenarios/rules_across_surfaces.txt).
    }
}
