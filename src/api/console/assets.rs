//! The console's static files, embedded into the binary from
//! `web-console/` (also in debug builds: the binary never reads them from
//! disk, so it runs the same from any directory).
//!
//! `/` and `/console/` serve `index.html`; `/console/{file}` serves a file.
//! The files are plain ES modules with fixed names (no bundler), so they
//! are served with `Cache-Control: no-cache` and a strong `ETag` (the
//! file's SHA-256): browsers revalidate on every load and get `304 Not
//! Modified` until the binary changes. The HTML carries a strict Content
//! Security Policy: scripts, styles and requests only from this origin.

use std::borrow::Cow;

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
    let etag = format!(
        "\"{}\"",
        hash.iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
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
    response
        .insert_header((header::CACHE_CONTROL, "no-cache"))
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
    response
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(path)),
        ))
        .body(match found.data {
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
}
