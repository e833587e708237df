//! What each model is expected to give: for each property, whether it holds, is broken (a
//! counterexample the model exists to find), or names a state that is (or is shown not to be)
//! reachable; and what each property says, in one line.
//!
//! Some expectations depend on the size: a herd needs two waiters (three clients), a dead grant
//! needs a third client to become two writers, and with two nodes a new leader needs the old
//! leader's vote, which deposes it first.

use crate::checked::{Expectation, Expected, expect};

use Expected::{Holds, Reachable, Unreachable, Violated};

/// What each property says, in one line (for reports).
pub fn meaning(property: &str) -> &'static str {
    match property {
        "mutual_exclusion" => {
            "the resource never accepts a write from a holder whose grant is older than that of a write it already accepted"
        }
        "fencing" => "the tokens the resource accepts never go backwards",
        "single_holder" => "at most one client believes it holds the lock at any tick",
        "grant_to_live_session" => "a client is told it holds the lock only while its session lease exists",
        "wakeups_per_release" => "one delete wakes at most one queued waiter",
        "no_stuck_waiter" => "never a state where a client waits and nothing (no step, no tick) can ever happen again",
        "election_safety" => "at most one leader per term",
        "one_writer_per_epoch" => "the resource never accepts writes from two nodes with the same term",
        "dual_ownership" => "two clients believe they hold the lock at once",
        "lease_expired_while_believed" => {
            "a holder still believes while its lease is gone (a pause or cut longer than the TTL)"
        }
        "waiter_lease_expired" => "a waiter's lease expires while it waits",
        "contended_release" => "a release (or expiry) wakes a queued waiter",
        "stale_write_rejected" => "the fenced resource turns a stale holder's write away",
        "deadline_stopped_holder" => "a cut-off holder stops at its own deadline",
        "all_released" => "every client acquired and released",
        "predecessor_vanished" => "the node a client was about to watch was already gone",
        "waiter_abandoned" => "a queued client gave up (its session closed: its node vanished from the queue)",
        "create_reply_lost" => "the reply to a create was lost after the create was applied",
        "orphan_node" => "a session owns two lock nodes, one of which its client no longer knows (an orphan)",
        "leader_elected" => "some node leads a term",
        "two_leaders" => "two nodes believe they lead at once (different terms)",
        "deposed_leader_acted" => "a leader writes with a term older than one the resource has seen",
        _ => "",
    }
}

/// Case 01: without fencing the stale holder's write lands; with it, it is rejected.
pub fn lease_lock_expectations(fenced: bool) -> Vec<Expectation> {
    let unless_fenced = if fenced { Holds } else { Violated };
    let mut list = vec![
        expect("mutual_exclusion", unless_fenced),
        expect("fencing", unless_fenced),
        expect("grant_to_live_session", Holds),
        expect("wakeups_per_release", Holds),
        expect("no_stuck_waiter", Holds),
        expect("dual_ownership", Reachable),
        expect("lease_expired_while_believed", Reachable),
        expect("contended_release", Reachable),
        expect("all_released", Reachable),
    ];
    if fenced {
        list.push(expect("stale_write_rejected", Reachable));
    }
    list
}

/// Case 02 needs a third client to turn the dead grant into two writers: with two, the holder
/// has released (and written) before the dead waiter is told it holds the lock.
pub fn grant_expectations(fixed: bool, three: bool) -> Vec<Expectation> {
    let buggy_with_three = if !fixed && three { Violated } else { Holds };
    vec![
        expect("grant_to_live_session", if fixed { Holds } else { Violated }),
        expect("mutual_exclusion", buggy_with_three),
        expect("fencing", buggy_with_three),
        expect("wakeups_per_release", Holds),
        expect("no_stuck_waiter", Holds),
        expect("waiter_lease_expired", Reachable),
        expect("contended_release", Reachable),
        expect("dual_ownership", if !fixed && three { Reachable } else { Unreachable }),
        expect("all_released", Reachable),
    ]
}

/// Case 09: a deadline within the margin stops the holder before its lease can expire.
pub fn skew_expectations(margin: bool) -> Vec<Expectation> {
    let unless_margin = if margin { Holds } else { Violated };
    vec![
        expect("single_holder", unless_margin),
        expect("mutual_exclusion", unless_margin),
        expect("fencing", unless_margin),
        expect("wakeups_per_release", Holds),
        expect("no_stuck_waiter", Holds),
        expect("lease_expired_while_believed", if margin { Unreachable } else { Reachable }),
        expect("deadline_stopped_holder", Reachable),
        expect("contended_release", Reachable),
        expect("all_released", Reachable),
    ]
}

/// A herd needs two waiters on one node: three clients. The herd lock never calls `exists` (it
/// watches the children), so no predecessor can vanish under it.
pub fn zk_lock_expectations(herd: bool, three: bool) -> Vec<Expectation> {
    vec![
        expect("single_holder", Holds),
        expect("wakeups_per_release", if herd && three { Violated } else { Holds }),
        expect("no_stuck_waiter", Holds),
        expect("contended_release", Reachable),
        expect("predecessor_vanished", if herd { Unreachable } else { Reachable }),
        expect("waiter_abandoned", Reachable),
        expect("all_released", Reachable),
    ]
}

/// Case 08: with the bug a waiter sleeps for good; fixed, every waiter acquires.
pub fn lost_wakeup_expectations(bug: bool) -> Vec<Expectation> {
    vec![
        expect("single_holder", Holds),
        expect("wakeups_per_release", Holds),
        expect("no_stuck_waiter", if bug { Violated } else { Holds }),
        expect("contended_release", Reachable),
        expect("predecessor_vanished", Reachable),
        expect("all_released", Reachable),
    ]
}

/// Case 07: without a unique tag a lost create reply orphans a node in front of the queue and
/// the lock deadlocks; with one, the client finds its node again and nothing is orphaned.
pub fn orphan_expectations(bug: bool) -> Vec<Expectation> {
    vec![
        expect("single_holder", Holds),
        expect("wakeups_per_release", Holds),
        expect("no_stuck_waiter", if bug { Violated } else { Holds }),
        expect("create_reply_lost", Reachable),
        expect("orphan_node", if bug { Reachable } else { Unreachable }),
        expect("contended_release", Reachable),
        expect("all_released", Reachable),
    ]
}

/// With two nodes a new leader needs the old leader's vote, which deposes it first: no stale
/// leader can act, so fencing has nothing to stop.
pub fn election_expectations(fenced: bool, three: bool) -> Vec<Expectation> {
    let stale = if three { Reachable } else { Unreachable };
    vec![
        expect("election_safety", Holds),
        expect("one_writer_per_epoch", Holds),
        expect("fencing", if !fenced && three { Violated } else { Holds }),
        expect("leader_elected", Reachable),
        expect("two_leaders", stale),
        expect("deposed_leader_acted", stale),
    ]
}
