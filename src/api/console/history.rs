//! Console routes for a config's history: list, one row, a diff of two
//! versions, and a rollback.
//!
//! Rows keep Nacos' meaning (an insert holds the content it inserted, an
//! update or delete holds the content as it was before the change), so a
//! row's content is a version the config had. A rollback publishes that
//! content again as a new version, with the config's current type,
//! description and app: it is recorded in history and audited like any
//! publish, and it is a CAS against the version the user saw.

use std::sync::Arc;

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::answer::{json_body, ok_json, ConsoleError};
use super::diff;
use super::Call;
use crate::api::params::paging;
use crate::api::render::Page;
use tacos_app::auth::Principal;
use tacos_app::read::Reader;
use tacos_core::validate::InvalidInput;
use tacos_state::{HistoryRow, State};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RowView {
    id: u64,
    /// `I`, `U` or `D`.
    op: &'static str,
    md5: String,
    size: usize,
    src_user: String,
    src_ip: String,
    time: i64,
    /// This row's content is what the config holds now.
    current: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    namespace: String,
    group: String,
    data_id: String,
}

impl RowView {
    fn of(row: &HistoryRow, current_md5: &str, with_content: bool) -> Self {
        RowView {
            id: row.id,
            op: row.op.code(),
            md5: row.md5.to_string(),
            size: row.content.len(),
            src_user: row.src_user.to_string(),
            src_ip: row.src_ip.to_string(),
            time: row.created_time,
            current: *row.md5 == *current_md5,
            content: with_content.then(|| row.content.to_string()),
            namespace: row.key.namespace.clone(),
            group: row.key.group.clone(),
            data_id: row.key.data_id.clone(),
        }
    }
}

fn current_md5<'a>(state: &'a State, row: &HistoryRow) -> &'a str {
    state.config(&row.key).map_or("", |c| c.md5.as_ref())
}

pub async fn list(call: Call) -> Result<HttpResponse, ConsoleError> {
    let key = call.readable_config()?;
    let (page_no, page_size) = paging(&call.params, 20)?;
    let state = call.app.service.state();
    let current = state.config(&key).map_or("", |c| c.md5.as_ref());
    let rows = state.history(&key);
    let total = rows.len();
    let page = rows
        .rev()
        .skip(Page::<RowView>::skipped(page_no, page_size))
        .take(page_size as usize)
        .map(|row| RowView::of(&row, current, false))
        .collect();
    Ok(ok_json(Page::window(page, total, page_no, page_size)))
}

/// A history row the caller may read.
fn readable_row(
    state: &State,
    principal: &Principal,
    id: u64,
) -> Result<Arc<HistoryRow>, ConsoleError> {
    let row = state
        .history_row(id)
        .ok_or_else(|| ConsoleError::NotFound(format!("history row {id} does not exist")))?;
    Reader::new(principal).key(&row.key)?;
    Ok(row)
}

pub async fn item(call: Call) -> Result<HttpResponse, ConsoleError> {
    let id = call.params.required_number("id")?;
    let state = call.app.service.state();
    let row = readable_row(&state, &call.principal, id)?;
    Ok(ok_json(RowView::of(&row, current_md5(&state, &row), true)))
}

/// `left` and `right`: history row ids, or `current` for what the config
/// holds now (at least one must be a row: it names the config).
/// `context`: unchanged lines around each change (default 3, `all` for the
/// whole text).
pub async fn diff(call: Call) -> Result<HttpResponse, ConsoleError> {
    let state = call.app.service.state();
    let context = match call.params.get("context") {
        None | Some("") => 3,
        Some("all") => usize::MAX,
        Some(_) => call.params.number("context", 3)? as usize,
    };
    let row_of = |name: &'static str| -> Result<Option<Arc<HistoryRow>>, ConsoleError> {
        match call.params.required(name)? {
            "current" => Ok(None),
            _ => Ok(Some(readable_row(
                &state,
                &call.principal,
                call.params.required_number(name)?,
            )?)),
        }
    };
    let (left, right) = (row_of("left")?, row_of("right")?);
    let Some(named) = left.as_ref().or(right.as_ref()) else {
        return Err(InvalidInput::Other("left", "one side must be a history row".into()).into());
    };
    let current = || {
        state
            .config(&named.key)
            .map(|c| c.content.as_ref())
            .ok_or_else(|| {
                ConsoleError::NotFound("the config was deleted: no current version".into())
            })
    };
    let label =
        |row: Option<&Arc<HistoryRow>>| row.map_or("current".to_string(), |r| r.id.to_string());
    let left_content = match &left {
        Some(row) => row.content.as_ref(),
        None => current()?,
    };
    let right_content = match &right {
        Some(row) => row.content.as_ref(),
        None => current()?,
    };
    Ok(ok_json(serde_json::json!({
        "left": label(left.as_ref()),
        "right": label(right.as_ref()),
        "leftContent": left_content,
        "rightContent": right_content,
        "diff": diff::diff(left_content, right_content, context),
    })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RollbackBody {
    id: u64,
    /// The config version the user saw (CAS); "" when it was deleted.
    #[serde(default)]
    cas_md5: Option<String>,
}

pub async fn rollback(call: Call, body: web::Bytes) -> Result<HttpResponse, ConsoleError> {
    let form: RollbackBody = json_body(&body)?;
    let state = call.app.service.state();
    let row = readable_row(&state, &call.principal, form.id)?;
    drop(state);
    let caller = call.caller();
    call.app
        .service
        .rollback(&row, form.cas_md5, &caller)
        .await?;
    Ok(ok_json(serde_json::json!({ "md5": row.md5 })))
}
