//! The timeline as inline SVG.
//!
//! Two coordinate systems share the plot: things that last (spans, shades, highlight bands) sit
//! in `#zs`, which the page's script scales horizontally to zoom; things that happen at an
//! instant (marks, labels) sit in `#zp` as elements of class `pt` placed by their `x`, which the
//! script moves without scaling, so a diamond stays a diamond at any zoom. At zoom 1 the SVG is
//! complete without the script (printing, no JS); labels that have no room at zoom 1 travel as a
//! `data-l` attribute and the script draws them once zooming makes room.
//!
//! Every drawn thing that stands for history entries carries `data-e="i j"`: the indices of
//! those entries in the page's details table, for the hover and for tests.

use std::fmt::Write as _;

use super::layout::{self, LABEL_WIDTH, Layout, WIDTH};
use crate::timeline::{Axis, Mark, Packing, Span, Timeline, Tone};
use crate::xml::escape;

/// Rough width of a label character in user units (8 px sans-serif), to decide what fits.
pub const CHAR_WIDTH: f64 = 4.6;

/// A number with at most 2 decimals and no trailing zeros.
pub fn num(value: f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".to_string() } else { text.to_string() }
}

fn refs_attr(refs: &[usize]) -> String {
    if refs.is_empty() {
        return String::new();
    }
    let list: Vec<String> = refs.iter().map(|r| r.to_string()).collect();
    format!(" data-e=\"{}\"", list.join(" "))
}

pub fn draw(timeline: &Timeline, layout: &Layout) -> String {
    let plot = layout::plot_width();
    let height = layout.height;
    let mut out = String::with_capacity(64 * 1024);
    let _ = writeln!(
        out,
        "<svg id=\"tl\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" data-pw=\"{}\" data-lx=\"{}\" data-end=\"{}\" data-axis=\"{}\" role=\"img\" aria-label=\"timeline\">",
        num(WIDTH),
        num(height),
        num(WIDTH),
        num(height),
        num(plot),
        num(LABEL_WIDTH),
        layout.end,
        match timeline.axis() {
            Axis::Nanos => "ns",
            Axis::Steps => "steps",
        }
    );
    defs(&mut out, plot, height);
    lane_backgrounds(&mut out, timeline, layout);
    let _ = writeln!(out, "<g transform=\"translate({},0)\"><g clip-path=\"url(#clip)\">", num(LABEL_WIDTH));
    axis(&mut out, timeline.axis(), layout, height);
    out.push_str("<g id=\"zs\">\n");
    shades_and_highlights(&mut out, timeline, layout);
    spans(&mut out, timeline, layout);
    out.push_str("</g>\n<g id=\"zp\">\n");
    marks_and_labels(&mut out, timeline, layout);
    highlight_labels(&mut out, timeline, layout);
    out.push_str("</g>\n");
    let _ = writeln!(out, "<line id=\"cursor\" x1=\"-10\" x2=\"-10\" y1=\"0\" y2=\"{}\"/>", num(height));
    out.push_str("</g></g>\n</svg>\n");
    out
}

fn defs(out: &mut String, plot: f64, height: f64) {
    let _ = writeln!(
        out,
        "<defs><clipPath id=\"clip\"><rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\"/></clipPath>\
<path id=\"dia\" d=\"M0,-5L4,0L0,5L-4,0Z\"/><circle id=\"dot\" r=\"3.5\"/>\
<path id=\"x\" d=\"M-3.5,-3.5L3.5,3.5M3.5,-3.5L-3.5,3.5\"/><path id=\"tick\" d=\"M0,-4V4\"/>\
<circle id=\"ring\" r=\"3.5\"/><path id=\"fall\" d=\"M-4,-3L4,-3L0,4Z\"/><path id=\"flash\" d=\"M0,-5L4.5,3.5L-4.5,3.5Z\"/>\
<rect id=\"sq\" x=\"-3.5\" y=\"-3.5\" width=\"7\" height=\"7\"/>\
<pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"#e0a800\" fill-opacity=\"0.35\"/></pattern>\
</defs>",
        num(plot + 2.0),
        num(height)
    );
}

fn lane_backgrounds(out: &mut String, timeline: &Timeline, layout: &Layout) {
    out.push_str("<g id=\"lanes\">\n");
    for (lane, laid) in timeline.lanes.iter().zip(&layout.lanes) {
        let _ = writeln!(
            out,
            "<rect class=\"lane l-{}\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            lane.kind.css(),
            num(laid.y),
            num(WIDTH),
            num(laid.height)
        );
        let _ = writeln!(out, "<text class=\"ln\" x=\"6\" y=\"{}\">{}</text>", num(laid.y + 14.0), escape(&lane.name));
        if !lane.note.is_empty() {
            let _ = writeln!(
                out,
                "<text class=\"lnote\" x=\"6\" y=\"{}\">{}</text>",
                num(laid.y + 25.0),
                escape(&lane.note)
            );
        }
        for (row, boxed) in lane.rows.iter().zip(&laid.rows) {
            let _ = writeln!(
                out,
                "<text class=\"rl\" x=\"{}\" y=\"{}\">{}</text>",
                num(LABEL_WIDTH - 6.0),
                num(boxed.y + boxed.height / 2.0 + 3.0),
                escape(&row.label)
            );
        }
    }
    out.push_str("</g>\n");
}

/// The nicest tick step (1, 2 or 5 × 10^k) that gives at most about ten ticks over `range`.
pub fn tick_step(range: f64, axis: Axis) -> f64 {
    let raw = (range / 10.0).max(1.0);
    let mut step = 10f64.powf(raw.log10().floor());
    for factor in [1.0, 2.0, 5.0, 10.0] {
        if step * factor >= raw {
            step *= factor;
            break;
        }
    }
    match axis {
        Axis::Steps => step.max(1.0).round(),
        Axis::Nanos => step,
    }
}

/// A tick label: seconds with as many decimals as the step needs, or a step number.
pub fn tick_label(at: f64, step: f64, axis: Axis) -> String {
    match axis {
        Axis::Steps => format!("{}", at.round()),
        Axis::Nanos => {
            let decimals = if step >= 1e9 { 0 } else { (9.0 - step.log10().floor()).clamp(0.0, 9.0) as usize };
            format!("{:.*} s", decimals, at / 1e9)
        }
    }
}

fn axis(out: &mut String, axis: Axis, layout: &Layout, height: f64) {
    out.push_str("<g id=\"axis\">\n");
    let end = layout.end as f64;
    let step = tick_step(end, axis);
    let mut at = 0.0;
    while at <= end {
        let x = at / end * layout::plot_width();
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/><text class=\"tk\" x=\"{x}\" dx=\"3\" y=\"14\">{}</text>",
            num(layout::AXIS_HEIGHT - 4.0),
            num(height),
            tick_label(at, step, axis),
            x = num(x)
        );
        at += step;
    }
    out.push_str("</g>\n");
}

fn span_rect(out: &mut String, span: &Span, x0: f64, x1: f64, y: f64, h: f64, lazy_label: bool) {
    let width = (x1 - x0).max(0.4);
    let mut class = span.class.clone();
    if span.open {
        class.push_str(" open");
    }
    let style = span.color.as_ref().map(|c| format!(" style=\"fill:{c}\"")).unwrap_or_default();
    let label = if lazy_label { format!(" data-l=\"{}\"", escape(&span.label)) } else { String::new() };
    let _ = writeln!(
        out,
        "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{style}{}{label}/>",
        escape(&class),
        num(x0),
        num(y),
        num(width),
        num(h),
        refs_attr(&span.refs)
    );
}

/// Whether a span's label fits on it at zoom 1.
fn label_fits(label: &str, width: f64) -> bool {
    width >= label.chars().count() as f64 * CHAR_WIDTH + 4.0
}

fn shades_and_highlights(out: &mut String, timeline: &Timeline, layout: &Layout) {
    for (lane, laid) in timeline.lanes.iter().zip(&layout.lanes) {
        for shade in &lane.shades {
            let (x0, x1) = (layout.x(shade.start), layout.x(shade.end));
            span_rect(out, shade, x0, x1, laid.y, laid.height, false);
        }
    }
    for (index, highlight) in timeline.highlights.iter().enumerate() {
        let Some((top, bottom)) = layout.extent(timeline, &highlight.lanes) else {
            continue;
        };
        let tone = match highlight.tone {
            Tone::Violation => "violation",
            Tone::Observation => "observation",
        };
        let x0 = layout.x(highlight.start);
        let refs = refs_attr(&highlight.refs);
        if let Some(end) = highlight.end.filter(|&e| e > highlight.start) {
            let _ = writeln!(
                out,
                "<rect class=\"band {tone}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{refs}/>",
                num(x0),
                num(top),
                num((layout.x(end) - x0).max(0.4)),
                num(bottom - top)
            );
        }
        let label_top = layout.strip.iter().find(|l| l.highlight == index).map(|l| l.y - 8.0);
        let _ = writeln!(
            out,
            "<line class=\"vline {tone}\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"{refs}/>",
            num(label_top.unwrap_or(top)),
            num(bottom),
            x = num(x0)
        );
    }
}

/// Span rectangles (in the scaled group); their labels are drawn with the marks.
fn spans(out: &mut String, timeline: &Timeline, layout: &Layout) {
    for (lane, laid) in timeline.lanes.iter().zip(&layout.lanes) {
        for (row, boxed) in lane.rows.iter().zip(&laid.rows) {
            for (span, line) in row.spans.iter().zip(&boxed.lines) {
                let (y, h) = span_box(row.packing, boxed.y, boxed.has_marks, *line);
                let (x0, x1) = (layout.x(span.start), layout.x(span.end));
                // A label that does not fit at zoom 1 rides along as `data-l`; the script draws it
                // when zooming makes room (one attribute costs far less than a hidden element).
                let lazy = !span.label.is_empty() && !label_fits(&span.label, x1 - x0);
                span_rect(out, span, x0, x1, y, h, lazy);
            }
        }
    }
}

/// The top and height of a span's rectangle in its row.
fn span_box(packing: Packing, row_y: f64, has_marks: bool, line: usize) -> (f64, f64) {
    match (packing, has_marks) {
        (Packing::Single, true) => (row_y + 10.0, 10.0),
        (Packing::Single, false) => (row_y + 3.0, 10.0),
        (Packing::Stack(_), true) => (row_y + 10.0 + line as f64 * layout::STACK_LINE, 9.0),
        (Packing::Stack(_), false) => (row_y + 2.0 + line as f64 * layout::STACK_LINE, 9.0),
    }
}

/// Labels of spans that fit at zoom 1, and the marks with their labels. A mark is a `<use>` of
/// its shape's symbol at (x, y); its label is a `<text class="pt ml">` above it when there is
/// room at zoom 1, or else `data-l` on the mark for the script.
fn marks_and_labels(out: &mut String, timeline: &Timeline, layout: &Layout) {
    for (lane, laid) in timeline.lanes.iter().zip(&layout.lanes) {
        for (row, boxed) in lane.rows.iter().zip(&laid.rows) {
            for (span, line) in row.spans.iter().zip(&boxed.lines) {
                let x0 = layout.x(span.start);
                let width = layout.x(span.end) - x0;
                if span.label.is_empty() || !label_fits(&span.label, width) {
                    continue;
                }
                let (y, h) = span_box(row.packing, boxed.y, boxed.has_marks, *line);
                // `x` is the span's start (moved by the zoom), `dx` the fixed inset.
                let _ = writeln!(
                    out,
                    "<text class=\"pt sl\" x=\"{}\" dx=\"2\" y=\"{}\" data-w=\"{}\">{}</text>",
                    num(x0),
                    num(y + h - 2.0),
                    num(width),
                    escape(&span.label)
                );
            }
            let mark_y = boxed.y + 15.0;
            let mut last_label_end = f64::NEG_INFINITY;
            for mark in &row.marks {
                let x = layout.x(mark.at);
                let half = mark.label.chars().count() as f64 * CHAR_WIDTH / 2.0;
                // At zoom 1, a label is shown only where it does not run into the previous one.
                let shown = !mark.label.is_empty() && x - half - 2.0 >= last_label_end;
                if shown {
                    last_label_end = x + half;
                }
                draw_mark(out, mark, x, mark_y, shown);
            }
        }
    }
}

fn draw_mark(out: &mut String, mark: &Mark, x: f64, y: f64, label_shown: bool) {
    let lazy = if !label_shown && !mark.label.is_empty() {
        format!(" data-l=\"{}\"", escape(&mark.label))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<use class=\"pt m {}\" href=\"#{}\" x=\"{}\" y=\"{}\"{}{lazy}/>",
        escape(&mark.class),
        mark.shape.symbol(),
        num(x),
        num(y),
        refs_attr(&mark.refs)
    );
    if label_shown {
        // A label near either end of the plot is moved inwards (`dx`) rather than cut by the
        // clip ("romoted" for "promoted" at 0 s); the script does the same at every zoom.
        let half = mark.label.chars().count() as f64 * CHAR_WIDTH / 2.0 + 1.0;
        let plot = layout::plot_width();
        let inside = if plot > 2.0 * half { x.clamp(half, plot - half) } else { x };
        let dx = if (inside - x).abs() > 0.005 { format!(" dx=\"{}\"", num(inside - x)) } else { String::new() };
        let _ = writeln!(
            out,
            "<text class=\"pt ml{}\" x=\"{}\"{dx} y=\"{}\">{}</text>",
            if is_bad(&mark.class) { " bad" } else { "" },
            num(x),
            num(y - 7.0),
            escape(&mark.label)
        );
    }
}

/// Labels of marks that went wrong (a stale write accepted, a write rejected) are drawn in red.
pub fn is_bad(class: &str) -> bool {
    class.split_whitespace().any(|c| c == "stale" || c == "rejected")
}

/// Violation labels in the strip under the axis, each with a line down to its band.
fn highlight_labels(out: &mut String, timeline: &Timeline, layout: &Layout) {
    for label in &layout.strip {
        let highlight = &timeline.highlights[label.highlight];
        let _ = writeln!(
            out,
            "<text class=\"pt vl\" x=\"{}\" dx=\"{}\" y=\"{}\" data-n=\"{}\"{}>✗ {}</text>",
            num(label.x),
            num(3.0 - label.shift),
            num(label.y),
            label.count,
            refs_attr(&highlight.refs),
            escape(&label.text(&highlight.property))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_stable() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(0.1), "0.1");
        assert_eq!(num(-0.001), "0");
    }

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(tick_step(20e9, Axis::Nanos), 2e9);
        assert_eq!(tick_label(4e9, 2e9, Axis::Nanos), "4 s");
        assert_eq!(tick_step(0.05e9, Axis::Nanos), 5e6);
        assert_eq!(tick_label(0.015e9, 5e6, Axis::Nanos), "0.015 s");
        assert_eq!(tick_step(7.0, Axis::Steps), 1.0);
    }
}
