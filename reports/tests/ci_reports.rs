//! sweep.json, junit.xml and summary.md for a sweep with an as-expected run, a run whose verdict
//! differs from the expectation and a crashed run. junit.xml is checked against the structure of
//! the JUnit schema common CI servers read (Jenkins' junit-10.xsd: which elements may contain
//! which, which attributes are required and which are allowed).

mod support;

use coordsim_checker::verdict::Verdict;
use coordsim_reports::sweep::{FailureKind, RunRecord, RunStatus};
use coordsim_reports::{RunSummary, SweepBuilder, SweepSummary, junit, markdown};
use support::{Element, parse};

fn summary(name: &str) -> RunSummary {
    RunSummary::from_json(&support::read(&format!("{name}/summary.json"))).unwrap()
}

/// The unfenced run as recorded, and the same run judged as if the scenario expected fencing to
/// hold (seed 2): a run that is NOT as expected.
fn sweep() -> SweepSummary {
    let expected = summary("split-brain-gc-pause-seed-1");
    let mut unexpected = expected.clone();
    unexpected.seed = 2;
    unexpected.replay = "cargo coordsim run split-brain-gc-pause --seed 2".into();
    for outcome in &mut unexpected.outcomes {
        if outcome.report.property == "fencing" {
            outcome.expected = "pass".into();
            outcome.as_expected = false;
        }
    }
    unexpected.as_expected = false;
    let mut builder = SweepBuilder::new("cargo coordsim run split-brain-gc-pause --seeds 1..3");
    builder.begin_scenario(
        "split-brain-gc-pause",
        "scenarios/library/split-brain-gc-pause.toml",
        "target/coordsim/split-brain-gc-pause",
        "1..3",
    );
    builder.add(RunRecord::Done {
        summary: &expected,
        report: Some("target/coordsim/split-brain-gc-pause/seed-1/report.html".into()),
    });
    builder.add(RunRecord::Done {
        summary: &unexpected,
        report: Some("target/coordsim/split-brain-gc-pause/seed-2/report.html".into()),
    });
    builder.add(RunRecord::Crashed {
        seed: 3,
        message: "invariant broken: <revision> went backwards & stopped",
        replay: "cargo coordsim run split-brain-gc-pause --seed 3",
    });
    builder.finish()
}

#[test]
fn sweep_counts_runs_failures_and_detection_rates() {
    let sweep = sweep();
    assert_eq!(sweep.schema, "coordsim-sweep/1");
    assert!(!sweep.as_expected);
    assert_eq!(
        (sweep.totals.runs, sweep.totals.as_expected, sweep.totals.not_as_expected, sweep.totals.crashed),
        (3, 1, 2, 1)
    );
    let scenario = &sweep.scenarios[0];
    let statuses: Vec<RunStatus> = scenario.runs.iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![RunStatus::AsExpected, RunStatus::Mismatch, RunStatus::Crash]);
    // The expected violation was detected on both completed runs; the crash is not a run that
    // could detect anything.
    let me = scenario.properties.iter().find(|p| p.property == "mutual_exclusion").unwrap();
    assert_eq!((me.pass, me.fail, me.unknown), (0, 2, 0));
    let detection = me.detection.as_ref().expect("mutual_exclusion is expected to fail");
    assert_eq!((detection.detected, detection.runs, detection.rate), (2, 2, 1.0));
    let first = detection.first.as_ref().unwrap();
    assert_eq!(first.seed, 1);
    assert_eq!(first.replay, "cargo coordsim run split-brain-gc-pause --seed 1");
    let lease = scenario.properties.iter().find(|p| p.property == "lease_safety").unwrap();
    assert!(lease.detection.is_none(), "no detection rate for a property expected to pass");
    // Failures: the mismatch names the property, the crash its message; both replay.
    assert_eq!(scenario.failures.len(), 2);
    let mismatch = &scenario.failures[0];
    assert_eq!((mismatch.seed, mismatch.kind), (2, FailureKind::Mismatch));
    assert_eq!(mismatch.properties.len(), 1);
    assert_eq!(mismatch.properties[0].property, "fencing");
    assert_eq!(mismatch.properties[0].verdict, Verdict::Fail);
    assert_eq!(mismatch.message, "fencing: expected pass, got fail");
    assert_eq!(scenario.failures[1].kind, FailureKind::Crash);
    assert_eq!(scenario.failures[1].replay, "cargo coordsim run split-brain-gc-pause --seed 3");
    // The file round-trips and is byte-stable.
    let text = sweep.to_json();
    assert_eq!(SweepSummary::from_json(&text).unwrap(), sweep);
    assert_eq!(text, self::sweep().to_json());
}

/// (element, allowed children, required attributes, allowed attributes)
type Rule = (&'static str, &'static [&'static str], &'static [&'static str], &'static [&'static str]);

/// What junit-10.xsd allows.
const JUNIT_10: &[Rule] = &[
    ("testsuites", &["testsuite"], &[], &["name", "time", "tests", "failures", "errors"]),
    (
        "testsuite",
        &["testsuite", "properties", "testcase", "system-out", "system-err"],
        &["name", "tests", "failures", "errors"],
        &[
            "name",
            "tests",
            "failures",
            "errors",
            "group",
            "time",
            "skipped",
            "timestamp",
            "hostname",
            "id",
            "package",
            "file",
            "log",
            "url",
        ],
    ),
    ("properties", &["property"], &[], &[]),
    ("property", &[], &["name", "value"], &["name", "value"]),
    (
        "testcase",
        &["skipped", "error", "failure", "system-out", "system-err"],
        &["name"],
        &["name", "time", "classname", "group"],
    ),
    ("failure", &[], &[], &["type", "message"]),
    ("error", &[], &[], &["type", "message"]),
    ("skipped", &[], &[], &["type", "message"]),
    ("system-out", &[], &[], &[]),
    ("system-err", &[], &[], &[]),
];

fn validate_junit(element: &Element) {
    let (_, children, required, allowed) = JUNIT_10
        .iter()
        .find(|(name, ..)| *name == element.name)
        .unwrap_or_else(|| panic!("<{}> is not a JUnit element", element.name));
    for attr in *required {
        assert!(element.attr(attr).is_some(), "<{}> needs {attr}", element.name);
    }
    for (attr, _) in &element.attrs {
        assert!(allowed.contains(&attr.as_str()), "<{}> may not have {attr}", element.name);
    }
    for child in element.elements() {
        assert!(children.contains(&child.name.as_str()), "<{}> may not contain <{}>", element.name, child.name);
        validate_junit(child);
    }
    for count in ["tests", "failures", "errors", "skipped"] {
        if let Some(value) = element.attr(count) {
            value.parse::<usize>().unwrap_or_else(|_| panic!("{count}={value:?} is not a count"));
        }
    }
}

#[test]
fn junit_has_one_testcase_per_seed_and_failures_carry_property_seed_replay_and_report() {
    let sweep = sweep();
    let xml = junit::render(&sweep);
    support::keep("junit.xml", &xml);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    let root = parse(&xml);
    assert_eq!(root.name, "testsuites");
    validate_junit(&root);
    assert_eq!((root.attr("tests"), root.attr("failures"), root.attr("errors")), (Some("3"), Some("1"), Some("1")));
    let suites: Vec<&Element> = root.elements().collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(suites[0].attr("name"), Some("split-brain-gc-pause"));
    let cases: Vec<&Element> = suites[0].elements().filter(|e| e.name == "testcase").collect();
    let names: Vec<&str> = cases.iter().map(|c| c.attr("name").unwrap()).collect();
    assert_eq!(names, vec!["seed 1", "seed 2", "seed 3"]);
    assert!(cases.iter().all(|c| c.attr("classname") == Some("coordsim.split-brain-gc-pause")));
    assert_eq!(cases[0].elements().count(), 0, "an as-expected run passes");

    let failure = cases[1].elements().find(|e| e.name == "failure").expect("seed 2 fails");
    assert_eq!(failure.attr("type"), Some("fencing"));
    assert!(failure.attr("message").unwrap().contains("seed 2: fencing: expected pass, got fail"));
    let body = failure.text();
    for needle in [
        "property fencing: expected pass, got fail",
        "seed: 2",
        "replay: cargo coordsim run split-brain-gc-pause --seed 2",
        "report: target/coordsim/split-brain-gc-pause/seed-2/report.html",
        "first finding: resource accepted token 2 from c1",
    ] {
        assert!(body.contains(needle), "{needle:?} in {body}");
    }
    let error = cases[2].elements().find(|e| e.name == "error").expect("seed 3 crashed");
    assert_eq!(error.attr("type"), Some("crash"));
    // Markup in a message is escaped, not parsed.
    assert!(error.attr("message").unwrap().contains("<revision> went backwards & stopped"));
    assert!(error.text().contains("replay: cargo coordsim run split-brain-gc-pause --seed 3"));
}

#[test]
fn junit_of_an_all_green_sweep_has_no_failures() {
    let expected = summary("split-brain-gc-pause-fenced-seed-1");
    let mut builder = SweepBuilder::new("cargo coordsim run split-brain-gc-pause-fenced --seed 1");
    builder.begin_scenario("split-brain-gc-pause-fenced", "lib", "out", "1");
    builder.add(RunRecord::Done { summary: &expected, report: None });
    let sweep = builder.finish();
    assert!(sweep.as_expected);
    let root = parse(&junit::render(&sweep));
    validate_junit(&root);
    assert_eq!((root.attr("tests"), root.attr("failures"), root.attr("errors")), (Some("1"), Some("0"), Some("0")));
}

#[test]
fn summary_md_has_a_row_per_scenario_and_the_replay_command_of_each_failure() {
    let md = markdown::render(&sweep());
    support::keep("summary.md", &md);
    assert!(md.starts_with("## coordsim: 3 runs of 1 scenario, **2 NOT as expected**"), "{md}");
    assert!(md.contains("| `split-brain-gc-pause` | 1..3 | 1/3 | 1 |"), "{md}");
    assert!(md.contains("`mutual_exclusion` fail 2/2 (expected fail, detected 100%)"), "{md}");
    assert!(md.contains(
        "- `split-brain-gc-pause` seed 2: fencing: expected pass, got fail — replay `cargo coordsim run split-brain-gc-pause --seed 2` — report `target/coordsim/split-brain-gc-pause/seed-2/report.html`"
    ), "{md}");
    assert!(md.contains("seed 3: crashed: invariant broken"), "{md}");
}

#[test]
fn schema_document_names_every_schema_version() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/SCHEMA.md")).unwrap();
    for schema in [coordsim_reports::SUMMARY_SCHEMA, coordsim_reports::SWEEP_SCHEMA] {
        assert!(doc.contains(schema), "SCHEMA.md documents {schema}");
    }
}

/// Three runs, two with metrics: the scenario's times are the lower middle of the two, and the
/// run without metrics (a summary from before runs measured them) is left out, not counted as 0.
#[test]
fn sweep_times_are_medians_of_the_runs_that_measured_them_and_summary_md_shows_them() {
    let history =
        coordsim_checker::history::History::from_json(&support::read("split-brain-gc-pause-seed-1/history.json"))
            .unwrap();
    let mut measured = coordsim_checker::metrics::of(&history);
    measured.time_model = Some("etcd-3.4-loopback".into());
    let lock = measured.locks.values().max_by_key(|l| l.grants).expect("the run granted the lock").clone();
    let handoff = lock.handoff.as_ref().expect("the lock changed hands").p50_us;
    let mut first = summary("split-brain-gc-pause-seed-1");
    first.metrics = Some(measured.clone());
    let mut second = first.clone();
    second.seed = 2;
    for lock in second.metrics.as_mut().unwrap().locks.values_mut() {
        lock.handoff.as_mut().unwrap().p50_us = handoff * 3;
        lock.drain_us *= 3;
    }
    let mut third = first.clone();
    third.seed = 3;
    third.metrics = None;
    let mut builder = SweepBuilder::new("cargo coordsim run split-brain-gc-pause --seeds 1..3");
    builder.begin_scenario("split-brain-gc-pause", "library", "out", "1..3");
    for summary in [&second, &first, &third] {
        builder.add(RunRecord::Done { summary, report: None });
    }
    let sweep = builder.finish();
    let times = sweep.scenarios[0].times.as_ref().expect("two runs measured");
    assert_eq!(times.runs, 2);
    assert_eq!(times.time_model.as_deref(), Some("etcd-3.4-loopback"));
    assert_eq!(times.median.handoff_p50_us, Some(handoff), "the lower middle of {handoff} and {}", handoff * 3);
    assert_eq!(times.median.drain_us, Some(lock.drain_us));
    assert!(sweep.scenarios[0].runs[2].times.is_none());
    let reread = SweepSummary::from_json(&sweep.to_json()).unwrap();
    assert_eq!(reread, sweep, "times survive sweep.json");
    let md = markdown::render(&sweep);
    assert!(md.contains("| time (median of seeds) |"), "{md}");
    assert!(md.contains("(etcd-3.4-loopback)"), "{md}");
    assert!(md.contains("handoff "), "{md}");
}
