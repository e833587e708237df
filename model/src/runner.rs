//! Runs stateright on one of our models: breadth- or depth-first, with or without symmetry
//! reduction, on some threads; always over the whole reachable state space (the checker is not
//! allowed to stop at the first discoveries, so state counts mean something and BFS and DFS
//! explore the same states).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use stateright::{Checker, HasDiscoveries, Model};

use crate::checked::CheckedModel;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Bfs,
    Dfs,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Bfs => "breadth-first",
            Strategy::Dfs => "depth-first",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Search {
    pub strategy: Strategy,
    /// Symmetry reduction. stateright 0.31 applies it depth-first only (breadth-first silently
    /// ignores it), so it is refused with `Bfs`.
    pub symmetry: bool,
    pub threads: usize,
}

/// What one stateright run found.
#[derive(Clone, Debug)]
pub struct Explored<A> {
    pub states: usize,
    pub unique_states: usize,
    pub max_depth: usize,
    pub seconds: f64,
    /// Per property that has a discovery: the path stateright kept (not necessarily shortest).
    pub discoveries: BTreeMap<&'static str, Vec<A>>,
}

pub fn explore<M: CheckedModel>(model: &M, search: Search) -> Result<Explored<M::Action>, String> {
    if search.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    // An empty "any of": never satisfied, so the checker explores everything.
    let builder = model.clone().checker().threads(search.threads).finish_when(HasDiscoveries::AnyOf(BTreeSet::new()));
    let builder = match (search.symmetry, model.symmetry()) {
        (false, _) => builder,
        (true, _) if search.strategy == Strategy::Bfs => {
            return Err("symmetry reduction works depth-first only in stateright 0.31: use --dfs".into());
        }
        (true, Some(representative)) => builder.symmetry_fn(representative),
        (true, None) => return Err("this model has no symmetry reduction (its clients are not interchangeable)".into()),
    };
    let started = Instant::now();
    let explored = match search.strategy {
        Strategy::Bfs => collect(builder.spawn_bfs().join(), started),
        Strategy::Dfs => collect(builder.spawn_dfs().join(), started),
    };
    Ok(explored)
}

fn collect<M: Model, C: Checker<M>>(checker: C, started: Instant) -> Explored<M::Action>
where
    M::State: Clone + PartialEq,
    M::Action: Clone + PartialEq,
{
    let seconds = started.elapsed().as_secs_f64();
    let discoveries = checker.discoveries().into_iter().map(|(name, path)| (name, path.into_actions())).collect();
    Explored {
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        seconds,
        discoveries,
    }
}
