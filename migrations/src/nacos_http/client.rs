//! The HTTP calls (blocking reqwest): login, then `GET`s with the token.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::{config_from, field, history_from, ReadError, PAGE_SIZE};
use crate::source::{Config, ConfigKey, HistoryRow, Namespace};

/// Where to read, and as whom. `Debug` and `Display` never show the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://host:port` or `https://host:port` (a trailing `/` and a `/nacos`
    /// path are dropped).
    pub url: String,
    pub username: Option<String>,
    pub password: Option<String>,
    /// For `https://`: a PEM file of CA certificates trusted in addition to the
    /// system's (`--cacert`).
    pub cacert: Option<PathBuf>,
}

impl Endpoint {
    /// Whether `text` is meant as a server address (`http://` or `https://`).
    pub fn is_http(text: &str) -> bool {
        text.starts_with("http://") || text.starts_with("https://")
    }

    pub fn new(url: &str, username: Option<String>, password: Option<String>) -> Endpoint {
        let url = url.trim_end_matches('/');
        let url = url.strip_suffix("/nacos").unwrap_or(url);
        Endpoint {
            url: url.to_string(),
            username,
            password,
            cacert: None,
        }
    }

    /// The endpoint, trusting the CAs of `cacert` too (for `https://`).
    pub fn with_cacert(mut self, cacert: Option<PathBuf>) -> Endpoint {
        self.cacert = cacert;
        self
    }

    /// Whether the server is read over TLS.
    pub fn is_https(&self) -> bool {
        self.url.starts_with("https://")
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.username {
            Some(user) => write!(f, "{} (as {user})", self.url),
            None => f.write_str(&self.url),
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("cacert", &self.cacert)
            .finish()
    }
}

/// A listed user: name, and the password hash when the list shows one.
pub type Listed = (String, Option<String>);

/// A logged-in (or anonymous) connection to the server.
pub struct Client {
    http: reqwest::blocking::Client,
    url: String,
    token: Option<String>,
}

/// Cuts a body for an error message.
fn excerpt(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return "an empty body".to_string();
    }
    let cut: String = one_line.chars().take(120).collect();
    if cut.len() < one_line.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

/// The innermost cause of a reqwest error (e.g. "Connection refused"), with a hint
/// when it is the server's certificate that was refused.
fn cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    let reason = source.to_string();
    if e.is_timeout() {
        format!("timed out ({reason})")
    } else if reason.contains("certificate") || reason.contains("UnknownIssuer") {
        format!(
            "{reason} (is the server's certificate signed by a CA of --cacert or of the \
             system, and for this host name?)"
        )
    } else {
        reason
    }
}

impl Client {
    /// Connects (over TLS for `https://`: the system's CAs and `--cacert` are
    /// trusted, rustls on ring) and logs in when the endpoint has a username.
    pub fn connect(endpoint: &Endpoint) -> Result<Client, ReadError> {
        let mut builder = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120));
        match (&endpoint.cacert, endpoint.is_https()) {
            (Some(path), true) => {
                let bad = |reason: String| ReadError::CaFile {
                    path: path.clone(),
                    reason,
                };
                let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
                let certs = reqwest::Certificate::from_pem_bundle(&pem)
                    .map_err(|e| bad(format!("not PEM certificates: {e}")))?;
                if certs.is_empty() {
                    return Err(bad(
                        "holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")".into(),
                    ));
                }
                for cert in certs {
                    builder = builder.add_root_certificate(cert);
                }
            }
            (Some(_), false) => {
                return Err(ReadError::CacertWithoutTls {
                    url: endpoint.url.clone(),
                })
            }
            (None, _) => {}
        }
        let http = builder.build().map_err(|e| ReadError::Unreachable {
            url: endpoint.url.clone(),
            reason: cause(&e),
        })?;
        let mut client = Client {
            http,
            url: endpoint.url.clone(),
            token: None,
        };
        if let Some(username) = &endpoint.username {
            client.token = Some(client.login(username, endpoint.password.as_deref())?);
        }
        Ok(client)
    }

    fn unreachable(&self, e: &reqwest::Error) -> ReadError {
        ReadError::Unreachable {
            url: self.url.clone(),
            reason: cause(e),
        }
    }

    fn login(&self, username: &str, password: Option<&str>) -> Result<String, ReadError> {
        let what = "POST /nacos/v1/auth/login";
        let reply = self
            .http
            .post(format!("{}/nacos/v1/auth/login", self.url))
            .form(&[("username", username), ("password", password.unwrap_or(""))])
            .send()
            .map_err(|e| self.unreachable(&e))?;
        let status = reply.status().as_u16();
        let body = reply.text().map_err(|e| self.unreachable(&e))?;
        match status {
            200 => {}
            401 | 403 => {
                return Err(ReadError::LoginRefused {
                    url: self.url.clone(),
                    username: username.to_string(),
                    status,
                })
            }
            _ => {
                return Err(ReadError::NotNacos {
                    url: self.url.clone(),
                    what: what.to_string(),
                    answer: format!("HTTP {status}: {}", excerpt(&body)),
                })
            }
        }
        let v: Value = serde_json::from_str(&body).map_err(|_| ReadError::NotNacos {
            url: self.url.clone(),
            what: what.to_string(),
            answer: excerpt(&body),
        })?;
        // Java Nacos and Tacos: `accessToken`; Nacos 2.x v2-style wrappers: data.accessToken.
        field(&v, "accessToken")
            .or_else(|| field(&v["data"], "accessToken"))
            .ok_or_else(|| ReadError::NotNacos {
                url: self.url.clone(),
                what: what.to_string(),
                answer: "no accessToken".to_string(),
            })
    }

    /// `GET path?query` (with the token): `Ok(None)` on 404, the JSON otherwise.
    fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Option<Value>, ReadError> {
        let what = || {
            let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("GET {path}?{}", q.join("&"))
        };
        let mut request = self.http.get(format!("{}{path}", self.url)).query(query);
        if let Some(token) = &self.token {
            request = request.query(&[("accessToken", token)]);
        }
        let reply = request.send().map_err(|e| self.unreachable(&e))?;
        let status = reply.status().as_u16();
        let body = reply.text().map_err(|e| self.unreachable(&e))?;
        match status {
            200 => {}
            404 => return Ok(None),
            401 | 403 => {
                return Err(ReadError::Forbidden {
                    url: self.url.clone(),
                    what: what(),
                    status,
                })
            }
            _ => {
                return Err(ReadError::Status {
                    what: what(),
                    status,
                    body: excerpt(&body),
                })
            }
        }
        serde_json::from_str(&body)
            .map(Some)
            .map_err(|e| ReadError::BadAnswer {
                what: what(),
                reason: format!("not JSON ({e}): {}", excerpt(&body)),
            })
    }

    /// The registered namespaces, public (`""`) first as the server lists it.
    /// Nacos 3 moved the v1 list to its console port; its server port lists
    /// them at `/nacos/v3/admin/core/namespace/list` (admins only), in the
    /// same shape.
    pub fn namespaces(&self) -> Result<Vec<Namespace>, ReadError> {
        const V1: &str = "/nacos/v1/console/namespaces";
        const V3: &str = "/nacos/v3/admin/core/namespace/list";
        let mut what = format!("GET {V1}");
        let mut answer = self.get(V1, &[]);
        if matches!(answer, Ok(None)) {
            what = format!("GET {V1} (404), then GET {V3}");
            answer = self.get(V3, &[]);
        }
        let not_nacos = |answer: String| ReadError::NotNacos {
            url: self.url.clone(),
            what: what.clone(),
            answer,
        };
        let v = match answer {
            Ok(Some(v)) => v,
            Ok(None) => return Err(not_nacos("HTTP 404".to_string())),
            Err(ReadError::BadAnswer { reason, .. }) => return Err(not_nacos(reason)),
            Err(ReadError::Status { status, body, .. }) => {
                return Err(not_nacos(format!("HTTP {status}: {body}")))
            }
            Err(e) => return Err(e),
        };
        let Some(items) = v["data"].as_array() else {
            return Err(not_nacos(format!(
                "no data list: {}",
                excerpt(&v.to_string())
            )));
        };
        let mut out = Vec::new();
        for item in items {
            let Some(id) = field(item, "namespace") else {
                return Err(not_nacos(format!("a namespace without id: {item}")));
            };
            let public = id.is_empty() || (id == "public" && item["type"].as_i64() == Some(0));
            out.push(Namespace {
                id: if public { String::new() } else { id },
                name: field(item, "namespaceShowName").unwrap_or_default(),
                desc: field(item, "namespaceDesc").unwrap_or_default(),
                create_time_ms: None,
            });
        }
        Ok(out)
    }

    /// Pages through `path` (`pageNo` from 1), returning every `pageItems` entry.
    fn pages(&self, path: &str, query: &[(&str, &str)]) -> Result<Vec<Value>, ReadError> {
        let size = PAGE_SIZE.to_string();
        let mut out = Vec::new();
        let mut page_no: u64 = 1;
        loop {
            let no = page_no.to_string();
            let mut q = query.to_vec();
            q.push(("pageNo", &no));
            q.push(("pageSize", &size));
            let Some(v) = self.get(path, &q)? else {
                return Err(ReadError::Status {
                    what: format!("GET {path}"),
                    status: 404,
                    body: "not found".to_string(),
                });
            };
            let Some(items) = v["pageItems"].as_array() else {
                return Err(ReadError::BadAnswer {
                    what: format!("GET {path} page {page_no}"),
                    reason: format!("no pageItems: {}", excerpt(&v.to_string())),
                });
            };
            out.extend(items.iter().cloned());
            let available = v["pagesAvailable"].as_u64().unwrap_or(0);
            if items.is_empty() || page_no >= available {
                return Ok(out);
            }
            page_no += 1;
        }
    }

    /// The (group, data id) of every config in `tenant`.
    pub fn config_keys(&self, tenant: &str) -> Result<Vec<(String, String)>, ReadError> {
        let items = self.pages(
            "/nacos/v1/cs/configs",
            &[
                ("search", "blur"),
                ("dataId", ""),
                ("group", ""),
                ("tenant", tenant),
            ],
        )?;
        let mut keys = BTreeSet::new();
        for item in &items {
            match (field(item, "group"), field(item, "dataId")) {
                (Some(group), Some(data_id)) => {
                    keys.insert((group, data_id));
                }
                _ => {
                    return Err(ReadError::BadAnswer {
                        what: format!("the configs of namespace {tenant:?}"),
                        reason: format!("an item without group or dataId: {item}"),
                    })
                }
            }
        }
        Ok(keys.into_iter().collect())
    }

    fn key_query(key: &ConfigKey) -> [(&'static str, &str); 3] {
        [
            ("dataId", &key.data_id),
            ("group", &key.group),
            ("tenant", &key.tenant),
        ]
    }

    /// One config with its metadata (`show=all`); `None` if it is gone.
    pub fn config(&self, key: &ConfigKey) -> Result<Option<Config>, ReadError> {
        let mut query = Self::key_query(key).to_vec();
        query.push(("show", "all"));
        let what = format!("config {key}");
        match self.get("/nacos/v1/cs/configs", &query)? {
            Some(v) => config_from(key, &v, &what).map(Some),
            None => Ok(None),
        }
    }

    /// A config's history, oldest first, and how many gray rows were left out.
    pub fn history(&self, key: &ConfigKey) -> Result<(Vec<HistoryRow>, usize), ReadError> {
        let mut query = Self::key_query(key).to_vec();
        query.push(("search", "accurate"));
        let items = self.pages("/nacos/v1/cs/history", &query)?;
        let mut rows = Vec::with_capacity(items.len());
        let mut gray = 0;
        for item in &items {
            if field(item, "publishType").as_deref() == Some("gray")
                || super::nonempty(item, "grayName").is_some()
            {
                gray += 1;
                continue;
            }
            let id = field(item, "id").unwrap_or_default();
            let what = format!("history row {id} of {key}");
            let (detail, content) = match field(item, "content") {
                Some(content) => (item.clone(), content),
                None => {
                    let mut q = Self::key_query(key).to_vec();
                    q.push(("nid", &id));
                    let detail = self.get("/nacos/v1/cs/history", &q)?.ok_or_else(|| {
                        ReadError::BadAnswer {
                            what: what.clone(),
                            reason: "listed, but its nid answers 404".to_string(),
                        }
                    })?;
                    let content =
                        field(&detail, "content").ok_or_else(|| ReadError::BadAnswer {
                            what: what.clone(),
                            reason: "no content".to_string(),
                        })?;
                    (detail, content)
                }
            };
            rows.push(history_from(&detail, content, &what)?);
        }
        rows.sort_by_key(|r| r.id);
        Ok((rows, gray))
    }

    /// Every user with the hash the list shows (`None` if none); `None` when anonymous.
    pub fn users(&self) -> Result<Option<Vec<Listed>>, ReadError> {
        if self.token.is_none() {
            return Ok(None);
        }
        // Java Nacos maps its user and role lists by `search=accurate|blur`:
        // without one it answers 500.
        let items = self.pages("/nacos/v1/auth/users", &[("search", "accurate")])?;
        let mut out = Vec::new();
        for item in &items {
            let Some(name) = field(item, "username") else {
                continue;
            };
            out.push((name, field(item, "password").filter(|p| !p.is_empty())));
        }
        Ok(Some(out))
    }

    /// The users bound to `ROLE_ADMIN`.
    pub fn admins(&self) -> Result<BTreeSet<String>, ReadError> {
        let items = self.pages(
            "/nacos/v1/auth/roles",
            &[("search", "accurate"), ("role", "ROLE_ADMIN")],
        )?;
        Ok(items
            .iter()
            .filter(|i| field(i, "role").as_deref() == Some("ROLE_ADMIN"))
            .filter_map(|i| field(i, "username"))
            .collect())
    }
}
