use tacos::settings::LogFormat;
use tracing_subscriber::EnvFilter;

fn main() {
    // Flags, then `TACOS_*` variables, then the `--config` file, then defaults.
    let settings = tacos::settings::file::load().unwrap_or_else(|error| error.exit());
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,openraft=warn"));
    match settings.log_format {
        LogFormat::Text => tracing_subscriber::fmt().with_env_filter(filter).init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .init(),
    }
    if let Some(config) = &settings.config {
        tracing::info!(config = %config.display(), "read settings from the config file");
    }
    if let Err(error) = tacos::server::run(settings) {
        eprintln!("tacos: {error:#}");
        std::process::exit(1);
    }
}
