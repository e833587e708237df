//! The ZooKeeper lock models check the code we ship: their clients run
//! `coordsim_core::recipe::zk_lock::ZkLock` and their server state is `coordsim_core::store::Store`
//! seen through `coordsim_core::zk` — the same types the simulator's clients and servers run, not
//! copies (the model crate has no recipe of its own). This test drives the queue-lock model
//! through a handover (c1 acquires, c2 queues behind it and watches c1's node, c1 releases, the
//! watch fires, c2 acquires) and, beside it, drives the shipped recipe against a shipped store
//! the way the simulator's driver (sim/src/client/zk_lock.rs) does; after every step the recipe
//! and the store are equal.

use coordsim_core::recipe::zk_lock::{ZkLock, ZkLockConfig, ZkLockInput, ZkLockStep};
use coordsim_core::store::{Command, CommandResponse, LeaseId, Store};
use coordsim_core::zk::{ANY_VERSION, CreateMode, ZkOp, ZkOpResult, ZkWrite, tree, watch};
use coordsim_model::registry::{self, Built};
use coordsim_model::zk::state::{Phase, State};
use coordsim_model::zk::{Action, LOCK, ZkLockModel, tag};
use stateright::Model;

fn zk_write(store: &mut Store, session: LeaseId, op: ZkOp) -> Vec<ZkOpResult> {
    match store.apply(&Command::Zk(ZkWrite { session, ops: vec![op] })) {
        CommandResponse::Zk { result, .. } => result.expect("the write succeeds"),
        other => panic!("{other:?}"),
    }
}

/// The simulator's driver loop (sim/src/client/zk_lock.rs `acquire`), answered by a store
/// instead of RPCs: sends requests until the recipe waits, holds or fails.
fn drive(store: &mut Store, session: LeaseId, recipe: &mut ZkLock, mut step: ZkLockStep) -> ZkLockStep {
    loop {
        step = match step {
            ZkLockStep::Create { prefix } => {
                let op = ZkOp::Create { path: prefix, data: String::new(), mode: CreateMode::EphemeralSequential };
                let Some(ZkOpResult::Created { path, stat }) = zk_write(store, session, op).pop() else { panic!() };
                recipe.step(ZkLockInput::Created { path, czxid: stat.czxid })
            }
            ZkLockStep::List { path } => {
                let names = tree::get_children(store, &path).unwrap();
                recipe.step(ZkLockInput::Children { names, zxid: store.revision() })
            }
            ZkLockStep::Exists { path } => {
                let stat = tree::exists(store, &path).unwrap();
                recipe.step(ZkLockInput::Exists { stat, zxid: store.revision() })
            }
            done => return done,
        }
    }
}

/// The simulator's watch long-poll: has a change after `after` fired the watch?
fn fired(store: &Store, wait: &ZkLockStep) -> bool {
    let ZkLockStep::Wait { path, kind, after } = wait else { panic!("{wait:?}") };
    let events = store.events(&watch::range_of(path, *kind), after + 1, false).unwrap();
    !watch::fire_all(path, *kind, &events).is_empty()
}

fn model() -> ZkLockModel {
    match registry::build("queue-lock", 2, 0).unwrap() {
        Built::Zk(model) => model,
        _ => unreachable!("queue-lock is a ZooKeeper model"),
    }
}

/// The model's c`index` recipe: the shipped type, by this function's signature.
fn recipe(state: &State, index: usize) -> &ZkLock {
    match &state.clients[index].phase {
        Phase::Requesting { recipe, .. } | Phase::Waiting { recipe, .. } => recipe,
        other => panic!("c{} runs no recipe now: {other:?}", index + 1),
    }
}

fn step(model: &ZkLockModel, state: State, action: Action) -> State {
    model.next_state(&state, action).expect("the action applies")
}

#[test]
fn the_model_client_type_is_the_simulators_recipe() {
    let state = step(&model(), model().init_states().remove(0), Action::Lock(0));
    assert_eq!(std::any::type_name_of_val(recipe(&state, 0)), "coordsim_core::recipe::zk_lock::ZkLock");
    assert_eq!(std::any::type_name_of_val(&*state.store), "coordsim_core::store::machine::Store");
}

#[test]
fn the_model_runs_the_shipped_recipe_on_the_shipped_store() {
    let model = model();
    let mut state = model.init_states().remove(0);

    // The lock node and one session per client, as the model made them before the run.
    let mut store = Store::new();
    let lock_node = ZkOp::Create { path: LOCK.into(), data: String::new(), mode: CreateMode::Persistent };
    zk_write(&mut store, 0, lock_node);
    let sessions: Vec<LeaseId> = (0..2)
        .map(|_| match store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 1_000 }) {
            CommandResponse::LeaseGrant { id, .. } => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(*state.store, store);
    // The simulator's tag: client name and session (sim/src/client/zk_lock.rs).
    let tags: Vec<String> = sessions.iter().enumerate().map(|(i, s)| format!("c{}-{s:x}", i + 1)).collect();
    assert_eq!(tags, [tag(&state, 0), tag(&state, 1)]);

    // c1 locks: create, list, first in the queue.
    let (mut r1, first) = ZkLock::lock(LOCK, &tags[0], ZkLockConfig::QUEUE);
    state = step(&model, state, Action::Lock(0));
    let ZkLockStep::Create { prefix } = first else { panic!("the recipe starts with its create") };
    let op = ZkOp::Create { path: prefix, data: String::new(), mode: CreateMode::EphemeralSequential };
    let Some(ZkOpResult::Created { path, stat }) = zk_write(&mut store, sessions[0], op).pop() else { panic!() };
    let next = r1.step(ZkLockInput::Created { path, czxid: stat.czxid });
    assert_eq!(recipe(&state, 0), &r1);
    assert_eq!(*state.store, store);
    state = step(&model, state, Action::Send(0));
    let ZkLockStep::Acquired { path: p1, token: t1 } = drive(&mut store, sessions[0], &mut r1, next) else {
        panic!("c1 acquires")
    };
    assert_eq!(state.clients[0].phase, Phase::Holding { path: p1.clone(), token: t1 });

    // c2 locks: create, list (c1's node is ahead: exists on it), exists (it is there: wait).
    let (mut r2, first) = ZkLock::lock(LOCK, &tags[1], ZkLockConfig::QUEUE);
    let waiting = drive(&mut store, sessions[1], &mut r2, first);
    for _ in 0..3 {
        let action = if matches!(state.clients[1].phase, Phase::Idle) { Action::Lock(1) } else { Action::Send(1) };
        state = step(&model, state, action);
    }
    assert_eq!(recipe(&state, 1), &r2);
    assert_eq!(*state.store, store);
    let ZkLockStep::Wait { path: watched, .. } = &waiting else { panic!("c2 waits: {waiting:?}") };
    assert_eq!(watched, &p1, "herd-free: c2 watches its predecessor's node");
    let Phase::Waiting { wait, notified: false, .. } = &state.clients[1].phase else { panic!("c2 waits") };
    assert_eq!(**wait, waiting);

    // c1 releases; the delete fires c2's watch, in the model as in the store.
    state = step(&model, state, Action::Release(0));
    zk_write(&mut store, sessions[0], ZkOp::Delete { path: p1, version: ANY_VERSION });
    assert_eq!(*state.store, store);
    assert!(fired(&store, &waiting));
    assert!(matches!(state.clients[1].phase, Phase::Waiting { notified: true, .. }));

    // c2 wakes, lists, is first and acquires.
    state = step(&model, state, Action::Wake(1));
    let next = r2.step(ZkLockInput::Fired);
    assert_eq!(recipe(&state, 1), &r2);
    state = step(&model, state, Action::Send(1));
    let ZkLockStep::Acquired { path: p2, token: t2 } = drive(&mut store, sessions[1], &mut r2, next) else {
        panic!("c2 acquires")
    };
    assert_eq!(state.clients[1].phase, Phase::Holding { path: p2, token: t2 });
    assert_eq!(*state.store, store);
    assert!(t2 > t1, "fencing tokens (czxids) grow with each grant");
}
