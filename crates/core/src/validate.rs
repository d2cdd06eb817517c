//! Nacos input rules for config keys and contents, with Nacos' messages.
//!
//! dataId, group, namespace id (tenant) and gray tag: what Java Nacos' own
//! check accepts (`ParamUtils.isValid`, the same in its client and its
//! config server): every character for which Java's
//! `Character.isLetterOrDigit(char)` is true, in any script, plus `_ - . :`.
//! Java checks UTF-16 units one by one, and a unit of a surrogate pair is
//! no letter, so a character outside the Basic Multilingual Plane (an
//! emoji, a CJK Extension B ideograph) is refused, here as there. Lengths
//! count characters (for what passes, as many as Java's UTF-16 units):
//! dataId at most 256, group 128, tenant 128, tag 16. Not blank. This is
//! the rule of Java Nacos up to 2.2, of every Java Nacos whose parameter
//! filter is off, and of r-nacos, so their data moves in unchanged
//! (Chinese dataIds and groups among it).
//!
//! Java Nacos 2.3+ also runs a stricter parameter filter by default
//! (`nacos.core.param.check.enabled`, `DefaultParamChecker`): dataId and
//! group only `a-zA-Z0-9-_:.`, namespace id only `[\w-]` (ASCII) and at
//! most 64. [`set_param_filter`] turns it on for the process (the server's
//! `--param-check`); it is a request filter, like Nacos' own, so it is
//! decided once at start and never reaches the state machine.
//!
//! A namespace id someone *creates* (the namespace API) follows Nacos'
//! stricter `[\w-]+` in either mode. Content: not blank, at most the
//! configured size in bytes.

use std::sync::atomic::{AtomicBool, Ordering};

use unicode_general_category::{get_general_category, GeneralCategory};

/// Longest dataId.
pub const MAX_DATA_ID_LEN: usize = 256;
/// Longest group.
pub const MAX_GROUP_LEN: usize = 128;
/// Longest namespace id.
pub const MAX_NAMESPACE_LEN: usize = 128;
/// Longest namespace id under Nacos 2.3+'s parameter filter
/// (`ParamCheckRule.maxNamespaceIdLength`).
pub const FILTER_MAX_NAMESPACE_LEN: usize = 64;
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
    /// Refused by Nacos 2.3+'s parameter filter (its message).
    #[error("Param '{0}' is illegal, illegal characters should not appear in the param.")]
    FilterChars(&'static str),
    /// Too long for Nacos 2.3+'s parameter filter (its message).
    #[error("Param '{0}' is illegal, the param length should not exceed {1}.")]
    FilterLength(&'static str, usize),
}

impl InvalidInput {
    /// Whether this is a refusal of Nacos 2.3+'s parameter filter, which
    /// Nacos answers before any route, in a shape of its own.
    pub fn is_filter_refusal(&self) -> bool {
        matches!(
            self,
            InvalidInput::FilterChars(_) | InvalidInput::FilterLength(..)
        )
    }
}

/// Whether Nacos 2.3+'s parameter filter is on (see the module docs).
static PARAM_FILTER: AtomicBool = AtomicBool::new(false);

/// Turns Nacos 2.3+'s parameter filter on or off for this process; the
/// server sets it once at start from `--param-check`.
pub fn set_param_filter(on: bool) {
    PARAM_FILTER.store(on, Ordering::Relaxed);
}

/// Java's `Character.isLetterOrDigit(char)`: the general categories Lu, Ll,
/// Lt, Lm, Lo and Nd, for one UTF-16 unit. A character outside the BMP is
/// two units in Java, each a surrogate (category Cs): never a letter.
fn java_letter_or_digit(c: char) -> bool {
    if u32::from(c) > 0xFFFF {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::UppercaseLetter
            | GeneralCategory::LowercaseLetter
            | GeneralCategory::TitlecaseLetter
            | GeneralCategory::ModifierLetter
            | GeneralCategory::OtherLetter
            | GeneralCategory::DecimalNumber
    )
}

/// A character Java Nacos' `ParamUtils.isValid` accepts in a key.
pub fn key_char(c: char) -> bool {
    java_letter_or_digit(c) || matches!(c, '-' | '_' | ':' | '.')
}

/// A character Nacos 2.3+'s parameter filter accepts in a dataId or group
/// (`^[a-zA-Z0-9-_:\.]*$`).
fn filter_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')
}

/// Nacos' `[\w-]` (Java's `\w` is ASCII): a created namespace id, and any
/// namespace id under the parameter filter.
fn new_namespace_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn key_chars_ok(s: &str) -> bool {
    s.chars().all(key_char)
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// The key rules in force: `ParamUtils.isValid`, and Nacos 2.3+'s
/// parameter filter before it when that is on. The free functions below
/// use the process' rules ([`KeyRules::current`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyRules {
    pub param_filter: bool,
}

impl KeyRules {
    /// The rules this process runs with ([`set_param_filter`]).
    pub fn current() -> Self {
        KeyRules {
            param_filter: PARAM_FILTER.load(Ordering::Relaxed),
        }
    }

    /// The parameter filter on a dataId or group (a blank one passes it, as
    /// in Nacos, and is refused by the check after it).
    fn filter(self, param: &'static str, s: &str, max: usize) -> Result<(), InvalidInput> {
        if !self.param_filter || is_blank(s) {
            return Ok(());
        }
        if s.chars().count() > max {
            return Err(InvalidInput::FilterLength(param, max));
        }
        if !s.chars().all(filter_key_char) {
            return Err(InvalidInput::FilterChars(param));
        }
        Ok(())
    }

    /// A dataId or group (`param`): the filter, then `ParamUtils`' rule and
    /// the length.
    fn key(
        self,
        param: &'static str,
        s: &str,
        max: usize,
        invalid: fn(String) -> InvalidInput,
        too_long: InvalidInput,
    ) -> Result<(), InvalidInput> {
        self.filter(param, s, max)?;
        if is_blank(s) || !key_chars_ok(s) {
            return Err(invalid(s.to_string()));
        }
        if s.chars().count() > max {
            return Err(too_long);
        }
        Ok(())
    }

    pub fn data_id(self, s: &str) -> Result<(), InvalidInput> {
        let too_long = InvalidInput::DataIdTooLong;
        self.key("dataId", s, MAX_DATA_ID_LEN, InvalidInput::DataId, too_long)
    }

    pub fn group(self, s: &str) -> Result<(), InvalidInput> {
        let too_long = InvalidInput::GroupTooLong;
        self.key("group", s, MAX_GROUP_LEN, InvalidInput::Group, too_long)
    }

    /// The parameter filter alone on a key's parts, where Nacos runs
    /// nothing else (the v1 listener's `Listening-Configs`); Ok when off.
    pub fn filter_only(
        self,
        namespace: &str,
        group: &str,
        data_id: &str,
    ) -> Result<(), InvalidInput> {
        self.filter_namespace(namespace)?;
        self.filter("dataId", data_id, MAX_DATA_ID_LEN)?;
        self.filter("group", group, MAX_GROUP_LEN)
    }

    fn filter_namespace(self, s: &str) -> Result<(), InvalidInput> {
        if !self.param_filter || is_blank(s) {
            return Ok(());
        }
        const PARAM: &str = "namespaceId/tenant";
        if s.chars().count() > FILTER_MAX_NAMESPACE_LEN {
            return Err(InvalidInput::FilterLength(PARAM, FILTER_MAX_NAMESPACE_LEN));
        }
        if !s.chars().all(new_namespace_char) {
            return Err(InvalidInput::FilterChars(PARAM));
        }
        Ok(())
    }

    /// A namespace id (tenant) as a client sends it with a config ("" is
    /// the public namespace).
    pub fn namespace(self, s: &str) -> Result<(), InvalidInput> {
        if s.is_empty() {
            return Ok(());
        }
        self.filter_namespace(s)?;
        if !key_chars_ok(s) {
            return Err(InvalidInput::Namespace);
        }
        if s.chars().count() > MAX_NAMESPACE_LEN {
            return Err(InvalidInput::NamespaceTooLong);
        }
        Ok(())
    }
}

/// A dataId, by the process' [`KeyRules`].
pub fn data_id(s: &str) -> Result<(), InvalidInput> {
    KeyRules::current().data_id(s)
}

/// A group, by the process' [`KeyRules`].
pub fn group(s: &str) -> Result<(), InvalidInput> {
    KeyRules::current().group(s)
}

/// A namespace id (tenant) sent with a config, by the process' [`KeyRules`].
pub fn namespace(s: &str) -> Result<(), InvalidInput> {
    KeyRules::current().namespace(s)
}

/// A gray tag (`tag=` of a publish or delete, Nacos' `ParamUtils.checkParam(tag)`):
/// the key characters, at most 16 (the parameter filter has no rule for
/// tags). The caller trims it; blank means none.
pub fn tag(s: &str) -> Result<(), InvalidInput> {
    if !key_chars_ok(s) {
        return Err(InvalidInput::Tag(s.to_string()));
    }
    if s.chars().count() > MAX_TAG_LEN {
        return Err(InvalidInput::TagTooLong);
    }
    Ok(())
}

/// A namespace id someone asks to create through the namespace API:
/// letters, digits, `_` and `-` only (Nacos' `^[\w-]+`).
pub fn new_namespace_id(s: &str) -> Result<(), InvalidInput> {
    namespace(s)?;
    if !s.chars().all(new_namespace_char) {
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
        assert!(data_id("配置").is_ok());
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

    /// Java's `ParamUtils.isValid`: letters and digits of any script by
    /// general category, one UTF-16 unit at a time.
    #[test]
    fn keys_in_any_script_as_java_checks_them() {
        let rules = KeyRules::default();
        for ok in [
            "订单服务配置.yaml",
            "é.yaml",
            "ünïcödé-Ключ_κλειδί:キー.ｙａｍｌ",
            "한국어",
            "١٢٣",    // Arabic-Indic digits (Nd)
            "ǅ",      // titlecase letter (Lt)
            "ʰ",      // modifier letter (Lm)
            "ＡＢ１", // full-width letters and digit
        ] {
            assert!(rules.data_id(ok).is_ok(), "{ok}");
            assert!(rules.group(ok).is_ok(), "{ok}");
            assert!(rules.namespace(ok).is_ok(), "{ok}");
        }
        assert!(rules.group("支付组").is_ok());
        for bad in [
            "emoji🚀",  // outside the BMP: surrogates in Java
            "𠀀",       // CJK Extension B: also outside the BMP
            "e\u{301}", // a combining accent (Mn) is no letter
            "Ⅻ",        // letter number (Nl)
            "x²",       // other number (No)
            "a b",      // space
            "a/b",
            "a\u{3000}b", // ideographic space
            "全角，",     // full-width comma (Po)
        ] {
            assert_eq!(
                rules.data_id(bad),
                Err(InvalidInput::DataId(bad.into())),
                "{bad:?}"
            );
        }
        // Lengths count characters (as many as Java's UTF-16 units for
        // what passes).
        assert!(rules.data_id(&"配".repeat(256)).is_ok());
        assert_eq!(
            rules.data_id(&"配".repeat(257)),
            Err(InvalidInput::DataIdTooLong)
        );
        assert_eq!(
            rules.group(&"组".repeat(129)),
            Err(InvalidInput::GroupTooLong)
        );
        assert!(tag("灰度").is_ok());
        assert_eq!(tag("灰度🚀"), Err(InvalidInput::Tag("灰度🚀".into())));
        // A created namespace id stays Nacos' ASCII `[\w-]+`.
        assert!(new_namespace_id("命名空间").is_err());
    }

    /// Nacos 2.3+'s parameter filter: dataId and group `a-zA-Z0-9-_:.`,
    /// namespace id `[\w-]` and at most 64, with the filter's messages.
    #[test]
    fn the_parameter_filter_is_nacos_2_3s() {
        let rules = KeyRules { param_filter: true };
        assert!(rules.data_id("app-1_v2:x.yaml").is_ok());
        assert!(rules.group("DEFAULT_GROUP").is_ok());
        assert!(rules.namespace("dev_1-a").is_ok());
        assert!(rules.namespace("").is_ok());
        assert_eq!(
            rules.data_id("订单.yaml"),
            Err(InvalidInput::FilterChars("dataId"))
        );
        assert_eq!(
            rules.data_id("订单.yaml").unwrap_err().to_string(),
            "Param 'dataId' is illegal, illegal characters should not appear in the param."
        );
        assert_eq!(
            rules.group("支付组"),
            Err(InvalidInput::FilterChars("group"))
        );
        assert_eq!(rules.group("é"), Err(InvalidInput::FilterChars("group")));
        assert_eq!(
            rules.data_id(&"d".repeat(257)).unwrap_err().to_string(),
            "Param 'dataId' is illegal, the param length should not exceed 256."
        );
        assert_eq!(
            rules.namespace("ops.core"),
            Err(InvalidInput::FilterChars("namespaceId/tenant"))
        );
        assert_eq!(
            rules.namespace(&"n".repeat(65)),
            Err(InvalidInput::FilterLength("namespaceId/tenant", 64))
        );
        // A blank key passes the filter and is refused by the check after it.
        assert_eq!(rules.data_id(" "), Err(InvalidInput::DataId(" ".into())));
        assert_eq!(rules.data_id(""), Err(InvalidInput::DataId("".into())));
    }
}
