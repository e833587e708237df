//! The renderer's input: lanes of spans and marks on one time axis, the details a reader can
//! hover, the verdicts, the highlighted violations and a narrative.
//!
//! html/ draws any [`Timeline`] without knowing where it came from. Three builders make one:
//! - [`from_history`]: a simulator run (history.json + its verdicts): one lane per server, per
//!   client and per protected resource, plus a lane of faults;
//! - [`operations`]: a bare list of operations (an imported Jepsen log) with a linearizability
//!   counterexample drawn on it;
//! - [`steps`]: a numbered sequence of steps (a model checker's counterexample), on an axis of
//!   step numbers instead of seconds.
//!
//! Everything here is plain data in a fixed order (vectors, `BTreeMap`s): the same input gives the
//! same timeline and so the same bytes of HTML.

pub mod from_history;
pub mod narrative;
pub mod operations;
pub mod steps;

use std::collections::BTreeMap;

/// What the numbers on the axis mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// True time in nanoseconds since the start of the run.
    Nanos,
    /// Step numbers of a sequence (0, 1, 2, ...): a model checker's trace has no time.
    Steps,
}

impl Axis {
    /// A position on this axis for people: `12.003 s` or `step 7`.
    pub fn format(self, at: u64) -> String {
        match self {
            Axis::Nanos => fmt_seconds(at),
            Axis::Steps => format!("step {at}"),
        }
    }
}

/// Formats nanoseconds as seconds with millisecond precision: `12.003 s`.
pub fn fmt_seconds(ns: u64) -> String {
    format!("{}.{:03} s", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
}

/// Formats a length of time: `10.000 s`, `450 ms`.
pub fn fmt_duration(ns: u64) -> String {
    if ns >= 1_000_000_000 { fmt_seconds(ns) } else { format!("{} ms", ns / 1_000_000) }
}

/// A latency, `us` µs, to two or three significant figures: `850 µs`, `5.1 ms`, `42 ms`, `5.5 s`.
pub fn fmt_latency_us(us: u64) -> String {
    match us {
        0..1_000 => format!("{us} µs"),
        1_000..10_000 => format!("{:.1} ms", us as f64 / 1e3),
        10_000..1_000_000 => format!("{} ms", us / 1_000),
        _ => format!("{:.1} s", us as f64 / 1e6),
    }
}

/// Everything one report.html shows.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// e.g. `split-brain-gc-pause · seed 1`.
    pub title: String,
    /// One line under the title: what the scenario shows.
    pub summary: String,
    /// Labelled facts for the header: seed, simulated time, entries, replay command.
    pub facts: Vec<(String, String)>,
    pub axis: Option<Axis>,
    /// End of the axis (ns or steps); the axis starts at 0.
    pub end: u64,
    pub lanes: Vec<Lane>,
    /// Violations and observations drawn across lanes.
    pub highlights: Vec<Highlight>,
    pub verdicts: Vec<VerdictRow>,
    pub narrative: Vec<Line>,
    /// What a fencing token is in this run and why the numbers skip (one sentence or two; empty
    /// when the run has no tokens).
    pub token_note: String,
    /// Lines left out of the narrative to keep it short.
    pub narrative_omitted: usize,
    /// What a reference (an index in `refs`) points at: one JSON object each, shown on hover.
    /// History entries for a run; steps for a trace. Objects may carry `time_ns` and `node`.
    pub details: Vec<serde_json::Value>,
    /// Local clocks per node, for "local vs true time" on hover.
    pub clocks: BTreeMap<String, Vec<ClockSegment>>,
    /// A linearizability counterexample, when there is one.
    pub linearizability: Option<LinPanel>,
    /// The scenario's teaching text, shown at the end.
    pub description: String,
    /// Every request of a run, for the latency plot (empty for traces and counterexamples).
    pub latency: Vec<coordsim_checker::metrics::Sample>,
    /// Each node's work queue over the run, for the queue plot (empty without a time model).
    pub queues: Vec<coordsim_checker::history::QueueSeries>,
}

impl Timeline {
    pub fn axis(&self) -> Axis {
        self.axis.unwrap_or(Axis::Nanos)
    }
}

/// What a lane stands for; it sets the lane's colour and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LaneKind {
    Faults,
    Server,
    Client,
    Resource,
    Other,
}

impl LaneKind {
    pub fn css(self) -> &'static str {
        match self {
            LaneKind::Faults => "faults",
            LaneKind::Server => "server",
            LaneKind::Client => "client",
            LaneKind::Resource => "resource",
            LaneKind::Other => "other",
        }
    }
}

/// One horizontal band: a node, the resource, or the faults.
#[derive(Clone, Debug)]
pub struct Lane {
    /// The node's name (`s1`, `c2`, `resource`, `faults`).
    pub name: String,
    pub kind: LaneKind,
    /// Under the name: e.g. the clock's offset and rate.
    pub note: String,
    pub rows: Vec<Row>,
    /// Intervals shaded over the whole lane height (the faults that hit this node).
    pub shades: Vec<Span>,
}

impl Lane {
    pub fn new(name: impl Into<String>, kind: LaneKind) -> Self {
        Lane { name: name.into(), kind, note: String::new(), rows: Vec::new(), shades: Vec::new() }
    }

    /// The row called `label`, created (at the end) if missing.
    pub fn row(&mut self, label: &str, packing: Packing) -> &mut Row {
        if let Some(index) = self.rows.iter().position(|r| r.label == label) {
            return &mut self.rows[index];
        }
        self.rows.push(Row { label: label.to_string(), packing, spans: Vec::new(), marks: Vec::new() });
        self.rows.last_mut().expect("just pushed")
    }
}

/// How a row lays out spans that overlap in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packing {
    /// One line: spans are sequential (a role, a lease, a belief).
    Single,
    /// Overlapping spans go to extra lines, up to this many lines (then they share the last).
    Stack(usize),
}

/// A line inside a lane: "role", "lease", "holds lock", "ops", "writes".
#[derive(Clone, Debug)]
pub struct Row {
    pub label: String,
    pub packing: Packing,
    pub spans: Vec<Span>,
    pub marks: Vec<Mark>,
}

/// Something that lasts: an operation, a role, a lease, a belief, a fault.
#[derive(Clone, Debug)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    /// The end is not known (an operation that never returned, a lease still alive at the end):
    /// drawn fading out.
    pub open: bool,
    /// CSS classes, e.g. `op ok f-write`, `role leader`, `fault`.
    pub class: String,
    /// Short text drawn on the span when there is room.
    pub label: String,
    /// Indices into [`Timeline::details`].
    pub refs: Vec<usize>,
    /// A fill colour for kinds the stylesheet does not know (new fault kinds).
    pub color: Option<String>,
}

impl Span {
    pub fn new(start: u64, end: u64, class: impl Into<String>, label: impl Into<String>) -> Self {
        Span {
            start,
            end: end.max(start),
            open: false,
            class: class.into(),
            label: label.into(),
            refs: Vec::new(),
            color: None,
        }
    }

    pub fn refs(mut self, refs: Vec<usize>) -> Self {
        self.refs = refs;
        self
    }
}

/// The shape of a point event: one shape per meaning, each in the page's legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shape {
    /// A grant.
    Diamond,
    /// An accepted write (red when stale).
    Dot,
    /// A rejected write.
    Cross,
    /// A lease expired, or a session the client learned was expired (LOST).
    Ring,
    /// A keepalive answered.
    Tick,
    /// A keepalive that failed or went unanswered.
    Fall,
    /// A fault that happens at an instant (a clock jump).
    Flash,
    /// Any other event, named by its type on hover; on a trace's axis, a step.
    Square,
}

impl Shape {
    /// Every shape, in the legend's order.
    pub const ALL: [Shape; 8] =
        [Shape::Diamond, Shape::Dot, Shape::Cross, Shape::Ring, Shape::Tick, Shape::Fall, Shape::Flash, Shape::Square];

    /// The id of the shape's `<symbol>` in the page.
    pub fn symbol(self) -> &'static str {
        match self {
            Shape::Diamond => "dia",
            Shape::Dot => "dot",
            Shape::Cross => "x",
            Shape::Ring => "ring",
            Shape::Tick => "tick",
            Shape::Fall => "fall",
            Shape::Flash => "flash",
            Shape::Square => "sq",
        }
    }
}

/// Something that happens at an instant: a grant, a write decision, a lease expiry.
#[derive(Clone, Debug)]
pub struct Mark {
    pub at: u64,
    pub shape: Shape,
    /// CSS classes, e.g. `write accepted stale`.
    pub class: String,
    pub label: String,
    pub refs: Vec<usize>,
}

impl Mark {
    pub fn new(at: u64, shape: Shape, class: impl Into<String>, label: impl Into<String>) -> Self {
        Mark { at, shape, class: class.into(), label: label.into(), refs: Vec::new() }
    }

    pub fn refs(mut self, refs: Vec<usize>) -> Self {
        self.refs = refs;
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// A property failed here.
    Violation,
    /// Worth seeing, not a failure (dual ownership under a pause).
    Observation,
}

/// A violation or an observation, drawn as a band across the lanes it concerns.
#[derive(Clone, Debug)]
pub struct Highlight {
    pub tone: Tone,
    /// The property, e.g. `mutual_exclusion`.
    pub property: String,
    pub start: u64,
    pub end: Option<u64>,
    pub message: String,
    pub refs: Vec<usize>,
    /// Lanes the band covers; empty = all.
    pub lanes: Vec<String>,
}

/// A property's verdict for the table at the top.
#[derive(Clone, Debug)]
pub struct VerdictRow {
    pub property: String,
    pub verdict: String,
    pub expected: Option<String>,
    pub as_expected: Option<bool>,
    pub summary: String,
}

/// One narrative line: `12.003 s: c2 paused for 7 s`.
#[derive(Clone, Debug)]
pub struct Line {
    pub at: u64,
    pub text: String,
    pub refs: Vec<usize>,
    pub tone: LineTone,
    /// Routine (a lease granted, a checkpoint, a user's event): folded behind a toggle, so the
    /// story (grants, releases, faults, expiries, leader changes, violations) reads first.
    pub routine: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LineTone {
    Plain,
    Fault,
    Good,
    Bad,
    Note,
}

impl LineTone {
    pub fn css(self) -> &'static str {
        match self {
            LineTone::Plain => "plain",
            LineTone::Fault => "fault",
            LineTone::Good => "good",
            LineTone::Bad => "bad",
            LineTone::Note => "note",
        }
    }
}

/// A node's clock from `start_ns` on: local = `local_at_start_ns` + rate × (true − start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSegment {
    pub start_ns: u64,
    pub local_at_start_ns: i64,
    /// 1_000_000 = true speed.
    pub rate_ppm: u64,
}

/// A linearizability counterexample as the report shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinPanel {
    /// The longest linearizable prefix, in linearization order: (operation id, description).
    pub prefix: Vec<(u64, String)>,
    /// The model state after the prefix.
    pub state_after_prefix: String,
    /// Operations that could go next in real time but that the model rejects: (id, description).
    pub stuck: Vec<(u64, String)>,
}

/// A deterministic colour for a name the stylesheet does not know (a new fault kind): the same
/// name always gets the same hue.
pub fn color_for(name: &str) -> String {
    // FNV-1a: stable across runs and platforms, unlike std's randomly keyed hasher.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in name.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("hsl({},65%,55%)", hash % 360)
}
