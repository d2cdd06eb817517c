//! `tacos routes [--json]`: every HTTP route with what it needs (the same
//! declarations the server registers and its guard enforces; see
//! `api::guard`). Tests walk this table against a running server.

use crate::api::guard::{declared, Need};

/// `tacos routes`.
#[derive(Debug, Clone, clap::Args)]
pub struct RoutesArgs {
    /// Print JSON (`[{method, path, need}]`) instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &RoutesArgs) -> anyhow::Result<()> {
    let routes = declared();
    if args.json {
        super::print_out(&format!("{}\n", serde_json::to_string_pretty(&routes)?))?;
        return Ok(());
    }
    let mut out = String::new();
    for route in routes {
        let need = match route.need {
            Need::Public => "public",
            Need::OpenApi => "open-api (login when --open-api-auth)",
            Need::Login => "login",
            Need::Admin => "admin",
        };
        out.push_str(&format!(
            "{:<7} {:<45} {need}\n",
            route.method.as_str(),
            route.path
        ));
    }
    super::print_out(&out)?;
    Ok(())
}
