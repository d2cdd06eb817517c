//! The web console end to end, in headless Debian Chromium driven by npm
//! `playwright-core` (tests/console/console.test.mjs), against the real
//! binary: log in, namespaces, create/edit with diff, CAS, history and
//! rollback, beta, listeners, import/export, cluster, users, audit; the
//! code editor's error marker and search, the dashboard against `/metrics`,
//! roles, a user who gets a namespace through a role, the switch to
//! Chinese. Bad input must show a message and write nothing (the script
//! checks through the API). Screenshots of every page, in English and
//! Chinese, at 1366×768 and 1920×1080, go to docs/screenshots/.
//!
//! A second test serves the console over HTTPS (tests/console/https.test.mjs):
//! Chromium pins the server's key, loads the pages over HTTP/2, logs in and
//! lists configs, every request on https.
//!
//! This test writes the zip fixtures, and after the script checks that the
//! zip the console exported holds exactly what the imported one held.
//! `scripts/test.sh` installs Chromium (`/usr/bin/chromium`) and runs
//! `npm install` in tests/console.

mod common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// The configs the import fixture holds: (group/dataId, type, content).
const IMPORTED: &[(&str, &str, &str)] = &[
    (
        "IMPORTED/db.yaml",
        "yaml",
        "db:\n  url: jdbc:mysql://db:3306/shop\n  pool: 16\n",
    ),
    (
        "IMPORTED/feature.properties",
        "properties",
        "feature.new-checkout=true\nfeature.banner=spring \\u00e9t\\u00e9\n",
    ),
    (
        "IMPORTED/limits.json",
        "json",
        "{\n  \"rps\": 200,\n  \"burst\": 50\n}\n",
    ),
];

fn write_zip(path: &Path, entries: &[(&str, &str)]) {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, content) in entries {
        zip.start_file(*name, zip::write::SimpleFileOptions::default())
            .expect("zip entry");
        zip.write_all(content.as_bytes()).expect("zip write");
    }
    let bytes = zip.finish().expect("zip finish").into_inner();
    std::fs::write(path, bytes).expect("writing a fixture");
}

/// `.metadata.yml` for (group/dataId, type) pairs, as Nacos writes it.
fn metadata(items: &[(&str, &str)]) -> String {
    let mut yaml = String::from("metadata:\n");
    for (entry, config_type) in items {
        let (group, data_id) = entry.split_once('/').expect("group/dataId");
        yaml.push_str(&format!(
            "- appName: shop\n  dataId: {data_id}\n  desc: imported by the console test\n  group: {group}\n  type: {config_type}\n"
        ));
    }
    yaml
}

/// Entry name → content of every entry in a zip.
fn read_zip(path: &Path) -> BTreeMap<String, String> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).expect("a zip");
    (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index(i).expect("zip entry");
            let name = file.name().expect("entry name").into_owned();
            let mut content = String::new();
            file.read_to_string(&mut content).expect("UTF-8 entry");
            (name, content)
        })
        .collect()
}

/// The metadata items of a `.metadata.yml`, sorted, as comparable maps.
fn metadata_items(yaml: &str) -> Vec<BTreeMap<String, String>> {
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).expect("metadata YAML");
    let mut items: Vec<BTreeMap<String, String>> = value["metadata"]
        .as_sequence()
        .expect("a metadata list")
        .iter()
        .map(|item| {
            item.as_mapping()
                .expect("a metadata item")
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().unwrap_or_default().to_string(),
                        v.as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .collect();
    items.sort();
    items
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_works_in_a_real_browser() {
    let console_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console");
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "Debian chromium is not installed: run scripts/test.sh (it installs it) or `apt-get install -y chromium`"
    );
    assert!(
        console_dir.join("node_modules/playwright-core").is_dir(),
        "npm playwright-core is not installed: run scripts/test.sh (it installs it) or `cd tests/console && npm install`"
    );
    let cjk = std::process::Command::new("fc-list")
        .arg(":lang=zh")
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    assert!(
        cjk,
        "no CJK font: the Chinese screenshots would show boxes. Run scripts/test.sh (it installs one) or `apt-get install -y fonts-wqy-zenhei`"
    );
    let tmp = common::temp_dir();
    let server = common::Server::start(&tmp).await;
    let work = tmp.path().join("console");
    std::fs::create_dir_all(&work).expect("work dir");

    let types: Vec<(&str, &str)> = IMPORTED.iter().map(|(e, t, _)| (*e, *t)).collect();
    let meta = metadata(&types);
    let mut entries: Vec<(&str, &str)> = IMPORTED.iter().map(|(e, _, c)| (*e, *c)).collect();
    entries.push((".metadata.yml", &meta));
    write_zip(&work.join("import.zip"), &entries);
    let bad_meta = metadata(&[
        ("IMPORTED/broken.json", "json"),
        ("IMPORTED/blank.txt", "text"),
        ("IMPORTED/fine.yaml", "yaml"),
    ]);
    write_zip(
        &work.join("bad-import.zip"),
        &[
            ("IMPORTED/broken.json", "{\"rps\": }"),
            ("IMPORTED/blank.txt", "  \n"),
            ("IMPORTED/fine.yaml", "a: 1\n"),
            (".metadata.yml", &bad_meta),
        ],
    );

    let script = console_dir.join("console.test.mjs");
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
    let base = format!("http://127.0.0.1:{}", server.port());
    let started = Instant::now();
    let (ok, stdout, stderr) = common::run_sdk_script(
        "node",
        &[
            script.to_str().expect("a UTF-8 path"),
            &base,
            common::ADMIN_PASSWORD,
            work.to_str().expect("a UTF-8 path"),
            shots.to_str().expect("a UTF-8 path"),
        ],
        tmp.path(),
        Duration::from_secs(300),
    );
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        ok && stdout.contains("all ok"),
        "the console test failed after {:?} (server log {}):\n{stdout}\n{stderr}\n{}",
        started.elapsed(),
        server.log_path().display(),
        server.log()
    );
    println!("console script took {:?}", started.elapsed());

    // Export after import: the same configs, contents and metadata.
    let imported = read_zip(&work.join("import.zip"));
    let exported = read_zip(&work.join("export.zip"));
    let configs = |zip: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        zip.iter()
            .filter(|(name, _)| !name.starts_with('.'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(configs(&exported), configs(&imported));
    assert_eq!(
        metadata_items(&exported[".metadata.yml"]),
        metadata_items(&imported[".metadata.yml"])
    );
    // The pages the steps saw (English, 1366×768), and every page of the
    // last step's tour in Chinese and at 1920×1080.
    let toured = [
        "login",
        "configs",
        "namespaces",
        "editor",
        "edit-diff",
        "editor-grays",
        "editor-invalid-yaml",
        "history",
        "history-diff",
        "listeners",
        "import",
        "dashboard",
        "cluster",
        "users",
        "roles",
        "audit",
    ];
    let stepped = [
        "login",
        "namespaces",
        "editor",
        "editor-invalid-yaml",
        "edit-diff",
        "history",
        "history-diff",
        "beta",
        "gray-tag",
        "listeners",
        "import",
        "configs",
        "cluster",
        "dashboard",
        "users",
        "roles",
        "audit",
    ];
    let all = stepped.iter().map(|n| n.to_string()).chain(
        ["zh-CN", "1920x1080/en", "1920x1080/zh-CN"]
            .iter()
            .flat_map(|dir| toured.iter().map(move |n| format!("{dir}/{n}"))),
    );
    for name in all {
        let path = shots.join(format!("{name}.png"));
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 1000,
            "screenshot {} missing or empty",
            path.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_works_over_https() {
    let console_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console");
    assert!(
        Path::new("/usr/bin/chromium").exists()
            && console_dir.join("node_modules/playwright-core").is_dir(),
        "Chromium or playwright-core is missing: run scripts/test.sh (it installs them)"
    );
    let pki = common::tls::Pki::new();
    let tmp = common::temp_dir();
    let flags = pki.server_args();
    let args: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut server = common::Server::start_with_args(&tmp, &args).await;
    server
        .api()
        .publish("served-over-https.yaml", "DEFAULT_GROUP", "", "a: 1")
        .await;
    let script = console_dir.join("https.test.mjs");
    let base = format!("https://localhost:{}", server.port());
    let spki = pki.server_spki_sha256();
    let (ok, stdout, stderr) = common::run_sdk_script(
        "node",
        &[
            script.to_str().expect("a UTF-8 path"),
            &base,
            common::ADMIN_PASSWORD,
            &spki,
            "served-over-https.yaml",
        ],
        tmp.path(),
        Duration::from_secs(120),
    );
    assert!(
        ok && stdout.contains("all ok"),
        "the console over HTTPS failed:\n{stdout}\n{stderr}\n{}",
        server.log()
    );
    server.stop().await;
}
