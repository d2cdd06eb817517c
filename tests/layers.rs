//! The layers are crates, and every arrow between them points down.
//!
//! The compiler already refuses a cycle between crates, but not an arrow
//! that points up past a layer (the store learning of the raft crate, the
//! state learning of the store). This test reads the workspace's manifests
//! through `cargo metadata` and fails on any dependency between the
//! workspace's own crates that the table below does not allow.

use std::collections::{BTreeMap, BTreeSet};
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
