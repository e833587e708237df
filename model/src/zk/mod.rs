//! The ZooKeeper lock world: the lock recipes on ephemeral sequential znodes, on the shipped
//! sans-IO cores.
//!
//! **Abstracts** the simulator's ZooKeeper service and clients for one lock node `/lock`: the
//! servers' replicated state is one `coordsim_core::store::Store` seen through its ZooKeeper view
//! (`coordsim_core::zk`: znodes are keys, sessions are leases, the zxid is the revision), each
//! client runs the shipped recipe `coordsim_core::recipe::zk_lock::ZkLock` (the code the
//! simulator's clients run, sim/src/client/zk_lock.rs), and watches fire by the shipped rules
//! (`zk::watch::fired` over the store's events). The model only moves messages: each request
//! the recipe asks for is answered by the store in one step (client.rs); a watch is notified
//! after the write that fires it (watch.rs) and wakes its client in a later step.
//!
//! The recipe's variants are its own switches (`ZkLockConfig`): the queue lock (`exists` watch on
//! the predecessor), the herd lock (a children watch on the lock node: every waiter wakes on
//! every change, case 10), `recheck_vanished` off (the lost wakeup, case 08: `exists` answers
//! "no node" and the client sleeps on a watch that never fires) and `unique_tag` off (case 07: a
//! create whose reply is lost is created again, orphaning the first node in front of the queue).
//! Each client locks once and releases. The nemesis may close one queued client's session (its
//! node and watch go away, so a node vanishes from the middle of the queue and not only at its
//! head), or lose the reply to one create (the create is applied).
//!
//! **Leaves out**: replication (one store stands for the ensemble: no stale reads from a lagging
//! server, no `sync`), time and session expiry by timeout (a closed session stands for one),
//! message loss other than the one create reply, and the protected resource (nothing pauses here,
//! so "holding" and "acting" coincide).
//!
//! **No symmetry reduction**: client identity lives inside the shipped store (session IDs, node
//! names carrying the client's tag, their order in the MVCC history); the store offers no way to
//! rename them, so a permuted state cannot be built. Roles stay in fixed order (c1 first).

mod client;
mod describe;
pub mod state;
mod watch;

use coordsim_core::recipe::zk_lock::{ZkLockConfig, ZkLockStep};
use stateright::{Model, Property};

use crate::checked::{self, CheckedModel, Expectation};
use crate::trace::TraceStep;
use client::Reply;
use state::{End, Phase, State};

pub use client::tag;

/// The lock node, as in the simulator's scenarios.
pub const LOCK: &str = "/lock";

/// The fault the nemesis may inject (at most `faults_max` times in a run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A queued client's session closes: its node is deleted and it gives up.
    CloseQueuedSession,
    /// The reply to a create is lost; the create was applied (case 07).
    LoseCreateReply,
}

#[derive(Clone, Debug)]
pub struct ZkConfig {
    pub clients: usize,
    /// The shipped recipe's variant and bug switches.
    pub recipe: ZkLockConfig,
    pub fault: Fault,
    pub faults_max: u8,
    /// The properties this model judges and their expected results.
    pub expectations: Vec<Expectation>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The client calls `lock()`: the recipe's create goes out.
    Lock(usize),
    /// The client sends the request its recipe asked for (create, `getChildren`, `exists`) and
    /// takes the answer.
    Send(usize),
    /// The client's watch delivers its notification.
    Wake(usize),
    /// The holder deletes its node (`unlock()`).
    Release(usize),
    /// The nemesis closes a queued client's session.
    CloseSession(usize),
    /// The client's create is applied but its reply is lost.
    LoseCreateReply(usize),
}

#[derive(Clone, Debug)]
pub struct ZkLockModel {
    pub config: ZkConfig,
}

impl ZkLockModel {
    pub fn new(config: ZkConfig) -> Self {
        for expectation in &config.expectations {
            assert!(condition(expectation.property).is_some(), "unknown property {}", expectation.property);
        }
        ZkLockModel { config }
    }

    /// The protocol's own actions (no faults), in client order.
    fn protocol_actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (index, client) in state.clients.iter().enumerate() {
            match client.phase {
                Phase::Idle => actions.push(Action::Lock(index)),
                Phase::Requesting { .. } => actions.push(Action::Send(index)),
                Phase::Waiting { notified: true, .. } => actions.push(Action::Wake(index)),
                Phase::Holding { .. } => actions.push(Action::Release(index)),
                Phase::Waiting { notified: false, .. } | Phase::Done(_) => {}
            }
        }
    }

    fn fault_actions(&self, state: &State, actions: &mut Vec<Action>) {
        if state.faults >= self.config.faults_max {
            return;
        }
        for (index, client) in state.clients.iter().enumerate() {
            match (self.config.fault, &client.phase) {
                (Fault::CloseQueuedSession, Phase::Requesting { recipe, .. } | Phase::Waiting { recipe, .. })
                    if recipe.node().is_some() =>
                {
                    actions.push(Action::CloseSession(index))
                }
                (Fault::LoseCreateReply, Phase::Idle) => actions.push(Action::LoseCreateReply(index)),
                (Fault::LoseCreateReply, Phase::Requesting { next, .. })
                    if matches!(**next, ZkLockStep::Create { .. }) =>
                {
                    actions.push(Action::LoseCreateReply(index))
                }
                _ => {}
            }
        }
    }

    fn apply(&self, state: &mut State, action: &Action) {
        match *action {
            Action::Lock(i) => client::lock(self.config.recipe, state, i, Reply::Delivered),
            Action::Send(i) => client::send(state, i, Reply::Delivered),
            Action::Wake(i) => client::wake(state, i),
            Action::Release(i) => client::release(state, i),
            Action::CloseSession(i) => {
                state.faults += 1;
                client::abandon(state, i);
            }
            Action::LoseCreateReply(i) => {
                state.faults += 1;
                match state.clients[i].phase {
                    Phase::Idle => client::lock(self.config.recipe, state, i, Reply::Lost),
                    _ => client::send(state, i, Reply::Lost),
                }
            }
        }
    }
}

/// Liveness as a state: some client is not done and the protocol can take no step (faults
/// aside): nobody holds, nothing is pending, every waiter waits for a watch that will not fire.
/// (stateright's `eventually` is unreliable; this is an `always`.)
pub fn stuck(model: &ZkLockModel, state: &State) -> bool {
    let mut actions = Vec::new();
    model.protocol_actions(state, &mut actions);
    !state.all_done() && actions.is_empty()
}

fn condition(name: &str) -> Option<fn(&ZkLockModel, &State) -> bool> {
    let condition: fn(&ZkLockModel, &State) -> bool = match name {
        // always
        "single_holder" => |_, s| s.holders() <= 1,
        "wakeups_per_release" => |_, s| !s.monitor.herd,
        "no_stuck_waiter" => |m, s| !stuck(m, s),
        // sometimes
        "contended_release" => |_, s| s.monitor.release_woke,
        "predecessor_vanished" => |_, s| s.monitor.predecessor_vanished,
        "waiter_abandoned" => |_, s| s.clients.iter().any(|c| c.phase == Phase::Done(End::Abandoned)),
        "create_reply_lost" => |_, s| s.monitor.create_reply_lost,
        "orphan_node" => |_, s| s.monitor.orphan_node,
        "all_released" => |_, s| s.clients.iter().all(|c| c.phase == Phase::Done(End::Released)),
        _ => return None,
    };
    Some(condition)
}

impl Model for ZkLockModel {
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

impl CheckedModel for ZkLockModel {
    fn expectations(&self) -> &[Expectation] {
        &self.config.expectations
    }

    fn describe(&self, before: &State, action: &Action, after: &State) -> TraceStep {
        describe::step(before, action, after)
    }
}
