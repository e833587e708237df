//! The result of a model does not depend on how stateright searches it: breadth-first and
//! depth-first find the same discoveries in the same state space, and depth-first with symmetry
//! reduction (where the model has one) finds the same discoveries in a smaller one.

mod support;

use coordsim_model::registry::MODELS;
use support::{BFS, DFS, DFS_SYMMETRY, discovered, run};

/// Two clients for every model; three for the symmetric ones (the store-based models at three
/// clients take a second or more each in a debug build; the benchmark covers them in release).
#[test]
fn breadth_first_and_depth_first_agree_on_every_model() {
    for info in MODELS {
        let counts: &[usize] = if info.symmetric { &[2, 3] } else { &[2] };
        for &clients in counts {
            let bfs = run(info.name, clients, BFS);
            let dfs = run(info.name, clients, DFS);
            assert_eq!(discovered(&bfs), discovered(&dfs), "{} with {clients} clients", info.name);
            assert_eq!(bfs.unique_states, dfs.unique_states, "{} with {clients} clients", info.name);
            assert!(dfs.as_expected(), "{}", dfs.render());
        }
    }
}

#[test]
fn symmetry_reduction_keeps_the_result_and_shrinks_the_state_space() {
    for info in MODELS.iter().filter(|m| m.symmetric) {
        for clients in [2, 3] {
            let plain = run(info.name, clients, DFS);
            let reduced = run(info.name, clients, DFS_SYMMETRY);
            assert_eq!(discovered(&plain), discovered(&reduced), "{} with {clients} clients", info.name);
            assert!(reduced.as_expected(), "{}", reduced.render());
            assert!(
                reduced.unique_states < plain.unique_states,
                "{} with {clients} clients: {} states with symmetry, {} without",
                info.name,
                reduced.unique_states,
                plain.unique_states
            );
        }
    }
}

#[test]
fn symmetry_is_refused_where_it_does_not_apply() {
    use coordsim_model::registry::{self, RunOptions};
    let breadth_first =
        RunOptions { clients: None, ticks_max: None, search: support::Search { symmetry: true, ..BFS } };
    let error = registry::run("queue-lock", &breadth_first).unwrap_err();
    assert!(error.contains("depth-first only"), "{error}");
    // Client identity lives in the shipped store (sessions, node names), which cannot be renamed.
    for store_based in ["lease-lock", "queue-lock"] {
        let options = RunOptions { clients: None, ticks_max: None, search: DFS_SYMMETRY };
        let error = registry::run(store_based, &options).unwrap_err();
        assert!(error.contains("no symmetry reduction"), "{store_based}: {error}");
    }
}
