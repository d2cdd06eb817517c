//! The console's cluster page: every member's Raft view and health in one
//! answer.
//!
//! A node knows its own Raft metrics; only the leader knows how far each
//! follower has replicated. So this node answers for itself from memory
//! and asks every other member's HTTP address (from the Raft membership)
//! for `/tacos/v1/admin/raft` and `/health`, in parallel, forwarding the
//! caller's own credentials (tokens are valid on every node; the route
//! needs an admin anyway). Lag per follower comes from the leader's view.
//! A member that does not answer within [`PEER_TIMEOUT`] is shown as
//! unreachable with the reason; the page never fails because one node is
//! down.

use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::http::header::AUTHORIZATION;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use super::answer::{ok_json, ConsoleError};
use crate::api::app_state::AppState;
use crate::tls::PeerClient;
use tacos_raft::NodeId;

/// How long one member may take to answer.
const PEER_TIMEOUT: Duration = Duration::from_secs(2);

/// What `/tacos/v1/admin/raft` answers (the fields the page shows).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RaftView {
    state: String,
    term: u64,
    leader: Option<NodeId>,
    last_log_index: Option<u64>,
    committed: Option<u64>,
    applied: Option<u64>,
    snapshot: Option<u64>,
    /// The leader's lag per member (read from peers, not shown).
    #[serde(skip_serializing)]
    lag: Option<BTreeMap<NodeId, u64>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeView {
    id: NodeId,
    /// `voter` or `learner`.
    role: &'static str,
    cluster_addr: String,
    http_addr: String,
    /// The node that answered this request.
    this_node: bool,
    reachable: bool,
    /// `/health` answered 200 (the node knows a leader).
    healthy: bool,
    #[serde(flatten)]
    raft: RaftView,
    /// Entries behind the leader's last log index (from the leader).
    lag_entries: Option<u64>,
    error: Option<String>,
}

fn own_view(app: &AppState) -> RaftView {
    let metrics = app.node.metrics();
    let last = metrics.last_log_index.unwrap_or(0);
    RaftView {
        state: format!("{:?}", metrics.state),
        term: metrics.current_term,
        leader: metrics.current_leader,
        last_log_index: metrics.last_log_index,
        committed: app.node.committed().map(|l| l.index),
        applied: metrics.last_applied.map(|l| l.index),
        snapshot: metrics.snapshot.map(|l| l.index),
        lag: metrics.replication.as_ref().map(|r| {
            r.iter()
                .map(|(id, matched)| (*id, last.saturating_sub(matched.map_or(0, |l| l.index))))
                .collect()
        }),
    }
}

/// A client for asking other members (no proxy, short timeouts).
pub(super) fn peer_client(app: &AppState) -> Result<PeerClient, ConsoleError> {
    app.peer_http
        .client(PEER_TIMEOUT)
        .map_err(|e| ConsoleError::Internal(format!("building an HTTP client: {e}")))
}

/// The caller's `Authorization` header, to forward to other members.
pub(super) fn authorization(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `GET http://{http_addr}{path_and_query}` as JSON, forwarding the
/// caller's credentials.
pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
    client: &PeerClient,
    http_addr: &str,
    path_and_query: &str,
    authorization: Option<&str>,
) -> Result<T, String> {
    let mut request = client.get(http_addr, path_and_query);
    if let Some(value) = authorization {
        request = request.header(AUTHORIZATION.as_str(), value);
    }
    let path = path_and_query.split('?').next().unwrap_or_default();
    let response = request.send().await.map_err(|e| unreachable(path, &e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{path} answered {status}"));
    }
    let body = response.bytes().await.map_err(|e| unreachable(path, &e))?;
    serde_json::from_slice(&body).map_err(|e| format!("{path} answered unreadable JSON: {e}"))
}

/// A request error as a short reason: what went wrong at the bottom
/// (e.g. "Connection refused"), not reqwest's whole URL.
fn unreachable(path: &str, error: &reqwest::Error) -> String {
    let mut root: &dyn std::error::Error = error;
    while let Some(source) = root.source() {
        root = source;
    }
    let what = if error.is_timeout() {
        "timed out".to_string()
    } else {
        root.to_string()
    };
    format!("{path}: {what}")
}

/// Asks one member for its Raft view and health.
async fn ask(
    client: &PeerClient,
    http_addr: &str,
    authorization: Option<&str>,
) -> Result<(RaftView, bool), String> {
    let view: RaftView = get_json(client, http_addr, "/tacos/v1/admin/raft", authorization).await?;
    let healthy = client
        .get(http_addr, "/health")
        .send()
        .await
        .is_ok_and(|r| r.status().is_success());
    Ok((view, healthy))
}

pub async fn overview(
    req: HttpRequest,
    app: web::Data<AppState>,
) -> Result<HttpResponse, ConsoleError> {
    let metrics = app.node.metrics();
    let membership = metrics.membership_config.membership().clone();
    let me = app.node.id;
    let authorization = authorization(&req);
    let client = peer_client(&app)?;
    let voters: Vec<NodeId> = membership.voter_ids().collect();
    let members: Vec<(NodeId, &'static str)> = voters
        .iter()
        .map(|id| (*id, "voter"))
        .chain(membership.learner_ids().map(|id| (id, "learner")))
        .collect();
    let asks = members.iter().map(|(id, role)| {
        let node = membership.get_node(id).cloned().unwrap_or_default();
        let (client, authorization) = (&client, authorization.as_deref());
        let app = &app;
        async move {
            let (raft, reachable, healthy, error) = if *id == me {
                let view = own_view(app);
                let healthy = view.leader.is_some();
                (view, true, healthy, None)
            } else {
                match ask(client, &node.http_addr, authorization).await {
                    Ok((view, healthy)) => (view, true, healthy, None),
                    Err(e) => (RaftView::default(), false, false, Some(e)),
                }
            };
            NodeView {
                id: *id,
                role,
                cluster_addr: node.cluster_addr,
                http_addr: node.http_addr,
                this_node: *id == me,
                reachable,
                healthy,
                raft,
                lag_entries: None,
                error,
            }
        }
    });
    let mut nodes = futures::future::join_all(asks).await;
    let leader = metrics.current_leader;
    let leader_lag = nodes
        .iter()
        .find(|n| Some(n.id) == leader)
        .and_then(|n| n.raft.lag.clone())
        .unwrap_or_default();
    for node in &mut nodes {
        node.lag_entries = leader_lag.get(&node.id).copied();
    }
    Ok(ok_json(serde_json::json!({
        "nodeId": me,
        "leader": leader,
        "term": metrics.current_term,
        "voters": voters,
        "nodes": nodes,
    })))
}
