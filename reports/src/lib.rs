//! coordsim-reports: what a run leaves behind for people and for CI.
//!
//! Today: `summary.json` per seed (schema [`SUMMARY_SCHEMA`]). The HTML timeline, JUnit XML and
//! Markdown summaries build on the same data.

use coordsim_checker::verdict::{PropertyReport, Verdict};
use serde::{Deserialize, Serialize};

/// Schema identifier of `summary.json`; bump on any incompatible change.
pub const SUMMARY_SCHEMA: &str = "coordsim-summary/1";

/// One property's verdict next to what the scenario expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    #[serde(flatten)]
    pub report: PropertyReport,
    /// `pass` or `fail`, from the scenario's `[expect]` table (unlisted: `pass`).
    pub expected: String,
    pub as_expected: bool,
}

/// `summary.json`: the verdicts of one seed of one scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub schema: String,
    pub scenario: String,
    pub seed: u64,
    /// Simulated time the run covered, in ns.
    pub duration_ns: u64,
    /// Number of history entries.
    pub entries: usize,
    pub outcomes: Vec<Outcome>,
    /// True when every verdict matches its expectation.
    pub as_expected: bool,
    /// The command that replays exactly this run.
    pub replay: String,
}

impl RunSummary {
    /// Properties whose verdict differs from the expectation.
    pub fn mismatches(&self) -> impl Iterator<Item = &Outcome> {
        self.outcomes.iter().filter(|outcome| !outcome.as_expected)
    }

    /// The verdict of `property`, if it was checked.
    pub fn verdict(&self, property: &str) -> Option<Verdict> {
        self.outcomes
            .iter()
            .find(|o| o.report.property == property)
            .map(|o| o.report.verdict)
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a summary always serializes");
        text.push('\n');
        text
    }
}
