//! Nacos input rules for config keys and contents, with Nacos' messages.
//!
//! dataId and group: characters `a-zA-Z0-9-_:.`, not blank, at most 256 and
//! 128 characters. Namespace id (tenant) of a config: the same characters,
//! at most 128 ("" is public), as Nacos' `ParamUtils.checkTenant` (Nacos
//! 2.3+ also runs a stricter default parameter filter that refuses `.` and
//! `:` in a tenant; Tacos follows `ParamUtils`, as Nacos up to 2.2 and
//! r-nacos do, so their data moves in). A namespace id someone *creates*
//! (the namespace API) follows Nacos' stricter `[\w-]+`. Content: not
//! blank, at most the configured size in bytes.

/// Longest dataId.
pub const MAX_DATA_ID_LEN: usize = 256;
/// Longest group.
pub const MAX_GROUP_LEN: usize = 128;
/// Longest namespace id.
pub const MAX_NAMESPACE_LEN: usize = 128;
/// Longest gray tag (Nacos' `ParamUtils.TAG_MAX_LEN`).
pub const MAX_TAG_LEN: usize = 16;
/// Most keys one listener request may watch (also a setting's ceiling).
pub const DEFAULT_MAX_LISTEN_KEYS: usize = 10_000;

/// Input that breaks a rule. The text is what Nacos says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidInput {
    #[error("Required parameter '{0}' is not present")]
    Missing(&'static str),
    #[error("invalid dataId : {0}")]
    DataId(String),
    #[error("too long dataId, over {MAX_DATA_ID_LEN}")]
    DataIdTooLong,
    #[error("invalid group : {0}")]
    Group(String),
    #[error("too long group, over {MAX_GROUP_LEN}")]
    GroupTooLong,
    #[error("invalid tenant")]
    Namespace,
    #[error("too long tenant, over {MAX_NAMESPACE_LEN}")]
    NamespaceTooLong,
    #[error("content is blank")]
    BlankContent,
    #[error("invalid content, over {0}")]
    ContentTooLarge(usize),
    #[error("invalid tag : {0}")]
    Tag(String),
    #[error("too long tag, over {MAX_TAG_LEN}")]
    TagTooLong,
    #[error("invalid {0}: {1}")]
    Other(&'static str, String),
}

fn key_chars_ok(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

pub fn data_id(s: &str) -> Result<(), InvalidInput> {
    if is_blank(s) || !key_chars_ok(s) {
        return Err(InvalidInput::DataId(s.to_string()));
    }
    if s.chars().count() > MAX_DATA_ID_LEN {
        return Err(InvalidInput::DataIdTooLong);
    }
    Ok(())
}

/// A gray tag (`tag=` of a publish or delete, Nacos' `ParamUtils.checkParam(tag)`):
/// the key characters, at most 16. The caller trims it; blank means none.
pub fn tag(s: &str) -> Result<(), InvalidInput> {
    if !key_chars_ok(s) {
        return Err(InvalidInput::Tag(s.to_string()));
    }
    if s.chars().count() > MAX_TAG_LEN {
        return Err(InvalidInput::TagTooLong);
    }
    Ok(())
}

pub fn group(s: &str) -> Result<(), InvalidInput> {
    if is_blank(s) || !key_chars_ok(s) {
        return Err(InvalidInput::Group(s.to_string()));
    }
    if s.chars().count() > MAX_GROUP_LEN {
        return Err(InvalidInput::GroupTooLong);
    }
    Ok(())
}

/// A namespace id (tenant) as a client sends it with a config ("" is the
/// public namespace).
pub fn namespace(s: &str) -> Result<(), InvalidInput> {
    if s.is_empty() {
        return Ok(());
    }
    if !key_chars_ok(s) {
        return Err(InvalidInput::Namespace);
    }
    if s.chars().count() > MAX_NAMESPACE_LEN {
        return Err(InvalidInput::NamespaceTooLong);
    }
    Ok(())
}

/// A namespace id someone asks to create through the namespace API:
/// letters, digits, `_` and `-` only (Nacos' `^[\w-]+`).
pub fn new_namespace_id(s: &str) -> Result<(), InvalidInput> {
    namespace(s)?;
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(InvalidInput::Other(
            "namespaceId",
            format!("{s:?}: a new namespace id holds letters, digits, '_' and '-' only"),
        ));
    }
    Ok(())
}

pub fn content(s: &str, max_bytes: usize) -> Result<(), InvalidInput> {
    if is_blank(s) {
        return Err(InvalidInput::BlankContent);
    }
    if s.len() > max_bytes {
        return Err(InvalidInput::ContentTooLarge(max_bytes));
    }
    Ok(())
}

/// The config types Nacos knows; anything else is stored as `text`.
pub fn config_type(s: &str) -> &'static str {
    match s.to_ascii_lowercase().as_str() {
        "json" => "json",
        "xml" => "xml",
        "yaml" | "yml" => "yaml",
        "html" => "html",
        "properties" => "properties",
        "toml" => "toml",
        _ => "text",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_nacos_rules() {
        assert!(data_id("app.yaml").is_ok());
        assert!(data_id("a-b_c:d.e").is_ok());
        assert_eq!(data_id("a b"), Err(InvalidInput::DataId("a b".into())));
        assert_eq!(data_id("  "), Err(InvalidInput::DataId("  ".into())));
        assert_eq!(data_id("配置"), Err(InvalidInput::DataId("配置".into())));
        assert_eq!(data_id(&"d".repeat(257)), Err(InvalidInput::DataIdTooLong));
        assert!(data_id(&"d".repeat(256)).is_ok());
        assert_eq!(group(&"g".repeat(129)), Err(InvalidInput::GroupTooLong));
        assert_eq!(group("g/h"), Err(InvalidInput::Group("g/h".into())));
        assert!(namespace("").is_ok());
        assert!(namespace("dev_1-a").is_ok());
        assert!(namespace("ops.core").is_ok() && namespace("team:a").is_ok());
        assert_eq!(namespace("dev/1"), Err(InvalidInput::Namespace));
        assert_eq!(namespace("dev 1"), Err(InvalidInput::Namespace));
        assert!(new_namespace_id("dev_1-a").is_ok());
        assert!(new_namespace_id("ops.core").is_err());
        assert_eq!(
            namespace(&"n".repeat(129)),
            Err(InvalidInput::NamespaceTooLong)
        );
        assert_eq!(content(" \n", 10), Err(InvalidInput::BlankContent));
        assert_eq!(
            content("12345678901", 10),
            Err(InvalidInput::ContentTooLarge(10))
        );
        assert_eq!(config_type("JSON"), "json");
        assert_eq!(config_type("weird"), "text");
    }
}
