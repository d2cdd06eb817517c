//! Import and export of configs in the Nacos zip layout.
//!
//! A zip holds one entry per config, named `group/dataId`, with the content
//! as its bytes, and a metadata entry: Nacos 2's `.metadata.yml`
//!
//! ```yaml
//! metadata:
//! - appName: ''
//!   dataId: app.yaml
//!   desc: ''
//!   group: DEFAULT_GROUP
//!   type: yaml
//! ```
//!
//! (what the console, `exportV2` and Nacos 3's export write, so Nacos
//! imports Tacos' zips) or Nacos 1's `.meta.yml` (lines
//! `group.dataId.app=appName`, the last `.` of the dataId written `~`;
//! what Nacos' v1 `export=true` writes, only when some config has an app),
//! both read and written ([`Layout`]). Entries that fit neither (other
//! folders, names with more than one `/`) are reported as unrecognized, as
//! Nacos does.
//!
//! An import is checked whole before anything is written: every key, every
//! content (blank, too large, not UTF-8, or not parsing as its declared
//! type, where the caller checks types: the console does) and, with the
//! `abort` policy, every conflict with an existing config. One bad entry
//! refuses the whole zip; nothing is written. The pure parts live here
//! (read, check, plan, write a zip) so they are tested without a server;
//! [`ConfigService::import_items`](crate::service::ConfigService::import_items)
//! runs a plan (an import, a clone) as one write.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Cursor, Read, Write};

use serde::{Deserialize, Serialize};

use crate::auth::Principal;
use crate::query::{search_configs, ConfigFilter};
use tacos_core::validate;
use tacos_state::State;

/// Nacos 2's metadata entry.
pub const METADATA: &str = ".metadata.yml";
/// Nacos 1's metadata entry (app names only).
pub const METADATA_V1: &str = ".meta.yml";
/// Most entries one zip may hold.
pub const MAX_ENTRIES: usize = 10_000;
/// Most bytes a metadata entry may hold.
pub const MAX_METADATA_BYTES: usize = 16 * 1024 * 1024;
/// Most bytes all entries of one zip may hold, uncompressed. An import is
/// one write of at most [`MAX_IMPORT_BYTES`](crate::service::MAX_IMPORT_BYTES)
/// (the service says so if the configs still come to more).
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Why a zip cannot be imported (or written).
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("not a readable zip file: {0}")]
    Zip(#[from] zip::result::ZipError),
    #[error("reading the zip failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the zip holds more than {MAX_ENTRIES} entries")]
    TooManyEntries,
    #[error("the zip holds more than {} MiB uncompressed", MAX_TOTAL_BYTES / 1024 / 1024)]
    TooLarge,
    #[error("{name} is not valid metadata: {reason}")]
    Metadata { name: &'static str, reason: String },
    #[error("the zip holds no configs")]
    Empty,
    #[error("{} entries are invalid; nothing was imported", .0.len())]
    Invalid(Vec<EntryProblem>),
    #[error("{} configs already exist (policy abort); nothing was imported", .0.len())]
    Conflicts(Vec<String>),
    #[error("writing the zip failed: {0}")]
    Write(String),
}

/// One entry that cannot be imported, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryProblem {
    /// `group/dataId` (or the entry's name).
    pub entry: String,
    pub reason: String,
}

/// One config as it travels in a zip.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Item {
    pub group: String,
    pub data_id: String,
    pub content: String,
    /// As `validate::config_type` names it; `text` when no metadata says.
    pub config_type: String,
    pub desc: String,
    pub app_name: String,
}

impl Item {
    /// `group/dataId`, the entry name.
    pub fn entry(&self) -> String {
        format!("{}/{}", self.group, self.data_id)
    }
}

/// What a zip held.
#[derive(Debug, Default)]
pub struct Unzipped {
    pub items: Vec<Item>,
    /// Entries that are not configs, with why.
    pub unrecognized: Vec<EntryProblem>,
    /// Entries that are configs but cannot be imported, with why.
    pub invalid: Vec<EntryProblem>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Metadata {
    #[serde(default)]
    metadata: Vec<MetadataItem>,
}

/// Field order as Nacos writes it (alphabetical).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct MetadataItem {
    app_name: Option<String>,
    data_id: String,
    desc: Option<String>,
    group: String,
    #[serde(rename = "type")]
    config_type: Option<String>,
}

/// Which metadata entry a zip gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Nacos 1's `.meta.yml` (app names only; left out when no config has
    /// one), lines ending `\r\n` as Nacos writes them.
    Nacos1,
    /// Nacos 2's `.metadata.yml` (app, desc, type of every config).
    Nacos2,
}

/// The configs of `namespace` an export takes: those `filter` matches that
/// `principal` may read and, when `ids` is not empty, whose id is one of
/// them (Nacos' `findAllConfigInfo4Export`).
pub fn export_items(
    state: &State,
    principal: &Principal,
    namespace: &str,
    filter: ConfigFilter<'_>,
    ids: &[u64],
) -> Vec<Item> {
    search_configs(state, principal, namespace, filter)
        .filter(|(_, c)| ids.is_empty() || ids.contains(&c.id))
        .map(|(k, c)| Item {
            group: k.group.clone(),
            data_id: k.data_id.clone(),
            content: c.content.to_string(),
            config_type: c.config_type.clone(),
            desc: c.desc.clone(),
            app_name: c.app_name.clone(),
        })
        .collect()
}

/// Writes `items` as a Nacos zip: entries in `group/dataId` order, then
/// the metadata entry of `layout`.
pub fn write_zip(items: &[Item], layout: Layout) -> Result<Vec<u8>, TransferError> {
    let mut sorted: Vec<&Item> = items.iter().collect();
    sorted.sort_by(|a, b| (&a.group, &a.data_id).cmp(&(&b.group, &b.data_id)));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for item in &sorted {
        zip.start_file(item.entry(), options)?;
        zip.write_all(item.content.as_bytes())?;
    }
    if layout == Layout::Nacos1 {
        let lines: String = sorted
            .iter()
            .filter(|item| !item.app_name.trim().is_empty())
            .map(|item| {
                format!(
                    "{}={}\r\n",
                    v1_key(&item.group, &item.data_id),
                    item.app_name
                )
            })
            .collect();
        if !lines.is_empty() {
            zip.start_file(METADATA_V1, options)?;
            zip.write_all(lines.as_bytes())?;
        }
        return Ok(zip.finish()?.into_inner());
    }
    let metadata = Metadata {
        metadata: sorted
            .iter()
            .map(|item| MetadataItem {
                app_name: Some(item.app_name.clone()),
                data_id: item.data_id.clone(),
                desc: Some(item.desc.clone()),
                group: item.group.clone(),
                config_type: Some(item.config_type.clone()),
            })
            .collect(),
    };
    let yaml =
        serde_yaml_ng::to_string(&metadata).map_err(|e| TransferError::Write(e.to_string()))?;
    zip.start_file(METADATA, options)?;
    zip.write_all(yaml.as_bytes())?;
    Ok(zip.finish()?.into_inner())
}

/// Nacos 1's metadata key of a config: `group.dataId.app`, the dataId's
/// last `.` written `~`.
fn v1_key(group: &str, data_id: &str) -> String {
    let data_id = match data_id.rfind('.') {
        Some(at) => format!("{}~{}", &data_id[..at], &data_id[at + 1..]),
        None => data_id.to_string(),
    };
    format!("{group}.{data_id}.app")
}

/// What else a content must pass to be imported, given its type and the
/// content (the console checks syntax; Nacos' routes do not).
pub type ContentCheck<'a> = &'a (dyn Fn(&str, &str) -> Result<(), String> + Sync);

/// No check beyond Nacos' rules.
pub fn any_content(_: &str, _: &str) -> Result<(), String> {
    Ok(())
}

/// Reads a zip and checks every config in it: keys by Nacos' rules,
/// contents not blank, at most `max_content` bytes, UTF-8, and `check`.
pub fn read_zip(
    bytes: &[u8],
    max_content: usize,
    check: ContentCheck<'_>,
) -> Result<Unzipped, TransferError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))?;
    if archive.len() > MAX_ENTRIES {
        return Err(TransferError::TooManyEntries);
    }
    let mut out = Unzipped::default();
    // Entry name -> content (or why it cannot be read).
    let mut files: BTreeMap<(String, String), Result<String, String>> = BTreeMap::new();
    let mut metadata_v2: Option<String> = None;
    let mut metadata_v1: Option<String> = None;
    let mut total: u64 = 0;
    for index in 0..archive.len() {
        let mut file = archive.by_index(index)?;
        if file.is_dir() {
            continue;
        }
        let name = file.name()?.into_owned();
        // Never trust the declared size: read at most one byte past the
        // per-entry limit, and count what was really read.
        let mut raw = Vec::new();
        let entry_limit = match name.as_str() {
            METADATA | METADATA_V1 => MAX_METADATA_BYTES,
            _ => max_content,
        };
        let limit = entry_limit as u64 + 1;
        (&mut file).take(limit).read_to_end(&mut raw)?;
        total += raw.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(TransferError::TooLarge);
        }
        let text = if raw.len() as u64 >= limit {
            Err(validate::InvalidInput::ContentTooLarge(entry_limit).to_string())
        } else {
            String::from_utf8(raw).map_err(|_| "the content is not UTF-8 text".to_string())
        };
        match name.as_str() {
            METADATA => {
                metadata_v2 = Some(text.map_err(|reason| metadata_error(METADATA, reason))?)
            }
            METADATA_V1 => {
                metadata_v1 = Some(text.map_err(|reason| metadata_error(METADATA_V1, reason))?)
            }
            _ => match name.split('/').collect::<Vec<_>>().as_slice() {
                [group, data_id] if !group.is_empty() && !data_id.is_empty() => {
                    files.insert((group.to_string(), data_id.to_string()), text);
                }
                _ => out.unrecognized.push(EntryProblem {
                    entry: name.clone(),
                    reason: "not a group/dataId entry".into(),
                }),
            },
        }
    }
    let mut described: BTreeMap<(String, String), MetadataItem> = BTreeMap::new();
    if let Some(yaml) = &metadata_v2 {
        let parsed: Metadata =
            serde_yaml_ng::from_str(yaml).map_err(|e| metadata_error(METADATA, e.to_string()))?;
        // Nacos' `parseImportDataV2`: no items, or an item without a
        // dataId, a group or a type, refuses the whole import
        // (`METADATA_ILLEGAL`).
        if parsed.metadata.is_empty() {
            return Err(metadata_error(METADATA, "it lists no config".into()));
        }
        for item in parsed.metadata {
            let blank = |v: Option<&str>| v.is_none_or(|v| v.trim().is_empty());
            if item.data_id.trim().is_empty()
                || item.group.trim().is_empty()
                || blank(item.config_type.as_deref())
            {
                return Err(metadata_error(
                    METADATA,
                    "every item needs a dataId, a group and a type".into(),
                ));
            }
            let key = (item.group.clone(), item.data_id.clone());
            if !files.contains_key(&key) {
                out.unrecognized.push(EntryProblem {
                    entry: format!("{}/{}", key.0, key.1),
                    reason: format!("listed in {METADATA} but not in the zip"),
                });
            }
            described.insert(key, item);
        }
    }
    let app_names: BTreeMap<String, String> = metadata_v1
        .as_deref()
        .filter(|_| metadata_v2.is_none())
        .map(parse_v1_metadata)
        .transpose()?
        .unwrap_or_default();
    for ((group, data_id), content) in files {
        let entry = format!("{group}/{data_id}");
        let meta = described.remove(&(group.clone(), data_id.clone()));
        if metadata_v2.is_some() && meta.is_none() {
            out.unrecognized.push(EntryProblem {
                entry,
                reason: format!("not listed in {METADATA}"),
            });
            continue;
        }
        let meta = meta.unwrap_or_default();
        let item = Item {
            content: String::new(),
            config_type: validate::config_type(meta.config_type.as_deref().unwrap_or("text"))
                .to_string(),
            desc: meta.desc.unwrap_or_default(),
            app_name: meta
                .app_name
                .or_else(|| app_names.get(&v1_key(&group, &data_id)).cloned())
                .unwrap_or_default(),
            group,
            data_id,
        };
        let checked = content.and_then(|content| {
            check_item(&item, &content, max_content)?;
            check(&item.config_type, &content)?;
            Ok(content)
        });
        match checked {
            Ok(content) => out.items.push(Item { content, ..item }),
            Err(reason) => out.invalid.push(EntryProblem { entry, reason }),
        }
    }
    Ok(out)
}

fn metadata_error(name: &'static str, reason: String) -> TransferError {
    TransferError::Metadata { name, reason }
}

fn parse_v1_metadata(text: &str) -> Result<BTreeMap<String, String>, TransferError> {
    let mut map = BTreeMap::new();
    for line in text.split(['\r', '\n']).filter(|l| !l.trim().is_empty()) {
        match line.split_once('=') {
            Some((key, value)) if !value.contains('=') => {
                map.insert(key.trim().to_string(), value.trim().to_string());
            }
            _ => {
                return Err(metadata_error(
                    METADATA_V1,
                    format!("{line:?} is not group.dataId.app=appName"),
                ))
            }
        }
    }
    Ok(map)
}

/// Why `content` cannot be published as `item`, if it cannot.
fn check_item(item: &Item, content: &str, max_content: usize) -> Result<(), String> {
    validate::data_id(&item.data_id).map_err(|e| e.to_string())?;
    validate::group(&item.group).map_err(|e| e.to_string())?;
    validate::content(content, max_content).map_err(|e| e.to_string())?;
    Ok(())
}

/// What to do with a config that already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Refuse the whole import.
    Abort,
    /// Keep the existing config.
    Skip,
    /// Replace it.
    Overwrite,
}

impl Policy {
    pub fn parse(text: &str) -> Option<Policy> {
        match text.to_ascii_lowercase().as_str() {
            "" | "abort" => Some(Policy::Abort),
            "skip" => Some(Policy::Skip),
            "overwrite" => Some(Policy::Overwrite),
            _ => None,
        }
    }
}

/// What an import will write.
#[derive(Debug, Default)]
pub struct Plan {
    pub create: Vec<Item>,
    /// With the md5 the existing config had when planned (the write is a
    /// compare-and-set against it).
    pub overwrite: Vec<(Item, String)>,
    /// Existing configs kept (`skip`).
    pub skip: Vec<String>,
    /// Existing configs that already hold exactly this (nothing to write).
    pub unchanged: Vec<String>,
}

/// What an existing config holds, for planning.
#[derive(Debug, Clone)]
pub struct Existing {
    pub md5: String,
    pub content: String,
    pub config_type: String,
    pub desc: String,
    pub app_name: String,
}

/// Decides what to write. `existing` looks a config up by group and dataId
/// in the target namespace.
pub fn plan(
    items: Vec<Item>,
    policy: Policy,
    existing: impl Fn(&str, &str) -> Option<Existing>,
) -> Result<Plan, TransferError> {
    if items.is_empty() {
        return Err(TransferError::Empty);
    }
    let mut plan = Plan::default();
    let mut conflicts = Vec::new();
    let mut seen = BTreeSet::new();
    for item in items {
        if !seen.insert((item.group.clone(), item.data_id.clone())) {
            continue;
        }
        let Some(old) = existing(&item.group, &item.data_id) else {
            plan.create.push(item);
            continue;
        };
        let same = old.content == item.content
            && old.config_type == item.config_type
            && old.desc == item.desc
            && old.app_name == item.app_name;
        match policy {
            Policy::Abort => conflicts.push(item.entry()),
            Policy::Skip => plan.skip.push(item.entry()),
            Policy::Overwrite if same => plan.unchanged.push(item.entry()),
            Policy::Overwrite => plan.overwrite.push((item, old.md5)),
        }
    }
    if !conflicts.is_empty() {
        return Err(TransferError::Conflicts(conflicts));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(group: &str, data_id: &str, content: &str, config_type: &str) -> Item {
        Item {
            group: group.into(),
            data_id: data_id.into(),
            content: content.into(),
            config_type: config_type.into(),
            desc: format!("about {data_id}"),
            app_name: "shop".into(),
        }
    }

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn export_then_import_gives_the_same_items() {
        let items = vec![
            item("DEFAULT_GROUP", "b.json", "{\"b\": 1}", "json"),
            item("DEFAULT_GROUP", "a.yaml", "a: 1\n", "yaml"),
            item("OTHER", "c.properties", "c=3\n", "properties"),
            item("OTHER", "d", "plain text", "text"),
        ];
        let bytes = write_zip(&items, Layout::Nacos2).unwrap();
        let read = read_zip(&bytes, 1024, &any_content).unwrap();
        assert!(read.unrecognized.is_empty() && read.invalid.is_empty());
        let mut expected = items.clone();
        expected.sort_by(|a, b| (&a.group, &a.data_id).cmp(&(&b.group, &b.data_id)));
        assert_eq!(read.items, expected);
        // Deterministic: the same items make the same entries in the same order.
        let mut archive = zip::ZipArchive::new(Cursor::new(&bytes)).unwrap();
        let names: Vec<String> = (0..archive.len())
            .map(|i| archive.by_index(i).unwrap().name().unwrap().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "DEFAULT_GROUP/a.yaml",
                "DEFAULT_GROUP/b.json",
                "OTHER/c.properties",
                "OTHER/d",
                METADATA
            ]
        );
        let mut meta = String::new();
        archive
            .by_name(METADATA)
            .unwrap()
            .read_to_string(&mut meta)
            .unwrap();
        assert!(
            meta.starts_with("metadata:\n- appName: shop\n  dataId: a.yaml\n"),
            "{meta}"
        );
        assert_eq!(write_zip(&items, Layout::Nacos2).unwrap(), bytes);
        // Nacos 1's layout: app names in `.meta.yml`, read back the same
        // (types and descriptions are not carried).
        let v1 = write_zip(&items, Layout::Nacos1).unwrap();
        let read = read_zip(&v1, 1024, &any_content).unwrap();
        assert_eq!(read.items.len(), 4);
        assert!(read
            .items
            .iter()
            .all(|i| i.app_name == "shop" && i.config_type == "text"));
        let mut archive = zip::ZipArchive::new(Cursor::new(&v1)).unwrap();
        let mut meta = String::new();
        archive
            .by_name(METADATA_V1)
            .unwrap()
            .read_to_string(&mut meta)
            .unwrap();
        assert!(
            meta.starts_with("DEFAULT_GROUP.a~yaml.app=shop\r\n"),
            "{meta}"
        );
    }

    #[test]
    fn nacos_v1_zips_and_unrecognized_entries() {
        let bytes = zip_of(&[
            ("DEFAULT_GROUP/app.yaml", b"port: 1\n"),
            ("DEFAULT_GROUP/plain", b"x"),
            ("nested/dir/file", b"x"),
            ("top-level-file", b"x"),
            (METADATA_V1, b"DEFAULT_GROUP.app~yaml.app=shop\r\n"),
        ]);
        let read = read_zip(&bytes, 1024, &any_content).unwrap();
        assert_eq!(read.items.len(), 2);
        let app = read.items.iter().find(|i| i.data_id == "app.yaml").unwrap();
        assert_eq!(
            (app.app_name.as_str(), app.config_type.as_str()),
            ("shop", "text")
        );
        let entries: Vec<&str> = read.unrecognized.iter().map(|p| p.entry.as_str()).collect();
        assert_eq!(entries, ["nested/dir/file", "top-level-file"]);
        let bad = zip_of(&[("G/d", b"x"), (METADATA_V1, b"no equals sign\n")]);
        assert!(matches!(
            read_zip(&bad, 1024, &any_content),
            Err(TransferError::Metadata { .. })
        ));
    }

    #[test]
    fn v2_metadata_must_match_the_entries() {
        let bytes = zip_of(&[
            ("G/listed", b"a"),
            ("G/unlisted", b"b"),
            (
                METADATA,
                b"metadata:\n- dataId: listed\n  group: G\n  type: text\n- dataId: missing\n  group: G\n  type: json\n",
            ),
        ]);
        let read = read_zip(&bytes, 1024, &any_content).unwrap();
        assert_eq!(read.items.len(), 1);
        let reasons: Vec<String> = read
            .unrecognized
            .iter()
            .map(|p| format!("{}: {}", p.entry, p.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                "G/missing: listed in .metadata.yml but not in the zip",
                "G/unlisted: not listed in .metadata.yml"
            ]
        );
        let broken = zip_of(&[("G/a", b"a"), (METADATA, b"metadata: [unclosed\n")]);
        assert!(matches!(
            read_zip(&broken, 1024, &any_content),
            Err(TransferError::Metadata { .. })
        ));
    }

    /// As Nacos' `parseImportDataV2`: an item without a dataId, a group or
    /// a type, or no item at all, refuses the whole zip.
    #[test]
    fn v2_metadata_items_need_data_id_group_and_type() {
        for metadata in [
            &b"metadata:\n- dataId: a\n  group: G\n"[..],
            b"metadata:\n- dataId: a\n  group: G\n  type: ''\n",
            b"metadata:\n- dataId: a\n  type: text\n",
            b"metadata:\n- group: G\n  type: text\n",
            b"metadata:\n- dataId: a\n  group: G\n  type: text\n- dataId: b\n  group: G\n",
            b"metadata: []\n",
        ] {
            let bytes = zip_of(&[("G/a", b"a"), ("G/b", b"b"), (METADATA, metadata)]);
            assert!(
                matches!(
                    read_zip(&bytes, 1024, &any_content),
                    Err(TransferError::Metadata { .. })
                ),
                "{}",
                String::from_utf8_lossy(metadata)
            );
        }
    }

    #[test]
    fn bad_entries_are_reported_with_reasons() {
        let bytes = zip_of(&[
            ("G/bad id", b"x"),
            ("G/blank", b"  \n"),
            ("G/big", &[b'x'; 40]),
            ("G/latin1", &[0xe9, 0x74, 0xe9]),
            ("G/broken.json", b"{\"a\": }"),
            ("G/fine.json", b"{\"a\": 1}"),
            (
                METADATA,
                b"metadata:\n- {dataId: bad id, group: G, type: text}\n- {dataId: blank, group: G, type: text}\n- {dataId: big, group: G, type: text}\n- {dataId: latin1, group: G, type: text}\n- {dataId: broken.json, group: G, type: json}\n- {dataId: fine.json, group: G, type: json}\n",
            ),
        ]);
        let json = |config_type: &str, content: &str| match config_type {
            "json" if content.contains(": }") => Err("invalid json at line 1".to_string()),
            _ => Ok(()),
        };
        let read = read_zip(&bytes, 32, &json).unwrap();
        assert_eq!(read.items.len(), 1);
        let reasons: BTreeMap<&str, &str> = read
            .invalid
            .iter()
            .map(|p| (p.entry.as_str(), p.reason.as_str()))
            .collect();
        assert_eq!(reasons["G/bad id"], "invalid dataId : bad id");
        assert_eq!(reasons["G/blank"], "content is blank");
        assert_eq!(reasons["G/big"], "invalid content, over 32");
        assert_eq!(reasons["G/latin1"], "the content is not UTF-8 text");
        assert!(reasons["G/broken.json"].starts_with("invalid json at line 1"));
        assert!(matches!(
            read_zip(b"not a zip", 32, &any_content),
            Err(TransferError::Zip(_))
        ));
    }

    #[test]
    fn conflict_policies() {
        let items = vec![
            item("G", "new", "n", "text"),
            item("G", "same", "s", "text"),
            item("G", "changed", "c2", "text"),
        ];
        let existing = |_: &str, data_id: &str| {
            let (content, md5) = match data_id {
                "same" => ("s", "md5-same"),
                "changed" => ("c1", "md5-changed"),
                _ => return None,
            };
            Some(Existing {
                md5: md5.into(),
                content: content.into(),
                config_type: "text".into(),
                desc: format!("about {data_id}"),
                app_name: "shop".into(),
            })
        };
        match plan(items.clone(), Policy::Abort, existing) {
            Err(TransferError::Conflicts(keys)) => assert_eq!(keys, ["G/same", "G/changed"]),
            other => panic!("abort should refuse: {other:?}"),
        }
        let skip = plan(items.clone(), Policy::Skip, existing).unwrap();
        assert_eq!(skip.create.len(), 1);
        assert_eq!(skip.skip, ["G/same", "G/changed"]);
        assert!(skip.overwrite.is_empty());
        let over = plan(items, Policy::Overwrite, existing).unwrap();
        assert_eq!(over.create[0].data_id, "new");
        assert_eq!(over.unchanged, ["G/same"]);
        assert_eq!(over.overwrite.len(), 1);
        assert_eq!(over.overwrite[0].1, "md5-changed");
        assert!(matches!(
            plan(Vec::new(), Policy::Skip, existing),
            Err(TransferError::Empty)
        ));
        assert_eq!(Policy::parse("OVERWRITE"), Some(Policy::Overwrite));
        assert_eq!(Policy::parse(""), Some(Policy::Abort));
        assert_eq!(Policy::parse("merge"), None);
    }

    #[test]
    fn v1_keys_replace_the_last_dot() {
        assert_eq!(v1_key("G", "a.b.yaml"), "G.a.b~yaml.app");
        assert_eq!(v1_key("G", "plain"), "G.plain.app");
    }
}
