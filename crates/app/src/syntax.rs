//! Syntax checks of config contents by type: the console's publish, gray
//! publish and import rule (and its check while editing). It is the
//! application's, below the surfaces, though only the console asks it:
//! the Nacos APIs store any content, as Nacos does.
//!
//! Nacos itself stores any content under any type; a client that parses a
//! `json` config then fails at run time. The console refuses to publish
//! content that does not parse as its declared type, and says where the
//! first error is (line and column, 1-based) so the editor can point at it.
//! `text` and `html` are not checked.
//!
//! Parsers: `serde_json` (json), `serde_yaml_ng` (yaml, every document of a
//! multi-document stream; duplicate keys are errors), `toml` (toml),
//! `roxmltree` (xml well-formedness). Java `.properties` has almost no
//! syntax: every line is a key, a key and a value, a comment or blank; the
//! one thing `java.util.Properties.load` rejects is a malformed `\uXXXX`
//! escape, so that is the error, and duplicate keys are warnings.

use serde::Serialize;

/// Where a syntax error is, and what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("invalid {kind} at line {line}, column {column}: {message}")]
pub struct SyntaxError {
    /// The config type that was checked (`json`, `yaml`, ...).
    pub kind: &'static str,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

/// A check's outcome: `Ok` with warnings that do not block a publish, or
/// the first error.
pub type CheckResult = Result<Vec<String>, SyntaxError>;

/// Checks `content` as `config_type` (as `validate::config_type` names
/// types; anything unknown is text and passes).
pub fn check(config_type: &str, content: &str) -> CheckResult {
    match tacos_core::validate::config_type(config_type) {
        "json" => check_json(content),
        "yaml" => check_yaml(content),
        "toml" => check_toml(content),
        "xml" => check_xml(content),
        "properties" => check_properties(content),
        _ => Ok(Vec::new()),
    }
}

/// 1-based line and column (in characters) of byte offset `at`.
fn position(content: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(content.len());
    while !content.is_char_boundary(at) {
        at -= 1;
    }
    let before = &content[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, content[line_start..at].chars().count() + 1)
}

fn check_json(content: &str) -> CheckResult {
    match serde_json::from_str::<serde::de::IgnoredAny>(content) {
        Ok(_) => Ok(Vec::new()),
        Err(e) => {
            // serde_json appends " at line L column C" to its message.
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m)
                .to_string();
            Err(SyntaxError {
                kind: "json",
                line: e.line().max(1),
                column: e.column().max(1),
                message,
            })
        }
    }
}

fn check_yaml(content: &str) -> CheckResult {
    use serde::Deserialize;
    for document in serde_yaml_ng::Deserializer::from_str(content) {
        if let Err(e) = serde_yaml_ng::Value::deserialize(document) {
            let (line, column) = e
                .location()
                .map_or((1, 1), |l| (l.line().max(1), l.column().max(1)));
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m)
                .to_string();
            return Err(SyntaxError {
                kind: "yaml",
                line,
                column,
                message,
            });
        }
    }
    Ok(Vec::new())
}

fn check_toml(content: &str) -> CheckResult {
    match content.parse::<toml::Table>() {
        Ok(_) => Ok(Vec::new()),
        Err(e) => {
            let (line, column) = e
                .span()
                .map_or((1, 1), |span| position(content, span.start));
            Err(SyntaxError {
                kind: "toml",
                line,
                column,
                message: e.message().trim().to_string(),
            })
        }
    }
}

fn check_xml(content: &str) -> CheckResult {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    match roxmltree::Document::parse_with_options(content, options) {
        Ok(_) => Ok(Vec::new()),
        Err(e) => {
            let pos = e.pos();
            let message = e.to_string();
            let message = message
                .rsplit_once(" at ")
                .filter(|(_, at)| at.chars().all(|c| c.is_ascii_digit() || c == ':'))
                .map_or(message.as_str(), |(m, _)| m)
                .to_string();
            Err(SyntaxError {
                kind: "xml",
                line: pos.row as usize,
                column: pos.col as usize,
                message,
            })
        }
    }
}

/// Java `.properties`, as `java.util.Properties.load` reads it: logical
/// lines (a line ending in an odd number of backslashes continues on the
/// next), comments (`#`, `!`), keys ending at the first unescaped `=`, `:`
/// or whitespace.
fn check_properties(content: &str) -> CheckResult {
    let mut warnings = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let lines: Vec<&str> = content.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let first = i;
        let mut logical = String::new();
        // Offsets of each physical line's text within `logical`, to map an
        // error back to its physical line.
        let mut starts: Vec<(usize, usize, usize)> = Vec::new();
        loop {
            let raw = lines[i].strip_suffix('\r').unwrap_or(lines[i]);
            let trimmed = if i == first {
                raw
            } else {
                raw.trim_start_matches([' ', '\t', '\u{c}'])
            };
            let skipped = raw.chars().count() - trimmed.chars().count();
            let is_comment = i == first
                && matches!(
                    trimmed
                        .trim_start_matches([' ', '\t', '\u{c}'])
                        .chars()
                        .next(),
                    Some('#' | '!')
                );
            let trailing = trimmed.chars().rev().take_while(|&c| c == '\\').count();
            starts.push((logical.len(), i, skipped));
            if is_comment {
                break;
            }
            if trailing % 2 == 1 && i + 1 < lines.len() {
                logical.push_str(&trimmed[..trimmed.len() - 1]);
                i += 1;
                continue;
            }
            logical.push_str(trimmed);
            break;
        }
        i += 1;
        let body = logical.trim_start_matches([' ', '\t', '\u{c}']);
        if body.is_empty() {
            continue;
        }
        let indent = logical.len() - body.len();
        let locate = |offset: usize| {
            let (start, line, skipped) = starts
                .iter()
                .rev()
                .find(|(start, _, _)| *start <= offset)
                .copied()
                .unwrap_or((0, first, 0));
            let column = logical[start..offset].chars().count() + skipped + 1;
            (line + 1, column)
        };
        let key = properties_key(body, indent, &locate)?;
        if let Some(previous) = seen.insert(key.clone(), first + 1) {
            warnings.push(format!(
                "key {key:?} on line {} repeats line {previous}; the later value wins",
                first + 1
            ));
        }
        properties_unescape(body, indent, &locate)?;
    }
    Ok(warnings)
}

/// The key of a logical line (unescaped), checking its escapes.
fn properties_key(
    body: &str,
    indent: usize,
    locate: &dyn Fn(usize) -> (usize, usize),
) -> Result<String, SyntaxError> {
    let mut end = body.len();
    let mut escaped = false;
    for (at, c) in body.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' | ' ' | '\t' | '\u{c}' => {
                end = at;
                break;
            }
            _ => {}
        }
    }
    properties_unescape(&body[..end], indent, locate)
}

/// Unescapes `text` (which starts at byte `indent` of the logical line),
/// failing on a malformed `\uXXXX`.
fn properties_unescape(
    text: &str,
    indent: usize,
    locate: &dyn Fn(usize) -> (usize, usize),
) -> Result<String, SyntaxError> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some((_, 'u')) => {
                let digits: String = (0..4)
                    .filter_map(|_| chars.next().map(|(_, d)| d))
                    .collect();
                let code = (digits.len() == 4)
                    .then(|| u32::from_str_radix(&digits, 16).ok())
                    .flatten();
                match code {
                    Some(code) => out.push(char::from_u32(code).unwrap_or('\u{fffd}')),
                    None => {
                        let (line, column) = locate(indent + at);
                        return Err(SyntaxError {
                            kind: "properties",
                            line,
                            column,
                            message: format!(
                                "malformed \\uxxxx escape \\u{digits}: four hex digits must follow \\u"
                            ),
                        });
                    }
                }
            }
            Some((_, 't')) => out.push('\t'),
            Some((_, 'n')) => out.push('\n'),
            Some((_, 'r')) => out.push('\r'),
            Some((_, 'f')) => out.push('\u{c}'),
            Some((_, other)) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(config_type: &str, content: &str) -> SyntaxError {
        check(config_type, content).expect_err("should be refused")
    }

    #[test]
    fn json_errors_name_line_and_column() {
        assert!(check("json", "{\"a\": [1, 2]}").is_ok());
        let e = error("json", "{\n  \"a\": 1,\n  \"b\": \n}");
        assert_eq!((e.kind, e.line), ("json", 4));
        assert!(e.message.contains("expected value"), "{e}");
        assert_eq!(error("JSON", "{not json}").line, 1);
        assert!(check("json", "").is_err());
        // Trailing garbage is an error too.
        assert!(check("json", "{} x").is_err());
    }

    #[test]
    fn yaml_checks_every_document_and_duplicate_keys() {
        assert!(check("yaml", "a: 1\nb:\n  - x\n  - y\n").is_ok());
        assert!(check("yml", "a: 1\n---\nb: 2\n").is_ok());
        let e = error("yaml", "a: 1\nb: [1, 2\nc: 3\n");
        assert_eq!(e.kind, "yaml");
        assert!(e.line >= 2, "{e}");
        let e = error("yaml", "a: 1\n---\nb: : :\n  - x\n");
        assert!(e.line >= 3, "{e}");
        let e = error("yaml", "a: 1\na: 2\n");
        assert!(e.message.contains("duplicate"), "{e}");
    }

    #[test]
    fn toml_and_xml() {
        assert!(check("toml", "[server]\nport = 8080\n").is_ok());
        let e = error("toml", "[server]\nport = \n");
        assert_eq!((e.kind, e.line), ("toml", 2));
        assert!(check("xml", "<?xml version=\"1.0\"?>\n<a><b x=\"1\"/></a>").is_ok());
        let e = error("xml", "<a>\n  <b></c>\n</a>");
        assert_eq!((e.kind, e.line), ("xml", 2));
        assert!(!e.message.is_empty());
        assert!(check("xml", "<a></a><b></b>").is_err());
    }

    #[test]
    fn properties_escapes_continuations_and_duplicates() {
        let ok = "# comment\n! also\nserver.port=8080\nname : tacos\nkey value with spaces\n\
                  multi = one, \\\n    two\nunicode=\\u00e9t\\u00E9\nempty=\n";
        assert_eq!(check("properties", ok), Ok(Vec::new()));
        let e = error("properties", "a=1\nb=\\u12G4\n");
        assert_eq!((e.kind, e.line, e.column), ("properties", 2, 3));
        // On a continuation line, the error is on that physical line.
        let e = error("properties", "a=one \\\n   two \\u12\n");
        assert_eq!((e.line, e.column), (2, 8), "{e}");
        // A comment's escapes do not count; a comment does not continue.
        assert!(check("properties", "# \\u12 \\\nb=2\n").is_ok());
        let warnings = check("properties", "a=1\nb=2\na=3\n").unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("line 3 repeats line 1"),
            "{warnings:?}"
        );
        // Escaped separators belong to the key.
        let warnings = check("properties", "a\\=b=1\na=2\n").unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn text_and_html_are_not_checked() {
        assert!(check("text", "{ not json").is_ok());
        assert!(check("html", "<p>unclosed").is_ok());
        assert!(check("", "anything").is_ok());
    }

    #[test]
    fn positions_are_in_characters() {
        assert_eq!(position("ab\ncdé f", 8), (2, 5));
        assert_eq!(position("x", 99), (1, 2));
    }
}
