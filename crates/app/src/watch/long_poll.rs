//! HTTP long polls: hold one until a watched key changes or it times out
//! (`Hold`), note one that ended (`Polled`), cancel one whose client went
//! away (`Cancel`), answer them all at shutdown (`ReleaseAll`).

use std::time::Instant;

use actix::prelude::*;
use tokio::sync::oneshot;

use super::*;

/// Hold a long-poll until one of its keys changes.
#[derive(Message)]
#[rtype(result = "HoldOutcome")]
pub struct Hold {
    pub keys: Vec<ListenKey>,
    pub client_ip: String,
    /// The tag the client sent (`Vipserver-Tag`), for gray matching.
    pub tag: Option<String>,
    pub reply: oneshot::Sender<Vec<ListenKey>>,
}

/// What became of a [`Hold`].
#[derive(Debug, MessageResponse)]
pub enum HoldOutcome {
    /// Held; cancel with this id when the client's timeout ends.
    Held(u64),
    /// Already changed: the reply was sent at once.
    Answered,
    /// Too many held requests.
    Full { limit: usize },
}

impl Handler<Hold> for WatchHub {
    type Result = HoldOutcome;

    fn handle(&mut self, msg: Hold, _: &mut Context<Self>) -> HoldOutcome {
        let labels = ClientLabels {
            ip: msg.client_ip.clone(),
            tag: msg.tag.clone(),
        };
        let changed = changed_keys(&self.state.load(), &msg.keys, &labels);
        if !changed.is_empty() {
            let _ = msg.reply.send(changed);
            self.remember_ended(&msg.client_ip, &msg.tag, &msg.keys);
            return HoldOutcome::Answered;
        }
        if self.holds.len() >= self.max_holds {
            return HoldOutcome::Full {
                limit: self.max_holds,
            };
        }
        self.next_id += 1;
        let id = self.next_id;
        for k in &msg.keys {
            // Looked up first: thousands of polls hold one key, and the
            // entry API would clone the key for each of them.
            match self.by_key.get_mut(&k.key) {
                Some(ids) => {
                    ids.insert(id);
                }
                None => {
                    self.by_key.insert(k.key.clone(), HashSet::from([id]));
                }
            }
        }
        self.forget_polls_of(&msg.client_ip, &msg.keys);
        self.holds.insert(
            id,
            Held {
                keys: msg.keys,
                labels,
                reply: msg.reply,
                since: Instant::now(),
            },
        );
        HoldOutcome::Held(id)
    }
}

/// A poll that was answered without being held (a key had already
/// changed, or the client asked for no hold): remembered like an ended
/// poll, so the listeners view shows a client that holds a stale md5.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Polled {
    pub keys: Vec<ListenKey>,
    pub client_ip: String,
    /// The tag the client sent (`Vipserver-Tag`).
    pub tag: Option<String>,
}

impl Handler<Polled> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Polled, _: &mut Context<Self>) {
        self.forget_polls_of(&msg.client_ip, &msg.keys);
        self.remember_ended(&msg.client_ip, &msg.tag, &msg.keys);
    }
}

/// Stop holding (the client's timeout ended or it went away).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Cancel(pub u64);

impl Handler<Cancel> for WatchHub {
    type Result = ();

    fn handle(&mut self, msg: Cancel, _: &mut Context<Self>) {
        self.remove(msg.0);
    }
}

/// Answer every held request now with no changes (shutdown).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct ReleaseAll;

impl Handler<ReleaseAll> for WatchHub {
    type Result = usize;

    fn handle(&mut self, _: ReleaseAll, _: &mut Context<Self>) -> usize {
        let ids: Vec<u64> = self.holds.keys().copied().collect();
        let count = ids.len();
        for id in ids {
            if let Some(held) = self.remove(id) {
                let _ = held.reply.send(Vec::new());
            }
        }
        count
    }
}
