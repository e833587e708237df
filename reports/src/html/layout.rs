//! Where everything goes: the vertical position of each lane and row, the line of each span in
//! a stacked row, and the horizontal scale. Pure arithmetic on a [`Timeline`]; svg.rs draws.

use crate::timeline::{Lane, Packing, Row, Timeline, Tone};

/// Width of the drawing in SVG user units (the page scales it to the window).
pub const WIDTH: f64 = 1200.0;
/// Left column with lane names and row labels.
pub const LABEL_WIDTH: f64 = 128.0;
/// Right margin.
pub const MARGIN_RIGHT: f64 = 12.0;
/// Height of the time axis at the top.
pub const AXIS_HEIGHT: f64 = 22.0;
/// Padding above and below the rows of a lane.
pub const LANE_PAD: f64 = 4.0;
/// Smallest lane height (room for the name and the note).
pub const LANE_MIN: f64 = 30.0;
/// A row with marks: room for a label above the mark.
pub const ROW_MARKS: f64 = 24.0;
/// A row with one line of spans.
pub const ROW_SINGLE: f64 = 16.0;
/// One line of a stacked row.
pub const STACK_LINE: f64 = 11.0;

pub fn plot_width() -> f64 {
    WIDTH - LABEL_WIDTH - MARGIN_RIGHT
}

#[derive(Clone, Debug)]
pub struct RowBox {
    pub y: f64,
    pub height: f64,
    /// For each span of the row (same order), the line it is drawn on.
    pub lines: Vec<usize>,
    pub has_marks: bool,
}

#[derive(Clone, Debug)]
pub struct LaneBox {
    pub y: f64,
    pub height: f64,
    pub rows: Vec<RowBox>,
}

#[derive(Clone, Debug)]
pub struct Layout {
    /// Below the axis: one line per stack of violation labels (empty without violations).
    pub strip: Vec<StripLabel>,
    pub lanes: Vec<LaneBox>,
    pub height: f64,
    /// Axis units per plot unit at zoom 1, as a divisor: x = t / end × plot width.
    pub end: u64,
}

/// A violation's label in the strip under the axis.
#[derive(Clone, Debug)]
pub struct StripLabel {
    /// Index in `Timeline::highlights` (the first violation the label stands for).
    pub highlight: usize,
    pub x: f64,
    /// How far left of its line the label starts, in plot units, so that it ends inside the plot.
    pub shift: f64,
    /// Baseline of the label.
    pub y: f64,
    /// Width reserved on its line, in plot units.
    pub width: f64,
    /// How many violations the label stands for (1: only its own).
    pub count: usize,
    /// Some of them are of other properties (the strip was full).
    pub mixed: bool,
}

impl StripLabel {
    /// `fencing`, `fencing ×12`, or `fencing +3` when the others are of other properties.
    pub fn text(&self, property: &str) -> String {
        match (self.count, self.mixed) {
            (1, _) => property.to_string(),
            (n, false) => format!("{property} ×{n}"),
            (n, true) => format!("{property} +{}", n - 1),
        }
    }
}

/// Height of one line of violation labels.
pub const STRIP_LINE: f64 = 11.0;
/// Most lines of violation labels.
pub const STRIP_LINES_MAX: usize = 3;

impl Layout {
    pub fn new(timeline: &Timeline) -> Self {
        let end = timeline.end.max(1);
        let x = |at: u64| at.min(end) as f64 / end as f64 * plot_width();
        // Violation labels go on the first line where they do not run into another one, on at
        // most STRIP_LINES_MAX lines. A violation of the property whose label is still running
        // there, or one with no line left, joins the nearest label before it, which counts it
        // (`✗ fencing ×12`): a long run's repeats make one label, not a wall.
        let mut strip: Vec<StripLabel> = Vec::new();
        let mut line_ends: Vec<f64> = Vec::new();
        let mut order: Vec<usize> =
            (0..timeline.highlights.len()).filter(|&i| timeline.highlights[i].tone == Tone::Violation).collect();
        order.sort_by_key(|&i| timeline.highlights[i].start);
        for index in order {
            let highlight = &timeline.highlights[index];
            let left = x(highlight.start);
            // Room for the property and a count of up to three digits.
            let width = (highlight.property.chars().count() + 7) as f64 * 5.2 + 6.0;
            let shift = (left + width - plot_width()).max(0.0).min(left);
            let running = strip.iter_mut().rev().find(|l| {
                timeline.highlights[l.highlight].property == highlight.property && l.x - l.shift + l.width > left
            });
            if let Some(label) = running {
                label.count += 1;
                continue;
            }
            let line = match line_ends.iter().position(|&end| end <= left - shift) {
                Some(line) => line,
                None if line_ends.len() < STRIP_LINES_MAX => {
                    line_ends.push(f64::NEG_INFINITY);
                    line_ends.len() - 1
                }
                None => {
                    let nearest = strip.iter_mut().rev().find(|l| l.x <= left).expect("a full strip has labels");
                    nearest.count += 1;
                    nearest.mixed = true;
                    continue;
                }
            };
            line_ends[line] = left - shift + width;
            strip.push(StripLabel {
                highlight: index,
                x: left,
                shift,
                y: AXIS_HEIGHT + 9.0 + line as f64 * STRIP_LINE,
                width,
                count: 1,
                mixed: false,
            });
        }
        let mut y = AXIS_HEIGHT + line_ends.len() as f64 * STRIP_LINE;
        let mut lanes = Vec::with_capacity(timeline.lanes.len());
        for lane in &timeline.lanes {
            let laid = lay_lane(lane, y);
            y += laid.height;
            lanes.push(laid);
        }
        Layout { strip, lanes, height: y + 4.0, end }
    }

    /// The x of a position on the axis, in plot units at zoom 1.
    pub fn x(&self, at: u64) -> f64 {
        at.min(self.end) as f64 / self.end as f64 * plot_width()
    }

    /// Vertical extent of the named lanes (all lanes when `names` is empty).
    pub fn extent(&self, timeline: &Timeline, names: &[String]) -> Option<(f64, f64)> {
        let mut range: Option<(f64, f64)> = None;
        for (lane, laid) in timeline.lanes.iter().zip(&self.lanes) {
            if !names.is_empty() && !names.contains(&lane.name) {
                continue;
            }
            let (top, bottom) = (laid.y, laid.y + laid.height);
            range = Some(match range {
                None => (top, bottom),
                Some((a, b)) => (a.min(top), b.max(bottom)),
            });
        }
        range
    }
}

fn lay_lane(lane: &Lane, top: f64) -> LaneBox {
    let mut y = top + LANE_PAD;
    let mut rows = Vec::with_capacity(lane.rows.len());
    for row in &lane.rows {
        let laid = lay_row(row, y);
        y += laid.height;
        rows.push(laid);
    }
    let height = (y + LANE_PAD - top).max(LANE_MIN);
    LaneBox { y: top, height, rows }
}

fn lay_row(row: &Row, y: f64) -> RowBox {
    let has_marks = !row.marks.is_empty();
    let (lines, used) = match row.packing {
        Packing::Single => (vec![0; row.spans.len()], 1),
        Packing::Stack(max) => pack(row, max.max(1)),
    };
    let height = if has_marks {
        ROW_MARKS.max(used as f64 * STACK_LINE + 4.0)
    } else if matches!(row.packing, Packing::Single) {
        ROW_SINGLE
    } else {
        used as f64 * STACK_LINE + 3.0
    };
    RowBox { y, height, lines, has_marks }
}

/// Greedy first fit in start order: a span goes on the first line free at its start; when all
/// `max` lines are busy it goes on the line that frees up first.
fn pack(row: &Row, max: usize) -> (Vec<usize>, usize) {
    let mut ends: Vec<u64> = Vec::new();
    let mut lines = Vec::with_capacity(row.spans.len());
    for span in &row.spans {
        let line = match ends.iter().position(|&end| end <= span.start) {
            Some(line) => line,
            None if ends.len() < max => {
                ends.push(0);
                ends.len() - 1
            }
            None => {
                let (line, _) = ends.iter().enumerate().min_by_key(|(i, end)| (**end, *i)).expect("max >= 1 lines");
                line
            }
        };
        ends[line] = ends[line].max(span.end.max(span.start + 1));
        lines.push(line);
    }
    let used = ends.len().max(1);
    (lines, used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Span;

    fn row(spans: &[(u64, u64)], packing: Packing) -> Row {
        Row {
            label: "ops".into(),
            packing,
            spans: spans.iter().map(|&(a, b)| Span::new(a, b, "op", "")).collect(),
            marks: vec![],
        }
    }

    #[test]
    fn overlapping_spans_stack_on_new_lines_up_to_the_limit() {
        let row = row(&[(0, 10), (5, 15), (6, 8), (10, 20), (16, 30)], Packing::Stack(2));
        let (lines, used) = pack(&row, 2);
        assert_eq!(used, 2);
        // (6, 8) finds both lines busy and shares the one that frees first (line 0 at 10).
        assert_eq!(lines, vec![0, 1, 0, 0, 1]);
    }
}
