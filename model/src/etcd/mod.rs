//! The etcd lock world: lease-based locks on the shipped sans-IO cores.
//!
//! **Abstracts** the simulator's service and clients for one lock: the servers' replicated
//! state is one `coordsim_core::store::Store` (the MVCC store with leases, the code every server
//! applies its log to), lease deadlines are the leader's `coordsim_core::lessor::Lessor`, each
//! client runs the etcd mutex recipe `coordsim_core::recipe::mutex::EtcdMutex` (the code the
//! simulator's clients run), and writes go to `coordsim_core::resource::Resource` (fenced or not).
//! The model only moves messages: each request the recipe asks for is answered by the store in
//! one step (client.rs), watches are the store's events (watch.rs), and true time advances in
//! ticks during which keepalives renew, clocks move and leases expire (time.rs).
//!
//! Each client has a session lease granted before the run, locks (some `rounds`), writes once
//! to the resource while it believes it holds the lock, and releases. The nemesis may pause a
//! client (case 01, case 02) or cut a holder off from the servers (case 09).
//!
//! **Leaves out**: replication (one store stands for the Raft group: no leader changes, so
//! cases 03 and 04 are not here), message loss, delay and reordering (a request and its answer
//! are one atomic step; a paused client has no request in flight), client crashes and new
//! sessions (a client whose session ended stops), compaction, and keepalive timing (a connected
//! client's keepalive reaches the server every tick).
//!
//! **No symmetry reduction**: client identity lives inside the shipped store (lease IDs, key
//! names derived from them, their order in the MVCC history); the store offers no way to rename
//! them, so a permuted state cannot be built. Roles stay in fixed order (c1 first).

mod client;
pub mod config;
mod describe;
mod properties;
pub mod state;
pub mod time;
mod watch;

use stateright::{Model, Property};

use crate::checked::{self, CheckedModel, Expectation};
use crate::trace::TraceStep;
use config::{EtcdConfig, Fault};
use state::{ClientFault, Phase, State};

pub use properties::stuck;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The client calls `lock()`: the recipe's create txn goes out.
    Lock(usize),
    /// The client sends the request its recipe asked for and takes the answer.
    Send(usize),
    /// The client's watch delivers the predecessor's delete.
    Wake(usize),
    /// The holder writes to the resource with its token.
    Write(usize),
    /// The holder deletes its key (`unlock()`).
    Release(usize),
    Pause(usize),
    Resume(usize),
    CutOff(usize),
    /// True time advances one tick; clients with a running deadline see their clock advance by
    /// `client_units`.
    Tick {
        client_units: u8,
    },
}

#[derive(Clone, Debug)]
pub struct EtcdLock {
    pub config: EtcdConfig,
}

impl EtcdLock {
    pub fn new(config: EtcdConfig) -> Self {
        for expectation in &config.expectations {
            assert!(properties::condition(expectation.property).is_some(), "unknown property {}", expectation.property);
        }
        EtcdLock { config }
    }

    /// The actions enabled in `state`, in a fixed order (clients first, then the tick).
    pub fn enabled(&self, state: &State) -> Vec<Action> {
        let mut actions = Vec::new();
        for (index, client) in state.clients.iter().enumerate() {
            if client.fault == Some(ClientFault::Paused) {
                actions.push(Action::Resume(index));
                continue;
            }
            let connected = client.fault.is_none();
            match &client.phase {
                Phase::Idle if connected => actions.push(Action::Lock(index)),
                Phase::Locking { .. } if connected => actions.push(Action::Send(index)),
                Phase::Waiting { notified: true, .. } if connected => actions.push(Action::Wake(index)),
                Phase::Holding { wrote: false, .. } => actions.push(Action::Write(index)),
                Phase::Holding { wrote: true, .. } if connected => actions.push(Action::Release(index)),
                _ => {}
            }
            if let Some(fault) = self.fault_for(state, index) {
                actions.push(fault);
            }
        }
        if state.now < self.config.ticks_max && time::useful(&self.config, state) {
            for client_units in time::client_unit_choices(&self.config, state) {
                actions.push(Action::Tick { client_units });
            }
        }
        actions
    }

    /// The fault the nemesis may inject on this client now, if any.
    fn fault_for(&self, state: &State, index: usize) -> Option<Action> {
        let client = &state.clients[index];
        if state.faults >= self.config.faults_max || client.fault.is_some() {
            return None;
        }
        match (self.config.fault, &client.phase) {
            (Fault::Pause, Phase::Locking { .. } | Phase::Waiting { .. } | Phase::Holding { .. }) => {
                Some(Action::Pause(index))
            }
            (Fault::PauseWhileWaiting, Phase::Waiting { .. }) => Some(Action::Pause(index)),
            (Fault::CutOffHolder, Phase::Holding { .. }) => Some(Action::CutOff(index)),
            _ => None,
        }
    }

    fn apply(&self, state: &mut State, action: &Action) {
        match *action {
            Action::Lock(index) => client::lock(&self.config, state, index),
            Action::Send(index) => client::send(state, index),
            Action::Wake(index) => client::wake(state, index),
            Action::Write(index) => client::write(state, index),
            Action::Release(index) => client::release(&self.config, state, index),
            Action::Pause(index) => self.inject(state, index, ClientFault::Paused),
            Action::CutOff(index) => self.inject(state, index, ClientFault::CutOff),
            Action::Resume(index) => state.clients[index].fault = None,
            Action::Tick { client_units } => time::tick(&self.config, state, client_units),
        }
    }

    fn inject(&self, state: &mut State, index: usize, fault: ClientFault) {
        state.faults += 1;
        state.clients[index].fault = Some(fault);
    }
}

impl Model for EtcdLock {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State::init(&self.config)]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        actions.extend(self.enabled(state));
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
        let lookup = |e: &Expectation| properties::condition(e.property).expect("checked in new()");
        self.config.expectations.iter().map(|e| checked::property(e, lookup(e))).collect()
    }
}

impl CheckedModel for EtcdLock {
    fn expectations(&self) -> &[Expectation] {
        &self.config.expectations
    }

    fn describe(&self, before: &State, action: &Action, after: &State) -> TraceStep {
        describe::step(&self.config, before, action, after)
    }
}
