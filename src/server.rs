//! Runs a node: Raft and the cluster port on their own tokio runtime, HTTP
//! and the watch hub on actix's.
//!
//! Start-up order: bind all three ports (so a taken port is reported before
//! the data dir is touched), open the store and start Raft, serve the
//! cluster port (peers need it for elections and catch-up), join if asked,
//! wait until reads are complete (a restarted member of a cluster also
//! catches up with the leader), then listen on the HTTP and gRPC ports and
//! serve them. Until then the client ports are bound but not listening:
//! clients are refused at once and try another node, instead of connecting
//! to one that cannot answer yet and waiting out their connect timeout.

use std::net::SocketAddr;
use std::sync::Arc;

use actix::Actor;
use actix_web::{App, HttpServer};
use anyhow::Context;

use crate::api::{AppState, Port};
use crate::settings::Settings;
use tacos_app::service::{ConfigService, Limits};
use tacos_app::watch::{Changed, ReleaseAll, WatchHub};
use tacos_raft::ChangeSink;
use tacos_raft::Node;
use tacos_state::Changes;

/// The app factory of one HTTP port: the guard, the request metrics, and
/// the routes that port serves (a macro: the factory's type cannot be named).
macro_rules! http_app {
    ($app:expr, $max_body:expr, $port:expr) => {{
        let app = $app;
        let (max_body, port) = ($max_body, $port);
        move || {
            App::new()
                .wrap(actix_web::middleware::from_fn(crate::api::guard::guard))
                .wrap(actix_web::middleware::from_fn(crate::api::record_metrics))
                .configure(crate::api::configure(app.clone(), max_body, port))
        }
    }};
}

/// Room for headers and form encoding on top of the largest content.
const BODY_HEADROOM: usize = 1024 * 1024;

/// Starts the node, serves HTTP until SIGINT/SIGTERM, then stops cleanly.
pub fn run(settings: Settings) -> anyhow::Result<()> {
    settings.validate()?;
    // A request filter, decided once for the process (as Nacos' own).
    tacos_core::validate::set_param_filter(settings.param_check);
    if settings.param_check {
        tracing::info!(
            "Nacos 2.3+'s parameter filter is on: dataIds and groups a-zA-Z0-9-_:. only"
        );
    }
    crate::metrics::install().context("installing the metrics recorder")?;
    // Every certificate and key is checked before a port is bound.
    let tls = crate::tls::NodeTls::load(&crate::tls::TlsFiles {
        cert_file: settings.cert_file.clone(),
        key_file: settings.key_file.clone(),
        trusted_ca_file: settings.trusted_ca_file.clone(),
        client_cert_auth: settings.client_cert_auth,
        grpc_tls_compatibility: settings.grpc_tls_compatibility,
        console_port: settings.console_port.is_some(),
        peer_cert_file: settings.peer_cert_file.clone(),
        peer_key_file: settings.peer_key_file.clone(),
        peer_trusted_ca_file: settings.peer_trusted_ca_file.clone(),
    })?;
    let raft_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("tacos-raft")
        .enable_all()
        .build()
        .context("starting the raft runtime")?;
    // Changes applied before the hub runs are queued here.
    let (changes_tx, changes_rx) = tokio::sync::mpsc::unbounded_channel();
    let sink: Arc<dyn ChangeSink> = Arc::new(move |changes| {
        let _ = changes_tx.send((changes, std::time::Instant::now()));
    });
    let mut grpc_runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = settings.grpc_workers {
        grpc_runtime.worker_threads(workers);
    }
    let grpc_runtime = grpc_runtime
        .thread_name("tacos-grpc")
        .enable_all()
        .build()
        .context("starting the gRPC runtime")?;
    let http_addr = SocketAddr::new(settings.bind, settings.http_port);
    let http_socket = bind_client_port(http_addr)
        .with_context(|| format!("cannot listen on {http_addr} (HTTP)"))?;
    let grpc_addr = SocketAddr::new(settings.bind, settings.grpc_port().unwrap_or_default());
    let grpc_socket = bind_client_port(grpc_addr)
        .with_context(|| format!("cannot listen on {grpc_addr} (gRPC)"))?;
    let console_addr = settings
        .console_port
        .map(|port| SocketAddr::new(settings.bind, port));
    let console_socket = match console_addr {
        Some(addr) => Some(
            bind_client_port(addr).with_context(|| format!("cannot listen on {addr} (console)"))?,
        ),
        None => None,
    };
    let cluster_addr = (settings.bind, settings.cluster_port().unwrap_or_default());
    let cluster_listener = raft_runtime
        .block_on(tokio::net::TcpListener::bind(cluster_addr))
        .with_context(|| {
            format!(
                "cannot listen on {}:{} (cluster port)",
                cluster_addr.0, cluster_addr.1
            )
        })?;
    let options = tacos_raft::NodeOptions {
        peer_tls: tls.peer.clone(),
        ..settings.node_options()?
    };
    let node = Arc::new(raft_runtime.block_on(Node::start(options, sink))?);
    raft_runtime.block_on(async {
        node.exit_on_fatal();
        tacos_raft::cluster_server::serve(
            node.clone(),
            cluster_listener,
            settings.cluster_token.clone(),
            tls.peer.as_ref(),
        );
        tls.watch();
        tracing::info!(
            "serving the cluster port on {}:{} (node {} advertised as {}){}",
            cluster_addr.0,
            cluster_addr.1,
            node.id,
            settings.cluster_addr(),
            if tls.peer.is_some() {
                " over mutual TLS"
            } else {
                ""
            }
        );
        node.watch_freshness();
        crate::heap_trim::spawn(node.clone());
        if let Some(join) = settings.join.clone() {
            let joining = node.clone();
            tokio::spawn(async move { joining.join(&join).await });
        }
    });
    raft_runtime.block_on(node.wait_ready())?;

    // Ready: clients may connect from now on. The gRPC listener belongs to
    // the gRPC runtime; the HTTP one is handed to actix as a std listener.
    let (http_listener, grpc_listener, console_listener) = grpc_runtime.block_on(async {
        let http = http_socket
            .listen(CLIENT_BACKLOG)
            .and_then(|l| l.into_std())
            .with_context(|| format!("cannot listen on {http_addr} (HTTP)"))?;
        let grpc = grpc_socket
            .listen(CLIENT_BACKLOG)
            .with_context(|| format!("cannot listen on {grpc_addr} (gRPC)"))?;
        let console = match (console_socket, console_addr) {
            (Some(socket), Some(addr)) => Some(
                socket
                    .listen(CLIENT_BACKLOG)
                    .and_then(|l| l.into_std())
                    .with_context(|| format!("cannot listen on {addr} (console)"))?,
            ),
            _ => None,
        };
        anyhow::Ok((http, grpc, console))
    })?;
    let listeners = Listeners {
        http: http_listener,
        grpc: grpc_listener,
        console: console_listener,
        grpc_runtime: grpc_runtime.handle().clone(),
    };
    let served = serve(&settings, node.clone(), changes_rx, listeners, tls);
    raft_runtime.block_on(node.shutdown());
    tracing::info!("stopped");
    served
}

/// Connections a client port queues before they are accepted.
const CLIENT_BACKLOG: u32 = 1024;

/// Binds a client-facing port without listening on it yet: the port is
/// taken (a second server on it fails now, before touching the data dir),
/// but connection attempts are refused until [`tokio::net::TcpSocket::listen`].
/// `SO_REUSEADDR` as std sets it, so a restart is not refused the port its
/// predecessor's connections still linger on.
fn bind_client_port(addr: SocketAddr) -> std::io::Result<tokio::net::TcpSocket> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    Ok(socket)
}

/// The client-facing ports, listening once the node is ready.
struct Listeners {
    http: std::net::TcpListener,
    grpc: tokio::net::TcpListener,
    /// The console's own port (`--console-port`), if set.
    console: Option<std::net::TcpListener>,
    grpc_runtime: tokio::runtime::Handle,
}

fn serve(
    settings: &Settings,
    node: Arc<Node>,
    mut changes: tokio::sync::mpsc::UnboundedReceiver<(Changes, std::time::Instant)>,
    listeners: Listeners,
    tls: crate::tls::NodeTls,
) -> anyhow::Result<()> {
    let max_body = settings.max_content_size * 3 + BODY_HEADROOM;
    let addr = (settings.bind, settings.http_port);
    let limits = Limits {
        max_content_size: settings.max_content_size,
        history_limit: settings.history_limit,
        max_grays: settings.max_grays_per_config,
        audit_limit: settings.audit_limit,
        create_namespaces: !settings.strict_namespaces,
    };
    let auth = Arc::new(tacos_app::auth::Auth::new(
        node.clone(),
        tacos_app::auth::AuthSettings {
            open_api_auth: settings.open_api_auth,
            token_ttl: settings.token_ttl,
            audit_limit: settings.audit_limit,
            lockout: tacos_app::auth::limiter::Lockout {
                failures: settings.login_lockout_failures,
                duration: std::time::Duration::from_secs(settings.login_lockout_seconds),
            },
            password_policy: settings.password_policy(),
            directory: settings.directory()?.map(Arc::new),
        },
    )?);
    if let Some(url) = &settings.ldap_url {
        tracing::info!(
            url,
            precedence = ?settings.ldap_precedence,
            "logins are also checked against the LDAP directory"
        );
    }
    let init = tacos_app::auth::bootstrap::InitSettings {
        admin_username: settings.admin_username.clone(),
        admin_password: settings.admin_password.as_ref().map(|p| p.0.clone()),
        token_key: match &settings.token_secret {
            Some(secret) => Some(
                tacos_app::auth::token::decode_secret(&secret.0)
                    .map_err(|reason| anyhow::anyhow!("--token-secret {reason}"))?,
            ),
            None => None,
        },
        data_dir: settings.data_dir.clone(),
        audit_limit: settings.audit_limit,
    };
    if !settings.open_api_auth && !settings.bind.is_loopback() {
        tracing::warn!(
            "open-API auth is off and the server listens on {}: anyone who reaches it can read and write configs; set --open-api-auth to require a login",
            settings.bind
        );
    }
    actix_web::rt::System::new().block_on(async move {
        let hub = WatchHub::new(node.state_handle(), settings.max_long_polls)
            .with_unlistened_window(std::time::Duration::from_secs(
                settings.unlistened_push_seconds,
            ))
            .with_fuzzy_limits(
                settings.fuzzy_watch_max_patterns,
                settings.fuzzy_watch_max_matched,
            )
            .start();
        let forward = hub.clone();
        actix_web::rt::spawn(async move {
            while let Some((c, at)) = changes.recv().await {
                forward.do_send(Changed(c, at));
            }
        });
        actix_web::rt::spawn(tacos_app::auth::bootstrap::run(
            node.clone(),
            auth.clone(),
            init,
        ));
        let service = ConfigService::new(node.clone(), limits);
        let connections = Arc::new(crate::grpc::connection::Connections::new());
        let grpc = Arc::new(crate::grpc::GrpcState {
            service: service.clone(),
            hub: hub.clone(),
            connections: connections.clone(),
            max_listen_keys: settings.max_listen_keys,
            auth: auth.clone(),
        });
        let max_message = settings.max_content_size * 2 + BODY_HEADROOM;
        let grpc_listener = listeners.grpc;
        let grpc_runtime = listeners.grpc_runtime;
        let grpc_tls = tls
            .client
            .as_ref()
            .map(|t| (t.grpc.clone(), t.grpc_plaintext));
        grpc_runtime
            .spawn(async move { crate::grpc::serve(grpc, grpc_listener, max_message, grpc_tls) });
        if settings.grpc_connection_target > 0 {
            grpc_runtime.spawn(crate::grpc::connection::balance(
                connections.clone(),
                settings.grpc_connection_target,
            ));
        }
        let scheme = |plain: &'static str, secure: &'static str| match &tls.client {
            Some(_) => secure,
            None => plain,
        };
        tracing::info!(
            "serving gRPC{} on {}:{}",
            scheme("", " over TLS"),
            settings.bind,
            settings.grpc_port().unwrap_or_default()
        );
        let samples = Arc::new(crate::dashboard_history::Samples::default());
        crate::dashboard_history::spawn(samples.clone(), node.clone(), hub.clone());
        let app = Arc::new(AppState {
            samples,
            service,
            node,
            hub: hub.clone(),
            max_listen_keys: settings.max_listen_keys,
            data_dir: settings.data_dir.clone(),
            auth,
            policy: crate::api::guard::Policy::of(&crate::api::guard::declared()),
            zone: settings.zone.clone(),
            peer_http: tls.peer_http.clone(),
        });
        let http_port = if listeners.console.is_some() {
            Port::Client
        } else {
            Port::All
        };
        let mut server = HttpServer::new(http_app!(app.clone(), max_body, http_port))
            .shutdown_timeout(10)
            .tls_handshake_timeout(tacos_tls::incoming::HANDSHAKE_TIMEOUT);
        if let Some(workers) = settings.http_workers {
            server = server.workers(workers);
        }
        let http_tls = tls.client.as_ref().map(|t| t.http.clone());
        let server = match http_tls.clone() {
            Some(config) => server.listen_rustls_0_23(listeners.http, config),
            None => server.listen(listeners.http),
        }
        .with_context(|| format!("cannot listen on {}:{}", addr.0, addr.1))?
        .disable_signals()
        .run();
        let handle = server.handle();
        // The console's own port: one worker is plenty for people.
        let console = match listeners.console {
            Some(listener) => {
                let console_port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
                let server = HttpServer::new(http_app!(app.clone(), max_body, Port::Console))
                    .shutdown_timeout(10)
                    .tls_handshake_timeout(tacos_tls::incoming::HANDSHAKE_TIMEOUT)
                    .workers(1);
                let server = match http_tls {
                    Some(config) => server.listen_rustls_0_23(listener, config),
                    None => server.listen(listener),
                }
                .with_context(|| format!("cannot listen on {}:{console_port} (console)", addr.0))?
                .disable_signals()
                .run();
                tracing::info!(
                    "serving the web console on {}://{}:{console_port}",
                    scheme("http", "https"),
                    addr.0
                );
                Some(server)
            }
            None => None,
        };
        let console_handle = console.as_ref().map(|s| s.handle());
        let drain_time = std::time::Duration::from_secs(settings.drain_seconds);
        actix_web::rt::spawn(async move {
            wait_for_signal().await;
            if !drain_time.is_zero() {
                drain_grpc(&grpc_runtime, connections, drain_time).await;
            }
            // Held long polls answer "no change" at once, so clients re-poll
            // elsewhere instead of waiting out their timeout.
            let released = hub.send(ReleaseAll).await.unwrap_or(0);
            tracing::info!(released, "shutting down");
            if let Some(console) = console_handle {
                console.stop(true).await;
            }
            handle.stop(true).await;
        });
        tracing::info!(
            "serving {} on {}:{}",
            scheme("HTTP", "HTTPS"),
            addr.0,
            addr.1
        );
        match console {
            Some(console) => {
                let (served, console_served) = futures::future::join(server, console).await;
                served.context("HTTP server")?;
                console_served.context("console server")
            }
            None => server.await.context("HTTP server"),
        }
    })
}

/// Asks the gRPC clients to move to another node and waits for them, at
/// most `within` (on the gRPC runtime, where the connections live).
async fn drain_grpc(
    runtime: &tokio::runtime::Handle,
    connections: Arc<crate::grpc::connection::Connections>,
    within: std::time::Duration,
) {
    tracing::info!("stopping: asking gRPC clients to move to another node");
    let drained = runtime
        .spawn(async move { crate::grpc::connection::drain(&connections, within).await })
        .await;
    match drained {
        Ok(d) => tracing::info!(
            asked = d.asked,
            moved = d.moved,
            stayed = d.asked - d.moved,
            "gRPC clients moved to other nodes"
        ),
        Err(e) => tracing::warn!("draining gRPC connections failed: {e}"),
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
