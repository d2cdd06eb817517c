//! The connections a tonic port (gRPC, cluster) serves, in TLS or not.
//!
//! One task accepts; every TLS handshake runs in a task of its own with a
//! deadline, so a client that connects and says nothing (or speaks
//! plaintext to a TLS port) delays no other client and holds nothing past
//! [`HANDSHAKE_TIMEOUT`]. Accept errors (out of file descriptors) are
//! logged and retried after a pause, never handed to tonic, which would
//! stop serving the port. The accept task ends, and the listening socket
//! closes, when the stream is dropped.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How long a client may take to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first byte of every TLS connection (a handshake record).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Whether a TLS port also serves plaintext clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plaintext {
    /// TLS only: a plaintext client's connection is closed at once.
    Refuse,
    /// Both, told apart by the first byte (Nacos' `compatibility` mode,
    /// while clients move over to TLS).
    Accept,
}

/// A connection accepted on a tonic port.
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

/// The connections of `listener`: plaintext when `tls` is `None`.
/// `port` names the port in logs and metrics.
pub fn incoming(
    listener: TcpListener,
    tls: Option<(Arc<rustls::ServerConfig>, Plaintext)>,
    port: &'static str,
) -> impl Stream<Item = io::Result<Conn>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Conn>(256);
    let acceptor = tls.map(|(config, plaintext)| (TlsAcceptor::from(config), plaintext));
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = tx.closed() => return,
                accepted = listener.accept() => accepted,
            };
            let tcp = match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(port, "accepting a connection failed: {e}; retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            match &acceptor {
                None => {
                    if tx.send(Conn::Plain(tcp)).await.is_err() {
                        return;
                    }
                }
                Some((acceptor, plaintext)) => {
                    let (acceptor, plaintext, tx) = (acceptor.clone(), *plaintext, tx.clone());
                    tokio::spawn(async move {
                        let handshake = handshake(acceptor, plaintext, tcp);
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                            Ok(Ok(conn)) => {
                                let _ = tx.send(conn).await;
                            }
                            Ok(Err(e)) => refused(port, &e.to_string()),
                            Err(_) => refused(port, "no TLS handshake within 10 s"),
                        }
                    });
                }
            }
        }
    });
    futures::stream::unfold(rx, |mut rx| async move {
        let conn = rx.recv().await?;
        Some((Ok(conn), rx))
    })
}

async fn handshake(
    acceptor: TlsAcceptor,
    plaintext: Plaintext,
    tcp: TcpStream,
) -> io::Result<Conn> {
    if plaintext == Plaintext::Accept {
        let mut first = [0u8; 1];
        let n = tcp.peek(&mut first).await?;
        if n == 1 && first[0] != TLS_HANDSHAKE_RECORD {
            return Ok(Conn::Plain(tcp));
        }
    }
    Ok(Conn::Tls(Box::new(acceptor.accept(tcp).await?)))
}

/// A failed handshake is counted; on the cluster port it is also logged as
/// a warning (a node with the wrong certificate, or none, is an operator's
/// problem to see), on the client ports only at debug (scanners and
/// plaintext clients would flood the log).
fn refused(port: &'static str, reason: &str) {
    metrics::counter!("tacos_tls_handshake_failures_total", "port" => port).increment(1);
    if port == CLUSTER_PORT {
        tracing::warn!(
            port,
            "refused a node on the cluster port: TLS handshake failed: {reason} \
             (every node needs --peer-cert-file signed by a CA of --peer-trusted-ca-file)"
        );
    } else {
        tracing::debug!(port, "TLS handshake failed: {reason}");
    }
}

/// The `port` name of the cluster port.
pub const CLUSTER_PORT: &str = "cluster";

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match self {
            Conn::Plain(tcp) => tcp.connect_info(),
            Conn::Tls(tls) => tls.get_ref().0.connect_info(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
