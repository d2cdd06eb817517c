//! How fresh a read must be (`consistency=local|linearizable|stale`).

use super::app_state::AppState;
use super::{params, render};

/// The read-consistency choice of a request: `consistency=linearizable` (a
/// parameter) or the `X-Tacos-Consistency: linearizable` header makes the
/// read wait for the leader's read index; `local` (the default, as in Nacos)
/// reads this node's memory at once, unless it is a learner too far behind
/// (503: [`tacos_raft::freshness`]); `stale` reads this node's memory
/// whatever its lag.
pub(super) async fn read_barrier(
    app: &AppState,
    req: &actix_web::HttpRequest,
    params: &params::Params,
) -> Result<(), actix_web::HttpResponse> {
    let mode = match params.get("consistency") {
        Some(mode) => mode.to_string(),
        None => params::header(req, "X-Tacos-Consistency").unwrap_or_default(),
    };
    match mode.as_str() {
        "local" | "" => app.service.readable().map_err(|behind| {
            render::v1_error(actix_web::http::StatusCode::SERVICE_UNAVAILABLE, behind)
        }),
        "stale" => Ok(()),
        "linearizable" => app.node.linearizable_barrier().await.map_err(|e| {
            render::v1_error(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                format!("linearizable read failed: {e}"),
            )
        }),
        other => Err(render::v1_error(
            actix_web::http::StatusCode::BAD_REQUEST,
            format!("consistency must be local, linearizable or stale, not {other:?}"),
        )),
    }
}
