//! Watches, as the server serves them: a watch set by a read at zxid `after` sees the store's
//! changes after `after`, and the shipped ZooKeeper rules (`zk::watch::fired`) say which of them
//! fire it. The model looks again after every write, as the server's watch long-poll does.

use coordsim_core::recipe::zk_lock::ZkLockStep;
use coordsim_core::store::Store;
use coordsim_core::zk::watch;

use super::state::{Phase, State};

/// Whether the watch the recipe waits on (`ZkLockStep::Wait`) has fired in `store`.
pub fn fired(store: &Store, wait: &ZkLockStep) -> bool {
    let ZkLockStep::Wait { path, kind, after } = wait else { panic!("{wait:?} is not a wait") };
    match store.events(&watch::range_of(path, *kind), after + 1, false) {
        Ok(events) => events.iter().any(|event| watch::fired(path, *kind, event).is_some()),
        // The model never compacts; a watch below the compaction would list again
        // (sim/src/client/zk_lock.rs), which a notification does too.
        Err(_) => true,
    }
}

/// What a write did to the lock's children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    Create,
    /// A release or a closed session: a node left the queue.
    Delete,
}

/// After a store write: notify the waiters whose watch it fired, and remember a herd when one
/// delete fired the watches of more than one *queued* waiter (one whose own node still exists).
pub fn after_write(state: &mut State, write: Write) {
    let mut woken = 0;
    for index in 0..state.clients.len() {
        let Phase::Waiting { recipe, wait, notified: false } = &state.clients[index].phase else { continue };
        if !fired(&state.store, wait) {
            continue;
        }
        if recipe.node().is_some_and(|node| state.node_exists(node)) {
            woken += 1;
        }
        if let Phase::Waiting { notified, .. } = &mut state.clients[index].phase {
            *notified = true;
        }
    }
    if write == Write::Delete {
        state.monitor.release_woke |= woken > 0;
        state.monitor.herd |= woken > 1;
    }
}
