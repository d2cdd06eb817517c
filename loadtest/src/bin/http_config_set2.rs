//! `http_config_set2`: every request publishes a new content to one of 10,000 random
//! dataIds, so the server keeps a larger and growing working set (each publish also
//! adds a history row).
//!
//! Same request and check as `http_config_set`; `--keys` changes the number of
//! dataIds, `--rate-per-user` caps each user's requests per second; `--help` lists
//! every option.

use goose::prelude::*;
use loadtest::cli::NoArgs;
use loadtest::publish_random_key;

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    let started = loadtest::start::<NoArgs>(
        "http_config_set2: publish a unique content to a random one of 10,000 dataIds (POST /nacos/v1/cs/configs)",
        10_000,
        "loadtest2-",
    )?;
    started
        .attack
        .register_scenario(
            loadtest::scenario("ConfigSet2")?
                .register_transaction(transaction!(publish_random_key).set_name("publish")),
        )
        .execute()
        .await?;
    Ok(())
}
