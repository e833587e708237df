//! What the report's plots under the timeline share: their frame and their true-time axis, so
//! that the latency plot and the queue plot line up with each other, point for point.

use std::fmt::Write as _;

use crate::timeline::fmt_duration;

pub(super) const WIDTH: u64 = 960;
pub(super) const LEFT: u64 = 60;
pub(super) const RIGHT: u64 = 10;
pub(super) const TOP: u64 = 8;
pub(super) const BOTTOM: u64 = 22;

/// The x of true time `ns` on a run that ends at `end_ns` (> 0): 0 at [`LEFT`], the end at
/// `WIDTH - RIGHT`.
pub(super) fn x(ns: u64, end_ns: u64) -> u64 {
    let plot_w = WIDTH - LEFT - RIGHT;
    LEFT + ((ns.min(end_ns) as u128 * plot_w as u128) / end_ns as u128) as u64
}

/// Five ticks of true time along the bottom of a plot `height` tall.
pub(super) fn time_axis(out: &mut String, end_ns: u64, height: u64) {
    for tick in 0..=4 {
        let ns = end_ns / 4 * tick;
        let _ = writeln!(
            out,
            "<text class=\"tk\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x(ns, end_ns),
            height - 6,
            fmt_duration(ns)
        );
    }
}
