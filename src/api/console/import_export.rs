//! Console routes for exporting a namespace as a Nacos zip and importing
//! one (all or nothing, planned against the current state and checked
//! again in apply).

use actix_web::{web, HttpResponse};
use serde::Serialize;

use super::transfer::{self, Existing, Item, Policy, TransferError};
use super::{ok_json, ConsoleError};
use tacos_app::service::{PublishRequest, ServiceError};
use tacos_core::command::Expect;
use tacos_core::shown_namespace;
use tacos_core::validate::{self, InvalidInput};
use tacos_state::{canonical_namespace, Access, ApplyError, ConfigKey};

use super::configs::matching;
use super::Call;

pub async fn export(call: Call) -> Result<HttpResponse, ConsoleError> {
    let namespace = call.params.str("namespace");
    validate::namespace(namespace)?;
    call.principal.require(namespace, Access::Read)?;
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
    let state = call.app.service.state();
    let items: Vec<Item> = matching(&state, canonical_namespace(namespace), &call.params)?
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

pub async fn import(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let namespace = call.params.str("namespace").to_string();
    validate::namespace(&namespace)?;
    call.principal.require(&namespace, Access::ReadWrite)?;
    let policy = Policy::parse(call.params.str("policy")).ok_or_else(|| {
        InvalidInput::Other(
            "policy",
            format!("{:?} (abort, skip or overwrite)", call.params.str("policy")),
        )
    })?;
    if !call
        .app
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
    let max = call.app.service.max_content_size();
    let unzipped = web::block(move || transfer::read_zip(&body, max))
        .await
        .map_err(|e| ConsoleError::Internal(e.to_string()))??;
    if !unzipped.invalid.is_empty() {
        return Err(TransferError::Invalid(unzipped.invalid).into());
    }
    let state = call.app.service.state();
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
    let caller = call.caller();
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
        tag: String::new(),
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
    call.app
        .service
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
