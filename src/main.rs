use tacos::settings::{LogFormat, Settings};
use tracing_subscriber::EnvFilter;

fn main() {
    tune_malloc();
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

/// Two glibc malloc settings that keep freed memory from staying resident
/// (docs/benchmarks.md, "Memory"); either one set in the environment
/// (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`) still wins.
///
/// - Arenas: glibc gives each thread that allocates its own arena, up to 8
///   per core, and memory freed in one arena is not reused by another: on a
///   busy node that is tens of MiB above what is live. Two arenas cost no
///   throughput measurably.
/// - The mmap threshold: glibc raises it to the size of the largest block
///   it has freed (up to 32 MiB), after which such blocks come from an arena
///   and stay resident when freed. Each password check (argon2, 19 MiB of
///   working memory) then left 20 MiB behind in whichever arena its thread
///   used: half of an idle node's RSS, and 20 MiB more after the first
///   login. A fixed 1 MiB threshold sends large, short-lived buffers to
///   mmap, which returns them at free.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            // SAFETY: mallopt only sets a malloc parameter; called before
            // any other thread exists.
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, 2);
            }
        }
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
            // SAFETY: as above.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
            }
        }
    }
}
