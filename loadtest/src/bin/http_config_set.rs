//! `http_config_set`: every request publishes a new content to one of 100 dataIds.
//!
//! `POST /nacos/v1/cs/configs` with the form
//! `dataId=<loadtest-0..99>&group=DEFAULT_GROUP&content=<unique>&tenant=`; a request
//! counts as failed unless the reply is 200 with body `true`. `--keys` changes the
//! number of dataIds, `--rate-per-user` caps each user's requests per second; `--help`
//! lists every option.

use goose::prelude::*;
use loadtest::cli::NoArgs;
use loadtest::publish_random_key;

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    let started = loadtest::start::<NoArgs>(
        "http_config_set: publish a unique content to a random one of 100 dataIds (POST /nacos/v1/cs/configs)",
        100,
        "loadtest-",
    )?;
    started
        .attack
        .register_scenario(
            loadtest::scenario("ConfigSet")?
                .register_transaction(transaction!(publish_random_key).set_name("publish")),
        )
        .execute()
        .await?;
    Ok(())
}
