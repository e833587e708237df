//! A node's clock over the whole run, as a pure function of true time.
//!
//! The schedule is piecewise linear: in each segment local time advances at a fixed rate from a
//! fixed value; a jump starts a new segment at another value (forward or backward), a rate change
//! starts one at the same value. Every clock change of a run is known before the run starts (the
//! fault plan is drawn from the seed up front), so both directions — local time at a true time,
//! and the first true time at which local time reaches a deadline — are exact computations, with
//! no timers to re-arm when a clock changes.
//!
//! Rates are integers in parts per million (1_000_000 = true speed), so the arithmetic is exact
//! and identical on every machine.

/// Rate of a clock that runs at true speed, in parts per million.
pub const RATE_ONE_PPM: u64 = 1_000_000;
/// Slowest and fastest rates a scenario may ask for (0.1× and 10×).
pub const RATE_MIN_PPM: u64 = 100_000;
pub const RATE_MAX_PPM: u64 = 10_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    /// True time at which the segment starts, ns since the run started.
    start_ns: u64,
    /// Local time at `start_ns`, ns (negative with a negative offset or a backward jump).
    local_at_start_ns: i64,
    rate_ppm: u64,
}

impl Segment {
    fn local_at(&self, true_ns: u64) -> i64 {
        debug_assert!(true_ns >= self.start_ns);
        let elapsed = (true_ns - self.start_ns) as i128;
        let advanced = elapsed * self.rate_ppm as i128 / RATE_ONE_PPM as i128;
        (self.local_at_start_ns as i128 + advanced).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// The first true time (≥ the segment start) at which local time reaches `target`.
    fn true_when(&self, target_ns: i64) -> u64 {
        if target_ns <= self.local_at_start_ns {
            return self.start_ns;
        }
        let needed = (target_ns as i128 - self.local_at_start_ns as i128) * RATE_ONE_PPM as i128;
        let rate = self.rate_ppm as i128;
        let elapsed = (needed + rate - 1) / rate; // ceiling: never wake before the deadline
        (self.start_ns as i128 + elapsed).min(u64::MAX as i128) as u64
    }
}

/// A change to a clock at a true time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockChange {
    /// Local time moves by `by_ns` at once (negative: backward).
    Jump { at_ns: u64, by_ns: i64 },
    /// From `at_ns`, local time advances at `rate_ppm`.
    Rate { at_ns: u64, rate_ppm: u64 },
}

impl ClockChange {
    fn at_ns(&self) -> u64 {
        match self {
            ClockChange::Jump { at_ns, .. } | ClockChange::Rate { at_ns, .. } => *at_ns,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockSchedule {
    /// Sorted by `start_ns`; the first starts at 0.
    segments: Vec<Segment>,
}

impl ClockSchedule {
    /// A clock at true time.
    pub fn true_time() -> Self {
        ClockSchedule::new(0, RATE_ONE_PPM, Vec::new())
    }

    /// A clock that starts at `offset_ns` (local = offset at true time 0), runs at `rate_ppm`,
    /// and undergoes `changes` (in any order; changes at the same instant apply in list order).
    pub fn new(offset_ns: i64, rate_ppm: u64, mut changes: Vec<ClockChange>) -> Self {
        assert!(rate_ppm > 0, "a clock must advance: rate {rate_ppm} ppm");
        changes.sort_by_key(ClockChange::at_ns); // stable: same-instant changes keep their order
        let mut segments = vec![Segment { start_ns: 0, local_at_start_ns: offset_ns, rate_ppm }];
        for change in changes {
            let current = *segments.last().expect("at least one segment");
            let at_ns = change.at_ns().max(current.start_ns);
            let local = current.local_at(at_ns);
            let next = match change {
                ClockChange::Jump { by_ns, .. } => Segment {
                    start_ns: at_ns,
                    local_at_start_ns: local.saturating_add(by_ns),
                    rate_ppm: current.rate_ppm,
                },
                ClockChange::Rate { rate_ppm, .. } => {
                    assert!(rate_ppm > 0, "a clock must advance: rate {rate_ppm} ppm");
                    Segment { start_ns: at_ns, local_at_start_ns: local, rate_ppm }
                }
            };
            if next.start_ns == current.start_ns {
                *segments.last_mut().expect("at least one segment") = next;
            } else {
                segments.push(next);
            }
        }
        ClockSchedule { segments }
    }

    fn segment_index(&self, true_ns: u64) -> usize {
        // The last segment that starts at or before `true_ns`; the first starts at 0.
        self.segments.partition_point(|s| s.start_ns <= true_ns) - 1
    }

    /// Local time (ns) at true time `true_ns`.
    pub fn local_at(&self, true_ns: u64) -> i64 {
        self.segments[self.segment_index(true_ns)].local_at(true_ns)
    }

    /// The first true time ≥ `from_ns` at which local time is ≥ `target_ns`. Backward jumps can
    /// make local time pass a value more than once; this is the first time after `from_ns`.
    pub fn true_when(&self, from_ns: u64, target_ns: i64) -> u64 {
        let mut index = self.segment_index(from_ns);
        loop {
            let segment = &self.segments[index];
            let candidate = segment.true_when(target_ns).max(from_ns);
            match self.segments.get(index + 1) {
                Some(next) if candidate >= next.start_ns => index += 1,
                _ => return candidate,
            }
        }
    }

    /// (true start ns, local ns at that start, rate ppm) of every segment, in time order.
    pub fn segments(&self) -> impl Iterator<Item = (u64, i64, u64)> + '_ {
        self.segments.iter().map(|s| (s.start_ns, s.local_at_start_ns, s.rate_ppm))
    }

    /// Whether this clock ever differs from true time.
    pub fn is_true_time(&self) -> bool {
        self.segments == [Segment { start_ns: 0, local_at_start_ns: 0, rate_ppm: RATE_ONE_PPM }]
    }
}

/// A node's two clocks over the run, as a real machine has them: the wall clock
/// (`CLOCK_REALTIME`, Go's wall reading, Java's `System.currentTimeMillis`) takes every change,
/// and the monotonic clock (`CLOCK_MONOTONIC`, Go's monotonic reading, `System.nanoTime`) takes
/// only the rate changes: a jump (an operator or NTP stepping the time) moves the wall clock
/// alone, while a faster or slower oscillator moves both.
///
/// The monotonic clock starts at the wall clock's offset. Its origin is arbitrary on a real
/// machine too; sharing the offset keeps the two equal until the first jump, so a node without
/// jumps has one clock and its history one set of `clock` records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSchedule {
    pub wall: ClockSchedule,
    pub monotonic: ClockSchedule,
}

impl NodeSchedule {
    /// Both clocks at true time.
    pub fn true_time() -> Self {
        NodeSchedule { wall: ClockSchedule::true_time(), monotonic: ClockSchedule::true_time() }
    }

    /// The wall clock of [`ClockSchedule::new`], and the monotonic clock of the same offset, rate
    /// and rate changes.
    pub fn new(offset_ns: i64, rate_ppm: u64, changes: Vec<ClockChange>) -> Self {
        let rates = changes.iter().copied().filter(|c| matches!(c, ClockChange::Rate { .. })).collect();
        NodeSchedule {
            wall: ClockSchedule::new(offset_ns, rate_ppm, changes),
            monotonic: ClockSchedule::new(offset_ns, rate_ppm, rates),
        }
    }

    /// Whether the two clocks read the same all run (no jumps).
    pub fn is_single(&self) -> bool {
        self.wall == self.monotonic
    }

    pub fn is_true_time(&self) -> bool {
        self.wall.is_true_time() && self.monotonic.is_true_time()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const S_I: i64 = 1_000_000_000;

    #[test]
    fn true_time_clock_is_the_identity() {
        let clock = ClockSchedule::true_time();
        assert!(clock.is_true_time());
        assert_eq!(clock.local_at(7 * S), 7 * S_I);
        assert_eq!(clock.true_when(0, 3 * S_I), 3 * S);
    }

    #[test]
    fn rate_and_offset_compose() {
        let clock = ClockSchedule::new(-2 * S_I, 500_000, vec![]);
        assert_eq!(clock.local_at(0), -2 * S_I);
        assert_eq!(clock.local_at(10 * S), 3 * S_I);
        // A slow clock reaches a local deadline late in true time.
        assert_eq!(clock.true_when(0, 3 * S_I), 10 * S);
    }

    #[test]
    fn fast_clock_rounds_wakeups_up_never_down() {
        let clock = ClockSchedule::new(0, 3 * RATE_ONE_PPM, vec![]);
        let wake = clock.true_when(0, 1_000_000_000);
        assert!(clock.local_at(wake) >= 1_000_000_000);
        assert!(clock.local_at(wake - 1) < 1_000_000_000);
    }

    #[test]
    fn forward_jump_brings_deadlines_closer() {
        let clock = ClockSchedule::new(0, RATE_ONE_PPM, vec![ClockChange::Jump { at_ns: 2 * S, by_ns: 5 * S_I }]);
        assert_eq!(clock.local_at(2 * S - 1), 2 * S_I - 1);
        assert_eq!(clock.local_at(2 * S), 7 * S_I);
        assert_eq!(clock.true_when(0, 6 * S_I), 2 * S, "the jump passes the deadline at once");
    }

    #[test]
    fn backward_jump_delays_deadlines_and_rereaches_values() {
        let clock = ClockSchedule::new(0, RATE_ONE_PPM, vec![ClockChange::Jump { at_ns: 4 * S, by_ns: -3 * S_I }]);
        assert_eq!(clock.local_at(4 * S), S_I);
        assert_eq!(clock.true_when(0, 3 * S_I), 3 * S, "first reached before the jump");
        assert_eq!(clock.true_when(4 * S, 3 * S_I), 6 * S, "reached again after it");
        assert_eq!(clock.true_when(0, 5 * S_I), 8 * S);
    }

    #[test]
    fn rate_change_keeps_local_time_continuous() {
        let changes = vec![
            ClockChange::Rate { at_ns: 2 * S, rate_ppm: 2 * RATE_ONE_PPM },
            ClockChange::Rate { at_ns: 4 * S, rate_ppm: RATE_ONE_PPM },
        ];
        let clock = ClockSchedule::new(0, RATE_ONE_PPM, changes);
        assert_eq!(clock.local_at(2 * S), 2 * S_I);
        assert_eq!(clock.local_at(3 * S), 4 * S_I);
        assert_eq!(clock.local_at(5 * S), 7 * S_I);
        assert_eq!(clock.true_when(0, 5 * S_I), 3 * S + S / 2);
    }

    #[test]
    fn without_jumps_local_time_is_monotonic() {
        let changes = vec![
            ClockChange::Rate { at_ns: S, rate_ppm: RATE_MIN_PPM },
            ClockChange::Rate { at_ns: 3 * S, rate_ppm: RATE_MAX_PPM },
        ];
        let clock = ClockSchedule::new(123, 1_300_000, changes);
        let mut last = i64::MIN;
        for step in 0..10_000u64 {
            let local = clock.local_at(step * 1_000_037);
            assert!(local >= last, "local time went back at step {step}");
            last = local;
        }
    }

    #[test]
    fn changes_are_applied_in_time_order_whatever_the_list_order() {
        let a = ClockSchedule::new(
            0,
            RATE_ONE_PPM,
            vec![
                ClockChange::Jump { at_ns: 5 * S, by_ns: S_I },
                ClockChange::Rate { at_ns: S, rate_ppm: 2 * RATE_ONE_PPM },
            ],
        );
        let b = ClockSchedule::new(
            0,
            RATE_ONE_PPM,
            vec![
                ClockChange::Rate { at_ns: S, rate_ppm: 2 * RATE_ONE_PPM },
                ClockChange::Jump { at_ns: 5 * S, by_ns: S_I },
            ],
        );
        assert_eq!(a, b);
        assert_eq!(a.local_at(5 * S), 10 * S_I);
    }

    #[test]
    fn a_jump_moves_the_wall_clock_and_not_the_monotonic_one() {
        let changes = vec![
            ClockChange::Jump { at_ns: 2 * S, by_ns: 20 * S_I },
            ClockChange::Rate { at_ns: 4 * S, rate_ppm: 2 * RATE_ONE_PPM },
        ];
        let node = NodeSchedule::new(S_I, RATE_ONE_PPM, changes);
        assert!(!node.is_single());
        assert_eq!(node.wall.local_at(3 * S), 24 * S_I);
        assert_eq!(node.monotonic.local_at(3 * S), 4 * S_I, "offset kept, jump ignored");
        assert_eq!(node.wall.local_at(5 * S) - node.wall.local_at(4 * S), 2 * S_I, "the rate moves the wall clock");
        assert_eq!(node.monotonic.local_at(5 * S) - node.monotonic.local_at(4 * S), 2 * S_I, "and the monotonic one");
        let rate_only =
            NodeSchedule::new(0, RATE_ONE_PPM, vec![ClockChange::Rate { at_ns: S, rate_ppm: RATE_MIN_PPM }]);
        assert!(rate_only.is_single());
    }
}
