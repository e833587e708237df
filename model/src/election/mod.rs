//! The election world: leaders chosen by majority vote in numbered terms, acting on a resource
//! fenced by the term (the epoch).
//!
//! **Abstracts** term-based leader election (Raft's election rules, which openraft runs for the
//! simulator's servers, and any election whose leaders carry an epoch to the resource): a node
//! times out and campaigns in the next term, voting for itself; each node votes at most once
//! per term and moves to any higher term it sees, stepping down if it led; a candidate with a
//! majority leads its term and writes once to the resource with its term as the fencing token.
//! A leader that has not yet heard of a newer term still believes it leads: that is the stale
//! leader fencing exists for. The resource is the shipped `coordsim_core::resource::Resource`.
//!
//! **Not built on a shared core, and why**: the simulator's election is openraft's, inside
//! async code, and the election recipe core (sim/core/src/recipe/) is being written now; this is the
//! smallest model of the rule that matters here (one vote per node per term).
//!
//! **Leaves out**: logs and the up-to-date check on votes (no log here), heartbeats, message
//! loss and delay (a vote request and its answer are one step; a node that has not been asked
//! is "partitioned" for as long as the schedule wants), restarts, and time (`ticks_max` bounds
//! the terms instead).

mod describe;
pub mod state;

use coordsim_core::resource::ResourceMode;
use stateright::{Model, Property};

use crate::checked::{self, CheckedModel, Expectation};
use crate::trace::TraceStep;
use state::{Role, State};

#[derive(Clone, Debug)]
pub struct ElectionConfig {
    pub nodes: usize,
    pub terms_max: u8,
    pub resource: ResourceMode,
    pub expectations: Vec<Expectation>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The node's election timer fires: it campaigns in the next term.
    Timeout(usize),
    /// The candidate's vote request reaches the voter and the answer comes back.
    RequestVote { candidate: usize, voter: usize },
    /// The leader writes to the resource with its term.
    Write(usize),
}

#[derive(Clone, Debug)]
pub struct Election {
    pub config: ElectionConfig,
}

impl Election {
    pub fn new(config: ElectionConfig) -> Self {
        assert!(config.nodes <= 8, "votes are a byte of bits");
        for expectation in &config.expectations {
            assert!(condition(expectation.property).is_some(), "unknown property {}", expectation.property);
        }
        Election { config }
    }

    fn majority(&self) -> u32 {
        self.config.nodes as u32 / 2 + 1
    }

    fn apply(&self, state: &mut State, action: &Action) {
        match *action {
            Action::Timeout(i) => {
                let node = &mut state.nodes[i];
                node.term += 1;
                node.role = Role::Candidate;
                node.voted_for = Some(i as u8);
                node.votes = 1 << i;
                node.wrote = false;
                self.maybe_lead(state, i);
            }
            Action::RequestVote { candidate, voter } => self.request_vote(state, candidate, voter),
            Action::Write(i) => {
                let term = state.nodes[i].term;
                let decision = state.resource.write(i64::from(term));
                state.nodes[i].wrote = true;
                let monitor = &mut state.monitor;
                if i64::from(term) < decision.highest_before {
                    monitor.deposed_leader_acted = true;
                }
                if decision.accepted {
                    monitor.term_went_back |= i64::from(term) < decision.highest_before;
                    match monitor.term_writer[usize::from(term)] {
                        Some(writer) if writer != i as u8 => monitor.two_writers_one_term = true,
                        _ => monitor.term_writer[usize::from(term)] = Some(i as u8),
                    }
                }
            }
        }
    }

    fn request_vote(&self, state: &mut State, candidate: usize, voter: usize) {
        let term = state.nodes[candidate].term;
        if state.nodes[voter].term > term {
            // The answer carries a newer term: the candidate steps down.
            let newer = state.nodes[voter].term;
            state.nodes[candidate].follow(newer);
            return;
        }
        if state.nodes[voter].term < term {
            state.nodes[voter].follow(term);
        }
        let free = state.nodes[voter].voted_for.is_none_or(|v| usize::from(v) == candidate);
        if free {
            state.nodes[voter].voted_for = Some(candidate as u8);
            state.nodes[candidate].votes |= 1 << voter;
            self.maybe_lead(state, candidate);
        }
    }

    fn maybe_lead(&self, state: &mut State, candidate: usize) {
        let node = &mut state.nodes[candidate];
        if node.role == Role::Candidate && node.votes.count_ones() >= self.majority() {
            node.role = Role::Leader;
        }
    }
}

fn condition(name: &str) -> Option<fn(&Election, &State) -> bool> {
    let condition: fn(&Election, &State) -> bool = match name {
        "election_safety" => |_, s| !s.two_leaders_in_one_term(),
        "one_writer_per_epoch" => |_, s| !s.monitor.two_writers_one_term,
        "fencing" => |_, s| !s.monitor.term_went_back,
        "leader_elected" => |_, s| s.nodes.iter().any(|n| n.role == Role::Leader),
        "two_leaders" => |_, s| s.nodes.iter().filter(|n| n.role == Role::Leader).count() >= 2,
        "deposed_leader_acted" => |_, s| s.monitor.deposed_leader_acted,
        _ => return None,
    };
    Some(condition)
}

impl Model for Election {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State::init(self.config.nodes, self.config.terms_max, self.config.resource)]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (i, node) in state.nodes.iter().enumerate() {
            if node.role != Role::Leader && node.term < self.config.terms_max {
                actions.push(Action::Timeout(i));
            }
            if node.role == Role::Candidate {
                let unasked = (0..state.nodes.len()).filter(|&v| v != i && node.votes & (1 << v) == 0);
                actions.extend(unasked.map(|voter| Action::RequestVote { candidate: i, voter }));
            }
            if node.role == Role::Leader && !node.wrote {
                actions.push(Action::Write(i));
            }
        }
    }

    fn next_state(&self, state: &State, action: Action) -> Option<State> {
        let mut next = state.clone();
        let may_be_refused = matches!(action, Action::RequestVote { .. });
        self.apply(&mut next, &action);
        // A refused vote request changes nothing: not a step.
        (!may_be_refused || next != *state).then_some(next)
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

impl CheckedModel for Election {
    fn expectations(&self) -> &[Expectation] {
        &self.config.expectations
    }

    fn symmetry(&self) -> Option<crate::checked::Representative<State>> {
        Some(State::representative)
    }

    fn describe(&self, before: &State, action: &Action, after: &State) -> TraceStep {
        describe::step(before, action, after)
    }
}
