//! The answer shapes of Nacos 3's API (`com.alibaba.nacos.api.config.model`,
//! `api.model.response.Namespace`, `api.config.remote.response
//! .ConfigQueryResponse`), field for field as Jackson writes them: nulls
//! included, ids as strings, times as epoch milliseconds. The public
//! namespace is `public` here (Nacos 3's default namespace id), never "".

use std::collections::BTreeMap;

use serde::Serialize;

use tacos_core::shown_namespace;
use tacos_state::{data_key_text, Config, ConfigKey, Gray, HistoryRow};

/// `ConfigBasicInfo`: a config in lists.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigBasicInfo {
    pub id: String,
    pub namespace_id: String,
    pub group_name: String,
    pub data_id: String,
    pub md5: Option<String>,
    #[serde(rename = "type")]
    pub config_type: Option<String>,
    pub app_name: String,
    pub create_time: i64,
    pub modify_time: i64,
}

impl ConfigBasicInfo {
    pub fn of(key: &ConfigKey, config: &Config) -> Self {
        ConfigBasicInfo {
            id: config.id.to_string(),
            namespace_id: shown_namespace(&key.namespace).to_string(),
            group_name: key.group.clone(),
            data_id: key.data_id.clone(),
            md5: Some(config.md5.to_string()),
            config_type: Some(config.config_type.clone()),
            app_name: config.app_name.clone(),
            create_time: config.create_time,
            modify_time: config.modify_time,
        }
    }
}

/// Nacos stores no description or tags when none were given: null.
fn unless_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

/// `ConfigDetailInfo`: one config with its content and metadata.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigDetailInfo {
    #[serde(flatten)]
    pub basic: ConfigBasicInfo,
    pub content: String,
    pub desc: Option<String>,
    pub encrypted_data_key: String,
    pub create_user: Option<String>,
    pub create_ip: Option<String>,
    pub config_tags: Option<String>,
}

impl ConfigDetailInfo {
    pub fn of(key: &ConfigKey, config: &Config) -> Self {
        ConfigDetailInfo {
            basic: ConfigBasicInfo::of(key, config),
            content: config.content.to_string(),
            desc: unless_empty(&config.desc),
            encrypted_data_key: data_key_text(&config.encrypted_data_key).to_string(),
            create_user: Some(config.src_user.to_string()),
            create_ip: Some(config.src_ip.to_string()),
            config_tags: unless_empty(&config.tags),
        }
    }
}

/// `ConfigGrayInfo` of a gray version. Nacos fills it from its gray
/// table, which keeps no description, IP or tags: those are null here too.
/// Type and app are the gray's (the config's for a beta published before
/// the gray model, which kept neither); the id is the config's (Tacos keeps
/// no separate gray id).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigGrayInfo {
    #[serde(flatten)]
    pub detail: ConfigDetailInfo,
    pub gray_name: String,
    pub gray_rule: String,
}

impl ConfigGrayInfo {
    pub fn of(key: &ConfigKey, config: Option<&Config>, gray: &Gray) -> Self {
        let or_config = |own: &str, field: fn(&Config) -> &str, default: &str| {
            if own.is_empty() {
                config.map_or(default, field).to_string()
            } else {
                own.to_string()
            }
        };
        ConfigGrayInfo {
            detail: ConfigDetailInfo {
                basic: ConfigBasicInfo {
                    id: config.map_or(0, |c| c.id).to_string(),
                    namespace_id: shown_namespace(&key.namespace).to_string(),
                    group_name: key.group.clone(),
                    data_id: key.data_id.clone(),
                    md5: Some(gray.md5.to_string()),
                    config_type: Some(or_config(&gray.config_type, |c| &c.config_type, "text")),
                    app_name: or_config(&gray.app_name, |c| &c.app_name, ""),
                    create_time: gray.create_time,
                    modify_time: gray.modify_time,
                },
                content: gray.content.to_string(),
                desc: None,
                encrypted_data_key: data_key_text(&gray.encrypted_data_key).to_string(),
                create_user: Some(gray.src_user.to_string()),
                create_ip: None,
                config_tags: None,
            },
            gray_name: gray.name.clone(),
            gray_rule: gray.rule_json(),
        }
    }
}

/// `ConfigHistoryBasicInfo`: a history row in lists. Rows keep no type
/// (null, as in Nacos); `createTime`/`modifyTime` are the row's times.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigHistoryBasicInfo {
    #[serde(flatten)]
    pub basic: ConfigBasicInfo,
    pub src_ip: String,
    pub src_user: String,
    pub op_type: &'static str,
    pub publish_type: &'static str,
}

impl ConfigHistoryBasicInfo {
    pub fn of(row: &HistoryRow) -> Self {
        ConfigHistoryBasicInfo {
            basic: ConfigBasicInfo {
                id: row.id.to_string(),
                namespace_id: shown_namespace(&row.key.namespace).to_string(),
                group_name: row.key.group.clone(),
                data_id: row.key.data_id.clone(),
                md5: Some(row.md5.to_string()),
                config_type: None,
                app_name: row.app_name.clone(),
                create_time: row.created_time,
                modify_time: row.last_modified_time,
            },
            src_ip: row.src_ip.to_string(),
            src_user: row.src_user.to_string(),
            op_type: row.op.code(),
            publish_type: crate::api::render::publish_type(row),
        }
    }
}

/// `ConfigHistoryDetailInfo`: one history row with its content. `grayName`
/// names the gray version of a gray row (null for the formal config);
/// Tacos keeps no per-row metadata, so `extInfo` is null.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigHistoryDetailInfo {
    #[serde(flatten)]
    pub basic: ConfigHistoryBasicInfo,
    pub content: String,
    pub encrypted_data_key: String,
    pub gray_name: Option<String>,
    pub ext_info: Option<String>,
}

impl ConfigHistoryDetailInfo {
    pub fn of(row: &HistoryRow) -> Self {
        ConfigHistoryDetailInfo {
            basic: ConfigHistoryBasicInfo::of(row),
            content: row.content.to_string(),
            encrypted_data_key: data_key_text(&row.encrypted_data_key).to_string(),
            gray_name: (!row.gray_name.is_empty()).then(|| row.gray_name.clone()),
            ext_info: None,
        }
    }
}

/// `ConfigQueryResponse` of the client route: the gRPC response object,
/// serialized with its base `Response` fields.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigQueryResponse<'a> {
    pub result_code: u32,
    pub error_code: u32,
    pub message: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub content: &'a str,
    pub encrypted_data_key: &'a str,
    pub content_type: &'a str,
    pub md5: &'a str,
    pub last_modified: i64,
    pub tag: Option<&'a str>,
    pub beta: bool,
    pub success: bool,
}

impl<'a> ConfigQueryResponse<'a> {
    pub fn found(
        content: &'a str,
        content_type: &'a str,
        md5: &'a str,
        at: i64,
        beta: bool,
    ) -> Self {
        ConfigQueryResponse {
            result_code: 200,
            error_code: 0,
            message: None,
            request_id: None,
            content,
            encrypted_data_key: "",
            content_type,
            md5,
            last_modified: at,
            tag: None,
            beta,
            success: true,
        }
    }
}

/// `ConfigListenerInfo`: who listens to a config, client IP → the md5 it
/// holds.
#[derive(Debug, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigListenerInfo {
    pub query_type: String,
    pub listeners_status: BTreeMap<String, String>,
}

/// `Namespace`: type 0 is the public namespace, 1 a custom one (Nacos 3's
/// `NamespaceTypeEnum`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Namespace {
    pub namespace: String,
    pub namespace_show_name: String,
    pub namespace_desc: String,
    pub quota: u32,
    pub config_count: usize,
    #[serde(rename = "type")]
    pub kind: u8,
}

impl Namespace {
    /// As Nacos 3 shows it: public is `public`, type 0; custom type 1.
    pub fn of(n: tacos_app::query::NamespaceSummary) -> Self {
        Namespace {
            kind: if n.is_public() { 0 } else { 1 },
            namespace: shown_namespace(&n.id).to_string(),
            namespace_show_name: n.name,
            namespace_desc: n.desc,
            quota: 200,
            config_count: n.config_count,
        }
    }

    /// As Nacos 2 shows it: public is `""`, type 0; custom type 2
    /// (`NamespaceTypeEnum.CUSTOM` there).
    pub fn of_v2(n: tacos_app::query::NamespaceSummary) -> Self {
        Namespace {
            kind: if n.is_public() { 0 } else { 2 },
            namespace: n.id,
            namespace_show_name: n.name,
            namespace_desc: n.desc,
            quota: 200,
            config_count: n.config_count,
        }
    }
}
