//! SIGTERM on the real binary while long polls are held and writers are
//! busy: held polls are answered at once (empty body, so clients re-poll),
//! the process exits 0 within a bound, and every write answered `true`
//! before or during the shutdown is there after a restart.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{free_port, md5_hex, temp_dir, NacosApi, Server};

const GROUP: &str = "DEFAULT_GROUP";
const HELD: usize = 20;
const WRITERS: usize = 8;
/// How long SIGTERM may take to end the process.
const EXIT_BOUND: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_held_polls_finishes_writes_and_loses_nothing() {
    let tmp = temp_dir();
    let http = free_port();
    let mut server = Server::spawn(&tmp, http, &[]);
    server.wait_healthy().await;
    let api = server.api();
    assert!(api
        .publish("watched", GROUP, "", "v0")
        .await
        .status()
        .is_success());

    // Long polls held on a key that will not change.
    let md5 = md5_hex("v0");
    let mut polls = Vec::new();
    for _ in 0..HELD {
        let api = api.clone();
        let md5 = md5.clone();
        polls.push(tokio::spawn(async move {
            let started = Instant::now();
            let reply = api
                .client()
                .post(api.url("/nacos/v1/cs/configs/listener"))
                .header("Long-Pulling-Timeout", "60000")
                .form(&[(
                    "Listening-Configs",
                    format!("watched\u{2}{GROUP}\u{2}{md5}\u{1}"),
                )])
                .timeout(Duration::from_secs(90))
                .send()
                .await;
            (reply.map(|r| r.status().as_u16()), started.elapsed())
        }));
    }
    wait_for_held(&api, HELD as u64).await;

    // Writers publish unique keys until the server goes away.
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        let acked = acked.clone();
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let key = format!("w{w}-{n}");
                let content = format!("value of {key}");
                match api.try_publish(&key, GROUP, "", &content).await {
                    Ok(reply) if reply.status().as_u16() == 200 => {
                        if reply.text().await.ok().as_deref() == Some("true") {
                            acked.lock().unwrap().push((key, content));
                        }
                    }
                    _ => return, // the server is going away
                }
            }
        }));
    }
    // Let some writes land, then SIGTERM in the middle of the stream.
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked.lock().unwrap().len() < 200 {
        assert!(Instant::now() < deadline, "writers made no progress");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let signalled = Instant::now();
    let status = server.stop().await;
    let took = signalled.elapsed();
    stop.store(true, Ordering::Relaxed);
    assert!(
        status.success(),
        "SIGTERM exit was {status}; log:\n{}",
        server.log()
    );
    assert!(took < EXIT_BOUND, "SIGTERM took {took:?}");

    // Every held poll was answered by the server (not cut), long before its
    // 60 s timeout.
    for poll in polls {
        let (status, waited) = poll.await.expect("poll task");
        assert_eq!(
            status.ok(),
            Some(200),
            "a held poll was not answered cleanly"
        );
        assert!(
            waited < Duration::from_secs(30),
            "a held poll waited {waited:?}"
        );
    }
    for writer in writers {
        writer.await.expect("writer task");
    }

    // Everything acknowledged survives.
    let acked = acked.lock().unwrap().clone();
    let mut server = Server::spawn(&tmp, http, &[]);
    server.wait_healthy().await;
    let api = server.api();
    for (key, content) in &acked {
        let (status, body, _) = api.get(key, GROUP, "").await;
        assert_eq!(status, 200, "{key} acknowledged before SIGTERM is missing");
        assert_eq!(&body, content);
    }
    eprintln!(
        "{} acknowledged writes survived; SIGTERM took {took:?}",
        acked.len()
    );
    assert!(server.stop().await.success());
}

/// Waits until the server holds `n` long polls.
async fn wait_for_held(api: &NacosApi, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let held = api
            .get_path("/tacos/v1/admin/listeners")
            .await
            .ok()
            .and_then(|r| serde_json::from_str::<serde_json::Value>(&r.body).ok())
            .and_then(|v| v["longPolls"].as_u64())
            .unwrap_or(0);
        if held >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {held} of {n} polls are held"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
