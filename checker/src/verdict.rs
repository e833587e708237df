//! Verdicts and what a checker reports with them.

use serde::{Deserialize, Serialize};

/// The outcome of checking one property on one history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The property held on this history.
    Pass,
    /// The history violates the property; the findings say where.
    Fail,
    /// The checker could not decide (a time or memory limit, or missing data).
    Unknown,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
        })
    }
}

/// One thing a checker points at: a violation, or an observation worth showing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// True time of the finding (the violating event, or the start of an interval).
    pub time_ns: u64,
    /// End of the interval, for findings that span time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ns: Option<u64>,
    pub message: String,
    /// Indices into `History::entries` of the events involved.
    pub entries: Vec<usize>,
}

/// What one property checker says about one history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyReport {
    /// The property's identifier, e.g. `mutual_exclusion`.
    pub property: String,
    pub verdict: Verdict,
    /// One line for people.
    pub summary: String,
    /// Violations when the verdict is `fail`; observations otherwise.
    pub findings: Vec<Finding>,
}
