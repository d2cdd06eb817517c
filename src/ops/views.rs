//! What the operator tools report of a data dir or a backup: the state's
//! counts, log ids, the vote, the membership (as text and as JSON).

use serde::Serialize;

use tacos_core::types::{LogId, NodeId, StoredMembership, Vote};
use tacos_state::State;

/// Snapshot record kinds, as `State::snapshot_records` writes them
/// (src/state/snapshot.rs); counted, never decoded, here.
pub const NAMESPACE_RECORD: u8 = 2;
pub const CONFIG_RECORD: u8 = 3;
pub const HISTORY_RECORD: u8 = 5;

/// What a state holds, in numbers, and its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub configs: usize,
    /// The public namespace first, then the custom ones.
    pub namespaces: Vec<NamespaceSummary>,
    /// Gray versions (betas and tags) of all configs.
    pub grays: usize,
    pub history_rows: usize,
    /// `State::digest()`: what `GET /tacos/v1/admin/digest` reports.
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSummary {
    /// "public" for the public namespace.
    pub id: String,
    pub name: String,
    pub configs: usize,
}

impl Summary {
    pub fn of(state: &State) -> Summary {
        let (mut configs, mut namespaces, mut history_rows) = (0, 0, 0);
        for record in state.snapshot_records() {
            match record.first() {
                Some(&CONFIG_RECORD) => configs += 1,
                Some(&NAMESPACE_RECORD) => namespaces += 1,
                Some(&HISTORY_RECORD) => history_rows += 1,
                _ => {}
            }
        }
        debug_assert_eq!(configs, state.config_count());
        debug_assert_eq!(namespaces, state.namespaces().count());
        let mut listed = vec![NamespaceSummary {
            id: tacos_state::PUBLIC_NAMESPACE.to_string(),
            name: tacos_state::PUBLIC_NAMESPACE.to_string(),
            configs: state.configs_in("").count(),
        }];
        listed.extend(state.namespaces().map(|n| NamespaceSummary {
            id: n.id.clone(),
            name: n.name.clone(),
            configs: state.configs_in(&n.id).count(),
        }));
        Summary {
            configs: state.config_count(),
            namespaces: listed,
            grays: state.all_grays().map(|(_, grays)| grays.len()).sum(),
            history_rows,
            digest: state.digest(),
        }
    }

    /// The namespaces as one line: `public (3 configs), dev "Dev" (1 config)`.
    pub fn namespaces_line(&self) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        self.namespaces
            .iter()
            .map(|n| {
                let name = if n.name.is_empty() || n.name == n.id {
                    String::new()
                } else {
                    format!(" {:?}", n.name)
                };
                format!("{}{name} ({} config{})", n.id, n.configs, plural(n.configs))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A log id for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LogIdView {
    pub index: u64,
    pub term: u64,
    /// The node that led the term.
    pub leader: NodeId,
}

impl From<LogId> for LogIdView {
    fn from(id: LogId) -> Self {
        LogIdView {
            index: id.index,
            term: id.leader_id.term,
            leader: id.leader_id.node_id,
        }
    }
}

/// `index 42 (term 3, leader 1)`, or `none`.
pub fn show_log_id(id: Option<LogId>) -> String {
    match id {
        Some(id) => format!(
            "index {} (term {}, leader {})",
            id.index, id.leader_id.term, id.leader_id.node_id
        ),
        None => "none".to_string(),
    }
}

/// A vote for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VoteView {
    pub term: u64,
    pub node: NodeId,
    /// Whether a quorum granted it (the node led that term).
    pub committed: bool,
}

impl From<Vote> for VoteView {
    fn from(vote: Vote) -> Self {
        VoteView {
            term: vote.leader_id.term,
            node: vote.leader_id.node_id,
            committed: vote.committed,
        }
    }
}

/// A membership for JSON output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MembershipView {
    /// The log entry that set it.
    pub log_id: Option<LogIdView>,
    pub voters: Vec<MemberView>,
    pub learners: Vec<MemberView>,
    /// More than one voter set: a membership change was in progress.
    pub joint: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub id: NodeId,
    pub cluster_addr: String,
    pub http_addr: String,
}

impl From<&StoredMembership> for MembershipView {
    fn from(stored: &StoredMembership) -> Self {
        let membership = stored.membership();
        let member = |id: NodeId| {
            let node = membership.get_node(&id).cloned().unwrap_or_default();
            MemberView {
                id,
                cluster_addr: node.cluster_addr,
                http_addr: node.http_addr,
            }
        };
        MembershipView {
            log_id: stored.log_id().map(LogIdView::from),
            voters: membership.voter_ids().map(member).collect(),
            learners: membership.learner_ids().map(member).collect(),
            joint: membership.get_joint_config().len() > 1,
        }
    }
}

impl MembershipView {
    /// `voters node 1 (cluster 127.0.0.1:9849, http 127.0.0.1:8848); learners none`.
    pub fn line(&self) -> String {
        let list = |members: &[MemberView]| {
            if members.is_empty() {
                return "none".to_string();
            }
            members
                .iter()
                .map(|m| {
                    format!(
                        "node {} (cluster {}, http {})",
                        m.id, m.cluster_addr, m.http_addr
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let joint = if self.joint {
            " [joint: a membership change was in progress]"
        } else {
            ""
        };
        format!(
            "voters {}; learners {}{joint}",
            list(&self.voters),
            list(&self.learners)
        )
    }
}
