//! Users, logins, tokens and permissions.
//!
//! * Users live in the replicated state ([`tacos_state::User`]): a password
//!   hash (argon2id, [`password`]), an admin flag, and permissions: resource
//!   patterns `namespace:group:dataId` with `r`, `w` or `rw`, their own and
//!   their roles' ([`roles`]). [`Principal::can`] is the one rule every
//!   surface asks.
//! * A user a migration carried over may hold a BCrypt hash: a login verifies
//!   it and replaces it with argon2id ([`password`]; `Auth::rehash`).
//! * A login checks the password and returns a token ([`token`]) signed with
//!   the cluster's key, which the first leader draws at cluster init and
//!   replicates ([`bootstrap`]), so a token from one node works on all.
//! * A request proves who it is with a token (`Authorization: Bearer`, an
//!   `accessToken` header, parameter or gRPC metadata header) or with a
//!   username and password on the request itself (`username`/`password`
//!   parameters, as the npm client sends them, or HTTP Basic); a verified
//!   pair is cached briefly so each request does not pay a hash.
//! * With `--ldap-url`, a login may instead be checked against an LDAP
//!   directory ([`ldap`]); which account wins for a name both have is
//!   a setting. A directory user's identity and mapped roles ride in its
//!   token, so it too works on every node.
//! * Failed logins lock the account for a while and are rate-limited per IP
//!   ([`limiter`]); new local passwords must meet the password policy
//!   ([`password::PasswordPolicy`]); hashing runs on a bounded pool; secrets
//!   are compared in constant time (argon2's verifier, the JWT signature
//!   check, the cache's digest compare).
//!
//! Which route needs what is declared where the route is registered
//! (`api::guard`); this module answers "who is this" and "may they".

pub mod bootstrap;
pub mod ldap;
pub mod limiter;
pub mod password;
pub mod roles;
pub mod token;
mod users;

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::engine::Engine;
use crate::service::{Caller, ServiceError, Writer};
use tacos_core::validate::InvalidInput;
use tacos_core::{canonical_namespace, ConfigKey};
use tacos_core::{ApplyError, Op};
use tacos_state::{Access, Resource, User};

use ldap::{Directory, DirectoryUser, Precedence, Verdict};
use limiter::{Lockout, LoginLimiter, Refused};
use password::{HashForm, Hasher, PasswordPolicy};

/// Why a request is not allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error(
        "login required: send an access token (POST /nacos/v1/auth/login) or username and password"
    )]
    NoCredentials,
    #[error("unknown user or wrong password")]
    WrongCredentials,
    #[error("token invalid!")]
    TokenInvalid,
    #[error("token expired!")]
    TokenExpired,
    #[error("user is disabled")]
    Disabled,
    #[error("authorization failed: {0}")]
    Forbidden(String),
    #[error("too many failed logins; try again in {} s", .0.as_secs().max(1))]
    RateLimited(Duration),
    #[error(
        "account locked after {failures} failed logins, until {until} (try again in {} s)",
        .wait.as_secs().max(1)
    )]
    Locked {
        /// RFC 3339, UTC.
        until: String,
        wait: Duration,
        failures: u32,
    },
    #[error("{0}")]
    DirectoryUnavailable(String),
    #[error("auth is not initialized yet (the cluster has no leader yet?)")]
    NotInitialized,
    #[error("{0}")]
    Internal(String),
}

/// Longest username.
pub const MAX_USERNAME_LEN: usize = 64;

/// Usernames: 1 to 64 of `a-zA-Z0-9_.@-`.
pub fn check_username(name: &str) -> Result<(), InvalidInput> {
    check_name("username", name)
}

/// Role names: like usernames.
pub fn check_role(name: &str) -> Result<(), InvalidInput> {
    check_name("role", name)
}

fn check_name(what: &'static str, name: &str) -> Result<(), InvalidInput> {
    let ok = !name.is_empty()
        && name.len() <= MAX_USERNAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '@' | '-'));
    if ok {
        Ok(())
    } else {
        Err(InvalidInput::Other(
            what,
            format!("{name:?} (1 to {MAX_USERNAME_LEN} of a-z A-Z 0-9 _ . @ -)"),
        ))
    }
}

/// Who is making a request, once checked.
#[derive(Debug, Clone)]
pub enum Principal {
    /// Nobody in particular, on an open-API route while open-API auth is
    /// off: allowed everything that route does (as in Nacos).
    Open,
    /// A logged-in user (as of the state the request was checked against).
    User(Arc<User>),
}

impl Principal {
    /// The user name, or "" for [`Principal::Open`].
    pub fn name(&self) -> &str {
        match self {
            Principal::Open => "",
            Principal::User(user) => &user.username,
        }
    }

    pub fn is_admin(&self) -> bool {
        matches!(self, Principal::User(user) if user.admin)
    }

    /// Whether this principal may do `need` on the configs `namespace` /
    /// `group` / `data_id` name. Any of them may be `*` (or a pattern), which
    /// asks for every config it could name: a list of a whole namespace is
    /// `(NS, *, *)`. The one rule every surface calls (as Nacos'
    /// `hasPermission`; see [`tacos_state::Resource::covers`]).
    pub(crate) fn can(&self, namespace: &str, group: &str, data_id: &str, need: Access) -> bool {
        match self {
            Principal::Open => true,
            Principal::User(user) => user.allows(namespace, group, data_id, need),
        }
    }

    /// [`can`](Self::can) on one config.
    pub(crate) fn can_key(&self, key: &ConfigKey, need: Access) -> bool {
        self.can(&key.namespace, &key.group, &key.data_id, need)
    }

    /// [`can`](Self::can) on every config of `namespace`.
    pub(crate) fn can_namespace(&self, namespace: &str, need: Access) -> bool {
        self.can(namespace, "*", "*", need)
    }

    /// Whether this principal may do `need` on some config of `namespace`:
    /// whether a list of it may show anything (lists then show only what
    /// [`can_key`](Self::can_key) allows).
    pub(crate) fn can_some(&self, namespace: &str, need: Access) -> bool {
        match self {
            Principal::Open => true,
            Principal::User(user) => user.allows_some(namespace, need),
        }
    }

    /// [`can`](Self::can), as an error naming what is missing.
    pub(crate) fn require(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        need: Access,
    ) -> Result<(), AuthError> {
        if self.can(namespace, group, data_id, need) {
            return Ok(());
        }
        let resource = Resource::new(canonical_namespace(namespace), group, data_id);
        Err(self.refused(need, &resource.to_string()))
    }

    /// [`require`](Self::require) on what a request names, as Nacos'
    /// resource parsers read it (`ConfigHttpResourceParser`,
    /// `ConfigGrpcResourceParser`): a blank group or dataId is `*`, every
    /// group or every dataId. The one reading for every surface.
    pub(crate) fn require_named(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        need: Access,
    ) -> Result<(), AuthError> {
        let any = |v: &str| if v.trim().is_empty() { "*" } else { v }.to_string();
        self.require(namespace, &any(group), &any(data_id), need)
    }

    /// [`require`](Self::require) on one config.
    pub(crate) fn require_key(&self, key: &ConfigKey, need: Access) -> Result<(), AuthError> {
        self.require(&key.namespace, &key.group, &key.data_id, need)
    }

    /// [`can_some`](Self::can_some), as an error.
    pub(crate) fn require_some(&self, namespace: &str, need: Access) -> Result<(), AuthError> {
        if self.can_some(namespace, need) {
            return Ok(());
        }
        let shown = tacos_core::shown_namespace(canonical_namespace(namespace));
        Err(self.refused(need, &format!("anything in namespace {shown}")))
    }

    fn refused(&self, need: Access, what: &str) -> AuthError {
        let verb = match need {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read and write",
        };
        AuthError::Forbidden(format!("{} may not {verb} {what}", self.name()))
    }

    /// The caller to stamp into writes: the user when logged in, else the
    /// `src_user` the client claims; history records the claimed
    /// `src_user` when one is given, as Nacos does (see [`Caller`]).
    pub fn caller(&self, claimed_user: &str, ip: String) -> Caller {
        let claimed = claimed_user.trim();
        match self {
            Principal::Open => Caller {
                principal: self.clone(),
                user: claimed_user.to_string(),
                src_user: claimed_user.to_string(),
                ip,
                authenticated: false,
            },
            Principal::User(user) => Caller {
                principal: self.clone(),
                user: user.username.clone(),
                src_user: if claimed.is_empty() {
                    user.username.clone()
                } else {
                    claimed.to_string()
                },
                ip,
                authenticated: true,
            },
        }
    }
}

/// What a request carries to prove who it is.
#[derive(Default, Clone)]
pub struct Credentials {
    pub token: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("token", &self.token.as_ref().map(|_| ".."))
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    pub fn is_empty(&self) -> bool {
        self.token.is_none() && (self.username.is_none() || self.password.is_none())
    }
}

/// A username/password pair that verified recently.
struct Verified {
    digest: [u8; 32],
    /// The local user's hash then ("" for a directory user).
    password_hash: String,
    /// The directory user it proved to be.
    directory: Option<DirectoryUser>,
    until: Instant,
}

/// How long a verified username/password pair is trusted without hashing.
const VERIFIED_FOR: Duration = Duration::from_secs(300);
/// How long a request waits for the cluster's auth init before failing.
const INIT_WAIT: Duration = Duration::from_secs(5);
/// Most cached pairs.
const MAX_VERIFIED: usize = 10_000;

/// Settings of [`Auth`].
#[derive(Debug, Clone)]
pub struct AuthSettings {
    pub open_api_auth: bool,
    pub token_ttl: u64,
    pub audit_limit: u32,
    pub lockout: Lockout,
    pub password_policy: PasswordPolicy,
    /// LDAP logins, when `--ldap-url` is set.
    pub directory: Option<Arc<Directory>>,
}

impl AuthSettings {
    /// The defaults, without a directory.
    pub fn new(open_api_auth: bool, token_ttl: u64, audit_limit: u32) -> Self {
        AuthSettings {
            open_api_auth,
            token_ttl,
            audit_limit,
            lockout: Lockout::STANDARD,
            password_policy: PasswordPolicy::default(),
            directory: None,
        }
    }
}

/// Logins, request authentication, and user writes.
pub struct Auth {
    engine: Arc<dyn Engine>,
    writer: Writer,
    hasher: Hasher,
    limiter: LoginLimiter,
    verified: DashMap<String, Verified>,
    /// Per-process salt of the cache digests.
    salt: Vec<u8>,
    settings: AuthSettings,
}

/// A successful login.
pub struct Login {
    pub token: String,
    pub ttl: u64,
    pub user: Arc<User>,
}

impl Auth {
    pub fn new(engine: Arc<dyn Engine>, settings: AuthSettings) -> Result<Self, AuthError> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Auth {
            writer: Writer::new(engine.clone(), settings.audit_limit),
            engine,
            hasher: Hasher::new(cores),
            limiter: LoginLimiter::new(settings.lockout, limiter::IP_LIMIT),
            verified: DashMap::new(),
            salt: password::random_bytes(32)?,
            settings,
        })
    }

    pub fn open_api_auth(&self) -> bool {
        self.settings.open_api_auth
    }

    pub fn hasher(&self) -> &Hasher {
        &self.hasher
    }

    fn digest(&self, password: &str) -> [u8; 32] {
        let mut sha = Sha256::new();
        sha.update(&self.salt);
        sha.update(password.as_bytes());
        sha.finalize().into()
    }

    /// The refusal of an attempt the limiter stops.
    fn refused(refused: Refused) -> AuthError {
        match refused {
            Refused::RateLimited(wait) => AuthError::RateLimited(wait),
            Refused::Locked { wait, failures } => {
                let until = chrono::Utc::now() + wait;
                AuthError::Locked {
                    until: until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    wait,
                    failures,
                }
            }
        }
    }

    /// Checks a username and password (lockout and rate limit first, cached
    /// briefly): against the local user, or the directory (see
    /// [`Precedence`] for which is asked for a name both have).
    pub async fn check_password(
        &self,
        username: &str,
        password: &str,
        ip: &str,
    ) -> Result<Arc<User>, AuthError> {
        self.verify_password(username, password, ip)
            .await
            .map(|(user, _)| user)
    }

    /// [`check_password`](Self::check_password), also saying which
    /// directory user it was (`None`: a local user).
    async fn verify_password(
        &self,
        username: &str,
        password: &str,
        ip: &str,
    ) -> Result<(Arc<User>, Option<DirectoryUser>), AuthError> {
        let now = Instant::now();
        self.limiter
            .check(username, ip, now)
            .map_err(Self::refused)?;
        // With its roles' permissions: what the request may do.
        let user = self.engine.state().user_with_roles(username);
        let digest = self.digest(password);
        // A name that cannot be a Tacos username never reaches the
        // directory (its tokens name users; the filter escapes it anyway).
        let directory_first = self.settings.directory.as_ref().filter(|d| {
            (d.precedence() == Precedence::Directory || user.is_none())
                && check_username(username).is_ok()
        });
        if let Some(cached) = self.verified.get(username) {
            let same = bool::from(cached.digest.ct_eq(&digest)) && now < cached.until;
            match (&cached.directory, &user) {
                (Some(identity), _) if same && directory_first.is_some() => {
                    return Ok((self.directory_user(identity), Some(identity.clone())));
                }
                (None, Some(user)) if same && cached.password_hash == user.password_hash => {
                    return Ok((enabled(user.clone())?, None));
                }
                _ => {}
            }
        }
        if let Some(directory) = directory_first {
            match directory.authenticate(username, password).await {
                Ok(Verdict::Valid(identity)) => {
                    self.limiter.succeeded(username);
                    self.remember(username, digest, String::new(), Some(identity.clone()), now);
                    return Ok((self.directory_user(&identity), Some(identity)));
                }
                Ok(Verdict::WrongPassword) => {
                    self.limiter.failed(username, ip, now);
                    return Err(AuthError::WrongCredentials);
                }
                // Not in the directory: a local user of that name, if any.
                Ok(Verdict::NoSuchUser) if user.is_some() => {}
                Ok(Verdict::NoSuchUser) => {
                    self.limiter.failed(username, ip, now);
                    return Err(AuthError::WrongCredentials);
                }
                // The directory is down: local users still log in.
                Err(e) if user.is_some() => {
                    tracing::warn!(user = ?username, "{e}; checking the local user");
                }
                Err(e) => return Err(AuthError::DirectoryUnavailable(e.to_string())),
            }
        }
        let hash = user.as_ref().map(|u| u.password_hash.as_str());
        if !self.hasher.verify(password, hash).await? {
            self.limiter.failed(username, ip, now);
            return Err(AuthError::WrongCredentials);
        }
        let user = user.ok_or(AuthError::WrongCredentials)?;
        self.limiter.succeeded(username);
        if user.enabled && password::form(&user.password_hash) == HashForm::Bcrypt {
            self.rehash(&user, password, ip).await;
        }
        self.remember(username, digest, user.password_hash.clone(), None, now);
        Ok((enabled(user)?, None))
    }

    /// Caches a verified pair (bounded).
    fn remember(
        &self,
        username: &str,
        digest: [u8; 32],
        password_hash: String,
        directory: Option<DirectoryUser>,
        now: Instant,
    ) {
        if self.verified.len() >= MAX_VERIFIED {
            self.verified.retain(|_, v| now < v.until);
        }
        if self.verified.len() < MAX_VERIFIED {
            self.verified.insert(
                username.to_string(),
                Verified {
                    digest,
                    password_hash,
                    directory,
                    until: now + VERIFIED_FOR,
                },
            );
        }
    }

    /// A directory user as a request sees it: its roles' permissions as
    /// the replicated roles table has them now (grants add up).
    fn directory_user(&self, identity: &DirectoryUser) -> Arc<User> {
        let state = self.engine.state();
        let mut permissions = tacos_state::Permissions::new();
        if !identity.admin {
            for role in identity.roles.iter().filter_map(|name| state.role(name)) {
                for (resource, access) in &role.permissions {
                    tacos_state::permission_add(&mut permissions, resource, *access);
                }
            }
        }
        Arc::new(User {
            username: identity.username.clone(),
            password_hash: String::new(),
            admin: identity.admin,
            enabled: true,
            create_time: 0,
            modify_time: 0,
            generation: 0,
            permissions,
        })
    }

    /// A login verified a BCrypt hash a migration carried over: replaces it
    /// with an argon2id hash of the same password, as a replicated write that
    /// applies only while the stored hash is still the one verified (so a
    /// concurrent login or password change is never overwritten). Best
    /// effort: if it fails the BCrypt hash stays and keeps working, and the
    /// next login tries again.
    async fn rehash(&self, user: &User, password: &str, ip: &str) {
        let new_hash = match self.hasher.hash(password).await {
            Ok(hash) => hash,
            Err(e) => {
                tracing::warn!(user = ?user.username, "re-hashing a BCrypt password failed: {e}");
                return;
            }
        };
        let op = Op::RehashPassword(tacos_core::command::RehashPassword {
            username: user.username.clone(),
            expected_hash: user.password_hash.clone(),
            new_hash,
        });
        let caller = Caller {
            principal: Principal::Open,
            user: user.username.clone(),
            src_user: user.username.clone(),
            ip: ip.to_string(),
            authenticated: true,
        };
        match self.writer.propose(op, &caller).await {
            Ok(_) => {
                tracing::info!(user = ?user.username, "BCrypt password re-hashed with argon2id")
            }
            Err(ServiceError::Rejected(ApplyError::PasswordHashChanged(_))) => {}
            Err(e) => {
                tracing::warn!(user = ?user.username, "re-hashing a BCrypt password failed: {e}")
            }
        }
    }

    /// The user a token names, if the token is signed by the cluster key,
    /// unexpired, and issued since the user's last password change.
    pub fn check_token(&self, token: &str) -> Result<Arc<User>, AuthError> {
        let state = self.engine.state();
        let key = state.auth_key().ok_or(AuthError::NotInitialized)?;
        let claims = token::verify(&key.token_key, token)?;
        if claims.dir {
            // A local user created with the name since wins, unless the
            // directory does.
            let local_wins = self
                .settings
                .directory
                .as_ref()
                .is_none_or(|d| d.precedence() == Precedence::Local);
            if local_wins && state.user(&claims.sub).is_some() {
                return Err(AuthError::TokenInvalid);
            }
            return Ok(self.directory_user(&DirectoryUser {
                username: claims.sub,
                dn: String::new(),
                roles: claims.roles,
                admin: claims.admin,
            }));
        }
        let user = state
            .user_with_roles(&claims.sub)
            .ok_or(AuthError::TokenInvalid)?;
        if user.generation != claims.gen {
            return Err(AuthError::TokenInvalid);
        }
        enabled(user)
    }

    /// Waits (bounded) until the cluster's auth is initialized: right after
    /// a cluster's first start, the first leader's `InitAuth` may still be
    /// on its way, and a request then should wait a moment, not fail.
    async fn wait_initialized(&self) -> Result<(), AuthError> {
        let deadline = Instant::now() + INIT_WAIT;
        while self.engine.state().auth_key().is_none() {
            if Instant::now() >= deadline {
                return Err(AuthError::NotInitialized);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Who `credentials` prove to be (a token wins over a password).
    pub async fn authenticate(
        &self,
        credentials: &Credentials,
        ip: &str,
    ) -> Result<Arc<User>, AuthError> {
        if credentials.is_empty() {
            return Err(AuthError::NoCredentials);
        }
        self.wait_initialized().await?;
        if let Some(token) = &credentials.token {
            return self.check_token(token);
        }
        match (&credentials.username, &credentials.password) {
            (Some(username), Some(password)) => self.check_password(username, password, ip).await,
            _ => Err(AuthError::NoCredentials),
        }
    }

    /// A login: checks the password and issues a token.
    pub async fn login(
        &self,
        username: &str,
        password: &str,
        ip: &str,
    ) -> Result<Login, AuthError> {
        self.wait_initialized().await?;
        let checked = self.verify_password(username, password, ip).await;
        record_login(username, ip, &checked);
        let (user, directory) = checked?;
        let state = self.engine.state();
        let key = state.auth_key().ok_or(AuthError::NotInitialized)?;
        let now = jsonwebtoken::get_current_timestamp();
        let ttl = self.settings.token_ttl;
        let token = match directory {
            Some(identity) => token::issue_directory(&key.token_key, &identity, now, ttl)?,
            None => token::issue(&key.token_key, &user.username, user.generation, now, ttl)?,
        };
        Ok(Login {
            token,
            ttl: self.settings.token_ttl,
            user,
        })
    }
}

/// Counts a login by outcome (`tacos_logins_total`) and logs it; refusals
/// by the rate limiter and the lockout are only counted (they can come by
/// the thousand).
/// The username is cut and escaped: it is whatever the client sent.
fn record_login<T>(username: &str, ip: &str, outcome: &Result<T, AuthError>) {
    let label = match outcome {
        Ok(_) => "ok",
        Err(AuthError::WrongCredentials) => "wrong_credentials",
        Err(AuthError::Disabled) => "disabled",
        Err(AuthError::RateLimited(_)) => "rate_limited",
        Err(AuthError::Locked { .. }) => "locked",
        Err(AuthError::DirectoryUnavailable(_)) => "directory_unavailable",
        Err(_) => "error",
    };
    metrics::counter!("tacos_logins_total", "outcome" => label).increment(1);
    let user: String = username.chars().take(MAX_USERNAME_LEN).collect();
    match outcome {
        Ok(_) => tracing::info!(user = ?user, ip, "login"),
        Err(AuthError::RateLimited(_) | AuthError::Locked { .. }) => {}
        Err(e) => tracing::warn!(user = ?user, ip, "login refused: {e}"),
    }
}

fn enabled(user: Arc<User>) -> Result<Arc<User>, AuthError> {
    if user.enabled {
        Ok(user)
    } else {
        Err(AuthError::Disabled)
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn user(admin: bool, permissions: &[(&str, Access)]) -> Principal {
        let resources: Vec<(Resource, Access)> = permissions
            .iter()
            .map(|(ns, a)| (Resource::namespace(ns), *a))
            .collect();
        user_with(admin, &resources)
    }

    fn user_with(admin: bool, permissions: &[(Resource, Access)]) -> Principal {
        crate::testing::user_holding("u", admin, permissions)
    }

    #[test]
    fn principals_can_what_their_permissions_say() {
        let reader = user(false, &[("", Access::Read), ("dev", Access::ReadWrite)]);
        assert!(reader.can_namespace("public", Access::Read));
        assert!(!reader.can_namespace("", Access::Write));
        assert!(reader.can_namespace("dev", Access::Write));
        assert!(!reader.can_namespace("prod", Access::Read));
        let error = reader
            .require("", "G", "a.yaml", Access::Write)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "authorization failed: u may not write :G:config/a.yaml"
        );
        assert!(user(true, &[]).can_namespace("anything", Access::Write));
        assert!(user(false, &[("*", Access::Read)]).can_namespace("x", Access::Read));
        assert!(Principal::Open.can_namespace("x", Access::Write));
        assert!(Principal::Open.can_some("x", Access::Read));
    }

    #[test]
    fn group_and_data_id_grants_allow_what_they_cover() {
        let p = user_with(
            false,
            &[
                (Resource::new("dev", "G", "*"), Access::Read),
                (Resource::new("dev", "H", "app*"), Access::Write),
            ],
        );
        let key = |g: &str, d: &str| ConfigKey::new("dev", g, d);
        assert!(p.can_key(&key("G", "any"), Access::Read));
        assert!(!p.can_key(&key("G", "any"), Access::Write));
        assert!(p.can_key(&key("H", "app.yaml"), Access::Write));
        assert!(!p.can_key(&key("H", "app.yaml"), Access::Read));
        assert!(!p.can_key(&key("H", "db.yaml"), Access::Write));
        assert!(!p.can_namespace("dev", Access::Read));
        assert!(p.can_some("dev", Access::Read));
        assert!(!p.can_some("prod", Access::Read));
        assert!(
            p.can("dev", "G", "app*", Access::Read),
            "a pattern inside the grant"
        );
        assert!(
            !p.can("dev", "*", "app*", Access::Read),
            "a pattern wider than it"
        );
        assert_eq!(
            p.require_some("prod", Access::Read)
                .unwrap_err()
                .to_string(),
            "authorization failed: u may not read anything in namespace prod"
        );
    }

    #[test]
    fn usernames_are_checked() {
        check_username("alice.b@corp-1_x").unwrap();
        for bad in ["", "a b", "a/b", "ä", &"x".repeat(65)] {
            assert!(check_username(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn credentials_never_show_a_token_or_password() {
        let c = Credentials {
            token: Some("secret-token".into()),
            username: Some("bob".into()),
            password: Some("secret-pass".into()),
        };
        let shown = format!("{c:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
