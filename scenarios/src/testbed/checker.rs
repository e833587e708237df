//! Checkers of your own: a property over the history, judged next to the built-in ones, with
//! its verdict in the same reports and summaries.

use std::sync::{Arc, OnceLock};

use coordsim_checker::history::History;
use coordsim_checker::verdict::PropertyReport;
use coordsim_reports::Outcome;
use coordsim_sim::scenario::Expectation;

/// A property of your own, read from the history (never from the service): one id, one check.
///
/// The report's `property` field is set to [`Checker::id`]. Use the history's entries as the
/// built-in checkers do (`coordsim_checker::properties` exposes their readers: `grants`,
/// `beliefs`, `kv_operations`, `leases`). A checker must be deterministic: the same history
/// gives the same report.
pub trait Checker: Send + Sync {
    /// The property's id in reports (`no_double_assignment`); unique in a Testbed.
    fn id(&self) -> &str;

    /// The verdict on one history: `Verdict::Fail` with findings that point at entries.
    fn check(&self, history: &History) -> PropertyReport;
}

/// Checkers a user's own build of the CLI judges every run with (`coordsim::cli::run_main`).
/// Set once, before any run, and read-only after: nothing a run does depends on it.
static FOR_CLI: OnceLock<Vec<Arc<dyn Checker>>> = OnceLock::new();

/// Makes `coordsim run`, `sweep` and `check` in this process judge every history with
/// `checkers` too, next to the built-in properties: expected to pass, or as a scenario's
/// `[expect]` table says under the checker's id. Call it before loading scenarios: the loader
/// refuses an `[expect]` key that names neither a property nor a registered checker. Errors:
/// called twice, or an id that is taken.
pub fn register_for_cli(checkers: Vec<Arc<dyn Checker>>) -> Result<(), String> {
    let mut ids: Vec<&str> = coordsim_checker::properties::Property::ALL.iter().map(|p| p.id()).collect();
    for checker in &checkers {
        if ids.contains(&checker.id()) {
            return Err(format!("checker id {:?} is taken (by a built-in property or another checker)", checker.id()));
        }
        ids.push(checker.id());
    }
    FOR_CLI.set(checkers).map_err(|_| "checkers are already registered for this process".to_string())
}

/// The checkers registered with [`register_for_cli`] (none by default).
pub fn registered_for_cli() -> &'static [Arc<dyn Checker>] {
    FOR_CLI.get().map_or(&[], Vec::as_slice)
}

/// `checker`'s verdict on `history` as an outcome against `expected`, named by the checker's id.
pub fn outcome(checker: &dyn Checker, history: &History, expected: Expectation) -> Outcome {
    let mut report = checker.check(history);
    report.property = checker.id().to_string();
    Outcome { as_expected: expected.matches(report.verdict), expected: expected.to_string(), report }
}
