//! The call and return entries of a partition, in time order, as a doubly linked list.
//!
//! Linearizing an operation unlinks its call and its return; backtracking relinks them. Unlinking
//! keeps a node's own links, so relinking in the reverse order of unlinking restores the list
//! exactly (Knuth's dancing links). The search only ever undoes its latest step, which is that
//! order.

/// Index of a node; node 0 is the head sentinel.
pub(crate) type NodeId = u32;

pub(crate) const END: NodeId = u32::MAX;
pub(crate) const HEAD: NodeId = 0;

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Index of the operation within the partition.
    op: u32,
    /// For a call: its return's node. For a return: `END`.
    return_node: NodeId,
    prev: NodeId,
    next: NodeId,
}

/// One event of the partition, for sorting into the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Event {
    pub(crate) time_ns: u64,
    /// Calls sort before returns at equal times: equal times count as concurrent.
    pub(crate) kind: EventKind,
    /// Tie-breaker independent of the input's order.
    pub(crate) op_id: u64,
    pub(crate) op: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum EventKind {
    Call,
    Return,
}

pub(crate) struct Entries {
    nodes: Vec<Node>,
}

impl Entries {
    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>()
    }

    /// Builds the list from every operation's call and return; `events` is sorted in place.
    pub(crate) fn new(events: &mut [Event]) -> Self {
        events.sort_unstable();
        let mut nodes = Vec::with_capacity(events.len() + 1);
        nodes.push(Node { op: u32::MAX, return_node: END, prev: END, next: END });
        let ops = events.len() / 2;
        let mut call_node_of_op = vec![END; ops];
        for (position, event) in events.iter().enumerate() {
            let id = position as NodeId + 1;
            nodes[id as usize - 1].next = id;
            nodes.push(Node { op: event.op, return_node: END, prev: id - 1, next: END });
            match event.kind {
                EventKind::Call => call_node_of_op[event.op as usize] = id,
                EventKind::Return => {
                    let call = call_node_of_op[event.op as usize];
                    assert_ne!(call, END, "a return sorted before its call");
                    nodes[call as usize].return_node = id;
                }
            }
        }
        Entries { nodes }
    }

    #[inline]
    pub(crate) fn first(&self) -> NodeId {
        self.nodes[HEAD as usize].next
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.first() == END
    }

    #[inline]
    pub(crate) fn next(&self, node: NodeId) -> NodeId {
        self.nodes[node as usize].next
    }

    #[inline]
    pub(crate) fn op(&self, node: NodeId) -> u32 {
        self.nodes[node as usize].op
    }

    #[inline]
    pub(crate) fn is_call(&self, node: NodeId) -> bool {
        self.nodes[node as usize].return_node != END
    }

    /// Removes a call and its return from the list.
    #[inline]
    pub(crate) fn lift(&mut self, call: NodeId) {
        debug_assert!(self.is_call(call));
        self.unlink(call);
        self.unlink(self.nodes[call as usize].return_node);
    }

    /// Undoes the latest `lift`, which must have been of `call`.
    #[inline]
    pub(crate) fn unlift(&mut self, call: NodeId) {
        self.relink(self.nodes[call as usize].return_node);
        self.relink(call);
    }

    #[inline]
    fn unlink(&mut self, node: NodeId) {
        let Node { prev, next, .. } = self.nodes[node as usize];
        self.nodes[prev as usize].next = next;
        if next != END {
            self.nodes[next as usize].prev = prev;
        }
    }

    #[inline]
    fn relink(&mut self, node: NodeId) {
        let Node { prev, next, .. } = self.nodes[node as usize];
        self.nodes[prev as usize].next = node;
        if next != END {
            self.nodes[next as usize].prev = node;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(time_ns: u64, kind: EventKind, op: u32) -> Event {
        Event { time_ns, kind, op_id: op.into(), op }
    }

    fn walk(entries: &Entries) -> Vec<(u32, bool)> {
        let mut out = Vec::new();
        let mut node = entries.first();
        while node != END {
            out.push((entries.op(node), entries.is_call(node)));
            node = entries.next(node);
        }
        out
    }

    #[test]
    fn equal_times_put_calls_first_and_lift_unlift_restore_the_list() {
        use EventKind::{Call, Return};
        let mut events = vec![
            event(5, Return, 0),
            event(0, Call, 0),
            event(5, Call, 1),
            event(9, Return, 1),
            event(1, Call, 2),
            event(7, Return, 2),
        ];
        let mut entries = Entries::new(&mut events);
        let original = vec![(0, true), (2, true), (1, true), (0, false), (2, false), (1, false)];
        assert_eq!(walk(&entries), original);
        let call_2 = entries.next(entries.first());
        entries.lift(call_2);
        let call_0 = entries.first();
        entries.lift(call_0);
        assert_eq!(walk(&entries), vec![(1, true), (1, false)]);
        entries.unlift(call_0);
        entries.unlift(call_2);
        assert_eq!(walk(&entries), original);
    }
}
