//! The state of the ZooKeeper lock world. Nothing in it names a client except its position in
//! `clients`: nodes are sequence numbers, a watch names the node it watches. So sorting the
//! clients gives a state that is the same up to renaming them: the symmetry representative.

/// A set of sequence numbers (1..=63) as bits: the children of the lock node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nodes(pub u64);

impl Nodes {
    pub fn contains(self, seq: u8) -> bool {
        self.0 & (1 << seq) != 0
    }

    pub fn insert(&mut self, seq: u8) {
        self.0 |= 1 << seq;
    }

    pub fn remove(&mut self, seq: u8) {
        self.0 &= !(1 << seq);
    }

    /// The lowest sequence number: the holder's node.
    pub fn lowest(self) -> Option<u8> {
        (self.0 != 0).then(|| self.0.trailing_zeros() as u8)
    }

    /// The highest sequence number below `seq`: the predecessor.
    pub fn below(self, seq: u8) -> Option<u8> {
        let lower = self.0 & ((1u64 << seq) - 1);
        (lower != 0).then(|| 63 - lower.leading_zeros() as u8)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct State {
    /// The next sequence number the server hands out (never reused).
    pub next_seq: u8,
    pub nodes: Nodes,
    pub clients: Vec<Client>,
    pub abandons: u8,
    /// One delete woke more than one waiter (set once).
    pub herd: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Client {
    /// Our node's sequence number, 0 before the create.
    pub seq: u8,
    pub phase: Phase,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    Idle,
    /// About to list the children. `recheck`: because the node we meant to watch was gone.
    Listing {
        recheck: bool,
    },
    /// About to call `exists(target, watch = true)`.
    Checking {
        target: u8,
    },
    /// The watch on `target` is armed; `notified` once `target` was deleted.
    Watching {
        target: u8,
        notified: bool,
    },
    /// The bug: `exists` said "no node" and the client went to sleep as if a watch were armed.
    /// (ZooKeeper does arm a watch for the node's *creation*, which never comes: sequence numbers
    /// are not reused.)
    Sleeping {
        target: u8,
    },
    Holding,
    Done(End),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum End {
    Released,
    /// Gave up while queued (session closed): its node was deleted.
    Abandoned,
}

impl State {
    pub fn init(clients: usize) -> State {
        assert!(clients <= 20, "sequence numbers must fit the node set");
        State {
            next_seq: 1,
            nodes: Nodes::default(),
            clients: vec![Client { seq: 0, phase: Phase::Idle }; clients],
            abandons: 0,
            herd: false,
        }
    }

    pub fn holders(&self) -> usize {
        self.clients.iter().filter(|c| c.phase == Phase::Holding).count()
    }

    pub fn all_done(&self) -> bool {
        self.clients.iter().all(|c| matches!(c.phase, Phase::Done(_)))
    }

    /// Deletes node `seq` and fires the watches on it; returns how many waiters it woke.
    pub fn delete(&mut self, seq: u8) -> usize {
        self.nodes.remove(seq);
        let mut woken = 0;
        for client in &mut self.clients {
            if let Phase::Watching { target, notified } = &mut client.phase
                && *target == seq
                && !*notified
            {
                *notified = true;
                woken += 1;
            }
        }
        if woken > 1 {
            self.herd = true;
        }
        woken
    }

    /// The symmetry representative: the clients in sorted order.
    pub fn sorted(&self) -> State {
        let mut state = self.clone();
        state.clients.sort();
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_set_finds_the_holder_and_the_predecessor() {
        let mut nodes = Nodes::default();
        for seq in [2, 5, 9] {
            nodes.insert(seq);
        }
        assert_eq!(nodes.lowest(), Some(2));
        assert_eq!(nodes.below(9), Some(5));
        assert_eq!(nodes.below(5), Some(2));
        assert_eq!(nodes.below(2), None);
        nodes.remove(5);
        assert_eq!(nodes.below(9), Some(2));
    }
}
