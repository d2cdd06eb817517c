//! What the listener views of every generation share: the watch hub's
//! answers for this node (who listens to one config, what one client IP
//! listens to), Nacos' group keys, and asking the other members the same
//! route (`aggregation=false`) to cover the whole cluster, as Nacos does.
//!
//! | route | what |
//! |---|---|
//! | `GET /nacos/v1/cs/configs/listener` | who listens to one config (`GroupkeyListenserStatus` by client IP) |
//! | `GET /nacos/v1/cs/listener` | what one client IP listens to (`GroupkeyListenserStatus` by group key) |
//! | `GET /nacos/v3/admin/cs/config/listener` | who listens to one config (`ConfigListenerInfo`, `queryType: config`) |
//! | `GET /nacos/v3/admin/cs/listener` | what one client IP listens to (`ConfigListenerInfo`, `queryType: ip`) |

use std::collections::BTreeMap;
use std::time::Duration;

use actix::MailboxError;
use actix_web::http::header::AUTHORIZATION;
use actix_web::HttpRequest;

use super::params::header;
use crate::api::app_state::AppState;
use tacos_app::auth::Principal;
use tacos_app::read::Reader;
use tacos_app::watch::{peer_ip, ListenedBy, ListenersOf};
use tacos_state::ConfigKey;

/// How long the hub and each other member may take.
pub const LISTENERS_TIMEOUT: Duration = Duration::from_secs(2);

/// Nacos' group key (`GroupKey2.getKey`): `dataId+group[+tenant]`, each
/// part with `+` as `%2B` and `%` as `%25`; the public namespace has no
/// tenant part.
pub fn group_key(key: &ConfigKey) -> String {
    let escape = |s: &str| s.replace('%', "%25").replace('+', "%2B");
    let mut out = format!("{}+{}", escape(&key.data_id), escape(&key.group));
    if !key.namespace.is_empty() {
        out.push('+');
        out.push_str(&escape(&key.namespace));
    }
    out
}

/// Who listens to `key` on this node: client IP → the md5 it holds.
pub async fn listening_to(
    app: &AppState,
    key: &ConfigKey,
) -> Result<BTreeMap<String, String>, MailboxError> {
    let found = app
        .hub
        .send(ListenersOf(key.clone()))
        .timeout(LISTENERS_TIMEOUT)
        .await?;
    Ok(found
        .into_iter()
        .map(|l| (peer_ip(&l.client).to_string(), l.md5))
        .collect())
}

/// Which of a client's keys a by-IP view shows, as Nacos'
/// `ListenerController` picks them: every key with `all`, else the public
/// namespace's and those of `namespace` (when given).
#[derive(Debug, Clone, Copy)]
pub struct KeysShown<'a> {
    pub namespace: &'a str,
    pub all: bool,
}

impl KeysShown<'_> {
    fn shows(&self, key: &ConfigKey) -> bool {
        self.all
            || key.namespace.is_empty()
            || (!self.namespace.is_empty() && key.namespace == self.namespace)
    }
}

/// What the client at `ip` listens to on this node, as group key → md5:
/// the keys `shown` picks, in namespaces `principal` may read.
pub async fn listened_by(
    app: &AppState,
    principal: &Principal,
    ip: &str,
    shown: KeysShown<'_>,
) -> Result<BTreeMap<String, String>, MailboxError> {
    let found = app
        .hub
        .send(ListenedBy(ip.to_string()))
        .timeout(LISTENERS_TIMEOUT)
        .await?;
    let reader = Reader::new(principal);
    Ok(found
        .into_iter()
        .filter(|l| shown.shows(&l.key))
        .filter(|l| reader.shows(&l.key))
        .map(|l| (group_key(&l.key), l.md5))
        .collect())
}

/// Whether a request asks for the whole cluster: Spring's boolean of
/// `aggregation`, `true` when absent. `Err` holds a value that is no
/// boolean.
pub fn aggregation(params: &super::params::Params) -> Result<bool, String> {
    boolean(params.get("aggregation"), true)
}

/// A Spring boolean request parameter (`true/on/yes/1`, `false/off/no/0`,
/// any case); absent or blank is `default`. `Err` holds the value.
pub fn boolean(raw: Option<&str>, default: bool) -> Result<bool, String> {
    match raw.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") => Ok(default),
        Some("true" | "on" | "yes" | "1") => Ok(true),
        Some("false" | "off" | "no" | "0") => Ok(false),
        Some(_) => Err(raw.unwrap_or_default().to_string()),
    }
}

/// What every other member answers to this same request with
/// `aggregation=false` (the caller's credentials forwarded: tokens are
/// valid on every node). A member that does not answer within
/// [`LISTENERS_TIMEOUT`], or answers an error, is left out (as in Nacos),
/// with a warning in the log.
pub async fn other_members<T: serde::de::DeserializeOwned>(
    app: &AppState,
    req: &HttpRequest,
) -> Vec<T> {
    let members: Vec<String> = app.other_members().into_iter().map(|(_, a)| a).collect();
    if members.is_empty() {
        return Vec::new();
    }
    let Ok(client) = app.peer_http.client(LISTENERS_TIMEOUT) else {
        return Vec::new();
    };
    let mut query: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    query.retain(|(k, _)| k != "aggregation");
    query.push(("aggregation".into(), "false".into()));
    let query = serde_urlencoded::to_string(&query).unwrap_or_default();
    let path = req.path();
    let forwarded: Vec<(&str, String)> = [AUTHORIZATION.as_str(), "accessToken"]
        .into_iter()
        .filter_map(|name| header(req, name).map(|v| (name, v)))
        .collect();
    let asks = members.iter().map(|addr| {
        let mut request = client.get(addr, &format!("{path}?{query}"));
        for (name, value) in &forwarded {
            request = request.header(*name, value);
        }
        async move {
            let answer = request.send().await.and_then(|r| r.error_for_status());
            match answer {
                Ok(response) => {
                    let body = response.bytes().await.ok()?;
                    serde_json::from_slice::<T>(&body)
                        .inspect_err(|e| tracing::warn!("listeners of {addr}: {e}"))
                        .ok()
                }
                Err(e) => {
                    tracing::warn!("listeners of {addr}: {e}");
                    None
                }
            }
        }
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_keys_as_nacos_writes_them() {
        assert_eq!(
            group_key(&ConfigKey::new("", "DEFAULT_GROUP", "a.yaml")),
            "a.yaml+DEFAULT_GROUP"
        );
        assert_eq!(group_key(&ConfigKey::new("dev", "G", "a")), "a+G+dev");
        assert_eq!(group_key(&ConfigKey::new("", "G+1", "a%b")), "a%25b+G%2B1");
    }

    #[test]
    fn keys_shown_follow_nacos_listener_controller() {
        let public = ConfigKey::new("", "G", "a");
        let dev = ConfigKey::new("dev", "G", "a");
        let shown = |namespace, all| KeysShown { namespace, all };
        assert!(shown("", false).shows(&public) && !shown("", false).shows(&dev));
        assert!(shown("dev", false).shows(&dev) && shown("dev", false).shows(&public));
        assert!(!shown("prod", false).shows(&dev));
        assert!(shown("", true).shows(&dev));
    }

    #[test]
    fn spring_booleans() {
        assert_eq!(boolean(None, true), Ok(true));
        assert_eq!(boolean(Some(" "), false), Ok(false));
        assert_eq!(boolean(Some("TRUE"), false), Ok(true));
        assert_eq!(boolean(Some("off"), true), Ok(false));
        assert_eq!(boolean(Some("maybe"), true), Err("maybe".into()));
    }
}
