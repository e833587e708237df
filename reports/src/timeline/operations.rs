//! A bare list of operations as a timeline: one lane per client, one bar per operation from its
//! call to its return. This is how an imported history (a Jepsen etcd log, an EDN history) is
//! drawn, with a linearizability counterexample on it: the operations of the longest
//! linearizable prefix are numbered in linearization order, and the operations that could not
//! be placed after it are flagged.

use std::collections::BTreeMap;

use super::{Axis, Highlight, Lane, LaneKind, LinPanel, Line, LineTone, Packing, Span, Timeline, Tone, VerdictRow};

/// Most lines a client's row stacks overlapping operations on.
const LINES_MAX: usize = 4;

/// One operation of an imported history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRecord {
    pub id: u64,
    pub client: String,
    pub call_ns: u64,
    /// `None`: it never returned, or its outcome is unknown.
    pub return_ns: Option<u64>,
    /// What was asked, e.g. `write 3`.
    pub call: String,
    /// What came back, e.g. `ok` or `read → 3`; `None` when unknown.
    pub result: Option<String>,
}

/// Builds the timeline of `ops`; `panel` is the counterexample when the check failed.
pub fn build(title: &str, axis: Axis, ops: &[OpRecord], panel: Option<&LinPanel>) -> Timeline {
    let end =
        ops.iter().map(|op| op.return_ns.unwrap_or(op.call_ns).max(op.call_ns)).max().unwrap_or(0).saturating_add(1);
    let order: BTreeMap<u64, usize> =
        panel.map(|p| p.prefix.iter().enumerate().map(|(i, (id, _))| (*id, i + 1)).collect()).unwrap_or_default();
    let stuck: BTreeMap<u64, &str> =
        panel.map(|p| p.stuck.iter().map(|(id, d)| (*id, d.as_str())).collect()).unwrap_or_default();

    let mut lanes: Vec<Lane> = Vec::new();
    let mut lane_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut details = Vec::with_capacity(ops.len());
    let mut highlights = Vec::new();
    let mut narrative = Vec::new();
    for (index, op) in ops.iter().enumerate() {
        details.push(serde_json::json!({
            "op": op.id,
            "node": op.client,
            "time_ns": op.call_ns,
            "return_ns": op.return_ns,
            "call": op.call,
            "result": op.result,
        }));
        let lane = *lane_of.entry(op.client.as_str()).or_insert_with(|| {
            lanes.push(Lane::new(op.client.clone(), LaneKind::Client));
            lanes.len() - 1
        });
        let (stop, open) = match (op.return_ns, &op.result) {
            (Some(r), Some(_)) => (r, false),
            _ => (end, true),
        };
        let outcome = if open { "info" } else { "ok" };
        let mut label = op.call.clone();
        if let Some(result) = &op.result {
            label = format!("{label} → {result}");
        }
        let mut class = format!("op {outcome}");
        if let Some(n) = order.get(&op.id) {
            class.push_str(" lin-ok");
            label = format!("#{n} {label}");
        }
        if let Some(description) = stuck.get(&op.id) {
            class.push_str(" lin-stuck hl");
            let message = format!("operation {} could not be placed: {description}", op.id);
            highlights.push(Highlight {
                tone: Tone::Violation,
                property: "linearizability".to_string(),
                start: op.call_ns,
                end: Some(stop),
                message: message.clone(),
                refs: vec![index],
                lanes: vec![op.client.clone()],
            });
            narrative.push(Line {
                at: op.call_ns,
                text: message,
                refs: vec![index],
                tone: LineTone::Bad,
                routine: false,
            });
        }
        let mut span = Span::new(op.call_ns, stop, class, label).refs(vec![index]);
        span.open = open;
        lanes[lane].row("ops", Packing::Stack(LINES_MAX)).spans.push(span);
    }
    for lane in &mut lanes {
        for row in &mut lane.rows {
            row.spans.sort_by_key(|s| (s.start, s.end));
        }
    }
    narrative.sort_by_key(|l| l.at);
    let verdicts = panel
        .map(|p| {
            vec![VerdictRow {
                property: "linearizability".to_string(),
                verdict: "fail".to_string(),
                expected: None,
                as_expected: None,
                summary: format!(
                    "the longest linearizable prefix has {} operations; {} could not be placed after it",
                    p.prefix.len(),
                    p.stuck.len()
                ),
            }]
        })
        .unwrap_or_default();
    Timeline {
        title: title.to_string(),
        facts: vec![("operations".to_string(), ops.len().to_string())],
        axis: Some(axis),
        end,
        lanes,
        highlights,
        verdicts,
        narrative,
        details,
        linearizability: panel.cloned(),
        ..Timeline::default()
    }
}
