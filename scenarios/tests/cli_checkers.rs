//! A user's own build of the CLI (`cli::run_main(checkers)`) judges every run with their
//! checkers: registered once per process, they appear in each summary next to the built-in
//! properties (one test per binary: the registration is process-wide).

use std::sync::Arc;

use coordsim::testbed::{Checker, register_for_cli};
use coordsim_checker::history::{Event, History};
use coordsim_checker::verdict::{PropertyReport, Verdict};

/// Fails when any resource write was rejected: a property of the user's on a built-in workload.
struct NoRejectedWrite;

impl Checker for NoRejectedWrite {
    fn id(&self) -> &str {
        "no_rejected_write"
    }

    fn check(&self, history: &History) -> PropertyReport {
        let rejected =
            history.entries.iter().filter(|e| matches!(e.event, Event::Resource { accepted: false, .. })).count();
        PropertyReport {
            property: String::new(),
            verdict: if rejected == 0 { Verdict::Pass } else { Verdict::Fail },
            summary: format!("{rejected} rejected writes"),
            findings: Vec::new(),
        }
    }
}

#[test]
fn registered_checkers_are_judged_in_every_cli_run_and_ids_must_be_new() {
    let taken = register_for_cli(vec![Arc::new(NamedLike("fencing"))]);
    assert!(taken.unwrap_err().contains("taken"));
    register_for_cli(vec![Arc::new(NoRejectedWrite)]).expect("registers once");
    assert!(register_for_cli(Vec::new()).unwrap_err().contains("already"));
    // The fenced split-brain scenario rejects the paused holder's late write on every seed.
    let loaded = coordsim::load::resolve("split-brain-gc-pause-fenced").unwrap();
    let coordsim::sweep::SeedResult::Done { summary, .. } = coordsim::sweep::run_seed(&loaded.scenario, "x", 1) else {
        panic!("seed 1 runs");
    };
    assert_eq!(summary.verdict("no_rejected_write"), Some(Verdict::Fail));
    assert!(!summary.as_expected, "a registered checker is expected to pass");

    // A scenario file may state what it expects of a registered checker, in its `[expect]`.
    let text = include_str!("../library/split-brain-gc-pause-fenced.toml");
    let expecting = format!("{text}no_rejected_write = \"fail\"\n");
    let scenario = coordsim::load::parse("mine.toml", &expecting).expect("a registered checker's id is a key");
    let coordsim::sweep::SeedResult::Done { summary, .. } = coordsim::sweep::run_seed(&scenario, "x", 1) else {
        panic!("seed 1 runs");
    };
    assert!(summary.as_expected, "{:?}", summary.outcomes.iter().map(|o| &o.report.summary).collect::<Vec<_>>());
    // A key that names neither a property nor a registered checker is an error at its line.
    let typo = format!("{text}no_rejected_wirte = \"fail\"\n");
    let error = coordsim::load::parse("mine.toml", &typo).unwrap_err().to_string();
    let line = typo.lines().count();
    assert!(error.contains(&format!("mine.toml:{line}")), "{error}");
    assert!(
        error.contains("expect.no_rejected_wirte") && error.contains("registered checkers: no_rejected_write"),
        "{error}"
    );
}

struct NamedLike(&'static str);

impl Checker for NamedLike {
    fn id(&self) -> &str {
        self.0
    }

    fn check(&self, _history: &History) -> PropertyReport {
        unreachable!("never registered")
    }
}
