//! Request builders for the Nacos HTTP open API v1, as pure functions: the form bodies
//! the scenarios send, query strings, the listener's `Listening-Configs` record format
//! and its reply. The scenarios send exactly what these build, so the unit tests below
//! pin the wire format.

use std::fmt::Write as _;

use crate::encode;

/// The Nacos v1 long-poll listener resource.
pub const LISTENER_PATH: &str = "/nacos/v1/cs/configs/listener";
/// The header carrying how long the server may hold a long poll, in milliseconds.
pub const LONG_POLL_TIMEOUT_HEADER: &str = "Long-Pulling-Timeout";
/// The form field that lists the configs a listener watches.
pub const LISTENING_CONFIGS: &str = "Listening-Configs";
/// `application/x-www-form-urlencoded`, what the official clients send.
pub const FORM_CONTENT_TYPE: &str = "application/x-www-form-urlencoded";

/// Separates the fields of one `Listening-Configs` record (`^B`).
pub const WORD_SEPARATOR: char = '\u{2}';
/// Ends each `Listening-Configs` record (`^A`).
pub const LINE_SEPARATOR: char = '\u{1}';

/// `application/x-www-form-urlencoded` body of `params`, in order: every name and value
/// percent-encoded (all but RFC 3986 unreserved characters), joined with `=` and `&`.
pub fn form_body<K: AsRef<str>, V: AsRef<str>>(params: &[(K, V)]) -> String {
    let mut body = String::new();
    for (i, (name, value)) in params.iter().enumerate() {
        if i > 0 {
            body.push('&');
        }
        body.push_str(&encode(name.as_ref()));
        body.push('=');
        body.push_str(&encode(value.as_ref()));
    }
    body
}

/// The form of a publish (`POST /nacos/v1/cs/configs`): `dataId`, `group`, `content`,
/// `tenant` and, when logged in, `accessToken`.
pub fn publish_form(
    data_id: &str,
    group: &str,
    content: &str,
    tenant: &str,
    token: Option<&str>,
) -> String {
    let mut params = vec![
        ("dataId", data_id),
        ("group", group),
        ("content", content),
        ("tenant", tenant),
    ];
    if let Some(token) = token {
        params.push(("accessToken", token));
    }
    form_body(&params)
}

/// The path and query of a read (`GET /nacos/v1/cs/configs?dataId=..&group=..&tenant=`).
pub fn query_path(data_id: &str, group: &str, tenant: &str, token: Option<&str>) -> String {
    let mut path = format!(
        "{}?dataId={}&group={}&tenant={}",
        crate::CONFIGS_PATH,
        encode(data_id),
        encode(group),
        encode(tenant)
    );
    if let Some(token) = token {
        let _ = write!(path, "&accessToken={}", encode(token));
    }
    path
}

/// One config a listener watches, with the md5 of the content it has ("" for none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenEntry {
    pub data_id: String,
    pub group: String,
    pub md5: String,
    pub tenant: String,
}

/// The `Listening-Configs` value (before form encoding): one record per entry,
/// `dataId^Bgroup^Bmd5^A`, or `dataId^Bgroup^Bmd5^Btenant^A` in a namespace, as the
/// official Java client builds it.
pub fn listening_configs(entries: &[ListenEntry]) -> String {
    let mut raw = String::new();
    for e in entries {
        raw.push_str(&e.data_id);
        raw.push(WORD_SEPARATOR);
        raw.push_str(&e.group);
        raw.push(WORD_SEPARATOR);
        raw.push_str(&e.md5);
        if !e.tenant.is_empty() {
            raw.push(WORD_SEPARATOR);
            raw.push_str(&e.tenant);
        }
        raw.push(LINE_SEPARATOR);
    }
    raw
}

/// The form body of a listener request for `entries` (plus `accessToken` when logged in).
pub fn listener_form(entries: &[ListenEntry], token: Option<&str>) -> String {
    let raw = listening_configs(entries);
    let mut params = vec![(LISTENING_CONFIGS, raw.as_str())];
    if let Some(token) = token {
        params.push(("accessToken", token));
    }
    form_body(&params)
}

/// A config named in a listener reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedKey {
    pub data_id: String,
    pub group: String,
    pub tenant: String,
}

/// Parses a listener reply: URL-encoded `dataId^Bgroup[^Btenant]^A...` (possibly with a
/// trailing newline); an empty body means nothing changed. Records that do not have two
/// or three fields are skipped.
pub fn parse_listener_reply(body: &str) -> Vec<ChangedKey> {
    let decoded = url_decode(body.trim());
    decoded
        .split(LINE_SEPARATOR)
        .filter(|record| !record.trim().is_empty())
        .filter_map(|record| {
            let fields: Vec<&str> = record.trim().split(WORD_SEPARATOR).collect();
            match fields.as_slice() {
                [d, g] => Some((d, g, &"")),
                [d, g, t] => Some((d, g, t)),
                _ => None,
            }
            .map(|(d, g, t)| ChangedKey {
                data_id: d.to_string(),
                group: g.to_string(),
                tenant: t.to_string(),
            })
        })
        .collect()
}

/// Decodes `%XX` escapes and `+` (a space in a form); invalid escapes stay as they are.
pub fn url_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Lowercase hex md5 of `content`, as Nacos reports it.
pub fn md5_hex(content: &str) -> String {
    format!("{:x}", md5::compute(content.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_form_encodes_every_field() {
        assert_eq!(
            publish_form("app.yaml", "DEFAULT_GROUP", "a b&c=d/é", "", None),
            "dataId=app.yaml&group=DEFAULT_GROUP&content=a%20b%26c%3Dd%2F%C3%A9&tenant="
        );
        assert_eq!(
            publish_form("k-1", "G", "x", "ns-1", Some("tok+/=")),
            "dataId=k-1&group=G&content=x&tenant=ns-1&accessToken=tok%2B%2F%3D"
        );
    }

    #[test]
    fn form_body_keeps_order_and_empty_values() {
        assert_eq!(form_body::<&str, &str>(&[]), "");
        assert_eq!(form_body(&[("a", ""), ("b c", "1")]), "a=&b%20c=1");
    }

    #[test]
    fn query_path_encodes_components() {
        assert_eq!(
            query_path("loadtest-q-7", "DEFAULT_GROUP", "", None),
            "/nacos/v1/cs/configs?dataId=loadtest-q-7&group=DEFAULT_GROUP&tenant="
        );
        assert_eq!(
            query_path("a:b", "G", "ns", Some("t=1")),
            "/nacos/v1/cs/configs?dataId=a%3Ab&group=G&tenant=ns&accessToken=t%3D1"
        );
    }

    fn entry(data_id: &str, md5: &str, tenant: &str) -> ListenEntry {
        ListenEntry {
            data_id: data_id.into(),
            group: "DEFAULT_GROUP".into(),
            md5: md5.into(),
            tenant: tenant.into(),
        }
    }

    #[test]
    fn listening_configs_records() {
        let raw = listening_configs(&[entry("a", "m1", ""), entry("b", "", "ns")]);
        assert_eq!(
            raw,
            "a\u{2}DEFAULT_GROUP\u{2}m1\u{1}b\u{2}DEFAULT_GROUP\u{2}\u{2}ns\u{1}"
        );
        // In the form the separators travel as %02 and %01, as the Java client sends them.
        assert_eq!(
            listener_form(&[entry("a", "m1", "")], None),
            "Listening-Configs=a%02DEFAULT_GROUP%02m1%01"
        );
        assert_eq!(
            listener_form(&[entry("a", "m1", "")], Some("t")),
            "Listening-Configs=a%02DEFAULT_GROUP%02m1%01&accessToken=t"
        );
    }

    #[test]
    fn listener_replies() {
        // What Tacos, r-nacos and Nacos send: URL-encoded records and a newline.
        let changed = parse_listener_reply("a%02DEFAULT_GROUP%01b%02G%02ns%01\n");
        assert_eq!(
            changed,
            vec![
                ChangedKey {
                    data_id: "a".into(),
                    group: "DEFAULT_GROUP".into(),
                    tenant: "".into()
                },
                ChangedKey {
                    data_id: "b".into(),
                    group: "G".into(),
                    tenant: "ns".into()
                },
            ]
        );
        // Not encoded at all also works; an empty reply is "nothing changed".
        assert_eq!(parse_listener_reply("x\u{2}G\u{1}").len(), 1);
        assert!(parse_listener_reply("").is_empty());
        assert!(parse_listener_reply("\n").is_empty());
        // A record with one field is skipped.
        assert!(parse_listener_reply("lonely%01").is_empty());
    }

    #[test]
    fn decodes_urls() {
        assert_eq!(url_decode("a%20b+c%2F"), "a b c/");
        assert_eq!(url_decode("100%"), "100%");
        assert_eq!(url_decode("%zz%4"), "%zz%4");
        assert_eq!(url_decode("%C3%A9"), "é");
    }

    #[test]
    fn md5_is_lowercase_hex() {
        assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    }
}
