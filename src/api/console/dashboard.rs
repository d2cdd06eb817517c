//! The console's dashboard: every member's recent samples in one answer.
//!
//! Each node keeps its own rings ([`crate::samples`]); this node answers
//! for itself from memory and asks every other member's HTTP address for
//! `/tacos/v1/admin/samples` (an admin route every port serves), in
//! parallel, with the caller's credentials and a 2 s limit. A member that
//! does not answer is listed in `unreachable`; the page still draws the
//! others.

use actix_web::HttpResponse;

use super::answer::{ok_json, ConsoleError};
use super::cluster::{authorization, get_json, peer_client};
use super::Call;
use crate::dashboard_history::{NodeSamples, Sample, COARSE, FINE};
use tacos_core::validate::InvalidInput;

/// `window=5m` (one sample a second) or `1h` (one every 5 s, the default).
pub async fn dashboard(call: Call) -> Result<HttpResponse, ConsoleError> {
    let fine = match call.params.get("window").unwrap_or("1h") {
        "5m" => true,
        "1h" | "" => false,
        other => {
            return Err(InvalidInput::Other("window", format!("{other:?} is not 5m or 1h")).into())
        }
    };
    let pick =
        |s: NodeSamples| -> (u64, Vec<Sample>) { (s.node, if fine { s.fine } else { s.coarse }) };
    let own = pick(call.app.samples.snapshot(call.app.node.id));
    let client = peer_client(&call.app)?;
    let auth = authorization(&call.req);
    let asks = call.app.other_members().into_iter().map(|(id, addr)| {
        let (client, auth) = (&client, auth.as_deref());
        async move {
            let answer: Result<NodeSamples, String> =
                get_json(client, &addr, "/tacos/v1/admin/samples", auth).await;
            (id, answer)
        }
    });
    let mut nodes = vec![serde_json::json!({ "node": own.0, "thisNode": true, "samples": own.1 })];
    let mut unreachable = Vec::new();
    for (id, answer) in futures::future::join_all(asks).await {
        match answer {
            Ok(samples) => {
                let (node, samples) = pick(samples);
                nodes.push(
                    serde_json::json!({ "node": node, "thisNode": false, "samples": samples }),
                );
            }
            Err(error) => unreachable.push(serde_json::json!({ "node": id, "error": error })),
        }
    }
    nodes.sort_by_key(|n| n["node"].as_u64());
    let ring = if fine { FINE } else { COARSE };
    Ok(ok_json(serde_json::json!({
        "window": if fine { "5m" } else { "1h" },
        "intervalMs": ring.every.as_millis() as u64,
        "leader": call.app.node.metrics().current_leader,
        "nodes": nodes,
        "unreachable": unreachable,
    })))
}
