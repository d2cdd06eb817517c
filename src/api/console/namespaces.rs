//! Console routes for namespaces: list (with the caller's access to each),
//! create, rename, delete.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::answer::{json_body, ok_json, ConsoleError};
use super::Call;
use tacos_app::query::visible_namespaces;
use tacos_core::validate::InvalidInput;
use tacos_state::canonical_namespace;

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

pub async fn list_namespaces(call: Call) -> HttpResponse {
    let Call { app, principal, .. } = call;
    let state = app.service.state();
    let visible: Vec<NamespaceView> =
        visible_namespaces(&state, &principal, "the default namespace")
            .into_iter()
            .map(|n| NamespaceView {
                access: n.access.code(),
                id: n.id,
                name: n.name,
                desc: n.desc,
                config_count: n.config_count,
                create_time: n.create_time,
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

pub async fn create_namespace(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: NamespaceBody = json_body(&body)?;
    let caller = call.caller();
    let id = call
        .app
        .service
        .create_namespace(&form.id, form.name.trim(), form.desc.trim(), &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "id": id })))
}

pub async fn update_namespace(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: NamespaceBody = json_body(&body)?;
    if canonical_namespace(&form.id).is_empty() {
        return Err(ConsoleError::Invalid(InvalidInput::Other(
            "id",
            "the public namespace cannot be renamed".into(),
        )));
    }
    let caller = call.caller();
    call.app
        .service
        .update_namespace(&form.id, form.name.trim(), form.desc.trim(), &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "id": form.id })))
}

pub async fn delete_namespace(call: Call) -> Result<HttpResponse, ConsoleError> {
    let id = call.params.required("id")?;
    if canonical_namespace(id).is_empty() {
        return Err(ConsoleError::Invalid(InvalidInput::Other(
            "id",
            "the public namespace cannot be deleted".into(),
        )));
    }
    let caller = call.caller();
    call.app.service.remove_namespace(id, &caller).await?;
    Ok(ok_json(serde_json::json!({ "id": id })))
}
