//! An engine without Raft: each command is applied at once to a [`State`]
//! in memory, the way every member's state machine applies it (a clone of
//! the current state, O(1) with its persistent maps, then a swap, so a
//! reader never sees half a command). Nothing is written to disk. For unit
//! tests of the use cases, and tools that need the rules without a node.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use tacos_core::Command;
use tacos_raft::freshness::Behind;
use tacos_state::State;

use super::{Engine, Written};

/// A state in memory that applies commands one at a time.
pub struct Local {
    state: ArcSwap<State>,
    /// One writer at a time, as the log orders the commands.
    write: Mutex<()>,
}

impl Local {
    /// An empty state (what a new cluster starts from).
    pub fn new() -> Self {
        Local::with(State::default())
    }

    /// Starts from `state`.
    pub fn with(state: State) -> Self {
        Local {
            state: ArcSwap::from_pointee(state),
            write: Mutex::new(()),
        }
    }
}

impl Default for Local {
    fn default() -> Self {
        Local::new()
    }
}

impl Engine for Local {
    fn write(&self, command: Command) -> Written<'_> {
        // A poisoned lock only means a panic mid-apply elsewhere; the state
        // swapped in last is whole either way.
        let _one = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = State::clone(&self.state.load());
        let response = next.apply(&command, &mut Vec::new());
        self.state.store(Arc::new(next));
        Box::pin(std::future::ready(Ok(response)))
    }

    fn state(&self) -> Arc<State> {
        self.state.load_full()
    }

    fn readable(&self) -> Result<(), Behind> {
        Ok(())
    }
}
