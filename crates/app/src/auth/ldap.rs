//! Logins checked against an LDAP directory (`--ldap-url`).
//!
//! A login is one short conversation with the directory, on a connection of
//! its own (no pool: logins are rare next to token checks, and a fresh
//! connection never carries a half-broken state across a directory restart):
//!
//! 1. connect (`ldap://`, `ldap://` + StartTLS, or `ldaps://`), bounded by
//!    `--ldap-timeout-ms`, as is every operation after it;
//! 2. bind as the service account (`--ldap-bind-dn`), or stay anonymous;
//! 3. search `--ldap-user-base` for `--ldap-user-filter` with `{username}`
//!    replaced by the escaped name (RFC 4515): exactly one entry is the user;
//!    none is "no such user". A disabled account is one the filter does not
//!    match (e.g. `(!(employeeType=disabled))`, or `pwdAccountLockedTime`
//!    with OpenLDAP's ppolicy), so it is refused like an unknown name;
//! 4. its groups: the entry's `memberOf` values, and with `--ldap-group-base`
//!    the DNs of the groups `--ldap-group-filter` finds (`{dn}` = the user's
//!    DN), so a directory without the memberOf overlay works too;
//! 5. bind as the user's DN with the password: success is the proof. An
//!    empty password is refused before it (an LDAP "unauthenticated bind"
//!    with an empty password succeeds on many servers).
//!
//! Groups map to roles (`--ldap-group-role GROUP_DN=ROLE`, DNs compared
//! case-insensitively, spaces around commas ignored); `ROLE_ADMIN` makes the
//! user an admin; a user in no mapped group gets `--ldap-default-role`.
//!
//! Why the identity rides in the token and is not replicated: a directory
//! user is not written into the replicated state (Nacos writes a local
//! `LDAP_name` user on first login). The token signed with the cluster key
//! carries the name, the mapped roles and the admin flag, and every node
//! resolves the roles' namespace permissions from the replicated roles table
//! when it checks the token, so a token from one node works on every node,
//! a change to a role's permissions takes effect at once, and a login needs
//! no Raft write (it works without a quorum, and a password-guessing attack
//! writes nothing to the log). The price: group membership and disabling in
//! the directory take effect at the next login, at the latest when the token
//! expires (`--token-ttl`).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ldap3::{ldap_escape, Ldap, LdapConnAsync, LdapConnSettings, LdapError, Scope, SearchEntry};
use tacos_state::ADMIN_ROLE;

/// LDAP result code 49: invalid credentials.
const INVALID_CREDENTIALS: u32 = 49;

/// Which account a login uses when both a local user and a directory user
/// have the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precedence {
    /// The local user (the directory is not asked for that name). The default,
    /// as in Nacos, which tries its own users first.
    Local,
    /// The directory; the local user is used only when the directory has no
    /// such user or cannot be reached.
    Directory,
}

impl std::str::FromStr for Precedence {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "local" => Ok(Precedence::Local),
            "directory" => Ok(Precedence::Directory),
            other => Err(format!("{other:?} (local or directory)")),
        }
    }
}

/// Settings of [`Directory`] (validated by [`Directory::new`]).
#[derive(Clone)]
pub struct DirectorySettings {
    /// `ldap://host:port` or `ldaps://host:port`.
    pub url: String,
    /// Upgrade an `ldap://` connection with StartTLS.
    pub starttls: bool,
    /// PEM file of the CA(s) the directory's certificate must chain to;
    /// default: the system's roots.
    pub ca_file: Option<std::path::PathBuf>,
    pub bind_dn: Option<String>,
    pub bind_password: Option<String>,
    pub user_base: String,
    /// Contains `{username}`.
    pub user_filter: String,
    pub group_base: Option<String>,
    /// Contains `{dn}`.
    pub group_filter: String,
    /// `GROUP_DN=ROLE` pairs.
    pub group_roles: Vec<String>,
    pub default_role: Option<String>,
    pub precedence: Precedence,
    pub timeout: Duration,
}

impl std::fmt::Debug for DirectorySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectorySettings")
            .field("url", &self.url)
            .field("starttls", &self.starttls)
            .field("bind_dn", &self.bind_dn)
            .field("user_base", &self.user_base)
            .field("user_filter", &self.user_filter)
            .field("group_base", &self.group_base)
            .field("precedence", &self.precedence)
            .finish_non_exhaustive()
    }
}

/// A directory user whose password checked out, with its mapped roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryUser {
    pub username: String,
    pub dn: String,
    /// Tacos roles (never [`ADMIN_ROLE`]: that is `admin`).
    pub roles: Vec<String>,
    pub admin: bool,
}

/// What the directory said about a login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Valid(DirectoryUser),
    /// The filter matches no entry (unknown, or disabled).
    NoSuchUser,
    WrongPassword,
}

/// The directory could not answer: unreachable, timed out, TLS failed, the
/// service account's bind or a search failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the LDAP directory cannot be reached or refused the service account ({0}); local users can still log in")]
pub struct Unavailable(pub String);

/// A setting of the directory that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid setting --{name}: {reason}")]
pub struct BadDirectorySetting {
    pub name: &'static str,
    pub reason: String,
}

/// The directory client: settings checked once, TLS set up once.
#[derive(Debug)]
pub struct Directory {
    settings: DirectorySettings,
    /// (normalized group DN, role).
    group_roles: Vec<(String, String)>,
    tls: Option<Arc<rustls::ClientConfig>>,
}

/// A DN in the form groups are compared in: lowercase, no spaces around
/// the separators.
pub fn normalize_dn(dn: &str) -> String {
    dn.split(',')
        .map(|rdn| {
            rdn.split('=')
                .map(|part| part.trim())
                .collect::<Vec<_>>()
                .join("=")
        })
        .collect::<Vec<_>>()
        .join(",")
        .to_lowercase()
}

/// Parses `GROUP_DN=ROLE` (the role is after the last `=`: DNs have `=`s).
pub fn parse_group_role(pair: &str) -> Result<(String, String), String> {
    let (dn, role) = pair
        .rsplit_once('=')
        .filter(|(dn, role)| dn.contains('=') && !role.trim().is_empty())
        .ok_or_else(|| format!("{pair:?} is not GROUP_DN=ROLE"))?;
    let role = role.trim();
    if role != ADMIN_ROLE {
        super::check_role(role).map_err(|e| e.to_string())?;
    }
    Ok((normalize_dn(dn), role.to_string()))
}

fn bad(name: &'static str, reason: impl Into<String>) -> BadDirectorySetting {
    BadDirectorySetting {
        name,
        reason: reason.into(),
    }
}

/// The rustls client config for TLS to the directory: it trusts the CAs of
/// `ca_file` (PEM), or else the system's roots. Built with ring explicitly,
/// so it never depends on which crypto provider is the process default.
fn tls_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, BadDirectorySetting> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let shown = path.display();
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| bad("ldap-ca-file", format!("{shown}: {e}")))?;
            if certs.is_empty() {
                return Err(bad(
                    "ldap-ca-file",
                    format!("{shown}: no certificate in it"),
                ));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| bad("ldap-ca-file", format!("{shown}: {e}")))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(bad(
                    "ldap-ca-file",
                    "no system CA certificates found; name the directory's CA with --ldap-ca-file",
                ));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("ldap-ca-file", e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Whether an LDAP error is the directory's own answer (a result code) as
/// opposed to a failure to talk to it.
fn result_code(error: &LdapError) -> Option<u32> {
    match error {
        LdapError::LdapResult { result } => Some(result.rc),
        _ => None,
    }
}

impl Directory {
    pub fn new(settings: DirectorySettings) -> Result<Self, BadDirectorySetting> {
        let url = settings.url.as_str();
        let ldaps = url.starts_with("ldaps://");
        if !(ldaps || url.starts_with("ldap://")) {
            return Err(bad(
                "ldap-url",
                format!("{url:?}: ldap://HOST:PORT or ldaps://HOST:PORT"),
            ));
        }
        if ldaps && settings.starttls {
            return Err(bad(
                "ldap-starttls",
                "not with an ldaps:// URL (already TLS)",
            ));
        }
        if settings.user_base.trim().is_empty() {
            return Err(bad("ldap-user-base", "required with --ldap-url"));
        }
        if !settings.user_filter.contains("{username}") {
            return Err(bad("ldap-user-filter", "must contain {username}"));
        }
        if settings.group_base.is_some() && !settings.group_filter.contains("{dn}") {
            return Err(bad("ldap-group-filter", "must contain {dn}"));
        }
        if settings.bind_dn.is_some() != settings.bind_password.is_some() {
            return Err(bad(
                "ldap-bind-password",
                "--ldap-bind-dn and --ldap-bind-password go together",
            ));
        }
        let group_roles = settings
            .group_roles
            .iter()
            .map(|pair| parse_group_role(pair))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|reason| bad("ldap-group-role", reason))?;
        if let Some(role) = &settings.default_role {
            if role != ADMIN_ROLE {
                super::check_role(role).map_err(|e| bad("ldap-default-role", e.to_string()))?;
            }
        }
        let tls = if ldaps || settings.starttls {
            Some(tls_config(settings.ca_file.as_deref())?)
        } else if settings.ca_file.is_some() {
            return Err(bad(
                "ldap-ca-file",
                "given, but the connection is not TLS (use ldaps:// or --ldap-starttls)",
            ));
        } else {
            None
        };
        Ok(Directory {
            settings,
            group_roles,
            tls,
        })
    }

    pub fn precedence(&self) -> Precedence {
        self.settings.precedence
    }

    /// The url, for logs.
    pub fn url(&self) -> &str {
        &self.settings.url
    }

    /// Checks `username`'s `password` against the directory.
    pub async fn authenticate(
        &self,
        username: &str,
        password: &str,
    ) -> Result<Verdict, Unavailable> {
        if password.is_empty() {
            return Ok(Verdict::WrongPassword);
        }
        let timeout = self.settings.timeout;
        let mut conn = LdapConnSettings::new()
            .set_conn_timeout(timeout)
            .set_starttls(self.settings.starttls);
        if let Some(tls) = &self.tls {
            conn = conn.set_config(tls.clone());
        }
        // The connect timeout bounds the TCP connect only; this bounds the
        // StartTLS or TLS handshake too.
        let url = &self.settings.url;
        let (driver, mut ldap) =
            tokio::time::timeout(timeout, LdapConnAsync::with_settings(conn, url))
                .await
                .map_err(|_| Unavailable(format!("{url}: no answer within {timeout:?}")))?
                .map_err(|e| Unavailable(format!("{url}: {e}")))?;
        ldap3::drive!(driver);
        let verdict = self.converse(&mut ldap, username, password).await;
        let _ = ldap.with_timeout(timeout).unbind().await;
        verdict
    }

    async fn converse(
        &self,
        ldap: &mut Ldap,
        username: &str,
        password: &str,
    ) -> Result<Verdict, Unavailable> {
        let timeout = self.settings.timeout;
        let failed = |what: &str, e: LdapError| Unavailable(format!("{what}: {e}"));
        if let (Some(dn), Some(pw)) = (&self.settings.bind_dn, &self.settings.bind_password) {
            ldap.with_timeout(timeout)
                .simple_bind(dn, pw)
                .await
                .and_then(|r| r.success())
                .map_err(|e| failed(&format!("bind as {dn}"), e))?;
        }
        let filter = self
            .settings
            .user_filter
            .replace("{username}", &ldap_escape(username));
        let (entries, _) = ldap
            .with_timeout(timeout)
            .search(
                &self.settings.user_base,
                Scope::Subtree,
                &filter,
                vec!["memberOf"],
            )
            .await
            .and_then(|r| r.success())
            .map_err(|e| failed("user search", e))?;
        let mut entries = entries
            .into_iter()
            .map(|raw| {
                // ldap3 panics on an entry it cannot parse: a broken
                // directory answer must not take a request thread down.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    SearchEntry::construct(raw)
                }))
                .map_err(|_| {
                    Unavailable("the directory sent an entry that cannot be parsed".into())
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let entry = match entries.len() {
            0 => return Ok(Verdict::NoSuchUser),
            1 => entries.remove(0),
            n => {
                tracing::warn!(
                    user = ?username,
                    "--ldap-user-filter matches {n} directory entries for one name; refusing the login"
                );
                return Ok(Verdict::NoSuchUser);
            }
        };
        let mut groups: BTreeSet<String> = entry
            .attrs
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("memberOf"))
            .flat_map(|(_, values)| values.iter().map(|dn| normalize_dn(dn)))
            .collect();
        if let Some(base) = &self.settings.group_base {
            let filter = self
                .settings
                .group_filter
                .replace("{dn}", &ldap_escape(&entry.dn));
            let (found, _) = ldap
                .with_timeout(timeout)
                .search(base, Scope::Subtree, &filter, vec!["1.1"])
                .await
                .and_then(|r| r.success())
                .map_err(|e| failed("group search", e))?;
            for raw in found {
                if let Ok(group) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    SearchEntry::construct(raw)
                })) {
                    groups.insert(normalize_dn(&group.dn));
                }
            }
        }
        match ldap
            .with_timeout(timeout)
            .simple_bind(&entry.dn, password)
            .await
            .and_then(|r| r.success())
        {
            Ok(_) => {}
            Err(e) if result_code(&e) == Some(INVALID_CREDENTIALS) => {
                return Ok(Verdict::WrongPassword)
            }
            // Another answer of the directory (e.g. 53 "unwilling": an
            // account ppolicy locked): a refusal of this login.
            Err(e) if result_code(&e).is_some() => {
                tracing::warn!(user = ?username, "the directory refused the user's bind: {e}");
                return Ok(Verdict::WrongPassword);
            }
            Err(e) => return Err(failed("user bind", e)),
        }
        Ok(Verdict::Valid(self.map_groups(username, entry.dn, &groups)))
    }

    /// The roles the groups map to (the default role when none does).
    fn map_groups(&self, username: &str, dn: String, groups: &BTreeSet<String>) -> DirectoryUser {
        let mut roles: BTreeSet<String> = self
            .group_roles
            .iter()
            .filter(|(group, _)| groups.contains(group))
            .map(|(_, role)| role.clone())
            .collect();
        if roles.is_empty() {
            roles.extend(self.settings.default_role.clone());
        }
        let admin = roles.remove(ADMIN_ROLE);
        DirectoryUser {
            username: username.to_string(),
            dn,
            roles: roles.into_iter().collect(),
            admin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> DirectorySettings {
        DirectorySettings {
            url: "ldap://127.0.0.1:1389".into(),
            starttls: false,
            ca_file: None,
            bind_dn: None,
            bind_password: None,
            user_base: "ou=people,dc=x".into(),
            user_filter: "(uid={username})".into(),
            group_base: None,
            group_filter: "(member={dn})".into(),
            group_roles: vec![
                "cn=Devs, ou=groups,dc=x=devs".into(),
                "cn=ops,ou=groups,dc=x=ROLE_ADMIN".into(),
            ],
            default_role: Some("readers".into()),
            precedence: Precedence::Local,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn group_roles_parse_and_map() {
        assert_eq!(
            parse_group_role("cn=Devs, OU=groups,dc=x=devs").unwrap(),
            ("cn=devs,ou=groups,dc=x".into(), "devs".into())
        );
        for bad in ["devs", "cn=x", "cn=x=", "cn=x=bad role"] {
            assert!(parse_group_role(bad).is_err(), "{bad}");
        }
        let directory = Directory::new(settings()).unwrap();
        let groups = |list: &[&str]| list.iter().map(|g| normalize_dn(g)).collect();
        let user = directory.map_groups("a", "uid=a".into(), &groups(&["CN=devs,ou=groups,dc=x"]));
        assert_eq!((user.roles, user.admin), (vec!["devs".to_string()], false));
        let user = directory.map_groups("a", "uid=a".into(), &groups(&["cn=ops,ou=groups,dc=x"]));
        assert_eq!((user.roles, user.admin), (vec![], true));
        let user = directory.map_groups("a", "uid=a".into(), &groups(&["cn=other"]));
        assert_eq!(
            (user.roles, user.admin),
            (vec!["readers".to_string()], false)
        );
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let with = |edit: fn(&mut DirectorySettings)| {
            let mut s = settings();
            edit(&mut s);
            Directory::new(s).err().map(|e| e.name)
        };
        assert_eq!(with(|_| {}), None);
        assert_eq!(with(|s| s.url = "http://x".into()), Some("ldap-url"));
        assert_eq!(
            with(|s| s.user_filter = "(uid=x)".into()),
            Some("ldap-user-filter")
        );
        assert_eq!(with(|s| s.user_base = "".into()), Some("ldap-user-base"));
        assert_eq!(
            with(|s| s.bind_dn = Some("cn=a".into())),
            Some("ldap-bind-password")
        );
        assert_eq!(
            with(|s| {
                s.url = "ldaps://x:636".into();
                s.starttls = true
            }),
            Some("ldap-starttls")
        );
        assert_eq!(
            with(|s| s.group_roles = vec!["x".into()]),
            Some("ldap-group-role")
        );
        assert_eq!(
            with(|s| s.ca_file = Some("/nonexistent.pem".into())),
            Some("ldap-ca-file")
        );
        assert_eq!(
            with(|s| {
                s.starttls = true;
                s.ca_file = Some("/nonexistent.pem".into())
            }),
            Some("ldap-ca-file")
        );
    }

    #[tokio::test]
    async fn an_unreachable_directory_is_unavailable_and_empty_passwords_never_bind() {
        // A port nobody listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut s = settings();
        s.url = format!("ldap://127.0.0.1:{port}");
        let directory = Directory::new(s).unwrap();
        let error = directory.authenticate("alice", "pw").await.unwrap_err();
        assert!(error.to_string().contains("cannot be reached"), "{error}");
        assert_eq!(
            directory.authenticate("alice", "").await.unwrap(),
            Verdict::WrongPassword
        );
    }

    #[tokio::test]
    async fn a_directory_that_accepts_and_never_answers_times_out() {
        // Accepts connections (the kernel's backlog) and says nothing.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut s = settings();
        s.url = format!("ldap://127.0.0.1:{}", silent.local_addr().unwrap().port());
        s.timeout = Duration::from_millis(300);
        let directory = Directory::new(s).unwrap();
        let error = directory.authenticate("alice", "pw").await.unwrap_err();
        assert!(error.to_string().contains("cannot be reached"), "{error}");
    }
}
