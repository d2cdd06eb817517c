//! `tacos-migrate`: moves data from other Nacos-compatible servers into Tacos.
//!
//! Phase 1 reads the source: [`rnacos`] reads an r-nacos 0.4.x data dir (sled 0.34) into
//! plain structs. Writing a Tacos data dir from them comes later.

pub mod rnacos;
