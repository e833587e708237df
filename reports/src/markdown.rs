//! `summary.md`: a sweep for a CI job summary (GitHub's `$GITHUB_STEP_SUMMARY`, GitLab's
//! report artifacts): one table row per scenario, then every run that was not as expected with
//! its replay command. Rendered from a [`SweepSummary`] alone.

use std::fmt::Write as _;

use crate::sweep::{ScenarioSweep, SweepSummary};

/// Most failures listed one by one; the rest are counted (sweep.json has them all).
pub const FAILURES_LISTED_MAX: usize = 50;

pub fn render(sweep: &SweepSummary) -> String {
    let mut out = String::new();
    let totals = &sweep.totals;
    let verdict = if sweep.as_expected {
        "all as expected".to_string()
    } else {
        format!("**{} NOT as expected**", totals.not_as_expected)
    };
    let _ = writeln!(
        out,
        "## coordsim: {} run{} of {} scenario{}, {verdict}\n",
        totals.runs,
        plural(totals.runs),
        sweep.scenarios.len(),
        plural(sweep.scenarios.len())
    );
    let _ = writeln!(out, "`{}`\n", sweep.command);
    out.push_str("| scenario | seeds | as expected | crashed | properties | time (median of seeds) |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for scenario in &sweep.scenarios {
        let _ = writeln!(
            out,
            "| `{}` | {} | {}/{} | {} | {} | {} |",
            scenario.scenario,
            scenario.seeds,
            scenario.totals.as_expected,
            scenario.totals.runs,
            scenario.totals.crashed,
            properties_cell(scenario),
            times_cell(scenario)
        );
    }
    let failures: Vec<(&ScenarioSweep, &crate::sweep::Failure)> =
        sweep.scenarios.iter().flat_map(|s| s.failures.iter().map(move |f| (s, f))).collect();
    if failures.is_empty() {
        return out;
    }
    out.push_str("\n### Not as expected\n\n");
    for (scenario, failure) in failures.iter().take(FAILURES_LISTED_MAX) {
        let report = failure.report.as_deref().map(|r| format!(" — report `{r}`")).unwrap_or_default();
        let _ = writeln!(
            out,
            "- `{}` seed {}: {} — replay `{}`{report}",
            scenario.scenario,
            failure.seed,
            table_safe(&failure.message),
            failure.replay
        );
    }
    if failures.len() > FAILURES_LISTED_MAX {
        let _ = writeln!(out, "- … and {} more (see sweep.json)", failures.len() - FAILURES_LISTED_MAX);
    }
    out
}

/// `mutual_exclusion` fail 50/50 (expected fail, detected 100%)
fn properties_cell(scenario: &ScenarioSweep) -> String {
    let cells: Vec<String> = scenario
        .properties
        .iter()
        .map(|p| {
            let completed = p.pass + p.fail + p.unknown;
            let mut cell = format!("`{}` fail {}/{completed} (expected {}", p.property, p.fail, p.expected);
            if let Some(detection) = &p.detection {
                let _ = write!(cell, ", detected {:.0}%", detection.rate * 100.0);
            }
            cell.push(')');
            cell
        })
        .collect();
    cells.join("<br>")
}

/// `handoff 5.1 ms<br>drain 5.5 s<br>lock p99 2.9 s<br>queue p99 12<br>(etcd-3.4-loopback)`
fn times_cell(scenario: &ScenarioSweep) -> String {
    let Some(times) = &scenario.times else {
        return String::new();
    };
    let median = &times.median;
    let mut parts: Vec<String> = [
        ("handoff", median.handoff_p50_us),
        ("drain", median.drain_us),
        ("lock p99", median.lock_p99_us),
        ("keepalive p99", median.keepalive_p99_us),
        ("recovery", median.recovery_p50_us),
    ]
    .into_iter()
    .filter_map(|(name, us)| Some(format!("{name} {}", crate::timeline::fmt_latency_us(us?))))
    .chain(median.queue_p99.map(|depth| format!("queue p99 {depth}")))
    .collect();
    parts.push(format!("({})", times.time_model.as_deref().unwrap_or("no time model")));
    parts.join("<br>")
}

fn table_safe(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
