//! The real systems' verdicts beside the simulator's, scenario by scenario: read from a folder of
//! real runs (`<system>/<scenario>/run-N/summary.json`, as `coordsim real` and
//! scripts/nightly-real.sh write them), kept as `real-verdicts.json`, and drawn as the Markdown
//! table of docs/real-systems.md (`real-verdicts.md`, which a test holds to the committed JSON
//! and to the library's expectations of today).
//!
//! The simulator's column is not measured here: it is each scenario's expectation as the
//! library says now, which CI holds on seeds 1..20. A scenario whose expectation changed since
//! the real runs shows it, and the committed page goes stale until it is drawn again.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use coordsim_reports::RunSummary;
use coordsim_sim::scenario::Expectation;

use crate::load::InputError;

/// The schema tag of `real-verdicts.json`.
pub const SCHEMA: &str = "coordsim-real-verdicts/1";

/// Every real run of a folder, as verdicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RealVerdicts {
    pub schema: String,
    /// How the runs were made and where (free text, kept with the figures).
    pub source: String,
    /// Sorted by scenario, system, run.
    pub runs: Vec<RealRun>,
}

/// One real run's verdicts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RealRun {
    pub scenario: String,
    /// `etcd` or `zookeeper`.
    pub system: String,
    pub run: u64,
    /// The properties the run judged (a real run judges fewer than the simulator).
    pub judged: Vec<String>,
    /// Those that failed.
    pub failed: Vec<String>,
    /// Whether every judged verdict was the scenario's expectation.
    pub as_expected: bool,
}

/// The systems, in the table's column order, with their column titles.
const SYSTEMS: [(&str, &str); 2] = [("etcd", "real etcd"), ("zookeeper", "real ZooKeeper")];

impl RealVerdicts {
    /// Reads every `<system>/<scenario>/run-N/summary.json` under `dir`; `source` says how they
    /// were made. An error names the file.
    pub fn from_folder(dir: &Path, source: &str) -> Result<RealVerdicts, InputError> {
        let mut runs = Vec::new();
        for (system, _) in SYSTEMS {
            let Ok(scenarios) = std::fs::read_dir(dir.join(system)) else { continue };
            for scenario in scenarios.flatten() {
                let Ok(run_dirs) = std::fs::read_dir(scenario.path()) else { continue };
                for run_dir in run_dirs.flatten() {
                    let name = run_dir.file_name().to_string_lossy().to_string();
                    let Some(run) = name.strip_prefix("run-").and_then(|n| n.parse::<u64>().ok()) else { continue };
                    let path = run_dir.path().join("summary.json");
                    if !path.is_file() {
                        continue;
                    }
                    let text = crate::input::read_text(&path, crate::input::DEFAULT_LIMIT)
                        .map_err(|e| InputError::Usage(format!("{}: {e}", path.display())))?;
                    let summary = RunSummary::from_json(&text)
                        .map_err(|e| InputError::Usage(format!("{}: {e}", path.display())))?;
                    runs.push(RealRun {
                        scenario: summary.scenario.clone(),
                        system: system.to_string(),
                        run,
                        judged: summary.outcomes.iter().map(|o| o.report.property.clone()).collect(),
                        failed: summary
                            .outcomes
                            .iter()
                            .filter(|o| o.report.verdict == Verdict::Fail)
                            .map(|o| o.report.property.clone())
                            .collect(),
                        as_expected: summary.as_expected,
                    });
                }
            }
        }
        runs.sort_by(|a, b| (&a.scenario, &a.system, a.run).cmp(&(&b.scenario, &b.system, b.run)));
        Ok(RealVerdicts { schema: SCHEMA.to_string(), source: source.to_string(), runs })
    }

    pub fn from_json(text: &str) -> Result<RealVerdicts, String> {
        let verdicts: RealVerdicts = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if verdicts.schema != SCHEMA {
            return Err(format!("schema {:?}: expected {SCHEMA:?}", verdicts.schema));
        }
        Ok(verdicts)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("verdicts serialize") + "\n"
    }

    /// The table: a row per scenario, the simulator's expectation (from the library as it is
    /// now) beside each system's runs, and a last line counting the runs not as expected.
    pub fn markdown(&self) -> String {
        let mut by_scenario: BTreeMap<&str, BTreeMap<&str, Vec<&RealRun>>> = BTreeMap::new();
        for run in &self.runs {
            by_scenario.entry(&run.scenario).or_default().entry(&run.system).or_default().push(run);
        }
        let mut out = String::new();
        out.push_str(&format!("{}\n\n", self.source.trim()));
        out.push_str("| scenario | simulator (expected; CI holds it on seeds 1..20) |");
        for (_, title) in SYSTEMS {
            out.push_str(&format!(" {title} |"));
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---|".repeat(SYSTEMS.len()));
        out.push('\n');
        for (scenario, systems) in &by_scenario {
            out.push_str(&format!("| `{scenario}` | {} |", simulator_column(scenario)));
            for (system, _) in SYSTEMS {
                let cell = systems.get(system).map_or_else(|| "—".to_string(), |runs| real_column(runs));
                out.push_str(&format!(" {cell} |"));
            }
            out.push('\n');
        }
        let unexpected = self.runs.iter().filter(|run| !run.as_expected).count();
        out.push_str(&format!(
            "\n{} real runs of {} scenarios, {} not as expected{}.\n",
            self.runs.len(),
            by_scenario.len(),
            unexpected,
            if unexpected == 0 { "" } else { " (marked **not as expected**)" }
        ));
        out
    }
}

/// The scenario's expectation as the library has it now: `all pass`, or `fail: ...`, and the
/// properties it does not judge (`any: ...`).
fn simulator_column(scenario: &str) -> String {
    let Some(text) = crate::library::get(scenario) else { return "(no longer in the library)".to_string() };
    let Ok(scenario) = crate::load::parse(scenario, text) else { return "(does not parse)".to_string() };
    let with = |expectation: Expectation| -> Vec<&str> {
        Property::ALL
            .iter()
            .filter(|p| !p.is_informational() && scenario.expectation(**p) == expectation)
            .map(|p| p.id())
            .collect()
    };
    let (fail, any) = (with(Expectation::Fail), with(Expectation::Any));
    let mut cell = if fail.is_empty() { "all pass".to_string() } else { format!("fail: {}", fail.join(", ")) };
    if !any.is_empty() {
        cell.push_str(&format!("; any: {}", any.join(", ")));
    }
    cell
}

/// A system's runs of one scenario: what failed (`all pass` if nothing), how many runs gave
/// each result when they differ, and the runs not as expected.
fn real_column(runs: &[&RealRun]) -> String {
    // The runs as expected first.
    let mut results: BTreeMap<(bool, Vec<String>), usize> = BTreeMap::new();
    for run in runs {
        *results.entry((!run.as_expected, run.failed.clone())).or_default() += 1;
    }
    let cells: Vec<String> = results
        .iter()
        .map(|((unexpected, failed), count)| {
            let as_expected = !unexpected;
            let mut cell =
                if failed.is_empty() { "all pass".to_string() } else { format!("fail: {}", failed.join(", ")) };
            if results.len() > 1 {
                cell.push_str(&format!(" ({count} of {} runs)", runs.len()));
            }
            if !as_expected {
                cell.push_str(" **not as expected**");
            }
            cell
        })
        .collect();
    cells.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scenario: &str, system: &str, run: u64, failed: &[&str], as_expected: bool) -> RealRun {
        RealRun {
            scenario: scenario.into(),
            system: system.into(),
            run,
            judged: vec!["mutual_exclusion".into(), "single_holder".into(), "herd".into()],
            failed: failed.iter().map(|p| p.to_string()).collect(),
            as_expected,
        }
    }

    #[test]
    fn the_table_puts_the_librarys_expectation_beside_each_systems_runs() {
        let verdicts = RealVerdicts {
            schema: SCHEMA.into(),
            source: "Measured somewhere.".into(),
            runs: vec![
                run("split-brain-gc-pause-fenced", "etcd", 1, &["single_holder"], true),
                run("zk-herd-lock", "zookeeper", 1, &["herd"], true),
                run("zk-herd-lock", "zookeeper", 2, &[], false),
                run("renamed-long-ago", "etcd", 1, &[], true),
            ],
        };
        let page = verdicts.markdown();
        assert!(page.starts_with("Measured somewhere.\n\n| scenario |"), "{page}");
        assert!(
            page.contains("| `split-brain-gc-pause-fenced` | fail: single_holder | fail: single_holder | — |"),
            "{page}"
        );
        assert!(
            page.contains("| `zk-herd-lock` | fail: herd | — | fail: herd (1 of 2 runs); all pass (1 of 2 runs) **not as expected** |"),
            "{page}"
        );
        assert!(page.contains("| `renamed-long-ago` | (no longer in the library) |"), "{page}");
        assert!(
            page.ends_with("4 real runs of 3 scenarios, 1 not as expected (marked **not as expected**).\n"),
            "{page}"
        );
        assert_eq!(RealVerdicts::from_json(&verdicts.to_json()).unwrap(), verdicts);
        assert!(
            RealVerdicts::from_json("{\"schema\": \"x\", \"source\": \"\", \"runs\": []}")
                .unwrap_err()
                .contains("schema")
        );
    }
}
