//! The audit log: one row per command that carries an [`Actor`](pb::Actor),
//! saying who asked, from where, when, what, and how it ended. Rows are part
//! of the replicated state (so every node answers the same), oldest first,
//! at most the stamped limit.

use std::borrow::Cow;
use std::sync::Arc;

use super::audit_log::AuditIter;
use super::{canonical_namespace, Response, State};
use tacos_core::command as pb;
use tacos_core::{shown_namespace, Op};

/// One audit row. Never holds a password, hash or token.
///
/// Rows live in memory with the rest of the state (up to `--audit-limit`,
/// 100,000 by default): all but the newest in compressed chunks
/// ([`audit_log`](super::audit_log)). The strings that repeat from row to
/// row (who, from where, the action, the outcome) are shared with the
/// previous decoded row when equal: rows come in runs, and a shared string
/// costs a pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    pub id: u64,
    pub time_ms: i64,
    pub user: Arc<str>,
    pub ip: Arc<str>,
    /// `config.publish`, `user.create`, `membership.add-learner`, ...
    pub action: Arc<str>,
    /// What was acted on: `namespace/group/dataId`, a namespace id, a user.
    pub target: String,
    pub detail: String,
    /// `ok`, or why the command was refused.
    pub outcome: Arc<str>,
}

/// The repeating parts of a new row.
pub(super) struct Repeating<'a> {
    pub user: &'a str,
    pub ip: &'a str,
    pub action: &'a str,
    pub outcome: &'a str,
}

/// `value` as a shared string: `previous` when equal, else a new one.
pub(crate) fn share(previous: Option<&Arc<str>>, value: &str) -> Arc<str> {
    match previous {
        Some(previous) if **previous == *value => previous.clone(),
        _ => Arc::from(value),
    }
}

fn config_target(key: Option<&pb::ConfigKey>) -> String {
    key.map_or_else(String::new, |k| {
        format!(
            "{}/{}/{}",
            shown_namespace(canonical_namespace(&k.namespace)),
            k.group,
            k.data_id
        )
    })
}

fn publish_detail(p: &pb::PublishConfig) -> String {
    match &p.cas_md5 {
        Some(cas) => format!("md5={} cas={cas}", p.md5),
        None => format!("md5={}", p.md5),
    }
}

/// `namespace=... access=...` for a permission change.
/// `namespace=NS access=A`, with ` group=G dataId=D` when the grant is
/// narrower than the namespace.
fn grant_detail(namespace: &str, group: &str, data_id: &str, access: i32) -> String {
    let resource = super::Resource::from_record(namespace, group, data_id);
    let narrower = if resource.is_namespace_wide() {
        String::new()
    } else {
        format!(" group={} dataId={}", resource.group, resource.data_id)
    };
    format!(
        "namespace={}{narrower} access={}",
        shown_namespace(canonical_namespace(namespace)),
        super::Access::from_pb(access).map_or("none", super::Access::code)
    )
}

/// The action, target and detail an operation is recorded as (an import
/// is recorded per config by `record_audit`; this is for an empty one).
fn describe(op: Option<&Op>) -> (&str, String, String) {
    match op {
        Some(Op::PublishConfig(p)) => (
            "config.publish",
            config_target(p.key.as_ref()),
            publish_detail(p),
        ),
        Some(Op::ImportConfigs(_)) => ("config.import", String::new(), "0 configs".into()),
        Some(Op::RemoveConfig(r)) => (
            "config.remove",
            config_target(r.key.as_ref()),
            String::new(),
        ),
        Some(Op::PublishBeta(b)) => (
            "config.beta.publish",
            config_target(b.key.as_ref()),
            format!("md5={} ips={}", b.md5, b.beta_ips.join(",")),
        ),
        Some(Op::StopBeta(s)) => (
            "config.beta.stop",
            config_target(s.key.as_ref()),
            String::new(),
        ),
        Some(Op::PromoteBeta(p)) => (
            "config.beta.promote",
            config_target(p.key.as_ref()),
            format!("md5={}", p.beta_md5),
        ),
        Some(Op::PublishGray(g)) => (
            "config.gray.publish",
            config_target(g.key.as_ref()),
            format!(
                "gray={} md5={} rule={}:{}",
                g.name,
                g.md5,
                g.rule.as_ref().map_or("", |r| r.r#type.as_str()),
                g.rule.as_ref().map_or("", |r| r.expr.as_str())
            ),
        ),
        Some(Op::StopGray(s)) => (
            "config.gray.stop",
            config_target(s.key.as_ref()),
            format!("gray={}", s.name),
        ),
        Some(Op::PromoteGray(p)) => (
            "config.gray.promote",
            config_target(p.key.as_ref()),
            format!("gray={} md5={}", p.name, p.gray_md5),
        ),
        Some(Op::CreateNamespace(c)) => {
            ("namespace.create", c.id.clone(), format!("name={}", c.name))
        }
        Some(Op::UpdateNamespace(u)) => {
            ("namespace.update", u.id.clone(), format!("name={}", u.name))
        }
        Some(Op::RemoveNamespace(r)) => ("namespace.remove", r.id.clone(), String::new()),
        Some(Op::InitAuth(i)) => ("auth.init", i.admin_username.clone(), String::new()),
        Some(Op::CreateUser(c)) => (
            "user.create",
            c.username.clone(),
            format!("admin={}", c.admin),
        ),
        Some(Op::UpdateUser(u)) => {
            let mut changed = Vec::new();
            if u.password_hash.is_some() {
                changed.push("password".to_string());
            }
            if let Some(admin) = u.admin {
                changed.push(format!("admin={admin}"));
            }
            if let Some(enabled) = u.enabled {
                changed.push(format!("enabled={enabled}"));
            }
            ("user.update", u.username.clone(), changed.join(" "))
        }
        Some(Op::RemoveUser(r)) => ("user.remove", r.username.clone(), String::new()),
        // Never the hashes themselves.
        Some(Op::RehashPassword(r)) => (
            "user.rehash",
            r.username.clone(),
            "bcrypt -> argon2id".to_string(),
        ),
        Some(Op::SetPermission(p)) => (
            "permission.set",
            p.username.clone(),
            grant_detail(&p.namespace, &p.group, &p.data_id, p.access),
        ),
        Some(Op::AuditNote(n)) => (&n.action, n.target.clone(), n.detail.clone()),
        Some(Op::BindRole(b)) => ("role.bind", b.role.clone(), format!("user={}", b.username)),
        Some(Op::UnbindRole(u)) if u.username.is_empty() => {
            ("role.remove", u.role.clone(), String::new())
        }
        Some(Op::UnbindRole(u)) => (
            "role.unbind",
            u.role.clone(),
            format!("user={}", u.username),
        ),
        Some(Op::SetRolePermission(p)) => (
            "role.permission",
            p.role.clone(),
            grant_detail(&p.namespace, &p.group, &p.data_id, p.access),
        ),
        None => ("unknown", String::new(), String::new()),
    }
}

impl State {
    /// Audit rows, oldest first.
    pub fn audit(&self) -> AuditIter<'_> {
        self.audit.iter()
    }

    /// Records `op` by `actor` with its outcome: one row, or for an import
    /// one row per config (each findable by its target), all with the
    /// import's outcome.
    pub(super) fn record_audit(&mut self, actor: &pb::Actor, op: Option<&Op>, response: &Response) {
        let rows: Vec<(&str, String, String)> = match op {
            Some(Op::ImportConfigs(import)) if !import.publishes.is_empty() => import
                .publishes
                .iter()
                .map(|p| {
                    (
                        "config.import",
                        config_target(p.key.as_ref()),
                        publish_detail(p),
                    )
                })
                .collect(),
            _ => vec![describe(op)],
        };
        let outcome: Cow<str> = match response {
            Response::Rejected(error) => format!("refused: {error}").into(),
            _ => "ok".into(),
        };
        for (action, target, detail) in rows {
            self.next_audit_id += 1;
            let repeating = Repeating {
                user: &actor.user,
                ip: &actor.ip,
                action,
                outcome: &outcome,
            };
            self.push_audit(self.next_audit_id, actor.time_ms, repeating, target, detail);
        }
        while self.audit.len() > actor.audit_limit.max(1) as usize {
            self.audit.pop_front();
        }
    }

    /// Appends a row (newest last), sharing its repeating strings with the
    /// previous row where they are equal.
    pub(super) fn push_audit(
        &mut self,
        id: u64,
        time_ms: i64,
        repeating: Repeating<'_>,
        target: String,
        detail: String,
    ) {
        let previous = self.audit.last_open();
        let row = AuditRow {
            id,
            time_ms,
            user: share(previous.map(|p| &p.user), repeating.user),
            ip: share(previous.map(|p| &p.ip), repeating.ip),
            action: share(previous.map(|p| &p.action), repeating.action),
            target,
            detail,
            outcome: share(previous.map(|p| &p.outcome), repeating.outcome),
        };
        self.audit.push_back(row);
    }
}
