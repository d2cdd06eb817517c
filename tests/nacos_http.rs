//! The Nacos HTTP surface (open API v1 and v2) against the real binary.
//!
//! The step-by-step cases (publish/get and headers, parameters in the query
//! string and the form, search and paging, unicode, CAS, beta, history,
//! namespaces, bad input, the content limit, v2, health) are scenario
//! scripts in `tests/scenarios/` (run by `tests/scenarios.rs`). What needs
//! code stays here.

mod common;

use common::{assert_true, header_str, md5_hex, Server};

/// Exactly 1 MiB of mixed ASCII and multi-byte text round-trips byte for
/// byte, with its md5.
#[tokio::test]
async fn one_mib_content_round_trips() {
    let tmp = common::temp_dir();
    let server = Server::start(&tmp).await;
    let api = server.api();

    let mut big = String::with_capacity(1 << 20);
    let mut line = 0u64;
    while big.len() < (1 << 20) - 64 {
        big.push_str(&format!("line {line}: 配置 value=🚀 {}\n", line * 7919));
        line += 1;
    }
    while big.len() < 1 << 20 {
        big.push('x');
    }
    assert_eq!(big.len(), 1 << 20);

    let response = api.publish("big.txt", "DEFAULT_GROUP", "", &big).await;
    assert_true(response, "publishing 1 MiB").await;
    let (status, body, headers) = api.get("big.txt", "DEFAULT_GROUP", "").await;
    assert_eq!(status, 200, "GET big.txt");
    assert_eq!(body.len(), big.len(), "size of the 1 MiB content");
    assert!(body == big, "1 MiB content byte for byte");
    assert_eq!(header_str(&headers, "Content-MD5"), md5_hex(&big));
}
