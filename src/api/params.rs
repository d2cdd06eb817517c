//! Request parameters as Nacos clients send them: in the query string, in a
//! form body, or both (the query string wins, as in a servlet container).

use std::collections::HashMap;

use actix_web::http::header::{AsHeaderName, HeaderName, CONTENT_TYPE};
use actix_web::HttpRequest;
use percent_encoding::{percent_decode_str, AsciiSet, NON_ALPHANUMERIC};

use tacos_app::query::{ConfigFilter, NameMatch, Paging};
use tacos_core::validate::InvalidInput;

/// Merged query and form parameters, in the order they came (query string
/// first). A request has a handful, so a lookup scans them: cheaper than
/// hashing every name, and a duplicate name needs no work when parsing
/// (the first one is found first).
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses the query string and, unless the body is JSON or multipart, the
    /// body as a form.
    pub fn parse(req: &HttpRequest, body: &[u8]) -> Params {
        let mut pairs = form_pairs(req.query_string().as_bytes());
        let content_type = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !body.is_empty() && !content_type.contains("json") && !content_type.contains("multipart")
        {
            pairs.extend(form_pairs(body));
        }
        Params(pairs)
    }

    /// A parameter, if present (the first, if it came more than once).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A parameter, or "" when absent.
    pub fn str(&self, name: &str) -> &str {
        self.get(name).unwrap_or("")
    }

    /// The first of several names that is present, or "".
    pub fn any(&self, names: &[&str]) -> &str {
        names.iter().find_map(|n| self.get(n)).unwrap_or("")
    }

    /// A parameter that must be present.
    pub fn required(&self, name: &'static str) -> Result<&str, InvalidInput> {
        self.get(name).ok_or(InvalidInput::Missing(name))
    }

    /// A number that must be present.
    pub fn required_number(&self, name: &'static str) -> Result<u64, InvalidInput> {
        let raw = self.required(name)?;
        raw.trim()
            .parse()
            .map_err(|_| InvalidInput::Other(name, raw.to_string()))
    }

    /// A positive number, or `default` when absent.
    pub fn number(&self, name: &'static str, default: u64) -> Result<u64, InvalidInput> {
        match self.get(name) {
            None | Some("") => Ok(default),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| InvalidInput::Other(name, v.to_string())),
        }
    }
}

fn form_pairs(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes).into_owned().collect()
}

/// Decodes a URL-encoded string (`+` is a space), as Java's URLDecoder does.
pub fn url_decode(s: &str) -> String {
    let plus_as_space = s.replace('+', " ");
    percent_decode_str(&plus_as_space)
        .decode_utf8_lossy()
        .into_owned()
}

/// Characters Java's URLEncoder leaves alone: alphanumerics and `.-*_`.
const JAVA_URL_SAFE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'*')
    .remove(b'_');

/// Encodes like Java's `URLEncoder.encode(s, "UTF-8")` (space becomes `+`).
pub fn url_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, JAVA_URL_SAFE)
        .to_string()
        .replace("%20", "+")
}

/// A request header as a string, if present and valid.
pub fn header(req: &HttpRequest, name: impl AsHeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The name filter on parameter `name` of a Nacos list route: `search=blur`
/// or `search=accurate`; without `search`, the route's default.
pub fn name_filter<'a>(params: &'a Params, name: &str, blur_by_default: bool) -> NameMatch<'a> {
    NameMatch {
        pattern: params.str(name),
        blur: match params.get("search") {
            Some("blur") => true,
            Some("accurate") => false,
            _ => blur_by_default,
        },
    }
}

/// The config search of a list route's parameters: `dataId` and `group`
/// (blur or accurate), `appName`, `type`, `config_tags` (comma-separated,
/// all required), `content` (substring).
pub fn config_filter(params: &Params, blur: bool) -> ConfigFilter<'_> {
    ConfigFilter {
        data_id: params.str("dataId").trim(),
        group: params.str("group").trim(),
        blur,
        app_name: params.str("appName"),
        config_type: params.str("type"),
        tags: params
            .str("config_tags")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect(),
        content: params.str("content"),
        contains: false,
    }
}

/// `pageNo` and `pageSize` (default `default_size`), checked by
/// [`Paging::new`].
pub fn paging(params: &Params, default_size: u64) -> Result<(u64, u64), InvalidInput> {
    let paging = Paging::new(
        params.number("pageNo", 1)?,
        params.number("pageSize", default_size)?,
    )?;
    Ok((paging.page_no, paging.page_size))
}

/// Every value of `name` in the query string and a form body, each split
/// at commas (Spring binds `ids=1,2` and `ids=1&ids=2` alike); `None` when
/// the parameter is not there at all.
pub fn all_values(req: &HttpRequest, body: &[u8], name: &str) -> Option<Vec<String>> {
    let pairs = |bytes: &[u8]| {
        serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes).unwrap_or_default()
    };
    let mut values = pairs(req.query_string().as_bytes());
    let is_form = header(req, "Content-Type")
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    if is_form {
        values.extend(pairs(body));
    }
    let found: Vec<String> = values
        .into_iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v)
        .collect();
    (!found.is_empty()).then(|| {
        found
            .iter()
            .flat_map(|v| v.split(','))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect()
    })
}

/// A `multipart/form-data` body: its text fields and its files (by field
/// name; the first of a name wins, as Spring binds one `MultipartFile`).
#[derive(Debug, Default)]
pub struct Multipart {
    pub fields: HashMap<String, String>,
    pub files: HashMap<String, Vec<u8>>,
}

/// Parses a `multipart/form-data` body; `None` when the request is not
/// one (or names no boundary), `Err` when the body does not follow its
/// boundary.
pub fn multipart(req: &HttpRequest, body: &[u8]) -> Option<Result<Multipart, InvalidInput>> {
    let content_type = header(req, "Content-Type")?;
    if !content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        return None;
    }
    let boundary = content_type.split(';').find_map(|part| {
        let (name, value) = part.trim().split_once('=')?;
        name.eq_ignore_ascii_case("boundary")
            .then(|| value.trim().trim_matches('"').to_string())
    })?;
    Some(parse_multipart(body, &boundary))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse_multipart(body: &[u8], boundary: &str) -> Result<Multipart, InvalidInput> {
    let bad = |why: &str| InvalidInput::Other("multipart body", why.to_string());
    if boundary.is_empty() {
        return Err(bad("the boundary is empty"));
    }
    let delimiter = format!("--{boundary}");
    let mut out = Multipart::default();
    let start = find(body, delimiter.as_bytes()).ok_or_else(|| bad("no boundary in the body"))?;
    let mut rest = &body[start + delimiter.len()..];
    let next = format!("\r\n--{boundary}");
    loop {
        if rest.starts_with(b"--") {
            return Ok(out);
        }
        let rest_of_line = rest
            .strip_prefix(b"\r\n")
            .ok_or_else(|| bad("a boundary line does not end with CRLF"))?;
        let head_end =
            find(rest_of_line, b"\r\n\r\n").ok_or_else(|| bad("a part has no header end"))?;
        let head = String::from_utf8_lossy(&rest_of_line[..head_end]).into_owned();
        let after_head = &rest_of_line[head_end + 4..];
        let end = find(after_head, next.as_bytes()).ok_or_else(|| bad("a part is not closed"))?;
        let content = &after_head[..end];
        rest = &after_head[end + next.len()..];
        let disposition = head
            .split("\r\n")
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))
            .unwrap_or_default();
        let attribute = |attr: &str| {
            disposition.split(';').find_map(|p| {
                let (k, v) = p.trim().split_once('=')?;
                (k.trim().eq_ignore_ascii_case(attr))
                    .then(|| v.trim().trim_matches('"').to_string())
            })
        };
        let Some(name) = attribute("name") else {
            continue;
        };
        if attribute("filename").is_some() {
            out.files.entry(name).or_insert_with(|| content.to_vec());
        } else {
            out.fields
                .entry(name)
                .or_insert_with(|| String::from_utf8_lossy(content).into_owned());
        }
    }
}

/// The client's IP as Nacos determines it: `X-Forwarded-For` (first hop),
/// then `X-Real-IP`, then the peer address.
pub fn client_ip(req: &HttpRequest) -> String {
    // Names made once: a `&str` name is parsed into a header name on every
    // lookup (a fifth of a long poll's own work in callgrind).
    const FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
    const REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
    let header = |name: HeaderName| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or("").trim().to_string())
            .filter(|v| !v.is_empty())
    };
    header(FORWARDED_FOR)
        .or_else(|| header(REAL_IP))
        .or_else(|| req.peer_addr().map(|a| a.ip().to_string()))
        .unwrap_or_default()
}

/// What a config read tells about its client, for gray matching (Nacos'
/// `DefaultChainRequestExtractor`): its IP, and its tag from the `tag`
/// parameter or else the `Vipserver-Tag` header. The second value says the
/// tag came as the parameter: then a read that matches no gray finds
/// nothing (see `tacos_app::gray_match::served`). `has_grays`: whether the key
/// has a gray version at all; without one, the IP and header cannot change
/// the answer and are not read (formatting the IP and looking up headers
/// was 5% of a config read).
pub fn read_labels(
    req: &HttpRequest,
    params: &Params,
    has_grays: bool,
) -> (tacos_state::ClientLabels, bool) {
    let explicit = params.str("tag").trim();
    if !explicit.is_empty() {
        return (
            tacos_app::gray_match::labels(&client_ip(req), Some(explicit)),
            true,
        );
    }
    if !has_grays {
        return (tacos_state::ClientLabels::default(), false);
    }
    let header_tag = header(req, tacos_app::gray_match::TAG_LABEL);
    (
        tacos_app::gray_match::labels(&client_ip(req), header_tag.as_deref()),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_bodies() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\nSKIP\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.zip\"\r\nContent-Type: application/zip\r\n\r\n\x00\x01\r\n\r\n--XyZ--\r\n";
        let parsed = parse_multipart(body, "XyZ").unwrap();
        assert_eq!(parsed.fields["policy"], "SKIP");
        assert_eq!(parsed.files["file"], b"\x00\x01\r\n");
        assert!(parse_multipart(b"--XyZ\r\nno header end", "XyZ").is_err());
        assert!(parse_multipart(b"nothing", "XyZ").is_err());
        assert!(parse_multipart(b"--XyZ\r\nA: b\r\n\r\nunclosed", "XyZ").is_err());
    }

    #[test]
    fn the_query_string_wins_and_the_first_of_a_name() {
        let req = actix_web::test::TestRequest::post()
            .uri("/x?dataId=q&group=g1&group=g2")
            .insert_header((CONTENT_TYPE, "application/x-www-form-urlencoded"))
            .to_http_request();
        let params = Params::parse(&req, b"dataId=body&content=c%2Bd+e&tenant=");
        assert_eq!(params.get("dataId"), Some("q"));
        assert_eq!(params.str("group"), "g1");
        assert_eq!(params.str("content"), "c+d e");
        assert_eq!(params.get("tenant"), Some(""));
        assert_eq!(params.get("missing"), None);
        // A JSON body is not a form.
        let req = actix_web::test::TestRequest::post()
            .uri("/x?a=1")
            .insert_header((CONTENT_TYPE, "application/json"))
            .to_http_request();
        let params = Params::parse(&req, b"b=2");
        assert_eq!((params.get("a"), params.get("b")), (Some("1"), None));
    }

    #[test]
    fn url_coding_matches_java() {
        assert_eq!(url_encode("a.b-c*d_e"), "a.b-c*d_e");
        assert_eq!(url_encode("a b\u{2}c\u{1}"), "a+b%02c%01");
        assert_eq!(url_encode("配"), "%E9%85%8D");
        assert_eq!(url_decode("a+b%02c%01"), "a b\u{2}c\u{1}");
    }

    #[test]
    fn name_filters_follow_search_or_the_route_default() {
        let params = |query: &str| {
            let req = actix_web::test::TestRequest::get()
                .uri(&format!("/x?{query}"))
                .to_http_request();
            Params::parse(&req, &[])
        };
        let exact = params("role=dev&search=accurate");
        let exact = name_filter(&exact, "role", true);
        assert!(exact.matches("dev") && !exact.matches("devops"));
        let blur = params("role=dev*&search=blur");
        let blur = name_filter(&blur, "role", false);
        assert!(blur.matches("devops") && !blur.matches("ops"));
        let default = params("role=dev*");
        assert!(name_filter(&default, "role", true).matches("devops"));
        assert!(!name_filter(&default, "role", false).matches("devops"));
        let all = params("search=accurate");
        assert!(name_filter(&all, "role", false).matches("anything"));
    }
}
