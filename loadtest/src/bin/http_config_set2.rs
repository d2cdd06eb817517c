//! `http_config_set2`: every request publishes a new content to one of 10,000 random
//! dataIds, so the server keeps a larger and growing working set (each publish also
//! adds a history row).
//!
//! Same request and check as `http_config_set`; `LOADTEST_KEYS` changes the number of
//! dataIds; see the crate README for the other settings.

use goose::prelude::*;
use loadtest::publish_random_key;

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    loadtest::init(10_000, "loadtest2-")?;
    loadtest::attack()?
        .register_scenario(
            loadtest::scenario("ConfigSet2")?
                .register_transaction(transaction!(publish_random_key).set_name("publish")),
        )
        .execute()
        .await?;
    Ok(())
}
