//! Batches concurrent client writes into one Raft log entry.
//!
//! openraft 0.9 appends each client write separately and its core waits for
//! that append to be flushed before it takes the next message, so one entry
//! per write would mean one fsync per write, however many clients wait. The
//! proposer queues commands while earlier proposals are in flight and
//! proposes everything queued as one [`Batch`]: concurrent writers share an
//! entry, an fsync and a commit. Apply answers one response per command.

use std::sync::Arc;

use openraft::error::{ClientWriteError, RaftError};
use prost::Message;
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::rpc::RouteError;
use tacos_core::types::{LogId, Raft};
use tacos_core::{Batch, Command};
use tacos_state::{ApplyError, Response};

/// Proposals in flight at once: one being flushed, one being prepared.
const MAX_IN_FLIGHT: usize = 2;
/// Most commands in one entry.
const MAX_BATCH_COMMANDS: usize = 1024;
/// Most command bytes in one entry (a single larger command goes alone).
const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

type Reply = oneshot::Sender<Result<(LogId, Response), RouteError>>;

struct Pending {
    command: Command,
    size: usize,
    reply: Reply,
}

/// A handle that proposes commands through the batching task.
#[derive(Clone)]
pub struct Proposer {
    tx: mpsc::UnboundedSender<Pending>,
}

impl Proposer {
    /// Starts the batching task on the current tokio runtime.
    pub fn start(raft: Raft) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(raft, rx));
        Proposer { tx }
    }

    /// Proposes one command; resolves once it is committed and applied.
    pub async fn propose(&self, command: Command) -> Result<(LogId, Response), RouteError> {
        let (reply, answer) = oneshot::channel();
        let size = command.encoded_len();
        self.tx
            .send(Pending {
                command,
                size,
                reply,
            })
            .map_err(|_| RouteError::Stopped("the node is shutting down".into()))?;
        answer
            .await
            .unwrap_or_else(|_| Err(RouteError::Stopped("the node is shutting down".into())))
    }
}

async fn run(raft: Raft, mut rx: mpsc::UnboundedReceiver<Pending>) {
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut carried: Option<Pending> = None;
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let first = match carried.take() {
            Some(pending) => pending,
            None => match rx.recv().await {
                Some(pending) => pending,
                None => return,
            },
        };
        let mut bytes = first.size;
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH_COMMANDS {
            match rx.try_recv() {
                Ok(pending) if bytes + pending.size > MAX_BATCH_BYTES => {
                    carried = Some(pending);
                    break;
                }
                Ok(pending) => {
                    bytes += pending.size;
                    batch.push(pending);
                }
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            propose_batch(&raft, batch).await;
            drop(permit);
        });
    }
}

async fn propose_batch(raft: &Raft, batch: Vec<Pending>) {
    let (commands, replies): (Vec<Command>, Vec<Reply>) =
        batch.into_iter().map(|p| (p.command, p.reply)).unzip();
    match raft
        .client_write(std::sync::Arc::new(Batch { commands }))
        .await
    {
        Ok(written) => {
            let mut responses = written.data.into_iter();
            for reply in replies {
                let response = responses
                    .next()
                    .unwrap_or(Response::Rejected(ApplyError::UnknownCommand));
                let _ = reply.send(Ok((written.log_id, response)));
            }
        }
        Err(error) => {
            let error = match error {
                RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => {
                    match forward.leader_id {
                        Some(leader) => RouteError::NotLeader { leader },
                        None => RouteError::NoLeader,
                    }
                }
                RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
                    RouteError::Stopped(e.to_string())
                }
                RaftError::Fatal(fatal) => RouteError::Stopped(fatal.to_string()),
            };
            for reply in replies {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}
