//! The safety checkers on small hand-written histories with written-down verdicts
//! (docs/cases/01 is the model: a stale holder's write after a newer holder's).

use coordsim_checker::history::{Call, Entry, Event, History, NodeInfo, NodeRole, Phase, Return};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;

/// Builds histories tersely: times in ms.
struct Builder {
    history: History,
    next_op: u64,
}

impl Builder {
    fn new() -> Self {
        let mut history = History::new("test", 1);
        history.duration_ns = 30_000_000_000;
        history.nodes = ["c1", "c2", "c9", "resource"]
            .iter()
            .map(|name| NodeInfo {
                name: name.to_string(),
                role: if *name == "resource" { NodeRole::Resource } else { NodeRole::Client },
            })
            .collect();
        Builder { history, next_op: 1 }
    }

    fn push(&mut self, ms: u64, node: &str, event: Event) -> &mut Self {
        self.history.entries.push(Entry { time_ns: ms * 1_000_000, node: node.into(), event });
        self
    }

    /// A lock operation invoked at `from` and granted at `to` with `token`.
    fn grant(&mut self, from: u64, to: u64, client: &str, token: i64) -> &mut Self {
        let op = self.next_op;
        self.next_op += 1;
        self.push(from, client, Event::Invoke { op, call: Call::Lock { name: "/l".into(), lease: 1, permits: 1 } });
        self.push(to, client, Event::Ok { op, ret: Return::Locked { key: format!("/l/{client}"), token } });
        self.belief(to, client, token, Phase::Start)
    }

    fn belief(&mut self, ms: u64, client: &str, token: i64, phase: Phase) -> &mut Self {
        self.push(ms, client, Event::Belief { lock: "/l".into(), token, phase, reason: None })
    }

    fn write(&mut self, ms: u64, client: &str, token: i64, accepted: bool) -> &mut Self {
        let event = Event::Resource {
            resource: "resource".into(),
            client: client.into(),
            token,
            value: format!("{client}@{ms}"),
            accepted,
            highest_before: 0,
        };
        self.push(ms, "resource", event)
    }

    fn verdict(&self, property: Property) -> Verdict {
        property.check(&self.history).verdict
    }
}

/// Case 01, unfenced: c1 (token 33) pauses, c2 (token 34) acquires and writes, c1 writes late.
fn case_01(stale_write_accepted: bool) -> Builder {
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 33).write(20, "c1", 33, true);
    b.grant(500, 6000, "c2", 34).write(6010, "c2", 34, true);
    b.write(11_000, "c1", 33, stale_write_accepted);
    b.belief(11_020, "c1", 33, Phase::End);
    b
}

#[test]
fn stale_holder_write_accepted_breaks_mutual_exclusion_and_fencing() {
    let b = case_01(true);
    assert_eq!(b.verdict(Property::MutualExclusion), Verdict::Fail);
    assert_eq!(b.verdict(Property::Fencing), Verdict::Fail);
}

#[test]
fn stale_holder_write_rejected_keeps_both() {
    let b = case_01(false);
    assert_eq!(b.verdict(Property::MutualExclusion), Verdict::Pass);
    assert_eq!(b.verdict(Property::Fencing), Verdict::Pass);
}

#[test]
fn mutual_exclusion_finding_names_holders_tokens_and_times() {
    let report = Property::MutualExclusion.check(&case_01(true).history);
    assert_eq!(report.findings.len(), 1);
    let message = &report.findings[0].message;
    for needle in ["c1", "token 33", "c2", "token 34", "11.000s", "6.000s"] {
        assert!(message.contains(needle), "{needle:?} missing from {message:?}");
    }
}

#[test]
fn dual_ownership_is_reported_but_never_fails() {
    let report = Property::DualOwnership.check(&case_01(false).history);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].time_ns, 6_000_000_000);
    assert_eq!(report.findings[0].until_ns, Some(11_020_000_000));
}

#[test]
fn sequential_holders_pass_everything() {
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 5).write(20, "c1", 5, true).write(30, "c1", 5, true);
    b.belief(40, "c1", 5, Phase::End);
    b.grant(15, 50, "c2", 7).write(60, "c2", 7, true);
    b.belief(70, "c2", 7, Phase::End);
    for property in Property::ALL {
        assert_eq!(b.verdict(property), Verdict::Pass, "{property}");
    }
    assert!(Property::DualOwnership.check(&b.history).findings.is_empty());
}

#[test]
fn older_grant_writing_after_newer_fails_mutual_exclusion_even_with_a_higher_token() {
    // A lock service with broken tokens: c2 is granted later but with a *lower* token. Fencing
    // by token cannot see it; mutual exclusion by grant order does.
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 9).write(20, "c1", 9, true);
    b.grant(30, 40, "c2", 3).write(50, "c2", 3, true);
    b.write(60, "c1", 9, true);
    assert_eq!(b.verdict(Property::MutualExclusion), Verdict::Fail);
    assert_eq!(b.verdict(Property::Fencing), Verdict::Fail, "c2's token 3 came after 9");
}

#[test]
fn grants_whose_replies_cross_are_ordered_by_token_not_by_reply_time() {
    // Seen in swarm-grant-without-lease-check (switch off, seed 10): c2's grant (token 27) is
    // made first, but c2 is paused and reads its reply 1 ms after c9 reads its own grant (token
    // 29), made after c2's lease ran out. The fenced resource accepts 27, then 29: ownership
    // moved forward in the service's order. The two lock calls overlap in true time, so their
    // replies say nothing about which grant came first; the tokens do.
    let mut b = Builder::new();
    b.grant(0, 6_001, "c2", 27);
    b.grant(100, 6_000, "c9", 29);
    b.write(6_002, "c2", 27, true).write(6_010, "c9", 29, true);
    assert_eq!(b.verdict(Property::MutualExclusion), Verdict::Pass);
    assert_eq!(b.verdict(Property::Fencing), Verdict::Pass);
}

#[test]
fn overlapping_grants_writing_against_token_order_fail_mutual_exclusion() {
    // The same two grants, the other way round at the resource: c9 (token 29) writes, then c2
    // writes with the older grant's token 27 to an unfenced resource.
    let mut b = Builder::new();
    b.grant(0, 6_001, "c2", 27);
    b.grant(100, 6_000, "c9", 29);
    b.write(6_002, "c9", 29, true).write(6_010, "c2", 27, true);
    assert_eq!(b.verdict(Property::MutualExclusion), Verdict::Fail);
}

#[test]
fn write_without_any_grant_fails_mutual_exclusion() {
    let mut b = Builder::new();
    b.write(10, "c9", 4, true);
    assert_eq!(b.verdict(Property::MutualExclusion), Verdict::Fail);
}

#[test]
fn history_round_trips_through_json() {
    let history = case_01(true).history;
    let parsed = History::from_json(&history.to_json()).unwrap();
    assert_eq!(parsed, history);
}

#[test]
fn history_with_wrong_schema_or_bad_json_is_an_error_not_a_panic() {
    let text = case_01(true).history.to_json().replace("coordsim-history/1", "coordsim-history/99");
    assert!(History::from_json(&text).unwrap_err().to_string().contains("schema"));
    let error = History::from_json("{\"schema\": ").unwrap_err().to_string();
    assert!(error.starts_with("line 1"), "{error}");
}

#[test]
fn impossible_histories_are_rejected_with_the_entry_and_field() {
    let good = case_01(true).history;
    let check = |mutate: &dyn Fn(&mut History), needle: &str| {
        let mut history = good.clone();
        mutate(&mut history);
        let error = History::from_json(&history.to_json()).unwrap_err().to_string();
        assert!(error.contains(needle), "{needle:?} missing from {error:?}");
    };
    check(&|h| h.entries.reverse(), "time_ns");
    check(&|h| h.entries[0].time_ns = h.duration_ns + 1, "after the end of the run");
    check(&|h| h.entries[0].node = "c77".into(), "\"c77\" is not in `nodes`");
    check(
        &|h| {
            for entry in &mut h.entries {
                if let Event::Resource { token, .. } = &mut entry.event {
                    *token = -5;
                }
            }
        },
        "negative",
    );
    check(
        &|h| h.entries.retain(|e| !matches!(e.event, Event::Belief { phase: Phase::Start, .. })),
        "ends without starting",
    );
    check(&|h| h.entries.retain(|e| !matches!(e.event, Event::Invoke { .. })), "without an open invocation");
}

#[test]
fn a_summary_is_not_mistaken_for_a_history() {
    let error = History::from_json("{\"schema\": \"coordsim-summary/1\", \"seed\": 3}").unwrap_err().to_string();
    assert!(error.contains("run summary"), "{error}");
}

fn fault(b: &mut Builder, from_ms: u64, to_ms: u64) {
    let targets = vec!["c1".to_string()];
    let kind = coordsim_checker::history::FaultKind::Pause;
    let detail = String::new();
    b.push(
        from_ms,
        "nemesis",
        Event::Fault { fault: 1, phase: Phase::Start, kind, targets: targets.clone(), detail: detail.clone() },
    );
    b.push(to_ms, "nemesis", Event::Fault { fault: 1, phase: Phase::End, kind, targets, detail });
}

#[test]
fn progress_needs_a_grant_after_the_faults_stop() {
    let mut stuck = Builder::new();
    stuck.grant(0, 10, "c1", 5);
    stuck.belief(500, "c1", 5, Phase::End);
    fault(&mut stuck, 1000, 12_000);
    assert_eq!(stuck.verdict(Property::Progress), Verdict::Fail);

    let mut moving = Builder::new();
    moving.grant(0, 10, "c1", 5);
    fault(&mut moving, 1000, 12_000);
    moving.grant(12_500, 13_000, "c2", 9);
    assert_eq!(moving.verdict(Property::Progress), Verdict::Pass);
}

#[test]
fn progress_is_unknown_when_the_fault_free_tail_is_too_short() {
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 5);
    fault(&mut b, 1000, 27_000); // the run lasts 30 s: 3 s without faults
    b.grant(27_500, 28_000, "c2", 9);
    assert_eq!(b.verdict(Property::Progress), Verdict::Unknown);
}

#[test]
fn progress_counts_a_holder_that_holds_through_the_fault_free_tail() {
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 5);
    fault(&mut b, 1000, 12_000);
    assert_eq!(b.verdict(Property::Progress), Verdict::Pass, "c1 still holds the lock");
    b.belief(11_000, "c1", 5, Phase::End);
    assert_eq!(b.verdict(Property::Progress), Verdict::Fail, "released before the tail, never granted again");
}

// Grants of the clients' own recipes: a lock no `lock` call names is granted by its beliefs.

/// Case 01 with a lock of the clients' own: no `lock` calls, only beliefs with their tokens.
fn own_lock_case_01(stale_write_accepted: bool) -> Builder {
    let mut b = Builder::new();
    b.belief(10, "c1", 33, Phase::Start).write(20, "c1", 33, true);
    b.belief(6000, "c2", 34, Phase::Start).write(6010, "c2", 34, true);
    b.write(11_000, "c1", 33, stale_write_accepted);
    b.belief(11_020, "c1", 33, Phase::End);
    b
}

#[test]
fn an_own_locks_beliefs_are_its_grants_for_mutual_exclusion() {
    // Sequential holders of an own lock: every accepted write has its grant.
    let mut b = Builder::new();
    b.belief(10, "c1", 5, Phase::Start).write(20, "c1", 5, true).belief(40, "c1", 5, Phase::End);
    b.belief(50, "c2", 7, Phase::Start).write(60, "c2", 7, true).belief(70, "c2", 7, Phase::End);
    let report = Property::MutualExclusion.check(&b.history);
    assert_eq!(report.verdict, Verdict::Pass, "{report:?}");
    assert!(report.summary.contains("own recipes, from their beliefs: 2"), "{}", report.summary);
    assert_eq!(b.verdict(Property::Fencing), Verdict::Pass);

    // The stale holder's late write accepted: two holders wrote, named as own grants.
    let report = Property::MutualExclusion.check(&own_lock_case_01(true).history);
    assert_eq!(report.verdict, Verdict::Fail);
    let message = &report.findings[0].message;
    for needle in ["c1 (token 33, c1's own grant, believed from 0.010s)", "c2 (token 34, c2's own grant", "two holders"]
    {
        assert!(message.contains(needle), "{needle:?} missing from {message:?}");
    }
    assert_eq!(own_lock_case_01(false).verdict(Property::MutualExclusion), Verdict::Pass);
}

#[test]
fn an_own_grant_is_ordered_by_its_token_not_by_when_it_was_believed() {
    // c1 was granted token 33 but paused before it recorded the belief: it believes only at 8 s,
    // after c2 (token 34) wrote. Its late write is still the older grant's.
    let mut b = Builder::new();
    b.belief(6000, "c2", 34, Phase::Start).write(6010, "c2", 34, true);
    b.belief(8000, "c1", 33, Phase::Start).write(8010, "c1", 33, true);
    assert_eq!(b.verdict(Property::MutualExclusion), Verdict::Fail);
}

#[test]
fn a_belief_is_no_grant_for_a_lock_the_service_granted() {
    // c9 believes in /l with token 4 but the service's lock calls on /l never gave it 4.
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 3).belief(20, "c1", 3, Phase::End);
    b.belief(30, "c9", 4, Phase::Start).write(40, "c9", 4, true);
    let report = Property::MutualExclusion.check(&b.history);
    assert_eq!(report.verdict, Verdict::Fail);
    assert!(report.findings[0].message.contains("no lock grant in the history gave c9"), "{report:?}");
}

#[test]
fn progress_judges_an_own_lock_by_its_beliefs() {
    // Before: no `lock` call, so nothing was judged and a hung queue passed.
    let mut hung = Builder::new();
    hung.belief(10, "c1", 5, Phase::Start).belief(500, "c1", 5, Phase::End);
    fault(&mut hung, 1000, 12_000);
    let report = Property::Progress.check(&hung.history);
    assert_eq!(report.verdict, Verdict::Fail, "{report:?}");

    let mut moving = Builder::new();
    moving.belief(10, "c1", 5, Phase::Start).belief(500, "c1", 5, Phase::End);
    fault(&mut moving, 1000, 12_000);
    moving.belief(13_000, "c2", 9, Phase::Start);
    assert_eq!(moving.verdict(Property::Progress), Verdict::Pass);
}

/// The registry is the one list of properties: in the order of `Property`'s variants (what
/// `Property::spec` indexes by), one id each, and what can be judged on a real cluster's history
/// follows from what each property needs.
#[test]
fn the_registry_lists_each_property_once_in_order() {
    use coordsim_checker::properties::{ByDefault, Needs, REGISTRY};
    for (i, spec) in REGISTRY.iter().enumerate() {
        assert_eq!(spec.property as usize, i, "{} out of place", spec.id);
        assert_eq!(Property::from_id(spec.id), Some(spec.property));
        assert_eq!(spec.property.id(), spec.id);
    }
    let ids: std::collections::BTreeSet<&str> = REGISTRY.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), REGISTRY.len(), "ids are unique");
    let outside: Vec<&str> = Property::FROM_OUTSIDE.iter().map(|p| p.id()).collect();
    assert_eq!(
        outside,
        [
            "mutual_exclusion",
            "fencing",
            "single_holder",
            "progress",
            "dual_ownership",
            "linearizable",
            "durability",
            "herd",
            "fairness"
        ]
    );
    assert!(Property::FROM_OUTSIDE.iter().all(|p| p.spec().needs == Needs::ClientRecords));
    let informational: Vec<&str> =
        REGISTRY.iter().filter(|s| s.by_default == ByDefault::Informational).map(|s| s.id).collect();
    assert_eq!(informational, ["dual_ownership"]);
    assert!(Property::DualOwnership.is_informational() && !Property::Herd.is_informational());
}
