//! The `qa` tool: a release QA report of a Nacos-compatible config server against a
//! baseline, in one command (see `qa --help` and `loadtest/README.md`).
//!
//! - [`servers`] starts one node or a 3-node cluster (Tacos or r-nacos), or one Java
//!   Nacos standalone node ([`java_nacos`]), on 127.0.0.1 with fresh data dirs and
//!   waits until it is ready;
//! - [`scenario`] runs the load tools as child processes (`http_config`, a light HTTP
//!   client, for the request scenarios; `grpc_config`; the goose listen scenario;
//!   `fanout`) and reads what they measured;
//! - [`procs`] tracks every child and samples its CPU and RSS from `/proc`;
//! - [`restart`] runs the restart scenario itself: a fill, a stop, a start on the same
//!   data dirs, and the time until all state is served again;
//! - [`fsync`] reads Tacos' own log fsync histogram before and after a publish run;
//! - [`knee`] finds the saturation point of a users x per-user-rate matrix;
//! - [`run`] puts it together: saturation matrices, then A/B runs alternating the two
//!   servers at the operating point just below saturation;
//! - [`budgets`] judges the result against `loadtest/qa-budgets.toml`;
//! - [`report`] writes `docs/qa/<version>.md` with [`plot`]'s SVG plots.

pub mod budgets;
pub mod fsync;
pub mod http;
pub mod java_nacos;
pub mod knee;
pub mod machine;
pub mod plot;
pub mod procs;
pub mod report;
pub mod restart;
pub mod run;
pub mod scenario;
pub mod servers;

use thiserror::Error;

/// Why a qa run failed.
#[derive(Debug, Error)]
pub enum QaError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
    #[error("budgets: {0}")]
    Budgets(String),
    #[error("{server} did not start: {detail}")]
    Start { server: String, detail: String },
    #[error("scenario: {0}")]
    Scenario(String),
    #[error("plot: {0}")]
    Plot(String),
    #[error("interrupted")]
    Interrupted,
}

impl QaError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> QaError {
        QaError::Io {
            context: context.into(),
            source,
        }
    }
}
