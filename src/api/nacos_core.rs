//! Nacos' core routes of every generation: the server state the consoles
//! read before a login, and the cluster's members (Nacos' `Member` list)
//! from the Raft membership and what this node knows of each member's
//! health (the rule is `tacos_app::cluster`'s).
//!
//! | route | needs | what |
//! |---|---|---|
//! | `GET /nacos/v1/console/server/state` | public | Nacos' state map (every value a string), no envelope |
//! | `GET /nacos/v1/core/cluster/nodes` | admin | `keyword` (address prefix) → `RestResult<[Member]>` |
//! | `GET /nacos/v2/core/cluster/node/list` | admin | `address` (prefix), `state` → `Result<[Member]>` |
//! | `GET /nacos/v3/admin/core/cluster/node/list` | admin | as v2, in Nacos 3's envelope |
//! | `GET /nacos/v1/core/cluster/self`, `/nacos/v2/core/cluster/node/self`, `/nacos/v3/admin/core/cluster/node/self` | admin | this node's `Member` |
//! | `GET /nacos/v1/core/cluster/health`, `/nacos/v2/core/cluster/node/self/health` | admin | this node's state (`UP`, `SUSPICIOUS`) |
//! | `GET /nacos/v1/core/cluster/simple/nodes` | admin | the members' addresses |
//! | Nacos' member writes (`PUT .../node/list`, `PUT .../lookup`, `POST /nacos/v1/core/cluster/switch/lookup`, `/report`, `/server/leave`, `DELETE /nacos/v2/core/cluster/nodes`) | admin | refused, 501: Tacos' members are its Raft membership (docs/cluster.md) |

use std::collections::BTreeMap;

use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;

use super::call::Call;
use super::guard::{Need, Routes};
use super::listener_views::LISTENERS_TIMEOUT;
use super::params::Params;
use super::render::{rest_ok, v1_error, v2_error, v2_ok};
use crate::api::app_state::AppState;
use tacos_app::cluster::{self, Health, Member, NodeState};
use tacos_raft::NodeId;

pub fn routes(r: &mut Routes) {
    r.get("/nacos/v1/console/server/state", Need::Public, v1_state)
        .get("/nacos/v1/core/cluster/nodes", Need::Admin, v1_nodes)
        .get("/nacos/v2/core/cluster/node/list", Need::Admin, node_list)
        .get(
            "/nacos/v3/admin/core/cluster/node/list",
            Need::Admin,
            node_list,
        )
        .get("/nacos/v1/core/cluster/self", Need::Admin, v1_self)
        .get("/nacos/v2/core/cluster/node/self", Need::Admin, self_node)
        .get(
            "/nacos/v3/admin/core/cluster/node/self",
            Need::Admin,
            self_node,
        )
        .get("/nacos/v1/core/cluster/health", Need::Admin, v1_self_health)
        .get(
            "/nacos/v2/core/cluster/node/self/health",
            Need::Admin,
            self_health,
        )
        .get(
            "/nacos/v1/core/cluster/simple/nodes",
            Need::Admin,
            v1_simple_nodes,
        )
        .get("/nacos/serverlist", Need::Public, server_list);
    // Nacos' own member management (its members file, address server,
    // member reports) has no counterpart: Tacos' members are its Raft
    // membership, changed one at a time through the leader. Refused with a
    // pointer rather than a bare 404, so an operator's tool says why.
    for (method, path) in [
        (Method::PUT, "/nacos/v2/core/cluster/node/list"),
        (Method::PUT, "/nacos/v2/core/cluster/lookup"),
        (Method::DELETE, "/nacos/v2/core/cluster/nodes"),
        (Method::PUT, "/nacos/v3/admin/core/cluster/node/list"),
        (Method::PUT, "/nacos/v3/admin/core/cluster/lookup"),
        (Method::POST, "/nacos/v1/core/cluster/switch/lookup"),
        (Method::POST, "/nacos/v1/core/cluster/report"),
        (Method::POST, "/nacos/v1/core/cluster/server/leave"),
    ] {
        r.add(method, path, Need::Admin, member_write_refused);
    }
}

/// What the refused member writes answer.
pub const MEMBER_WRITES_REFUSED: &str = "Tacos does not take Nacos' member lists or lookup modes: \
its members are its Raft membership, changed through POST /tacos/v1/admin/cluster/learners, \
POST /tacos/v1/admin/cluster/voters and DELETE /tacos/v1/admin/cluster/members (docs/cluster.md)";

/// Nacos' member writes: 501 with [`MEMBER_WRITES_REFUSED`], in the
/// generation's envelope (v1 plain text).
async fn member_write_refused(req: HttpRequest) -> HttpResponse {
    if req.path().starts_with("/nacos/v1/") {
        return v1_error(StatusCode::NOT_IMPLEMENTED, MEMBER_WRITES_REFUSED);
    }
    v2_error(
        StatusCode::NOT_IMPLEMENTED,
        SERVER_ERROR_CODE,
        "server error",
        MEMBER_WRITES_REFUSED,
    )
}

/// Nacos' server state (`NacosServerStateService`: the module states,
/// every value a string), with what Tacos really is: a config server
/// (`function_mode`), one node or a cluster, a login always required (its
/// console has a login page), no first admin to set up (the cluster's
/// first start sets it), and its content limit. `port` is the port the
/// request came in on. With `console`, also the keys of the console's
/// modules (Nacos 2 answers every module's state on the console route;
/// Nacos 3 keeps them out of the server's): `login_page_enabled`,
/// `console_ui_enabled`, and `standalone_mode` (Nacos 1's name of
/// `startup_mode`, which Nacos 1 consoles read).
pub fn server_state(app: &AppState, port: u16, console: bool) -> BTreeMap<&'static str, String> {
    let members = app
        .node
        .metrics()
        .membership_config
        .membership()
        .nodes()
        .count();
    let mode = if members > 1 { "cluster" } else { "standalone" };
    let mut state: BTreeMap<&'static str, String> = [
        ("startup_mode", mode.to_string()),
        ("function_mode", "config".to_string()),
        ("version", env!("CARGO_PKG_VERSION").to_string()),
        ("server_port", port.to_string()),
        ("auth_enabled", "true".to_string()),
        ("auth_system_type", "nacos".to_string()),
        ("auth_admin_request", "false".to_string()),
        ("maxContent", app.service.max_content_size().to_string()),
    ]
    .into_iter()
    .collect();
    if console {
        state.insert("standalone_mode", mode.to_string());
        state.insert("login_page_enabled", "true".to_string());
        state.insert("console_ui_enabled", "true".to_string());
    }
    state
}

/// `GET /nacos/v1/console/server/state`: the map itself (Nacos answers it
/// without an envelope).
async fn v1_state(req: HttpRequest, app: web::Data<AppState>) -> HttpResponse {
    let port = req.app_config().local_addr().port();
    HttpResponse::Ok().json(server_state(&app, port, true))
}

/// A member as Nacos' `Member` serializes: `ip`, `port`, `state`,
/// `extendInfo`, `address`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MemberView {
    ip: String,
    port: i64,
    state: &'static str,
    extend_info: BTreeMap<&'static str, serde_json::Value>,
    address: String,
}

/// The group name of Tacos' one Raft group in `raftMetaData`.
const RAFT_GROUP: &str = "tacos_config";

impl MemberView {
    /// `extendInfo`: every member's `raftPort` (its cluster port, a string
    /// as Nacos writes it) and, Tacos' own keys, `nodeId` and `raftRole`
    /// (`leader`, `follower`, `learner`, as this node knows them); this
    /// node's also `version` and `raftMetaData` (its view of the group:
    /// leader, term, voters, as Nacos' JRaft members report theirs). What
    /// this node cannot know of another member (its version, its own view)
    /// is left out.
    fn of(member: &Member, group: &cluster::GroupView) -> Self {
        let mut extend = BTreeMap::new();
        if let Some(port) = member.cluster_port() {
            extend.insert("raftPort", port.to_string().into());
        }
        extend.insert("nodeId", member.id.into());
        extend.insert("raftRole", member.role.name().into());
        if member.this_node {
            extend.insert("version", env!("CARGO_PKG_VERSION").into());
            let mut view = serde_json::Map::new();
            if let Some(leader) = &group.leader {
                view.insert("leader".into(), leader.clone().into());
            }
            view.insert("raftGroupMember".into(), group.voters.clone().into());
            view.insert("term".into(), group.term.into());
            extend.insert(
                "raftMetaData",
                serde_json::json!({ "metaDataMap": { RAFT_GROUP: view } }),
            );
        }
        MemberView {
            ip: member.ip().to_string(),
            port: member.port(),
            state: member.state.name(),
            extend_info: extend,
            address: member.http_addr.clone(),
        }
    }
}

/// What a `/health` probe of another member found.
#[derive(Debug, Clone)]
struct Probe {
    health: Health,
    /// Its `--zone`, from the answer's `X-Tacos-Zone`.
    zone: Option<String>,
}

/// Asks `GET /health` of every other member, in parallel, each within
/// [`LISTENERS_TIMEOUT`].
async fn probe_others(app: &AppState) -> BTreeMap<NodeId, Probe> {
    let others = app.other_members();
    if others.is_empty() {
        return BTreeMap::new();
    }
    let client = app.peer_http.client(LISTENERS_TIMEOUT);
    let unreachable = Probe {
        health: Health::Unreachable,
        zone: None,
    };
    let Ok(client) = client else {
        return others
            .into_iter()
            .map(|(id, _)| (id, unreachable.clone()))
            .collect();
    };
    let probes = others.into_iter().map(|(id, addr)| {
        let client = &client;
        let unreachable = unreachable.clone();
        async move {
            let probe = match client.get(&addr, "/health").send().await {
                Ok(r) => Probe {
                    health: if r.status().is_success() {
                        Health::Serving
                    } else {
                        Health::NoLeader
                    },
                    zone: r
                        .headers()
                        .get(super::health::ZONE_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string),
                },
                Err(_) => unreachable,
            };
            (id, probe)
        }
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .collect()
}

/// The members with what the probes found of the others.
async fn probed_members(app: &AppState) -> (Vec<Member>, BTreeMap<NodeId, Probe>) {
    let probes = probe_others(app).await;
    let metrics = app.node.metrics();
    let members = cluster::members(&metrics, app.node.id, |id| {
        probes.get(&id).map_or(Health::Unreachable, |p| p.health)
    });
    (members, probes)
}

/// The members as Nacos shows them, those `keep` keeps.
async fn member_views(app: &AppState, keep: impl Fn(&Member) -> bool) -> Vec<MemberView> {
    let (members, _) = probed_members(app).await;
    let group = cluster::group_view(&app.node.metrics());
    members
        .iter()
        .filter(|m| keep(m))
        .map(|m| MemberView::of(m, &group))
        .collect()
}

/// This node's member view; `None` (answered 503) before it has joined.
fn this_member(app: &AppState) -> Option<MemberView> {
    let metrics = app.node.metrics();
    let group = cluster::group_view(&metrics);
    cluster::this_member(&metrics, app.node.id).map(|m| MemberView::of(&m, &group))
}

const NOT_A_MEMBER: &str = "this node is not in the cluster's membership yet";

/// Nacos' `ErrorCode.SERVER_ERROR`. Nacos has no code for "not
/// supported"; the refused member writes use this one (with status 501),
/// so a client that reads only `code` sees a failure.
const SERVER_ERROR_CODE: u32 = 30000;

/// `GET /nacos/v1/core/cluster/self`: `RestResult<Member>`.
async fn v1_self(app: web::Data<AppState>) -> HttpResponse {
    match this_member(&app) {
        Some(me) => v1_ok(me),
        None => v1_error(StatusCode::SERVICE_UNAVAILABLE, NOT_A_MEMBER),
    }
}

/// `GET /nacos/v2/core/cluster/node/self`, `/nacos/v3/admin/core/cluster/node/self`.
async fn self_node(app: web::Data<AppState>) -> HttpResponse {
    match this_member(&app) {
        Some(me) => v2_ok(me),
        None => v2_error(
            StatusCode::SERVICE_UNAVAILABLE,
            SERVER_ERROR_CODE,
            "server error",
            NOT_A_MEMBER,
        ),
    }
}

/// This node's state as Nacos names it: `UP` while it knows a leader,
/// `SUSPICIOUS` while it does not.
fn self_state(app: &AppState) -> &'static str {
    if app.node.metrics().current_leader.is_some() {
        NodeState::Up.name()
    } else {
        NodeState::Suspicious.name()
    }
}

/// `GET /nacos/v1/core/cluster/health`: `RestResult<String>`.
async fn v1_self_health(app: web::Data<AppState>) -> HttpResponse {
    v1_ok(self_state(&app))
}

/// `GET /nacos/v2/core/cluster/node/self/health`.
async fn self_health(app: web::Data<AppState>) -> HttpResponse {
    v2_ok(self_state(&app))
}

/// `GET /nacos/v1/core/cluster/simple/nodes`: the members' addresses.
async fn v1_simple_nodes(app: web::Data<AppState>) -> HttpResponse {
    let metrics = app.node.metrics();
    let addresses: Vec<String> = cluster::members(&metrics, app.node.id, |_| Health::Unreachable)
        .into_iter()
        .map(|m| m.http_addr)
        .collect();
    v1_ok(addresses)
}

/// `GET /nacos/serverlist[?zone=]`: the address-server list SDKs
/// configured with an `endpoint` fetch (Java, Node; the path is their
/// default `/nacos/serverlist`): `ip:port` lines, chosen by
/// [`cluster::server_list`] for the zone asked (`zone`, else this node's
/// `--zone`). Public, as Nacos' address server is (it names addresses the
/// clients reach anyway); other parameters (`namespace`) are ignored.
async fn server_list(req: HttpRequest, app: web::Data<AppState>) -> HttpResponse {
    let params = Params::parse(&req, &[]);
    let zone = params
        .get("zone")
        .filter(|z| !z.trim().is_empty())
        .map(str::to_string)
        .or_else(|| app.zone.clone());
    let (mut members, probes) = probed_members(&app).await;
    // This node as its own /health would say: a learner too far behind
    // does not serve.
    if app.service.readable().is_err() {
        for m in members.iter_mut().filter(|m| m.this_node) {
            m.state = NodeState::Suspicious;
        }
    }
    let me = app.node.id;
    let list = cluster::server_list(&members, zone.as_deref(), |m| {
        if m.id == me {
            app.zone.clone()
        } else {
            probes.get(&m.id).and_then(|p| p.zone.clone())
        }
    });
    let mut body = list.join("\n");
    body.push('\n');
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body(body)
}

/// Nacos' `RestResult` success: `{code: 200, message: null, data}`.
fn v1_ok(data: impl Serialize) -> HttpResponse {
    rest_ok(None, data)
}

/// `GET /nacos/v1/core/cluster/nodes?keyword=`: `RestResult` of the
/// members whose address starts with `keyword` (blank: all), by address.
async fn v1_nodes(call: Call) -> HttpResponse {
    let Call { app, params, .. } = call;
    let keyword = params.str("keyword").to_string();
    let members = member_views(&app, |m| cluster::matches(m, &keyword, None)).await;
    v1_ok(members)
}

/// `GET /nacos/v2/core/cluster/node/list` and
/// `/nacos/v3/admin/core/cluster/node/list`: `address` (prefix, blank:
/// any), `state` (Nacos' `NodeState`, any case) → the members in the
/// `Result` envelope; an unknown state is 400 code 23000.
async fn node_list(call: Call) -> HttpResponse {
    let Call { app, params, .. } = call;
    let address = params.str("address").to_string();
    let state = match params.get("state").filter(|s| !s.trim().is_empty()) {
        None => None,
        Some(raw) => match NodeState::parse(raw) {
            Ok(Some(state)) => Some(state),
            // A state no Tacos member is ever in: nobody.
            Ok(None) => return v2_ok(Vec::<MemberView>::new()),
            Err(illegal) => {
                return v2_error(StatusCode::BAD_REQUEST, 23000, "illegal state", illegal)
            }
        },
    };
    v2_ok(member_views(&app, |m| cluster::matches(m, &address, state)).await)
}
