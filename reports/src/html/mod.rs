//! report.html: one self-contained page per run (inline SVG, CSS and a small script; no network,
//! no external file), readable offline and printable.
//!
//! The page shows, top to bottom: the verdicts; what went wrong (each violation with the exact
//! entries and times); the timeline (zoom with the wheel or the buttons, drag to pan, hover for
//! an entry's fields and the node's local time); the requests' latency over the run (`latency`);
//! each node's work queue over the run (`queues`); the narrative; a linearizability counterexample
//! if there is one; the scenario's teaching text. Without the script the timeline is the whole
//! run at zoom 1, so the page prints as it is.
//!
//! Output is deterministic: the same [`Timeline`] gives the same bytes (no clock, no random order).

mod assets;
mod latency;
pub mod layout;
mod plot;
mod queues;
pub mod svg;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::timeline::{Axis, Shape, Timeline, Tone};
use crate::xml::escape;

/// Renders a timeline as a complete HTML page.
pub fn render(timeline: &Timeline) -> String {
    let layout = layout::Layout::new(timeline);
    let axis = timeline.axis();
    let mut out = String::with_capacity(256 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    let _ = writeln!(out, "<title>coordsim · {}</title>", escape(&timeline.title));
    let _ = writeln!(out, "<style>\n{}</style>\n</head>\n<body>", assets::CSS);
    header(&mut out, timeline);
    verdicts(&mut out, timeline);
    violations(&mut out, timeline, axis);
    out.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    out.push_str(
        "<div class=\"controls\"><button type=\"button\" data-z=\"in\">zoom in</button><button type=\"button\" data-z=\"out\">zoom out</button><button type=\"button\" data-z=\"fit\">whole run</button><span id=\"readout\"></span></div>\n",
    );
    out.push_str("<div class=\"tlwrap\">\n");
    out.push_str(&svg::draw(timeline, &layout));
    out.push_str("</div>\n");
    legend(&mut out, timeline, axis);
    out.push_str("</section>\n");
    latency::section(&mut out, &timeline.latency, timeline.end);
    queues::section(&mut out, &timeline.queues, timeline.end);
    narrative(&mut out, timeline, axis);
    linearizability(&mut out, timeline);
    if !timeline.description.trim().is_empty() {
        let _ = writeln!(
            out,
            "<section id=\"about\">\n<h2>The scenario</h2>\n<pre>{}</pre>\n</section>",
            escape(timeline.description.trim())
        );
    }
    out.push_str("<div id=\"tip\" hidden=\"hidden\"></div>\n");
    let _ = writeln!(out, "<script type=\"application/json\" id=\"data\">{}</script>", data_json(timeline));
    let _ = writeln!(out, "<script>\n{}</script>\n</body>\n</html>", assets::JS);
    out
}

fn header(out: &mut String, timeline: &Timeline) {
    let _ = writeln!(out, "<header>\n<h1>{}</h1>", escape(&timeline.title));
    if !timeline.summary.is_empty() {
        let _ = writeln!(out, "<p class=\"lead\">{}</p>", escape(&timeline.summary));
    }
    out.push_str("<dl class=\"facts\">");
    for (name, value) in &timeline.facts {
        let class = if name == "replay" { " class=\"code\"" } else { "" };
        let _ = write!(out, "<div><dt>{}</dt><dd{class}>{}</dd></div>", escape(name), escape(value));
    }
    out.push_str("</dl>\n</header>\n");
}

fn verdicts(out: &mut String, timeline: &Timeline) {
    if timeline.verdicts.is_empty() {
        return;
    }
    out.push_str("<section id=\"verdicts\">\n<h2>Verdicts</h2>\n<table>\n<thead><tr><th>property</th><th>verdict</th><th>expected</th><th>summary</th></tr></thead>\n<tbody>\n");
    for row in &timeline.verdicts {
        let status = match row.as_expected {
            Some(true) => "as-expected",
            Some(false) => "unexpected",
            None => "unjudged",
        };
        let expected = match (&row.expected, row.as_expected) {
            (Some(e), Some(true)) => format!("{} ✓", escape(e)),
            (Some(e), Some(false)) => format!("{} ✗ NOT as expected", escape(e)),
            (Some(e), None) => escape(e),
            (None, _) => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "<tr class=\"{status}\" data-property=\"{}\"><td>{}</td><td class=\"v-{}\">{}</td><td>{expected}</td><td>{}</td></tr>",
            escape(&row.property),
            escape(&row.property),
            escape(&row.verdict),
            escape(&row.verdict),
            escape(&row.summary)
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

/// "What went wrong": one article per failing property, telling its first violation with the
/// entries it rests on; a property that failed again says how often and lists every time, each a
/// link into the timeline, so a long run's repeats step through instead of piling up.
fn violations(out: &mut String, timeline: &Timeline, axis: Axis) {
    let mut by_property: BTreeMap<&str, Vec<&crate::timeline::Highlight>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for highlight in timeline.highlights.iter().filter(|h| h.tone == Tone::Violation) {
        let list = by_property.entry(highlight.property.as_str()).or_default();
        if list.is_empty() {
            order.push(highlight.property.as_str());
        }
        list.push(highlight);
    }
    if order.is_empty() {
        return;
    }
    out.push_str("<section id=\"violations\">\n<h2>What went wrong</h2>\n");
    // Properties in the order their first violation happened.
    order.sort_by_key(|p| by_property[p].iter().map(|h| h.start).min());
    for property in order {
        let mut all = by_property[property].clone();
        all.sort_by_key(|h| h.start);
        let first = all[0];
        let when = |h: &crate::timeline::Highlight| match h.end {
            Some(end) if end > h.start => format!("{} – {}", axis.format(h.start), axis.format(end)),
            _ => axis.format(h.start),
        };
        let refs: Vec<String> = first.refs.iter().map(|r| r.to_string()).collect();
        let expectation = match timeline.verdicts.iter().find(|v| v.property == first.property) {
            Some(v) if v.as_expected == Some(true) => " <span class=\"expected\">expected by the scenario</span>",
            Some(v) if v.as_expected == Some(false) => " <span class=\"unexpected\">NOT expected</span>",
            _ => "",
        };
        let count =
            if all.len() > 1 { format!(" <span class=\"count\">×{}</span>", all.len()) } else { String::new() };
        let _ = writeln!(
            out,
            "<article class=\"violation\" data-property=\"{}\" data-n=\"{}\" data-t=\"{}\" data-e=\"{}\">\n<h3>✗ {}{count} <time>{}</time>{expectation}</h3>\n<p>{}</p>\n<ul class=\"entries\">",
            escape(&first.property),
            all.len(),
            first.start,
            refs.join(" "),
            escape(&first.property),
            when(first),
            escape(&first.message)
        );
        for &r in &first.refs {
            if let Some(detail) = timeline.details.get(r) {
                let _ = writeln!(out, "<li data-e=\"{r}\"><code>#{r}</code> {}</li>", escape(&describe(detail, axis)));
            }
        }
        out.push_str("</ul>\n");
        if all.len() > 1 {
            let last = all[all.len() - 1];
            let _ = writeln!(
                out,
                "<details class=\"repeats\"><summary>{} violated {} times in all, the first at {}, the last at {}: step through them</summary>\n<ol class=\"occurrences\">",
                escape(&first.property),
                all.len(),
                axis.format(first.start),
                axis.format(last.start)
            );
            for highlight in &all {
                let refs: Vec<String> = highlight.refs.iter().map(|r| r.to_string()).collect();
                let _ = writeln!(
                    out,
                    "<li data-t=\"{}\" data-e=\"{}\"><time>{}</time> {}</li>",
                    highlight.start,
                    refs.join(" "),
                    when(highlight),
                    escape(&highlight.message)
                );
            }
            out.push_str("</ol></details>\n");
        }
        out.push_str("</article>\n");
    }
    out.push_str("</section>\n");
}

/// What each shape on the timeline means: one glyph per meaning, each drawn with the symbol the
/// timeline uses (`data-glyph` names it).
pub fn glyph_meaning(shape: Shape) -> &'static str {
    match shape {
        Shape::Diamond => "lock granted",
        Shape::Dot => "write accepted (red: a stale token accepted)",
        Shape::Cross => "write rejected",
        Shape::Ring => "lease expired / session LOST",
        Shape::Tick => "keepalive answered",
        Shape::Fall => "keepalive failed",
        Shape::Flash => "instant fault (clock jump)",
        Shape::Square => "other event (hover for its type)",
    }
}

fn glyph(out: &mut String, shape: Shape, class: &str) {
    let _ = write!(
        out,
        "<span class=\"glyph\" data-glyph=\"{id}\"><svg width=\"12\" height=\"12\" viewBox=\"-6 -6 12 12\" aria-hidden=\"true\"><use class=\"{class}\" href=\"#{id}\"/></svg>{}</span> ",
        glyph_meaning(shape),
        id = shape.symbol()
    );
}

fn legend(out: &mut String, timeline: &Timeline, axis: Axis) {
    if axis == Axis::Steps {
        out.push_str("<p class=\"legend\"><span class=\"sw step\"></span>a step, numbered in order · <span class=\"sw opok\"></span>operation <span class=\"sw opinfo\"></span>unknown outcome · #n place in the longest linearizable prefix · <span class=\"sw opfail\"></span>could not be placed · <span class=\"sw violation\"></span>violation</p>\n");
        return;
    }
    out.push_str(
        "<div class=\"legend\" id=\"legend\">\n<p>\
<span class=\"sw r-leader\"></span>leader <span class=\"sw r-follower\"></span>follower <span class=\"sw r-candidate\"></span>candidate · \
<span class=\"sw lease\"></span>lease alive (as the cluster sees it) <span class=\"sw suspended\"></span>connection SUSPENDED (ZooKeeper) <span class=\"sw belief\"></span>client believes it holds the lock · \
<span class=\"sw opok\"></span>operation ok <span class=\"sw opfail\"></span>failed <span class=\"sw opinfo\"></span>unknown outcome · \
<span class=\"sw fault\"></span>fault <span class=\"sw violation\"></span>violation <span class=\"sw observation\"></span>dual ownership</p>\n<p class=\"glyphs\">",
    );
    for shape in Shape::ALL {
        let class = match shape {
            Shape::Diamond => "m grant",
            Shape::Dot => "m write accepted",
            Shape::Cross => "m write rejected",
            Shape::Ring => "m expiry",
            Shape::Tick => "m keepalive",
            Shape::Fall => "m keepalive failed",
            Shape::Flash => "m fault",
            Shape::Square => "m event",
        };
        glyph(out, shape, class);
    }
    out.push_str("</p>\n");
    if !timeline.token_note.is_empty() {
        let _ = writeln!(out, "<p class=\"tokens\" id=\"tokens\">{}</p>", escape(&timeline.token_note));
    }
    out.push_str("</div>\n");
}

/// "What happened": the story's lines, with the routine ones (leases granted, checkpoints, the
/// user's events) in the list but hidden until the reader asks for them, and counted.
fn narrative(out: &mut String, timeline: &Timeline, axis: Axis) {
    if timeline.narrative.is_empty() {
        return;
    }
    out.push_str("<section id=\"narrative\">\n<h2>What happened</h2>\n");
    let routine = timeline.narrative.iter().filter(|l| l.routine).count();
    if routine > 0 {
        let _ = writeln!(
            out,
            "<p class=\"fold\"><button type=\"button\" id=\"routine\" data-n=\"{routine}\" aria-pressed=\"false\">show {routine} routine lines (leases granted, checkpoints, other events)</button></p>"
        );
    }
    out.push_str("<ol>\n");
    for line in &timeline.narrative {
        let refs: Vec<String> = line.refs.iter().map(|r| r.to_string()).collect();
        let (class, hidden) = if line.routine { (" routine", " hidden=\"hidden\"") } else { ("", "") };
        let _ = writeln!(
            out,
            "<li class=\"n-{}{class}\"{hidden} data-t=\"{}\" data-e=\"{}\"><time>{}</time> {}</li>",
            line.tone.css(),
            line.at,
            refs.join(" "),
            axis.format(line.at),
            escape(&line.text)
        );
    }
    out.push_str("</ol>\n");
    if timeline.narrative_omitted > 0 {
        let _ =
            writeln!(out, "<p class=\"more\">… and {} more events: see the timeline.</p>", timeline.narrative_omitted);
    }
    out.push_str("</section>\n");
}

fn linearizability(out: &mut String, timeline: &Timeline) {
    let Some(panel) = &timeline.linearizability else {
        return;
    };
    out.push_str("<section id=\"linearizability\">\n<h2>Linearizability counterexample</h2>\n");
    let _ = writeln!(
        out,
        "<p>The longest linearizable prefix has {} operations (numbered #1… on the timeline, in linearization order). After it the model is in state <code>{}</code>, and none of the operations that could go next fits:</p>",
        panel.prefix.len(),
        escape(&panel.state_after_prefix)
    );
    out.push_str("<ul class=\"stuck\">\n");
    for (id, description) in &panel.stuck {
        let _ = writeln!(out, "<li data-op=\"{id}\">operation {id}: {}</li>", escape(description));
    }
    out.push_str("</ul>\n<details><summary>the prefix</summary><ol class=\"prefix\">\n");
    for (id, description) in &panel.prefix {
        let _ = writeln!(out, "<li data-op=\"{id}\">operation {id}: {}</li>", escape(description));
    }
    out.push_str("</ol></details>\n</section>\n");
}

/// One detail object in a line: `12.008 s resource: resource client=c1 token=2 …`. Generic over
/// the object's fields, so new kinds of entries describe themselves.
pub fn describe(detail: &serde_json::Value, axis: Axis) -> String {
    let Some(object) = detail.as_object() else {
        return detail.to_string();
    };
    let mut parts = Vec::new();
    if let Some(t) = object.get("time_ns").and_then(|v| v.as_u64()) {
        parts.push(axis.format(t));
    }
    if let Some(step) = object.get("step").and_then(|v| v.as_u64()) {
        parts.push(format!("step {step}"));
    }
    if let Some(node) = object.get("node").and_then(|v| v.as_str()) {
        parts.push(format!("{node}:"));
    }
    if let Some(kind) = object.get("type").and_then(|v| v.as_str()) {
        parts.push(kind.to_string());
    }
    for (key, value) in object {
        if matches!(key.as_str(), "time_ns" | "node" | "type" | "step") {
            continue;
        }
        parts.push(format!("{key}={}", flat(value)));
    }
    parts.join(" ")
}

fn flat(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(map) => {
            let mut parts = Vec::new();
            if let Some(f) = map.get("f").and_then(|v| v.as_str()) {
                parts.push(f.to_string());
            }
            for (k, v) in map {
                if k != "f" {
                    parts.push(format!("{k}={}", flat(v)));
                }
            }
            format!("({})", parts.join(" "))
        }
        serde_json::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(flat).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// The page's data block: the details for the hover and the clocks for local time.
///
/// Each detail is written as `[time_ns, node, type, rest]` (`node` an index into `nodes`; any of
/// the first three `null` when absent; `rest` the object's other fields): the keys that every
/// entry repeats would otherwise be a third of a large report. `<` is escaped so that no string
/// in the data can close the script element.
fn data_json(timeline: &Timeline) -> String {
    /// `[time_ns, node index, type, other fields]`
    type Detail<'a> = (Option<u64>, Option<usize>, Option<&'a str>, serde_json::Map<String, serde_json::Value>);
    #[derive(serde::Serialize)]
    struct Data<'a> {
        axis: &'static str,
        end: u64,
        /// node → [[true start ns, local ns at start, rate ppm], ...]
        clocks: BTreeMap<&'a str, Vec<(u64, i64, u64)>>,
        nodes: Vec<&'a str>,
        details: Vec<Detail<'a>>,
    }
    let mut nodes: Vec<&str> = Vec::new();
    let mut node_index: BTreeMap<&str, usize> = BTreeMap::new();
    let details = timeline
        .details
        .iter()
        .map(|detail| {
            let Some(object) = detail.as_object() else {
                let mut rest = serde_json::Map::new();
                rest.insert("value".to_string(), detail.clone());
                return (None, None, None, rest);
            };
            let time = object.get("time_ns").and_then(|v| v.as_u64());
            let node = object.get("node").and_then(|v| v.as_str()).map(|name| {
                *node_index.entry(name).or_insert_with(|| {
                    nodes.push(name);
                    nodes.len() - 1
                })
            });
            let kind = object.get("type").and_then(|v| v.as_str());
            let rest = object
                .iter()
                .filter(|(key, value)| match key.as_str() {
                    "time_ns" => time.is_none(),
                    "node" => !value.is_string(),
                    "type" => kind.is_none(),
                    _ => true,
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (time, node, kind, rest)
        })
        .collect();
    let data = Data {
        axis: match timeline.axis() {
            Axis::Nanos => "ns",
            Axis::Steps => "steps",
        },
        end: timeline.end,
        clocks: timeline
            .clocks
            .iter()
            .map(|(node, segments)| {
                let list = segments.iter().map(|s| (s.start_ns, s.local_at_start_ns, s.rate_ppm)).collect();
                (node.as_str(), list)
            })
            .collect(),
        nodes,
        details,
    };
    serde_json::to_string(&data).expect("the data always serializes").replace('<', "\\u003c")
}
