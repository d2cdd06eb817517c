//! Console routes for exporting a namespace as a Nacos zip and importing
//! one (all or nothing, planned against the current state and checked
//! again in apply: `ConfigService::import_items`, shared with Nacos'
//! import and clone routes). The console also checks each content parses
//! as its type.

use actix_web::{web, HttpResponse};
use serde::Serialize;

use super::answer::{ok_json, ConsoleError};
use tacos_app::query::ConfigFilter;
use tacos_app::service::{ImportError, ServiceError};
use tacos_app::transfer::{self, Layout, Policy, TransferError};
use tacos_core::shown_namespace;
use tacos_core::validate::{self, InvalidInput};
use tacos_state::{canonical_namespace, ApplyError};

use super::Call;
use crate::api::params::config_filter;

pub async fn export(call: Call) -> Result<HttpResponse, ConsoleError> {
    let namespace = call.params.str("namespace");
    validate::namespace(namespace)?;
    call.reader().list(namespace)?;
    let ids: Vec<u64> = call
        .params
        .str("ids")
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| {
            id.parse()
                .map_err(|_| InvalidInput::Other("ids", format!("{id:?} is not a config id")))
        })
        .collect::<Result<_, _>>()?;
    let blur = super::configs::blur_of(&call.params)?;
    let items = transfer::export_items(
        &call.app.service.state(),
        &call.principal,
        canonical_namespace(namespace),
        ConfigFilter {
            contains: true,
            ..config_filter(&call.params, blur)
        },
        &ids,
    );
    if items.is_empty() {
        return Err(ConsoleError::NotFound(
            "no config matches; nothing to export".into(),
        ));
    }
    let bytes = web::block(move || transfer::write_zip(&items, Layout::Nacos2))
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

/// The console checks syntax by type before importing.
fn syntax_ok(config_type: &str, content: &str) -> Result<(), String> {
    tacos_app::syntax::check(config_type, content)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

pub async fn import(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let namespace = call.params.str("namespace").to_string();
    let caller = call.caller();
    call.app
        .service
        .import_target(&namespace, &caller)
        .map_err(|e| import_refusal(e, &namespace))?;
    let policy = Policy::parse(call.params.str("policy")).ok_or_else(|| {
        InvalidInput::Other(
            "policy",
            format!("{:?} (abort, skip or overwrite)", call.params.str("policy")),
        )
    })?;
    if body.is_empty() {
        return Err(ConsoleError::Body("send the zip file as the body".into()));
    }
    let max = call.app.service.max_content_size();
    let unzipped = web::block(move || transfer::read_zip(&body, max, &syntax_ok))
        .await
        .map_err(|e| ConsoleError::Internal(e.to_string()))??;
    if !unzipped.invalid.is_empty() {
        return Err(TransferError::Invalid(unzipped.invalid).into());
    }
    let outcome = call
        .app
        .service
        .import_items(&namespace, unzipped.items, policy, &caller)
        .await
        .map_err(|e| import_refusal(e, &namespace))?;
    Ok(ok_json(ImportReport {
        created: outcome.created,
        overwritten: outcome.overwritten,
        skipped: outcome.skipped,
        unchanged: outcome.unchanged,
        unrecognized: unzipped.unrecognized,
    }))
}

/// A refused import in the console's words (the refusals a user can cause
/// by racing the import get words of their own).
fn import_refusal(e: ImportError, namespace: &str) -> ConsoleError {
    match e {
        ImportError::NamespaceNotFound(_) => {
            ConsoleError::NotFound(format!("namespace {namespace} does not exist"))
        }
        ImportError::Transfer(e) => ConsoleError::Transfer(e),
        ImportError::Conflicts { conflicts, .. } => {
            ConsoleError::Transfer(TransferError::Conflicts(conflicts))
        }
        ImportError::Service(e) => match &e {
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
        },
    }
}
