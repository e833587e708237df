//! The renderer's other inputs: a model checker's trace (numbered steps on a step axis) and a
//! list of operations with a linearizability counterexample drawn on it; and a real chaos run
//! whose fault kinds (crash, clock-rate, latency, packet loss) the renderer has no arm for.

mod support;

use coordsim_checker::history::{Event, History};
use coordsim_reports::html;
use coordsim_reports::timeline::operations::{self, OpRecord};
use coordsim_reports::timeline::steps::{self, Step, Violation};
use coordsim_reports::timeline::{Axis, LinPanel};
use coordsim_reports::{RunInput, RunSummary, run_report_html};
use support::parse;

fn step(actor: &str, action: &str, until: Option<usize>) -> Step {
    Step { actor: actor.into(), action: action.into(), until }
}

#[test]
fn a_model_trace_renders_as_numbered_steps_on_a_step_axis() {
    let trace = vec![
        step("c1", "acquire (token 1)", None),
        step("c1", "pause", Some(5)),
        step("s1", "expire lease of c1", None),
        step("c2", "acquire (token 2)", None),
        step("c2", "write token 2 → accepted", None),
        step("c1", "write token 1 → accepted", None),
    ];
    let violation = Violation { property: "fencing".into(), message: "token 1 accepted after token 2".into() };
    let page = html::render(&steps::build("lease lock without fencing", &trace, Some(&violation)));
    let root = parse(&page);
    let svg = root.by_id("tl").unwrap();
    assert_eq!(svg.attr("data-axis"), Some("steps"));
    let lanes: Vec<String> = svg.find_all(|e| e.has_class("ln")).iter().map(|e| e.text()).collect();
    assert_eq!(lanes, vec!["c1", "s1", "c2"]);
    let marks = svg.find_all(|e| e.name == "use" && e.has_class("step"));
    assert_eq!(marks.len(), 5, "five instant steps; the pause lasts from step 2 to 5");
    assert!(svg.find_all(|e| e.name == "rect" && e.has_class("step-span")).len() == 1);
    let narrative = root.by_id("narrative").unwrap();
    let lines: Vec<String> = narrative.find_all(|e| e.name == "li").iter().map(|e| e.text()).collect();
    assert_eq!(lines[0], "step 1 c1: acquire (token 1)");
    assert_eq!(lines.last().unwrap(), "step 6 ✗ fencing violated: token 1 accepted after token 2");
    let violations = root.find_all(|e| e.name == "article" && e.has_class("violation"));
    assert_eq!(violations[0].attr("data-property"), Some("fencing"));
}

fn op(id: u64, client: &str, call_ns: u64, return_ns: u64, call: &str, result: &str) -> OpRecord {
    OpRecord {
        id,
        client: client.into(),
        call_ns,
        return_ns: Some(return_ns),
        call: call.into(),
        result: Some(result.into()),
    }
}

#[test]
fn a_linearizability_counterexample_numbers_the_prefix_and_flags_the_stuck_operations() {
    let ops = vec![
        op(1, "p0", 0, 10, "write 1", "ok"),
        op(2, "p1", 20, 30, "read", "1"),
        op(3, "p0", 40, 50, "write 2", "ok"),
        op(4, "p1", 60, 70, "read", "1"),
    ];
    let panel = LinPanel {
        prefix: vec![(1, "write 1".into()), (2, "read → 1".into()), (3, "write 2".into())],
        state_after_prefix: "2".into(),
        stuck: vec![(4, "read → 1 (state is 2)".into())],
    };
    let page = html::render(&operations::build("etcd_002.log", Axis::Steps, &ops, Some(&panel)));
    let root = parse(&page);
    let svg = root.by_id("tl").unwrap();
    let prefix = svg.find_all(|e| e.name == "rect" && e.has_class("lin-ok"));
    assert_eq!(prefix.len(), 3);
    let stuck = svg.find_all(|e| e.name == "rect" && e.has_class("lin-stuck"));
    assert_eq!(stuck.len(), 1);
    assert_eq!(stuck[0].refs(), vec![3], "the fourth operation");
    let labels: Vec<String> =
        svg.find_all(|e| e.has_class("op")).iter().filter_map(|e| e.attr("data-l").map(str::to_string)).collect();
    let texts: Vec<String> = svg.find_all(|e| e.has_class("sl")).iter().map(|e| e.text()).collect();
    let all: Vec<&String> = labels.iter().chain(&texts).collect();
    assert!(all.iter().any(|l| l.starts_with("#1 write 1")), "{all:?}");
    assert!(all.iter().any(|l| l.starts_with("#3 write 2")), "{all:?}");
    let section = root.by_id("linearizability").unwrap();
    assert!(section.text().contains("operation 4: read → 1 (state is 2)"));
    assert!(section.text().contains("state 2"));
}

#[test]
fn a_chaos_run_draws_every_fault_kind_by_its_name() {
    let history = History::from_json(&support::read("chaos-fenced-mutex-seed-1/history.json")).unwrap();
    let summary = RunSummary::from_json(&support::read("chaos-fenced-mutex-seed-1/summary.json")).unwrap();
    let mut input = RunInput::new(&history);
    input.summary = Some(&summary);
    let page = run_report_html(&input);
    support::keep("chaos-fenced-mutex-seed-1.html", &page);
    let root = parse(&page);
    let svg = root.by_id("tl").unwrap();
    let mut kinds: Vec<String> = history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Fault { kind, .. } => Some(serde_json::to_value(kind).unwrap().as_str().unwrap().to_string()),
            _ => None,
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    assert!(kinds.len() >= 3, "the chaos run mixes fault kinds: {kinds:?}");
    for kind in &kinds {
        let drawn = svg.find_all(|e| e.has_class("fault") && e.has_class(&format!("k-{kind}")));
        assert!(!drawn.is_empty(), "fault kind {kind} is drawn");
    }
    // A crash of a server shades that server's lane.
    if let Some(crash) = history.entries.iter().position(|e| {
        matches!(&e.event, Event::Fault { kind: coordsim_checker::history::FaultKind::Crash, targets, .. } if targets.iter().any(|t| t.starts_with('s')))
    }) {
        let shades = svg.find_all(|e| e.has_class("shade") && e.has_class("k-crash") && e.refs().contains(&crash));
        assert_eq!(shades.len(), 1);
    }
}
