//! Access tokens: JWTs signed with HMAC-SHA256 under the cluster's token key
//! (generated at cluster init and replicated, so any node verifies a token
//! any other node issued). Claims: `sub` (username), `iat`/`exp` (seconds)
//! and `gen`, the user's password generation, so changing a password ends
//! every token issued before. A token is never logged.
//!
//! A directory (LDAP) user has no replicated record: its token says so
//! (`dir`) and carries its mapped `roles` and `admin` flag (see
//! [`super::ldap`] for why). Tokens of local users leave these out, so
//! they look exactly as before.

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::AuthError;

/// Shortest signing key accepted.
pub const MIN_KEY_BYTES: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub iat: u64,
    pub exp: u64,
    pub gen: u64,
    /// A directory user's token.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dir: bool,
    /// A directory user's roles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// A directory user's admin flag (`ROLE_ADMIN` mapped).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub admin: bool,
}

/// Decodes the `--token-secret` setting (base64, standard or URL-safe).
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, String> {
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let key = engines
        .iter()
        .find_map(|engine| engine.decode(secret.trim()).ok())
        .ok_or_else(|| "is not base64".to_string())?;
    if key.len() < MIN_KEY_BYTES {
        return Err(format!(
            "decodes to {} bytes; at least {MIN_KEY_BYTES} are needed",
            key.len()
        ));
    }
    Ok(key)
}

/// Signs a token for local user `username` at password generation `gen`.
pub fn issue(
    key: &[u8],
    username: &str,
    gen: u64,
    now: u64,
    ttl: u64,
) -> Result<String, AuthError> {
    sign(
        key,
        &Claims {
            sub: username.to_string(),
            iat: now,
            exp: now + ttl,
            gen,
            dir: false,
            roles: Vec::new(),
            admin: false,
        },
    )
}

/// Signs a token for a directory user.
pub fn issue_directory(
    key: &[u8],
    user: &super::ldap::DirectoryUser,
    now: u64,
    ttl: u64,
) -> Result<String, AuthError> {
    sign(
        key,
        &Claims {
            sub: user.username.clone(),
            iat: now,
            exp: now + ttl,
            gen: 0,
            dir: true,
            roles: user.roles.clone(),
            admin: user.admin,
        },
    )
}

fn sign(key: &[u8], claims: &Claims) -> Result<String, AuthError> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(key),
    )
    .map_err(|e| AuthError::Internal(format!("cannot sign a token: {e}")))
}

/// Checks the signature and expiry (no leeway) of `token` and returns its
/// claims. The algorithm is pinned: a token that says `none` or another
/// algorithm is refused.
pub fn verify(key: &[u8], token: &str) -> Result<Claims, AuthError> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_required_spec_claims(&["exp", "sub"]);
    jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_secret(key), &validation)
        .map(|data| data.claims)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::ExpiredSignature => AuthError::TokenExpired,
            _ => AuthError::TokenInvalid,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    #[test]
    fn tokens_round_trip_and_forgeries_fail() {
        let key = [7u8; 32];
        let token = issue(&key, "alice", 3, now(), 60).unwrap();
        let claims = verify(&key, &token).unwrap();
        assert_eq!((claims.sub.as_str(), claims.gen), ("alice", 3));
        assert_eq!(verify(&[8u8; 32], &token), Err(AuthError::TokenInvalid));
        // Change one character of the payload: the signature no longer fits.
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        let forged = issue(&[9u8; 32], "admin", 3, now(), 60).unwrap();
        parts[1] = forged.split('.').nth(1).unwrap().to_string();
        assert_eq!(verify(&key, &parts.join(".")), Err(AuthError::TokenInvalid));
        assert_eq!(verify(&key, "garbage"), Err(AuthError::TokenInvalid));
    }

    #[test]
    fn directory_tokens_carry_roles_and_local_ones_stay_as_before() {
        let key = [7u8; 32];
        let user = super::super::ldap::DirectoryUser {
            username: "carol".into(),
            dn: "uid=carol,ou=people,dc=x".into(),
            roles: vec!["devs".into()],
            admin: false,
        };
        let claims = verify(&key, &issue_directory(&key, &user, now(), 60).unwrap()).unwrap();
        assert!(claims.dir && !claims.admin);
        assert_eq!(claims.roles, vec!["devs".to_string()]);
        let local = issue(&key, "alice", 1, now(), 60).unwrap();
        let payload = local.split('.').nth(1).unwrap();
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        let json = String::from_utf8(json).unwrap();
        assert!(!json.contains("dir") && !json.contains("roles"), "{json}");
        assert!(!verify(&key, &local).unwrap().dir);
    }

    #[test]
    fn expired_tokens_and_unsigned_tokens_fail() {
        let key = [7u8; 32];
        let old = issue(&key, "alice", 0, now() - 100, 10).unwrap();
        assert_eq!(verify(&key, &old), Err(AuthError::TokenExpired));
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header = engine.encode(r#"{"alg":"none","typ":"JWT"}"#);
        let body = engine.encode(format!(
            r#"{{"sub":"alice","iat":0,"exp":{},"gen":0}}"#,
            now() + 100
        ));
        assert_eq!(
            verify(&key, &format!("{header}.{body}.")),
            Err(AuthError::TokenInvalid)
        );
    }

    #[test]
    fn secrets_must_be_base64_of_32_bytes() {
        assert!(decode_secret("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=").is_ok());
        assert!(decode_secret("c2hvcnQ=").unwrap_err().contains("5 bytes"));
        assert!(decode_secret("not base64!").is_err());
    }
}
