//! The model checks the code we ship: its clients run `coordsim_core::recipe::mutex::EtcdMutex`
//! and its server state is `coordsim_core::store::Store` — the same types the simulator's
//! clients and servers run, not copies. This test drives the model through a handover (c1
//! acquires, c2 queues behind it, c1 writes and releases, c2 wakes and acquires) and, beside
//! it, drives the shipped recipe against the shipped store the way the simulator's lock driver
//! (sim/src/client/lock.rs) does; after every step the recipe and the store are equal.

use coordsim_core::recipe::mutex::EtcdMutex;
use coordsim_core::recipe::{EtcdInput, EtcdStep};
use coordsim_core::store::{Command, CommandResponse, DeleteRangeRequest, KeyRange, Store};
use coordsim_model::etcd::config::LOCK;
use coordsim_model::etcd::state::{Phase, State};
use coordsim_model::etcd::{Action, EtcdLock};
use coordsim_model::registry::{self, Built};
use stateright::Model;

/// The simulator's driver loop (sim/src/client/lock.rs), answered by a store instead of RPCs:
/// sends requests until the recipe waits or finishes.
fn drive(store: &mut Store, mutex: &mut EtcdMutex, mut step: EtcdStep) -> EtcdStep {
    loop {
        step = match step {
            EtcdStep::Txn(txn) => match store.apply(&Command::Txn(txn)) {
                CommandResponse::Txn(response) => mutex.step(EtcdInput::Txn(response)),
                other => panic!("{other:?}"),
            },
            EtcdStep::Range(request) => mutex.step(EtcdInput::Range(store.range(&request).unwrap())),
            done => return done,
        }
    }
}

fn model() -> EtcdLock {
    match registry::build("lease-lock", 2, 3).unwrap() {
        Built::Etcd(model) => model,
        _ => unreachable!("lease-lock is an etcd model"),
    }
}

/// The model's c`index` recipe: the shipped type, by construction.
fn recipe(state: &State, index: usize) -> &EtcdMutex {
    match &state.clients[index].phase {
        Phase::Locking { mutex, .. } | Phase::Waiting { mutex, .. } => mutex,
        other => panic!("c{} runs no recipe now: {other:?}", index + 1),
    }
}

fn step(model: &EtcdLock, state: State, action: Action) -> State {
    model.next_state(&state, action).expect("the action applies")
}

#[test]
fn the_model_runs_the_shipped_recipe_on_the_shipped_store() {
    let model = model();
    let mut state = model.init_states().remove(0);

    // The same session leases as the model granted before the run.
    let mut store = Store::new();
    for _ in 0..2 {
        store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 2 });
    }
    assert_eq!(*state.store, store);

    // c1 locks: first in the queue.
    state = step(&model, state, Action::Lock(0));
    let (mut m1, first) = EtcdMutex::lock(LOCK, 1);
    let EtcdStep::Acquired { key: k1, token: t1 } = drive(&mut store, &mut m1, first) else { panic!("c1 acquires") };
    assert_eq!(state.clients[0].phase, Phase::Holding { key: k1.clone(), token: t1, grant: 1, wrote: false });
    assert_eq!(*state.store, store);

    // c2 locks: its create txn, then the predecessor read, then it watches c1's key.
    let (mut m2, first) = EtcdMutex::lock(LOCK, 2);
    state = step(&model, state, Action::Lock(1));
    let EtcdStep::Txn(txn) = first else { panic!("the recipe starts with a txn") };
    let CommandResponse::Txn(created) = store.apply(&Command::Txn(txn)) else { panic!("txn") };
    let next = m2.step(EtcdInput::Txn(created));
    assert_eq!(recipe(&state, 1), &m2);
    assert!(matches!(&state.clients[1].phase, Phase::Locking { next: n, .. } if **n == next));
    state = step(&model, state, Action::Send(1));
    let waiting = drive(&mut store, &mut m2, next);
    assert_eq!(recipe(&state, 1), &m2);
    let EtcdStep::WaitDelete { key, from_revision } = waiting else { panic!("c2 waits") };
    assert_eq!(key, k1, "herd-free: c2 watches its predecessor");
    assert!(
        matches!(&state.clients[1].phase, Phase::Waiting { key: k, from, notified: false, .. } if *k == key && *from == from_revision)
    );

    // c1 writes and releases; the delete notifies c2's watch.
    state = step(&model, state, Action::Write(0));
    state = step(&model, state, Action::Release(0));
    store.apply(&Command::DeleteRange(DeleteRangeRequest { range: KeyRange::Key(k1), prev_kv: false }));
    assert_eq!(*state.store, store);
    assert!(matches!(state.clients[1].phase, Phase::Waiting { notified: true, .. }));

    // c2 wakes, finds no predecessor, re-reads its own key and acquires.
    state = step(&model, state, Action::Wake(1));
    let next = m2.step(EtcdInput::Deleted);
    assert_eq!(recipe(&state, 1), &m2);
    state = step(&model, state, Action::Send(1));
    state = step(&model, state, Action::Send(1));
    let EtcdStep::Acquired { key: k2, token: t2 } = drive(&mut store, &mut m2, next) else { panic!("c2 acquires") };
    assert_eq!(state.clients[1].phase, Phase::Holding { key: k2, token: t2, grant: 2, wrote: false });
    assert_eq!(*state.store, store);
    assert!(t2 > t1, "fencing tokens grow with each grant");
}
