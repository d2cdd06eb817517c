use tracing_subscriber::EnvFilter;

fn main() {
    // Flags, then `TACOS_*` variables, then the `--config` file, then defaults.
    let settings = tacos::settings::file::load().unwrap_or_else(|error| error.exit());
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,openraft=warn")),
        )
        .init();
    if let Some(config) = &settings.config {
        tracing::info!(config = %config.display(), "read settings from the config file");
    }
    if let Err(error) = tacos::server::run(settings) {
        eprintln!("tacos: {error:#}");
        std::process::exit(1);
    }
}
