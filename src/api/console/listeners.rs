//! The console's listener view of one config: who listens, gathered from
//! every node, which version each holds and should hold (formal or a gray:
//! [`tacos_app::watch::version_of`]), and whether it is in sync.

use std::time::Duration;

use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::answer::{ok_json, ConsoleError};
use crate::api::app_state::AppState;
use tacos_app::watch::{version_of, ListenProtocol, ListenState, ListenersOf};
use tacos_state::ConfigKey;

use super::Call;

/// How long the listeners page waits for the watch hub.
const HUB_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListenerView {
    /// The node the client is connected to.
    #[serde(default)]
    node: u64,
    protocol: String,
    /// HTTP: the client IP; gRPC: `connection N` (numbered per node).
    client: String,
    md5: String,
    /// The version whose md5 it holds: `formal` or a gray's name (`beta`,
    /// `tag_{tag}`); `None` when it is none of them (an older version).
    #[serde(default)]
    version: Option<String>,
    /// The version it should hold by its IP and tag; `None` when there is
    /// nothing for it (the config is gone).
    #[serde(default)]
    expected_version: Option<String>,
    /// Whether `md5` is what this client should hold (`None` only from a
    /// node that could not tell).
    in_sync: Option<bool>,
    /// `waiting` (a long poll held now), `between-polls`, `subscribed`,
    /// `push-pending`.
    state: String,
    /// Since the poll started or ended, in ms (HTTP).
    age_ms: u64,
}

/// What one node answers for its own listeners.
#[derive(Deserialize)]
struct NodeListeners {
    listeners: Vec<ListenerView>,
}

/// The listeners this node's watch hub holds for `key`.
async fn local_listeners(
    app: &AppState,
    key: &ConfigKey,
) -> Result<Vec<ListenerView>, ConsoleError> {
    let found = app
        .hub
        .send(ListenersOf(key.clone()))
        .timeout(HUB_TIMEOUT)
        .await
        .map_err(|e| ConsoleError::Internal(format!("the watch hub did not answer: {e}")))?;
    let state = app.service.state();
    Ok(found
        .into_iter()
        .map(|l| {
            let version = version_of(&state, key, &l);
            let (protocol, client) = match l.protocol {
                ListenProtocol::Http => ("http", l.client.clone()),
                ListenProtocol::Grpc => ("grpc", format!("connection {}", l.client)),
            };
            let state = match l.state {
                ListenState::Waiting => "waiting",
                ListenState::BetweenPolls => "between-polls",
                ListenState::Subscribed {
                    push_pending: false,
                } => "subscribed",
                ListenState::Subscribed { push_pending: true } => "push-pending",
            };
            ListenerView {
                node: app.node.id,
                protocol: protocol.into(),
                client,
                md5: l.md5,
                version: version.holds,
                expected_version: version.expected,
                in_sync: Some(version.in_sync),
                state: state.into(),
                age_ms: l.age.as_millis() as u64,
            }
        })
        .collect())
}

/// Who listens to a config on every node of the cluster: this node's
/// watch hub, and every other member asked over HTTP (`local=true`, with
/// the caller's credentials). A member that does not answer is listed in
/// `unreachable`.
pub async fn listeners(call: Call) -> Result<HttpResponse, ConsoleError> {
    let key = call.readable_config()?;
    let mut rows = local_listeners(&call.app, &key).await?;
    let mut unreachable = Vec::new();
    if call.params.get("local") != Some("true") {
        let client = super::cluster::peer_client(&call.app)?;
        let authorization = super::cluster::authorization(&call.req);
        let query = serde_urlencoded::to_string([
            ("namespace", key.namespace.as_str()),
            ("group", key.group.as_str()),
            ("dataId", key.data_id.as_str()),
            ("local", "true"),
        ])
        .map_err(|e| ConsoleError::Internal(e.to_string()))?;
        let path = format!("/tacos/api/console/config/listeners?{query}");
        let asks = call.app.other_members().into_iter().map(|(id, addr)| {
            let (client, path, authorization) = (&client, &path, authorization.as_deref());
            async move {
                let answer: Result<NodeListeners, String> =
                    super::cluster::get_json(client, &addr, path, authorization).await;
                (id, answer)
            }
        });
        for (id, answer) in futures::future::join_all(asks).await {
            match answer {
                Ok(found) => rows.extend(found.listeners),
                Err(error) => unreachable.push(serde_json::json!({ "node": id, "error": error })),
            }
        }
    }
    rows.sort_by(|a, b| (a.node, &a.protocol, &a.client).cmp(&(b.node, &b.protocol, &b.client)));
    let state = call.app.service.state();
    let beta = state.gray(&key, tacos_state::BETA_GRAY);
    Ok(ok_json(serde_json::json!({
        "currentMd5": state.config(&key).map_or("", |c| c.md5.as_ref()),
        "beta": beta.map(|b| serde_json::json!({ "md5": b.md5, "ips": b.beta_ips() })),
        "grays": state.grays(&key).iter().map(|g| serde_json::json!({
            "name": g.name, "md5": g.md5, "rule": g.rule_json(),
        })).collect::<Vec<_>>(),
        "listeners": rows,
        "unreachable": unreachable,
    })))
}
