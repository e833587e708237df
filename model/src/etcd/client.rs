//! The model's client library: what sim/src/client/lock.rs does over RPC, done against the
//! model's store in one step per request. It drives the shipped `EtcdMutex`: each request the
//! recipe asks for is answered by the shipped `Store`, and the answer goes back into the recipe.
//!
//! The case-02 bug switch is the recipe's own (`EtcdMutex::lock_checked(.., false)`: no re-read
//! of our key before reporting success), so the buggy variant runs shipped code too.
//!
//! One action = one request and its answer (an RPC is atomic here: no loss, no delay; what the
//! model leaves out of the network is said in mod.rs).

use coordsim_core::recipe::mutex::EtcdMutex;
use coordsim_core::recipe::{EtcdInput, EtcdStep};
use coordsim_core::store::{Command, CommandResponse, DeleteRangeRequest, KeyRange, Revision, Store, StoreError};

use super::config::{EtcdConfig, LOCK, SessionCheck};
use super::state::{End, Phase, State};
use super::watch;
use crate::fingerprint::Hashed;

/// `lock()`: the recipe's first request (create our key) goes out at once.
pub fn lock(config: &EtcdConfig, state: &mut State, index: usize) {
    let lease = state.clients[index].lease;
    let check_own_key = config.session_check == SessionCheck::Shipped;
    let (mut mutex, first) = EtcdMutex::lock_checked(LOCK, lease, check_own_key);
    let EtcdStep::Txn(txn) = first else { panic!("the recipe starts with its create txn, not {first:?}") };
    let response = match state.store.apply(&Command::Txn(txn)) {
        CommandResponse::Txn(response) => response,
        // The session's lease expired before the create: the lock fails (LockError::Store).
        CommandResponse::Error(_) => return end(state, index, End::LockFailed),
        other => panic!("a txn is answered by a txn response, got {other:?}"),
    };
    watch::after_write(state);
    let step = mutex.step(EtcdInput::Txn(response));
    follow(state, index, mutex, step);
}

/// Sends the request the recipe asked for and feeds the answer back.
pub fn send(state: &mut State, index: usize) {
    let Phase::Locking { mutex, next } = state.clients[index].phase.clone() else {
        panic!("c{} sends without a pending request", index + 1)
    };
    let (mut mutex, next) = (mutex.into_inner(), next.into_inner());
    let input = match answer(&mut state.store, next) {
        Ok(input) => input,
        Err(_) => return end(state, index, End::LockFailed),
    };
    watch::after_write(state);
    let step = mutex.step(input);
    follow(state, index, mutex, step);
}

/// The watch saw the predecessor's delete: the recipe looks at the queue again.
pub fn wake(state: &mut State, index: usize) {
    let Phase::Waiting { mutex, notified: true, .. } = state.clients[index].phase.clone() else {
        panic!("c{} wakes without a notification", index + 1)
    };
    let mut mutex = mutex.into_inner();
    let step = mutex.step(EtcdInput::Deleted);
    follow(state, index, mutex, step);
}

/// The holder writes to the resource with its token. A fenced resource may reject it; the
/// client then gives the lock up, as the simulator's clients do.
pub fn write(state: &mut State, index: usize) {
    let Phase::Holding { token, grant, .. } = state.clients[index].phase.clone() else {
        panic!("c{} writes without holding", index + 1)
    };
    let decision = state.resource.write(token);
    let monitor = &mut state.monitor;
    if decision.accepted {
        if token < decision.highest_before {
            monitor.token_went_back = true;
        }
        if grant < monitor.newest_accepted_grant {
            monitor.stale_grant_accepted = true;
        }
        monitor.newest_accepted_grant = monitor.newest_accepted_grant.max(grant);
        if let Phase::Holding { wrote, .. } = &mut state.clients[index].phase {
            *wrote = true;
        }
    } else {
        monitor.stale_write_rejected = true;
        end(state, index, End::WriteRejected);
    }
}

/// `unlock()`: delete our key, which wakes the successor.
pub fn release(config: &EtcdConfig, state: &mut State, index: usize) {
    let Phase::Holding { key, .. } = state.clients[index].phase.clone() else {
        panic!("c{} releases without holding", index + 1)
    };
    let delete = DeleteRangeRequest { range: KeyRange::Key(key), prev_kv: false };
    match state.store.apply(&Command::DeleteRange(delete)) {
        CommandResponse::DeleteRange(_) => {}
        other => panic!("a delete is answered by a delete response, got {other:?}"),
    }
    watch::after_write(state);
    let client = &mut state.clients[index];
    client.rounds_done += 1;
    client.phase = if client.rounds_done < config.rounds { Phase::Idle } else { Phase::Done(End::Released) };
}

/// The client stops: its belief (if any) ends and it does nothing more.
pub fn end(state: &mut State, index: usize, why: End) {
    let client = &mut state.clients[index];
    if !matches!(client.phase, Phase::Done(_)) {
        client.phase = Phase::Done(why);
    }
}

/// Where the recipe goes next.
fn follow(state: &mut State, index: usize, mutex: EtcdMutex, step: EtcdStep) {
    match step {
        EtcdStep::Txn(_) | EtcdStep::Range(_) => {
            state.clients[index].phase = Phase::Locking { mutex: Hashed::new(mutex), next: Hashed::new(step) };
        }
        EtcdStep::WaitDelete { key, from_revision } => {
            let notified = watch::deleted_since(&state.store, &key, from_revision);
            let phase = Phase::Waiting { mutex: Hashed::new(mutex), key, from: from_revision, notified };
            state.clients[index].phase = phase;
        }
        EtcdStep::Acquired { key, token } => acquire(state, index, key, token),
        EtcdStep::Failed(_) => end(state, index, End::LockFailed),
    }
}

fn acquire(state: &mut State, index: usize, key: String, token: Revision) {
    if !state.lease_alive(state.clients[index].lease) {
        state.monitor.granted_to_dead_session = true;
    }
    state.grants += 1;
    state.clients[index].phase = Phase::Holding { key, token, grant: state.grants, wrote: false };
}

/// Answers one request of the recipe from the store, as a server does.
fn answer(store: &mut Store, step: EtcdStep) -> Result<EtcdInput, StoreError> {
    match step {
        EtcdStep::Txn(txn) => match store.apply(&Command::Txn(txn)) {
            CommandResponse::Txn(response) => Ok(EtcdInput::Txn(response)),
            CommandResponse::Error(error) => Err(error),
            other => panic!("a txn is answered by a txn response, got {other:?}"),
        },
        EtcdStep::Range(request) => store.range(&request).map(EtcdInput::Range),
        other => panic!("{other:?} is not a request"),
    }
}
