//! Cluster administration (JSON). Membership changes are routed to the
//! leader from whichever node receives them.
//!
//! | route | what |
//! |---|---|
//! | `GET /tacos/v1/admin/raft` | this node's Raft view: term, leader, last log, committed, applied, snapshot, per-follower match index (on the leader) |
//! | `GET /tacos/v1/admin/cluster/members` | voters and learners with their addresses, and the leader |
//! | `POST /tacos/v1/admin/cluster/learners` | `id`, `clusterAddr`, `httpAddr`: add a learner |
//! | `POST /tacos/v1/admin/cluster/voters` | `id`: promote a learner to voter |
//! | `DELETE /tacos/v1/admin/cluster/members` | `id`: remove a voter or learner |
//! | `GET /tacos/v1/admin/digest` | applied index, config count and a digest of the whole state |
//! | `GET /tacos/v1/admin/backup` | a snapshot file of this node's applied state (`consistency=linearizable` to catch up with the leader first); headers `X-Tacos-Digest`, `X-Tacos-Applied` |
//! | `GET /tacos/v1/admin/listeners` | held long polls, gRPC connections listening, and the keys they listen to |
//! | `GET /tacos/v1/admin/samples` | this node's dashboard samples: one a second for 5 minutes, one every 5 s for an hour ([`crate::samples`]) |

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;

use super::guard::{Need, Routes};
use super::params::{client_ip, Params};
use crate::api::app_state::AppState;
use crate::api::call::{Call, FormCall};
use tacos_app::auth::Principal;
use tacos_app::service::Caller;
use tacos_raft::rpc::{ForwardReply, Request, RouteError};
use tacos_raft::{NodeId, NodeInfo};

pub fn routes(r: &mut Routes) {
    r.get("/tacos/v1/admin/raft", Need::Admin, raft_status)
        .get("/tacos/v1/admin/cluster/members", Need::Admin, members)
        .post("/tacos/v1/admin/cluster/learners", Need::Admin, add_learner)
        .post("/tacos/v1/admin/cluster/voters", Need::Admin, promote)
        .delete("/tacos/v1/admin/cluster/members", Need::Admin, remove)
        .get("/tacos/v1/admin/digest", Need::Admin, digest)
        .get(crate::backup::ROUTE, Need::Admin, backup)
        .get("/tacos/v1/admin/listeners", Need::Admin, listeners)
        .get("/tacos/v1/admin/samples", Need::Admin, samples);
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RaftStatus {
    node_id: NodeId,
    state: String,
    term: u64,
    leader: Option<NodeId>,
    last_log_index: Option<u64>,
    committed: Option<u64>,
    applied: Option<u64>,
    snapshot: Option<u64>,
    purged: Option<u64>,
    /// On the leader: the last index known to be replicated on each member.
    replication: Option<BTreeMap<NodeId, Option<u64>>>,
    /// On the leader: how far behind each member's match index is.
    lag: Option<BTreeMap<NodeId, u64>>,
    /// On a learner: how far behind the leader it last measured itself,
    /// and whether it serves reads ([`tacos_raft::freshness`]).
    learner: Option<LearnerView>,
    members: Members,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LearnerView {
    /// Entries behind the leader's read index at the last check (null
    /// before the first).
    lag_entries: Option<u64>,
    /// Milliseconds since the last successful check (null before the first).
    checked_ms_ago: Option<u128>,
    /// Whether it serves reads now, and why not.
    serving: bool,
    behind: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Members {
    leader: Option<NodeId>,
    voters: Vec<Member>,
    learners: Vec<Member>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Member {
    id: NodeId,
    cluster_addr: String,
    http_addr: String,
}

fn members_of(app: &AppState) -> Members {
    let metrics = app.node.metrics();
    let membership = metrics.membership_config.membership();
    let member = |id: NodeId| {
        let node = membership.get_node(&id).cloned().unwrap_or_default();
        Member {
            id,
            cluster_addr: node.cluster_addr,
            http_addr: node.http_addr,
        }
    };
    Members {
        leader: metrics.current_leader,
        voters: membership.voter_ids().map(member).collect(),
        learners: membership.learner_ids().map(member).collect(),
    }
}

async fn raft_status(app: web::Data<AppState>) -> HttpResponse {
    let metrics = app.node.metrics();
    let last = metrics.last_log_index.unwrap_or(0);
    let replication = metrics.replication.as_ref().map(|r| {
        r.iter()
            .map(|(id, matched)| (*id, matched.map(|l| l.index)))
            .collect::<BTreeMap<_, _>>()
    });
    let lag = replication.as_ref().map(|r| {
        r.iter()
            .map(|(id, matched)| (*id, last.saturating_sub(matched.unwrap_or(0))))
            .collect()
    });
    HttpResponse::Ok().json(RaftStatus {
        node_id: metrics.id,
        state: format!("{:?}", metrics.state),
        term: metrics.current_term,
        leader: metrics.current_leader,
        last_log_index: metrics.last_log_index,
        committed: app.node.committed().map(|l| l.index),
        applied: metrics.last_applied.map(|l| l.index),
        snapshot: metrics.snapshot.map(|l| l.index),
        purged: metrics.purged.map(|l| l.index),
        replication,
        lag,
        learner: app.node.learner_lag().map(|lag| {
            let behind = app.service.readable().err();
            LearnerView {
                lag_entries: lag.entries,
                checked_ms_ago: lag.age.map(|a| a.as_millis()),
                serving: behind.is_none(),
                behind: behind.map(|b| b.to_string()),
            }
        }),
        members: members_of(&app),
    })
}

async fn samples(app: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(app.samples.snapshot(app.node.id))
}

async fn members(app: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(members_of(&app))
}

fn bad_request(message: String) -> HttpResponse {
    HttpResponse::BadRequest().json(serde_json::json!({ "error": message }))
}

fn node_id(params: &Params) -> Result<NodeId, String> {
    match params.get("id").map(str::parse::<NodeId>) {
        Some(Ok(id)) if id > 0 => Ok(id),
        Some(_) => Err("id must be a node id (1 or more)".into()),
        None => Err("id is required".into()),
    }
}

fn address(params: &Params, name: &'static str) -> Result<String, String> {
    match params.get(name) {
        Some(addr) if addr.contains(':') && !addr.contains(['/', ' ']) => Ok(addr.to_string()),
        Some(addr) => Err(format!("{name} {addr:?} is not host:port")),
        None => Err(format!("{name} is required (host:port)")),
    }
}

/// What a membership request is recorded as in the audit log.
fn audit_entry(request: &Request) -> (&'static str, String, String) {
    match request {
        Request::AddLearner { id, node } => (
            "membership.add-learner",
            format!("node {id}"),
            format!("cluster={} http={}", node.cluster_addr, node.http_addr),
        ),
        Request::Promote { id } => ("membership.promote", format!("node {id}"), String::new()),
        Request::Remove { id } => ("membership.remove", format!("node {id}"), String::new()),
        other => ("membership", format!("{other:?}"), String::new()),
    }
}

async fn run(app: &AppState, request: Request, caller: Caller) -> HttpResponse {
    let (action, target, detail) = audit_entry(&request);
    let result = app.node.change_membership(request).await;
    let detail = match &result {
        Ok(_) => detail,
        Err(e) => format!("{detail} refused: {e}").trim().to_string(),
    };
    if let Err(e) = app.auth.audit_note(action, &target, &detail, &caller).await {
        tracing::warn!("could not record {action} in the audit log: {e}");
    }
    match result {
        Ok(ForwardReply::Membership {
            log_id,
            voters,
            learners,
        }) => HttpResponse::Ok().json(serde_json::json!({
            "logIndex": log_id.map(|l| l.index),
            "voters": voters,
            "learners": learners,
        })),
        Ok(other) => HttpResponse::InternalServerError()
            .json(serde_json::json!({ "error": format!("unexpected answer: {other:?}") })),
        Err(e) => {
            let status = match e {
                RouteError::Membership(_) => StatusCode::BAD_REQUEST,
                RouteError::Stopped(_) => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            HttpResponse::build(status).json(serde_json::json!({ "error": e.to_string() }))
        }
    }
}

fn caller_of(req: &HttpRequest, principal: &Principal) -> Caller {
    principal.caller("", client_ip(req))
}

async fn add_learner(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let parsed = (|| {
        Ok::<_, String>(Request::AddLearner {
            id: node_id(&params)?,
            node: NodeInfo {
                cluster_addr: address(&params, "clusterAddr")?,
                http_addr: address(&params, "httpAddr")?,
            },
        })
    })();
    match parsed {
        Ok(request) => run(&app, request, caller_of(&req, &principal)).await,
        Err(message) => bad_request(message),
    }
}

async fn promote(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    match node_id(&params) {
        Ok(id) => run(&app, Request::Promote { id }, caller_of(&req, &principal)).await,
        Err(message) => bad_request(message),
    }
}

async fn remove(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    match node_id(&params) {
        Ok(id) => run(&app, Request::Remove { id }, caller_of(&req, &principal)).await,
        Err(message) => bad_request(message),
    }
}

async fn digest(app: web::Data<AppState>) -> HttpResponse {
    let state = app.node.state();
    HttpResponse::Ok().json(serde_json::json!({
        "nodeId": app.node.id,
        "applied": state.last_applied.map(|l| l.index),
        "configs": state.config_count(),
        "digest": state.digest(),
    }))
}

/// A consistent backup: the applied state as one snapshot file, encoded on
/// a blocking thread (it takes time and memory in proportion to the state).
async fn backup(app: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    use crate::backup::{APPLIED_HEADER, DIGEST_HEADER};
    let params = Params::parse(&req, &body);
    if let Err(response) = crate::api::consistency::read_barrier(&app, &req, &params).await {
        return response;
    }
    let state = app.node.state();
    let node_id = app.node.id;
    let kek = app.node.kek();
    match web::block(move || crate::backup::encode(&state, kek.as_deref())).await {
        Ok(backup) => {
            let applied = backup.applied.map_or(0, |l| l.index);
            HttpResponse::Ok()
                .content_type("application/octet-stream")
                .insert_header((DIGEST_HEADER, backup.digest))
                .insert_header((APPLIED_HEADER, applied.to_string()))
                .insert_header((
                    "Content-Disposition",
                    format!("attachment; filename=\"tacos-node{node_id}-{applied}.snap\""),
                ))
                .body(backup.bytes)
        }
        Err(e) => HttpResponse::InternalServerError()
            .json(serde_json::json!({ "error": format!("building the backup failed: {e}") })),
    }
}

async fn listeners(app: web::Data<AppState>) -> HttpResponse {
    match app.hub.send(tacos_app::watch::CountListeners).await {
        Ok(counts) => HttpResponse::Ok().json(serde_json::json!({
            "longPolls": counts.long_polls,
            "grpcConnections": counts.grpc_connections,
            "grpcKeys": counts.grpc_keys,
            "grpcUnlistened": counts.grpc_unlistened,
            "fuzzyWatches": counts.fuzzy_watches,
            "fuzzyPatterns": counts.fuzzy_patterns,
        })),
        Err(e) => HttpResponse::InternalServerError()
            .json(serde_json::json!({ "error": format!("the watch hub stopped: {e}") })),
    }
}
