//! How faults that overlap compose, for every driver of the plan (the simulator's nemesis and
//! the real runner): a node stays paused until the last of its pauses ends and down until the
//! last of its crashes ends, a link stays cut until the last partition cutting it heals, the
//! highest packet-loss rate in force holds, and the latency fault that started last holds.
//!
//! Pure bookkeeping: each call says what changed, and the driver does it in its world (madsim's
//! `pause`/`kill`, or `SIGSTOP`/`SIGKILL` and nftables rules). A node is any key: a madsim node
//! id, or a real node's name.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

/// The faults in force on a run, counted per node and per link.
#[derive(Debug)]
pub struct Composition<N> {
    paused: BTreeMap<N, u32>,
    crashed: BTreeMap<N, u32>,
    cut: BTreeMap<(N, N), u32>,
    /// Packet-loss faults in force, in the order they started: (fault id, rate).
    losses: Vec<(u64, f64)>,
    /// Latency faults in force, in the order they started: (fault id, one-way range).
    latencies: Vec<(u64, Range<Duration>)>,
}

impl<N> Default for Composition<N> {
    fn default() -> Self {
        Composition {
            paused: BTreeMap::new(),
            crashed: BTreeMap::new(),
            cut: BTreeMap::new(),
            losses: Vec::new(),
            latencies: Vec::new(),
        }
    }
}

impl<N: Ord + Clone> Composition<N> {
    /// One more pause of `node`; true if it is the first (the node must stop now).
    pub fn pause(&mut self, node: &N) -> bool {
        bump(&mut self.paused, node)
    }

    /// One pause of `node` ends; true if it was the last (the node may run again).
    pub fn resume(&mut self, node: &N) -> bool {
        release(&mut self.paused, node)
    }

    /// One more crash of `node`; true if it is the first (the node must die now).
    pub fn crash(&mut self, node: &N) -> bool {
        bump(&mut self.crashed, node)
    }

    /// One crash of `node` ends; true if it was the last (the node must start again).
    pub fn restart(&mut self, node: &N) -> bool {
        release(&mut self.crashed, node)
    }

    /// Whether a pause of `node` is in force (a node restarted while paused comes back paused).
    pub fn is_paused(&self, node: &N) -> bool {
        self.paused.contains_key(node)
    }

    /// Whether a crash of `node` is in force (a dead process cannot be stopped or continued).
    pub fn is_crashed(&self, node: &N) -> bool {
        self.crashed.contains_key(node)
    }

    /// A partition cuts `links` (from, to); the ones no partition cut before, to cut now.
    pub fn cut(&mut self, links: impl IntoIterator<Item = (N, N)>) -> Vec<(N, N)> {
        links.into_iter().filter(|link| bump(&mut self.cut, link)).collect()
    }

    /// A partition that cut `links` heals; the ones no other partition still cuts, to open now.
    pub fn heal(&mut self, links: impl IntoIterator<Item = (N, N)>) -> Vec<(N, N)> {
        links.into_iter().filter(|link| release(&mut self.cut, link)).collect()
    }

    /// The links some partition cuts now.
    pub fn cut_links(&self) -> impl Iterator<Item = &(N, N)> {
        self.cut.keys()
    }

    /// Packet-loss fault `fault` starts with `rate`; the rate in force now.
    pub fn add_loss(&mut self, fault: u64, rate: f64) -> f64 {
        self.losses.push((fault, rate));
        self.loss()
    }

    /// Packet-loss fault `fault` ends; the rate in force now (`None`: it was not in force).
    pub fn remove_loss(&mut self, fault: u64) -> Option<f64> {
        let position = self.losses.iter().position(|(id, _)| *id == fault)?;
        self.losses.remove(position);
        Some(self.loss())
    }

    /// The packet-loss rate in force: the highest of the active faults' (0 without one).
    pub fn loss(&self) -> f64 {
        self.losses.iter().map(|(_, rate)| *rate).fold(0.0, f64::max)
    }

    /// Latency fault `fault` starts with `range`; the range in force now.
    pub fn add_latency(&mut self, fault: u64, range: Range<Duration>) -> Option<Range<Duration>> {
        self.latencies.push((fault, range));
        self.latency()
    }

    /// Latency fault `fault` ends: `Some` with the range in force now (`None` inside: the run's
    /// own latency), or `None` if it was not in force.
    pub fn remove_latency(&mut self, fault: u64) -> Option<Option<Range<Duration>>> {
        let position = self.latencies.iter().position(|(id, _)| *id == fault)?;
        self.latencies.remove(position);
        Some(self.latency())
    }

    /// The latency range in force: the latest-started active fault's.
    pub fn latency(&self) -> Option<Range<Duration>> {
        self.latencies.last().map(|(_, range)| range.clone())
    }
}

fn bump<K: Ord + Clone>(counts: &mut BTreeMap<K, u32>, key: &K) -> bool {
    let count = counts.entry(key.clone()).or_insert(0);
    *count += 1;
    *count == 1
}

/// A fault is released once, after it was applied: anything else is a bug in the driver.
fn release<K: Ord>(counts: &mut BTreeMap<K, u32>, key: &K) -> bool {
    let count = counts.get_mut(key).expect("a fault is released once, after it was applied");
    *count -= 1;
    if *count == 0 {
        counts.remove(key);
        true
    } else {
        false
    }
}

/// The history's detail of a packet-loss fault.
pub fn loss_detail(rate: f64) -> String {
    format!("loss {rate}")
}

/// The history's detail of a latency fault.
pub fn latency_detail(min: Duration, max: Duration) -> String {
    format!("latency {}..{} ms", min.as_millis(), max.as_millis())
}

/// The history's detail of a link delay.
pub fn link_delay_detail(from: &str, to: &str, delay: Duration) -> String {
    format!("{from} -> {to} delayed {} ms", delay.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_runs_again_only_when_the_last_of_its_overlapping_faults_ends() {
        let mut faults = Composition::default();
        assert!(faults.pause(&"c1"), "the first pause stops it");
        assert!(!faults.pause(&"c1"), "a second pause changes nothing");
        assert!(faults.crash(&"c1") && faults.is_paused(&"c1") && faults.is_crashed(&"c1"));
        assert!(!faults.resume(&"c1"), "one pause still holds");
        assert!(faults.resume(&"c1"), "the last pause ends");
        assert!(faults.restart(&"c1") && !faults.is_crashed(&"c1") && !faults.is_paused(&"c1"));
    }

    #[test]
    fn a_link_cut_by_two_partitions_opens_when_both_heal() {
        let mut faults = Composition::default();
        assert_eq!(faults.cut([("s1", "s2"), ("s2", "s1")]), vec![("s1", "s2"), ("s2", "s1")]);
        assert_eq!(faults.cut([("s1", "s2"), ("s1", "s3")]), vec![("s1", "s3")], "s1-s2 is already cut");
        assert_eq!(faults.heal([("s1", "s2"), ("s2", "s1")]), vec![("s2", "s1")], "the second still cuts s1-s2");
        assert_eq!(faults.cut_links().count(), 2);
        assert_eq!(faults.heal([("s1", "s2"), ("s1", "s3")]), vec![("s1", "s2"), ("s1", "s3")]);
        assert_eq!(faults.cut_links().count(), 0);
    }

    #[test]
    fn the_highest_loss_and_the_latest_latency_hold() {
        let mut faults: Composition<&str> = Composition::default();
        assert_eq!(faults.add_loss(1, 0.2), 0.2);
        assert_eq!(faults.add_loss(2, 0.5), 0.5);
        assert_eq!(faults.add_loss(3, 0.1), 0.5);
        assert_eq!(faults.remove_loss(2), Some(0.2));
        assert_eq!(faults.remove_loss(1), Some(0.1));
        assert_eq!(faults.remove_loss(3), Some(0.0));
        assert_eq!(faults.remove_loss(3), None, "ended once");
        let ms = Duration::from_millis;
        assert_eq!(faults.add_latency(4, ms(5)..ms(50)), Some(ms(5)..ms(50)));
        assert_eq!(faults.add_latency(5, ms(1)..ms(2)), Some(ms(1)..ms(2)), "the latest started holds");
        assert_eq!(faults.remove_latency(5), Some(Some(ms(5)..ms(50))));
        assert_eq!(faults.remove_latency(4), Some(None), "the run's own latency again");
        assert_eq!(faults.remove_latency(4), None, "ended once");
    }

    #[test]
    #[should_panic(expected = "released once")]
    fn releasing_a_fault_never_applied_is_a_bug() {
        Composition::<&str>::default().resume(&"c1");
    }
}
