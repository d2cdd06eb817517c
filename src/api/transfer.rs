//! What Nacos' export, import and clone routes share across generations
//! (v1 `?export=true`, `?exportV2=true`, `?import=true`, `?clone=true`;
//! v3 `/nacos/v3/admin/cs/config/export`, `/import`, `/clone`): parsing
//! their inputs, one call of the app's transfer rules and
//! `ConfigService::import_items`, and the parts of the answer that are the
//! same (the zip download, `saveResult`). Each generation renders its
//! envelope and codes ([`Refused`]).

use actix_web::HttpResponse;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::api::app_state::AppState;
use tacos_app::auth::Principal;
use tacos_app::service::{
    clone_items, Caller, CloneTarget, ImportError, ImportOutcome, ServiceError,
};
use tacos_app::transfer::{self, any_content, EntryProblem, Item, Layout, Policy, TransferError};
use tacos_state::canonical_namespace;

/// Nacos' import/clone refusals that are answers, not HTTP errors (status
/// 200, a code of their own, `data` with `succCount: 0` mostly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coded {
    NamespaceNotExist,
    MetadataIllegal,
    ParsingDataFailed,
    DataEmpty,
    NoSelectedConfig,
}

impl Coded {
    /// Nacos 1/2's `ResultCodeEnum` (v1 routes): code and message.
    pub fn v1(self) -> (u32, &'static str) {
        match self {
            Coded::NamespaceNotExist => (100001, "目标 namespace 不存在"),
            Coded::MetadataIllegal => (100002, "导入的元数据非法"),
            Coded::ParsingDataFailed => (100004, "解析数据失败"),
            Coded::DataEmpty => (100005, "导入的文件数据为空"),
            Coded::NoSelectedConfig => (100006, "没有选择任何配置"),
        }
    }

    /// Nacos 3's `ErrorCode` (v3 routes).
    pub fn v3(self) -> (u32, &'static str) {
        match self {
            Coded::NamespaceNotExist => (22001, "namespace not exist"),
            Coded::MetadataIllegal => (100002, "Imported metadata is invalid"),
            Coded::ParsingDataFailed => (100004, "Failed to parse data"),
            Coded::DataEmpty => (100005, "Imported file data is empty"),
            Coded::NoSelectedConfig => (100006, "No configuration selected"),
        }
    }
}

/// Why an import or clone wrote nothing, for the route to render.
#[derive(Debug)]
pub enum Refused {
    /// Nacos' coded answer, with its `data`.
    Coded(Coded, Value),
    /// Bad input (400).
    Invalid(String),
    /// The caller may not read or write a namespace (the guard's 403).
    Denied(Box<HttpResponse>),
    /// The write was refused or failed.
    Service(ServiceError),
}

fn succ_zero() -> Value {
    json!({ "succCount": 0 })
}

/// Nacos' `SameConfigPolicy` as Spring binds it: `ABORT` (also when absent
/// or blank), `SKIP`, `OVERWRITE`, by exact name. `Err` holds the value.
pub fn policy(raw: Option<&str>) -> Result<Policy, String> {
    match raw.map(str::trim) {
        None | Some("") | Some("ABORT") => Ok(Policy::Abort),
        Some("SKIP") => Ok(Policy::Skip),
        Some("OVERWRITE") => Ok(Policy::Overwrite),
        Some(_) => Err(raw.unwrap_or_default().to_string()),
    }
}

/// The zip download of Nacos' export routes: the configs of `namespace`
/// the filter and `ids` pick (an empty zip when none does, as Nacos), in
/// `layout`.
/// The zip holds only the configs `principal` may read (the caller has
/// opened the list: `tacos_app::read::Reader::list`).
pub async fn export(
    app: &AppState,
    principal: &Principal,
    namespace: &str,
    filter: tacos_app::query::ConfigFilter<'_>,
    ids: &[u64],
    layout: Layout,
) -> Result<HttpResponse, String> {
    let items = transfer::export_items(
        &app.service.state(),
        principal,
        canonical_namespace(namespace),
        filter,
        ids,
    );
    let bytes = actix_web::web::block(move || transfer::write_zip(&items, layout))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let stamp = chrono::Local::now().format("%Y%m%d%H%M%S");
    Ok(HttpResponse::Ok()
        .content_type("application/zip")
        .insert_header((
            "Content-Disposition",
            format!("attachment;filename=nacos_config_export_{stamp}.zip"),
        ))
        .body(bytes))
}

/// `{dataId, group}` of a `group/dataId` entry.
fn key_item(entry: &str) -> Value {
    let (group, data_id) = entry.split_once('/').unwrap_or(("", entry));
    json!({ "dataId": data_id, "group": group })
}

/// Nacos' `saveResult`: `succCount`, `skipCount`, and `failData` /
/// `skipData` (`[{dataId, group}]`) when not empty.
fn save_result(succ: usize, fail: &[String], skip: &[String]) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("succCount".into(), succ.into());
    out.insert("skipCount".into(), skip.len().into());
    if !fail.is_empty() {
        out.insert(
            "failData".into(),
            fail.iter().map(|e| key_item(e)).collect(),
        );
    }
    if !skip.is_empty() {
        out.insert(
            "skipData".into(),
            skip.iter().map(|e| key_item(e)).collect(),
        );
    }
    out
}

/// Runs one import or clone of `items` into `namespace` and gives Nacos'
/// `saveResult`. Under `ABORT` a conflict writes nothing: the conflicting
/// configs are `failData`, the others `skipData`, `succCount` 0.
async fn import_items(
    app: &AppState,
    namespace: &str,
    items: Vec<Item>,
    policy: Policy,
    caller: &Caller,
) -> Result<Map<String, Value>, Refused> {
    match app
        .service
        .import_items(namespace, items, policy, caller)
        .await
    {
        Ok(ImportOutcome {
            created,
            overwritten,
            skipped,
            unchanged,
        }) => Ok(save_result(
            created.len() + overwritten.len() + unchanged.len(),
            &[],
            &skipped,
        )),
        Err(ImportError::Conflicts { conflicts, others }) => {
            Ok(save_result(0, &conflicts, &others))
        }
        Err(ImportError::NamespaceNotFound(_)) => {
            Err(Refused::Coded(Coded::NamespaceNotExist, succ_zero()))
        }
        Err(ImportError::Transfer(TransferError::Empty)) => {
            Err(Refused::Coded(Coded::DataEmpty, succ_zero()))
        }
        Err(ImportError::Transfer(e)) => Err(Refused::Invalid(e.to_string())),
        Err(ImportError::Service(e)) => Err(Refused::Service(e)),
    }
}

/// How an unrecognized entry is named in `unrecognizedData` (Nacos'
/// wording: Chinese on v1, English on v3).
fn unrecognized_name(problem: &EntryProblem, v1: bool) -> String {
    let (not_in_metadata, not_in_file) = if v1 {
        ("未在元数据中找到: ", "未在文件中找到: ")
    } else {
        ("Item not found in metadata: ", "Item not found in file: ")
    };
    if problem.reason.starts_with("not listed in") {
        format!("{not_in_metadata}{}", problem.entry)
    } else if problem.reason.starts_with("listed in") {
        format!("{not_in_file}{}", problem.entry)
    } else {
        problem.entry.clone()
    }
}

fn deny(e: tacos_app::auth::AuthError) -> Refused {
    Refused::Denied(Box::new(super::guard::refusal(&e)))
}

/// Where an import or clone goes ([`ConfigService::import_target`]: a
/// valid namespace the caller may write in, that exists), before its items
/// are read.
///
/// [`ConfigService::import_target`]: tacos_app::service::ConfigService::import_target
fn target(app: &AppState, namespace: &str, caller: &Caller) -> Result<(), Refused> {
    match app.service.import_target(namespace, caller) {
        Ok(_) => Ok(()),
        Err(ImportError::NamespaceNotFound(_)) => {
            Err(Refused::Coded(Coded::NamespaceNotExist, succ_zero()))
        }
        Err(ImportError::Service(ServiceError::Invalid(e))) => Err(Refused::Invalid(e.to_string())),
        Err(ImportError::Service(ServiceError::Denied(e))) => Err(deny(e)),
        Err(ImportError::Service(e)) => Err(Refused::Service(e)),
        Err(e) => Err(Refused::Invalid(e.to_string())),
    }
}

/// A zip import (`file`) into `namespace`: read with Nacos' rules (keys,
/// blank, size; no syntax check), then [`import_items`]; entries that are
/// not configs are `unrecognizedData`. `v1` picks Nacos' wording.
pub async fn import_zip(
    app: &AppState,
    caller: &Caller,
    namespace: &str,
    policy: Policy,
    file: Option<Vec<u8>>,
    v1: bool,
) -> Result<Map<String, Value>, Refused> {
    let Some(file) = file else {
        return Err(Refused::Coded(Coded::DataEmpty, json!({})));
    };
    target(app, namespace, caller)?;
    let max = app.service.max_content_size();
    let unzipped = actix_web::web::block(move || transfer::read_zip(&file, max, &any_content))
        .await
        .map_err(|e| Refused::Invalid(e.to_string()))?;
    let unzipped = match unzipped {
        Ok(unzipped) => unzipped,
        Err(TransferError::Zip(_) | TransferError::Io(_)) => {
            return Err(Refused::Coded(Coded::ParsingDataFailed, succ_zero()))
        }
        Err(TransferError::Metadata { .. }) => {
            return Err(Refused::Coded(Coded::MetadataIllegal, succ_zero()))
        }
        Err(e) => return Err(Refused::Invalid(e.to_string())),
    };
    if let Some(problem) = unzipped.invalid.first() {
        return Err(Refused::Invalid(format!(
            "{}: {}",
            problem.entry, problem.reason
        )));
    }
    let mut result = import_items(app, namespace, unzipped.items, policy, caller).await?;
    if !unzipped.unrecognized.is_empty() {
        result.insert(
            "unrecognizedCount".into(),
            unzipped.unrecognized.len().into(),
        );
        result.insert(
            "unrecognizedData".into(),
            unzipped
                .unrecognized
                .iter()
                .map(|p| json!({ "itemName": unrecognized_name(p, v1) }))
                .collect(),
        );
    }
    Ok(result)
}

/// One config of a v1 clone body (`SameNamespaceCloneConfigBean`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CloneBeanV1 {
    #[serde(default, deserialize_with = "config_id")]
    cfg_id: Option<u64>,
    #[serde(default)]
    data_id: Option<String>,
    #[serde(default)]
    group: Option<String>,
}

/// One config of a v3 clone body (`ConfigCloneInfo`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CloneInfoV3 {
    #[serde(default, deserialize_with = "config_id")]
    config_id: Option<u64>,
    #[serde(default)]
    target_group_name: Option<String>,
    #[serde(default)]
    target_data_id: Option<String>,
}

/// A config id as a number or as the string the list routes answer (ids are
/// strings there, as in Nacos): Nacos' Jackson takes both for a `Long`.
fn config_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Number(u64),
        Text(String),
    }
    match Option::<Id>::deserialize(d)? {
        None => Ok(None),
        Some(Id::Number(n)) => Ok(Some(n)),
        Some(Id::Text(t)) => t
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("config id {t:?} is not a number"))),
    }
}

/// The clone targets of a JSON body (v1: `[{cfgId, dataId, group}]`, v3:
/// `[{configId, targetGroupName, targetDataId}]`); `null` items and items
/// without an id are left out. `Err` says why the body is no such list.
pub fn clone_targets(body: &[u8], v1: bool) -> Result<Vec<CloneTarget>, String> {
    let targets = if v1 {
        serde_json::from_slice::<Vec<Option<CloneBeanV1>>>(body)
            .map_err(|e| format!("the body is not a JSON list of configs: {e}"))?
            .into_iter()
            .flatten()
            .filter_map(|b| {
                Some(CloneTarget {
                    id: b.cfg_id?,
                    group: b.group.unwrap_or_default(),
                    data_id: b.data_id.unwrap_or_default(),
                })
            })
            .collect()
    } else {
        serde_json::from_slice::<Vec<Option<CloneInfoV3>>>(body)
            .map_err(|e| format!("the body is not a JSON list of configs: {e}"))?
            .into_iter()
            .flatten()
            .filter_map(|b| {
                Some(CloneTarget {
                    id: b.config_id?,
                    group: b.target_group_name.unwrap_or_default(),
                    data_id: b.target_data_id.unwrap_or_default(),
                })
            })
            .collect()
    };
    Ok(targets)
}

/// A clone of `targets` into `namespace` (the caller must read each
/// source and write the target), as one import.
pub async fn clone(
    app: &AppState,
    caller: &Caller,
    namespace: &str,
    policy: Policy,
    targets: &[CloneTarget],
) -> Result<Map<String, Value>, Refused> {
    if targets.is_empty() {
        return Err(Refused::Coded(Coded::NoSelectedConfig, succ_zero()));
    }
    target(app, namespace, caller)?;
    let items = clone_items(&app.service.state(), &caller.principal, targets).map_err(deny)?;
    if items.is_empty() {
        return Err(Refused::Coded(Coded::DataEmpty, succ_zero()));
    }
    for item in &items {
        tacos_app::service::checked_key(namespace, &item.group, &item.data_id)
            .map_err(|e| Refused::Invalid(e.to_string()))?;
    }
    import_items(app, namespace, items, policy, caller).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_as_spring_binds_them() {
        assert_eq!(policy(None), Ok(Policy::Abort));
        assert_eq!(policy(Some("")), Ok(Policy::Abort));
        assert_eq!(policy(Some("OVERWRITE")), Ok(Policy::Overwrite));
        assert_eq!(policy(Some("skip")), Err("skip".into()));
    }

    #[test]
    fn clone_bodies() {
        let v1 = clone_targets(
            br#"[{"cfgId": 3, "dataId": "b", "group": ""}, null, {"dataId": "x"}]"#,
            true,
        )
        .unwrap();
        assert_eq!(v1.len(), 1);
        assert_eq!((v1[0].id, v1[0].data_id.as_str()), (3, "b"));
        let v3 = clone_targets(br#"[{"configId": 4, "targetGroupName": "G"}]"#, false).unwrap();
        // Ids as the list routes answer them (strings) are taken too.
        let text = clone_targets(br#"[{"configId": "4", "targetGroupName": "G"}]"#, false).unwrap();
        assert_eq!(text[0].id, 4);
        assert!(clone_targets(br#"[{"configId": "four"}]"#, false).is_err());
        assert_eq!((v3[0].id, v3[0].group.as_str()), (4, "G"));
        assert!(clone_targets(b"{}", true).is_err());
    }

    #[test]
    fn save_results_as_nacos_writes_them() {
        let result = save_result(0, &["G/a".into()], &["G/b".into()]);
        assert_eq!(
            Value::Object(result),
            json!({"succCount": 0, "skipCount": 1, "failData": [{"dataId": "a", "group": "G"}], "skipData": [{"dataId": "b", "group": "G"}]})
        );
    }
}
