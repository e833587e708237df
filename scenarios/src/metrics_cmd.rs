//! `coordsim metrics`: how long things took in recorded runs, side by side. Each history (a
//! simulated run's or a real cluster's) is one column; rows are request latency by kind,
//! throughput, lock handoff and drain, recovery after faults, and each node's work queue (pieces
//! of work queued at once, per 100 ms window; a simulated run with a time model)
//! (`coordsim_checker::metrics`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use coordsim_checker::history::History;
use coordsim_checker::metrics::{self, Metrics, Spread};

use crate::load::InputError;

/// Reads every history, then prints its metrics: a table (`json` false) or one JSON object per
/// line, `{"file":...,"metrics":...}`.
pub fn run(paths: &[PathBuf], json: bool) -> Result<ExitCode, InputError> {
    let mut columns = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        let found = crate::check::files_of(std::slice::from_ref(path))?;
        if path.is_dir() {
            // A run's folder holds summaries and sweeps beside its histories.
            let before = files.len();
            files.extend(found.into_iter().filter(|f| f.file_name().is_some_and(|n| n == "history.json")));
            if files.len() == before {
                return Err(InputError::Usage(format!("{}: no history.json in this folder", path.display())));
            }
        } else {
            files.extend(found);
        }
    }
    for path in files {
        let name = path.display().to_string();
        let text = crate::input::read_text(&path, crate::input::DEFAULT_LIMIT)
            .map_err(|error| InputError::Usage(format!("{name}: {error}")))?;
        let history = History::from_json(&text).map_err(|error| InputError::Usage(format!("{name}: {error}")))?;
        columns.push((name, label(&history), metrics::of(&history)));
    }
    if json {
        for (file, _, metrics) in &columns {
            let line = serde_json::json!({ "file": file, "metrics": metrics });
            crate::outln!("{line}");
        }
    } else {
        for line in table(&columns.iter().map(|(_, label, m)| (label.as_str(), m)).collect::<Vec<_>>()) {
            crate::outln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A column's heading: the scenario, the seed, and where it ran.
fn label(history: &History) -> String {
    match &history.recorded_on {
        Some(system) => format!("{} #{} ({system})", history.scenario, history.seed),
        None => format!("{} seed {}", history.scenario, history.seed),
    }
}

fn ms(us: u64) -> String {
    match us {
        0..1_000 => format!("{:.3} ms", us as f64 / 1000.0),
        1_000..100_000 => format!("{:.1} ms", us as f64 / 1000.0),
        100_000..10_000_000 => format!("{:.0} ms", us as f64 / 1000.0),
        _ => format!("{:.1} s", us as f64 / 1e6),
    }
}

fn spread(spread: Option<&Spread>) -> String {
    spread.map_or_else(|| "-".into(), |s| format!("{} / {} / {}", ms(s.p50_us), ms(s.p99_us), ms(s.max_us)))
}

/// The side-by-side table, one line per row, columns padded to their widest cell.
pub fn table(columns: &[(&str, &Metrics)]) -> Vec<String> {
    let kinds: BTreeSet<&String> = columns.iter().flat_map(|(_, m)| m.requests.keys()).collect();
    let locks: BTreeSet<&String> = columns.iter().flat_map(|(_, m)| m.locks.keys()).collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let heading = std::iter::once("p50 / p99 / max".to_string()).chain(columns.iter().map(|(l, _)| l.to_string()));
    rows.push(heading.collect());
    let mut row = |name: String, cell: &dyn Fn(&Metrics) -> String| {
        rows.push(std::iter::once(name).chain(columns.iter().map(|(_, m)| cell(m))).collect());
    };
    for kind in &kinds {
        row(format!("{kind} latency"), &|m| spread(m.requests.get(*kind).map(|r| &r.ok)));
        row(format!("{kind} ok per s (sent per s at peak)"), &|m| {
            m.requests.get(*kind).map_or("-".into(), |r| format!("{:.1} ({})", r.per_s, r.peak_per_s))
        });
        row(format!("{kind} failed / unknown"), &|m| {
            m.requests.get(*kind).map_or("-".into(), |r| format!("{} / {}", r.failed, r.unknown))
        });
    }
    for lock in &locks {
        row(format!("{lock} handoff"), &|m| spread(m.locks.get(*lock).and_then(|l| l.handoff.as_ref())));
        row(format!("{lock} grants, drain"), &|m| {
            m.locks.get(*lock).map_or("-".into(), |l| format!("{}, {}", l.grants, ms(l.drain_us)))
        });
    }
    row("recovery after a fault".into(), &|m| spread(m.recovery.as_ref()));
    row("faults never recovered from".into(), &|m| m.unrecovered.to_string());
    let nodes: BTreeSet<&String> = columns.iter().flat_map(|(_, m)| m.queues.keys()).collect();
    for node in nodes {
        row(format!("{node} queue p50 / p99 / deepest (at)"), &|m| {
            m.queues.get(node).map_or("-".into(), |q| {
                format!("{} / {} / {} (at {})", q.p50, q.p99, q.deepest, ms(q.deepest_at_ms * 1000))
            })
        });
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    rows.iter()
        .map(|r| {
            let cells: Vec<String> = r.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}
