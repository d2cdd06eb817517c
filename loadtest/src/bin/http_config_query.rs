//! `http_config_query`: every request reads a config.
//!
//! Before any user starts, a `test_start` step publishes a known content to each dataId
//! (`loadtest-q-0`, or `loadtest-q-0 .. N-1` with `--keys N` to read many keys; 16
//! publishes at a time). Each request is
//! `GET /nacos/v1/cs/configs?dataId=..&group=DEFAULT_GROUP&tenant=` on a random one of
//! them and counts as failed unless the reply is 200 with exactly the seeded content.
//! `--rate-per-user` caps each user's requests per second; `--help` lists every option.

use goose::prelude::*;
use loadtest::cli::NoArgs;
use loadtest::{query_random_key, seed_keys};

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    let started = loadtest::start::<NoArgs>(
        "http_config_query: read a seeded config, one key or (--keys N) a random one of many (GET /nacos/v1/cs/configs)",
        1,
        "loadtest-q-",
    )?;
    started
        .attack
        .test_start(transaction!(seed_keys).set_name("seed"))
        .register_scenario(
            loadtest::scenario("ConfigQuery")?
                .register_transaction(transaction!(query_random_key).set_name("query")),
        )
        .execute()
        .await?;
    Ok(())
}
