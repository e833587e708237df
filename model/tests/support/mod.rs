//! Shared helpers for the model tests.

#![allow(dead_code)]

use coordsim_model::registry::{self, RunOptions};
use coordsim_model::report::ModelReport;
pub use coordsim_model::runner::{Search, Strategy};

pub const BFS: Search = Search { strategy: Strategy::Bfs, symmetry: false, threads: 1 };
pub const DFS: Search = Search { strategy: Strategy::Dfs, symmetry: false, threads: 1 };
pub const DFS_SYMMETRY: Search = Search { strategy: Strategy::Dfs, symmetry: true, threads: 1 };

/// Runs `model` with `clients` clients at its default bound.
pub fn run(model: &str, clients: usize, search: Search) -> ModelReport {
    registry::run(model, &RunOptions { clients: Some(clients), ticks_max: None, search })
        .unwrap_or_else(|error| panic!("{model} with {clients} clients: {error}"))
}

/// The names of the properties that got a discovery.
pub fn discovered(report: &ModelReport) -> Vec<&'static str> {
    report.properties.iter().filter(|p| p.discovered).map(|p| p.name).collect()
}
