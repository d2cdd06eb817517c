//! A TCP proxy in front of one node's port, to cut links.
//!
//! The fault harness puts one in front of each node's cluster port; the
//! failover tests put one in front of each client port (see
//! [`Proxy::blackhole`]). For the cluster ports: each node binds its own loopback address (127.0.0.2, .3, ...) and its
//! outgoing cluster connections leave from it, while it advertises the
//! proxy's address (127.0.1.N) to the others. So every connection between
//! nodes passes one proxy, and the proxy knows which node opened it by the
//! source address: cutting the link {a, b} blocks a's connections at b's
//! proxy and b's at a's, in both directions (responses travel on the
//! connection of the request). Blocking also kills the connections already
//! open. A delay holds every chunk for a while before passing it on, one
//! after another (a slow link: throughput drops too); a latency passes
//! every chunk on once it is that old, without holding up the chunks behind
//! it (a distant link: a fixed one-way time, full throughput).
//!
//! A blackhole is a partition as a client sees it: connections stay open,
//! new ones are accepted, and nothing passes in either direction, not even
//! a close (a peer that closes its side is not seen by the other); when it
//! heals, the connections it swallowed are closed (their bytes are lost, as
//! a TCP connection that timed out would be).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Default)]
struct Control {
    blocked: HashSet<IpAddr>,
    delay: Duration,
    /// One-way time every chunk takes (a delay line, see the module docs).
    latency: Duration,
    /// Connections accepted, to prove traffic took this way.
    accepted: u64,
    /// Where new connections go (see [`Proxy::retarget`]).
    target: Option<SocketAddr>,
    /// Nothing passes (see the module docs).
    blackholed: bool,
    /// Open connections by id: source, when accepted, the task piping it.
    open: HashMap<u64, (IpAddr, Instant, JoinHandle<()>)>,
    /// Connections open while a blackhole was on: closed when it heals.
    swallowed: HashSet<u64>,
    next_id: u64,
    /// Connections refused or killed, to prove a partition took effect.
    cut: u64,
}

pub struct Proxy {
    control: Arc<Mutex<Control>>,
    accept: JoinHandle<()>,
}

fn lock(control: &Mutex<Control>) -> std::sync::MutexGuard<'_, Control> {
    control.lock().unwrap_or_else(|p| p.into_inner())
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    to: tokio::net::tcp::OwnedWriteHalf,
    control: Arc<Mutex<Control>>,
) {
    // The reader stamps each chunk with when it may leave; the writer sends
    // it then. With no latency the stamp is "now" and the writer passes it
    // straight on.
    let (line, mut arrivals) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        let mut to = to;
        while let Some((due, chunk)) = arrivals.recv().await {
            tokio::time::sleep_until(due.into()).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    // A close does not cross a partition either: the heal
                    // aborts this task.
                    if lock(&control).blackholed {
                        std::future::pending::<()>().await;
                    }
                    break;
                }
                Ok(n) => n,
            };
            let (delay, latency, blackholed) = {
                let c = lock(&control);
                (c.delay, c.latency, c.blackholed)
            };
            if blackholed {
                continue;
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if line
                .send((Instant::now() + latency, buf[..n].to_vec()))
                .is_err()
            {
                break;
            }
        }
        // Dropping `line` lets the writer finish what is in flight, then close.
    };
    tokio::join!(reader, writer);
}

impl Proxy {
    /// Listens on `listen` and forwards to `target`.
    pub async fn start(listen: SocketAddr, target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind(listen)
            .await
            .unwrap_or_else(|e| panic!("proxy cannot listen on {listen}: {e}"));
        let control = Arc::new(Mutex::new(Control {
            target: Some(target),
            ..Control::default()
        }));
        let accepting = control.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((client, peer)) = listener.accept().await else {
                    continue;
                };
                let source = peer.ip();
                let (id, target) = {
                    let mut c = lock(&accepting);
                    if c.blocked.contains(&source) {
                        c.cut += 1;
                        continue; // dropped: the connection is reset
                    }
                    c.next_id += 1;
                    c.accepted += 1;
                    (c.next_id, c.target.unwrap_or(target))
                };
                let control = accepting.clone();
                let handle = tokio::spawn(async move {
                    // Accepted during a blackhole: held, never connected.
                    while lock(&control).blackholed {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    let Ok(server) = TcpStream::connect(target).await else {
                        return;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    // Both directions in this task, so aborting it closes
                    // both sockets.
                    tokio::join!(
                        pipe(client_read, server_write, control.clone()),
                        pipe(server_read, client_write, control.clone())
                    );
                    lock(&control).open.remove(&id);
                });
                let mut c = lock(&accepting);
                if c.blackholed {
                    c.swallowed.insert(id);
                }
                c.open.insert(id, (source, Instant::now(), handle));
            }
        });
        Proxy { control, accept }
    }

    /// Refuses (and cuts) connections from `source`.
    pub fn block(&self, source: IpAddr) {
        let mut c = lock(&self.control);
        c.blocked.insert(source);
        let doomed: Vec<u64> = c
            .open
            .iter()
            .filter(|(_, (ip, _, _))| *ip == source)
            .map(|(id, _)| *id)
            .collect();
        for id in doomed {
            if let Some((_, _, handle)) = c.open.remove(&id) {
                handle.abort();
                c.cut += 1;
            }
        }
    }

    /// Lets everyone through again, without delay; closes the connections
    /// a blackhole swallowed.
    pub fn heal(&self) {
        let mut c = lock(&self.control);
        c.blocked.clear();
        c.delay = Duration::ZERO;
        c.blackholed = false;
        let swallowed: Vec<u64> = c.swallowed.drain().collect();
        for id in swallowed {
            if let Some((_, _, handle)) = c.open.remove(&id) {
                handle.abort();
                c.cut += 1;
            }
        }
    }

    /// Passes nothing, in either direction, on open and new connections,
    /// until [`Proxy::heal`].
    pub fn blackhole(&self) {
        let mut c = lock(&self.control);
        c.blackholed = true;
        let open: Vec<u64> = c.open.keys().copied().collect();
        c.swallowed.extend(open);
    }

    /// When the newest connection still open was accepted.
    pub fn newest_open(&self) -> Option<Instant> {
        lock(&self.control)
            .open
            .values()
            .filter(|(_, _, handle)| !handle.is_finished())
            .map(|(_, at, _)| *at)
            .max()
    }

    /// Holds every chunk for `delay` before forwarding it.
    pub fn delay(&self, delay: Duration) {
        lock(&self.control).delay = delay;
    }

    /// Passes every chunk on `latency` after it arrived, in both
    /// directions, without slowing the stream (a link to another data
    /// center). Stays until changed; [`Proxy::heal`] does not reset it.
    pub fn latency(&self, latency: Duration) {
        lock(&self.control).latency = latency;
    }

    /// Sends new connections to `target`; the open ones stay where they are.
    pub fn retarget(&self, target: SocketAddr) {
        lock(&self.control).target = Some(target);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        lock(&self.control).accepted
    }

    /// Connections refused or cut so far.
    pub fn cut_count(&self) -> u64 {
        lock(&self.control).cut
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        for (_, (_, _, handle)) in lock(&self.control).open.drain() {
            handle.abort();
        }
    }
}
