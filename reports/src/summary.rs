//! `summary.json`: the verdicts of one seed of one scenario (schema [`SUMMARY_SCHEMA`], documented
//! in reports/SCHEMA.md).

use coordsim_checker::metrics::Metrics;
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// How long things took (`coordsim_checker::metrics`); absent in summaries written before
    /// runs measured them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
}

impl RunSummary {
    /// Properties whose verdict differs from the expectation.
    pub fn mismatches(&self) -> impl Iterator<Item = &Outcome> {
        self.outcomes.iter().filter(|outcome| !outcome.as_expected)
    }

    /// The verdict of `property`, if it was checked.
    pub fn verdict(&self, property: &str) -> Option<Verdict> {
        self.outcomes.iter().find(|o| o.report.property == property).map(|o| o.report.verdict)
    }

    /// True when some property failed, expected or not: the run shows a violation.
    pub fn has_violation(&self) -> bool {
        self.outcomes.iter().any(|o| o.report.verdict == Verdict::Fail)
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a summary always serializes");
        text.push('\n');
        text
    }

    /// Parses a `summary.json` and checks its schema.
    pub fn from_json(text: &str) -> Result<RunSummary, String> {
        let summary: RunSummary = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if summary.schema != SUMMARY_SCHEMA {
            return Err(format!("field `schema`: expected {SUMMARY_SCHEMA:?}, found {:?}", summary.schema));
        }
        Ok(summary)
    }
}
