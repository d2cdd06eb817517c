//! The optional `--config FILE` (or `TACOS_CONFIG`): a TOML file whose keys
//! are the long flag names without their dashes (`http-port = 8848`,
//! `data-dir = "/var/lib/tacos"`; `http_port` is accepted as well).
//!
//! clap parses the flags and the environment first. Every key of the file
//! is checked (known key, TOML type, value), and the keys whose setting is
//! still at its default (or unset) are then added as if given as flags, and
//! the whole is parsed again. So a flag beats its environment variable, which
//! beats the file, which beats the default; [`Settings::validate`] runs on
//! the result as usual, so its ranges apply to file values too.

use std::any::TypeId;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command, CommandFactory, FromArgMatches};

use super::Settings;

/// The id (and long flag) of the setting that names the file.
const CONFIG: &str = "config";

/// Why the settings could not be put together.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Bad flags or environment (or `--help`/`--version`): clap's own error.
    #[error(transparent)]
    Cli(#[from] clap::Error),
    /// A problem with the config file.
    #[error(transparent)]
    File(#[from] ConfigFileError),
}

impl LoadError {
    /// Prints the error and exits: clap's errors as clap does (exit 0 for
    /// `--help`/`--version`, 2 for usage errors), file errors with exit 2.
    pub fn exit(self) -> ! {
        match self {
            LoadError::Cli(error) => error.exit(),
            LoadError::File(error) => {
                eprintln!("tacos: {error}");
                std::process::exit(2)
            }
        }
    }
}

/// A problem with the config file; every one names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {} is not valid TOML: {message}", path.display())]
    Syntax { path: PathBuf, message: String },
    #[error(
        "config file {}: unknown setting `{key}`{}; the settings are: {}",
        path.display(),
        suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(),
        valid.join(", ")
    )]
    UnknownKey {
        path: PathBuf,
        key: String,
        suggestion: Option<String>,
        valid: Vec<String>,
    },
    #[error("config file {}: `{key}` cannot be set in a config file", path.display())]
    NotAllowed { path: PathBuf, key: String },
    #[error("config file {}: `{key}` is given twice (as `{first}` and `{second}`)", path.display())]
    Duplicate {
        path: PathBuf,
        key: String,
        first: String,
        second: String,
    },
    #[error("config file {}: `{key}` must be {expected}, not {found}", path.display())]
    WrongType {
        path: PathBuf,
        key: String,
        expected: &'static str,
        found: String,
    },
    #[error("config file {}: `{key} = {value}` is invalid: {reason}", path.display())]
    InvalidValue {
        path: PathBuf,
        key: String,
        value: String,
        reason: String,
    },
    /// The file's settings clash with the others (e.g. `init = true` in the
    /// file and `--join` on the command line).
    #[error(
        "config file {}: {message} (settings from the file are checked as if given as flags)",
        path.display()
    )]
    Clash { path: PathBuf, message: String },
}

/// The settings from the process's arguments, environment and config file.
pub fn load() -> Result<Settings, LoadError> {
    load_from(std::env::args_os())
}

/// The settings from `args` (the first is the program name), the process's
/// environment and the config file named by `--config` or `TACOS_CONFIG`.
pub fn load_from<I, T>(args: I) -> Result<Settings, LoadError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    load_with(Settings::command(), args)
}

/// [`load_from`] with the command given (tests change where the
/// environment comes from).
fn load_with<I, T>(command: Command, args: I) -> Result<Settings, LoadError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let matches = command.clone().try_get_matches_from(&args)?;
    let Some(path) = matches.get_one::<PathBuf>(CONFIG).cloned() else {
        return Ok(Settings::from_arg_matches(&matches)?);
    };
    let table = read(&path)?;
    let extra = file_args(&command, &matches, &path, table)?;
    if extra.is_empty() {
        return Ok(Settings::from_arg_matches(&matches)?);
    }
    let mut merged = Vec::with_capacity(args.len() + extra.len() + 1);
    merged.push(args.first().cloned().unwrap_or_else(|| "tacos".into()));
    merged.extend(extra);
    merged.extend(args.into_iter().skip(1));
    let matches = command
        .try_get_matches_from(merged)
        .map_err(|error| ConfigFileError::Clash {
            path,
            message: clap_message(&error),
        })?;
    Ok(Settings::from_arg_matches(&matches)?)
}

/// Reads and parses the file.
fn read(path: &Path) -> Result<toml::Table, ConfigFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    text.parse::<toml::Table>()
        .map_err(|error| ConfigFileError::Syntax {
            path: path.to_owned(),
            message: error.to_string().trim_end().to_owned(),
        })
}

/// Checks every key of the file and returns `--key=value` flags for those
/// whose setting neither a flag nor the environment gave.
fn file_args(
    command: &Command,
    matches: &ArgMatches,
    path: &Path,
    table: toml::Table,
) -> Result<Vec<OsString>, ConfigFileError> {
    let settable: Vec<&Arg> = command
        .get_arguments()
        .filter(|arg| arg.get_long().is_some())
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        .collect();
    let mut written_as: BTreeMap<String, String> = BTreeMap::new();
    let mut extra = Vec::new();
    for (written, value) in table {
        let key = written.replace('_', "-");
        if let Some(first) = written_as.insert(key.clone(), written.clone()) {
            return Err(ConfigFileError::Duplicate {
                path: path.to_owned(),
                key,
                first,
                second: written,
            });
        }
        let Some(arg) = settable.iter().find(|arg| arg.get_long() == Some(&key)) else {
            let valid: Vec<String> = settable
                .iter()
                .filter(|arg| arg.get_id() != CONFIG)
                .filter_map(|arg| arg.get_long().map(str::to_owned))
                .collect();
            return Err(ConfigFileError::UnknownKey {
                path: path.to_owned(),
                suggestion: closest(&key, &valid),
                key: written,
                valid,
            });
        };
        if arg.get_id() == CONFIG {
            return Err(ConfigFileError::NotAllowed {
                path: path.to_owned(),
                key: written,
            });
        }
        let flag = to_flag(arg, &key, value).map_err(|problem| problem.at(path, &written))?;
        let given = matches!(
            matches.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        );
        if !given {
            extra.extend(flag);
        }
    }
    Ok(extra)
}

/// What a file value must be, from the setting's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Integer,
    String,
}

impl Kind {
    fn of(arg: &Arg) -> Kind {
        if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
            return Kind::Bool;
        }
        let type_id = arg.get_value_parser().type_id();
        let integers = [
            TypeId::of::<u8>(),
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
            TypeId::of::<i8>(),
            TypeId::of::<i16>(),
            TypeId::of::<i32>(),
            TypeId::of::<i64>(),
            TypeId::of::<isize>(),
        ];
        if integers.iter().any(|id| type_id == *id) {
            Kind::Integer
        } else {
            Kind::String
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Kind::Bool => "true or false",
            Kind::Integer => "an integer",
            Kind::String => "a string",
        }
    }
}

/// A problem with one value, before the file and key are attached.
enum ValueProblem {
    WrongType {
        expected: &'static str,
        found: String,
    },
    Invalid {
        value: String,
        reason: String,
    },
}

impl ValueProblem {
    fn at(self, path: &Path, key: &str) -> ConfigFileError {
        let (path, key) = (path.to_owned(), key.to_owned());
        match self {
            ValueProblem::WrongType { expected, found } => ConfigFileError::WrongType {
                path,
                key,
                expected,
                found,
            },
            ValueProblem::Invalid { value, reason } => ConfigFileError::InvalidValue {
                path,
                key,
                value,
                reason,
            },
        }
    }
}

/// The flag a file value stands for (`None` for `false` of a switch: the
/// same as leaving it out), checked with the setting's own value parser.
fn to_flag(arg: &Arg, key: &str, value: toml::Value) -> Result<Option<OsString>, ValueProblem> {
    let kind = Kind::of(arg);
    let text = match (kind, &value) {
        (Kind::Bool, toml::Value::Boolean(on)) => {
            return Ok(on.then(|| format!("--{key}").into()));
        }
        (Kind::Integer, toml::Value::Integer(n)) => n.to_string(),
        (Kind::String, toml::Value::String(s)) => s.clone(),
        _ => {
            return Err(ValueProblem::WrongType {
                expected: kind.expected(),
                found: describe(&value),
            })
        }
    };
    // The setting's value parser, alone (no environment, no conflicts).
    let probe = Arg::new("value")
        .long("value")
        .action(ArgAction::Set)
        .value_parser(arg.get_value_parser().clone());
    let parsed = Command::new("tacos")
        .arg(probe)
        .try_get_matches_from([OsString::from("tacos"), format!("--value={text}").into()]);
    if let Err(error) = parsed {
        let reason = match std::error::Error::source(&error) {
            Some(cause) => cause.to_string(),
            None if text.is_empty() => "must not be empty".to_owned(),
            None => error.kind().to_string(),
        };
        return Err(ValueProblem::Invalid {
            value: value.to_string(),
            reason,
        });
    }
    Ok(Some(format!("--{key}={text}").into()))
}

/// "a string (\"x\")", "an integer (5)", "a table", ... for messages.
fn describe(value: &toml::Value) -> String {
    let kind = value.type_str();
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    match value {
        toml::Value::Array(_) | toml::Value::Table(_) => format!("{article} {kind}"),
        other => format!("{article} {kind} ({other})"),
    }
}

/// clap's message without its `error: ` prefix and usage lines.
fn clap_message(error: &clap::Error) -> String {
    // The message is the first paragraph: one line, or a line and the
    // list it announces ("the following required arguments were not
    // provided:" and the flags, indented), before the usage.
    let rendered = error.render().to_string();
    let paragraph: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let text = paragraph.join(" ");
    text.strip_prefix("error: ").unwrap_or(&text).to_owned()
}

/// The valid key closest to a misspelt one, if any is close.
fn closest(key: &str, valid: &[String]) -> Option<String> {
    valid
        .iter()
        .map(|candidate| (edit_distance(key, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.clone())
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command with no environment variables, so a `TACOS_*` variable
    /// set where the tests run cannot change the outcome.
    fn no_env() -> Command {
        Settings::command().mut_args(|arg| arg.env(None::<&'static str>))
    }

    /// Writes `text` to a `tacos.toml` in a fresh temp dir.
    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tacos.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn load(command: Command, path: &Path, flags: &[&str]) -> Result<Settings, LoadError> {
        let mut args: Vec<OsString> = vec!["tacos".into(), "--config".into(), path.into()];
        args.extend(flags.iter().map(OsString::from));
        load_with(command, args)
    }

    fn file_error(result: Result<Settings, LoadError>) -> ConfigFileError {
        match result {
            Err(LoadError::File(error)) => error,
            other => panic!("expected a config file error, got {other:?}"),
        }
    }

    #[test]
    fn file_beats_default_and_flag_beats_file() {
        let (_dir, path) = file(
            r#"
            http-port = 9100
            data-dir = "/var/lib/tacos"
            history_limit = 7
            init = true
            cluster-token = "-starts-with-a-dash"
            grpc-workers = 3
            "#,
        );
        let settings = load(no_env(), &path, &[]).unwrap();
        assert_eq!(settings.http_port, 9100);
        assert_eq!(settings.data_dir, Path::new("/var/lib/tacos"));
        assert_eq!(settings.history_limit, 7);
        assert!(settings.init);
        assert_eq!(
            settings.cluster_token.as_deref(),
            Some("-starts-with-a-dash")
        );
        assert_eq!(settings.grpc_workers, Some(3));
        assert_eq!(settings.config.as_deref(), Some(path.as_path()));
        // Untouched settings keep their defaults.
        assert_eq!(settings.node_id, 1);
        assert_eq!(settings.grpc_port, None);

        let settings = load(
            no_env(),
            &path,
            &["--http-port", "9200", "--grpc-workers=5"],
        )
        .unwrap();
        assert_eq!(settings.http_port, 9200);
        assert_eq!(settings.grpc_workers, Some(5));
        assert_eq!(settings.history_limit, 7);
    }

    #[test]
    fn env_beats_file_and_flag_beats_env() {
        // clap reads the environment itself. Rather than set a variable
        // (racy with tests running in parallel), point `--advertise` at a
        // variable that is always set.
        let from_env = std::env::var("PATH").expect("PATH is set");
        let command = no_env().mut_arg("advertise", |arg| arg.env("PATH"));
        let (_dir, path) = file("advertise = \"from-file\"\nhttp-port = 9300\n");
        let settings = load(command.clone(), &path, &[]).unwrap();
        assert_eq!(settings.advertise, Some(from_env));
        assert_eq!(settings.http_port, 9300);
        let settings = load(command, &path, &["--advertise", "from-flag"]).unwrap();
        assert_eq!(settings.advertise.as_deref(), Some("from-flag"));
    }

    #[test]
    fn validation_applies_to_file_values() {
        let (_dir, path) = file("history-limit = 0\n");
        let settings = load(no_env(), &path, &[]).unwrap();
        assert_eq!(settings.validate().unwrap_err().name, "history-limit");
        let settings = load(no_env(), &path, &["--history-limit", "5"]).unwrap();
        settings.validate().unwrap();
    }

    #[test]
    fn a_false_switch_is_the_default_and_clashes_are_reported() {
        let (_dir, path) = file("init = false\n");
        assert!(!load(no_env(), &path, &["--join", "h:1"]).unwrap().init);
        let (_dir, path) = file("init = true\n");
        let error = file_error(load(no_env(), &path, &["--join", "h:1"]));
        let message = error.to_string();
        assert!(
            message.contains("--init") && message.contains("--join"),
            "{message}"
        );
        assert!(message.contains(&path.display().to_string()), "{message}");
    }

    #[test]
    fn unknown_keys_are_named_with_a_suggestion() {
        let (_dir, path) = file("htp-port = 1\n");
        let error = file_error(load(no_env(), &path, &[]));
        let message = error.to_string();
        match &error {
            ConfigFileError::UnknownKey {
                key,
                suggestion,
                valid,
                ..
            } => {
                assert_eq!(key, "htp-port");
                assert_eq!(suggestion.as_deref(), Some("http-port"));
                assert!(valid.iter().any(|k| k == "snapshot-entries"), "{valid:?}");
                assert!(
                    !valid.iter().any(|k| k == "config" || k == "help"),
                    "{valid:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("did you mean `http-port`"), "{message}");

        let (_dir, path) = file("[server]\nport = 1\n");
        let error = file_error(load(no_env(), &path, &[]));
        assert!(
            matches!(&error, ConfigFileError::UnknownKey { key, suggestion: None, .. } if key == "server"),
            "{error:?}"
        );

        let (_dir, path) = file("config = \"other.toml\"\n");
        let error = file_error(load(no_env(), &path, &[]));
        assert!(
            matches!(error, ConfigFileError::NotAllowed { .. }),
            "{error:?}"
        );

        let (_dir, path) = file("http-port = 1\nhttp_port = 2\n");
        let error = file_error(load(no_env(), &path, &[]));
        assert!(
            matches!(error, ConfigFileError::Duplicate { .. }),
            "{error:?}"
        );
    }

    #[test]
    fn wrong_types_and_bad_values_are_named() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "http-port = \"8848\"",
                "http-port",
                "must be an integer, not a string (\"8848\")",
            ),
            (
                "data-dir = 5",
                "data-dir",
                "must be a string, not an integer (5)",
            ),
            ("init = \"yes\"", "init", "must be true or false"),
            (
                "bind = [\"127.0.0.1\"]",
                "bind",
                "must be a string, not an array",
            ),
            (
                "node-id = 1.5",
                "node-id",
                "must be an integer, not a float (1.5)",
            ),
            (
                "http-port = 70000",
                "http-port",
                "`http-port = 70000` is invalid: 70000 is not in 0..=65535",
            ),
            (
                "bind = \"localhost:1\"",
                "bind",
                "`bind = \"localhost:1\"` is invalid: invalid IP address syntax",
            ),
            ("data-dir = \"\"", "data-dir", "is invalid"),
            ("history-limit = -1", "history-limit", "is invalid"),
        ];
        for (text, key, expected) in cases {
            let (_dir, path) = file(text);
            let error = file_error(load(no_env(), &path, &[]));
            let message = error.to_string();
            assert!(
                matches!(&error, ConfigFileError::WrongType { key: k, .. } | ConfigFileError::InvalidValue { key: k, .. } if k == key),
                "{text}: {error:?}"
            );
            assert!(message.contains(expected), "{text}: {message}");
            assert!(
                message.contains(&path.display().to_string()),
                "{text}: {message}"
            );
        }
        // A bad value is refused even where a flag overrides it.
        let (_dir, path) = file("http-port = \"x\"\n");
        let error = file_error(load(no_env(), &path, &["--http-port", "9000"]));
        assert!(
            matches!(error, ConfigFileError::WrongType { .. }),
            "{error:?}"
        );
    }

    #[test]
    fn missing_and_malformed_files_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.toml");
        let error = file_error(load(no_env(), &missing, &[]));
        assert!(matches!(error, ConfigFileError::Read { .. }), "{error:?}");
        assert!(
            error.to_string().contains(&missing.display().to_string()),
            "{error}"
        );
        let (_dir, path) = file("http-port = \n");
        let error = file_error(load(no_env(), &path, &[]));
        assert!(matches!(error, ConfigFileError::Syntax { .. }), "{error:?}");
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
    }

    #[test]
    fn no_config_file_is_plain_clap() {
        let settings = load_with(no_env(), ["tacos", "--http-port", "9400"]).unwrap();
        assert_eq!(settings.http_port, 9400);
        assert_eq!(settings.config, None);
        assert!(matches!(
            load_with(no_env(), ["tacos", "--bogus"]),
            Err(LoadError::Cli(_))
        ));
        let (_dir, path) = file("");
        assert_eq!(load(no_env(), &path, &[]).unwrap().http_port, 8848);
    }

    /// docs/tacos.example.toml has every setting, commented out, with its
    /// default where it has one, and each line is a valid value.
    #[test]
    fn the_example_file_lists_every_setting_with_its_default() {
        let example = include_str!("../../docs/tacos.example.toml");
        let command = no_env();
        let mut listed = Vec::new();
        for line in example.lines() {
            let Some(setting) = line.strip_prefix("# ").filter(|l| l.contains(" = ")) else {
                continue;
            };
            let table: toml::Table = setting.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
            let (key, value) = table.iter().next().unwrap();
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(key))
                .unwrap_or_else(|| panic!("{line}: no such setting"));
            if let [default] = arg.get_default_values() {
                let shown = match value {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                assert_eq!(shown, default.to_string_lossy(), "{line}: not the default");
            }
            let (_dir, path) = file(setting);
            load(no_env(), &path, &[]).unwrap_or_else(|e| panic!("{line}: {e}"));
            listed.push(key.clone());
        }
        let expected: Vec<String> = command
            .get_arguments()
            .filter_map(|arg| arg.get_long())
            .filter(|long| *long != CONFIG)
            .map(str::to_owned)
            .collect();
        assert_eq!(
            listed, expected,
            "the example should list every setting in order"
        );
    }

    #[test]
    fn suggestions_are_close_only() {
        let valid = vec!["http-port".to_owned(), "bind".to_owned()];
        assert_eq!(closest("http-prot", &valid).as_deref(), Some("http-port"));
        assert_eq!(closest("bnid", &valid).as_deref(), Some("bind"));
        assert_eq!(closest("completely-else", &valid), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
