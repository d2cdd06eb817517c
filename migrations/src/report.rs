//! The text report of a migration (or a dry run). It never shows a password.

use std::fmt::Write as _;

use crate::convert::{RoleLine, UserLine};
use crate::source;
use crate::write::TargetState;
use crate::Outcome;

/// Renders what `outcome` moved (or would move), what was skipped and why, and the
/// checks made.
pub fn render(outcome: &Outcome) -> String {
    let mut out = String::new();
    let w = &mut out;
    let r = &outcome.report;
    if outcome.dry_run {
        let _ = writeln!(w, "Dry run: nothing was written.");
    } else {
        let _ = writeln!(w, "\nMigration report");
    }
    let _ = writeln!(w, "Source: {} (only read; not modified)", outcome.from);
    match &outcome.target {
        Some(target) => {
            let node = target
                .settings()
                .map(|s| {
                    format!(
                        "node {}, http {}, cluster {}",
                        s.node_id,
                        s.http_addr(),
                        s.cluster_addr()
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(w, "Tacos data dir: {} ({node})", target.data_dir.display());
            if outcome.dry_run
                && outcome.target_state == Some(TargetState::NotEmpty)
                && !target.force
            {
                let _ = writeln!(
                    w,
                    "  it is not empty: the real run refuses it without --force (which moves \
                     it aside, never deletes it)"
                );
            }
        }
        None => {
            let _ = writeln!(w, "Tacos data dir: none given (--to)");
        }
    }

    let _ = writeln!(
        w,
        "\n{}",
        if outcome.dry_run {
            "Would move:"
        } else {
            "Moved:"
        }
    );
    let _ = writeln!(w, "  namespaces:   {}", r.namespaces.len());
    let _ = writeln!(w, "  configs:      {}", r.configs);
    let _ = writeln!(
        w,
        "  history rows: {}{}",
        r.history_rows,
        if r.history_renumbered {
            " (renumbered)"
        } else {
            ""
        }
    );
    if r.deleted_history > 0 {
        let _ = writeln!(w, "    of which of deleted configs: {}", r.deleted_history);
    }
    if r.grays > 0 {
        let _ = writeln!(w, "  grays:        {}", r.grays);
    }
    let _ = writeln!(w, "  users:        {}", r.users.len());
    if !r.roles.is_empty() {
        let _ = writeln!(w, "  roles:        {}", r.roles.len());
    }

    let _ = writeln!(w, "\nNamespaces (public is implicit):");
    if r.namespaces.is_empty() {
        let _ = writeln!(w, "  none");
    }
    for ns in &r.namespaces {
        let created = if ns.created {
            "  [created: not a registered namespace in r-nacos]"
        } else {
            ""
        };
        let _ = writeln!(w, "  {:?}  name {:?}{created}", ns.id, ns.name);
    }

    let _ = writeln!(w, "\nConfigs per namespace:");
    if r.per_namespace.is_empty() {
        let _ = writeln!(w, "  none");
    }
    for (namespace, (configs, rows)) in &r.per_namespace {
        let label = if namespace.is_empty() {
            "public (\"\")".to_string()
        } else {
            format!("{namespace:?}")
        };
        let _ = writeln!(w, "  {label}: {configs} configs, {rows} history rows");
    }

    let _ = writeln!(
        w,
        "\nUsers (plain passwords {} with argon2id as Tacos does; BCrypt hashes kept, \
         re-hashed with argon2id at each user's first login; never shown):",
        if outcome.dry_run {
            "would be hashed"
        } else {
            "hashed"
        }
    );
    if r.users.is_empty() {
        let _ = writeln!(w, "  none");
    }
    for user in &r.users {
        let named: Vec<&str> = r
            .roles
            .iter()
            .filter(|role| role.users.contains(&user.username))
            .map(|role| role.name.as_str())
            .collect();
        let _ = writeln!(w, "  {}", user_line(user, &named));
    }
    if !r.roles.is_empty() {
        let _ = writeln!(w, "\nRoles (what each grants its users):");
        for role in &r.roles {
            let _ = writeln!(w, "  {}", role_line(role));
        }
    }

    if r.created_namespaces.is_empty() {
        let _ = writeln!(w, "\nNamespaces created for unregistered tenants: none");
    } else {
        let _ = writeln!(
            w,
            "\nNamespaces created for unregistered tenants (r-nacos had configs there but no \
             namespace entry; each is named after its id): {}",
            r.created_namespaces
                .iter()
                .map(|id| format!("{id:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    if r.skipped.is_empty() {
        let _ = writeln!(w, "\nSkipped: nothing");
    } else {
        let _ = writeln!(w, "\nSkipped ({}):", r.skipped.len());
        for s in &r.skipped {
            let _ = writeln!(w, "  {}: {}", s.what, s.reason);
        }
    }

    let weak: Vec<&str> = r
        .users
        .iter()
        .filter(|u| u.weak_password)
        .map(|u| u.username.as_str())
        .collect();
    if !r.notes.is_empty() || !weak.is_empty() {
        let _ = writeln!(w, "\nNotes:");
        for note in &r.notes {
            let _ = writeln!(w, "  {note}");
        }
        if !weak.is_empty() {
            let _ = writeln!(
                w,
                "  {} kept a password Tacos would not accept as a new one (under 8 \
                 characters); it still works for logging in: change it",
                weak.iter()
                    .map(|u| format!("{u:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }

    let _ = writeln!(
        w,
        "\nmd5 check: {} of {} configs match",
        r.md5_matched, r.md5_checked
    );
    if let Some(written) = &outcome.written {
        let _ = writeln!(
            w,
            "Read back: {} holds the converted state (digest {})",
            written.data_dir.display(),
            written.digest
        );
        if let Some(aside) = &written.moved_aside {
            let _ = writeln!(
                w,
                "The previous contents of {} are in {} (delete it once Tacos runs fine).",
                written.data_dir.display(),
                aside.display()
            );
        }
        if let Some(target) = &outcome.target {
            let _ = writeln!(
                w,
                "\nNext: start tacos with --data-dir {} --node-id {} (and the same \
                 --http-port, --cluster-port, --advertise, --bind). At its first start it \
                 sets up auth: it creates the admin named by --admin-username (default \
                 nacos) with --admin-password, or a generated password it writes to \
                 {}/initial-admin-password, unless a user of that name was migrated.",
                target.data_dir.display(),
                target.node_id,
                target.data_dir.display()
            );
        }
    }
    out
}

fn role_line(role: &RoleLine) -> String {
    let grants: Vec<String> = role
        .permissions
        .iter()
        .map(|(resource, access)| {
            let access = match access {
                tacos_state::Access::ReadWrite => "read-write",
                tacos_state::Access::Read => "read",
                tacos_state::Access::Write => "write",
            };
            let namespace = match resource.namespace.as_str() {
                "" => "public".to_string(),
                tacos_state::ALL_NAMESPACES => "every namespace".to_string(),
                ns => ns.to_string(),
            };
            if resource.is_namespace_wide() {
                format!("{access} on {namespace}")
            } else {
                format!(
                    "{access} on {namespace}, group {}, dataId {}",
                    resource.group, resource.data_id
                )
            }
        })
        .collect();
    format!(
        "{:?}  users: {} -> {}",
        role.name,
        if role.users.is_empty() {
            "none".to_string()
        } else {
            role.users.join(", ")
        },
        if grants.is_empty() {
            "nothing".to_string()
        } else {
            grants.join(", ")
        }
    )
}

/// `named`: the named roles (Java Nacos) the user is bound to.
fn user_line(user: &UserLine, named: &[&str]) -> String {
    let roles: Vec<String> = user
        .roles
        .iter()
        .map(|r| match source::role_name(r) {
            Some(name) => format!("{r} ({name})"),
            None => format!("{r} (unknown role)"),
        })
        .collect();
    let roles = if roles.is_empty() {
        "none".to_string()
    } else {
        roles.join(", ")
    };
    let grant = match &user.namespaces {
        Some(list) => format!(
            "{} on {}",
            match user.grant {
                crate::convert::Grant::Everywhere(tacos_state::Access::ReadWrite) => "read-write",
                _ => "read",
            },
            if list.is_empty() {
                "no namespace".to_string()
            } else {
                list.iter()
                    .map(|ns| if ns.is_empty() { "public" } else { ns })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        None if !named.is_empty() && user.grant == crate::convert::Grant::Nothing => {
            "what its roles grant".to_string()
        }
        None => user.grant.describe().to_string(),
    };
    let roles = if named.is_empty() {
        roles
    } else if roles == "none" {
        named.join(", ")
    } else {
        format!("{roles}, {}", named.join(", "))
    };
    format!(
        "{:?}  roles: {roles} -> {grant}  {}{}{}",
        user.username,
        if user.enabled { "enabled" } else { "disabled" },
        if user.bcrypt {
            "  [BCrypt hash kept]"
        } else {
            ""
        },
        if user.weak_password {
            "  [weak password]"
        } else {
            ""
        }
    )
}
