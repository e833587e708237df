//! The servers' own Raft timers (sim/src/server/timers.rs): a leader's heartbeats hold its
//! followers, and a leader that stops being heard is replaced one election timeout later, on
//! the testbed's timing (heartbeat 50 ms, election timeout 150–300 ms).

use std::time::{Duration, Instant};

use coordsim_checker::history::{Event, History, RaftRole};
use coordsim_sim::client::Client;
use coordsim_sim::net;
use coordsim_sim::recorder::Recorder;
use coordsim_sim::testbed;

/// Every (node, term) that took the lead, in order.
fn leaders(history: &History) -> Vec<(String, u64)> {
    let mut seen: Vec<(String, u64)> = Vec::new();
    for entry in &history.entries {
        if let Event::Role { role: RaftRole::Leader, term } = entry.event
            && !seen.iter().any(|(node, t)| *node == entry.node && *t == term)
        {
            seen.push((entry.node.clone(), term));
        }
    }
    seen
}

/// With no fault, the first leader keeps its term for 20 s: its heartbeats reach the followers
/// more often than their election timeouts pass. (Without heartbeats a follower stands within
/// 300 ms.)
#[test]
fn a_heard_leader_keeps_its_term() {
    for seed in 1..=5 {
        let script = |_client: Client, recorder: Recorder| async move {
            madsim::time::sleep(Duration::from_secs(20)).await;
            recorder.finish()
        };
        let history = &testbed::run(seed, 3, vec![testbed::script(script)], Duration::from_secs(30))[0];
        assert_eq!(leaders(history), vec![("s1".to_string(), 1)], "seed {seed}");
    }
}

/// A leader cut from both followers is replaced by one of them once a follower's election
/// timeout passes and the other's leader lease has run out: a voter refuses a (pre-)vote for
/// `election_timeout_max` (300 ms) after it last heard a leader (openraft's leader lease, as etcd's
/// `checkQuorum` lease), and the last heartbeat came at most 50 ms before the cut. So no sooner
/// than 250 ms after the cut, and no later than a refused try just before the lease ends plus
/// one more timeout (300 + 300 ms) and the round trips.
#[test]
fn a_leader_no_longer_heard_is_replaced_after_one_election_timeout() {
    let mut waits = Vec::new();
    for seed in 1..=10 {
        let script = |_client: Client, recorder: Recorder| async move {
            let leader = testbed::server_node(1);
            for follower in [2, 3] {
                net::clog_link(leader, testbed::server_node(follower));
                net::clog_link(testbed::server_node(follower), leader);
            }
            let cut = Instant::now();
            while recorder.leader().as_deref() == Some("s1") {
                madsim::time::sleep(Duration::from_millis(1)).await;
            }
            (cut.elapsed(), recorder.finish())
        };
        let (waited, history) = testbed::run(seed, 3, vec![testbed::script(script)], Duration::from_secs(30)).remove(0);
        let elected = leaders(&history);
        assert_eq!(elected.len(), 2, "seed {seed}: {elected:?}");
        assert_ne!(elected[1].0, "s1", "seed {seed}: {elected:?}");
        assert!((Duration::from_millis(250)..Duration::from_millis(650)).contains(&waited), "seed {seed}: {waited:?}");
        waits.push(waited);
    }
    // The timeout is drawn per server and per reset: the seeds do not all wait the same.
    waits.sort();
    waits.dedup();
    assert!(waits.len() > 1, "{waits:?}");
}
