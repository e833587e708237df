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

/// Case 08: the predecessor is deleted between the list and the exists call; the buggy client
/// sleeps with no watch armed and nothing can wake it.
#[test]
fn the_lost_wakeup_leaves_a_waiter_asleep_for_good() {
    let report = run("lost-wakeup", 2, BFS);
    let steps = counterexample(&report, "no_stuck_waiter");
    assert_eq!(steps.len(), 6, "{}", report.render());
    assert!(steps[4].1.starts_with("unlock: delete /lock/n-0000000001"));
    assert!(steps[5].1.contains("bug: sleeps"));
}

/// Case 10: every waiter watches the holder's node, so its delete wakes them all.
#[test]
fn the_herd_lock_wakes_every_waiter_on_one_delete() {
    let report = run("herd-lock", 3, BFS);
    let steps = counterexample(&report, "wakeups_per_release");
    assert!(steps.last().unwrap().1.contains("(wakes c2, c3)"), "{}", report.render());
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
