//! The ZooKeeper lock world: the lock recipe on ephemeral sequential nodes, with the watch
//! placed on the predecessor (the queue lock), on the holder (the herd lock, case 10), and a bug
//! switch for the lost wakeup (case 08).
//!
//! **Abstracts** the ZooKeeper lock recipe (and Curator's InterProcessMutex): a client creates
//! an ephemeral sequential node under the lock, lists the children, holds the lock when its node
//! is the lowest, and otherwise calls `exists(node, watch)` on the node it waits for, then sleeps
//! until the watch fires and lists again. One action is one request and its answer. Watches are
//! one-shot and fire on the node's delete. A queued client may abandon once in a run (its
//! session closes: its node and its watch go away), so that a node vanishes from the middle of
//! the queue and not only at its head.
//!
//! **Not built on a shared core, and why**: the simulator has no ZooKeeper view yet (no
//! sequential nodes, children lists or exists-watches: its store is etcd's), and the recipe
//! cores for the ZooKeeper lock, the herd lock and the lost-wakeup switch are being written in
//! sim/src/recipe/ now. This is the smallest honest model of the recipe until they exist; the
//! etcd mutex, which the simulator ships, is checked for herd-freedom on the shared cores by the
//! etcd models (`wakeups_per_release`).
//!
//! **Leaves out**: sessions and their expiry (an abandon stands for a session that closed),
//! lost replies (case 07), time, the protected resource (no pauses here, so "holding" and
//! "acting" coincide), and the children-watch variant of the herd (a children watch fires on
//! every create too, which only adds wakeups).

mod describe;
pub mod state;

use stateright::{Model, Property};

use crate::checked::{self, CheckedModel, Expectation};
use crate::trace::TraceStep;
use state::{End, Phase, State};

/// What a waiting client watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// The next lower node: one release wakes one waiter.
    Predecessor,
    /// The lowest node (the holder): every waiter wakes on each release, the herd.
    Holder,
}

#[derive(Clone, Debug)]
pub struct ZkConfig {
    pub clients: usize,
    pub watch: Watch,
    /// The lost-wakeup bug: `exists` answering "no node" is taken as "watch set".
    pub lost_wakeup_bug: bool,
    pub abandons_max: u8,
    pub expectations: Vec<Expectation>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `create(/lock/n-, ephemeral sequential)`.
    Create(usize),
    /// `getChildren(/lock)`.
    List(usize),
    /// `exists(target, watch = true)`.
    Exists(usize),
    /// The watch fires.
    Wake(usize),
    /// `delete(our node)`.
    Release(usize),
    /// The nemesis closes a queued client's session.
    Abandon(usize),
}

#[derive(Clone, Debug)]
pub struct ZkLock {
    pub config: ZkConfig,
}

impl ZkLock {
    pub fn new(config: ZkConfig) -> Self {
        for expectation in &config.expectations {
            assert!(condition(expectation.property).is_some(), "unknown property {}", expectation.property);
        }
        ZkLock { config }
    }

    /// The protocol's own actions (no faults), in client order.
    fn protocol_actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (index, client) in state.clients.iter().enumerate() {
            match client.phase {
                Phase::Idle => actions.push(Action::Create(index)),
                Phase::Listing { .. } => actions.push(Action::List(index)),
                Phase::Checking { .. } => actions.push(Action::Exists(index)),
                Phase::Watching { notified: true, .. } => actions.push(Action::Wake(index)),
                Phase::Holding => actions.push(Action::Release(index)),
                Phase::Watching { notified: false, .. } | Phase::Sleeping { .. } | Phase::Done(_) => {}
            }
        }
    }

    fn fault_actions(&self, state: &State, actions: &mut Vec<Action>) {
        if state.abandons >= self.config.abandons_max {
            return;
        }
        for (index, client) in state.clients.iter().enumerate() {
            let queued = client.seq != 0 && !matches!(client.phase, Phase::Holding | Phase::Done(_));
            if queued {
                actions.push(Action::Abandon(index));
            }
        }
    }

    fn apply(&self, state: &mut State, action: &Action) {
        match *action {
            Action::Create(i) => {
                let seq = state.next_seq;
                state.next_seq += 1;
                state.nodes.insert(seq);
                state.clients[i].seq = seq;
                state.clients[i].phase = Phase::Listing { recheck: false };
            }
            Action::List(i) => {
                let mine = state.clients[i].seq;
                state.clients[i].phase = match (state.nodes.lowest(), self.config.watch) {
                    (Some(lowest), _) if lowest == mine => Phase::Holding,
                    (_, Watch::Predecessor) => Phase::Checking { target: state.nodes.below(mine).expect("not lowest") },
                    (Some(lowest), Watch::Holder) => Phase::Checking { target: lowest },
                    (None, Watch::Holder) => unreachable!("our own node is a child"),
                };
            }
            Action::Exists(i) => {
                let Phase::Checking { target } = state.clients[i].phase else { unreachable!("exists while checking") };
                state.clients[i].phase = if state.nodes.contains(target) {
                    Phase::Watching { target, notified: false }
                } else if self.config.lost_wakeup_bug {
                    Phase::Sleeping { target }
                } else {
                    Phase::Listing { recheck: true }
                };
            }
            Action::Wake(i) => state.clients[i].phase = Phase::Listing { recheck: false },
            Action::Release(i) => {
                state.delete(state.clients[i].seq);
                state.clients[i].phase = Phase::Done(End::Released);
            }
            Action::Abandon(i) => {
                state.abandons += 1;
                // The session's watch goes with it: the client stops watching first.
                state.clients[i].phase = Phase::Done(End::Abandoned);
                state.delete(state.clients[i].seq);
            }
        }
    }
}

/// Liveness as a state: some client is not done and the protocol can take no step (faults
/// aside): nobody holds, nothing is pending, every waiter waits for a wakeup that cannot come.
pub fn stuck(model: &ZkLock, state: &State) -> bool {
    let mut actions = Vec::new();
    model.protocol_actions(state, &mut actions);
    !state.all_done() && actions.is_empty()
}

fn condition(name: &str) -> Option<fn(&ZkLock, &State) -> bool> {
    let condition: fn(&ZkLock, &State) -> bool = match name {
        "mutual_exclusion" => |_, s| s.holders() <= 1,
        "wakeups_per_release" => |_, s| !s.herd,
        "no_stuck_waiter" => |m, s| !stuck(m, s),
        "contended_release" => {
            |_, s| s.clients.iter().any(|c| matches!(c.phase, Phase::Watching { notified: true, .. }))
        }
        "predecessor_vanished" => |_, s| {
            s.clients.iter().any(|c| matches!(c.phase, Phase::Listing { recheck: true } | Phase::Sleeping { .. }))
        },
        "waiter_abandoned" => |_, s| s.clients.iter().any(|c| c.phase == Phase::Done(End::Abandoned)),
        "all_released" => |_, s| s.clients.iter().all(|c| c.phase == Phase::Done(End::Released)),
        _ => return None,
    };
    Some(condition)
}

impl Model for ZkLock {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State::init(self.config.clients)]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.protocol_actions(state, actions);
        self.fault_actions(state, actions);
    }

    fn next_state(&self, state: &State, action: Action) -> Option<State> {
        let mut next = state.clone();
        self.apply(&mut next, &action);
        Some(next)
    }

    fn format_step(&self, state: &State, action: Action) -> Option<String> {
        let next = self.next_state(state, action.clone())?;
        let step = self.describe(state, &action, &next);
        Some(format!("{}: {}", step.actor, step.text))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let lookup = |e: &Expectation| condition(e.property).expect("checked in new()");
        self.config.expectations.iter().map(|e| checked::property(e, lookup(e))).collect()
    }
}

impl CheckedModel for ZkLock {
    fn expectations(&self) -> &[Expectation] {
        &self.config.expectations
    }

    fn symmetry(&self) -> Option<crate::checked::Representative<State>> {
        Some(State::sorted)
    }

    fn describe(&self, before: &State, action: &Action, after: &State) -> TraceStep {
        describe::step(before, action, after)
    }
}
