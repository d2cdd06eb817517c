use tacos::settings::{LogFormat, Settings};
use tracing_subscriber::EnvFilter;

fn main() {
    limit_malloc_arenas();
    // Flags, then `TACOS_*` variables, then the `--config` file, then defaults.
    let settings = tacos::settings::file::load().unwrap_or_else(|error| error.exit());
    if let Some(command) = &settings.command {
        // Operator tools print their results on stdout; logs go to stderr.
        init_logging(&settings, "warn", std::io::stderr);
        if let Err(error) = tacos::ops::run(command, &settings) {
            if tacos::ops::is_broken_pipe(&error) {
                // The reader of our output went away (`tacos routes | head`).
                return;
            }
            eprintln!("tacos {}: {error:#}", command.name());
            std::process::exit(1);
        }
        return;
    }
    init_logging(&settings, "info,openraft=warn", std::io::stdout);
    if let Some(config) = &settings.config {
        tracing::info!(config = %config.display(), "read settings from the config file");
    }
    if let Err(error) = tacos::server::run(settings) {
        eprintln!("tacos: {error:#}");
        std::process::exit(1);
    }
}

/// Logs at RUST_LOG's level (`default` without it) in the --log-format.
fn init_logging<W>(settings: &Settings, default: &str, writer: W)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    match settings.log_format {
        LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer)
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(writer)
            .init(),
    }
}

/// glibc gives each thread that allocates its own arena, up to 8 per core,
/// and memory freed in one arena is not reused by another: on a busy node
/// that is tens of MiB of RSS above what is live (docs/benchmarks.md,
/// "Memory"). Two arenas cost no throughput measurably. A
/// `MALLOC_ARENA_MAX` in the environment still wins.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a malloc parameter; called before any
        // other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}
