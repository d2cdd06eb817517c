//! Password hashing: argon2id (the `argon2` crate's defaults: 19 MiB, 2
//! passes, 1 lane), stored as PHC strings. Hashing is deliberately slow, so
//! [`Hasher`] runs it off the async threads and bounds how many run at once:
//! a burst of logins queues instead of eating every core.
//!
//! A user migrated from r-nacos 0.6+ or Java Nacos may still hold the BCrypt
//! hash (`$2a$`, `$2b$`, `$2y$`) its server kept: [`verify`] checks either
//! form ([`form`] tells which), and the login re-hashes such a password with
//! argon2id once it verified (`super::Auth::check_password`). Tacos never
//! writes a BCrypt hash itself.

use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::Engine;
use tokio::sync::Semaphore;

use super::AuthError;

/// Shortest password any policy accepts for a new or changed password.
pub const MIN_LEN: usize = 8;
/// Longest password accepted (hashing cost grows with it).
pub const MAX_LEN: usize = 128;

/// Why a new password is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeakPassword {
    #[error("password must be at least {0} characters")]
    TooShort(usize),
    #[error("password must be at most {MAX_LEN} characters")]
    TooLong,
    #[error(
        "password must mix at least {needed} of: lowercase letters, uppercase letters, \
         digits, other characters (it has {found})"
    )]
    TooFewClasses { needed: u8, found: u8 },
}

/// What a new local password must be (`--password-min-length`,
/// `--password-min-classes`). Checked when a password is set (user create,
/// password change), never at login: passwords set under an older, weaker
/// policy keep working. Directory users' passwords are the directory's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PasswordPolicy {
    /// [`MIN_LEN`] to [`MAX_LEN`] characters.
    pub min_length: usize,
    /// 1 to 4 of the classes lowercase, uppercase, digit, other.
    pub min_classes: u8,
}

impl Default for PasswordPolicy {
    fn default() -> Self {
        PasswordPolicy {
            min_length: MIN_LEN,
            min_classes: 1,
        }
    }
}

impl PasswordPolicy {
    /// Checks a password a user chooses.
    pub fn check(&self, password: &str) -> Result<(), WeakPassword> {
        match password.chars().count() {
            n if n < self.min_length.max(MIN_LEN) => {
                return Err(WeakPassword::TooShort(self.min_length.max(MIN_LEN)))
            }
            n if n > MAX_LEN => return Err(WeakPassword::TooLong),
            _ => {}
        }
        let has = |test: fn(char) -> bool| password.chars().any(test) as u8;
        let found = has(|c| c.is_lowercase())
            + has(|c| c.is_uppercase())
            + has(|c| c.is_ascii_digit())
            + has(|c| !c.is_lowercase() && !c.is_uppercase() && !c.is_ascii_digit());
        if found < self.min_classes {
            return Err(WeakPassword::TooFewClasses {
                needed: self.min_classes,
                found,
            });
        }
        Ok(())
    }
}

/// Checks a password against the default policy (8 to 128 characters).
pub fn check_new(password: &str) -> Result<(), WeakPassword> {
    PasswordPolicy::default().check(password)
}

/// `n` random bytes from the OS.
pub fn random_bytes(n: usize) -> Result<Vec<u8>, AuthError> {
    let mut bytes = vec![0; n];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Internal(format!("no randomness: {e}")))?;
    Ok(bytes)
}

/// A random password: 24 URL-safe characters (144 bits).
pub fn generate() -> Result<String, AuthError> {
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes(18)?))
}

/// Hashes `password` with a fresh random salt (blocking: call off the
/// async threads, or use [`Hasher`]).
pub fn hash(password: &str) -> Result<String, AuthError> {
    let salt = SaltString::encode_b64(&random_bytes(16)?)
        .map_err(|e| AuthError::Internal(format!("salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| AuthError::Internal(format!("hashing failed: {e}")))
}

/// The form of a stored password hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashForm {
    /// An argon2 PHC string: what Tacos writes.
    Argon2,
    /// A BCrypt hash (`$2a$`, `$2b$` or `$2y$`, cost 4 to 31), carried over by
    /// a migration.
    Bcrypt,
    /// Neither: no password matches it.
    Unknown,
}

/// Which form `hash` has (it only parses, it does not verify).
pub fn form(hash: &str) -> HashForm {
    if hash.starts_with("$argon2") && PasswordHash::new(hash).is_ok() {
        return HashForm::Argon2;
    }
    let bcrypt_prefix = ["$2a$", "$2b$", "$2y$"]
        .iter()
        .any(|prefix| hash.starts_with(prefix));
    match hash.parse::<bcrypt::HashParts>() {
        Ok(parts) if bcrypt_prefix && (4..=31).contains(&parts.get_cost()) => HashForm::Bcrypt,
        _ => HashForm::Unknown,
    }
}

/// Whether `password` matches `hash`, an argon2 PHC string or a BCrypt hash
/// (blocking). The comparisons inside are constant-time; a hash of neither
/// form never matches. BCrypt looks at the first 72 bytes of the password
/// only, as the servers that wrote those hashes did.
pub fn verify(password: &str, hash: &str) -> bool {
    match form(hash) {
        HashForm::Argon2 => PasswordHash::new(hash).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        }),
        HashForm::Bcrypt => bcrypt::verify(password, hash).unwrap_or(false),
        HashForm::Unknown => false,
    }
}

/// A hash no password matches, verified against when the user does not
/// exist so that "no such user" and "wrong password" take the same time.
fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash("not a password of anyone").unwrap_or_default())
}

/// Runs hashing on the blocking pool, at most `limit` at a time.
#[derive(Clone)]
pub struct Hasher {
    permits: Arc<Semaphore>,
}

impl Hasher {
    pub fn new(limit: usize) -> Self {
        Hasher {
            permits: Arc::new(Semaphore::new(limit.max(1))),
        }
    }

    async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AuthError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| AuthError::Internal("hasher closed".into()))?;
        tokio::task::spawn_blocking(job)
            .await
            .map_err(|e| AuthError::Internal(format!("hashing task failed: {e}")))
    }

    /// Hashes a new password.
    pub async fn hash(&self, password: &str) -> Result<String, AuthError> {
        let password = password.to_string();
        self.run(move || hash(&password)).await?
    }

    /// Verifies `password` against `hash`, or against a decoy when there is
    /// no user (so the answer takes as long either way).
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> Result<bool, AuthError> {
        let password = password.to_string();
        let hash = hash.map(str::to_string);
        self.run(move || match hash {
            Some(hash) => verify(&password, &hash),
            None => {
                verify(&password, decoy());
                false
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_argon2id_salted_and_verify() {
        let a = hash("correct horse").unwrap();
        let b = hash("correct horse").unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "salts differ");
        assert!(verify("correct horse", &a));
        assert!(!verify("correct horsf", &a));
        assert!(!verify("correct horse", "not a phc string"));
    }

    #[test]
    fn bcrypt_hashes_verify_and_are_told_apart() {
        // Written by r-nacos 0.8.8 (bcrypt cost 10) for the password "admin".
        let rnacos = "$2b$10$fDtLlWV8dIBuUsm.YqRYG.aLeGVSJ6545h1ALGBY4YnCCnwCy6K3W";
        assert_eq!(form(rnacos), HashForm::Bcrypt);
        assert!(verify("admin", rnacos));
        assert!(!verify("admin2", rnacos));
        for version in ["$2a$", "$2y$"] {
            let other = rnacos.replacen("$2b$", version, 1);
            assert_eq!(form(&other), HashForm::Bcrypt, "{other}");
            assert!(verify("admin", &other), "{other}");
        }
        let argon = hash("correct horse").unwrap();
        assert_eq!(form(&argon), HashForm::Argon2);
        for bad in [
            "",
            "admin",
            "$2x$10$fDtLlWV8dIBuUsm.YqRYG.aLeGVSJ6545h1ALGBY4YnCCnwCy6K3W",
            "$2b$03$fDtLlWV8dIBuUsm.YqRYG.aLeGVSJ6545h1ALGBY4YnCCnwCy6K3W",
            "$2b$10$tooshort",
        ] {
            assert_eq!(form(bad), HashForm::Unknown, "{bad}");
            assert!(!verify("admin", bad), "{bad}");
        }
        assert!(!verify("admin", "$argon2id$garbage"));
    }

    #[test]
    fn new_passwords_have_bounds_and_generated_ones_are_long() {
        assert_eq!(check_new("short"), Err(WeakPassword::TooShort(8)));
        assert_eq!(check_new(&"x".repeat(129)), Err(WeakPassword::TooLong));
        check_new("eight ch").unwrap();
        let generated = generate().unwrap();
        assert_eq!(generated.len(), 24);
        check_new(&generated).unwrap();
        assert_ne!(generated, generate().unwrap());
    }

    #[test]
    fn the_policy_counts_length_and_character_classes() {
        let policy = PasswordPolicy {
            min_length: 12,
            min_classes: 3,
        };
        assert_eq!(policy.check("Abc-1234567"), Err(WeakPassword::TooShort(12)));
        assert_eq!(
            policy.check("abcdefgh-ijk"),
            Err(WeakPassword::TooFewClasses {
                needed: 3,
                found: 2
            })
        );
        policy.check("abcdefgh-ijK").unwrap();
        policy.check("Äbcdefgh1ijk").unwrap();
        let message = policy.check("abcdefghijkl").unwrap_err().to_string();
        assert!(message.contains("at least 3 of"), "{message}");
        assert!(message.contains("(it has 1)"), "{message}");
        // Never below the floor of 8, whatever the setting says.
        let lax = PasswordPolicy {
            min_length: 1,
            min_classes: 1,
        };
        assert_eq!(lax.check("1234567"), Err(WeakPassword::TooShort(8)));
    }

    #[tokio::test]
    async fn the_hasher_verifies_and_runs_a_decoy_for_unknown_users() {
        let hasher = Hasher::new(1);
        let h = hasher.hash("pass-word-1").await.unwrap();
        assert!(hasher.verify("pass-word-1", Some(&h)).await.unwrap());
        assert!(!hasher.verify("pass-word-2", Some(&h)).await.unwrap());
        assert!(!hasher.verify("pass-word-1", None).await.unwrap());
    }
}
