//! HTTP routes (actix-web), by surface: Nacos v1 (`nacos_v1`), Nacos v2
//! (`nacos_v2`), health (`health`), login/users/audit (`auth`) and cluster
//! administration (`admin`). Every route declares what it needs where it is
//! registered; the [`guard`] middleware enforces it before any handler.
//!
//! Reads are served from the in-memory state on the worker thread that took
//! the request; writes go through the service layer and Raft and are
//! answered after commit and apply. Long polls are held by the watch hub.

mod admin;
mod app_state;
mod auth;
mod call;
mod consistency;
mod console;
pub mod guard;
mod health;
mod listener_views;
mod nacos_config;
mod nacos_core;
mod nacos_v1;
mod nacos_v2;
pub mod params;
mod render;
mod roles;
mod router;
mod transfer;
mod v3;

pub use app_state::AppState;
pub use router::{configure, declare, record_metrics, Port};
