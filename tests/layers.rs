//! The layers are crates, and every arrow between them points down.
//!
//! The compiler already refuses a cycle between crates, but not an arrow
//! that points up past a layer (the store learning of the raft crate, the
//! state learning of the store). This test reads the workspace's manifests
//! through `cargo metadata` and fails on any dependency between the
//! workspace's own crates that the table below does not allow.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Each workspace crate and the workspace crates it may depend on (normal,
/// build and dev dependencies alike). Lower layers first.
const ALLOWED: &[(&str, &[&str])] = &[
    ("tacos-core", &[]),
    // TLS is a leaf beside the stack: certificates and rustls configs, no
    // knowledge of configs or Raft.
    ("tacos-tls", &[]),
    // The store knows entries as bytes plus the core's log ids; the state
    // knows tables and records. Neither knows the other.
    ("tacos-store", &["tacos-core"]),
    ("tacos-state", &["tacos-core"]),
    (
        "tacos-raft",
        &["tacos-core", "tacos-store", "tacos-state", "tacos-tls"],
    ),
    (
        "tacos-app",
        &["tacos-core", "tacos-store", "tacos-state", "tacos-raft"],
    ),
    (
        "tacos",
        &[
            "tacos-core",
            "tacos-store",
            "tacos-state",
            "tacos-raft",
            "tacos-app",
            "tacos-tls",
        ],
    ),
    // The migration tool converts with the layers; it writes and checks the
    // target dir with the server's operator tools (`tacos restore`, `tacos
    // inspect`), which live in the server crate.
    (
        "tacos-migrate",
        &[
            "tacos-core",
            "tacos-store",
            "tacos-state",
            "tacos-app",
            "tacos",
        ],
    ),
    // The load tools speak HTTP and gRPC to a running server only.
    ("loadtest", &[]),
];

fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let members: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .map(|d| d["name"].as_str().expect("dependency name").to_string())
                .filter(|name| members.contains(name))
                .collect();
            (p["name"].as_str().expect("name").to_string(), deps)
        })
        .collect()
}

#[test]
fn every_arrow_between_the_layers_points_down() {
    let found = workspace_dependencies();
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(name, deps)| (*name, deps.iter().copied().collect()))
        .collect();
    let mut wrong = Vec::new();
    for (name, deps) in &found {
        let Some(may) = allowed.get(name.as_str()) else {
            wrong.push(format!(
                "{name} is a workspace crate this test does not know: add it to ALLOWED"
            ));
            continue;
        };
        for dep in deps {
            if !may.contains(dep.as_str()) {
                wrong.push(format!("{name} depends on {dep}, which is not below it"));
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
    // The table names no crate that is gone.
    for name in allowed.keys() {
        assert!(
            found.contains_key(*name),
            "{name} is in ALLOWED but not in the workspace"
        );
    }
}

#[test]
fn the_table_itself_only_points_down() {
    // A crate may only be allowed crates listed before it, so the table is
    // an order of layers and can hold no cycle.
    for (i, (name, deps)) in ALLOWED.iter().enumerate() {
        for dep in *deps {
            let pos = ALLOWED.iter().position(|(n, _)| n == dep);
            assert!(
                pos.is_some_and(|p| p < i),
                "{name} is allowed {dep}, which is not listed above it"
            );
        }
    }
}

// ---- inside the server crate ------------------------------------------------

/// The server crate's sources (`src/`), each with its text up to its unit
/// tests (`#[cfg(test)] mod tests` and `tests.rs` files are left out: a
/// test may reach anywhere).
fn server_sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read src/")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs")
                && path.file_name().is_some_and(|n| n != "tests.rs")
            {
                let text = std::fs::read_to_string(&path).expect("read a source");
                let code = match text.find("#[cfg(test)]\nmod tests") {
                    Some(at) => &text[..at],
                    None => &text[..],
                };
                // Comments name modules without depending on them.
                let code: String = code
                    .lines()
                    .filter(|line| !line.trim_start().starts_with("//"))
                    .map(|line| format!("{line}\n"))
                    .collect();
                out.push((path, code));
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

/// The top-level module a source of `src/` belongs to (`api` for
/// `src/api/v3/config.rs`), `None` for `lib.rs` and `main.rs`.
fn top_module(path: &Path) -> Option<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rel = path.strip_prefix(&src).expect("under src/");
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib" && name != "main").then_some(name)
}

/// Words that follow `prefix` in `code` (`crate::api` → `api`).
fn names_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    code.match_indices(prefix).map(move |(at, _)| {
        let rest = &code[at + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        &rest[..end]
    })
}

#[test]
fn the_server_crates_modules_form_no_circle() {
    let sources = server_sources();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in &sources {
        let Some(from) = top_module(path) else {
            continue;
        };
        let deps = graph.entry(from.clone()).or_default();
        for to in names_after(code, "crate::") {
            if to != from && !to.is_empty() {
                deps.insert(to.to_string());
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d));
    }
    // Depth-first, a path that comes back to a module on it is a circle.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == node) {
            panic!("src/ has a circle: {} -> {node}", path[at..].join(" -> "));
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_string());
        for next in &graph[node] {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(node.to_string());
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn no_module_imports_from_its_parent() {
    // A folder's mod.rs declares its modules and routes; what they share is
    // a file of its own (`answer.rs`, ...), so no arrow points back up.
    let sources = server_sources();
    let mut wrong = Vec::new();
    for (path, code) in &sources {
        if path.file_name().is_some_and(|n| n == "mod.rs") {
            let dir = path.parent().expect("a folder");
            let items = defined_items(code);
            for (child, child_code) in &sources {
                if child.parent() != Some(dir) || child == path {
                    continue;
                }
                for name in names_after(child_code, "super::") {
                    if items.contains(name) {
                        wrong.push(format!("{} uses super::{name}", child.display()));
                    }
                }
                for (at, _) in child_code.match_indices("use super::{") {
                    let list = &child_code[at + 12..];
                    let list = &list[..list.find('}').unwrap_or(list.len())];
                    for name in list.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                        if items.contains(name) {
                            wrong.push(format!("{} imports super::{name}", child.display()));
                        }
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "arrows up to a parent module:\n{}",
        wrong.join("\n")
    );
}

/// The items a module file defines itself (functions, types, constants).
fn defined_items(code: &str) -> BTreeSet<&str> {
    let mut items = BTreeSet::new();
    for line in code.lines() {
        let mut words = line.split_whitespace().peekable();
        while let Some(w) = words.peek() {
            if w.starts_with("pub") || *w == "async" {
                words.next();
            } else {
                break;
            }
        }
        if let (Some(kind), Some(name)) = (words.next(), words.next()) {
            if ["fn", "struct", "enum", "const", "type", "trait", "static"].contains(&kind) {
                let end = name
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(name.len());
                items.insert(&name[..end]);
            }
        }
    }
    items
}

#[test]
fn only_the_application_decides_who_may_do_what() {
    // `Principal`'s permission checks are private to tacos-app (the
    // compiler refuses a call from a handler); this keeps them so.
    let auth = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/app/src/auth/mod.rs"),
    )
    .expect("read crates/app/src/auth/mod.rs");
    for check in [
        "can",
        "can_key",
        "can_namespace",
        "can_some",
        "require",
        "require_named",
        "require_key",
        "require_some",
    ] {
        let declared = format!("pub(crate) fn {check}(");
        assert!(
            auth.contains(&declared),
            "Principal::{check} must stay `pub(crate)`: who may do what is decided in tacos-app"
        );
    }
}
