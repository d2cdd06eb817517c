//! The console's static files, embedded into the binary from
//! `web-console/` (also in debug builds: the binary never reads them from
//! disk, so it runs the same from any directory).
//!
//! `/` and `/console/` serve `index.html`; `/console/{file}` serves a file.
//! The console's own files are plain ES modules with fixed names, served
//! with `Cache-Control: no-cache` and a strong `ETag` (the file's SHA-256):
//! browsers revalidate on every load and get `304 Not Modified` until the
//! binary changes. The bundle in `lib/` (CodeMirror and uPlot, built by
//! `scripts/build-console.sh`) has a content hash in its names and is
//! cached for a year (`immutable`). Text files are sent gzipped to clients
//! that accept it: each is compressed once, on its first request, and kept
//! (about 200 KB for all of them). The HTML carries a strict Content
//! Security Policy: scripts, styles and requests only from this origin.
//!
//! The console's strings are in `i18n/en.json` and `i18n/zh-CN.json`; a
//! test below fails when either lacks a key of the other or one the code
//! uses.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::api::guard::{Need, Routes};

#[derive(rust_embed::RustEmbed)]
#[folder = "web-console/"]
struct Files;

pub fn routes(r: &mut Routes) {
    r.get("/", Need::Public, index)
        .get("/console", Need::Public, redirect)
        .get("/console/{file:.*}", Need::Public, file);
}

/// What the HTML may load: only this origin.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Whether a file's name holds its content hash (`lib/name-0123456789ab.js`):
/// such a file never changes under its name and may be cached for good.
fn is_hashed(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("lib/") else {
        return false;
    };
    let stem = rest.rsplit_once('.').map_or(rest, |(stem, _)| stem);
    stem.rsplit_once('-')
        .is_some_and(|(_, hash)| hash.len() >= 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether a file is text worth compressing.
fn compressible(path: &str) -> bool {
    matches!(
        path.rsplit_once('.').map(|(_, ext)| ext),
        Some("html" | "js" | "mjs" | "css" | "svg" | "json" | "txt")
    )
}

/// The gzip of an embedded file, compressed on its first request and kept.
fn gzipped(path: &str, bytes: &[u8]) -> web::Bytes {
    static CACHE: OnceLock<Mutex<HashMap<String, web::Bytes>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
        return found.clone();
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    let gz = web::Bytes::from(encoder.finish().unwrap_or_default());
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.to_string(), gz.clone());
    gz
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .content_type("text/plain; charset=utf-8")
        .body("no such file\n")
}

/// Serves one embedded file, answering 304 when the client's copy is current.
fn serve(req: &HttpRequest, path: &str) -> HttpResponse {
    let Some(found) = Files::get(path) else {
        return not_found();
    };
    let hash = found.metadata.sha256_hash();
    let gzip = compressible(path)
        && req
            .headers()
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    // Each encoding is its own representation, with its own tag.
    let etag = format!(
        "\"{}{}\"",
        hash.iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
        if gzip { "-gz" } else { "" }
    );
    let matches = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        });
    let mut response = if matches {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    let cache = if is_hashed(path) {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    response
        .insert_header((header::CACHE_CONTROL, cache))
        .insert_header((header::VARY, "Accept-Encoding"))
        .insert_header((header::ETAG, etag))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if path.ends_with(".html") {
        response
            .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
            .insert_header((header::REFERRER_POLICY, "no-referrer"))
            .insert_header((header::X_FRAME_OPTIONS, "DENY"));
    }
    if matches {
        return response.finish();
    }
    response.insert_header((
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    ));
    if gzip {
        return response
            .insert_header((header::CONTENT_ENCODING, "gzip"))
            .body(gzipped(path, &found.data));
    }
    response.body(match found.data {
        Cow::Borrowed(bytes) => web::Bytes::from_static(bytes),
        Cow::Owned(bytes) => web::Bytes::from(bytes),
    })
}

async fn index(req: HttpRequest) -> HttpResponse {
    serve(&req, "index.html")
}

async fn redirect() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, "/console/"))
        .finish()
}

async fn file(req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let path = path.into_inner();
    if path.is_empty() || path == "index.html" {
        return serve(&req, "index.html");
    }
    // Embedded names are plain relative paths; anything else is not a file.
    if path.split('/').any(|part| part.is_empty() || part == "..") {
        return not_found();
    }
    serve(&req, &path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn the_console_files_are_embedded_with_types() {
        for path in ["index.html", "css/console.css", "js/app.js", "js/api.js"] {
            assert!(Files::get(path).is_some(), "{path} is not embedded");
        }
        let req = TestRequest::default().to_http_request();
        let response = serve(&req, "index.html");
        assert_eq!(response.status().as_u16(), 200);
        let header = |response: &HttpResponse, name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(
            header(&response, "content-type"),
            "text/html; charset=utf-8"
        );
        assert_eq!(header(&response, "cache-control"), "no-cache");
        assert!(!header(&response, "content-security-policy").is_empty());
        let etag = header(&response, "etag");
        let again = TestRequest::default()
            .insert_header(("If-None-Match", etag.as_str()))
            .to_http_request();
        assert_eq!(serve(&again, "index.html").status().as_u16(), 304);
        let js = serve(&req, "js/app.js");
        assert_eq!(
            header(&js, "content-type"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(serve(&req, "nope.js").status().as_u16(), 404);
        assert_eq!(content_type("x.svg"), "image/svg+xml");
    }

    /// A language file's strings, key → text.
    fn strings(lang: &str) -> std::collections::BTreeMap<String, String> {
        let file = Files::get(&format!("i18n/{lang}.json")).expect("the language file is embedded");
        serde_json::from_slice(&file.data).expect("a flat JSON object of strings")
    }

    /// The `{name}` placeholders of a string, sorted.
    fn placeholders(text: &str) -> Vec<&str> {
        let mut found: Vec<&str> = text
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect();
        found.sort_unstable();
        found
    }

    #[test]
    fn both_languages_hold_every_key_the_console_uses() {
        let en = strings("en");
        let zh = strings("zh-CN");
        let only_en: Vec<&String> = en.keys().filter(|k| !zh.contains_key(*k)).collect();
        let only_zh: Vec<&String> = zh.keys().filter(|k| !en.contains_key(*k)).collect();
        assert!(only_en.is_empty(), "missing in zh-CN.json: {only_en:?}");
        assert!(only_zh.is_empty(), "missing in en.json: {only_zh:?}");
        for (key, text) in &en {
            assert!(!text.is_empty() && !zh[key].is_empty(), "{key} is empty");
            assert_eq!(
                placeholders(text),
                placeholders(&zh[key]),
                "{key}: the two languages name different placeholders"
            );
        }
        // Every literal key the code asks for: `t('page.what'`.
        let mut used = 0;
        for path in Files::iter().filter(|p| p.starts_with("js/") && p.ends_with(".js")) {
            let code = String::from_utf8(Files::get(&path).unwrap().data.into_owned()).unwrap();
            for rest in code.split("t('").skip(1) {
                let Some((key, _)) = rest.split_once('\'') else {
                    continue;
                };
                // Only `t(` itself, not e.g. `set('`: the character before
                // the split is checked through the key's shape instead.
                if key.contains('.') && !key.contains(' ') {
                    used += 1;
                    assert!(
                        en.contains_key(key),
                        "{path} uses {key}, which en.json lacks"
                    );
                }
            }
        }
        assert!(
            used > 300,
            "only {used} keys found: is the scan still right?"
        );
    }

    #[test]
    fn the_bundle_is_cached_for_good_and_everything_is_gzipped() {
        assert!(
            Files::iter().all(|p| !p.contains("node_modules") && !p.ends_with("package.json")),
            "only the console's files are embedded, not a bundle's source"
        );
        let lib = Files::iter()
            .find(|p| p.starts_with("lib/") && p.ends_with(".js"))
            .expect("the console bundle is embedded (scripts/build-console.sh)");
        assert!(is_hashed(&lib));
        assert!(!is_hashed("js/lib.js") && !is_hashed("lib/plain.js"));
        let gz = TestRequest::default()
            .insert_header(("Accept-Encoding", "gzip, br"))
            .to_http_request();
        let response = serve(&gz, &lib);
        let headers = response.headers();
        assert_eq!(
            headers.get("cache-control").unwrap(),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(headers.get("content-encoding").unwrap(), "gzip");
        let etag = headers.get("etag").unwrap().to_str().unwrap().to_string();
        assert!(etag.ends_with("-gz\""), "{etag}");
        let body =
            actix_web::body::MessageBody::try_into_bytes(response.into_body()).unwrap_or_default();
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut plain)
            .expect("a gzip body");
        assert_eq!(plain, Files::get(&lib).unwrap().data.as_ref());
        assert!(
            body.len() * 2 < plain.len(),
            "{} of {}",
            body.len(),
            plain.len()
        );
        // Without Accept-Encoding: the file as it is; the HTML is no-cache.
        let req = TestRequest::default().to_http_request();
        assert!(serve(&req, &lib)
            .headers()
            .get("content-encoding")
            .is_none());
        let html = serve(&gz, "index.html");
        assert_eq!(html.headers().get("cache-control").unwrap(), "no-cache");
        assert_eq!(html.headers().get("content-encoding").unwrap(), "gzip");
    }
}
