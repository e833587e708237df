//! The state of the election world, and its symmetry representative: nodes are interchangeable,
//! so a state is renamed by a permutation of the nodes, applied to every place that names a node
//! (votes, `voted_for`, the resource's record of who wrote in each term).

use coordsim_core::resource::{Resource, ResourceMode};

use crate::fingerprint::Hashed;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub nodes: Vec<Node>,
    pub resource: Hashed<Resource>,
    pub monitor: Monitor,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node {
    pub term: u8,
    pub role: Role,
    pub voted_for: Option<u8>,
    /// The voters that granted this candidate its vote in its term, as bits.
    pub votes: u8,
    /// Wrote to the resource in its current leadership.
    pub wrote: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Follower,
    Candidate,
    Leader,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Monitor {
    /// Per term: the node whose write the resource accepted with that term.
    pub term_writer: Vec<Option<u8>>,
    /// The resource accepted writes from two different nodes with one term.
    pub two_writers_one_term: bool,
    /// The resource accepted a term lower than one it had accepted.
    pub term_went_back: bool,
    /// A leader wrote with a term older than the newest the resource had seen.
    pub deposed_leader_acted: bool,
}

impl Node {
    /// Moves to the newer `term` as a follower that has not voted in it.
    pub fn follow(&mut self, term: u8) {
        *self = Node { term, role: Role::Follower, voted_for: None, votes: 0, wrote: false };
    }
}

impl State {
    pub fn init(nodes: usize, terms_max: u8, mode: ResourceMode) -> State {
        let node = Node { term: 0, role: Role::Follower, voted_for: None, votes: 0, wrote: false };
        State {
            nodes: vec![node; nodes],
            resource: Hashed::new(Resource::new(mode)),
            monitor: Monitor {
                term_writer: vec![None; usize::from(terms_max) + 1],
                two_writers_one_term: false,
                term_went_back: false,
                deposed_leader_acted: false,
            },
        }
    }

    pub fn two_leaders_in_one_term(&self) -> bool {
        let leaders = self.nodes.iter().filter(|n| n.role == Role::Leader);
        leaders.clone().enumerate().any(|(i, a)| leaders.clone().skip(i + 1).any(|b| b.term == a.term))
    }

    /// The state with its nodes sorted by what they are, ignoring whom they name; every
    /// reference to a node follows it to its new place. Any permutation gives a state that
    /// behaves the same up to names, so this is sound whatever the order; sorting by the
    /// name-free part makes most symmetric states meet.
    pub fn representative(&self) -> State {
        let key = |i: usize| {
            let n = &self.nodes[i];
            (n.term, n.role, n.wrote, n.voted_for == Some(i as u8), n.votes.count_ones(), n.voted_for.is_some())
        };
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by_key(|&i| key(i));
        // new_index[old] = where node `old` goes.
        let mut new_index = vec![0u8; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new as u8;
        }
        let rename = |old: u8| new_index[usize::from(old)];
        let rename_bits = |bits: u8| {
            (0..order.len()).filter(|&old| bits & (1 << old) != 0).fold(0u8, |acc, old| acc | 1 << rename(old as u8))
        };
        let nodes = order
            .iter()
            .map(|&old| {
                let n = &self.nodes[old];
                Node { voted_for: n.voted_for.map(rename), votes: rename_bits(n.votes), ..n.clone() }
            })
            .collect();
        let mut monitor = self.monitor.clone();
        for writer in monitor.term_writer.iter_mut().flatten() {
            *writer = rename(*writer);
        }
        State { nodes, resource: self.resource.clone(), monitor }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_representative_renames_votes_and_writers_with_their_nodes() {
        let mut state = State::init(3, 3, ResourceMode::Fenced);
        // n3 leads term 1 with n1's vote and wrote with term 1.
        state.nodes[2] = Node { term: 1, role: Role::Leader, voted_for: Some(2), votes: 0b101, wrote: true };
        state.nodes[0] = Node { term: 1, role: Role::Follower, voted_for: Some(2), votes: 0, wrote: false };
        state.monitor.term_writer[1] = Some(2);
        let rep = state.representative();
        // Sorted: the term-0 follower, then the term-1 follower, then the leader.
        assert_eq!(rep.nodes[2].role, Role::Leader);
        assert_eq!(rep.nodes[2].voted_for, Some(2));
        assert_eq!(rep.nodes[2].votes, 0b110, "the leader's voters: itself and the term-1 follower");
        assert_eq!(rep.nodes[1].voted_for, Some(2));
        assert_eq!(rep.monitor.term_writer[1], Some(2));
        assert_eq!(rep.representative(), rep, "a representative is its own representative");
    }
}
