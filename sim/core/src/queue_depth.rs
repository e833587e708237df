//! How deep a node's work queue was over a run, in windows of true time: the pure half of the
//! time model's queue-depth record (the driver, `coordsim_sim::timing::Cpu`, feeds it).
//!
//! A node's CPU serves one piece of work at a time in arrival order (client requests, Raft
//! messages, applies), so when a piece arrives its finish time is already known, and finish
//! times grow with arrival. The depth at an instant is the number of pieces that have arrived and
//! not finished (the one being served included). It only rises when a piece arrives, so the
//! deepest point of a window is just after an arrival in it, or at its start (work carried over).
//! That makes the record exact with no timer: nothing is sampled.
//!
//! What a real server reports beside it: ZooKeeper's `mntr` `zk_outstanding_requests` (requests
//! in its processor chain), etcd's `etcd_server_proposals_pending` (proposals not yet applied).
//! Both count requests waiting on consensus too; this counts work waiting for, or on, the CPU.

use std::collections::VecDeque;

/// The record's window: the metrics' peak-rate window (100 ms of true time), so a burst of
/// requests and the queue it makes line up window for window.
pub const WINDOW_NS: u64 = coordsim_checker::metrics::PEAK_WINDOW_NS;

/// One node's queue depth, window by window.
#[derive(Clone, Debug)]
pub struct QueueDepth {
    window_ns: u64,
    /// Finish times (true ns) of the pieces in the queue, earliest first.
    finishes: VecDeque<u64>,
    /// The open window's index (its start is `window * window_ns`).
    window: u64,
    /// The deepest the queue has been in the open window so far.
    deepest: u32,
    /// Closed windows in which the queue held work: (start, ms; the deepest it was).
    closed: Vec<[u64; 2]>,
}

impl Default for QueueDepth {
    fn default() -> Self {
        QueueDepth::new(WINDOW_NS)
    }
}

impl QueueDepth {
    /// A record in windows of `window_ns` (at least 1 ms, so a window's start is whole ms).
    pub fn new(window_ns: u64) -> QueueDepth {
        assert!(window_ns >= 1_000_000 && window_ns % 1_000_000 == 0, "a window is whole ms");
        QueueDepth { window_ns, finishes: VecDeque::new(), window: 0, deepest: 0, closed: Vec::new() }
    }

    /// A piece of work arrives at `now_ns` and will be done at `finish_ns` (true time).
    pub fn arrive(&mut self, now_ns: u64, finish_ns: u64) {
        self.advance(now_ns);
        self.leave_until(now_ns);
        // In arrival order finishes grow (one CPU, first come first served); a piece that would
        // finish before one already queued (a clock the driver reads twice) is placed in order.
        let at = self.finishes.partition_point(|f| *f <= finish_ns);
        self.finishes.insert(at, finish_ns);
        self.deepest = self.deepest.max(self.finishes.len() as u32);
    }

    /// Everything queued is dropped at `now_ns`: the node crashed or started afresh.
    pub fn clear(&mut self, now_ns: u64) {
        self.advance(now_ns);
        self.finishes.clear();
    }

    /// The closed windows up to `end_ns` and the one `end_ns` falls in: `[start_ms, deepest]`
    /// for each window in which the queue held work, in time order. Leaves the record as it was.
    pub fn series(&self, end_ns: u64) -> Vec<[u64; 2]> {
        let mut until = self.clone();
        until.advance(end_ns);
        until.close();
        until.closed
    }

    /// The window's length, ms.
    pub fn window_ms(&self) -> u64 {
        self.window_ns / 1_000_000
    }

    fn leave_until(&mut self, now_ns: u64) {
        while self.finishes.front().is_some_and(|f| *f <= now_ns) {
            self.finishes.pop_front();
        }
    }

    fn close(&mut self) {
        if self.deepest > 0 {
            self.closed.push([self.window * self.window_ms(), u64::from(self.deepest)]);
        }
    }

    /// Closes every window before the one `now_ns` falls in; each window after a closed one
    /// starts as deep as what is still queued at its start.
    fn advance(&mut self, now_ns: u64) {
        let target = now_ns / self.window_ns;
        while self.window < target {
            self.close();
            self.window += 1;
            self.leave_until(self.window * self.window_ns);
            self.deepest = self.finishes.len() as u32;
            if self.finishes.is_empty() {
                // Idle until now: nothing to record in between.
                self.window = target;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_window_records_the_most_pieces_queued_at_once() {
        let mut queue = QueueDepth::new(100 * MS);
        // Three pieces of 10 ms from 5 ms on, back to back: 3 at once just after the third.
        queue.arrive(5 * MS, 15 * MS);
        queue.arrive(6 * MS, 25 * MS);
        queue.arrive(7 * MS, 35 * MS);
        // One more alone at 50 ms: the deepest stays 3.
        queue.arrive(50 * MS, 51 * MS);
        assert_eq!(queue.series(99 * MS), vec![[0, 3]]);
    }

    #[test]
    fn work_carried_into_a_window_counts_there_and_idle_windows_are_left_out() {
        let mut queue = QueueDepth::new(100 * MS);
        // Two pieces arriving at 90 ms, done at 150 and 250 ms: window 100 starts with both
        // queued, window 200 with one; nothing after.
        queue.arrive(90 * MS, 150 * MS);
        queue.arrive(91 * MS, 250 * MS);
        queue.arrive(720 * MS, 730 * MS);
        assert_eq!(queue.series(1_000 * MS), vec![[0, 2], [100, 2], [200, 1], [700, 1]]);
    }

    #[test]
    fn a_crash_drops_what_was_queued() {
        let mut queue = QueueDepth::new(100 * MS);
        queue.arrive(10 * MS, 500 * MS);
        queue.arrive(11 * MS, 600 * MS);
        queue.clear(150 * MS);
        queue.arrive(420 * MS, 421 * MS);
        assert_eq!(queue.series(1_000 * MS), vec![[0, 2], [100, 2], [400, 1]]);
    }

    #[test]
    fn the_series_leaves_the_record_as_it_was() {
        let mut queue = QueueDepth::new(100 * MS);
        queue.arrive(10 * MS, 20 * MS);
        assert_eq!(queue.series(50 * MS), vec![[0, 1]]);
        queue.arrive(30 * MS, 40 * MS);
        queue.arrive(31 * MS, 45 * MS);
        assert_eq!(queue.series(50 * MS), vec![[0, 2]]);
    }
}
