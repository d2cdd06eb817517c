//! What the replicated state holds in memory, counted by a counting
//! allocator: bytes per config, per history row and per audit row. Counted
//! bytes do not depend on the machine's load, the allocator's arenas or
//! what else the process holds, so a change to the state's representation
//! can be A/B'd exactly (RSS, which the QA report compares with r-nacos,
//! adds the allocator's overhead and the rest of the server on top).
//!
//! `cargo run --release -p tacos-state --example memory [CONFIGS] [UPDATES]`
//! (default 100,000 configs, each published once and updated 9 times: 10
//! history rows each; contents of about 100 bytes, unique per version;
//! every command with an actor, so with audit rows, limit 100,000).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use tacos_core::command as pb;
use tacos_core::{md5_hex, Command, Op};
use tacos_state::State;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

const HISTORY_LIMIT: u32 = 100;
const AUDIT_LIMIT: u32 = 100_000;

fn content(n: usize, version: usize) -> String {
    format!(
        "server.port=8080\nspring.application.name=app-{n}\nfeature.flag=on\nversion={version:06}\n"
    )
}

fn publish(n: usize, version: usize, time_ms: i64) -> Command {
    let content = content(n, version);
    let op = Op::PublishConfig(pb::PublishConfig {
        key: Some(pb::ConfigKey {
            namespace: String::new(),
            group: "DEFAULT_GROUP".into(),
            data_id: format!("app-{n}.properties"),
        }),
        md5: md5_hex(&content),
        content,
        config_type: "properties".into(),
        origin: Some(pb::Origin {
            src_user: "nacos".into(),
            src_ip: "10.0.0.1".into(),
            time_ms,
        }),
        history_limit: HISTORY_LIMIT,
        ..Default::default()
    });
    Command::by(
        op,
        pb::Actor {
            user: "nacos".into(),
            ip: "10.0.0.1".into(),
            time_ms,
            audit_limit: AUDIT_LIMIT,
        },
    )
}

fn mib(bytes: isize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn main() {
    sizes();
    let mut args = std::env::args().skip(1);
    let configs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let updates: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(9);

    let start = live();
    let mut state = State::default();
    let mut changed = Vec::new();
    let mut time = 1_700_000_000_000i64;
    for n in 0..configs {
        time += 1;
        state.apply(&publish(n, 0, time), &mut changed);
        changed.clear();
    }
    let after_publish = live();
    for version in 1..=updates {
        for n in 0..configs {
            time += 1;
            state.apply(&publish(n, version, time), &mut changed);
            changed.clear();
        }
    }
    let after_updates = live();

    let rows = configs * (1 + updates);
    let audit_rows = (rows).min(AUDIT_LIMIT as usize);
    println!("configs: {configs}, history rows: {rows}, audit rows kept: {audit_rows}");
    println!(
        "after the first publish of each: {} ({} bytes per config, with its history row and audit row)",
        mib(after_publish - start),
        (after_publish - start) / configs as isize
    );
    println!(
        "after {updates} updates of each: {} ({} bytes per further history row, audit rows included)",
        mib(after_updates - start),
        if updates == 0 {
            0
        } else {
            (after_updates - after_publish) / (configs * updates) as isize
        }
    );
    drop(state);
}

/// The fixed sizes behind the per-row numbers.
fn sizes() {
    use std::mem::size_of;
    use std::sync::Arc;
    use tacos_state::{Config, HistoryRow};
    println!(
        "size_of: Config {}, HistoryRow {}, Vector<Arc<HistoryRow>> {}",
        size_of::<Config>(),
        size_of::<HistoryRow>(),
        size_of::<imbl::Vector<Arc<HistoryRow>>>()
    );
}
