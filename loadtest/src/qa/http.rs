//! A tiny blocking HTTP/1.1 client for the qa tool's own few requests (readiness
//! probes, the admin status of a Tacos cluster). Loopback only: it refuses any address
//! that is not 127.0.0.1, so the tool cannot send traffic anywhere else by mistake.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::Duration;

use thiserror::Error;

/// Why a request got no answer.
#[derive(Debug, Error)]
pub enum HttpError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}: not an HTTP response")]
    Malformed(String),
}

/// An answer: status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// A loopback address.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// `GET path` on 127.0.0.1:`port`.
pub fn get(
    port: u16,
    path: &str,
    auth: Option<&str>,
    timeout: Duration,
) -> Result<Response, HttpError> {
    request(port, "GET", path, None, auth, timeout)
}

/// `POST path` with a form body on 127.0.0.1:`port`.
pub fn post_form(
    port: u16,
    path: &str,
    body: &str,
    timeout: Duration,
) -> Result<Response, HttpError> {
    request(port, "POST", path, Some(body), None, timeout)
}

/// The request bytes (`Connection: close`, so the answer ends at EOF).
pub fn encode_request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    auth: Option<&str>,
) -> String {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nUser-Agent: tacos-qa\r\n"
    );
    if let Some(basic) = auth {
        head.push_str(&format!(
            "Authorization: Basic {}\r\n",
            base64(basic.as_bytes())
        ));
    }
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        head.push_str("\r\n");
    }
    head
}

fn request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    auth: Option<&str>,
    timeout: Duration,
) -> Result<Response, HttpError> {
    let what = format!("{method} 127.0.0.1:{port}{path}");
    let io = |e| HttpError::Io(what.clone(), e);
    let mut stream = TcpStream::connect_timeout(&loopback(port), timeout).map_err(io)?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    stream
        .write_all(encode_request(port, method, path, body, auth).as_bytes())
        .map_err(io)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(io)?;
    parse_response(&raw).ok_or(HttpError::Malformed(what))
}

/// Parses a whole `Connection: close` response (plain or chunked body).
pub fn parse_response(raw: &[u8]) -> Option<Response> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut parts = status_line.split_whitespace();
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let status: u16 = parts.next()?.parse().ok()?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = &raw[split + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Some(Response {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

/// Standard base64 with padding (for Basic auth).
pub fn base64(input: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether something accepts connections on 127.0.0.1:`port`, or (false) it is free
/// to bind.
pub fn port_free(port: u16) -> bool {
    std::net::TcpListener::bind(loopback(port)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_requests() {
        let r = encode_request(8848, "POST", "/x", Some("a=1"), None);
        assert_eq!(
            r,
            "POST /x HTTP/1.1\r\nHost: 127.0.0.1:8848\r\nConnection: close\r\nUser-Agent: tacos-qa\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=1"
        );
        let r = encode_request(1, "GET", "/y", None, Some("nacos:pw"));
        assert!(r.contains("Authorization: Basic bmFjb3M6cHc=\r\n"));
        assert!(r.ends_with("\r\n\r\n"));
    }

    #[test]
    fn parses_responses() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ntrue").unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body, "true");
        let r = parse_response(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.status, 404);
        assert_eq!(r.body, "abcde");
        assert!(parse_response(b"garbage").is_none());
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_none());
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"nacos:pw"), "bmFjb3M6cHc=");
    }

    #[test]
    fn talks_to_a_local_listener() {
        let listener = std::net::TcpListener::bind(loopback(0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(!port_free(port));
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap();
            assert!(String::from_utf8_lossy(&buf[..n]).starts_with("GET /ping HTTP/1.1"));
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
        });
        let r = get(port, "/ping", None, Duration::from_secs(5)).unwrap();
        assert_eq!(r.body, "ok");
        server.join().unwrap();
    }
}
