//! What the scenario runner (recording from Java Nacos) and the differential
//! comparison (tests/differential.rs) agree on.

/// Routes of Tacos' own (`tacos/...`, `health`): a recording does not send
/// them to Java Nacos, and the comparison leaves their blocks out.
pub fn tacos_route(path: &str) -> bool {
    let path = path.trim_matches('"').trim_start_matches('/');
    path.starts_with("tacos/") || path == "health"
}
