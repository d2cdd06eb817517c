//! A linearizability checker for one register (Wing & Gong's search with
//! Lowe's memoization): does some total order of the operations, consistent
//! with real time, explain every read?
//!
//! Each operation has an invocation and, if it completed, a response time.
//! A write whose outcome is unknown (timeout, "may or may not have been
//! applied") gets a response at +infinity: it may take effect at any point
//! after its invocation, or (linearized after everything) never be seen,
//! which is the same thing to the other operations. Failed reads tell
//! nothing and are left out by the caller.
//!
//! The search walks the history in time order. At a call it tries to
//! linearize that operation now (the model must accept it and the pair
//! (set of linearized ops, state) must be new); at a return of an operation
//! not yet linearized it backtracks. Memoizing the (set, state) pairs
//! already explored keeps it polynomial on the histories a register with
//! unique written values produces.

use std::collections::HashSet;

/// What an operation did.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Op {
    /// Wrote this (unique) value.
    Write(String),
    /// Read this value (`None`: the key did not exist).
    Read(Option<String>),
}

/// One operation of the history.
#[derive(Debug, Clone)]
pub struct Event {
    pub op: Op,
    /// Invocation time (any monotonic unit).
    pub start: u64,
    /// Response time; `None` when the outcome is unknown.
    pub end: Option<u64>,
}

/// One entry of the time-ordered list: a call or a return of op `id`.
#[derive(Debug, Clone, Copy)]
struct Entry {
    id: usize,
    is_call: bool,
    time: u64,
}

/// A doubly linked list over `entries` that supports removing ("lifting")
/// an operation's call and return and putting them back in place.
struct List {
    entries: Vec<Entry>,
    next: Vec<usize>,
    prev: Vec<usize>,
    /// The return entry of each operation.
    ret_of: Vec<usize>,
}

const HEAD: usize = usize::MAX;

impl List {
    fn new(events: &[Event]) -> List {
        let mut entries = Vec::with_capacity(events.len() * 2);
        for (id, e) in events.iter().enumerate() {
            entries.push(Entry {
                id,
                is_call: true,
                time: e.start,
            });
            entries.push(Entry {
                id,
                is_call: false,
                time: e.end.unwrap_or(u64::MAX),
            });
        }
        // Calls before returns at equal times: such ops overlap.
        entries.sort_by_key(|e| (e.time, !e.is_call, e.id));
        let n = entries.len();
        let mut ret_of = vec![0; events.len()];
        for (i, e) in entries.iter().enumerate() {
            if !e.is_call {
                ret_of[e.id] = i;
            }
        }
        // Slot n is the head sentinel.
        let mut next: Vec<usize> = (1..=n).collect();
        next.push(0);
        if n == 0 {
            next[0] = HEAD;
        }
        if let Some(last) = n.checked_sub(1) {
            next[last] = HEAD;
        }
        let mut prev: Vec<usize> = (0..n).map(|i| if i == 0 { n } else { i - 1 }).collect();
        prev.push(HEAD);
        List {
            entries,
            next,
            prev,
            ret_of,
        }
    }

    fn head(&self) -> usize {
        self.entries.len()
    }

    fn first(&self) -> usize {
        self.next[self.head()]
    }

    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.prev[i], self.next[i]);
        self.next[p] = n;
        if n != HEAD {
            self.prev[n] = p;
        }
    }

    fn relink(&mut self, i: usize) {
        let (p, n) = (self.prev[i], self.next[i]);
        self.next[p] = i;
        if n != HEAD {
            self.prev[n] = i;
        }
    }

    /// Removes op `call`'s call entry and its return entry.
    fn lift(&mut self, call: usize) {
        let ret = self.ret_of[self.entries[call].id];
        self.unlink(call);
        self.unlink(ret);
    }

    /// Puts them back (in the reverse order of lifting).
    fn unlift(&mut self, call: usize) {
        let ret = self.ret_of[self.entries[call].id];
        self.relink(ret);
        self.relink(call);
    }
}

/// Applies `op` to the register `state`; `None` if the model refuses it.
fn step(state: &Option<String>, op: &Op) -> Option<Option<String>> {
    match op {
        Op::Write(value) => Some(Some(value.clone())),
        Op::Read(seen) => (seen == state).then(|| state.clone()),
    }
}

/// The verdict, with a witness of where the search failed.
#[derive(Debug)]
pub enum Verdict {
    Linearizable,
    /// No order explains the history; the longest prefix that could be
    /// linearized, as op indexes.
    Not {
        longest: Vec<usize>,
    },
}

/// Checks one register's history, starting from `initial`.
pub fn check(events: &[Event], initial: Option<String>) -> Verdict {
    let mut list = List::new(events);
    let mut linearized = vec![false; events.len()];
    let mut seen: HashSet<(Vec<bool>, Option<String>)> = HashSet::new();
    // (call entry, state before it)
    let mut stack: Vec<(usize, Option<String>)> = Vec::new();
    let mut state = initial;
    let mut longest: Vec<usize> = Vec::new();
    let mut entry = list.first();
    loop {
        if entry == HEAD {
            if list.first() == HEAD {
                return Verdict::Linearizable;
            }
            // Walked past everything without finishing: backtrack.
            entry = list.head();
        }
        let e = if entry == list.head() {
            None
        } else {
            Some(list.entries[entry])
        };
        match e {
            Some(Entry {
                id, is_call: true, ..
            }) => {
                if let Some(next_state) = step(&state, &events[id].op) {
                    linearized[id] = true;
                    let fresh = seen.insert((linearized.clone(), next_state.clone()));
                    if fresh {
                        stack.push((entry, state));
                        state = next_state;
                        list.lift(entry);
                        if stack.len() > longest.len() {
                            longest = stack.iter().map(|(c, _)| list.entries[*c].id).collect();
                        }
                        entry = list.first();
                        continue;
                    }
                    linearized[id] = false;
                }
                entry = list.next[entry];
            }
            _ => {
                // A return of an op that is not linearized yet (or the end):
                // undo the last choice and try the next entry after it.
                let Some((call, before)) = stack.pop() else {
                    return Verdict::Not { longest };
                };
                linearized[list.entries[call].id] = false;
                state = before;
                list.unlift(call);
                entry = list.next[call];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &str, start: u64, end: impl Into<Option<u64>>) -> Event {
        Event {
            op: Op::Write(v.into()),
            start,
            end: end.into(),
        }
    }

    fn r(v: Option<&str>, start: u64, end: u64) -> Event {
        Event {
            op: Op::Read(v.map(str::to_string)),
            start,
            end: Some(end),
        }
    }

    fn ok(events: &[Event]) -> bool {
        matches!(check(events, None), Verdict::Linearizable)
    }

    #[test]
    fn sequential_histories() {
        assert!(ok(&[]));
        assert!(ok(&[r(None, 0, 1), w("a", 2, 3), r(Some("a"), 4, 5)]));
        assert!(!ok(&[w("a", 0, 1), r(None, 2, 3)]));
        assert!(!ok(&[w("a", 0, 1), w("b", 2, 3), r(Some("a"), 4, 5)]));
    }

    #[test]
    fn concurrent_operations_may_go_either_way() {
        // The read overlaps the write: it may see either value.
        assert!(ok(&[w("a", 0, 10), r(None, 1, 2)]));
        assert!(ok(&[w("a", 0, 10), r(Some("a"), 1, 2)]));
        // Two overlapping writes, then reads that agree on an order.
        assert!(ok(&[
            w("a", 0, 10),
            w("b", 1, 9),
            r(Some("a"), 11, 12),
            r(Some("a"), 13, 14)
        ]));
        // ...but not two orders at once.
        assert!(!ok(&[
            w("a", 0, 10),
            w("b", 1, 9),
            r(Some("a"), 11, 12),
            r(Some("b"), 13, 14),
        ]));
    }

    #[test]
    fn unknown_writes_may_happen_late_or_never() {
        assert!(ok(&[w("a", 0, None), r(None, 5, 6)]));
        assert!(ok(&[w("a", 0, None), r(None, 5, 6), r(Some("a"), 7, 8)]));
        // Once seen, it cannot be unseen.
        assert!(!ok(&[w("a", 0, None), r(Some("a"), 5, 6), r(None, 7, 8)]));
        // It cannot take effect before it was invoked.
        assert!(!ok(&[r(Some("a"), 0, 1), w("a", 2, None)]));
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_caught() {
        let events = [
            w("a", 0, 1),
            w("b", 2, 3),
            r(Some("b"), 4, 5),
            r(Some("a"), 6, 7),
        ];
        match check(&events, None) {
            Verdict::Not { longest } => assert!(longest.len() >= 3, "{longest:?}"),
            Verdict::Linearizable => panic!("a stale read passed"),
        }
    }

    #[test]
    fn many_overlapping_operations_finish_quickly() {
        // 8 concurrent writers, each followed by reads of its own value
        // while others overlap: the memo keeps this small.
        let mut events = Vec::new();
        for round in 0..40u64 {
            let t = round * 100;
            for c in 0..8u64 {
                events.push(w(&format!("{round}-{c}"), t + c, t + 50 + c));
            }
            events.push(r(Some(&format!("{round}-7")), t + 90, t + 95));
        }
        let started = std::time::Instant::now();
        assert!(ok(&events));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}
