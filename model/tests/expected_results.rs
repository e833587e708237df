//! Every model gives its expected result — each `always` property holds or is broken as the
//! model says, each `sometimes` state is reached (or shown unreachable) — with 2 and 3 clients;
//! and the size of each state space is pinned, so that a change that makes a model smaller
//! (vacuous) or larger shows up here.

mod support;

use coordsim_model::checked::{Expected, Kind};
use coordsim_model::registry::MODELS;
use support::{BFS, run};

/// Unique states (breadth-first, no symmetry) with 2 and 3 clients at the default bound.
const UNIQUE_STATES: &[(&str, usize, usize)] = &[
    ("lease-lock", 375, 10_915),
    ("lease-lock-fenced", 367, 10_639),
    ("queue-lock", 91, 3_007),
    ("herd-lock", 69, 1_909),
    ("lost-wakeup", 43, 880),
    ("lost-wakeup-fixed", 47, 1_024),
    ("orphaned-sequential-node", 149, 5_008),
    ("orphaned-sequential-node-fixed", 125, 2_929),
    ("grant-to-expired-waiter", 103, 4_582),
    ("grant-to-expired-waiter-fixed", 105, 4_168),
    ("election", 70, 1_558),
    ("election-unfenced", 70, 1_552),
    ("clock-skew", 397, 8_956),
    ("clock-skew-margin", 133, 2_218),
];

fn check(model: &str, clients: usize, unique_states: usize) {
    let report = run(model, clients, BFS);
    assert!(report.as_expected(), "{model} with {clients} clients:\n{}", report.render());
    assert_eq!(report.unique_states, unique_states, "{model} with {clients} clients: unique states");
    // Every model pairs its invariants with a state it must reach, so it cannot pass vacuously.
    let kinds: Vec<Kind> = report.properties.iter().map(|p| p.kind).collect();
    assert!(kinds.contains(&Kind::Always), "{model}: no invariant");
    assert!(report.properties.iter().any(|p| p.expected == Expected::Reachable), "{model}: nothing to reach");
}

#[test]
fn every_model_is_pinned() {
    let pinned: Vec<&str> = UNIQUE_STATES.iter().map(|(name, ..)| *name).collect();
    let registered: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
    assert_eq!(pinned, registered);
}

#[test]
fn every_model_gives_its_expected_result_with_two_clients() {
    for &(model, two, _) in UNIQUE_STATES {
        check(model, 2, two);
    }
}

#[test]
fn every_model_gives_its_expected_result_with_three_clients() {
    for &(model, _, three) in UNIQUE_STATES {
        check(model, 3, three);
    }
}
