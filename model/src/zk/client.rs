//! The model's ZooKeeper client: what sim/src/client/zk_lock.rs does over RPC, done against the
//! model's store in one step per request. It drives the shipped `ZkLock`: each request the
//! recipe asks for is answered by the shipped store through its ZooKeeper view (`Command::Zk`
//! for the create and the delete, `zk::tree` for `getChildren` and `exists`), and the answer
//! goes back into the recipe. The bug switches are the recipe's own (`ZkLockConfig`), so the
//! buggy variants run shipped code too.

use coordsim_core::recipe::zk_lock::{ZkLock, ZkLockConfig, ZkLockInput, ZkLockStep};
use coordsim_core::store::{Command, CommandResponse, RevokeReason};
use coordsim_core::zk::{ANY_VERSION, CreateMode, ZkOp, ZkOpResult, ZkWrite, tree};

use super::LOCK;
use super::state::{End, Phase, State};
use super::watch::{self, Write};
use crate::fingerprint::Hashed;
use crate::trace::client_name;

/// Whether the reply to a create reaches the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    Delivered,
    /// The create is applied but its reply is lost (case 07): the client sees a connection loss.
    Lost,
}

/// The tag that names the client's node, as the simulator's driver builds it: client and session.
pub fn tag(state: &State, index: usize) -> String {
    format!("{}-{:x}", client_name(index), state.clients[index].session)
}

/// `lock()`: the recipe starts and its create goes out at once.
pub fn lock(config: ZkLockConfig, state: &mut State, index: usize, reply: Reply) {
    let (recipe, first) = ZkLock::lock(LOCK, &tag(state, index), config);
    assert!(matches!(first, ZkLockStep::Create { .. }), "the recipe starts with its create, not {first:?}");
    state.clients[index].phase = Phase::Requesting { recipe: Hashed::new(recipe), next: Hashed::new(first) };
    send(state, index, reply);
}

/// Sends the request the recipe asked for and feeds the answer back.
pub fn send(state: &mut State, index: usize, reply: Reply) {
    let Phase::Requesting { recipe, next } = state.clients[index].phase.clone() else {
        panic!("c{} sends without a pending request", index + 1)
    };
    let mut recipe = recipe.into_inner();
    let input = match next.into_inner() {
        ZkLockStep::Create { prefix } => match create(state, index, prefix) {
            Some(_) if reply == Reply::Lost => {
                state.monitor.create_reply_lost = true;
                ZkLockInput::CreateLost
            }
            Some((path, czxid)) => ZkLockInput::Created { path, czxid },
            None => return end(state, index, End::Failed),
        },
        ZkLockStep::List { path } => {
            let names = tree::get_children(&state.store, &path).expect("the lock node exists");
            ZkLockInput::Children { names, zxid: state.store.revision() }
        }
        ZkLockStep::Exists { path } => {
            let stat = tree::exists(&state.store, &path).expect("a valid path");
            // With our node known, the recipe asks about its predecessor (without, about the
            // node it found by its tag after a lost create reply).
            if stat.is_none() && recipe.node().is_some() {
                state.monitor.predecessor_vanished = true;
            }
            ZkLockInput::Exists { stat, zxid: state.store.revision() }
        }
        ZkLockStep::Delete { path } => {
            let op = ZkOp::Delete { path, version: -1 };
            let session = state.clients[index].session;
            // Gone already (the session ended) is as good as deleted.
            let _ = state.store.apply(&Command::Zk(ZkWrite { session, ops: vec![op] }));
            ZkLockInput::Deleted
        }
        other => panic!("{other:?} is not a request"),
    };
    let step = recipe.step(input);
    follow(state, index, recipe, step);
}

/// An ephemeral sequential create on the client's session: the node's path and czxid, or
/// `None` if the server refused it.
fn create(state: &mut State, index: usize, prefix: String) -> Option<(String, i64)> {
    let session = state.clients[index].session;
    let op = ZkOp::Create { path: prefix, data: String::new(), mode: CreateMode::EphemeralSequential };
    let created = match state.store.apply(&Command::Zk(ZkWrite { session, ops: vec![op] })) {
        CommandResponse::Zk { result: Ok(mut results), .. } => match results.pop() {
            Some(ZkOpResult::Created { path, stat }) => Some((path, stat.czxid)),
            other => panic!("a create is answered by its node, got {other:?}"),
        },
        CommandResponse::Zk { result: Err(_), .. } => None,
        other => panic!("a ZooKeeper write is answered by a ZooKeeper response, got {other:?}"),
    };
    watch::after_write(state, Write::Create);
    if state.nodes_of(session) > 1 {
        state.monitor.orphan_node = true;
    }
    created
}

/// The watch fired: the recipe lists the children again.
pub fn wake(state: &mut State, index: usize) {
    let Phase::Waiting { recipe, notified: true, .. } = state.clients[index].phase.clone() else {
        panic!("c{} wakes without a notification", index + 1)
    };
    let mut recipe = recipe.into_inner();
    let step = recipe.step(ZkLockInput::Fired);
    follow(state, index, recipe, step);
}

/// `unlock()`: delete our node, which fires the watches on it.
pub fn release(state: &mut State, index: usize) {
    let Phase::Holding { path, .. } = state.clients[index].phase.clone() else {
        panic!("c{} releases without holding", index + 1)
    };
    let session = state.clients[index].session;
    let delete = ZkOp::Delete { path, version: ANY_VERSION };
    match state.store.apply(&Command::Zk(ZkWrite { session, ops: vec![delete] })) {
        CommandResponse::Zk { result: Ok(_), .. } => {}
        other => panic!("the holder's delete of its own node failed: {other:?}"),
    }
    state.clients[index].phase = Phase::Done(End::Released);
    watch::after_write(state, Write::Delete);
}

/// The client's session closes while it is queued: the server deletes its ephemeral nodes, and
/// its watch goes with it (it stops first, so its own watch is not counted as woken).
pub fn abandon(state: &mut State, index: usize) {
    state.clients[index].phase = Phase::Done(End::Abandoned);
    let id = state.clients[index].session;
    match state.store.apply(&Command::LeaseRevoke { id, reason: RevokeReason::Client }) {
        CommandResponse::LeaseRevoke { .. } => {}
        other => panic!("closing a live session failed: {other:?}"),
    }
    watch::after_write(state, Write::Delete);
}

fn end(state: &mut State, index: usize, why: End) {
    state.clients[index].phase = Phase::Done(why);
}

/// Where the recipe goes next.
fn follow(state: &mut State, index: usize, recipe: ZkLock, step: ZkLockStep) {
    let recipe = Hashed::new(recipe);
    state.clients[index].phase = match step {
        ZkLockStep::Create { .. } | ZkLockStep::List { .. } | ZkLockStep::Exists { .. } | ZkLockStep::Delete { .. } => {
            Phase::Requesting { recipe, next: Hashed::new(step) }
        }
        ZkLockStep::Wait { .. } => {
            let notified = watch::fired(&state.store, &step);
            Phase::Waiting { recipe, wait: Hashed::new(step), notified }
        }
        ZkLockStep::Acquired { path, token } => Phase::Holding { path, token },
        ZkLockStep::Failed(_) => Phase::Done(End::Failed),
    };
}
