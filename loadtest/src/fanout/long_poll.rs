//! One Nacos v1 long-poll listener on its own TCP connection: HTTP/1.1 written and
//! read by hand (a request of a few hundred bytes, a reply with a short body), so a
//! listener costs one socket, one task and a small buffer.
//!
//! The loop: `POST /nacos/v1/cs/configs/listener` with `Listening-Configs` (the key
//! and the md5 the listener holds) and `Long-Pulling-Timeout`; the server holds it
//! until the key changes (reply: the key) or the timeout passes (reply: empty). A
//! reply naming the key is a notification: it is stamped when its first bytes arrive
//! and reported; the listener then polls again with the md5 of the content the tool
//! published last ([`Shared::md5`]). Unlike the SDKs it does not fetch the new content
//! (a `GET` per notification): the tool measures the notification, and knows the
//! content. The connection is kept alive; when the server closes it, the listener
//! reconnects.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::sys::connect_from;
use super::Notified;
use crate::nacos::{self, ListenEntry};
use crate::tls::{self, Stream};

/// The key every listener watches and the md5 of its newest content.
#[derive(Debug)]
pub struct Shared {
    pub data_id: String,
    pub group: String,
    pub tenant: String,
    /// The md5 of the content published last; a notified listener polls with it.
    pub md5: Mutex<String>,
    /// `Long-Pulling-Timeout`, ms.
    pub poll_timeout_ms: u64,
    pub stats: Stats,
}

impl Shared {
    /// The md5 of the content published last.
    pub fn current_md5(&self) -> String {
        self.md5.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What the long-poll listeners saw, summed over all of them.
#[derive(Debug, Default)]
pub struct Stats {
    /// Long polls sent.
    pub polls: AtomicU64,
    /// Replies naming the key.
    pub notifications: AtomicU64,
    /// Empty replies (the poll timed out on the server).
    pub empty: AtomicU64,
    /// Replies other than 200 (e.g. 503: too many long polls).
    pub errors: AtomicU64,
    /// Connections that broke or were closed, and were opened again.
    pub reconnects: AtomicU64,
}

/// One reply as read off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    /// `Connection: close` (or HTTP/1.0): the server closes after this reply.
    pub close: bool,
}

/// The request bytes of a long poll with `md5`.
pub fn request(host: &str, shared: &Shared, md5: &str) -> Vec<u8> {
    let body = nacos::listener_form(
        &[ListenEntry {
            data_id: shared.data_id.clone(),
            group: shared.group.clone(),
            md5: md5.to_string(),
            tenant: shared.tenant.clone(),
        }],
        None,
    );
    format!(
        "POST /nacos/v1/cs/configs/listener HTTP/1.1\r\nHost: {host}\r\n\
         {}: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n{body}",
        nacos::LONG_POLL_TIMEOUT_HEADER,
        shared.poll_timeout_ms,
        nacos::FORM_CONTENT_TYPE,
        body.len()
    )
    .into_bytes()
}

/// Parses a complete reply at the start of `buf`: `Ok(Some((reply, length)))`,
/// `Ok(None)` when more bytes are needed, `Err` when it is not HTTP/1.x.
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let Some(head_end) = find(buf, b"\r\n\r\n") else {
        if buf.len() > 16 * 1024 {
            return Err("reply headers longer than 16 KiB".into());
        }
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| "headers not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.split_whitespace();
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x reply: {status_line:?}"));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {status_line:?}"))?;
    let mut length = None;
    let mut chunked = false;
    let mut close = version == "HTTP/1.0";
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| format!("bad Content-Length {value:?}"))?,
                )
            }
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    let body_start = head_end + 4;
    if chunked {
        let mut body = Vec::new();
        let mut at = body_start;
        loop {
            let Some(line_end) = find(&buf[at..], b"\r\n") else {
                return Ok(None);
            };
            let size_text =
                std::str::from_utf8(&buf[at..at + line_end]).map_err(|_| "bad chunk")?;
            let size_text = size_text.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| format!("bad chunk size {size_text:?}"))?;
            at += line_end + 2;
            if size == 0 {
                // Trailers (none expected) end with an empty line.
                let Some(end) = find(&buf[at..], b"\r\n") else {
                    return Ok(None);
                };
                if end != 0 {
                    let Some(end) = find(&buf[at..], b"\r\n\r\n") else {
                        return Ok(None);
                    };
                    at += end + 4;
                } else {
                    at += 2;
                }
                return Ok(Some((
                    Reply {
                        status,
                        body,
                        close,
                    },
                    at,
                )));
            }
            if buf.len() < at + size + 2 {
                return Ok(None);
            }
            body.extend_from_slice(&buf[at..at + size]);
            at += size + 2;
        }
    }
    match length {
        Some(n) if buf.len() >= body_start + n => Ok(Some((
            Reply {
                status,
                body: buf[body_start..body_start + n].to_vec(),
                close,
            },
            body_start + n,
        ))),
        Some(_) => Ok(None),
        // No length and not chunked: the body runs to the end of the connection; a
        // long-poll reply always has one, so treat it as empty and close.
        None => Ok(Some((
            Reply {
                status,
                body: Vec::new(),
                close: true,
            },
            body_start,
        ))),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one reply; returns it with the instant its first bytes arrived.
async fn read_reply(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    limit: Duration,
) -> Result<(Reply, Instant), String> {
    buf.clear();
    let mut first: Option<Instant> = None;
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some((reply, _)) = parse_reply(buf)? {
            return Ok((reply, first.unwrap_or_else(Instant::now)));
        }
        if buf.capacity() - buf.len() < 256 {
            buf.reserve(512);
        }
        let n = tokio::time::timeout_at(deadline, stream.read_buf(buf))
            .await
            .map_err(|_| "no reply within the poll timeout and a margin".to_string())?
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        first.get_or_insert_with(Instant::now);
    }
}

/// A listener's address and identity.
#[derive(Debug, Clone)]
pub struct Target {
    pub tag: u32,
    pub addr: SocketAddr,
    pub source: Option<IpAddr>,
}

/// A connection to `target`, over TLS when the process speaks it ([`crate::tls`]; the
/// server's certificate must name the IP address).
pub async fn connect(target: &Target) -> std::io::Result<Stream> {
    let tcp = connect_from(target.source, target.addr).await?;
    tls::wrap(tcp, &target.addr.ip().to_string(), tls::http1()).await
}

/// Polls until aborted: `stream` is the connection set up for it, `md5` the md5 the
/// listener holds at first. Every reply naming the key goes to `events`.
pub async fn run(
    target: Target,
    stream: Stream,
    mut md5: String,
    shared: Arc<Shared>,
    events: mpsc::UnboundedSender<Notified>,
) {
    let host = target.addr.to_string();
    let mut stream = Some(stream);
    let mut buf = Vec::with_capacity(512);
    // Long enough for the server's own timeout, which it may stretch a little.
    let limit = Duration::from_millis(shared.poll_timeout_ms) + Duration::from_secs(30);
    loop {
        let mut s = match stream.take() {
            Some(s) => s,
            None => match connect(&target).await {
                Ok(s) => {
                    shared.stats.reconnects.fetch_add(1, Ordering::Relaxed);
                    s
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
        };
        shared.stats.polls.fetch_add(1, Ordering::Relaxed);
        if s.write_all(&request(&host, &shared, &md5)).await.is_err() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let (reply, at) = match read_reply(&mut s, &mut buf, limit).await {
            Ok(r) => r,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if reply.status != 200 {
            shared.stats.errors.fetch_add(1, Ordering::Relaxed);
            if !reply.close {
                stream = Some(s);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let changed = nacos::parse_listener_reply(&String::from_utf8_lossy(&reply.body));
        if changed
            .iter()
            .any(|k| k.data_id == shared.data_id && k.group == shared.group)
        {
            shared.stats.notifications.fetch_add(1, Ordering::Relaxed);
            let _ = events.send(Notified {
                tag: target.tag,
                at,
            });
            md5 = shared.current_md5();
        } else {
            shared.stats.empty.fetch_add(1, Ordering::Relaxed);
        }
        if !reply.close {
            stream = Some(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Shared {
            data_id: "fan".into(),
            group: "DEFAULT_GROUP".into(),
            tenant: String::new(),
            md5: Mutex::new("m0".into()),
            poll_timeout_ms: 30_000,
            stats: Stats::default(),
        }
    }

    #[test]
    fn request_is_a_nacos_long_poll() {
        let r = String::from_utf8(request("127.0.0.1:8848", &shared(), "abc")).unwrap();
        assert!(r.starts_with("POST /nacos/v1/cs/configs/listener HTTP/1.1\r\n"));
        assert!(r.contains("\r\nLong-Pulling-Timeout: 30000\r\n"));
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert_eq!(body, "Listening-Configs=fan%02DEFAULT_GROUP%02abc%01");
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
    }

    #[test]
    fn parses_replies() {
        let text = b"HTTP/1.1 200 OK\r\ncontent-length: 22\r\n\r\nfan%02DEFAULT_GROUP%01\nHTTP/1.1";
        let (reply, used) = parse_reply(text).unwrap().unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, b"fan%02DEFAULT_GROUP%01".to_vec());
        assert!(!reply.close);
        assert_eq!(&text[used..], b"\nHTTP/1.1");
        // Incomplete: headers, then body.
        assert_eq!(parse_reply(b"HTTP/1.1 200 OK\r\nContent-Le").unwrap(), None);
        assert_eq!(
            parse_reply(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").unwrap(),
            None
        );
        let (reply, _) =
            parse_reply(b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                .unwrap()
                .unwrap();
        assert_eq!(reply.status, 503);
        assert!(reply.close);
        assert!(parse_reply(b"SSH-2.0-x\r\n\r\n").is_err());
    }

    #[test]
    fn parses_chunked_replies() {
        let text = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nfan%\r\n3\r\n02x\r\n0\r\n\r\n";
        let (reply, used) = parse_reply(text).unwrap().unwrap();
        assert_eq!(reply.body, b"fan%02x".to_vec());
        assert_eq!(used, text.len());
        assert_eq!(parse_reply(&text[..text.len() - 2]).unwrap(), None);
    }
}
