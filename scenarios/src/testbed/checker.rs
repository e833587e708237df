//! Checkers of your own: a property over the history, judged next to the built-in ones, with
//! its verdict in the same reports and summaries.

use coordsim_checker::history::History;
use coordsim_checker::verdict::PropertyReport;

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
