//! Runs a node: Raft on its own tokio runtime, HTTP on actix-web's.

use std::sync::Arc;

use actix_web::{App, HttpServer};
use anyhow::Context;

use crate::raft::Node;
use crate::settings::Settings;

/// Room for headers and form encoding on top of the largest content.
const BODY_HEADROOM: usize = 64 * 1024;

/// Starts the node, serves HTTP until SIGINT/SIGTERM, then stops cleanly.
pub fn run(settings: Settings) -> anyhow::Result<()> {
    settings.validate()?;
    let raft_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("tacos-raft")
        .enable_all()
        .build()
        .context("starting the raft runtime")?;
    let node = Arc::new(raft_runtime.block_on(Node::start(&settings))?);
    raft_runtime.block_on(async { node.exit_on_fatal() });

    let served = serve(&settings, node.clone());
    raft_runtime.block_on(node.shutdown());
    tracing::info!("stopped");
    served
}

fn serve(settings: &Settings, node: Arc<Node>) -> anyhow::Result<()> {
    let max_body = settings.max_content_size + BODY_HEADROOM;
    let addr = (settings.bind, settings.http_port);
    actix_web::rt::System::new().block_on(async move {
        let mut server = HttpServer::new(move || {
            App::new().configure(crate::api::configure(node.clone(), max_body))
        })
        .shutdown_timeout(10);
        if let Some(workers) = settings.http_workers {
            server = server.workers(workers);
        }
        let server = server
            .bind(addr)
            .with_context(|| format!("cannot listen on {}:{}", addr.0, addr.1))?;
        tracing::info!("serving HTTP on {}:{}", addr.0, addr.1);
        server.run().await.context("HTTP server")
    })
}
