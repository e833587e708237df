//! coordsim-reports: what a run leaves behind for people and for CI.
//!
//! - [`summary`]: `summary.json` per seed (schema [`SUMMARY_SCHEMA`]).
//! - [`sweep`]: `sweep.json` per invocation: seeds run, verdict counts, failures with replay
//!   commands, detection rate per expected violation (schema [`SWEEP_SCHEMA`]).
//! - [`detection`]: `detection.json` per `coordsim sweep --bugs`: per bug switch, the detection
//!   rate with the switch on and the violations with it off (schema [`DETECTION_SCHEMA`]); shards
//!   of one sweep merge into the unsharded file.
//! - [`junit`]: `junit.xml` per sweep, one testcase per scenario × seed.
//! - [`markdown`]: `summary.md` per sweep, for CI job summaries.
//! - [`timeline`] and [`html`]: `report.html` per run, one self-contained page with the timeline
//!   in true time, the violations, a narrative and hover details.
//!
//! The schemas of the JSON files are documented in reports/SCHEMA.md. Every output is a pure
//! function of its input: no clock, no random order, so the same run gives the same bytes.

pub mod detection;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod summary;
pub mod sweep;
pub mod timeline;
mod xml;

pub use detection::{DETECTION_SCHEMA, DetectionSweep};
pub use summary::{Outcome, RunSummary, SUMMARY_SCHEMA};
pub use sweep::{SWEEP_SCHEMA, SweepBuilder, SweepSummary};
pub use timeline::from_history::RunInput;

/// Largest report.html, in bytes, for a run of 10,000 operations (the test
/// `large_history_report_stays_small_and_offline` holds the renderer to it).
pub const REPORT_BYTES_MAX_10K_OPS: usize = 6 * 1024 * 1024;

/// The report.html of one run.
pub fn run_report_html(input: &RunInput<'_>) -> String {
    html::render(&timeline::from_history::build(input))
}
