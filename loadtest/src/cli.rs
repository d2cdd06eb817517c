//! The command line of the goose scenario binaries: goose's own options (`--host`,
//! `-u`, `-r`, `-t`, `--report-file`, ...) plus this crate's scenario options
//! ([`ScenarioArgs`]) plus a scenario's own (`E`, e.g. the listen scenario's), all in
//! one `--help`.
//!
//! Each scenario option also has an environment variable (the older way to set it,
//! kept working); a flag wins over its variable.

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use goose::config::GooseConfiguration;

/// Options every scenario shares.
#[derive(Debug, Clone, Default, PartialEq, Args)]
#[command(next_help_heading = "Scenario (loadtest)")]
pub struct ScenarioArgs {
    /// Requests per second each user sends at most (0 = no limit) [env: LOADTEST_RATE_PER_USER]
    ///
    /// Every user paces itself: slots 1/N s apart, the first at a random phase, and no
    /// burst to catch up after a slow answer. So `-u U --rate-per-user N` offers at most
    /// U x N requests/s, and less only when answers take longer than 1/N s.
    #[arg(long, value_name = "N")]
    pub rate_per_user: Option<f64>,
    /// Number of dataIds the scenario spreads over [env: LOADTEST_KEYS]
    ///
    /// set: 100, set2: 10000, query: 1 (give e.g. 1000 to read many keys; each is seeded
    /// once before the users start), listen: 10.
    #[arg(long, value_name = "N")]
    pub keys: Option<usize>,
    /// The dataIds are <PREFIX><0..keys> [env: LOADTEST_KEY_PREFIX]
    #[arg(long, value_name = "PREFIX")]
    pub key_prefix: Option<String>,
    /// Namespace sent as `tenant` ("" = public) [env: LOADTEST_TENANT]
    #[arg(long, value_name = "ID")]
    pub tenant: Option<String>,
    /// Pad each published content to at least this many bytes [env: LOADTEST_CONTENT_BYTES]
    #[arg(long, value_name = "BYTES")]
    pub content_bytes: Option<usize>,
}

impl ScenarioArgs {
    /// The flag that stands for environment variable `name`, as text, if given.
    pub fn lookup(&self, name: &str) -> Option<String> {
        match name {
            "LOADTEST_RATE_PER_USER" => self.rate_per_user.map(|r| r.to_string()),
            "LOADTEST_KEYS" => self.keys.map(|k| k.to_string()),
            "LOADTEST_KEY_PREFIX" => self.key_prefix.clone(),
            "LOADTEST_TENANT" => self.tenant.clone(),
            "LOADTEST_CONTENT_BYTES" => self.content_bytes.map(|b| b.to_string()),
            _ => None,
        }
    }
}

/// A scenario with no options of its own.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct NoArgs {}

/// The whole command line of a scenario binary.
#[derive(Debug, Parser)]
pub struct Cli<E: Args + FromArgMatches> {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub extra: E,
    #[command(flatten)]
    pub goose: GooseConfiguration,
}

/// Parses the process's command line; prints help (`-h`, `--help`) or the error and
/// exits when asked or when it is invalid.
pub fn parse<E: Args + FromArgMatches>(about: &str) -> Cli<E> {
    let args: Vec<String> = std::env::args().collect();
    match try_parse_from::<E>(about, &args) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    }
}

/// Parses `args` (the program name first).
pub fn try_parse_from<E: Args + FromArgMatches>(
    about: &str,
    args: &[String],
) -> Result<Cli<E>, clap::Error> {
    let name = args
        .first()
        .map(std::path::Path::new)
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "loadtest".into());
    // clap wants a 'static name; this runs once per process.
    let name: &'static str = Box::leak(name.into_boxed_str());
    let command = Cli::<E>::command()
        .name(name)
        .bin_name(name)
        .about(about.to_string())
        .after_help(
            "Scenario options may also come from their environment variables; a flag wins. \
             Goose's options are described at https://book.goose.rs/getting-started/runtime-options.html",
        );
    let matches = command.try_get_matches_from(args)?;
    Cli::<E>::from_arg_matches(&matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scenario_and_goose_options_together() {
        let cli = try_parse_from::<NoArgs>(
            "test",
            &args(&[
                "http_config_set",
                "--host",
                "http://127.0.0.1:1",
                "-u",
                "8",
                "-t",
                "5s",
                "--rate-per-user",
                "12.5",
                "--keys",
                "1000",
                "--report-file",
                "r.json",
            ]),
        )
        .unwrap();
        assert_eq!(cli.scenario.rate_per_user, Some(12.5));
        assert_eq!(cli.scenario.keys, Some(1000));
        assert_eq!(cli.goose.users, Some(8));
        assert_eq!(cli.goose.run_time.as_deref(), Some("5s"));
        assert_eq!(cli.goose.host.as_deref(), Some("http://127.0.0.1:1"));
        assert_eq!(cli.goose.report_file, vec!["r.json".to_string()]);
        assert_eq!(
            cli.scenario.lookup("LOADTEST_RATE_PER_USER").as_deref(),
            Some("12.5")
        );
        assert_eq!(
            cli.scenario.lookup("LOADTEST_KEYS").as_deref(),
            Some("1000")
        );
        assert_eq!(cli.scenario.lookup("LOADTEST_TENANT"), None);
    }

    #[test]
    fn unknown_flags_are_refused() {
        assert!(try_parse_from::<NoArgs>("t", &args(&["x", "--no-such-flag"])).is_err());
    }

    #[test]
    fn help_lists_both_kinds() {
        let e = try_parse_from::<NoArgs>("about line", &args(&["x", "--help"])).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("about line"));
        assert!(text.contains("--rate-per-user"));
        assert!(text.contains("--users"));
        assert!(text.contains("--report-file"));
    }
}
