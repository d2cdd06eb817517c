//! Response shapes shared by the Nacos routes: error bodies, the v2
//! envelope, pages, config and history items, and time formats.

use std::fmt::Display;

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use tacos_app::service::ServiceError;
use tacos_core::validate::InvalidInput;
use tacos_raft::rpc::RouteError;
use tacos_state::{data_key_text, ApplyError, Config, ConfigKey, Gray, HistoryRow};

/// The answer of Nacos' parameter filter (`--param-check`; Nacos 2.3+
/// runs it by default) to a key it refuses: 400 in plain text, before any
/// route, the same on every HTTP generation. `None` for other input errors.
pub fn filter_refusal(error: &InvalidInput) -> Option<HttpResponse> {
    if !error.is_filter_refusal() {
        return None;
    }
    Some(
        HttpResponse::BadRequest()
            .insert_header(("Pragma", "no-cache"))
            .insert_header(("Expires", http_date(0)))
            .insert_header(("Cache-Control", "no-cache,no-store"))
            .body(format!("{error}\r\n")),
    )
}

/// [`filter_refusal`] of a refused write's input, if that is what it was.
fn service_filter_refusal(error: &ServiceError) -> Option<HttpResponse> {
    match error {
        ServiceError::Invalid(invalid) => filter_refusal(invalid),
        _ => None,
    }
}

/// A Nacos v1 error: plain text `caused: <message>;`.
pub fn v1_error(status: StatusCode, message: impl Display) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/plain; charset=utf-8")
        .body(format!("caused: {message};"))
}

/// The HTTP status of a refused or failed write (shared by v1, v2 and v3).
pub fn status_of(error: &ServiceError) -> StatusCode {
    match error {
        ServiceError::Invalid(_) => StatusCode::BAD_REQUEST,
        ServiceError::Rejected(ApplyError::CasMismatch | ApplyError::GrayCasMismatch) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        ServiceError::Rejected(ApplyError::UnknownCommand) => StatusCode::INTERNAL_SERVER_ERROR,
        ServiceError::Rejected(ApplyError::UserNotFound(_) | ApplyError::RoleNotFound(_)) => {
            StatusCode::NOT_FOUND
        }
        ServiceError::Rejected(
            ApplyError::UserExists(_) | ApplyError::LastAdmin(_) | ApplyError::RoleBound { .. },
        ) => StatusCode::CONFLICT,
        ServiceError::Rejected(_) | ServiceError::AdminNotDeletable(_) => StatusCode::BAD_REQUEST,
        ServiceError::Denied(e) => super::guard::refusal_status(e),
        ServiceError::Write(
            RouteError::NoLeader
            | RouteError::NotLeader { .. }
            | RouteError::Unreachable(_)
            | RouteError::LeaderDown(_)
            | RouteError::LeaderChanged,
        ) => StatusCode::SERVICE_UNAVAILABLE,
        ServiceError::Write(RouteError::Stopped(_)) => StatusCode::INTERNAL_SERVER_ERROR,
        ServiceError::Write(RouteError::Membership(_)) => StatusCode::BAD_REQUEST,
        ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A service error as Nacos v1 reports it.
pub fn v1_service_error(error: &ServiceError) -> HttpResponse {
    if let ServiceError::Denied(e) = error {
        return super::guard::refusal(e);
    }
    service_filter_refusal(error).unwrap_or_else(|| v1_error(status_of(error), error))
}

/// The v2 envelope around a success.
pub fn v2_ok(data: impl Serialize) -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"code": 0, "message": "success", "data": data}))
}

/// A v2 error envelope.
pub fn v2_error(
    status: StatusCode,
    code: u32,
    message: &str,
    detail: impl Display,
) -> HttpResponse {
    HttpResponse::build(status)
        .json(serde_json::json!({"code": code, "message": message, "data": detail.to_string()}))
}

/// A service error as Nacos v2 reports it.
pub fn v2_service_error(error: &ServiceError) -> HttpResponse {
    if let Some(refused) = service_filter_refusal(error) {
        return refused;
    }
    let (code, message) = match error {
        ServiceError::Invalid(InvalidInput::Missing(_)) => (10000, "parameter missing"),
        ServiceError::Invalid(InvalidInput::Namespace | InvalidInput::NamespaceTooLong) => {
            (20001, "'tenant' parameter error")
        }
        ServiceError::Invalid(_) | ServiceError::AdminNotDeletable(_) => {
            (20002, "parameter validate error")
        }
        // What the guard answers a refusal with, on every surface.
        ServiceError::Denied(e) => return super::guard::refusal(e),
        ServiceError::Rejected(ApplyError::NamespaceNotFound(_)) => {
            (20001, "'tenant' parameter error")
        }
        ServiceError::Rejected(ApplyError::CasMismatch | ApplyError::GrayCasMismatch) => {
            (20005, "resource conflict")
        }
        ServiceError::Rejected(ApplyError::GrayOverMaxCount(_)) => {
            (20010, "config gray version version over max count")
        }
        ServiceError::Rejected(ApplyError::GrayRuleVersionInvalid) => {
            (20012, "config gray rule version invalid")
        }
        ServiceError::Rejected(_) => (20002, "parameter validate error"),
        ServiceError::Write(_) | ServiceError::Internal(_) => (30000, "server error"),
    };
    v2_error(status_of(error), code, message, error)
}

/// Epoch milliseconds as ISO-8601 with milliseconds (how Nacos serializes
/// timestamps), e.g. `2026-12-01T04:01:25.540+00:00`.
pub fn iso_time(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, false)
}

/// The last millisecond an HTTP date can show (9999-12-31T23:59:59.999Z).
const LAST_HTTP_DATE_MS: u64 = 253_402_300_799_999;

/// Nacos' v1 `RestResult` of a success: `{code: 200, message, data}`.
pub fn rest_ok(message: Option<&str>, data: impl Serialize) -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"code": 200, "message": message, "data": data}))
}

/// Epoch milliseconds as an HTTP date (`Last-Modified`), e.g.
/// `Tue, 01 Dec 2026 14:30:53 GMT`. Times outside 1970..=9999 are clamped.
/// (httpdate's formatter: chrono's general one was 3% of a config read.)
pub fn http_date(ms: i64) -> String {
    let ms = u64::try_from(ms).unwrap_or(0).min(LAST_HTTP_DATE_MS);
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

/// A page of results, as Nacos' `Page`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub total_count: usize,
    pub page_number: u64,
    pub pages_available: u64,
    pub page_items: Vec<T>,
}

impl<T> Page<T> {
    /// Cuts page `page_no` (1-based) of `page_size` out of `items`.
    pub fn of(items: impl Iterator<Item = T>, total: usize, page_no: u64, page_size: u64) -> Self {
        let skip = Self::skipped(page_no, page_size);
        let page_items = items.skip(skip).take(page_size as usize).collect();
        Self::window(page_items, total, page_no, page_size)
    }

    /// Page `page_no` whose items the caller already cut (see [`Page::skipped`]).
    pub fn window(page_items: Vec<T>, total: usize, page_no: u64, page_size: u64) -> Self {
        Page {
            total_count: total,
            page_number: page_no,
            pages_available: (total as u64).div_ceil(page_size.max(1)),
            page_items,
        }
    }

    /// How many items come before page `page_no` (1-based).
    pub fn skipped(page_no: u64, page_size: u64) -> usize {
        (page_no.saturating_sub(1)).saturating_mul(page_size) as usize
    }
}

/// A config in search results.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigItem {
    pub id: String,
    pub data_id: String,
    pub group: String,
    pub content: String,
    pub md5: String,
    pub tenant: String,
    pub app_name: String,
    #[serde(rename = "type")]
    pub config_type: String,
}

impl ConfigItem {
    pub fn new(key: &ConfigKey, config: &Config) -> Self {
        ConfigItem {
            id: config.id.to_string(),
            data_id: key.data_id.clone(),
            group: key.group.clone(),
            content: config.content.to_string(),
            md5: config.md5.to_string(),
            tenant: key.namespace.clone(),
            app_name: config.app_name.clone(),
            config_type: config.config_type.clone(),
        }
    }
}

/// A config with all its metadata (`show=all`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigDetail {
    pub id: String,
    pub data_id: String,
    pub group: String,
    pub content: String,
    pub md5: String,
    pub tenant: String,
    pub app_name: String,
    #[serde(rename = "type")]
    pub config_type: String,
    pub create_time: i64,
    pub modify_time: i64,
    pub create_user: String,
    pub create_ip: String,
    pub desc: String,
    pub config_tags: String,
    /// Nacos' `encryptedDataKey` ("" for a plain config).
    pub encrypted_data_key: String,
}

impl ConfigDetail {
    pub fn new(key: &ConfigKey, c: &Config) -> Self {
        ConfigDetail {
            id: c.id.to_string(),
            data_id: key.data_id.clone(),
            group: key.group.clone(),
            content: c.content.to_string(),
            md5: c.md5.to_string(),
            tenant: key.namespace.clone(),
            app_name: c.app_name.clone(),
            config_type: c.config_type.clone(),
            create_time: c.create_time,
            modify_time: c.modify_time,
            create_user: c.src_user.to_string(),
            create_ip: c.src_ip.to_string(),
            desc: c.desc.clone(),
            config_tags: c.tags.clone(),
            encrypted_data_key: data_key_text(&c.encrypted_data_key).to_string(),
        }
    }
}

/// A config's beta as Nacos' `ConfigInfo4Beta` (`GET ...?beta=true`). The
/// beta has no row id of its own in Tacos: `id` is its config's (0 when the
/// config is gone).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BetaInfo {
    pub id: String,
    pub data_id: String,
    pub group: String,
    pub content: String,
    pub md5: String,
    pub encrypted_data_key: String,
    pub tenant: String,
    pub app_name: String,
    #[serde(rename = "type")]
    pub config_type: String,
    /// The client IPs, comma-separated.
    pub beta_ips: String,
}

impl BetaInfo {
    pub fn new(key: &ConfigKey, beta: &Gray, config: Option<&Config>) -> Self {
        BetaInfo {
            id: config.map_or(0, |c| c.id).to_string(),
            data_id: key.data_id.clone(),
            group: key.group.clone(),
            content: beta.content.to_string(),
            md5: beta.md5.to_string(),
            encrypted_data_key: data_key_text(&beta.encrypted_data_key).to_string(),
            tenant: key.namespace.clone(),
            app_name: config.map_or_else(String::new, |c| c.app_name.clone()),
            config_type: config.map_or_else(|| "text".into(), |c| c.config_type.clone()),
            beta_ips: beta.beta_ips().join(","),
        }
    }
}

/// Nacos' `publishType` of a history row: `formal`, or `gray` for a row of
/// a gray version (Nacos 2.5+; v1, v2 and v3 rows all carry it).
pub fn publish_type(row: &HistoryRow) -> &'static str {
    if row.gray_name.is_empty() {
        "formal"
    } else {
        "gray"
    }
}

/// A history row (Nacos' `ConfigHistoryInfo`). `grayName` names the gray
/// version of a gray row (null for the formal config); Tacos keeps no
/// per-row metadata, so `extInfo` is null.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryItem {
    pub id: String,
    pub last_id: i64,
    pub data_id: String,
    pub group: String,
    pub tenant: String,
    pub app_name: String,
    pub md5: String,
    pub content: String,
    pub src_ip: String,
    pub src_user: String,
    pub op_type: &'static str,
    pub publish_type: &'static str,
    pub gray_name: Option<String>,
    pub ext_info: Option<String>,
    pub created_time: String,
    pub last_modified_time: String,
    /// The version's `encryptedDataKey` ("" for none), as Nacos'
    /// `ConfigHistoryInfo`.
    pub encrypted_data_key: String,
}

impl HistoryItem {
    pub fn new(row: &HistoryRow) -> Self {
        HistoryItem {
            id: row.id.to_string(),
            last_id: if row.last_id == 0 {
                -1
            } else {
                row.last_id as i64
            },
            data_id: row.key.data_id.clone(),
            group: row.key.group.clone(),
            tenant: row.key.namespace.clone(),
            app_name: row.app_name.clone(),
            md5: row.md5.to_string(),
            content: row.content.to_string(),
            src_ip: row.src_ip.to_string(),
            src_user: row.src_user.to_string(),
            op_type: row.op.code(),
            publish_type: publish_type(row),
            gray_name: (!row.gray_name.is_empty()).then(|| row.gray_name.clone()),
            ext_info: None,
            created_time: iso_time(row.created_time),
            last_modified_time: iso_time(row.last_modified_time),
            encrypted_data_key: data_key_text(&row.encrypted_data_key).to_string(),
        }
    }
}

/// A config in `history/configs` listings.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigInfoWrapper {
    pub id: String,
    pub data_id: String,
    pub group: String,
    pub tenant: String,
    pub app_name: String,
    #[serde(rename = "type")]
    pub config_type: String,
    pub last_modified: i64,
}

impl ConfigInfoWrapper {
    pub fn new(key: &ConfigKey, c: &Config) -> Self {
        ConfigInfoWrapper {
            id: c.id.to_string(),
            data_id: key.data_id.clone(),
            group: key.group.clone(),
            tenant: key.namespace.clone(),
            app_name: c.app_name.clone(),
            config_type: c.config_type.clone(),
            last_modified: c.modify_time,
        }
    }
}

/// `Content-Type` by config type, as Nacos sends it.
pub fn content_type_for(config_type: &str) -> &'static str {
    match config_type {
        "json" => "application/json;charset=UTF-8",
        "xml" => "application/xml;charset=UTF-8",
        "html" => "text/html;charset=UTF-8",
        _ => "text/plain;charset=UTF-8",
    }
}

#[cfg(test)]
mod tests {
    use super::http_date;

    #[test]
    fn http_dates() {
        assert_eq!(
            http_date(1_796_135_453_123),
            "Tue, 01 Dec 2026 14:30:53 GMT"
        );
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(-5), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(i64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
    }
}
