//! The report's queue plot: how many pieces of work waited for or ran on each node's CPU, per
//! 100 ms window (the history's `queues`), on the timeline's true time axis, one line per node.
//! A flood shows as the leader's line standing up the moment a release wakes every waiter,
//! beside the latency plot whose requests waited in it. Drawn only for a run with a time model.

use std::fmt::Write as _;

use coordsim_checker::history::QueueSeries;

use super::plot::{self, BOTTOM, LEFT, RIGHT, TOP, WIDTH};
use crate::timeline::{color_for, fmt_duration};
use crate::xml::escape;

const HEIGHT: u64 = 120;

/// The plot's section, or nothing when no node queued anything.
pub fn section(out: &mut String, queues: &[QueueSeries], end_ns: u64) {
    let deepest = queues.iter().flat_map(|q| q.deepest.iter().map(|[_, depth]| *depth)).max().unwrap_or(0);
    if deepest == 0 || end_ns == 0 {
        return;
    }
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |ms: u64| plot::x(ms.saturating_mul(1_000_000), end_ns);
    let y = |depth: u64| TOP as f64 + (1.0 - depth as f64 / deepest as f64) * plot_h as f64;

    out.push_str("<section id=\"queues\">\n<h2>Queues</h2>\n");
    let _ = writeln!(
        out,
        "<svg class=\"queues\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"work queued on each node's CPU over the run\">"
    );
    for depth in [0, deepest / 2, deepest] {
        let at = y(depth);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{at:.1}\" y2=\"{at:.1}\"/><text class=\"tk\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{depth}</text>",
            WIDTH - RIGHT,
            LEFT - 4,
            at + 3.0,
        );
    }
    plot::time_axis(out, end_ns, HEIGHT);
    for series in queues.iter().filter(|q| !q.deepest.is_empty()) {
        // A step line: each window flat at its deepest, dropping to 0 across idle windows.
        let mut points = Vec::new();
        let mut last_end = None;
        for [start, depth] in &series.deepest {
            if last_end != Some(*start) {
                if let Some(end) = last_end {
                    points.push((x(end), y(0)));
                }
                points.push((x(*start), y(0)));
            }
            points.push((x(*start), y(*depth)));
            points.push((x(start + series.window_ms), y(*depth)));
            last_end = Some(start + series.window_ms);
        }
        if let Some(end) = last_end {
            points.push((x(end), y(0)));
        }
        let path: Vec<String> = points.iter().map(|(px, py)| format!("{px},{py:.1}")).collect();
        let _ = writeln!(
            out,
            "<polyline data-node=\"{}\" stroke=\"{}\" points=\"{}\"/>",
            escape(&series.node),
            color_for(&series.node),
            path.join(" ")
        );
    }
    out.push_str("</svg>\n<p class=\"legend\">");
    for series in queues {
        let top = series.deepest.iter().max_by_key(|[start, depth]| (*depth, std::cmp::Reverse(*start)));
        let figure = match top {
            Some([at, depth]) => format!("deepest {depth} at {}", fmt_duration(at.saturating_mul(1_000_000))),
            None => "nothing queued".to_string(),
        };
        let _ = write!(
            out,
            "<span class=\"kind\"><span class=\"sw\" style=\"background:{}\"></span>{}: {figure}</span> ",
            color_for(&series.node),
            escape(&series.node)
        );
    }
    let window = queues.first().map_or(100, |q| q.window_ms);
    let _ = writeln!(
        out,
        "</p>\n<p class=\"legend\">Pieces of work (client requests, Raft messages, applies) waiting for or on each node's CPU: the most at once in each {window} ms window, true time across.</p>\n</section>"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_is_a_step_line_and_the_legend_names_its_deepest_window() {
        let queues = vec![
            QueueSeries { node: "s1".into(), window_ms: 100, deepest: vec![[0, 2], [100, 40], [300, 1]] },
            QueueSeries { node: "s2".into(), window_ms: 100, deepest: vec![] },
        ];
        let mut out = String::new();
        section(&mut out, &queues, 1_000_000_000);
        let s1 = out.split("data-node=\"s1\"").nth(1).unwrap().split("points=\"").nth(1).unwrap();
        let s1 = s1.split('"').next().unwrap();
        // Window 0 at 2, window 100 at 40, back to 0 over idle window 200, window 300 at 1.
        assert_eq!(s1.split(' ').count(), 10, "{s1}");
        assert!(!out.contains("data-node=\"s2\""), "an idle node draws no line: {out}");
        assert!(out.contains("s1: deepest 40 at 100 ms"), "{out}");
        assert!(out.contains("s2: nothing queued"), "{out}");
        assert!(out.contains(">40</text>") && out.contains(">20</text>"), "the axis goes to the deepest: {out}");
    }

    #[test]
    fn a_run_without_queues_has_no_plot() {
        let mut out = String::new();
        section(&mut out, &[], 1_000);
        section(&mut out, &[QueueSeries { node: "s1".into(), window_ms: 100, deepest: vec![] }], 1_000);
        assert!(out.is_empty());
    }
}
