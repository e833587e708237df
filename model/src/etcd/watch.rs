//! Watches, as the server serves them: a waiter watches its predecessor's key from a revision
//! and is notified by the first delete at or after it. The model asks the shipped store for the
//! events (`Store::events`, what the server's watch long-poll reads) after every write.

use coordsim_core::store::{EventKind, KeyRange, Revision, Store};

use super::state::{Phase, State};

/// Whether `key` was deleted at a revision `>= from`.
pub fn deleted_since(store: &Store, key: &str, from: Revision) -> bool {
    match store.events(&KeyRange::Key(key.to_string()), from, false) {
        Ok(events) => events.iter().any(|event| event.kind == EventKind::Delete),
        // The model never compacts; a watch below the compaction would look at the queue again
        // (sim/src/client/lock.rs), which a notification does too.
        Err(_) => true,
    }
}

/// After a store write: notify the waiters whose predecessor's key is now deleted, and count
/// the wakeups this one write caused among *queued* waiters (those whose own key still exists;
/// a waiter whose lease expired is out of the queue and its leftover watch is no herd).
pub fn after_write(state: &mut State) {
    let mut woken = 0;
    for index in 0..state.clients.len() {
        let Phase::Waiting { key, from, notified: false, mutex, .. } = &state.clients[index].phase else { continue };
        if !deleted_since(&state.store, key, *from) {
            continue;
        }
        if state.key_exists(mutex.key()) {
            woken += 1;
        }
        if let Phase::Waiting { notified, .. } = &mut state.clients[index].phase {
            *notified = true;
        }
    }
    if woken > 1 {
        state.monitor.herd = true;
    }
}
