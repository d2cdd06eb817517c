//! The v1 long poll (`POST /nacos/v1/cs/configs/listener`, Nacos'
//! `ConfigController.listener`): the `Listening-Configs` records, an
//! answer at once when something changed, else a hold in the watch hub.

use super::answer::{bad_request, no_cache};
use std::time::Duration;

use actix_web::http::header::HeaderName;
use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::api::call::{Call, FormCall};
use crate::api::guard::refusal;
use crate::api::params::{client_ip, header, url_decode, url_encode};
use crate::api::render::v1_error;
use tacos_app::gray_match;
use tacos_app::read::Reader;
use tacos_app::watch::{changed_keys, Cancel, Hold, HoldOutcome, ListenKey, Polled, WatchHub};
use tacos_core::validate::{InvalidInput, KeyRules};
use tacos_state::ClientLabels;
use tacos_state::ConfigKey;

/// The poll's headers, named once: a `&str` name is parsed on every lookup,
/// and a fan-out answers thousands of polls that all poll again at once.
const TIMEOUT: HeaderName = HeaderName::from_static("long-pulling-timeout");
const NO_HANGUP: HeaderName = HeaderName::from_static("long-pulling-timeout-no-hangup");
/// [`gray_match::TAG_LABEL`] as a header name.
const TAG: HeaderName = HeaderName::from_static("vipserver-tag");

pub(super) const WORD_SEPARATOR: char = '\u{2}';
pub(super) const LINE_SEPARATOR: char = '\u{1}';

/// Parses `Listening-Configs` (already form-decoded once; decoded again here,
/// as Nacos does): records `dataId^2group^2md5[^2tenant]^1`.
pub fn parse_listening_configs(raw: &str, max_keys: usize) -> Result<Vec<ListenKey>, InvalidInput> {
    let decoded = url_decode(raw);
    let invalid = || InvalidInput::Other("Listening-Configs", "invalid probeModify".into());
    let mut keys = Vec::new();
    for record in decoded.split(LINE_SEPARATOR) {
        if record.is_empty() {
            continue;
        }
        let fields: Vec<&str> = record.split(WORD_SEPARATOR).collect();
        let (data_id, group, md5, tenant) = match fields.as_slice() {
            [d, g, m] => (*d, *g, *m, ""),
            [d, g, m, t] => (*d, *g, *m, *t),
            _ => return Err(invalid()),
        };
        if data_id.is_empty() || group.is_empty() {
            return Err(invalid());
        }
        // Nacos checks listened keys only with its parameter filter on.
        KeyRules::current().filter_only(tenant, group, data_id)?;
        keys.push(ListenKey {
            key: ConfigKey::new(tenant, group, data_id),
            data_id: data_id.to_string(),
            group: group.to_string(),
            tenant: tenant.to_string(),
            md5: md5.to_string(),
        });
        if keys.len() > max_keys {
            return Err(InvalidInput::Other(
                "Listening-Configs",
                format!("more than {max_keys} keys in one request"),
            ));
        }
    }
    if keys.is_empty() {
        return Err(invalid());
    }
    Ok(keys)
}

/// The listener reply: URL-encoded `dataId^2group[^2tenant]^1...` and a newline.
pub fn listener_body(changed: &[ListenKey]) -> String {
    let mut raw = String::new();
    for k in changed {
        raw.push_str(&k.data_id);
        raw.push(WORD_SEPARATOR);
        raw.push_str(&k.group);
        if !k.tenant.is_empty() {
            raw.push(WORD_SEPARATOR);
            raw.push_str(&k.tenant);
        }
        raw.push(LINE_SEPARATOR);
    }
    format!("{}\n", url_encode(&raw))
}

pub(super) fn listener_reply(changed: &[ListenKey]) -> HttpResponse {
    let body = if changed.is_empty() {
        String::new()
    } else {
        listener_body(changed)
    };
    no_cache(&mut HttpResponse::Ok())
        .content_type("text/html;charset=UTF-8")
        .body(body)
}

/// Cancels a hold if the request goes away before it is answered.
pub(super) struct HoldGuard {
    hub: actix::Addr<WatchHub>,
    id: Option<u64>,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.hub.do_send(Cancel(id));
        }
    }
}

pub(super) async fn listener(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
    }) = call;
    let keys = {
        let Some(raw) = params.get("Listening-Configs") else {
            return bad_request(InvalidInput::Missing("Listening-Configs"));
        };
        match parse_listening_configs(raw, app.max_listen_keys) {
            Ok(keys) => keys,
            Err(e) => return bad_request(e),
        }
    };
    // actix reads a body into a buffer of at least 8 KiB; kept, it would stay
    // allocated for as long as the poll is held (a quarter of a held poll's
    // memory, heaptrack with 5,000 of them); so would the parameters.
    drop(body);
    drop(params);
    // A learner too far behind: 503, and the client polls another node.
    if let Err(behind) = app.service.readable() {
        return v1_error(StatusCode::SERVICE_UNAVAILABLE, behind);
    }
    if let Err(denied) = Reader::new(&principal).watch(keys.iter().map(|k| &k.key)) {
        return refusal(&denied);
    }
    let ip = client_ip(&req);
    // A long poll's tag travels in the `Vipserver-Tag` header (Nacos'
    // NacosMd5Comparator); its IP matches betas.
    let tag = gray_match::labels(&ip, header(&req, TAG).as_deref()).tag;
    let labels = ClientLabels {
        ip: ip.clone(),
        tag: tag.clone(),
    };
    let changed = changed_keys(&app.service.state(), &keys, &labels);
    let header = |name: HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok());
    let timeout = header(TIMEOUT).and_then(|t| t.trim().parse::<u64>().ok());
    // Answered without a hold: the hub still hears of the poll, for the
    // listeners view (a client holding a stale md5 shows up as not in sync).
    let answer_now = |keys: Vec<ListenKey>, client_ip: String| {
        app.hub.do_send(Polled {
            keys,
            client_ip,
            tag: labels.tag.clone(),
        });
        listener_reply(&changed)
    };
    let Some(timeout) = timeout else {
        return answer_now(keys, ip);
    };
    if !changed.is_empty() || header(NO_HANGUP) == Some("true") {
        return answer_now(keys, ip);
    }
    let hold_for = Duration::from_millis(timeout.saturating_sub(500).max(10_000));
    let (reply, answer) = tokio::sync::oneshot::channel();
    let outcome = app
        .hub
        .send(Hold {
            keys,
            client_ip: ip,
            tag,
            reply,
        })
        .await;
    let mut guard = HoldGuard {
        hub: app.hub.clone(),
        id: None,
    };
    match outcome {
        Ok(HoldOutcome::Held(id)) => guard.id = Some(id),
        Ok(HoldOutcome::Answered) => {}
        Ok(HoldOutcome::Full { limit }) => {
            return v1_error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("too many listeners are waiting (limit {limit}); retry later"),
            )
        }
        Err(e) => return v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
    match tokio::time::timeout(hold_for, answer).await {
        Ok(Ok(changed)) => {
            guard.id = None;
            listener_reply(&changed)
        }
        // Timed out, or the hub let go (shutdown): nothing changed.
        Ok(Err(_)) | Err(_) => listener_reply(&[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_header_is_the_gray_rules_label() {
        assert_eq!(TAG.as_str(), gray_match::TAG_LABEL.to_ascii_lowercase());
    }

    #[test]
    fn listening_configs_parse_and_reply_round_trip() {
        let raw = url_encode("a.yaml\u{2}DEFAULT_GROUP\u{2}abc\u{1}b\u{2}G\u{2}\u{2}dev\u{1}");
        let keys = parse_listening_configs(&raw, 10).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].tenant, "");
        assert_eq!(keys[1].key.namespace, "dev");
        assert_eq!(keys[1].md5, "");
        assert_eq!(
            listener_body(&keys),
            "a.yaml%02DEFAULT_GROUP%01b%02G%02dev%01\n"
        );
        assert!(parse_listening_configs("a\u{2}b\u{1}", 10).is_err());
        assert!(parse_listening_configs("", 10).is_err());
        let many: String = (0..3).map(|i| format!("d{i}\u{2}g\u{2}m\u{1}")).collect();
        assert!(parse_listening_configs(&many, 2).is_err());
        // "public" is the public namespace, echoed back as sent.
        let keys = parse_listening_configs("d\u{2}g\u{2}m\u{2}public\u{1}", 10).unwrap();
        assert_eq!(keys[0].key.namespace, "");
        assert_eq!(listener_body(&keys), "d%02g%02public%01\n");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Any form value: refused or parsed, never a panic, never more
        /// keys than the limit, and what parses round-trips.
        #[test]
        fn listening_configs_never_panic(raw in "[\u{1}\u{2}a-zA-Z0-9_.:%+-]{0,200}", max in 1usize..8) {
            if let Ok(keys) = parse_listening_configs(&raw, max) {
                proptest::prop_assert!(keys.len() <= max);
                let body = listener_body(&keys);
                proptest::prop_assert!(body.ends_with('\n'));
            }
        }

        #[test]
        fn arbitrary_unicode_never_panics(raw in "\\PC{0,100}") {
            let _ = parse_listening_configs(&raw, 10_000);
        }
    }
}
