//! `http_config_listen`: `-u N` long-poll listeners held open on
//! `POST /nacos/v1/cs/configs/listener` while a writer publishes; prints (and with
//! `--notify-report FILE` writes as JSON) the notify latency, publish answered ->
//! listener answered, as percentiles, and how many notifications were missed.
//!
//! See [`loadtest::listen`] for exactly what each listener and the writer do. Give
//! `-t`: listeners and writer stop on their own when it ends (without it the writer
//! runs until Ctrl-C and held polls delay the exit by up to `--poll-timeout-ms`).

use goose::prelude::*;
use loadtest::listen::{
    self, finish_listen_test, listen_once, listener_started, start_listen_test, ListenArgs,
    ListenConfig,
};

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    let started = loadtest::start::<ListenArgs>(
        "http_config_listen: N long-poll listeners (POST /nacos/v1/cs/configs/listener) while a writer publishes; notify latency percentiles",
        10,
        "loadtest-l-",
    )?;
    let goose = &started.goose;
    let listeners = goose.users.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let run_time = match goose.run_time.as_deref() {
        Some(text) => Some(loadtest::latency::parse_duration(text).map_err(|detail| {
            GooseError::InvalidOption {
                option: "--run-time".into(),
                value: text.into(),
                detail,
            }
        })?),
        None => None,
    };
    let host = goose
        .host
        .clone()
        .unwrap_or_else(|| loadtest::DEFAULT_HOST.to_string());
    listen::init(ListenConfig {
        args: started.args,
        listeners,
        run_time,
        host,
    })?;
    started
        .attack
        .test_start(transaction!(start_listen_test).set_name("seed and start the writer"))
        .test_stop(transaction!(finish_listen_test).set_name("notify report"))
        .register_scenario(
            loadtest::scenario("ConfigListen")?
                .register_transaction(
                    transaction!(listener_started)
                        .set_name("listener start")
                        .set_on_start(),
                )
                .register_transaction(transaction!(listen_once).set_name("listen")),
        )
        .execute()
        .await?;
    Ok(())
}
