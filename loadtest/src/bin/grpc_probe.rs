//! `grpc_probe`: runs a fixed script of Nacos gRPC config requests against one server
//! and prints every request and the raw answer (class and JSON body), so two servers'
//! answers can be compared line by line (`diff <(grpc_probe --host A) <(grpc_probe
//! --host B)`). Values that differ between runs anyway (connection ids, timestamps,
//! md5s of run-unique contents, request ids the server picks) are masked unless
//! `--raw` is given.
//!
//! The script: on a channel *without* a stream, ServerCheck, query, publish and batch
//! listen; then on a set-up connection: queries (present, missing, invalid), publishes
//! (plain, with a wrong and a right `casMd5`, empty content), batch listen with a stale
//! md5, an unknown request type, HealthCheck; then what is pushed to a listener when
//! another connection publishes, and whether the server re-sends a notification that
//! is not acked.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use loadtest::grpc::{self, pb, Client, ListenContext, Options, Reply};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Prints a Nacos gRPC server's raw answers to a fixed script of config requests.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// The server's gRPC address (Nacos: HTTP port + 1000).
    #[arg(long, default_value = "127.0.0.1:9848")]
    host: String,
    /// Print ids, times and md5s as they are instead of masking them.
    #[arg(long)]
    raw: bool,
    /// How long to wait for a re-sent notification that was not acked.
    #[arg(long, default_value = "5s", value_parser = loadtest::latency::parse_duration)]
    resend_wait: Duration,
}

/// Fields whose values change from run to run.
const VOLATILE: &[&str] = &["connectionId", "lastModified", "md5", "requestId"];

fn show(value: &Value, raw: bool, run: &str) -> String {
    let mut value = value.clone();
    if !raw {
        if let Value::Object(map) = &mut value {
            for key in VOLATILE {
                if let Some(v) = map.get_mut(*key) {
                    if v.as_str().is_some_and(|s| !s.is_empty()) || v.is_number() {
                        *v = json!("<…>");
                    }
                }
            }
        }
    }
    // Sorted keys, so two servers' field orders do not show as differences.
    let text = serde_json::to_string(&sorted(&value)).unwrap_or_default();
    if raw {
        text
    } else {
        text.replace(run, "<run>")
    }
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn print_reply(step: &str, result: &Result<Reply, grpc::Error>, raw: bool, run: &str) {
    match result {
        Ok(reply) => println!(
            "{step}\n    -> {} {}",
            reply.kind,
            show(&Value::Object(reply.body.clone()), raw, run)
        ),
        Err(e) => println!("{step}\n    -> error: {e}"),
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let raw = args.raw;
    let timeout = Duration::from_secs(5);
    let run = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default()
        .to_string();
    let key = "grpc-probe";
    let group = loadtest::GROUP;
    let content = format!("probe {run}");

    // 1. A channel with no stream.
    println!("## a channel without a stream");
    let channel = match grpc::open_channel(&args.host, timeout).await {
        Ok(channel) => channel,
        Err(e) => {
            eprintln!("cannot connect to {}: {e}", args.host);
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut unary = pb::request_client::RequestClient::new(channel);
    let steps = [
        ("ServerCheckRequest", grpc::server_check("s1")),
        (
            "ConfigQueryRequest (no stream yet)",
            grpc::config_query("s2", key, group, ""),
        ),
        (
            "ConfigPublishRequest (no stream yet)",
            grpc::config_publish("s3", key, group, "", &content),
        ),
        (
            "ConfigBatchListenRequest (no stream yet)",
            grpc::batch_listen(
                "s4",
                true,
                &[ListenContext {
                    data_id: key.into(),
                    group: group.into(),
                    tenant: String::new(),
                    md5: String::new(),
                }],
            ),
        ),
    ];
    for (step, payload) in steps {
        print_reply(
            step,
            &grpc::call(&mut unary, payload, timeout).await,
            raw,
            &run,
        );
    }
    drop(unary);

    // 2. A set-up connection.
    println!("\n## a set-up connection (ServerCheck, stream, ConnectionSetupRequest)");
    let (push_tx, mut pushes) = mpsc::unbounded_channel();
    let options = Options {
        timeout,
        ack_notifications: false,
        ..Options::default()
    };
    let mut listener = match Client::connect(&args.host, &options, Some(push_tx)).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("cannot set up a connection: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut other = match Client::connect(&args.host, &Options::default(), None).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("cannot set up a second connection: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let step = async |c: &mut Client, name: &str, payload: pb::Payload| {
        let result = c.request(payload).await;
        print_reply(name, &result, raw, &run);
        result
    };
    let content = format!("probe {run} b");
    step(
        &mut listener,
        "ConfigPublishRequest",
        grpc::config_publish("p1", key, group, "", &content),
    )
    .await
    .ok();
    let current = step(
        &mut listener,
        "ConfigQueryRequest (present)",
        grpc::config_query("q1", key, group, ""),
    )
    .await;
    let md5 = current
        .as_ref()
        .map(|r| r.str("md5").to_string())
        .unwrap_or_default();
    step(
        &mut listener,
        "ConfigQueryRequest (missing)",
        grpc::config_query("q2", &format!("grpc-probe-missing-{run}"), group, ""),
    )
    .await
    .ok();
    step(
        &mut listener,
        "ConfigQueryRequest (empty dataId)",
        grpc::config_query("q3", "", group, ""),
    )
    .await
    .ok();
    step(
        &mut listener,
        "ConfigQueryRequest (tenant \"public\")",
        grpc::config_query("q4", key, group, "public"),
    )
    .await
    .ok();
    let cas = |md5: &str, rid: &str, content: &str| {
        let mut p = grpc::config_publish(rid, key, group, "", content);
        let mut body: Value = serde_json::from_slice(&p.body.as_ref().unwrap().value).unwrap();
        body["casMd5"] = json!(md5);
        p.body.as_mut().unwrap().value = serde_json::to_vec(&body).unwrap();
        p
    };
    let wrong = cas("0123456789abcdef0123456789abcdef", "p2", "cas wrong");
    step(&mut listener, "ConfigPublishRequest (casMd5 wrong)", wrong)
        .await
        .ok();
    let after = step(
        &mut listener,
        "ConfigQueryRequest (after the wrong casMd5: which content?)",
        grpc::config_query("q5", key, group, ""),
    )
    .await;
    let md5_now = after
        .as_ref()
        .map(|r| r.str("md5").to_string())
        .unwrap_or(md5.clone());
    let right = cas(&md5_now, "p3", &format!("probe {run} c"));
    step(&mut listener, "ConfigPublishRequest (casMd5 right)", right)
        .await
        .ok();
    step(
        &mut listener,
        "ConfigPublishRequest (empty content)",
        grpc::config_publish("p4", &format!("grpc-probe-empty-{run}"), group, "", ""),
    )
    .await
    .ok();
    step(
        &mut listener,
        "ConfigBatchListenRequest (stale md5)",
        grpc::batch_listen(
            "l1",
            true,
            &[ListenContext {
                data_id: key.into(),
                group: group.into(),
                tenant: String::new(),
                md5: "stale".into(),
            }],
        ),
    )
    .await
    .ok();
    step(
        &mut listener,
        "FooRequest (unknown type)",
        grpc::payload("FooRequest", &json!({"requestId": "u1", "headers": {}})),
    )
    .await
    .ok();
    step(
        &mut listener,
        "HealthCheckRequest",
        grpc::payload(
            "HealthCheckRequest",
            &json!({"requestId": "h1", "headers": {}}),
        ),
    )
    .await
    .ok();

    // 3. A push, not acked.
    println!("\n## push: another connection publishes; the listener does not ack");
    while pushes.try_recv().is_ok() {}
    let t = Instant::now();
    step(
        &mut other,
        "ConfigPublishRequest (other connection)",
        grpc::config_publish("p5", key, group, "", &format!("probe {run} d")),
    )
    .await
    .ok();
    let mut seen = 0;
    let deadline = t + Duration::from_secs(1) + args.resend_wait;
    while let Ok(Some(p)) = tokio::time::timeout_at(deadline.into(), pushes.recv()).await {
        seen += 1;
        println!(
            "pushed #{seen} after {:.1} s: {} dataId={} group={} tenant={:?} requestId={}",
            p.at.duration_since(t).as_secs_f64(),
            p.kind,
            p.data_id,
            p.group,
            p.tenant,
            if raw { p.request_id.as_str() } else { "<…>" },
        );
    }
    println!(
        "{seen} push(es) within {:.0} s of the publish, none acked",
        (deadline - t).as_secs_f64()
    );
    drop(listener);
    drop(other);
    std::process::ExitCode::SUCCESS
}
