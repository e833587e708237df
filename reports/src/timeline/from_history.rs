//! A simulator run as a timeline: one lane per server (Raft role and term, lease expiries it
//! decided, faults on it), one per client (its lease as the cluster sees it, "I hold the lock" as
//! the client believes it, its operations, faults on it), one per protected resource (each write
//! with its fencing token, accepted or rejected) and one lane of faults.
//!
//! Events and fault kinds this module does not know are still drawn: a fault of any kind is a
//! shaded interval on its targets, named by its serde name; an unknown event is a dot on its
//! node's lane whose hover shows every field. So a new history variant needs no change here.

use std::collections::BTreeMap;

use coordsim_checker::history::{Call, ConnectionState, Entry, Event, History, NodeRole, OpId, Phase, Return};
use coordsim_checker::verdict::Verdict;

use super::{
    ClockSegment, Highlight, Lane, LaneKind, LinPanel, Mark, Packing, Shape, Span, Timeline, Tone, VerdictRow,
    color_for, fmt_duration, narrative,
};
use crate::summary::RunSummary;

/// Most lines an operations row stacks before overlapping operations share its last line.
const OPS_LINES_MAX: usize = 3;
/// Most lines of concurrent faults in the faults lane.
const FAULT_LINES_MAX: usize = 6;

/// What a run's report is made from.
#[derive(Clone, Copy, Debug)]
pub struct RunInput<'a> {
    pub history: &'a History,
    /// The verdicts, when the run was checked.
    pub summary: Option<&'a RunSummary>,
    /// One line: what the scenario shows.
    pub scenario_summary: &'a str,
    /// The scenario's teaching text.
    pub description: &'a str,
    /// A linearizability counterexample over this history's operation ids.
    pub linearizability: Option<&'a LinPanel>,
    /// The real cluster the history was recorded on (`real etcd`), for a `coordsim real` run: its
    /// `seed` is then the run's number and its time wall time.
    pub system: Option<&'a str>,
}

impl<'a> RunInput<'a> {
    pub fn new(history: &'a History) -> Self {
        RunInput { history, summary: None, scenario_summary: "", description: "", linearizability: None, system: None }
    }
}

/// The serde name of a value that serializes to a string (an enum without data): how fault
/// kinds and roles are read, so that new variants need no match arm here.
pub fn serde_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}

/// Colours for the fault kinds we know; any other kind gets a stable colour from its name.
pub fn fault_color(kind: &str) -> String {
    match kind {
        "pause" => "#8e6cc8".to_string(),
        "partition" => "#e08a2c".to_string(),
        "crash" | "kill" => "#555555".to_string(),
        other => color_for(other),
    }
}

/// Builds the timeline of one run.
pub fn build(input: &RunInput<'_>) -> Timeline {
    let history = input.history;
    let end = history.entries.last().map_or(history.duration_ns, |e| e.time_ns.max(history.duration_ns));
    let mut builder = Builder::new(history, end);
    for (index, entry) in history.entries.iter().enumerate() {
        builder.entry(index, entry);
    }
    builder.close_open_things();

    let system = input.system.or(history.recorded_on.as_deref());
    let mut timeline = Timeline {
        title: match system {
            Some(system) => format!("{} · {system}, run {}", history.scenario, history.seed),
            None => format!("{} · seed {}", history.scenario, history.seed),
        },
        summary: input.scenario_summary.to_string(),
        facts: facts(history, input.summary, system),
        axis: Some(super::Axis::Nanos),
        end,
        lanes: Vec::new(),
        highlights: Vec::new(),
        verdicts: Vec::new(),
        narrative: Vec::new(),
        token_note: token_note(history),
        narrative_omitted: 0,
        details: history.entries.iter().map(|e| serde_json::to_value(e).expect("an entry always serializes")).collect(),
        clocks: builder.clocks.clone(),
        linearizability: input.linearizability.cloned(),
        description: input.description.to_string(),
        latency: coordsim_checker::metrics::samples(history),
        queues: history.queues.clone(),
    };
    if let Some(summary) = input.summary {
        timeline.verdicts = verdicts(summary);
        timeline.highlights = highlights(history, summary);
    }
    if let Some(panel) = input.linearizability {
        builder.apply_linearizability(panel, &mut timeline.highlights);
    }
    timeline.lanes = builder.finish_lanes();
    mark_highlighted(&mut timeline);
    let (lines, omitted) = narrative::from_history(history, input.summary);
    timeline.narrative = lines;
    timeline.narrative_omitted = omitted;
    timeline
}

/// A token as drawn on the timeline: itself, or `epoch:counter` for a ZooKeeper zxid whose high
/// 32 bits hold the leader's epoch (a real ensemble's czxid is ten digits long: 4294967299 is
/// `1:3`). ZooKeeper's `ZxidUtils` splits a zxid the same way.
pub fn token_label(token: i64) -> String {
    if token >= 1 << 32 { format!("{}:{}", token >> 32, token & 0xffff_ffff) } else { token.to_string() }
}

/// What the fencing tokens of this run are, read off the history: a ZooKeeper client records its
/// connection states, a Redlock client its calls to the Redis servers, and every other lock in
/// coordsim is etcd's (the holder's key's create revision). Empty when no lock was granted.
fn token_note(history: &History) -> String {
    let mut tokens = history.entries.iter().filter_map(|e| match &e.event {
        Event::Ok { ret: Return::Locked { token, .. }, .. } => Some(*token),
        _ => None,
    });
    let Some(first) = tokens.next() else {
        return String::new();
    };
    let epochs = first >= 1 << 32 || tokens.any(|t| t >= 1 << 32);
    let zookeeper = history.entries.iter().any(|e| matches!(e.event, Event::Connection { .. }));
    let redlock = history
        .entries
        .iter()
        .any(|e| matches!(&e.event, Event::Invoke { call: Call::Api { api, .. }, .. } if api == "redis"));
    if redlock {
        "Tokens here are the order in which clients learned they held the Redlock (1, 2, 3, …), counted by coordsim: Redlock gives no fencing token, so the resource cannot check them.".to_string()
    } else if zookeeper {
        let mut note = "Tokens are the czxid of the holder's lock znode: the zxid of the transaction that created it. Every transaction the ensemble commits (any client's creates, deletes and data changes; on a real ensemble, session creations and closes too) advances the zxid, so tokens grow but skip numbers.".to_string();
        if epochs {
            note.push_str(" A zxid's high 32 bits are the leader's epoch: the timeline shows a token as epoch:counter (4294967299 is 1:3).");
        }
        note
    } else {
        "Tokens are etcd store revisions: the create revision of the holder's lock key. Every change to the store by any client (each put, delete and txn, and the deletion of an expired lease's keys) advances the revision by one, while lease grants and keepalives do not, so tokens grow but skip numbers.".to_string()
    }
}

fn facts(history: &History, summary: Option<&RunSummary>, system: Option<&str>) -> Vec<(String, String)> {
    let mut facts = vec![("scenario".to_string(), history.scenario.clone())];
    match system {
        Some(system) => facts.extend([
            ("on".to_string(), system.to_string()),
            ("run".to_string(), history.seed.to_string()),
            ("recorded".to_string(), fmt_duration(history.duration_ns)),
        ]),
        None => facts.extend([
            ("seed".to_string(), history.seed.to_string()),
            ("simulated".to_string(), fmt_duration(history.duration_ns)),
        ]),
    }
    if system.is_none() {
        let model = history.time_model.clone().unwrap_or_else(|| "none (messages 1-10 ms, servers free)".into());
        facts.push(("time model".to_string(), model));
    }
    facts.push(("entries".to_string(), history.entries.len().to_string()));
    if let Some(summary) = summary {
        let status = if summary.as_expected { "every verdict as expected" } else { "NOT as expected" };
        facts.push(("result".to_string(), status.to_string()));
        facts.push(("replay".to_string(), summary.replay.clone()));
    }
    facts
}

fn verdicts(summary: &RunSummary) -> Vec<VerdictRow> {
    summary
        .outcomes
        .iter()
        .map(|o| VerdictRow {
            property: o.report.property.clone(),
            verdict: o.report.verdict.to_string(),
            expected: Some(o.expected.clone()),
            as_expected: Some(o.as_expected),
            summary: o.report.summary.clone(),
        })
        .collect()
}

/// Failing properties' findings are violations; other findings are observations.
fn highlights(history: &History, summary: &RunSummary) -> Vec<Highlight> {
    let mut out = Vec::new();
    for outcome in &summary.outcomes {
        let tone = if outcome.report.verdict == Verdict::Fail { Tone::Violation } else { Tone::Observation };
        for finding in &outcome.report.findings {
            let mut lanes: Vec<String> =
                finding.entries.iter().filter_map(|&i| history.entries.get(i)).map(|e| e.node.clone()).collect();
            lanes.sort();
            lanes.dedup();
            out.push(Highlight {
                tone,
                property: outcome.report.property.clone(),
                start: finding.time_ns,
                end: finding.until_ns,
                message: finding.message.clone(),
                refs: finding.entries.iter().copied().filter(|&i| i < history.entries.len()).collect(),
                lanes,
            });
        }
    }
    out
}

/// Adds the class `hl` to every span and mark that a violation points at.
fn mark_highlighted(timeline: &mut Timeline) {
    let mut hot = vec![false; timeline.details.len()];
    for highlight in &timeline.highlights {
        if highlight.tone == Tone::Violation {
            for &r in &highlight.refs {
                if let Some(slot) = hot.get_mut(r) {
                    *slot = true;
                }
            }
        }
    }
    let is_hot = |refs: &[usize]| refs.iter().any(|&r| hot.get(r).copied().unwrap_or(false));
    for lane in &mut timeline.lanes {
        for row in &mut lane.rows {
            for span in &mut row.spans {
                if is_hot(&span.refs) {
                    span.class.push_str(" hl");
                }
            }
            for mark in &mut row.marks {
                if is_hot(&mark.refs) {
                    mark.class.push_str(" hl");
                }
            }
        }
    }
}

const ROW_ROLE: &str = "role";
const ROW_EVENTS: &str = "events";
const ROW_LEASE: &str = "lease";
const ROW_HOLDS: &str = "holds lock";
const ROW_OPS: &str = "ops";
const ROW_WRITES: &str = "writes";
const ROW_FAULTS: &str = "faults";
const ROW_CLOCK: &str = "clock";
const FAULTS_LANE: &str = "faults";

/// A fault as the history names it; the kind is its serde name, so any kind is drawn.
#[derive(Clone, Debug)]
struct FaultRecord {
    id: u64,
    kind: String,
    targets: Vec<String>,
    detail: String,
}

struct OpenOp {
    index: usize,
    node: String,
    start: u64,
    call: Call,
}

struct OpenLease {
    client: String,
    start: u64,
    grant: usize,
}

struct Builder {
    end: u64,
    lanes: Vec<Lane>,
    lane_of: BTreeMap<String, usize>,
    ops: BTreeMap<OpId, OpenOp>,
    /// Where each completed operation's span is: (lane, row, span).
    op_spans: BTreeMap<OpId, (usize, usize, usize)>,
    roles: BTreeMap<String, (u64, String, u64, usize)>,
    leases: BTreeMap<i64, OpenLease>,
    beliefs: BTreeMap<(String, String, i64), (u64, usize)>,
    /// ZooKeeper clients whose connection is SUSPENDED: since when, and the record.
    suspended: BTreeMap<String, (u64, usize)>,
    faults: BTreeMap<u64, (u64, usize, FaultRecord)>,
    /// Each node's wall clock (the clock a node shows as its time).
    clocks: BTreeMap<String, Vec<ClockSegment>>,
    /// The monotonic clocks of nodes whose two clocks differ (a jump): for the lane's note.
    monotonic: BTreeMap<String, Vec<ClockSegment>>,
    /// The history writes to more than one resource: one row per resource.
    several_resources: bool,
}

impl Builder {
    fn new(history: &History, end: u64) -> Self {
        let mut builder = Builder {
            end,
            lanes: Vec::new(),
            lane_of: BTreeMap::new(),
            ops: BTreeMap::new(),
            op_spans: BTreeMap::new(),
            roles: BTreeMap::new(),
            leases: BTreeMap::new(),
            beliefs: BTreeMap::new(),
            suspended: BTreeMap::new(),
            faults: BTreeMap::new(),
            clocks: BTreeMap::new(),
            monotonic: BTreeMap::new(),
            several_resources: several_resources(history),
        };
        let has_faults = history.entries.iter().any(|e| matches!(e.event, Event::Fault { .. }) || e.node == "nemesis");
        if has_faults {
            builder.add_lane(Lane::new(FAULTS_LANE, LaneKind::Faults));
        }
        // Servers, then clients, then resources, each in the order the history lists them.
        for role in [NodeRole::Server, NodeRole::Client, NodeRole::Resource] {
            for node in history.nodes.iter().filter(|n| n.role == role) {
                let (kind, rows): (LaneKind, &[&str]) = match role {
                    NodeRole::Server => (LaneKind::Server, &[ROW_ROLE]),
                    NodeRole::Client => (LaneKind::Client, &[ROW_LEASE, ROW_HOLDS, ROW_OPS]),
                    NodeRole::Resource => (LaneKind::Resource, &[ROW_WRITES]),
                };
                let mut lane = Lane::new(&node.name, kind);
                for row in rows {
                    let packing = if *row == ROW_OPS { Packing::Stack(OPS_LINES_MAX) } else { Packing::Single };
                    lane.row(row, packing);
                }
                builder.add_lane(lane);
            }
        }
        builder
    }

    fn add_lane(&mut self, lane: Lane) {
        self.lane_of.entry(lane.name.clone()).or_insert(self.lanes.len());
        self.lanes.push(lane);
    }

    /// The lane of `node`; a node the history did not declare gets a lane of its own.
    fn lane(&mut self, node: &str) -> usize {
        if let Some(&index) = self.lane_of.get(node) {
            return index;
        }
        let kind = if node == "nemesis" { LaneKind::Faults } else { LaneKind::Other };
        let name = if node == "nemesis" { FAULTS_LANE } else { node };
        if let Some(&index) = self.lane_of.get(name) {
            self.lane_of.insert(node.to_string(), index);
            return index;
        }
        self.add_lane(Lane::new(name, kind));
        let index = self.lanes.len() - 1;
        self.lane_of.insert(node.to_string(), index);
        index
    }

    fn push_span(&mut self, node: &str, row: &str, packing: Packing, span: Span) -> (usize, usize, usize) {
        let lane = self.lane(node);
        let lane_ref = &mut self.lanes[lane];
        let row_ref = lane_ref.row(row, packing);
        row_ref.spans.push(span);
        let row_index = lane_ref.rows.iter().position(|r| r.label == row).expect("the row exists");
        (lane, row_index, lane_ref.rows[row_index].spans.len() - 1)
    }

    fn push_mark(&mut self, node: &str, row: &str, mark: Mark) {
        let lane = self.lane(node);
        self.lanes[lane].row(row, Packing::Single).marks.push(mark);
    }

    fn entry(&mut self, index: usize, entry: &Entry) {
        let t = entry.time_ns;
        let node = entry.node.as_str();
        match &entry.event {
            // A session's touches are the wire requests of the calls drawn already.
            Event::Invoke { call: Call::SessionTouch { .. }, .. } => {}
            Event::Invoke { op, call } => {
                self.ops.insert(*op, OpenOp { index, node: node.to_string(), start: t, call: call.clone() });
            }
            Event::Ok { op, ret } => {
                let call = self.complete(*op, index, t, "ok");
                self.on_return(index, entry, call.as_ref(), ret);
            }
            Event::Fail { op, .. } => {
                self.complete(*op, index, t, "fail");
            }
            Event::Info { op, .. } => {
                self.complete(*op, index, t, "info");
            }
            Event::Fault { fault, phase, kind, targets, detail, .. } => {
                let fault = FaultRecord {
                    id: *fault,
                    kind: serde_name(kind),
                    targets: targets.clone(),
                    detail: detail.clone(),
                };
                self.fault(index, t, *phase, fault)
            }
            Event::Belief { lock, token, phase, .. } => self.belief(index, t, node, lock, *token, *phase),
            Event::Resource { resource, client, token, value, accepted, highest_before } => {
                let stale = *accepted && *token < *highest_before;
                let class = match (accepted, stale) {
                    (true, true) => "write accepted stale",
                    (true, false) => "write accepted",
                    (false, _) => "write rejected",
                };
                let shape = if *accepted { Shape::Dot } else { Shape::Cross };
                let mut refs = vec![index];
                // The write operation that carried this token, for the hover.
                if let Some((_, open)) = self.ops.iter().find(|(_, o)| {
                    o.node == *client
                        && matches!(&o.call, Call::Write { token: t2, value: v2, .. } if t2 == token && v2 == value)
                }) {
                    refs.insert(0, open.index);
                }
                let row =
                    if self.several_resources { format!("{ROW_WRITES} {resource}") } else { ROW_WRITES.to_string() };
                let label = token_label(*token);
                self.push_mark(node, &row, Mark::new(t, shape, class, label).refs(refs));
            }
            Event::Role { role, term } => self.role(index, t, node, &serde_name(role), *term),
            Event::LeaseExpiry { lease, .. } => self.lease_expiry(index, t, node, *lease),
            Event::Connection { state, .. } => self.connection(index, t, node, *state),
            #[allow(unreachable_patterns)]
            _ => self.unknown(index, entry),
        }
    }

    /// Draws a completed operation; returns its call.
    fn complete(&mut self, op: OpId, index: usize, t: u64, outcome: &str) -> Option<Call> {
        let open = self.ops.remove(&op)?;
        let f = serde_name_of_call(&open.call);
        let (end, is_open) = if outcome == "info" { (self.end, true) } else { (t, false) };
        let mut span = Span::new(open.start, end, format!("op {outcome} f-{f}"), op_label(&open.call))
            .refs(vec![open.index, index]);
        span.open = is_open;
        let at = self.push_span(&open.node, ROW_OPS, Packing::Stack(OPS_LINES_MAX), span);
        self.op_spans.insert(op, at);
        if outcome != "ok" {
            self.op_failed(index, t, &open);
        }
        Some(open.call)
    }

    fn op_failed(&mut self, index: usize, t: u64, open: &OpenOp) {
        if let Call::LeaseKeepAlive { .. } = open.call {
            let mark = Mark::new(t, Shape::Fall, "keepalive failed", "").refs(vec![open.index, index]);
            self.push_mark(&open.node, ROW_LEASE, mark);
        }
    }

    fn on_return(&mut self, index: usize, entry: &Entry, call: Option<&Call>, ret: &Return) {
        let t = entry.time_ns;
        match ret {
            Return::LeaseGranted { lease, .. } => {
                self.leases.insert(*lease, OpenLease { client: entry.node.clone(), start: t, grant: index });
            }
            Return::LeaseKeptAlive { .. } => {
                let mark = Mark::new(t, Shape::Tick, "keepalive", "").refs(vec![index]);
                self.push_mark(&entry.node, ROW_LEASE, mark);
            }
            Return::Locked { token, .. } => {
                let mark =
                    Mark::new(t, Shape::Diamond, "grant", format!("grant {}", token_label(*token))).refs(vec![index]);
                self.push_mark(&entry.node, ROW_HOLDS, mark);
            }
            Return::LeaseRevoked => {
                if let Some(Call::LeaseRevoke { lease }) = call {
                    self.end_lease(*lease, index, t, "lease revoked");
                }
            }
            _ => {}
        }
    }

    fn end_lease(&mut self, lease: i64, index: usize, t: u64, class: &str) {
        if let Some(open) = self.leases.remove(&lease) {
            let span = Span::new(open.start, t, class, format!("lease {lease}")).refs(vec![open.grant, index]);
            self.push_span(&open.client, ROW_LEASE, Packing::Single, span);
        }
    }

    fn lease_expiry(&mut self, index: usize, t: u64, node: &str, lease: i64) {
        let label = format!("lease {lease} expired");
        self.push_mark(node, ROW_EVENTS, Mark::new(t, Shape::Ring, "expiry", label.clone()).refs(vec![index]));
        let client = self.leases.get(&lease).map(|l| l.client.clone());
        self.end_lease(lease, index, t, "lease expired");
        if let Some(client) = client {
            self.push_mark(&client, ROW_LEASE, Mark::new(t, Shape::Ring, "expiry", "expired").refs(vec![index]));
        }
    }

    /// A ZooKeeper client's connection: SUSPENDED periods as spans on its lease row (over the
    /// lease, which the ensemble may still keep), LOST as the session's end.
    fn connection(&mut self, index: usize, t: u64, node: &str, state: ConnectionState) {
        match state {
            ConnectionState::Connected => {}
            ConnectionState::Suspended => {
                self.suspended.insert(node.to_string(), (t, index));
            }
            ConnectionState::Reconnected | ConnectionState::Lost => {
                if let Some((start, first)) = self.suspended.remove(node) {
                    let span = Span::new(start, t, "suspended", "SUSPENDED").refs(vec![first, index]);
                    self.push_span(node, ROW_LEASE, Packing::Single, span);
                }
                if state == ConnectionState::Lost {
                    let mark = Mark::new(t, Shape::Ring, "expiry", "session LOST").refs(vec![index]);
                    self.push_mark(node, ROW_LEASE, mark);
                }
            }
        }
    }

    fn belief(&mut self, index: usize, t: u64, node: &str, lock: &str, token: i64, phase: Phase) {
        let key = (node.to_string(), lock.to_string(), token);
        match phase {
            Phase::Start => {
                self.beliefs.insert(key, (t, index));
            }
            Phase::End => {
                if let Some((start, first)) = self.beliefs.remove(&key) {
                    let span =
                        Span::new(start, t, "belief", format!("token {}", token_label(token))).refs(vec![first, index]);
                    self.push_span(node, ROW_HOLDS, Packing::Single, span);
                }
            }
        }
    }

    fn fault(&mut self, index: usize, t: u64, phase: Phase, fault: FaultRecord) {
        match phase {
            Phase::Start => {
                self.faults.insert(fault.id, (t, index, fault));
            }
            Phase::End => {
                if let Some((start, first, started)) = self.faults.remove(&fault.id) {
                    self.draw_fault(start, t, false, &started, vec![first, index]);
                }
            }
        }
    }

    /// A fault is a bar in the faults lane and a shade over each target's lane; a clock fault is
    /// also drawn on its target's `clock` row. An instantaneous fault (a clock jump) is a mark.
    fn draw_fault(&mut self, start: u64, end: u64, open: bool, fault: &FaultRecord, refs: Vec<usize>) {
        let kind = fault.kind.as_str();
        let color = fault_color(kind);
        let ident = css_ident(kind);
        let label = if fault.detail.is_empty() {
            format!("{kind} {}", fault.targets.join(","))
        } else {
            format!("{kind}: {}", fault.detail)
        };
        let is_clock = kind.starts_with("clock");
        if end <= start && !open {
            let mark = Mark::new(start, Shape::Flash, format!("fault k-{ident}"), label).refs(refs.clone());
            self.push_mark(FAULTS_LANE, ROW_FAULTS, mark);
            for target in &fault.targets {
                if is_clock && self.lane_of.contains_key(target.as_str()) {
                    let mark = Mark::new(start, Shape::Flash, format!("fault k-{ident}"), fault.detail.clone())
                        .refs(refs.clone());
                    self.push_mark(target, ROW_CLOCK, mark);
                }
            }
            return;
        }
        let mut span = Span::new(start, end, format!("fault k-{ident}"), label).refs(refs.clone());
        span.open = open;
        span.color = Some(color);
        self.push_span(FAULTS_LANE, ROW_FAULTS, Packing::Stack(FAULT_LINES_MAX), span.clone());
        for target in &fault.targets {
            let Some(&lane) = self.lane_of.get(target.as_str()) else {
                continue;
            };
            let mut shade = span.clone();
            shade.label = String::new();
            shade.class = format!("shade k-{ident}");
            self.lanes[lane].shades.push(shade);
            if is_clock {
                let mut clock = span.clone();
                clock.label = if fault.detail.is_empty() { kind.to_string() } else { fault.detail.clone() };
                self.push_span(target, ROW_CLOCK, Packing::Stack(2), clock);
            }
        }
    }

    fn role(&mut self, index: usize, t: u64, node: &str, role: &str, term: u64) {
        if let Some((start, previous, previous_term, first)) = self.roles.remove(node) {
            self.draw_role(node, start, t, &previous, previous_term, first, false);
        }
        self.roles.insert(node.to_string(), (t, role.to_string(), term, index));
    }

    #[allow(clippy::too_many_arguments)]
    fn draw_role(&mut self, node: &str, start: u64, end: u64, role: &str, term: u64, index: usize, open: bool) {
        let mut span =
            Span::new(start, end, format!("role r-{}", css_ident(role)), format!("{role} t{term}")).refs(vec![index]);
        span.open = open;
        self.push_span(node, ROW_ROLE, Packing::Single, span);
    }

    fn unknown(&mut self, index: usize, entry: &Entry) {
        let value = serde_json::to_value(&entry.event).unwrap_or(serde_json::Value::Null);
        self.generic_event(index, entry.time_ns, &entry.node, &value);
    }

    /// An event this module has no arm for, read through its JSON form: a `clock` record becomes
    /// a clock segment of its node; anything else a dot named by its `type` on its node's lane.
    fn generic_event(&mut self, index: usize, time_ns: u64, node: &str, value: &serde_json::Value) {
        let kind = value.get("type").and_then(|v| v.as_str()).unwrap_or("event").to_string();
        if kind == "clock"
            && let Some(segment) = clock_segment(time_ns, value)
        {
            let clocks = match value.get("clock").and_then(|c| c.as_str()) {
                Some("monotonic") => &mut self.monotonic,
                _ => &mut self.clocks,
            };
            clocks.entry(node.to_string()).or_default().push(segment);
            return;
        }
        let mark = Mark::new(time_ns, Shape::Square, format!("event t-{}", css_ident(&kind)), kind.replace('_', " "))
            .refs(vec![index]);
        self.push_mark(node, ROW_EVENTS, mark);
    }

    /// Whatever is still open at the end of the history is drawn to the end, fading out.
    fn close_open_things(&mut self) {
        let end = self.end;
        let ops = std::mem::take(&mut self.ops);
        for (op, open) in ops {
            let f = serde_name_of_call(&open.call);
            let mut span =
                Span::new(open.start, end, format!("op open f-{f}"), op_label(&open.call)).refs(vec![open.index]);
            span.open = true;
            let at = self.push_span(&open.node, ROW_OPS, Packing::Stack(OPS_LINES_MAX), span);
            self.op_spans.insert(op, at);
        }
        let roles = std::mem::take(&mut self.roles);
        for (node, (start, role, term, index)) in roles {
            self.draw_role(&node, start, end, &role, term, index, true);
        }
        let leases = std::mem::take(&mut self.leases);
        for (lease, open) in leases {
            let mut span = Span::new(open.start, end, "lease", format!("lease {lease}")).refs(vec![open.grant]);
            span.open = true;
            self.push_span(&open.client, ROW_LEASE, Packing::Single, span);
        }
        let suspended = std::mem::take(&mut self.suspended);
        for (node, (start, index)) in suspended {
            let mut span = Span::new(start, end, "suspended", "SUSPENDED").refs(vec![index]);
            span.open = true;
            self.push_span(&node, ROW_LEASE, Packing::Single, span);
        }
        let beliefs = std::mem::take(&mut self.beliefs);
        for ((node, _lock, token), (start, index)) in beliefs {
            let mut span = Span::new(start, end, "belief", format!("token {}", token_label(token))).refs(vec![index]);
            span.open = true;
            self.push_span(&node, ROW_HOLDS, Packing::Single, span);
        }
        let faults = std::mem::take(&mut self.faults);
        for (_, (start, index, fault)) in faults {
            self.draw_fault(start, end, true, &fault, vec![index]);
        }
        for (node, segments) in &self.clocks {
            if let Some(&lane) = self.lane_of.get(node.as_str()) {
                self.lanes[lane].note = clock_note(segments);
                if let Some(monotonic) = self.monotonic.get(node) {
                    // A jump stepped the wall clock only: say where the monotonic one stands.
                    let at = |segments| clock_reading(segments).unwrap_or_else(|| "true time".to_string());
                    self.lanes[lane].note = format!("wall {}; monotonic {}", at(segments), at(monotonic));
                }
            }
        }
    }

    /// Numbers the operations of the linearizable prefix and flags the stuck ones.
    fn apply_linearizability(&mut self, panel: &LinPanel, highlights: &mut Vec<Highlight>) {
        for (order, (op, _)) in panel.prefix.iter().enumerate() {
            if let Some(&(lane, row, span)) = self.op_spans.get(op) {
                let span = &mut self.lanes[lane].rows[row].spans[span];
                span.class.push_str(" lin-ok");
                span.label = format!("#{} {}", order + 1, span.label);
            }
        }
        for (op, description) in &panel.stuck {
            if let Some(&(lane, row, index)) = self.op_spans.get(op) {
                let lane_name = self.lanes[lane].name.clone();
                let span = &mut self.lanes[lane].rows[row].spans[index];
                span.class.push_str(" lin-stuck");
                highlights.push(Highlight {
                    tone: Tone::Violation,
                    property: "linearizability".to_string(),
                    start: span.start,
                    end: Some(span.end),
                    message: format!("operation {op} could not be placed: {description}"),
                    refs: span.refs.clone(),
                    lanes: vec![lane_name],
                });
            }
        }
    }

    /// The lanes, without rows that stayed empty.
    fn finish_lanes(self) -> Vec<Lane> {
        let mut lanes = self.lanes;
        for lane in &mut lanes {
            lane.rows.retain(|r| !r.spans.is_empty() || !r.marks.is_empty());
            for row in &mut lane.rows {
                // Spans are pushed when they end; draw them in start order.
                row.spans.sort_by_key(|s| (s.start, s.end));
            }
        }
        lanes
    }
}

fn several_resources(history: &History) -> bool {
    let mut first: Option<&str> = None;
    for entry in &history.entries {
        if let Event::Resource { resource, .. } = &entry.event {
            match first {
                None => first = Some(resource),
                Some(name) if name != resource => return true,
                Some(_) => {}
            }
        }
    }
    false
}

fn serde_name_of_call(call: &Call) -> String {
    serde_json::to_value(call)
        .ok()
        .and_then(|v| v.get("f").and_then(|f| f.as_str()).map(str::to_string))
        .unwrap_or_else(|| "call".to_string())
}

/// Short text for an operation bar.
fn op_label(call: &Call) -> String {
    match call {
        Call::Lock { .. } => "lock".to_string(),
        Call::Unlock { .. } => "unlock".to_string(),
        Call::Write { token, value, .. } => format!("write {value} t{}", token_label(*token)),
        Call::LeaseGrant { .. } => "lease grant".to_string(),
        Call::LeaseKeepAlive { .. } => "keepalive".to_string(),
        Call::LeaseRevoke { .. } => "revoke".to_string(),
        Call::Api { api, method, .. } => format!("{api} {method}"),
        #[allow(unreachable_patterns)]
        other => serde_name_of_call(other).replace('_', " "),
    }
}

/// A CSS-safe version of a name: letters, digits, `-` and `_`.
pub fn css_ident(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect()
}

/// Reads a clock record: an event of type `clock` with `local_ns` (the node's local time at this
/// true time) and optionally `rate_ppm` (1_000_000 = true speed).
fn clock_segment(true_ns: u64, value: &serde_json::Value) -> Option<ClockSegment> {
    let local = value.get("local_ns")?.as_i64()?;
    let rate = value.get("rate_ppm").and_then(|r| r.as_u64()).unwrap_or(1_000_000);
    Some(ClockSegment { start_ns: true_ns, local_at_start_ns: local, rate_ppm: rate })
}

/// `clock +1.500 s ×1.0002` from the last segment; empty for a clock at true time.
fn clock_note(segments: &[ClockSegment]) -> String {
    clock_reading(segments).map_or(String::new(), |reading| format!("clock {reading}"))
}

/// Where a clock stands at its last segment: "+1.500 s ×1.000200"; `None` at true time.
fn clock_reading(segments: &[ClockSegment]) -> Option<String> {
    let last = segments.last()?;
    let offset = last.local_at_start_ns - last.start_ns as i64;
    if offset == 0 && last.rate_ppm == 1_000_000 {
        return None;
    }
    let sign = if offset < 0 { "-" } else { "+" };
    let magnitude = offset.unsigned_abs();
    Some(format!(
        "{sign}{}.{:03} s ×{}.{:06}",
        magnitude / 1_000_000_000,
        (magnitude / 1_000_000) % 1000,
        last.rate_ppm / 1_000_000,
        last.rate_ppm % 1_000_000
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordsim_checker::history::NodeInfo;

    fn history() -> History {
        let mut h = History::new("t", 1);
        h.nodes.push(NodeInfo { name: "s1".into(), role: NodeRole::Server });
        h.nodes.push(NodeInfo { name: "c1".into(), role: NodeRole::Client });
        h.duration_ns = 10_000_000_000;
        h
    }

    #[test]
    fn an_event_kind_the_renderer_does_not_know_is_a_named_dot_on_its_node() {
        let h = history();
        let mut builder = Builder::new(&h, h.duration_ns);
        let event = serde_json::json!({"type": "watch_event", "revision": 7, "key": "/a"});
        builder.generic_event(0, 1_000_000_000, "c1", &event);
        builder.generic_event(1, 2_000_000_000, "w9", &event);
        let lanes = builder.finish_lanes();
        let c1 = lanes.iter().find(|l| l.name == "c1").unwrap();
        let events = c1.rows.iter().find(|r| r.label == ROW_EVENTS).unwrap();
        assert_eq!(events.marks.len(), 1);
        assert_eq!(events.marks[0].class, "event t-watch_event");
        assert_eq!(events.marks[0].label, "watch event");
        assert_eq!(events.marks[0].refs, vec![0]);
        // A node the history did not declare gets a lane of its own.
        let other = lanes.iter().find(|l| l.name == "w9").unwrap();
        assert_eq!(other.kind, LaneKind::Other);
    }

    #[test]
    fn a_clock_record_gives_the_node_a_local_clock() {
        let h = history();
        let mut builder = Builder::new(&h, h.duration_ns);
        let event = serde_json::json!({"type": "clock", "local_ns": 1_500_000_000i64, "rate_ppm": 1_000_200});
        builder.generic_event(0, 0, "s1", &event);
        builder.close_open_things();
        assert_eq!(
            builder.clocks["s1"],
            vec![ClockSegment { start_ns: 0, local_at_start_ns: 1_500_000_000, rate_ppm: 1_000_200 }]
        );
        assert_eq!(builder.lanes[builder.lane_of["s1"]].note, "clock +1.500 s ×1.000200");
    }

    #[test]
    fn a_node_with_a_jumped_wall_clock_shows_the_wall_clock_and_notes_the_monotonic_one() {
        let h = history();
        let mut builder = Builder::new(&h, h.duration_ns);
        let records = [
            (0, serde_json::json!({"type": "clock", "local_ns": 0, "rate_ppm": 1_000_000})),
            (
                1_000_000_000,
                serde_json::json!({"type": "clock", "local_ns": 21_000_000_000i64, "rate_ppm": 1_000_000, "clock": "wall"}),
            ),
            (
                1_000_000_000,
                serde_json::json!({"type": "clock", "local_ns": 1_000_000_000, "rate_ppm": 1_000_000, "clock": "monotonic"}),
            ),
        ];
        for (i, (at, event)) in records.iter().enumerate() {
            builder.generic_event(i, *at, "s1", event);
        }
        builder.close_open_things();
        assert_eq!(builder.clocks["s1"].len(), 2, "the wall clock's two segments");
        assert_eq!(builder.lanes[builder.lane_of["s1"]].note, "wall +20.000 s ×1.000000; monotonic true time");
    }

    #[test]
    fn any_fault_kind_is_a_bar_and_a_shade_on_its_targets_and_clock_faults_reach_the_clock_row() {
        let h = history();
        let mut builder = Builder::new(&h, h.duration_ns);
        let fault = |id, kind: &str, targets: &[&str], detail: &str| FaultRecord {
            id,
            kind: kind.to_string(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            detail: detail.to_string(),
        };
        builder.fault(0, 1_000, Phase::Start, fault(1, "disk-stall", &["s1"], "fsync 2 s"));
        builder.fault(1, 3_000, Phase::End, fault(1, "disk-stall", &["s1"], ""));
        builder.fault(2, 4_000, Phase::Start, fault(2, "clock-rate", &["c1"], "rate 0.5x"));
        builder.fault(3, 5_000, Phase::Start, fault(3, "clock-jump", &["s1"], "by +2s"));
        builder.fault(4, 5_000, Phase::End, fault(3, "clock-jump", &["s1"], ""));
        builder.close_open_things();
        let lanes = builder.finish_lanes();
        let faults = &lanes.iter().find(|l| l.name == FAULTS_LANE).unwrap().rows[0];
        let classes: Vec<&str> = faults.spans.iter().map(|s| s.class.as_str()).collect();
        assert_eq!(classes, vec!["fault k-disk-stall", "fault k-clock-rate"]);
        assert_eq!(faults.spans[0].label, "disk-stall: fsync 2 s");
        assert_eq!(faults.spans[0].color.as_deref(), Some(color_for("disk-stall").as_str()));
        assert!(faults.spans[1].open, "a fault still on at the end fades out");
        assert_eq!(faults.marks[0].class, "fault k-clock-jump", "an instantaneous fault is a mark");
        let s1 = lanes.iter().find(|l| l.name == "s1").unwrap();
        assert_eq!(s1.shades.len(), 1);
        assert_eq!((s1.shades[0].start, s1.shades[0].end), (1_000, 3_000));
        let clock = s1.rows.iter().find(|r| r.label == ROW_CLOCK).unwrap();
        assert_eq!(clock.marks[0].label, "by +2s");
        let c1 = lanes.iter().find(|l| l.name == "c1").unwrap();
        let clock = c1.rows.iter().find(|r| r.label == ROW_CLOCK).unwrap();
        assert_eq!(clock.spans[0].label, "rate 0.5x");
    }
}
