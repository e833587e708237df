//! `junit.xml`: one `<testsuite>` per scenario and one `<testcase>` per seed, in the JUnit XML
//! dialect that Jenkins, GitLab and the GitHub test-report actions read (the structure of
//! Jenkins' junit-10.xsd: `testsuites > testsuite > (properties, testcase > (failure | error))`).
//!
//! A run whose verdicts differ from the scenario's expectation is a `<failure>` naming the
//! properties, the seed, the replay command and the report; a crashed run is an `<error>`. No
//! `time` attributes: the file holds no wall-clock data, so one sweep always gives the same bytes.

use std::fmt::Write as _;

use crate::sweep::{Failure, FailureKind, RunStatus, ScenarioSweep, SweepSummary};
use crate::xml::escape;

/// Renders `junit.xml` from a sweep.
pub fn render(sweep: &SweepSummary) -> String {
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"coordsim\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
        sweep.totals.runs,
        sweep.totals.not_as_expected - sweep.totals.crashed,
        sweep.totals.crashed
    );
    for scenario in &sweep.scenarios {
        suite(&mut out, scenario);
    }
    out.push_str("</testsuites>\n");
    out
}

fn suite(out: &mut String, scenario: &ScenarioSweep) {
    let totals = &scenario.totals;
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\">",
        escape(&scenario.scenario),
        totals.runs,
        totals.not_as_expected - totals.crashed,
        totals.crashed
    );
    out.push_str("    <properties>\n");
    for (name, value) in
        [("source", scenario.source.as_str()), ("seeds", scenario.seeds.as_str()), ("output", scenario.output.as_str())]
    {
        let _ = writeln!(out, "      <property name=\"{name}\" value=\"{}\"/>", escape(value));
    }
    for tally in &scenario.properties {
        let mut value =
            format!("expected {}; pass {}, fail {}, unknown {}", tally.expected, tally.pass, tally.fail, tally.unknown);
        if let Some(detection) = &tally.detection {
            let _ = write!(value, "; detected on {}/{} runs", detection.detected, detection.runs);
        }
        let _ = writeln!(
            out,
            "      <property name=\"property.{}\" value=\"{}\"/>",
            escape(&tally.property),
            escape(&value)
        );
    }
    out.push_str("    </properties>\n");
    let classname = escape(&format!("coordsim.{}", scenario.scenario));
    let mut failures = scenario.failures.iter().peekable();
    for run in &scenario.runs {
        let failure = match failures.peek() {
            Some(f) if f.seed == run.seed && run.status != RunStatus::AsExpected => failures.next(),
            _ => None,
        };
        let name = format!("seed {}", run.seed);
        match failure {
            None => {
                let _ = writeln!(out, "    <testcase name=\"{name}\" classname=\"{classname}\"/>");
            }
            Some(failure) => {
                let _ = writeln!(out, "    <testcase name=\"{name}\" classname=\"{classname}\">");
                failure_element(out, scenario, failure);
                out.push_str("    </testcase>\n");
            }
        }
    }
    out.push_str("  </testsuite>\n");
}

fn failure_element(out: &mut String, scenario: &ScenarioSweep, failure: &Failure) {
    let (element, kind) = match failure.kind {
        FailureKind::Mismatch => {
            ("failure", failure.properties.iter().map(|p| p.property.as_str()).collect::<Vec<_>>().join(","))
        }
        FailureKind::Crash => ("error", "crash".to_string()),
    };
    let message = format!("seed {}: {}", failure.seed, failure.message);
    let _ = write!(out, "      <{element} type=\"{}\" message=\"{}\">", escape(&kind), escape(&message));
    out.push_str(&escape(&failure_text(scenario, failure)));
    let _ = writeln!(out, "</{element}>");
}

/// The body of a failure: everything a person needs to reproduce and look at it.
pub(crate) fn failure_text(scenario: &ScenarioSweep, failure: &Failure) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "scenario: {} ({})", scenario.scenario, scenario.source);
    let _ = writeln!(text, "seed: {}", failure.seed);
    for property in &failure.properties {
        let _ = writeln!(
            text,
            "property {}: expected {}, got {} ({})",
            property.property, property.expected, property.verdict, property.summary
        );
        if let Some(finding) = &property.finding {
            let _ = writeln!(text, "  first finding: {finding}");
        }
    }
    if failure.kind == FailureKind::Crash {
        let _ = writeln!(text, "{}", failure.message);
    }
    let _ = writeln!(text, "replay: {}", failure.replay);
    if let Some(report) = &failure.report {
        let _ = writeln!(text, "report: {report}");
    }
    text
}
