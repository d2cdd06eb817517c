//! What the Nacos v1 and v2 config routes share: the key and publish
//! parameters, the search page and the history pages. (The rules behind
//! them are in `tacos_app`; this is parsing and rendering.)

use super::params::{config_filter, paging, Params};
use super::render::{ConfigInfoWrapper, ConfigItem, HistoryItem, Page};
use tacos_app::auth::Principal;
use tacos_app::query::{
    readable_configs, search_configs, visible_history_row, ConfigFilter, HistoryLookup,
};
use tacos_app::service::{beta_list, checked_key, PublishRequest};
use tacos_core::command::Expect;
use tacos_core::validate::{self, InvalidInput};
use tacos_state::{canonical_namespace, Config, ConfigKey, State};

/// The key named by `dataId`, `group` and a namespace parameter.
pub fn key_from(params: &Params, namespace_param: &str) -> Result<ConfigKey, InvalidInput> {
    let data_id = params.required("dataId")?;
    let group = params.required("group")?;
    checked_key(params.str(namespace_param), group, data_id)
}

/// `search=accurate|blur` over the configs of one namespace.
pub fn search(
    state: &State,
    principal: &Principal,
    params: &Params,
    mode: &str,
    namespace_param: &str,
) -> Result<Page<ConfigItem>, InvalidInput> {
    let blur = match mode {
        "accurate" => false,
        "blur" => true,
        other => return Err(InvalidInput::Other("search", other.to_string())),
    };
    let filter = config_filter(params, blur);
    let (page_no, page_size) = paging(params, 100)?;
    let namespace = params.str(namespace_param);
    validate::namespace(namespace)?;
    let namespace = canonical_namespace(namespace);
    let found: Vec<(&ConfigKey, &Config)> = search_configs(state, principal, namespace, filter)
        .map(|(k, c)| (k, c.as_ref()))
        .collect();
    let total = found.len();
    Ok(Page::of(
        found.into_iter().map(|(k, c)| ConfigItem::new(k, c)),
        total,
        page_no,
        page_size,
    ))
}

/// The filter of Nacos' export routes: `dataId` and `group` (v3:
/// `groupName`) match exactly unless they hold `*` wildcards (Nacos'
/// `LIKE` of `findAllConfigInfo4Export`), `appName` exactly.
pub fn export_filter(params: &Params) -> ConfigFilter<'_> {
    let data_id = params.str("dataId").trim();
    let group = params.any(&["groupName", "group"]).trim();
    ConfigFilter {
        data_id,
        group,
        // Nacos' LIKE: `*` wildcards, a name without `*` only itself.
        blur: true,
        app_name: params.str("appName"),
        ..Default::default()
    }
}

/// A publish request from Nacos parameters (v1 and v2 differ only in the
/// namespace parameter's name).
pub fn publish_request(
    params: &Params,
    namespace_param: &str,
    beta_ips: Option<String>,
    cas_md5: Option<String>,
) -> Result<PublishRequest, InvalidInput> {
    Ok(PublishRequest {
        namespace: params.str(namespace_param).to_string(),
        group: params.required("group")?.to_string(),
        data_id: params.required("dataId")?.to_string(),
        content: params.required("content")?.to_string(),
        config_type: params.str("type").to_string(),
        desc: params.str("desc").to_string(),
        app_name: params.get("appName").map(str::to_string),
        tags: params
            .get("config_tags")
            .or_else(|| params.get("configTags"))
            .map(str::to_string),
        cas_md5,
        expect: Expect::Any,
        tag: params.str("tag").to_string(),
        beta_ips: beta_list(&beta_ips.unwrap_or_default()),
        encrypted_data_key: params.str("encryptedDataKey").to_string(),
    })
}

/// Rows of one config, newest first, paged.
pub fn history_page(
    state: &State,
    key: &ConfigKey,
    page_no: u64,
    page_size: u64,
) -> Page<HistoryItem> {
    let rows = state.history(key);
    let total = rows.len();
    let page = rows
        .rev()
        .skip(Page::<HistoryItem>::skipped(page_no, page_size))
        .take(page_size as usize)
        .map(|row| HistoryItem::new(&row))
        .collect();
    Page::window(page, total, page_no, page_size)
}

/// Opens a read of the config (or configs) a v1/v2 request names: its
/// namespace parameter, `group` and `dataId`, as sent.
pub fn named_read(
    principal: &Principal,
    params: &Params,
    namespace_param: &str,
) -> Result<(), tacos_app::auth::AuthError> {
    tacos_app::read::Reader::new(principal).named(
        params.str(namespace_param),
        params.str("group"),
        params.str("dataId"),
    )
}

/// Why `history/configs` lists nothing.
pub enum ListError {
    Denied(tacos_app::auth::AuthError),
    Invalid(InvalidInput),
}

/// `history/configs`: the configs of `namespace` (as sent) `principal` may
/// read; refused when it may read nothing there.
pub fn namespace_configs(
    state: &State,
    principal: &Principal,
    namespace: &str,
) -> Result<Vec<ConfigInfoWrapper>, ListError> {
    tacos_app::read::Reader::new(principal)
        .list(namespace)
        .map_err(ListError::Denied)?;
    validate::namespace(namespace).map_err(ListError::Invalid)?;
    Ok(
        readable_configs(state, principal, canonical_namespace(namespace))
            .map(|(k, c)| ConfigInfoWrapper::new(k, c))
            .collect(),
    )
}

/// Why a history row lookup shows nothing.
pub enum RowLookupError {
    Invalid(InvalidInput),
    NotFound(String),
}

/// `history?nid=` (`HistoryLookup::This`) and `history/previous?id=`
/// (`Previous`): the row, if the principal may read it.
pub fn history_row(
    state: &State,
    principal: &Principal,
    params: &Params,
    lookup: HistoryLookup,
) -> Result<HistoryItem, RowLookupError> {
    let param = match lookup {
        HistoryLookup::This => "nid",
        HistoryLookup::Previous => "id",
    };
    let id = params
        .required_number(param)
        .map_err(RowLookupError::Invalid)?;
    visible_history_row(state, principal, id, lookup)
        .map(|row| HistoryItem::new(&row))
        .ok_or_else(|| {
            RowLookupError::NotFound(match lookup {
                HistoryLookup::This => format!("history {id} not exist"),
                HistoryLookup::Previous => format!("no history before {id}"),
            })
        })
}
