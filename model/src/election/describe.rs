//! Each step of the election world: campaigns, votes, leadership (a belief, as the simulator
//! records a client's belief that it holds a lock) and writes with the term as the token.

use super::Action;
use super::state::{Role, State};
use crate::trace::{TraceStep, client_name};

pub fn step(before: &State, action: &Action, after: &State) -> TraceStep {
    match *action {
        Action::Timeout(i) => {
            let text = format!("election timeout → candidate in term {}, votes for itself", after.nodes[i].term);
            let step = leadership(TraceStep::new(client_name(i), text), before, after, i);
            if before.nodes[i].role == Role::Leader { step.closing(format!("belief c{}", i + 1)) } else { step }
        }
        Action::RequestVote { candidate, voter } => vote(before, after, candidate, voter),
        Action::Write(i) => {
            let term = before.nodes[i].term;
            // The decision, replayed on a copy of the resource as it was.
            let accepted = before.resource.clone().write(i64::from(term)).accepted;
            let verdict = if after.monitor.term_went_back && !before.monitor.term_went_back {
                "accepted ✗ a newer term was already accepted"
            } else if accepted {
                "accepted"
            } else {
                "rejected (fenced: a newer term was accepted)"
            };
            TraceStep::new(client_name(i), format!("write token {term} (its term) → {verdict}"))
        }
    }
}

fn vote(before: &State, after: &State, candidate: usize, voter: usize) -> TraceStep {
    let term = before.nodes[candidate].term;
    let (c, v) = (client_name(candidate), client_name(voter));
    let mut text = if after.nodes[candidate].term > term {
        format!(
            "request vote from {v} for term {term} → refused: {v} is in term {}; {c} steps down",
            after.nodes[candidate].term
        )
    } else {
        let stepped =
            if before.nodes[voter].role == Role::Leader { format!("; {v} steps down") } else { String::new() };
        format!("request vote from {v} for term {term} → granted{stepped}")
    };
    if after.nodes[candidate].role == Role::Leader && before.nodes[candidate].role != Role::Leader {
        text.push_str(&format!(" → leader of term {term} · belief start"));
    }
    let mut step = leadership(TraceStep::new(c, text), before, after, candidate);
    if before.nodes[voter].role == Role::Leader && after.nodes[voter].role != Role::Leader {
        step = step.closing(format!("belief c{}", voter + 1));
    }
    step
}

/// Leadership is drawn like a lock belief: from election to stepping down.
fn leadership(step: TraceStep, before: &State, after: &State, i: usize) -> TraceStep {
    if after.nodes[i].role == Role::Leader && before.nodes[i].role != Role::Leader {
        step.opening(format!("belief c{}", i + 1))
    } else {
        step
    }
}
