//! Each node's clock as the history's `clock` records describe it: local time as a function of
//! true time, piecewise linear (a rate per segment, jumps between segments). A node has a wall
//! and a monotonic clock ([`WhichClock`]); the services' timers read the monotonic one.
//!
//! A node without records keeps true time. A record at true time `t` says the clock reads
//! `local_ns` at `t` and from then on advances `rate_ppm` millionths of a nanosecond per
//! nanosecond of true time, until the node's next record.

use std::collections::BTreeMap;

use crate::history::{Event, History, WhichClock};

const RATE_ONE_PPM: i128 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    from_ns: u64,
    local_ns: i64,
    rate_ppm: u64,
}

impl Segment {
    fn local_at(&self, true_ns: u64) -> i128 {
        i128::from(self.local_ns)
            + (i128::from(true_ns) - i128::from(self.from_ns)) * i128::from(self.rate_ppm) / RATE_ONE_PPM
    }
}

/// The clocks of every node that has `clock` records.
#[derive(Clone, Debug, Default)]
pub struct Clocks {
    by_node: BTreeMap<String, Vec<Segment>>,
}

impl Clocks {
    /// The monotonic clocks, which every timer of the services reads (lease expiry, session
    /// timeouts, Raft).
    pub fn from_history(history: &History) -> Clocks {
        Clocks::of(history, WhichClock::Monotonic)
    }

    /// The `which` clock of every node (`Both` reads records that describe both clocks only).
    pub fn of(history: &History, which: WhichClock) -> Clocks {
        let mut by_node: BTreeMap<String, Vec<Segment>> = BTreeMap::new();
        for entry in &history.entries {
            if let Event::Clock { local_ns, rate_ppm, clock } = entry.event
                && clock.describes(which)
            {
                let segments = by_node.entry(entry.node.clone()).or_default();
                if segments.is_empty() && entry.time_ns > 0 {
                    // True time until the first record.
                    segments.push(Segment { from_ns: 0, local_ns: 0, rate_ppm: RATE_ONE_PPM as u64 });
                }
                segments.push(Segment { from_ns: entry.time_ns, local_ns, rate_ppm });
            }
        }
        Clocks { by_node }
    }

    /// The segments of `node` from the one holding `true_ns` on (one true-time segment for a node
    /// without records).
    fn segments_from(&self, node: &str, true_ns: u64) -> &[Segment] {
        const TRUE_TIME: &[Segment] = &[Segment { from_ns: 0, local_ns: 0, rate_ppm: RATE_ONE_PPM as u64 }];
        match self.by_node.get(node) {
            None => TRUE_TIME,
            Some(segments) => {
                // The last segment starting at or before `true_ns` (later records at the same time win).
                let index = segments.partition_point(|s| s.from_ns <= true_ns).saturating_sub(1);
                &segments[index..]
            }
        }
    }

    /// `node`'s local time at true time `true_ns`.
    pub fn local_ns(&self, node: &str, true_ns: u64) -> i128 {
        self.segments_from(node, true_ns)[0].local_at(true_ns)
    }

    /// The first true time at or after `from_ns` at which `node`'s clock has advanced by at least
    /// `delta_ns` past its reading at `from_ns`: when a timer of `delta_ns` set on that node at
    /// `from_ns` fires. A clock that jumps back delays it; one that jumps forward brings it on.
    pub fn timer_fires_ns(&self, node: &str, from_ns: u64, delta_ns: u64) -> u64 {
        self.reaches_ns(node, from_ns, self.local_ns(node, from_ns) + i128::from(delta_ns))
    }

    /// The latest [`Self::timer_fires_ns`] for a timer set at an unknown moment of
    /// `[from_ns, to_ns]`. With a clock that only runs forward that is a timer set at `to_ns`;
    /// one set just before a backward jump inside the window fires later.
    pub fn latest_timer_fires_ns(&self, node: &str, from_ns: u64, to_ns: u64, delta_ns: u64) -> u64 {
        let mut latest = self.timer_fires_ns(node, to_ns, delta_ns);
        if let Some(segments) = self.by_node.get(node) {
            for pair in segments.windows(2) {
                let (before, after) = (pair[0], pair[1]);
                if after.from_ns > from_ns && after.from_ns <= to_ns {
                    let target = before.local_at(after.from_ns) + i128::from(delta_ns);
                    latest = latest.max(self.reaches_ns(node, after.from_ns, target));
                }
            }
        }
        latest
    }

    /// The first true time at or after `from_ns` at which `node`'s clock reads at least `target`.
    fn reaches_ns(&self, node: &str, from_ns: u64, target: i128) -> u64 {
        let segments = self.segments_from(node, from_ns);
        for (i, segment) in segments.iter().enumerate() {
            let start_ns = segment.from_ns.max(from_ns);
            let local = segment.local_at(start_ns);
            if local >= target {
                return start_ns;
            }
            // Rates are positive (0.1x to 10x); a zero rate never gets there within this segment.
            let rate = i128::from(segment.rate_ppm.max(1));
            let need_ns = ((target - local) * RATE_ONE_PPM + rate - 1) / rate;
            let at_ns = i128::from(start_ns) + need_ns;
            match segments.get(i + 1) {
                Some(next) if at_ns >= i128::from(next.from_ns) => continue,
                _ => return u64::try_from(at_ns).unwrap_or(u64::MAX),
            }
        }
        unreachable!("the last segment never ends")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Entry, NodeInfo, NodeRole};

    fn clocks(records: &[(u64, i64, u64)]) -> Clocks {
        let mut history = History::new("t", 1);
        history.nodes.push(NodeInfo { name: "s1".into(), role: NodeRole::Server });
        for &(time_ns, local_ns, rate_ppm) in records {
            history.entries.push(Entry {
                time_ns,
                node: "s1".into(),
                event: Event::Clock { local_ns, rate_ppm, clock: Default::default() },
            });
        }
        Clocks::from_history(&history)
    }

    #[test]
    fn a_node_without_records_keeps_true_time() {
        let c = clocks(&[]);
        assert_eq!(c.local_ns("s1", 500), 500);
        assert_eq!(c.timer_fires_ns("s1", 100, 1000), 1100);
    }

    #[test]
    fn a_slow_clock_makes_timers_late_and_a_fast_one_early() {
        let slow = clocks(&[(0, 0, 500_000)]);
        assert_eq!(slow.timer_fires_ns("s1", 1000, 1000), 3000);
        let fast = clocks(&[(0, 0, 2_000_000)]);
        assert_eq!(fast.timer_fires_ns("s1", 1000, 1000), 1500);
    }

    #[test]
    fn a_rate_change_mid_timer_is_followed() {
        // True speed until 1000, then half speed: 500 local ns by 1000, the other 500 take 1000.
        let c = clocks(&[(1000, 1000, 500_000)]);
        assert_eq!(c.timer_fires_ns("s1", 500, 1000), 2000);
    }

    #[test]
    fn jumps_move_the_firing_time() {
        // At 1000 the clock jumps back by 400, at 3000 forward by 10000.
        let c = clocks(&[(0, 0, 1_000_000), (1000, 600, 1_000_000), (3000, 12_600, 1_000_000)]);
        assert_eq!(c.timer_fires_ns("s1", 0, 1000), 1400, "the back jump delays by 400");
        assert_eq!(c.timer_fires_ns("s1", 2000, 5000), 3000, "the forward jump fires it at once");
    }

    #[test]
    fn a_timer_set_just_before_a_back_jump_fires_latest() {
        // The clock jumps back by 400 at 1000. Set at 1100 (local 700), a timer of 1000 fires when
        // the clock reads 1700: at true 2100. Set just before the jump (local 1000): at 2400.
        let c = clocks(&[(0, 0, 1_000_000), (1000, 600, 1_000_000)]);
        assert_eq!(c.timer_fires_ns("s1", 1100, 1000), 2100);
        assert_eq!(c.latest_timer_fires_ns("s1", 900, 1100, 1000), 2400, "set at 1000, just before the jump");
        assert_eq!(c.latest_timer_fires_ns("s1", 1050, 1100, 1000), 2100, "no jump in the window");
    }

    #[test]
    fn timers_read_the_monotonic_records_and_ignore_the_wall_jumps() {
        // A node whose wall clock jumped +10000 at 1000: its monotonic clock kept true time.
        let mut history = History::new("t", 1);
        history.nodes.push(NodeInfo { name: "s1".into(), role: NodeRole::Server });
        let records = [(0, 0, WhichClock::Both), (1000, 11_000, WhichClock::Wall), (1000, 1000, WhichClock::Monotonic)];
        for (time_ns, local_ns, clock) in records {
            let event = Event::Clock { local_ns, rate_ppm: 1_000_000, clock };
            history.entries.push(Entry { time_ns, node: "s1".into(), event });
        }
        let monotonic = Clocks::from_history(&history);
        assert_eq!(monotonic.timer_fires_ns("s1", 500, 2000), 2500, "the jump does not move a timer");
        let wall = Clocks::of(&history, WhichClock::Wall);
        assert_eq!(wall.local_ns("s1", 2000), 12_000);
        assert_eq!(wall.timer_fires_ns("s1", 500, 2000), 1000, "a wall timer fires at the jump");
    }
}
