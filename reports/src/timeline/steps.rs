//! A numbered sequence of steps as a timeline: how a model checker's counterexample (a trace of
//! actions by actors) is drawn in the same vocabulary as a simulator run. The axis counts steps;
//! each actor gets a lane, each step a numbered mark on its actor's lane, and a step that starts
//! something lasting (a pause, a belief, a lease) can say until which step it lasts.

use std::collections::BTreeMap;

use super::{Axis, Highlight, Lane, LaneKind, Line, LineTone, Mark, Packing, Shape, Span, Timeline, Tone, VerdictRow};

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Who acts: `c1`, `s2`, `resource`, `nemesis`.
    pub actor: String,
    /// What happened, e.g. `acquire (token 3)`.
    pub action: String,
    /// For a step that starts something lasting: the number of the step that ends it.
    pub until: Option<usize>,
}

/// A property the trace violates, at its last step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub property: String,
    pub message: String,
}

/// Builds the timeline of a trace. Steps are numbered from 1.
pub fn build(title: &str, steps: &[Step], violation: Option<&Violation>) -> Timeline {
    let end = steps.len() as u64 + 1;
    let mut lanes: Vec<Lane> = Vec::new();
    let mut lane_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut details = Vec::with_capacity(steps.len());
    let mut narrative = Vec::with_capacity(steps.len());
    for (index, step) in steps.iter().enumerate() {
        let number = index as u64 + 1;
        details.push(serde_json::json!({
            "step": number,
            "node": step.actor,
            "action": step.action,
        }));
        let lane = *lane_of.entry(step.actor.as_str()).or_insert_with(|| {
            lanes.push(Lane::new(step.actor.clone(), kind_of(&step.actor)));
            lanes.len() - 1
        });
        let label = format!("{number}. {}", step.action);
        match step.until {
            Some(until) if until as u64 > number => {
                let span = Span::new(number, until as u64, "step-span", label).refs(vec![index]);
                lanes[lane].row("lasting", Packing::Stack(3)).spans.push(span);
            }
            _ => {
                let mark = Mark::new(number, Shape::Square, "step", label).refs(vec![index]);
                lanes[lane].row("steps", Packing::Single).marks.push(mark);
            }
        }
        narrative.push(Line {
            at: number,
            text: format!("{}: {}", step.actor, step.action),
            refs: vec![index],
            tone: LineTone::Plain,
            routine: false,
        });
    }
    let mut highlights = Vec::new();
    let mut verdicts = Vec::new();
    if let Some(violation) = violation {
        let last = steps.len().saturating_sub(1);
        highlights.push(Highlight {
            tone: Tone::Violation,
            property: violation.property.clone(),
            start: end - 1,
            end: None,
            message: violation.message.clone(),
            refs: if steps.is_empty() { vec![] } else { vec![last] },
            lanes: Vec::new(),
        });
        verdicts.push(VerdictRow {
            property: violation.property.clone(),
            verdict: "fail".to_string(),
            expected: None,
            as_expected: None,
            summary: violation.message.clone(),
        });
        narrative.push(Line {
            at: end - 1,
            text: format!("✗ {} violated: {}", violation.property, violation.message),
            refs: vec![],
            tone: LineTone::Bad,
            routine: false,
        });
    }
    Timeline {
        title: title.to_string(),
        facts: vec![("steps".to_string(), steps.len().to_string())],
        axis: Some(Axis::Steps),
        end,
        lanes,
        highlights,
        verdicts,
        narrative,
        details,
        ..Timeline::default()
    }
}

/// Lane colour by the naming convention of our traces: `s1` servers, `c1` clients.
fn kind_of(actor: &str) -> LaneKind {
    let numbered =
        |prefix: char| actor.starts_with(prefix) && actor.len() > 1 && actor[1..].bytes().all(|b| b.is_ascii_digit());
    if numbered('s') {
        LaneKind::Server
    } else if numbered('c') {
        LaneKind::Client
    } else if actor == "resource" {
        LaneKind::Resource
    } else if actor == "nemesis" {
        LaneKind::Faults
    } else {
        LaneKind::Other
    }
}
