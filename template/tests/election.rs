// tests/election.rs of your crate: the election under the simulator, with a fault.
use std::collections::BTreeMap;

use coordsim::prelude::*;
use my_service::{ELECTION, Leader, lead};

/// What the leader does, recorded in the history: its belief (the grant the lock properties
/// judge) and its fenced writes.
struct Recorded(Ctx);

impl Leader for Recorded {
    fn elected(&self, term: i64) {
        self.0.believe_held(ELECTION, term);
    }

    async fn work(&self, term: i64) {
        self.0.write_resource(term, format!("{}-{term}", self.0.name())).await;
        sleep(Duration::from_millis(200)).await;
    }

    fn stepped_down(&self, term: i64, reason: &str) {
        self.0.believe_released(ELECTION, term, reason);
    }
}

/// c1 campaigns first and leads; from 5 s to 15 s it is cut off from every server.
fn testbed(name: &str, careful: bool) -> Testbed {
    Testbed::new(name)
        .servers(3)
        .duration(Duration::from_secs(30))
        .client_start(Duration::from_secs(1), Duration::from_millis(500))
        .fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)))
        .clients(3, move |ctx| async move {
            loop {
                let _ = lead(ctx.endpoints(), ctx.name().to_string(), careful, Recorded(ctx.clone())).await;
                sleep(Duration::from_millis(500)).await;
            }
        })
}

#[test]
fn one_leader_at_a_time() {
    testbed("my-election", true).checker(EveryLeaderWrote).check(1..=50);
}

/// Fails on purpose, to show what a failure says: this leader never looks at its lease, so
/// once the servers expire it c2 is elected while c1 still leads (`single_holder`). Delete it
/// once you have read its message.
#[test]
fn fails_on_purpose_a_leader_that_ignores_its_lease() {
    testbed("my-election-ignores-its-lease", false).check(1..=50);
}

/// A property of your own, judged with the built-in ones: every leader that led for a second
/// got at least one write into the store.
struct EveryLeaderWrote;

impl Checker for EveryLeaderWrote {
    fn id(&self) -> &str {
        "every_leader_wrote"
    }

    fn check(&self, history: &History) -> PropertyReport {
        // (client, term) -> (entry of its belief's start, when it ended, writes accepted)
        let mut terms: BTreeMap<(String, i64), (usize, u64, usize)> = BTreeMap::new();
        for (index, entry) in history.entries.iter().enumerate() {
            match &entry.event {
                Event::Belief { token, phase: Phase::Start, .. } => {
                    terms.insert((entry.node.clone(), *token), (index, history.duration_ns, 0));
                }
                Event::Belief { token, phase: Phase::End, .. } => {
                    if let Some(term) = terms.get_mut(&(entry.node.clone(), *token)) {
                        term.1 = entry.time_ns;
                    }
                }
                Event::Resource { client, token, accepted: true, .. } => {
                    if let Some(term) = terms.get_mut(&(client.clone(), *token)) {
                        term.2 += 1;
                    }
                }
                _ => {}
            }
        }
        let findings: Vec<Finding> = terms
            .iter()
            .filter(|(_, (start, end, writes))| *writes == 0 && end - history.entries[*start].time_ns >= 1_000_000_000)
            .map(|((client, term), (start, end, _))| Finding {
                time_ns: history.entries[*start].time_ns,
                until_ns: Some(*end),
                message: format!("{client} led in term {term} for over a second and wrote nothing"),
                entries: vec![*start],
            })
            .collect();
        let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
        let summary = format!("{} terms, {} without a write", terms.len(), findings.len());
        PropertyReport { property: self.id().to_string(), verdict, summary, findings }
    }
}
