use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    let settings = tacos::settings::Settings::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,openraft=warn")),
        )
        .init();
    if let Err(error) = tacos::server::run(settings) {
        eprintln!("tacos: {error:#}");
        std::process::exit(1);
    }
}
