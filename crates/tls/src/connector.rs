//! The connect side of the cluster client: TCP (from a chosen local
//! address), then TLS with the peer's name from the URI, for tonic's
//! `Endpoint::connect_with_connector_lazy`. tonic wraps its errors in a
//! `ConnectError` and applies the endpoint's connect timeout, as for its
//! own connector: a refused handshake counts as "never sent".

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::{TcpSocket, TcpStream};

/// Connects to `http://host:port` URIs over TLS (the scheme is tonic's
/// and says nothing about the transport: this connector always does TLS).
#[derive(Clone)]
pub struct TlsConnector {
    tls: tokio_rustls::TlsConnector,
    local: Option<IpAddr>,
}

impl TlsConnector {
    pub fn new(config: Arc<rustls::ClientConfig>, local: Option<IpAddr>) -> TlsConnector {
        TlsConnector {
            tls: tokio_rustls::TlsConnector::from(config),
            local,
        }
    }

    async fn connect(
        self,
        uri: http::Uri,
    ) -> io::Result<TokioIo<tokio_rustls::client::TlsStream<TcpStream>>> {
        let host = uri
            .host()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no host in the URI"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(443);
        let name = ServerName::try_from(host.clone())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
        let addr: SocketAddr = tokio::net::lookup_host((host.as_str(), port))
            .await?
            .next()
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("{host}: no address"))
            })?;
        let socket = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        if let Some(local) = self.local {
            socket.bind(SocketAddr::new(local, 0))?;
        }
        let tcp = socket.connect(addr).await?;
        tcp.set_nodelay(true)?;
        let tls = self.tls.connect(name, tcp).await.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("TLS with {host}:{port} failed (is its certificate signed by the peer CA, and for this name?): {e}"),
            )
        })?;
        Ok(TokioIo::new(tls))
    }
}

impl tower_service::Service<http::Uri> for TlsConnector {
    type Response = TokioIo<tokio_rustls::client::TlsStream<TcpStream>>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}
