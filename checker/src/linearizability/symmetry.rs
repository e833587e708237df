//! Symmetry reduction: operations that are interchangeable need to be tried in one order only.
//!
//! Two operations a and b are *twins* when they have equal inputs and equal outputs (both unknown
//! counts as equal), a is called no later than b and returns no later than b (in the entry list's
//! order). The model cannot tell them apart, since its step sees only input and output, and
//! real time never forces b before a. So if some linearization puts b before a, swapping the two
//! gives another one — the same model steps, and every real-time constraint still holds:
//! whatever had to precede b precedes a's earlier call, and whatever had to follow a follows b's
//! later return. Applying the swap to each chain of twins (sorting its members by call) shows
//! that requiring "a before b" loses no linearization.
//!
//! The search therefore skips b while its twin a is not linearized. Twins are common in Jepsen
//! histories: a handful of values, and timed-out writes of the same value all open to the end.
//! This reduction is ours (not in Wing & Gong, Lowe or Porcupine); the property tests compare the
//! checker with a brute-force oracle that does not use it.

use std::collections::HashMap;
use std::hash::Hash;

use super::operation::Operation;

/// No twin.
pub(crate) const NO_TWIN: u32 = u32::MAX;

/// For each operation (by index), its nearest earlier twin, or `NO_TWIN`.
pub(crate) fn twins<I: Eq + Hash, O: Eq + Hash>(ops: &[&Operation<I, O>]) -> Vec<u32> {
    // The entry list orders calls by (time, id) and returns by (time, id); so do we.
    let call_key = |i: usize| (ops[i].call_ns, ops[i].id);
    let return_key = |i: usize| (ops[i].effective_return_ns(), ops[i].id);
    let mut by_call: Vec<usize> = (0..ops.len()).collect();
    by_call.sort_unstable_by_key(|&i| call_key(i));

    let mut twin = vec![NO_TWIN; ops.len()];
    let mut latest: HashMap<(&I, Option<&O>), usize> = HashMap::new();
    for i in by_call {
        let class = (&ops[i].input, ops[i].output.as_ref());
        if let Some(previous) = latest.insert(class, i)
            && return_key(previous) <= return_key(i)
        {
            twin[i] = previous as u32;
        }
    }
    twin
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::RETURN_NEVER;

    fn op(id: u64, input: u8, output: Option<u8>, call_ns: u64, return_ns: u64) -> Operation<u8, u8> {
        Operation { id, client: id, input, output, call_ns, return_ns }
    }

    #[test]
    fn twins_need_equal_io_and_nested_order() {
        let ops = [
            op(0, 1, None, 0, RETURN_NEVER),
            op(1, 1, None, 5, RETURN_NEVER),
            op(2, 1, Some(1), 6, 10),
            op(3, 1, Some(1), 7, 9),
            op(4, 1, Some(1), 8, 20),
            op(5, 2, None, 9, RETURN_NEVER),
        ];
        let refs: Vec<_> = ops.iter().collect();
        // 1 follows 0 (both open); 3 returns before 2, so it is not 2's twin; 4 follows 3.
        assert_eq!(twins(&refs), vec![NO_TWIN, 0, NO_TWIN, NO_TWIN, 3, NO_TWIN]);
    }
}
