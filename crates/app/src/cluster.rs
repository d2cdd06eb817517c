//! The member view: the cluster's members as Nacos' cluster node routes
//! show them (`/nacos/v1/core/cluster/nodes`, `/nacos/v2/core/cluster/node/list`,
//! `/nacos/v3/admin/core/cluster/node/list`), from the Raft membership this
//! node has applied and what this node knows of each member's health.
//!
//! A member's state, as Nacos names it (`NodeState`):
//!
//! * this node: `UP` while it knows a leader (it can take writes),
//!   `SUSPICIOUS` while it does not (it still serves reads);
//! * another member, by its `/health` probe (200 while it knows a leader):
//!   `UP` when it answers 200, `SUSPICIOUS` when it answers something else
//!   (it runs but knows no leader), `DOWN` when it does not answer.
//!
//! Nacos' `STARTING` and `ISOLATION` have no Tacos counterpart and are
//! never shown.

use tacos_core::types::{NodeId, RaftMetrics};

/// A member's state, as Nacos' `NodeState` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    Up,
    Suspicious,
    Down,
}

impl NodeState {
    /// Nacos' name (`UP`, `SUSPICIOUS`, `DOWN`).
    pub fn name(self) -> &'static str {
        match self {
            NodeState::Up => "UP",
            NodeState::Suspicious => "SUSPICIOUS",
            NodeState::Down => "DOWN",
        }
    }

    /// Parses a state filter as Nacos does (`NodeState.valueOf` of the
    /// upper-cased text). `Ok(None)` for a state Nacos knows that no Tacos
    /// member ever has (`STARTING`, `ISOLATION`): it matches nothing.
    pub fn parse(text: &str) -> Result<Option<NodeState>, IllegalState> {
        match text.to_uppercase().as_str() {
            "UP" => Ok(Some(NodeState::Up)),
            "SUSPICIOUS" => Ok(Some(NodeState::Suspicious)),
            "DOWN" => Ok(Some(NodeState::Down)),
            "STARTING" | "ISOLATION" => Ok(None),
            _ => Err(IllegalState(text.to_string())),
        }
    }
}

/// A state filter Nacos does not know, with Nacos' message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Illegal state: {0}")]
pub struct IllegalState(pub String);

/// What a probe of a member's health found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// It answered and knows a leader.
    Serving,
    /// It answered but knows no leader.
    NoLeader,
    /// It did not answer in time.
    Unreachable,
}

impl Health {
    fn state(self) -> NodeState {
        match self {
            Health::Serving => NodeState::Up,
            Health::NoLeader => NodeState::Suspicious,
            Health::Unreachable => NodeState::Down,
        }
    }
}

/// A member's place in Raft, as this node knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
    Learner,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Follower => "follower",
            Role::Learner => "learner",
        }
    }
}

/// One member as this node sees it.
#[derive(Debug, Clone)]
pub struct Member {
    pub id: NodeId,
    /// Where clients reach it (HTTP, `host:port`): Nacos' member address.
    pub http_addr: String,
    /// Where members reach it (Raft traffic).
    pub cluster_addr: String,
    pub role: Role,
    /// The member answering the request.
    pub this_node: bool,
    pub state: NodeState,
}

impl Member {
    /// The host of [`Self::http_addr`].
    pub fn ip(&self) -> &str {
        split_addr(&self.http_addr).0
    }

    /// The port of [`Self::http_addr`] (-1 when it has none, as Nacos'
    /// default).
    pub fn port(&self) -> i64 {
        split_addr(&self.http_addr).1
    }

    /// The port of [`Self::cluster_addr`], if it has one.
    pub fn cluster_port(&self) -> Option<i64> {
        let port = split_addr(&self.cluster_addr).1;
        (port >= 0).then_some(port)
    }
}

fn split_addr(addr: &str) -> (&str, i64) {
    match addr.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().unwrap_or(-1)),
        None => (addr, -1),
    }
}

/// This node's view of the Raft group: what Nacos keeps as a member's
/// `raftMetaData`.
#[derive(Debug, Clone)]
pub struct GroupView {
    /// The leader's cluster address, if a leader is known.
    pub leader: Option<String>,
    pub term: u64,
    /// The voters' cluster addresses.
    pub voters: Vec<String>,
}

/// The members of the applied membership (voters and learners), sorted by
/// HTTP address as Nacos sorts members; `health` says what a probe of
/// each other member found (it is not asked for this node).
pub fn members(
    metrics: &RaftMetrics,
    me: NodeId,
    mut health: impl FnMut(NodeId) -> Health,
) -> Vec<Member> {
    let membership = metrics.membership_config.membership();
    let voters: Vec<NodeId> = membership.voter_ids().collect();
    let mut members: Vec<Member> = membership
        .nodes()
        .map(|(id, node)| {
            let role = if metrics.current_leader == Some(*id) {
                Role::Leader
            } else if voters.contains(id) {
                Role::Follower
            } else {
                Role::Learner
            };
            let state = if *id == me {
                if metrics.current_leader.is_some() {
                    NodeState::Up
                } else {
                    NodeState::Suspicious
                }
            } else {
                health(*id).state()
            };
            Member {
                id: *id,
                http_addr: node.http_addr.clone(),
                cluster_addr: node.cluster_addr.clone(),
                role,
                this_node: *id == me,
                state,
            }
        })
        .collect();
    members.sort_by(|a, b| a.http_addr.cmp(&b.http_addr));
    members
}

/// Which members an address-server list (`GET /nacos/serverlist`) hands
/// a client in `zone` (`None`: no zone): the serving (`UP`) members of that
/// zone, only its learners when it has serving ones (voters keep their
/// CPU for commits; learners are there to serve clients); with no serving
/// member in the zone (or no zone), every serving member; with none
/// serving at all, every member (an empty list strands the SDKs). `zone_of`
/// says a member's zone as this node knows it.
pub fn server_list(
    members: &[Member],
    zone: Option<&str>,
    zone_of: impl Fn(&Member) -> Option<String>,
) -> Vec<String> {
    let serving: Vec<&Member> = members
        .iter()
        .filter(|m| m.state == NodeState::Up)
        .collect();
    let in_zone: Vec<&Member> = match zone {
        Some(zone) => serving
            .iter()
            .copied()
            .filter(|m| zone_of(m).as_deref() == Some(zone))
            .collect(),
        None => Vec::new(),
    };
    let learners: Vec<&Member> = in_zone
        .iter()
        .copied()
        .filter(|m| m.role == Role::Learner)
        .collect();
    let chosen = if !learners.is_empty() {
        learners
    } else if !in_zone.is_empty() {
        in_zone
    } else if !serving.is_empty() {
        serving
    } else {
        members.iter().collect()
    };
    chosen.iter().map(|m| m.http_addr.clone()).collect()
}

/// This node as a member ([`members`] without probing anyone), if the
/// applied membership holds it yet (a node that has not joined does not).
pub fn this_member(metrics: &RaftMetrics, me: NodeId) -> Option<Member> {
    members(metrics, me, |_| Health::Unreachable)
        .into_iter()
        .find(|m| m.this_node)
}

/// This node's view of the group.
pub fn group_view(metrics: &RaftMetrics) -> GroupView {
    let membership = metrics.membership_config.membership();
    let addr = |id: &NodeId| membership.get_node(id).map(|n| n.cluster_addr.clone());
    GroupView {
        leader: metrics.current_leader.as_ref().and_then(addr),
        term: metrics.current_term,
        voters: membership.voter_ids().filter_map(|id| addr(&id)).collect(),
    }
}

/// Nacos' member filter: the address starts with `address` (blank: any)
/// and the state is `state` (when given).
pub fn matches(member: &Member, address: &str, state: Option<NodeState>) -> bool {
    member.http_addr.starts_with(address.trim()) && state.is_none_or(|s| member.state == s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_as_nacos_names_them() {
        assert_eq!(NodeState::parse("up"), Ok(Some(NodeState::Up)));
        assert_eq!(
            NodeState::parse("Suspicious"),
            Ok(Some(NodeState::Suspicious))
        );
        assert_eq!(NodeState::parse("DOWN"), Ok(Some(NodeState::Down)));
        assert_eq!(NodeState::parse("starting"), Ok(None));
        assert_eq!(NodeState::parse("ISOLATION"), Ok(None));
        assert!(NodeState::parse("sick").is_err());
        assert!(NodeState::parse("").is_err());
    }

    #[test]
    fn server_lists_prefer_the_zone_s_serving_learners() {
        let member = |id: NodeId, role, state| Member {
            id,
            http_addr: format!("10.0.0.{id}:8848"),
            cluster_addr: format!("10.0.0.{id}:9849"),
            role,
            this_node: false,
            state,
        };
        let members = vec![
            member(1, Role::Leader, NodeState::Up),
            member(2, Role::Follower, NodeState::Up),
            member(3, Role::Follower, NodeState::Up),
            member(4, Role::Learner, NodeState::Up),
            member(5, Role::Learner, NodeState::Down),
            member(6, Role::Learner, NodeState::Down),
        ];
        let zone_of =
            |m: &Member| Some(["a", "a", "b", "b", "b", "c"][m.id as usize - 1].to_string());
        let list = |zone| server_list(&members, zone, zone_of);
        assert_eq!(list(Some("b")), ["10.0.0.4:8848"]);
        assert_eq!(list(Some("a")), ["10.0.0.1:8848", "10.0.0.2:8848"]);
        // No serving member in the zone, or no zone: every serving one.
        let serving = [
            "10.0.0.1:8848",
            "10.0.0.2:8848",
            "10.0.0.3:8848",
            "10.0.0.4:8848",
        ];
        assert_eq!(list(Some("c")), serving);
        assert_eq!(list(None), serving);
        // Nobody serving: everyone, rather than nothing.
        let down: Vec<Member> = members
            .iter()
            .cloned()
            .map(|m| Member {
                state: NodeState::Down,
                ..m
            })
            .collect();
        assert_eq!(server_list(&down, Some("a"), zone_of).len(), 6);
    }

    #[test]
    fn addresses_split_into_host_and_port() {
        let member = Member {
            id: 1,
            http_addr: "10.0.0.1:8848".into(),
            cluster_addr: "10.0.0.1:10849".into(),
            role: Role::Leader,
            this_node: true,
            state: NodeState::Up,
        };
        assert_eq!((member.ip(), member.port()), ("10.0.0.1", 8848));
        assert_eq!(member.cluster_port(), Some(10849));
        assert!(matches(&member, "10.0.0", Some(NodeState::Up)));
        assert!(matches(&member, "", None));
        assert!(!matches(&member, "10.0.1", None));
        assert!(!matches(&member, "", Some(NodeState::Down)));
        assert_eq!(split_addr("nohost"), ("nohost", -1));
    }
}
