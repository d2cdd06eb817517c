//! The migration at a size a bench can repeat: a synthetic r-nacos 0.8 dir of
//! 2,000 configs × 10 versions, read, converted and checked (a dry run: what
//! `tacos-migrate --dry-run` does, without the writing). The final check once
//! decoded a 256-row history chunk per row and made 100,000 × 10 take 31 minutes
//! (docs/migration.md); this keeps such a slip visible.
//!
//! ```text
//! cargo bench -p tacos-migrate --bench migrate
//! ```

#[path = "../tests/common/gen08.rs"]
mod gen08;

use criterion::{criterion_group, criterion_main, Criterion};

use tacos_migrate::convert::NoProgress;
use tacos_migrate::source::ReadOptions;
use tacos_migrate::{detect, run, Options};

fn migrate(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let source = dir.path().join("rnacos");
    gen08::write(
        &source,
        &gen08::Spec {
            configs: 2_000,
            history: 10,
            records_per_file: u64::MAX,
            snapshot_after: None,
        },
    );
    let mut group = c.benchmark_group("migrate");
    group.sample_size(10);
    group.bench_function("rnacos08 2000x10 dry run", |b| {
        b.iter(|| {
            let options = Options {
                from: detect(&source, None).expect("an r-nacos dir"),
                read: ReadOptions::default(),
                target: None,
                dry_run: true,
            };
            let outcome = run(&options, &mut NoProgress).expect("the dry run");
            assert_eq!(outcome.report.history_rows, 20_000);
        })
    });
    group.finish();
}

criterion_group!(benches, migrate);
criterion_main!(benches);
