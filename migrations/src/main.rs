//! `tacos-migrate`: moves an r-nacos 0.4.x data dir into Tacos.
//!
//! `tacos-migrate --from nacos_db --dry-run` reads the r-nacos dir (without modifying it)
//! and prints what would move. Writing the Tacos data dir is not implemented yet.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Parser;
use tacos_migrate::rnacos::{self, ReadOptions, Source};

/// Move the data of an r-nacos 0.4.x server (sled `nacos_db` dir) into Tacos.
#[derive(Debug, Parser)]
#[command(name = "tacos-migrate", version)]
struct Args {
    /// The r-nacos data dir (the one holding `conf` and `db`, by default `nacos_db`).
    /// It is only read: the tool opens a temporary copy.
    #[arg(long, value_name = "DIR")]
    from: PathBuf,
    /// The Tacos data dir to write.
    #[arg(long, value_name = "DIR", required_unless_present = "dry_run")]
    to: Option<PathBuf>,
    /// Only print what would move; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Leave out entries that cannot be decoded (they are listed) instead of stopping.
    #[arg(long)]
    skip_bad: bool,
    /// Where to put the temporary copy of the r-nacos dir (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let options = ReadOptions {
        skip_bad: args.skip_bad,
        work_dir: args.work_dir.clone(),
    };
    let source = rnacos::read(&args.from, &options)
        .with_context(|| format!("reading r-nacos data dir {}", args.from.display()))?;
    if args.dry_run {
        print!("{}", report(&args, &source));
        return Ok(());
    }
    // Placeholder: the writer of the Tacos data dir replaces this.
    bail!("writing the Tacos data dir is not implemented yet; use --dry-run to see what would move")
}

/// The dry-run report. Never shows passwords.
fn report(args: &Args, source: &Source) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(
        w,
        "Dry run: reading r-nacos 0.4 data dir {} (through a temporary copy; it was not modified)",
        args.from.display()
    );
    let _ = writeln!(w, "Would move:");
    let _ = writeln!(w, "  namespaces:   {}", source.namespaces.len());
    let _ = writeln!(w, "  configs:      {}", source.configs.len());
    let _ = writeln!(
        w,
        "  history rows: {} (over {} configs)",
        source.history_rows(),
        source
            .history
            .values()
            .filter(|rows| !rows.is_empty())
            .count()
    );
    let _ = writeln!(w, "  users:        {}", source.users.len());

    let _ = writeln!(w, "\nNamespaces (public is implicit):");
    for ns in &source.namespaces {
        let _ = writeln!(w, "  {:?}  name {:?}", ns.id, ns.name);
    }

    let _ = writeln!(w, "\nConfigs per namespace:");
    let mut per_tenant: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for config in &source.configs {
        let entry = per_tenant.entry(config.tenant.as_str()).or_default();
        entry.0 += 1;
        entry.1 += source.history.get(&config.key()).map_or(0, Vec::len);
    }
    let unregistered = source.unregistered_tenants();
    for (tenant, (configs, rows)) in &per_tenant {
        let label = if tenant.is_empty() {
            "public (\"\")".to_string()
        } else {
            format!("{tenant:?}")
        };
        let note = if unregistered.iter().any(|t| t == tenant) {
            "  [not a registered namespace]"
        } else {
            ""
        };
        let _ = writeln!(w, "  {label}: {configs} configs, {rows} history rows{note}");
    }

    let _ = writeln!(w, "\nUsers (passwords not shown):");
    for user in &source.users {
        let roles: Vec<String> = user
            .roles
            .iter()
            .map(|r| match rnacos::role_name(r) {
                Some(name) => format!("{r} ({name})"),
                None => format!("{r} (unknown role)"),
            })
            .collect();
        let roles = if roles.is_empty() {
            "none".to_string()
        } else {
            roles.join(", ")
        };
        let _ = writeln!(
            w,
            "  {:?}  nickname {:?}  roles: {roles}  {}",
            user.username,
            user.nickname,
            if user.enabled { "enabled" } else { "disabled" }
        );
    }

    if source.skipped.is_empty() {
        let _ = writeln!(w, "\nSkipped: nothing");
    } else {
        let _ = writeln!(w, "\nSkipped ({}):", source.skipped.len());
        for s in &source.skipped {
            let _ = writeln!(w, "  {}: {}", s.what, s.reason);
        }
    }
    out
}
