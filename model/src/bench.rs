//! The benchmark: one model at 2–5 clients, breadth-first, depth-first, and depth-first with
//! symmetry reduction (where the model has one): unique states, seconds, peak memory.
//!
//! Peak memory is the process's peak resident set (Linux `VmHWM`), reset before each row by
//! writing `5` to /proc/self/clear_refs, so each row shows its own peak.

use std::fmt::Write as _;

use crate::registry::{self, RunOptions};
use crate::report::thousands;
use crate::runner::{Search, Strategy};

#[derive(Clone, Debug)]
pub struct Row {
    pub clients: usize,
    pub search: Search,
    pub unique_states: usize,
    pub states: usize,
    pub seconds: f64,
    pub peak_mb: Option<f64>,
    pub as_expected: bool,
}

/// Runs the table for `model`; `on_row` sees each row as it is measured.
pub fn run(
    model: &str,
    clients: impl IntoIterator<Item = usize>,
    ticks_max: Option<u8>,
    threads: usize,
    mut on_row: impl FnMut(&Row),
) -> Result<Vec<Row>, String> {
    let info = registry::info(model).ok_or_else(|| format!("unknown model {model:?}"))?;
    let mut searches = vec![
        Search { strategy: Strategy::Bfs, symmetry: false, threads },
        Search { strategy: Strategy::Dfs, symmetry: false, threads },
    ];
    if info.symmetric {
        searches.push(Search { strategy: Strategy::Dfs, symmetry: true, threads });
    }
    let mut rows = Vec::new();
    for clients in clients {
        for &search in &searches {
            reset_peak();
            let report = registry::run(model, &RunOptions { clients: Some(clients), ticks_max, search })?;
            let row = Row {
                clients,
                search,
                unique_states: report.unique_states,
                states: report.states,
                seconds: report.seconds,
                peak_mb: peak_mb(),
                as_expected: report.as_expected(),
            };
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

pub fn header() -> String {
    format!(
        "| {:>7} | {:<12} | {:>13} | {:>13} | {:>9} | {:>8} | {} |",
        "clients", "search", "unique states", "states", "seconds", "peak MB", "as expected"
    )
}

pub fn separator() -> String {
    "|--------:|:-------------|--------------:|--------------:|----------:|---------:|:---|".to_string()
}

pub fn line(row: &Row) -> String {
    let search = match (row.search.strategy, row.search.symmetry) {
        (Strategy::Bfs, _) => "BFS",
        (Strategy::Dfs, false) => "DFS",
        (Strategy::Dfs, true) => "DFS+symmetry",
    };
    let peak = row.peak_mb.map_or("?".to_string(), |mb| format!("{mb:.0}"));
    let mut out = String::new();
    let _ = write!(
        out,
        "| {:>7} | {:<12} | {:>13} | {:>13} | {:>9.3} | {:>8} | {} |",
        row.clients,
        search,
        thousands(row.unique_states),
        thousands(row.states),
        row.seconds,
        peak,
        if row.as_expected { "yes" } else { "NO" }
    );
    out
}

fn reset_peak() {
    // Not fatal where unsupported: the row then shows the process's peak so far.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
