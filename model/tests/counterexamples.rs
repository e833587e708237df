//! The counterexamples the models exist to find, as shortest numbered timelines in the
//! simulator's vocabulary: their length and their story (docs/cases).

mod support;

use coordsim_model::report::ModelReport;
use support::{BFS, DFS, run};

fn counterexample<'a>(report: &'a ModelReport, property: &str) -> Vec<(&'a str, &'a str)> {
    let result = report.property(property).unwrap_or_else(|| panic!("{property} is not a property"));
    assert!(result.discovered, "no counterexample to {property}:\n{}", report.render());
    assert!(result.shortest, "the counterexample to {property} is a shortest one");
    result.trace.as_ref().unwrap().iter().map(|s| (s.actor.as_str(), s.text.as_str())).collect()
}

/// Case 01: the holder pauses past its lease, the next client acquires and writes, the old
/// holder resumes and its stale write is accepted. Eight steps, whatever the client count and
/// whichever search found the violation first.
#[test]
fn the_unfenced_lease_lock_breaks_mutual_exclusion_in_eight_steps() {
    for (clients, search) in [(2, BFS), (3, BFS), (2, DFS), (3, DFS)] {
        let report = run("lease-lock", clients, search);
        let steps = counterexample(&report, "mutual_exclusion");
        let actors: Vec<&str> = steps.iter().map(|(actor, _)| *actor).collect();
        assert_eq!(actors, ["c1", "c1", "s1", "s1", "c1", "c2", "c2", "c1"], "{clients} clients:\n{}", report.render());
        assert!(steps[0].1.contains("ok lock (token 2)"), "{}", steps[0].1);
        assert!(steps[1].1.starts_with("pause"));
        assert!(steps[3].1.contains("lease_expiry lease 1"));
        assert!(steps[4].1.starts_with("resume"));
        assert!(steps[5].1.contains("ok lock (token 4)"));
        assert_eq!(steps[6].1, "write token 4 → accepted");
        assert!(steps[7].1.starts_with("write token 2 → accepted ✗"));
        assert_eq!(counterexample(&report, "fencing").len(), 8);
    }
}

/// Case 02: a waiter whose lease expired while it waited is told it holds the lock.
#[test]
fn without_the_session_check_an_expired_waiter_is_granted_the_lock() {
    let report = run("grant-to-expired-waiter", 2, BFS);
    let steps = counterexample(&report, "grant_to_live_session");
    assert_eq!(steps.len(), 11, "{}", report.render());
    assert!(steps.iter().any(|(actor, text)| *actor == "s1" && text.contains("lease_expiry lease 2")));
    assert!(steps.last().unwrap().1.contains("own key not re-read"));
    // A third client makes it two writers.
    let report = run("grant-to-expired-waiter", 3, BFS);
    assert_eq!(counterexample(&report, "mutual_exclusion").len(), 14, "{}", report.render());
}

/// Case 08: the predecessor is deleted between the client's `getChildren` and its `exists`; the
/// shipped recipe with `recheck_vanished` off sleeps on a watch of a node that will never change
/// again, and nothing can wake it. Six steps: the delete is the fifth, the `exists` the sixth.
#[test]
fn the_lost_wakeup_leaves_a_waiter_asleep_for_good() {
    for search in [BFS, DFS] {
        let report = run("lost-wakeup", 2, search);
        let steps = counterexample(&report, "no_stuck_waiter");
        assert_eq!(steps.len(), 6, "{}", report.render());
        assert!(
            steps[3].1.starts_with("getChildren /lock") && steps[3].1.ends_with("exists /lock/lock-c1-1-0000000000")
        );
        assert!(steps[4].1.starts_with("unlock: delete /lock/lock-c1-1-0000000000"), "{}", steps[4].1);
        assert!(steps[5].1.starts_with("exists(/lock/lock-c1-1-0000000000, watch) → no node ✗ bug"), "{}", steps[5].1);
    }
    let fixed = run("lost-wakeup-fixed", 3, BFS);
    assert!(!fixed.property("no_stuck_waiter").unwrap().discovered, "{}", fixed.render());
}

/// Case 10: every waiter of the herd lock sets a children watch on the lock node, so the delete
/// of the node at the head of the queue wakes them all.
#[test]
fn the_herd_lock_wakes_every_waiter_on_one_delete() {
    let report = run("herd-lock", 3, BFS);
    let steps = counterexample(&report, "wakeups_per_release");
    assert_eq!(steps.len(), 6, "{}", report.render());
    assert!(steps[3].1.ends_with("watch the children of /lock, sleep"), "{}", steps[3].1);
    assert!(steps.last().unwrap().1.contains("(wakes c2, c3)"), "{}", report.render());
    let queue = run("queue-lock", 3, BFS);
    assert!(!queue.property("wakeups_per_release").unwrap().discovered, "{}", queue.render());
}

/// Case 07: the reply to a create is lost after the create was applied; without a unique tag the
/// client cannot recognise its node, creates another, and waits behind its own orphan for good.
/// With the tag it finds its node, adopts it, and nothing is orphaned.
#[test]
fn a_lost_create_reply_orphans_a_node_and_deadlocks_without_a_unique_tag() {
    for search in [BFS, DFS] {
        let report = run("orphaned-sequential-node", 2, search);
        let steps = counterexample(&report, "no_stuck_waiter");
        assert_eq!(steps.len(), 7, "{}", report.render());
        let lost = steps.iter().position(|(_, text)| text.contains("reply lost")).expect("a lost reply");
        let (client, text) = steps[lost];
        assert!(text.ends_with("→ create again"), "{text}");
        let (last_client, last) = *steps.last().unwrap();
        assert_eq!(last_client, client, "the client that lost the reply waits");
        assert!(last.contains("→ exists → watch"), "it waits behind a node that exists: {last}");
    }
    let fixed = run("orphaned-sequential-node-fixed", 3, BFS);
    assert!(fixed.as_expected(), "{}", fixed.render());
    assert!(!fixed.property("no_stuck_waiter").unwrap().discovered);
    assert!(!fixed.property("orphan_node").unwrap().discovered);
    assert!(fixed.property("create_reply_lost").unwrap().discovered);
}

/// Case 09: the holder's clock runs at half speed; the server expires its lease at tick 2 and
/// the next client acquires while the old holder, 2 of its 4 units into its deadline, still acts.
#[test]
fn a_slow_client_clock_gives_two_holders_at_once() {
    let report = run("clock-skew", 2, BFS);
    let steps = counterexample(&report, "single_holder");
    assert_eq!(steps.len(), 5, "{}", report.render());
    assert!(steps[1].1.starts_with("partition"));
    assert!(steps[3].1.contains("t=2") && steps[3].1.contains("lease_expiry lease 1"), "{}", steps[3].1);
    assert!(steps[4].1.contains("ok lock"));
}

/// An unfenced election: a leader that has not heard of the next term writes after its
/// successor.
#[test]
fn a_deposed_leader_writes_after_its_successor_without_fencing() {
    let report = run("election-unfenced", 3, BFS);
    let steps = counterexample(&report, "fencing");
    assert_eq!(steps.len(), 6, "{}", report.render());
    assert!(steps[5].1.starts_with("write token 1 (its term) → accepted ✗"));
}
