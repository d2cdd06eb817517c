//! The workload: clients writing unique values and reading them back over
//! the Nacos HTTP API, on every node, recording each operation's start, end
//! and outcome.
//!
//! * Register clients pick one of a few keys and a node at random, and
//!   either write a unique value or read with `consistency=linearizable`.
//! * Set clients write a fresh key each time; every key acknowledged with
//!   `true` must be on every node at the end.
//!
//! Outcomes: `true` (or a read's 200/404) is ok; a connection refused is a
//! certain failure (the request never reached a server); anything else on a
//! write (timeout, 503 "may or may not have been applied", a reset) is
//! unknown: the write may or may not have happened.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::checker::{Event, Op};

pub const GROUP: &str = "FAULTS";

/// What happened to one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    Unknown,
}

#[derive(Debug, Clone)]
pub struct Record {
    pub key: String,
    pub op: Op,
    pub start: u64,
    pub end: u64,
    pub outcome: Outcome,
}

/// Everything the clients did.
#[derive(Default)]
pub struct History {
    pub records: Mutex<Vec<Record>>,
    pub acked_set: Mutex<Vec<String>>,
    pub set_unknown: AtomicU64,
    /// Why writes ended unknown or failed: `503`, `timeout`, `reset`, ...
    pub reasons: Mutex<BTreeMap<String, u64>>,
}

impl History {
    fn push(&self, record: Record) {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
    }

    fn note(&self, reason: String) {
        *self
            .reasons
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(reason)
            .or_default() += 1;
    }

    pub fn snapshot(&self) -> Vec<Record> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Ok operations (reads and writes) completed in `[from, to)` µs.
    pub fn ok_between(&self, from: u64, to: u64) -> usize {
        self.snapshot()
            .iter()
            .filter(|r| r.outcome == Outcome::Ok && r.end >= from && r.end < to)
            .count()
    }

    /// Per register key, the events the checker takes (ok operations, and
    /// writes with an unknown outcome as never-returning).
    pub fn register_events(&self) -> BTreeMap<String, Vec<Event>> {
        let mut by_key: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        for r in self.snapshot() {
            let end = match (r.outcome, &r.op) {
                (Outcome::Ok, _) => Some(r.end),
                (Outcome::Unknown, Op::Write(_)) => None,
                _ => continue,
            };
            by_key.entry(r.key.clone()).or_default().push(Event {
                op: r.op.clone(),
                start: r.start,
                end,
            });
        }
        by_key
    }
}

/// A tiny xorshift generator (the workload needs no more).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// Where the clients send requests.
#[derive(Clone)]
pub struct Targets {
    pub nodes: Vec<(IpAddr, u16)>,
}

pub struct Workload {
    pub history: Arc<History>,
    pub t0: Instant,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn classify_write(history: &History, result: Result<(u16, String), reqwest::Error>) -> Outcome {
    let (outcome, reason) = match result {
        Ok((200, body)) if body == "true" => return Outcome::Ok,
        Ok((status @ (400 | 403 | 404), _)) => (Outcome::Failed, status.to_string()),
        Ok((status, body)) => {
            let body: String = body.chars().take(120).collect();
            (Outcome::Unknown, format!("{status} {body}"))
        }
        Err(e) if e.is_connect() => (Outcome::Failed, "connect refused".to_string()),
        Err(e) if e.is_timeout() => (Outcome::Unknown, "timeout".to_string()),
        Err(_) => (Outcome::Unknown, "connection lost".to_string()),
    };
    history.note(reason);
    outcome
}

async fn send(request: reqwest::RequestBuilder) -> Result<(u16, String), reqwest::Error> {
    let response = request.send().await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await?))
}

impl Workload {
    /// Starts `registers` register clients over `keys` keys and `sets` set
    /// clients.
    pub fn start(
        targets: Targets,
        registers: usize,
        keys: usize,
        sets: usize,
        seed: u64,
    ) -> Workload {
        let history = Arc::new(History::default());
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(4))
            .build()
            .expect("client");
        let mut tasks = Vec::new();
        for c in 0..registers {
            let (history, stop, client, targets) = (
                history.clone(),
                stop.clone(),
                client.clone(),
                targets.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(c as u64 + 1));
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let (ip, port) = targets.nodes[rng.below(targets.nodes.len())];
                    let key = format!("reg-{}", rng.below(keys));
                    let start = t0.elapsed().as_micros() as u64;
                    if rng.below(2) == 0 {
                        seq += 1;
                        let value = format!("c{c}-{seq}");
                        let result = send(
                            client
                                .post(format!("http://{ip}:{port}/nacos/v1/cs/configs"))
                                .form(&[
                                    ("dataId", key.as_str()),
                                    ("group", GROUP),
                                    ("content", &value),
                                ]),
                        )
                        .await;
                        let outcome = classify_write(&history, result);
                        history.push(Record {
                            key,
                            op: Op::Write(value),
                            start,
                            end: t0.elapsed().as_micros() as u64,
                            outcome,
                        });
                        if outcome != Outcome::Ok {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    } else {
                        let result = send(
                            client
                                .get(format!("http://{ip}:{port}/nacos/v1/cs/configs"))
                                .query(&[
                                    ("dataId", key.as_str()),
                                    ("group", GROUP),
                                    ("consistency", "linearizable"),
                                ]),
                        )
                        .await;
                        let end = t0.elapsed().as_micros() as u64;
                        let (op, outcome) = match result {
                            Ok((200, body)) => (Op::Read(Some(body)), Outcome::Ok),
                            Ok((404, _)) => (Op::Read(None), Outcome::Ok),
                            _ => (Op::Read(None), Outcome::Failed),
                        };
                        history.push(Record {
                            key,
                            op,
                            start,
                            end,
                            outcome,
                        });
                        if outcome != Outcome::Ok {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }));
        }
        for c in 0..sets {
            let (history, stop, client, targets) = (
                history.clone(),
                stop.clone(),
                client.clone(),
                targets.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut rng = Rng::new(seed.wrapping_mul(17).wrapping_add(c as u64 + 101));
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    let key = format!("set-{c}-{seq}");
                    let (ip, port) = targets.nodes[rng.below(targets.nodes.len())];
                    let result = send(
                        client
                            .post(format!("http://{ip}:{port}/nacos/v1/cs/configs"))
                            .form(&[
                                ("dataId", key.as_str()),
                                ("group", GROUP),
                                ("content", key.as_str()),
                            ]),
                    )
                    .await;
                    match classify_write(&history, result) {
                        Outcome::Ok => history
                            .acked_set
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(key),
                        Outcome::Unknown => {
                            history.set_unknown.fetch_add(1, Ordering::Relaxed);
                        }
                        Outcome::Failed => {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }));
        }
        Workload {
            history,
            t0,
            stop,
            tasks,
        }
    }

    /// Microseconds since the workload started.
    pub fn now(&self) -> u64 {
        self.t0.elapsed().as_micros() as u64
    }

    /// Stops the clients and waits for their last operations.
    pub async fn stop(self) -> Arc<History> {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            let _ = task.await;
        }
        self.history
    }
}
