//! `http_config_set`: every request publishes a new content to one of 100 dataIds.
//!
//! `POST /nacos/v1/cs/configs` with the form
//! `dataId=<loadtest-0..99>&group=DEFAULT_GROUP&content=<unique>&tenant=`; a request
//! counts as failed unless the reply is 200 with body `true`. `LOADTEST_KEYS` changes
//! the number of dataIds; see the crate README for the other settings.

use goose::prelude::*;
use loadtest::publish_random_key;

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    loadtest::init(100, "loadtest-")?;
    loadtest::attack()?
        .register_scenario(
            loadtest::scenario("ConfigSet")?
                .register_transaction(transaction!(publish_random_key).set_name("publish")),
        )
        .execute()
        .await?;
    Ok(())
}
