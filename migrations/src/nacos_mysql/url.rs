//! The `--from mysql://user:password@host:port/database` URL: parsed by mysql_async,
//! shown without its password.

use mysql_async::Opts;

use super::ReadError;

/// A `--from mysql://...` URL. `Display` and `Debug` hide its password.
#[derive(Clone, PartialEq, Eq)]
pub struct Url(String);

impl Url {
    /// Whether `text` is meant as a MySQL URL (the `mysql://` scheme).
    pub fn is_mysql(text: &str) -> bool {
        text.starts_with("mysql://")
    }

    pub fn new(url: impl Into<String>) -> Url {
        Url(url.into())
    }

    /// The URL itself, password included.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl std::fmt::Debug for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Url({:?})", redact(&self.0))
    }
}

/// The URL with its password replaced by `***` (for messages and the report).
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else {
        return url.to_string();
    };
    format!(
        "{}{}:***{}",
        &url[..scheme_end + 3],
        &userinfo[..colon],
        &rest[at..]
    )
}

/// Parses `url`; it must name a database.
pub(super) fn parse(url: &str) -> Result<Opts, ReadError> {
    let bad = |reason: String| ReadError::BadUrl {
        url: redact(url),
        reason,
    };
    if !url.starts_with("mysql://") {
        return Err(bad(
            "expected mysql://user:password@host:port/database".to_string()
        ));
    }
    let opts = Opts::from_url(url).map_err(|e| bad(e.to_string()))?;
    if opts.db_name().is_none_or(str::is_empty) {
        return Err(bad(
            "no database name (mysql://user:password@host:port/DATABASE)".to_string(),
        ));
    }
    if opts.user().is_none_or(str::is_empty) {
        return Err(bad(
            "no user name (mysql://USER:password@host:port/database)".to_string(),
        ));
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_the_password_only() {
        assert_eq!(
            redact("mysql://nacos:s3cr:et@db.example:3306/nacos?x=1"),
            "mysql://nacos:***@db.example:3306/nacos?x=1"
        );
        assert_eq!(
            redact("mysql://nacos@db:3306/nacos"),
            "mysql://nacos@db:3306/nacos"
        );
        assert_eq!(redact("not a url"), "not a url");
        // An '@' in the password (unescaped) still hides all of it.
        assert_eq!(redact("mysql://u:p@ss@h/db"), "mysql://u:***@h/db");
    }

    #[test]
    fn needs_a_database_and_a_user() {
        for (url, needle) in [
            ("mysql://u:p@h:3306", "no database name"),
            ("mysql://u:p@h:3306/", "no database name"),
            ("mysql://h:3306/db", "no user name"),
            ("postgres://u:p@h/db", "expected mysql://"),
        ] {
            let err = parse(url).expect_err(url).to_string();
            assert!(err.contains(needle), "{url}: {err}");
            assert!(!err.contains(":p@"), "{url}: password shown: {err}");
        }
        let opts = parse("mysql://u:p%40ss@127.0.0.1:4406/nacos").expect("valid");
        assert_eq!(opts.db_name(), Some("nacos"));
        assert_eq!(opts.pass(), Some("p@ss"));
        assert_eq!(opts.tcp_port(), 4406);
    }
}
