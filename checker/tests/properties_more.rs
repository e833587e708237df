//! The checkers of issue 5 beyond the resource's safety (lease liveness, grant to a live lease,
//! linearizability of key-value operations, watch streams, durability, herd, fairness) on small
//! hand-written histories, each with its verdict and what the report must say written down. The
//! cases come from docs/cases (02, 04, 05, 10) and the rules in each checker's module
//! documentation.

use coordsim_checker::history::{
    Call, ChangeKind, ConnectionState, Entry, Event, FaultKind, History, LeaseObservation, NodeInfo, NodeRole, Phase,
    RaftRole, Return, ServiceTiming, WatchEndReason, WatchedChange,
};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::{PropertyReport, Verdict};

/// Builds histories tersely: times in ms; a 30 s run with servers s1..s3, clients c1..c4.
struct Builder {
    history: History,
    next_op: u64,
}

impl Builder {
    fn new() -> Self {
        let mut history = History::new("test", 1);
        history.duration_ns = 30_000_000_000;
        let servers = ["s1", "s2", "s3"].map(|n| (n, NodeRole::Server));
        let clients = ["c1", "c2", "c3", "c4"].map(|n| (n, NodeRole::Client));
        history.nodes =
            servers.into_iter().chain(clients).map(|(name, role)| NodeInfo { name: name.to_string(), role }).collect();
        Builder { history, next_op: 1 }
    }

    fn push(&mut self, ms: u64, node: &str, event: Event) -> &mut Self {
        self.history.entries.push(Entry { time_ns: ms * 1_000_000, node: node.into(), event });
        // Entries are written in whatever order reads best; the history is kept in time order.
        self.history.entries.sort_by_key(|e| e.time_ns);
        self
    }

    /// An operation invoked at `from` that completes at `to` with `end` (`None`: never).
    fn op(&mut self, from: u64, to: u64, client: &str, call: Call, end: Option<End>) -> u64 {
        let op = self.next_op;
        self.next_op += 1;
        self.push(from, client, Event::Invoke { op, call });
        match end {
            Some(End::Ok(ret)) => self.push(to, client, Event::Ok { op, ret }),
            Some(End::Fail) => self.push(to, client, Event::Fail { op, error: "failed".into() }),
            Some(End::Info) => self.push(to, client, Event::Info { op, error: "timed out".into() }),
            None => self,
        };
        op
    }

    fn report(&self, property: Property) -> PropertyReport {
        self.history.validate().expect("test histories are valid");
        property.check(&self.history)
    }

    fn verdict(&self, property: Property) -> Verdict {
        self.report(property).verdict
    }

    // Leases and locks.

    fn lease(&mut self, from: u64, to: u64, client: &str, lease: i64, ttl_ms: u64) -> &mut Self {
        self.op(from, to, client, Call::LeaseGrant { ttl_ms }, Some(End::Ok(Return::LeaseGranted { lease, ttl_ms })));
        self
    }

    fn keepalive(&mut self, from: u64, to: u64, client: &str, lease: i64, end: Option<End>) -> &mut Self {
        self.op(from, to, client, Call::LeaseKeepAlive { lease }, end);
        self
    }

    fn expiry(&mut self, ms: u64, lease: i64) -> &mut Self {
        self.push(ms, "s1", Event::LeaseExpiry { lease, latest_ns: None })
    }

    /// An expiry observed by polling: the lease was seen alive just before `ms`, gone at `latest`.
    fn polled_expiry(&mut self, ms: u64, latest: u64, lease: i64) -> &mut Self {
        self.push(ms, "s1", Event::LeaseExpiry { lease, latest_ns: Some(latest * 1_000_000) })
    }

    fn leader(&mut self, ms: u64, server: &str, term: u64) -> &mut Self {
        self.push(ms, server, Event::Role { role: RaftRole::Leader, term })
    }

    fn lock(&mut self, from: u64, to: u64, client: &str, lease: i64, end: Option<End>) -> &mut Self {
        self.op(from, to, client, Call::Lock { name: "/l".into(), lease, permits: 1 }, end);
        self
    }

    fn grant(&mut self, from: u64, to: u64, client: &str, lease: i64, token: i64) -> &mut Self {
        let ret = Return::Locked { key: format!("/l/{client}"), token };
        self.lock(from, to, client, lease, Some(End::Ok(ret)))
    }

    fn unlock(&mut self, from: u64, to: u64, client: &str) -> &mut Self {
        let call = Call::Unlock { name: "/l".into(), key: format!("/l/{client}") };
        self.op(from, to, client, call, Some(End::Ok(Return::Unlocked)));
        self
    }

    fn wakeup(&mut self, ms: u64, client: &str) -> &mut Self {
        self.push(ms, client, Event::Wakeup { lock: "/l".into(), waiter: format!("/l/{client}") })
    }

    fn fault(&mut self, from: u64, to: u64, id: u64, kind: FaultKind, targets: &[&str]) -> &mut Self {
        let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        let start =
            Event::Fault { fault: id, phase: Phase::Start, kind, targets: targets.clone(), detail: String::new() };
        self.push(from, "nemesis", start);
        self.push(to, "nemesis", Event::Fault { fault: id, phase: Phase::End, kind, targets, detail: String::new() })
    }

    // Key-value operations.

    fn put(&mut self, from: u64, to: u64, client: &str, key: &str, value: &str, revision: i64) -> u64 {
        let call = Call::Put { key: key.into(), value: value.into() };
        self.op(from, to, client, call, Some(End::Ok(Return::Put { revision })))
    }

    fn get(&mut self, from: u64, to: u64, client: &str, key: &str, value: Option<&str>) -> u64 {
        let ret = Return::Got { value: value.map(str::to_string), revision: 0 };
        self.op(from, to, client, Call::Get { key: key.into() }, Some(End::Ok(ret)))
    }

    fn delete(&mut self, from: u64, to: u64, client: &str, key: &str, count: u64, revision: i64) -> u64 {
        self.op(from, to, client, Call::Delete { key: key.into() }, Some(End::Ok(Return::Deleted { count, revision })))
    }

    // Watches.

    fn watch(&mut self, ms: u64, watch: u64, key: &str, prefix: bool, start_revision: i64) -> &mut Self {
        self.push(ms, "c4", Event::WatchStart { watch, key: key.into(), prefix, start_revision })
    }

    fn deliver(&mut self, ms: u64, watch: u64, changes: &[(i64, &str, ChangeKind, Option<&str>)]) -> &mut Self {
        let events = changes
            .iter()
            .map(|&(revision, key, kind, value)| WatchedChange {
                revision,
                key: key.into(),
                kind,
                value: value.map(str::to_string),
            })
            .collect();
        self.push(ms, "c4", Event::WatchEvents { watch, events })
    }
}

enum End {
    Ok(Return),
    Fail,
    Info,
}

fn ok(ret: Return) -> Option<End> {
    Some(End::Ok(ret))
}

fn assert_mentions(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "{needle:?} missing from {text:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// lease_liveness (docs/cases/04): expiry within TTL + bound after the last possible renewal.
// Bound: TTL (leader's clock) + 50 ms tick + 300 ms election + 250 ms commit = TTL + 600 ms.

/// c1 takes a 5 s lease and renews it once (ok at 1.010 s), then goes silent.
fn silent_owner() -> Builder {
    let mut b = Builder::new();
    b.leader(0, "s1", 1);
    b.lease(0, 10, "c1", 1, 5000).keepalive(1000, 1010, "c1", 1, ok(Return::LeaseKeptAlive { ttl_ms: 5000 }));
    b
}

#[test]
fn lease_liveness_passes_an_expiry_within_ttl_plus_the_bound() {
    let mut b = silent_owner();
    b.expiry(6500, 1); // deadline 1.010 + 5 + 0.05 = 6.060 s; limit 6.610 s
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_mentions(&report.summary, &["1 expired within their bound", "worst delay 490 ms past the TTL"]);
}

#[test]
fn lease_liveness_fails_an_expiry_past_the_bound_and_says_by_how_much() {
    let mut b = silent_owner();
    b.expiry(9000, 1);
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings.len(), 1);
    assert_mentions(&report.findings[0].message, &["lease 1 of c1 expired at 9.000s", "2390 ms past its bound 6.610s"]);
    assert_mentions(&report.summary, &["worst delay 2990 ms"]);
}

/// The bound is made of the service's timing the history carries: the same expiry, 2.39 s
/// late for the simulator's servers, is within the bound of a real etcd cluster's (a 500 ms
/// expiry tick, a 1-2 s election timeout).
#[test]
fn lease_liveness_reads_the_services_timing_from_the_history() {
    let mut b = silent_owner();
    b.expiry(9000, 1);
    assert_eq!(b.history.service_timing(), ServiceTiming::SIMULATED, "no header: the simulator's servers");
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Fail);
    b.history.service_timing = Some(ServiceTiming {
        heartbeat_ms: 100,
        election_timeout_min_ms: 1000,
        election_timeout_max_ms: 2000,
        lease_expiry_tick_ms: 500,
        lease_promotion_extend_ms: 1000,
        renewal_relay_ms: 0,
    });
    // Deadline 1.010 + 5 + 0.5 = 6.510 s; limit + 2 s election + 250 ms commit = 8.760 s.
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Fail, "{}", report.summary);
    assert_mentions(&report.findings[0].message, &["240 ms past its bound 8.760s"]);
    assert_mentions(&report.summary, &["500 ms tick + 2000 ms election"]);
    b.history.entries.retain(|e| !matches!(e.event, Event::LeaseExpiry { .. }));
    b.expiry(8700, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass);
}

#[test]
fn lease_liveness_fails_a_lease_still_alive_at_the_end_and_passes_a_revoked_one() {
    let b = silent_owner();
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["still alive at the end of the run"]);

    let mut revoked = silent_owner();
    revoked.op(2000, 2010, "c1", Call::LeaseRevoke { lease: 1 }, ok(Return::LeaseRevoked));
    assert_eq!(revoked.verdict(Property::LeaseLiveness), Verdict::Pass, "released by its owner");
}

/// Seen on swarm-grant-without-lease-check seed 217 with the switch off: c1 is paused just after
/// sending its grant; the leader grants, checkpoints and expires the lease before the reply
/// reaches c1 at 4 s. The expiry belongs to the lease all the same.
fn grant_answered_after_the_expiry() -> Builder {
    let mut b = Builder::new();
    b.leader(0, "s1", 1);
    b.lease(0, 4000, "c1", 1, 1000);
    b.push(400, "s1", Event::LeaseCheckpoint { lease: 1, remaining_ms: 650 });
    b
}

#[test]
fn an_expiry_recorded_before_the_grants_reply_counts() {
    let mut b = grant_answered_after_the_expiry();
    b.expiry(1080, 1);
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
    assert_mentions(&report.summary, &["1 expired within their bound"]);
    assert_eq!(b.verdict(Property::LeaseSafety), Verdict::Pass, "1 s after the grant was sent");
    assert_eq!(b.verdict(Property::SpuriousExpiry), Verdict::Fail, "no fault: the owner ran, its lease expired");

    let mut early = grant_answered_after_the_expiry();
    early.expiry(700, 1);
    assert_eq!(early.verdict(Property::LeaseSafety), Verdict::Fail, "700 ms after the grant was sent, TTL 1 s");
}

#[test]
fn lease_liveness_counts_an_unacknowledged_keepalive_as_a_renewal() {
    // The keepalive sent at 3 s timed out at 4 s: it may have reached the leader until then.
    let mut b = silent_owner();
    b.keepalive(3000, 4000, "c1", 1, Some(End::Info)).expiry(9500, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass, "limit 4 + 5.05 + 0.55 = 9.6 s");
    let mut failed = silent_owner();
    failed.keepalive(3000, 4000, "c1", 1, Some(End::Fail)).expiry(9500, 1);
    assert_eq!(failed.verdict(Property::LeaseLiveness), Verdict::Fail, "a failed keepalive renewed nothing");
}

#[test]
fn lease_liveness_fails_a_full_ttl_restart_at_a_leader_change() {
    // s2 is elected at 5 s. The last point is the renewal at 1.01 s, 3.99 s before: 0.99 s past
    // the 3 s staleness allowance, so s2 may continue from 4.01 s, plus the 150 ms promotion
    // extension: deadline 9.21 s, limit 9.76 s. A stock etcd restarts it at its full TTL
    // (expiry about 10.2 s): that fails.
    let mut b = silent_owner();
    b.leader(5000, "s2", 2).expiry(9_500, 1);
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
    assert_mentions(&report.summary, &["1 leader changes"]);
    let mut reset = silent_owner();
    reset.leader(5000, "s2", 2).expiry(10_400, 1);
    let report = reset.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["640 ms past its bound 9.760s", "1 leader changes"]);
    let mut no_change = silent_owner();
    no_change.expiry(9_500, 1);
    assert_eq!(no_change.verdict(Property::LeaseLiveness), Verdict::Fail, "limit 6.61 s");
}

#[test]
fn lease_liveness_holds_a_new_leader_to_the_last_checkpoint() {
    // Checkpoint at 3 s: 3 s left. s2 takes over at 5 s: it must continue from 3 s (deadline
    // 8.2 s with the extension, limit 8.75 s), not restart at 5 s (docs/cases/04's bug, 10.2 s).
    let mut b = silent_owner();
    b.push(3000, "s1", Event::LeaseCheckpoint { lease: 1, remaining_ms: 3000 }).leader(5000, "s2", 2);
    let mut fixed = Builder { history: b.history.clone(), next_op: b.next_op };
    fixed.expiry(8100, 1);
    assert_eq!(fixed.verdict(Property::LeaseLiveness), Verdict::Pass);
    b.expiry(10_100, 1);
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["1350 ms past its bound 8.750s", "1 leader changes"]);
}

#[test]
fn lease_liveness_counts_from_the_lessors_promotion_not_the_election() {
    // s2 is elected at 5 s but paused right after; its lessor takes over (the lease's 3 s
    // countdown resumes) at 8 s, after its first commit: deadline 11.2 s, limit 11.75 s
    // (sim/src/server follow_role; seed 28 of swarm-deposed-leader-expires-leases). The
    // checkpoint is aged to the election (2 s old: within the allowance), not to the promotion.
    let mut b = silent_owner();
    b.push(3000, "s1", Event::LeaseCheckpoint { lease: 1, remaining_ms: 3000 }).leader(5000, "s2", 2);
    b.fault(5010, 7000, 1, FaultKind::Pause, &["s2"]).push(8000, "s2", Event::LessorPromoted { term: 2 });
    let mut late = Builder { history: b.history.clone(), next_op: b.next_op };
    b.expiry(11_300, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass);
    late.expiry(11_800, 1);
    assert_eq!(late.verdict(Property::LeaseLiveness), Verdict::Fail);
}

#[test]
fn lease_liveness_lets_a_keepalive_wait_through_chained_pauses_of_the_server() {
    // The keepalive sent at 3 s timed out at 4 s; s1 was paused from 3.5 s to 6 s and again,
    // before it ran, from 5.9 s to 9 s: it handles the request at 9 s, renewing until 14.05 s
    // (limit 14.6 s; seed 578 of swarm-deposed-leader-expires-leases). Counting only the
    // first pause would put the limit at 11.6 s.
    let mut b = silent_owner();
    b.keepalive(3000, 4000, "c1", 1, Some(End::Info));
    b.fault(3500, 6000, 1, FaultKind::Pause, &["s1"]).fault(5900, 9000, 2, FaultKind::Pause, &["s1"]);
    b.expiry(14_300, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass);
}

#[test]
fn lease_liveness_does_not_move_an_acknowledged_renewal_past_its_answer() {
    // The keepalive answered at 1.01 s renewed the lease by then, even though a follower was
    // paused from 0.9 s to 3 s: the pause gives the revocation time (until 4 s) but does not
    // make the acknowledged renewal later (it would put the limit at 3 + 5.05 + 0.55 = 8.6 s).
    let mut b = silent_owner();
    b.fault(900, 3000, 1, FaultKind::Pause, &["s2"]).expiry(6500, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass);
    let mut late = silent_owner();
    late.fault(900, 3000, 1, FaultKind::Pause, &["s2"]).expiry(7500, 1);
    assert_eq!(late.verdict(Property::LeaseLiveness), Verdict::Fail, "limit 6.61 s");
}

#[test]
fn lease_liveness_counts_a_renewal_as_a_checkpoint_of_a_full_ttl() {
    // The checkpoint at 0.5 s said 4.5 s; the renewal at 1.01 s cleared it, so s2, elected at
    // 3 s, continues from a full 5 s: deadline 8.2 s, limit 8.75 s (the checkpoint alone would
    // give 7.7 s and 8.25 s).
    let mut b = silent_owner();
    b.push(500, "s1", Event::LeaseCheckpoint { lease: 1, remaining_ms: 4500 }).leader(3000, "s2", 2);
    b.expiry(8_500, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass);
    b.expiry(8_900, 7); // another lease's expiry changes nothing for lease 1
    let mut late = silent_owner();
    late.push(500, "s1", Event::LeaseCheckpoint { lease: 1, remaining_ms: 4500 }).leader(3000, "s2", 2);
    late.expiry(8_900, 1);
    assert_eq!(late.verdict(Property::LeaseLiveness), Verdict::Fail);
}

#[test]
fn lease_liveness_reads_ttl_on_the_leaders_clock() {
    // s1's clock runs at half speed: 5.05 s of its time take 10.1 s. Late in true time, on time
    // by design.
    let mut b = silent_owner();
    b.push(0, "s1", Event::Clock { local_ns: 0, rate_ppm: 500_000, clock: Default::default() }).expiry(11_500, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass, "deadline 1.01 + 10.1 = 11.11 s");
    let mut true_time = silent_owner();
    true_time.expiry(11_500, 1);
    assert_eq!(true_time.verdict(Property::LeaseLiveness), Verdict::Fail);
}

#[test]
fn lease_liveness_owes_nothing_while_the_servers_cannot_commit() {
    // The servers are cut from each other from 3 s to 12 s: no revocation can commit.
    let mut b = silent_owner();
    b.fault(3000, 12_000, 1, FaultKind::Partition, &["s1", "s2", "s3"]).expiry(12_300, 1);
    assert_eq!(b.verdict(Property::LeaseLiveness), Verdict::Pass);
    // A partition that only cuts a client off blocks no commit.
    let mut clients_only = silent_owner();
    clients_only.fault(3000, 12_000, 1, FaultKind::Partition, &["c2"]).expiry(12_300, 1);
    assert_eq!(clients_only.verdict(Property::LeaseLiveness), Verdict::Fail);
}

// ---------------------------------------------------------------------------------------------
// spurious_expiry: a session timeout too short for the network.

#[test]
fn spurious_expiry_fails_a_live_owners_lease_lost_to_latency_alone() {
    // c1 renews at 1 s, then a latency spike on the whole network (no targets) eats its
    // keepalives and the lease expires at 6.5 s: c1 never crashed, paused or was cut off.
    let mut b = silent_owner();
    b.keepalive(2700, 3200, "c1", 1, Some(End::Info)).keepalive(4400, 4900, "c1", 1, Some(End::Info));
    b.fault(2000, 6000, 1, FaultKind::Latency, &[]).expiry(6500, 1);
    let report = b.report(Property::SpuriousExpiry);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["lease 1 of c1", "expired at 6.500s", "network"]);
    assert_mentions(&report.summary, &["the TTL is too short for the network"]);
}

#[test]
fn spurious_expiry_fails_a_live_owner_that_stopped_renewing_and_says_so() {
    // Self-eviction: c1's renewal at 1 s is answered in 10 ms, then c1 sends nothing (it renews
    // only between holds and is holding); no fault anywhere; the lease expires at 6.1 s.
    let mut b = silent_owner();
    b.expiry(6100, 1);
    let report = b.report(Property::SpuriousExpiry);
    assert_eq!(report.verdict, Verdict::Fail);
    let message = &report.findings[0].message;
    assert_mentions(
        message,
        &["lease 1 of c1", "sent no renewal in its last TTL (the last at 1.000s)", "stopped renewing"],
    );
    assert!(!message.contains("network"), "{message}");
    assert_mentions(&report.summary, &["0 lost to the network", "1 let lapse", "self-eviction"]);
    // A renewal sent in the lease's last TTL and left unanswered is the network's, not a lapse.
    let mut unanswered = silent_owner();
    unanswered.keepalive(2000, 2500, "c1", 1, Some(End::Info)).expiry(6100, 1);
    assert_mentions(&unanswered.report(Property::SpuriousExpiry).findings[0].message, &["network"]);
}

#[test]
fn spurious_expiry_excuses_a_crash_a_fault_on_the_owner_or_on_the_servers() {
    let cases: [(FaultKind, &[&str]); 3] =
        [(FaultKind::Crash, &["c1"]), (FaultKind::Pause, &["c1"]), (FaultKind::Partition, &["s1", "s2", "s3"])];
    for (kind, targets) in cases {
        let mut b = silent_owner();
        b.fault(2000, 4000, 1, kind, targets).expiry(6500, 1);
        assert_eq!(b.verdict(Property::SpuriousExpiry), Verdict::Pass, "{kind:?} on {targets:?}");
    }
    // A fault on someone else, long before the lease's last TTL, excuses nothing.
    let mut other = silent_owner();
    other.fault(1000, 1200, 1, FaultKind::Pause, &["c2"]).fault(2000, 3000, 2, FaultKind::Pause, &["c2"]);
    other.expiry(6500, 1);
    assert_eq!(other.verdict(Property::SpuriousExpiry), Verdict::Fail);
    // A lease its owner revoked never expired.
    let mut revoked = silent_owner();
    revoked.op(2000, 2010, "c1", Call::LeaseRevoke { lease: 1 }, ok(Return::LeaseRevoked));
    assert_eq!(revoked.verdict(Property::SpuriousExpiry), Verdict::Pass);
}

#[test]
fn spurious_expiry_excuses_a_fault_that_cut_off_renewals_before_a_new_leader_restarted_the_ttl() {
    // c1's last acknowledged renewal is at 1.010 s; the servers are cut from each other from
    // 1.5 s to 5.9 s, c1's keepalives go unanswered and it gives the session up; a new leader
    // takes over at 7 s and restarts the lease's 5 s, which expires at 12 s: 6.1 s after the
    // fault ended, longer than TTL + 1 s, but the fault is what cut the renewals off (seen on
    // swarm-deposed-leader-expires-leases seed 539 with the switch off).
    let mut b = silent_owner();
    b.keepalive(2700, 3700, "c1", 1, Some(End::Info));
    b.fault(1500, 5900, 1, FaultKind::Partition, &["s1", "s2", "s3"]).leader(7000, "s2", 2).expiry(12_000, 1);
    let report = b.report(Property::SpuriousExpiry);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.findings);
    // Without the fault, nothing excuses it.
    let mut no_fault = silent_owner();
    no_fault.keepalive(2700, 3700, "c1", 1, Some(End::Info)).leader(7000, "s2", 2).expiry(12_000, 1);
    assert_eq!(no_fault.verdict(Property::SpuriousExpiry), Verdict::Fail);
    // A fault on the servers before the last acknowledged renewal excuses nothing either.
    let mut before = Builder::new();
    before.leader(0, "s1", 1).lease(0, 10, "c1", 1, 5000);
    before.fault(100, 900, 1, FaultKind::Partition, &["s1", "s2", "s3"]);
    before.keepalive(4000, 4010, "c1", 1, ok(Return::LeaseKeptAlive { ttl_ms: 5000 })).expiry(12_000, 1);
    assert_eq!(before.verdict(Property::SpuriousExpiry), Verdict::Fail);
}

#[test]
fn spurious_expiry_excuses_a_lease_its_owner_abandoned_for_a_new_one_while_it_was_alive() {
    // Seed 7903 of swarm-deposed-leader-expires-leases (switch off), distilled: c1's renewal at
    // 1 s is answered; at 2 s its keepalive goes unanswered and, its lock call having timed out,
    // c1 starts a new session (lease 2 at 2.2 s, 1.2 s after the answered renewal: lease 1 was
    // alive by c1's own count). Lease 1 expires a TTL after the last keepalive: the end c1 chose.
    let mut b = silent_owner();
    b.keepalive(2000, 0, "c1", 1, None).lease(2200, 2230, "c1", 2, 5000);
    b.keepalive(3230, 3240, "c1", 2, ok(Return::LeaseKeptAlive { ttl_ms: 5000 })).expiry(7050, 1);
    let report = b.report(Property::SpuriousExpiry);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.findings);
    assert_mentions(&report.summary, &["abandoned by its owner for a new one (1)"]);
    // A new session taken after the old lease was lost by the owner's own count (no answer for
    // a whole TTL) is the loss itself, not a choice: still judged.
    let mut lost = silent_owner();
    lost.keepalive(2000, 3000, "c1", 1, Some(End::Info)).keepalive(4000, 5000, "c1", 1, Some(End::Info));
    lost.lease(6100, 6130, "c1", 2, 5000).expiry(9100, 1);
    assert_eq!(lost.verdict(Property::SpuriousExpiry), Verdict::Fail);
    // Nor does a lease of another client excuse anything, nor a grant after the expiry.
    let mut other = silent_owner();
    other.keepalive(2000, 0, "c1", 1, None).lease(2200, 2230, "c2", 2, 5000).expiry(7050, 1);
    assert_eq!(other.verdict(Property::SpuriousExpiry), Verdict::Fail);
    let mut after = silent_owner();
    after.keepalive(2000, 0, "c1", 1, None).expiry(7050, 1).lease(7100, 7130, "c1", 2, 5000);
    assert_eq!(after.verdict(Property::SpuriousExpiry), Verdict::Fail);
}

/// A history the simulator recorded, kept in tests/data/histories (SOURCE.md there says which).
fn recorded(file: &str) -> History {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/histories").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    History::from_json(&text).expect("a recorded history")
}

#[test]
fn spurious_expiry_passes_the_recorded_history_of_seed_7903() {
    // The run that found the rule above, as the simulator recorded it (35 s, 338 entries).
    let history = recorded("swarm-deposed-leader-expires-leases-7903.json");
    let report = Property::SpuriousExpiry.check(&history);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.findings);
    assert_mentions(&report.summary, &["abandoned by its owner for a new one"]);
}

#[test]
fn lease_liveness_passes_trivially_without_leases() {
    let report = Builder::new().report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.summary, "no leases granted in this history");
}

// ---------------------------------------------------------------------------------------------
// grant_live_lease (docs/cases/02): no grant to a lease that had already expired.

/// c1 holds (lease 1, token 2); c2 asks at 0.8 s under lease 2 and waits; lease 2 expires at
/// 5.86 s; c1 releases at `release_ms`; c2's lock returns at 10.001 s with token 3.
fn waiter_expires(release_ms: u64) -> Builder {
    let mut b = Builder::new();
    b.grant(500, 510, "c1", 1, 2).lock(800, 10_001, "c2", 2, ok(Return::Locked { key: "/l/c2".into(), token: 3 }));
    b.expiry(5860, 2).unlock(release_ms, release_ms + 10, "c1");
    b
}

#[test]
fn grant_live_lease_fails_a_grant_that_came_after_the_waiters_lease_expired() {
    let report = waiter_expires(8600).report(Property::GrantLiveLease);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings.len(), 1);
    assert_mentions(
        &report.findings[0].message,
        &["c2 was granted /l (token 3) at 10.001s under lease 2", "expired at 5.860s", "c1's release", "8.600s"],
    );
}

#[test]
fn grant_live_lease_allows_an_expiry_the_grant_may_have_preceded() {
    // c1 released at 5 s: c2 may have been granted then, before its lease expired at 5.86 s,
    // and learned of it late. Ambiguous, so allowed; counted in the summary.
    let report = waiter_expires(5000).report(Property::GrantLiveLease);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_mentions(&report.summary, &["2 grants, none to an expired lease", "1 leases expired between"]);
}

#[test]
fn grant_live_lease_fails_a_request_made_under_an_already_expired_lease() {
    let mut b = Builder::new();
    b.expiry(100, 7).grant(200, 300, "c3", 7, 4);
    let report = b.report(Property::GrantLiveLease);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["no earlier than the request at 0.200s"]);
}

// ---------------------------------------------------------------------------------------------
// The lease properties on leases observed from outside (a real cluster, polled): each expiry is
// known within an interval, and a finding must hold for every time in it.

/// What a real etcd run's header says of its leases: polled every 100 ms, renewals journaled, the
/// last answer at `until_ms`.
fn observed(b: &mut Builder, until_ms: u64) {
    b.history.recorded_on = Some("real etcd".into());
    b.history.lease_observation =
        Some(LeaseObservation { poll_ms: 100, until_ns: until_ms * 1_000_000, renewals_recorded: true });
}

#[test]
fn lease_safety_fails_an_observed_expiry_only_if_it_is_early_for_every_time_in_its_interval() {
    // A keepalive sent at 1 s renews a 5 s lease to 6 s at least.
    let renewed = || {
        let mut b = Builder::new();
        b.lease(0, 10, "c1", 1, 5000).keepalive(1000, 1010, "c1", 1, ok(Return::LeaseKeptAlive { ttl_ms: 5000 }));
        observed(&mut b, 29_900);
        b
    };
    // Seen alive at 5.9 s, gone at 6.1 s: it may have expired at 6.05 s, on time.
    let mut straddles = renewed();
    straddles.polled_expiry(5900, 6100, 1);
    let report = straddles.report(Property::LeaseSafety);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
    assert_mentions(&report.summary, &["observed from outside every 100 ms"]);
    // Gone already at 5.95 s: early whatever the moment was.
    let mut early = renewed();
    early.polled_expiry(5700, 5950, 1);
    let report = early.report(Property::LeaseSafety);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["expired between 5.700s and 5.950s", "50 ms early"]);
    // The same times as the leader's own exact record at 5.9 s: early.
    let mut exact = renewed();
    exact.history.lease_observation = None;
    exact.expiry(5900, 1);
    assert_eq!(exact.verdict(Property::LeaseSafety), Verdict::Fail);
}

#[test]
fn lease_safety_fails_a_keepalive_acknowledged_within_or_after_an_observed_expirys_interval() {
    let polled = || {
        let mut b = Builder::new();
        b.lease(0, 10, "c1", 1, 2000).polled_expiry(3000, 3100, 1);
        observed(&mut b, 29_900);
        b
    };
    // Unanswered keepalives say nothing.
    let mut unanswered = polled();
    unanswered.keepalive(3050, 3500, "c1", 1, Some(End::Info));
    assert_eq!(unanswered.verdict(Property::LeaseSafety), Verdict::Pass);
    // Acknowledged, sent within the interval: it renewed the lease, which then died within
    // 50 ms (early), or it was answered for a dead lease. A violation either way.
    let mut within = polled();
    within.keepalive(3050, 3060, "c1", 1, ok(Return::LeaseKeptAlive { ttl_ms: 2000 }));
    let report = within.report(Property::LeaseSafety);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["expired between 3.000s and 3.100s", "1950 ms early"]);
    // Sent after the answer that showed it gone, and acknowledged: a dead lease renewed.
    let mut after = polled();
    after.keepalive(3200, 3210, "c1", 1, ok(Return::LeaseKeptAlive { ttl_ms: 2000 }));
    let report = after.report(Property::LeaseSafety);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["sent at 3.200s", "had expired between 3.000s and 3.100s"]);
}

#[test]
fn lease_liveness_owes_an_observed_lease_only_what_was_seen_of_it() {
    // silent_owner's lease is bounded at 6.610 s (simulator timing). Seen alive at the last answer,
    // 6.5 s: nothing is known past it, so no lateness can be claimed.
    let mut b = silent_owner();
    observed(&mut b, 6500);
    let report = b.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
    assert_mentions(&report.summary, &["1 alive at the end", "last answer at 6.500s"]);
    // Seen alive at 7 s, past its bound: late.
    let mut late = silent_owner();
    observed(&mut late, 7000);
    let report = late.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["still alive at the last observation (7.000s)"]);
    // An observed expiry counts from its earliest time: last seen alive at 6.5 s, gone at 9 s,
    // may have expired on time.
    let mut polled = silent_owner();
    polled.polled_expiry(6500, 9000, 1);
    observed(&mut polled, 29_900);
    assert_eq!(polled.verdict(Property::LeaseLiveness), Verdict::Pass);
}

#[test]
fn grant_live_lease_fails_an_observed_expiry_only_if_even_its_latest_time_precedes_the_grant() {
    // c1 releases at 6 s; c2's lease was last seen alive at 5.86 s and gone at 6.2 s: it may have
    // lived until the grant. Gone at 5.95 s: it was dead before the earliest grant moment.
    let waiter = |gone_ms: u64| {
        let mut b = Builder::new();
        b.grant(500, 510, "c1", 1, 2).lock(800, 10_001, "c2", 2, ok(Return::Locked { key: "/l/c2".into(), token: 3 }));
        b.polled_expiry(5860, gone_ms, 2).unlock(6000, 6010, "c1");
        observed(&mut b, 29_900);
        b
    };
    assert_eq!(waiter(6200).verdict(Property::GrantLiveLease), Verdict::Pass);
    let report = waiter(5950).report(Property::GrantLiveLease);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["had expired between 5.860s and 5.950s"]);
}

#[test]
fn spurious_expiry_lets_a_fault_up_to_an_observed_expirys_latest_time_excuse_it() {
    // A live owner renewing every second; its lease seen alive at 8.0 s and gone at 8.3 s; a
    // pause of c1 began at 8.2 s, possibly before the expiry: excused.
    let mut b = Builder::new();
    b.lease(0, 10, "c1", 1, 2000);
    for t in 1..=7 {
        b.keepalive(t * 1000, t * 1000 + 10, "c1", 1, ok(Return::LeaseKeptAlive { ttl_ms: 2000 }));
    }
    b.polled_expiry(8000, 8300, 1);
    observed(&mut b, 29_900);
    assert_eq!(b.verdict(Property::SpuriousExpiry), Verdict::Fail, "no fault: spurious");
    b.fault(8200, 9000, 1, FaultKind::Pause, &["c1"]);
    assert_eq!(b.verdict(Property::SpuriousExpiry), Verdict::Pass);
}

#[test]
fn a_real_history_is_judged_on_its_leases_only_where_their_renewals_were_recorded_and_on_watches_on_etcd() {
    let mut b = Builder::new();
    assert_eq!(Property::judged_on(&b.history).len(), Property::ALL.len(), "simulated: everything");
    observed(&mut b, 29_900);
    let etcd = Property::judged_on(&b.history);
    for property in [Property::LeaseSafety, Property::LeaseLiveness, Property::GrantLiveLease, Property::SpuriousExpiry]
    {
        assert!(etcd.contains(&property), "{property:?} on real etcd");
    }
    assert!(etcd.contains(&Property::Watch) && etcd.contains(&Property::WatchContinuity), "etcd's watchers record");
    assert!(!etcd.contains(&Property::SessionLossNotice), "the servers' own records");
    b.history.lease_observation.as_mut().unwrap().renewals_recorded = false;
    b.history.recorded_on = Some("real zookeeper".into());
    assert_eq!(
        Property::judged_on(&b.history),
        Property::FROM_OUTSIDE.to_vec(),
        "ZooKeeper: pings unseen, no watchers"
    );
}

// ---------------------------------------------------------------------------------------------
// linearizable: the key-value operations against a sequential map, key by key.

#[test]
fn linearizable_passes_trivially_without_key_value_operations() {
    let report = Builder::new().report(Property::Linearizable);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.summary, "no key-value operations in this history");
}

#[test]
fn linearizable_passes_a_sequential_run_of_every_operation_kind() {
    let mut b = Builder::new();
    b.put(0, 10, "c1", "k", "a", 2);
    b.get(20, 30, "c2", "k", Some("a"));
    let cas = Call::Cas { key: "k".into(), expected: Some("a".into()), new: "b".into() };
    b.op(40, 50, "c1", cas, ok(Return::Cas { swapped: true, revision: 3 }));
    let cas = Call::Cas { key: "k".into(), expected: None, new: "z".into() };
    b.op(60, 70, "c3", cas, ok(Return::Cas { swapped: false, revision: 3 }));
    b.get(80, 90, "c2", "k", Some("b"));
    b.delete(100, 110, "c1", "k", 1, 4);
    b.get(120, 130, "c2", "k", None);
    b.delete(140, 150, "c1", "k", 0, 4);
    let report = b.report(Property::Linearizable);
    assert_eq!(report.verdict, Verdict::Pass, "{report:?}");
    assert_mentions(&report.summary, &["8 key-value operations on 1 keys (8 ok, 0 unknown, 0 failed)"]);
}

#[test]
fn linearizable_fails_a_stale_read_and_gives_the_counterexample_with_entries() {
    let mut b = Builder::new();
    b.put(0, 10, "c1", "k", "a", 2);
    b.put(20, 30, "c1", "k", "b", 3);
    let read = b.get(40, 50, "c2", "k", Some("a"));
    let report = b.report(Property::Linearizable);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.summary, &["prefix of 2 operations on key k", "1 operations cannot go next"]);
    // The stuck read first, with its invocation and completion entries, then the prefix.
    assert_mentions(&report.findings[0].message, &[&format!("c2 get k -> a (op {read})"), "\"k\": \"b\""]);
    assert_eq!(report.findings[0].entries, vec![4, 5]);
    assert_mentions(&report.findings[1].message, &["longest linearizable prefix (2 operations", "put k=a", "put k=b"]);
    assert_eq!(report.findings[1].entries, vec![0, 2]);
}

#[test]
fn linearizable_keeps_unknown_writes_open_and_drops_failed_ones() {
    let mut maybe = Builder::new();
    maybe.op(0, 10, "c1", Call::Put { key: "k".into(), value: "x".into() }, Some(End::Info));
    maybe.get(5000, 5010, "c2", "k", Some("x"));
    assert_eq!(maybe.verdict(Property::Linearizable), Verdict::Pass, "the info put may have happened");

    let mut failed = Builder::new();
    failed.op(0, 10, "c1", Call::Put { key: "k".into(), value: "x".into() }, Some(End::Fail));
    failed.get(5000, 5010, "c2", "k", Some("x"));
    let report = failed.report(Property::Linearizable);
    assert_eq!(report.verdict, Verdict::Fail, "a failed put did not happen");
    assert_mentions(&report.summary, &["(1 ok, 0 unknown, 1 failed)"]);
}

#[test]
fn linearizable_checks_the_delete_count() {
    let mut b = Builder::new();
    b.delete(0, 10, "c1", "k", 1, 2);
    assert_eq!(b.verdict(Property::Linearizable), Verdict::Fail, "nothing to delete, yet count 1");
}

// ---------------------------------------------------------------------------------------------
// watch (docs/cases/05): ordered, unique, gap-free, atomic, progress never ahead.

use ChangeKind::{Delete as Del, Put};

/// Case 05's writes to k: puts at revisions 2, 3, 4, the delete at 5, a put at 6.
fn case_05_writes() -> Builder {
    let mut b = Builder::new();
    b.put(0, 10, "c1", "k", "v2", 2);
    b.put(20, 30, "c1", "k", "v3", 3);
    b.put(40, 50, "c1", "k", "v4", 4);
    b.delete(60, 70, "c1", "k", 1, 5);
    b.put(80, 90, "c1", "k", "v6", 6);
    b
}

#[test]
fn watch_passes_trivially_without_streams() {
    let report = Builder::new().report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.summary, "no watch streams in this history");
}

#[test]
fn watch_passes_a_complete_ordered_stream() {
    let mut b = case_05_writes();
    b.watch(100, 1, "k", false, 5).deliver(110, 1, &[(5, "k", Del, None), (6, "k", Put, Some("v6"))]);
    b.push(120, "c4", Event::WatchProgress { watch: 1, revision: 6 });
    b.push(130, "c4", Event::WatchEnd { watch: 1, reason: WatchEndReason::Cancelled, compact_revision: None });
    let report = b.report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Pass, "{report:?}");
    assert_mentions(&report.summary, &["1 watch streams delivered 2 changes", "2 acknowledged writes"]);
}

#[test]
fn watch_fails_case_05_the_delete_skipped_at_the_compaction_boundary() {
    let mut b = case_05_writes();
    b.watch(100, 1, "k", false, 5).deliver(110, 1, &[(6, "k", Put, Some("v6"))]);
    let report = b.report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings.len(), 1);
    assert_mentions(
        &report.findings[0].message,
        &["watch 1 of c4 on k", "never delivered revision 5", "delete k", "a gap"],
    );
    // The stream's start, the delete (invoke, ok) and the response that went past it.
    assert_eq!(report.findings[0].entries, vec![10, 6, 7, 11]);
}

#[test]
fn watch_passes_a_stream_ended_by_a_compaction_error() {
    let mut b = case_05_writes();
    b.watch(100, 1, "k", false, 5);
    b.push(110, "c4", Event::WatchEnd { watch: 1, reason: WatchEndReason::Compacted, compact_revision: Some(6) });
    assert_eq!(b.verdict(Property::Watch), Verdict::Pass);
}

#[test]
fn watch_fails_reordering_duplicates_and_changes_below_the_start() {
    let check = |changes: &[&[(i64, &str, ChangeKind, Option<&str>)]], needle: &str| {
        let mut b = case_05_writes();
        b.watch(100, 1, "k", false, 3);
        for (i, batch) in changes.iter().enumerate() {
            b.deliver(110 + i as u64, 1, batch);
        }
        let report = b.report(Property::Watch);
        assert_eq!(report.verdict, Verdict::Fail, "{needle}");
        assert!(report.findings.iter().any(|f| f.message.contains(needle)), "{needle:?} not in {report:?}");
    };
    check(&[&[(4, "k", Put, None)], &[(3, "k", Put, None)]], "after revision 4: out of order");
    check(&[&[(3, "k", Put, None)], &[(3, "k", Put, None)]], "twice");
    check(&[&[(2, "k", Put, None), (3, "k", Put, None)]], "below the start revision 3");
    check(&[&[(3, "k", Put, Some("v9"))]], "the value v3, not v9");
    check(&[&[(3, "k", Del, None)]], "but revision 3 is c1 put k=v3");
    check(&[&[(3, "other", Put, None)]], "outside the watched range");
}

#[test]
fn watch_fails_a_revision_split_across_responses() {
    let mut b = Builder::new();
    b.watch(0, 1, "/p/", true, 1);
    b.deliver(10, 1, &[(7, "/p/a", Put, None)]).deliver(20, 1, &[(7, "/p/b", Put, None)]);
    let report = b.report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["a revision split in two"]);
}

#[test]
fn watch_fails_a_progress_notification_that_ran_ahead() {
    let mut b = case_05_writes();
    b.watch(100, 1, "k", false, 5);
    b.push(105, "c4", Event::WatchProgress { watch: 1, revision: 6 });
    b.deliver(110, 1, &[(5, "k", Del, None), (6, "k", Put, None)]);
    let report = b.report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings.len(), 2, "both changes came after progress at 6: {report:?}");
    assert_mentions(&report.findings[0].message, &["progress ran ahead"]);
}

#[test]
fn watch_owes_nothing_past_what_the_stream_vouched_for() {
    // Delivered 3 and 4, then broke: 5 and 6 are not owed by this stream.
    let mut b = case_05_writes();
    b.watch(100, 1, "k", false, 3).deliver(110, 1, &[(3, "k", Put, None)]).deliver(120, 1, &[(4, "k", Put, None)]);
    b.push(130, "c4", Event::WatchEnd { watch: 1, reason: WatchEndReason::Broken, compact_revision: None });
    assert_eq!(b.verdict(Property::Watch), Verdict::Pass);
}

// ---------------------------------------------------------------------------------------------
// durability: acknowledged writes survive server crashes.

fn crash_between_write_and_read(read_value: Option<&str>) -> Builder {
    let mut b = Builder::new();
    b.put(0, 10, "c1", "k", "a", 2);
    b.put(20, 30, "c1", "k", "b", 3);
    b.fault(100, 2000, 1, FaultKind::Crash, &["s1"]);
    b.get(3000, 3010, "c2", "k", read_value);
    b
}

#[test]
fn durability_passes_trivially_without_key_value_operations() {
    let report = Builder::new().report(Property::Durability);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.summary, "no key-value operations in this history");
}

#[test]
fn durability_passes_a_read_after_a_crash_that_sees_the_newest_write() {
    let report = crash_between_write_and_read(Some("b")).report(Property::Durability);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.summary, "1 reads after a server crash saw every write acknowledged before it");
}

#[test]
fn durability_fails_a_write_lost_across_a_crash_and_names_it() {
    let report = crash_between_write_and_read(Some("a")).report(Property::Durability);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings.len(), 1);
    assert_mentions(
        &report.findings[0].message,
        &[
            "c1 put k=b (op 2) (revision 3, acknowledged at 0.030s) was lost across the crash of s1 at 0.100s",
            "read a",
            "older c1 put k=a",
        ],
    );
    // The lost write, the crash, the read.
    assert_eq!(report.findings[0].entries, vec![2, 3, 4, 6, 7]);
    let absent = crash_between_write_and_read(None).report(Property::Durability);
    assert_mentions(&absent.findings[0].message, &["before any acknowledged write"]);
}

#[test]
fn durability_leaves_reads_without_a_crash_to_linearizable() {
    let mut b = Builder::new();
    b.put(0, 10, "c1", "k", "a", 2);
    b.put(20, 30, "c1", "k", "b", 3);
    b.get(3000, 3010, "c2", "k", Some("a"));
    assert_eq!(b.verdict(Property::Durability), Verdict::Pass);
    assert_eq!(b.verdict(Property::Linearizable), Verdict::Fail);
}

#[test]
fn durability_accepts_a_later_write_whose_outcome_is_unknown() {
    let mut b = crash_between_write_and_read(Some("c"));
    b.op(40, 5000, "c3", Call::Put { key: "k".into(), value: "c".into() }, Some(End::Info));
    assert_eq!(b.verdict(Property::Durability), Verdict::Pass);
}

// ---------------------------------------------------------------------------------------------
// herd (docs/cases/10): one release wakes at most one waiter.

/// c1 holds; c2, c3, c4 wait; c1 releases at 1 s.
fn queue_of_three() -> Builder {
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 1, 2);
    b.grant(100, 1020, "c2", 2, 3).grant(110, 2020, "c3", 3, 4);
    b.lock(120, 0, "c4", 4, None);
    b.unlock(1000, 1010, "c1");
    b
}

#[test]
fn herd_passes_trivially_without_wakeups() {
    let report = queue_of_three().report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.summary, "no wakeups recorded in this history");
}

#[test]
fn herd_passes_when_each_release_wakes_its_successor_only() {
    let mut b = queue_of_three();
    b.wakeup(1005, "c2").unlock(2000, 2010, "c2").wakeup(2005, "c3");
    let report = b.report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.summary, "2 wakeups over 2 releases, at most 1 per release: no herd");
}

#[test]
fn herd_fails_when_one_release_wakes_every_waiter() {
    let mut b = queue_of_three();
    b.wakeup(1005, "c2").wakeup(1006, "c3").wakeup(1007, "c4");
    let report = b.report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings.len(), 1);
    assert_mentions(
        &report.findings[0].message,
        &["3 waiters woken after c1's release at 1.000s", "at most 1 allowed", "c2, c3, c4"],
    );
}

#[test]
fn herd_counts_waiters_not_wakeups() {
    // One waiter woken twice by one release (ZooKeeper: its watch re-armed on a server that had
    // not applied the delete yet) is no herd; two waiters are.
    let mut b = queue_of_three();
    b.wakeup(1005, "c2").wakeup(1105, "c2");
    assert_eq!(b.report(Property::Herd).verdict, Verdict::Pass);
    b.wakeup(1205, "c3");
    let report = b.report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["2 waiters woken", "c2, c3"]);
}

#[test]
fn herd_names_wakeups_before_the_first_release_as_such() {
    // Issue 17: "21 wakeups before any release before the next release, at most 0 allowed".
    let mut b = queue_of_three();
    b.wakeup(500, "c3").wakeup(600, "c4");
    let report = b.report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings[0].message, "/l: 2 waiters woken before the first release, none allowed: c3, c4");
}

#[test]
fn herd_allows_a_wakeup_for_each_waiter_that_left_the_queue() {
    // c3's lease expires right after c1's release: c4 (behind c3) wakes too, legitimately.
    let mut b = queue_of_three();
    b.expiry(1003, 3).wakeup(1005, "c2").wakeup(1007, "c4");
    assert_eq!(b.verdict(Property::Herd), Verdict::Pass);
}

#[test]
fn herd_allows_the_wakeup_a_failed_waiters_lingering_entry_causes_when_its_lease_ends() {
    // Issue 16 (seen on real etcd, and in swarm-ignore-keepalive-failure seed 8): c3's request
    // fails at 0.5 s but its key stays until its lease expires at 2.5 s, which wakes c4 behind it,
    // in the window of c1's release where c2 also woke.
    let lingering = |expired_ms: u64| {
        let mut b = Builder::new();
        b.grant(0, 10, "c1", 1, 2).unlock(1000, 1010, "c1");
        b.grant(100, 1020, "c2", 2, 3);
        b.lock(110, 500, "c3", 3, Some(End::Fail));
        b.lock(120, 0, "c4", 4, None);
        b.wakeup(1005, "c2").expiry(expired_ms, 3).wakeup(expired_ms + 5, "c4");
        b
    };
    assert_eq!(lingering(2500).verdict(Property::Herd), Verdict::Pass);
    // The departure cannot be later than the lease's end: with c3's lease gone at 0.9 s, before
    // c1's release, c4's wakeup at 0.905 s is excused, and a second one in c1's window is not.
    let mut early = lingering(900);
    early.wakeup(1500, "c4");
    let report = early.report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["2 waiters woken after c1's release", "c2, c4"]);
}

#[test]
fn herd_allows_a_departures_wakeup_seen_after_the_next_release() {
    // As chaos-fenced-mutex seed 80: c3's lease ends at 0.9 s, before c1's release; the
    // notification to c4 behind it, slowed by the network, arrives at 1.010 s, after c2's wakeup
    // for the release. Two causes, two waiters: no herd.
    let late = |c4_asks_ms: u64| {
        let mut b = Builder::new();
        b.grant(0, 10, "c1", 1, 2).unlock(1000, 1010, "c1");
        b.grant(100, 1020, "c2", 2, 3).grant(110, 2020, "c3", 3, 4);
        b.lock(c4_asks_ms, 0, "c4", 4, None);
        b.expiry(900, 3).wakeup(1005, "c2").wakeup(1010, "c4");
        b
    };
    assert_eq!(late(120).verdict(Property::Herd), Verdict::Pass);
    // A cause wakes only a waiter already waiting: c4, asking at 0.95 s after c3 left, and c2,
    // whose wakeup at 0.905 s c3's departure already explains, were both woken by c1's release.
    let mut second = late(950);
    second.wakeup(905, "c2");
    let report = second.report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(
        &report.findings[0].message,
        &["2 waiters woken after c1's release", "at most 1 allowed", "c2, c4"],
    );
}

#[test]
fn herd_lets_a_zookeeper_waiter_be_woken_by_a_departure_its_server_had_not_applied() {
    // As swarm-lost-wakeup-on-vanished-predecessor seed 151: c2's lease ends at 0.9 s; c3 asks at
    // 0.95 s, reads the children from a server that has not applied the expiry yet, watches c2's
    // node and is woken at 1.2 s when that server catches up. c1 never releases.
    let lagging = |zookeeper: bool| {
        let mut b = Builder::new();
        b.grant(0, 10, "c1", 1, 2);
        b.lock(100, 0, "c2", 2, None).lock(950, 0, "c3", 3, None);
        if zookeeper {
            b.push(940, "c3", Event::Connection { state: ConnectionState::Connected, server: None, reason: None });
        }
        b.expiry(900, 2).wakeup(1200, "c3");
        b
    };
    assert_eq!(lagging(true).verdict(Property::Herd), Verdict::Pass);
    // On etcd the read is linearizable: a departure before the request cannot be what woke it.
    assert_eq!(lagging(false).verdict(Property::Herd), Verdict::Fail);
    // One cause still wakes one waiter: a second late joiner woken by the same departure is a herd.
    let mut two = lagging(true);
    two.push(960, "c4", Event::Connection { state: ConnectionState::Connected, server: None, reason: None });
    two.lock(970, 0, "c4", 4, None).wakeup(1210, "c4");
    assert_eq!(two.verdict(Property::Herd), Verdict::Fail);
}

#[test]
fn herd_lets_a_polled_expiry_wake_a_waiter_that_joined_before_it_was_seen() {
    // A real run polls sessions every 100 ms: c2's session, last seen alive at 0.4 s, is gone
    // at 0.5 s. c3 joined behind c2 at 0.45 s and was woken by c2's departure at 0.47 s: the
    // expiry happened after c3 joined, somewhere in 0.4..0.5 s.
    let polled = |latest: Option<u64>| {
        let mut b = Builder::new();
        b.grant(0, 10, "c1", 1, 2);
        b.lock(100, 0, "c2", 2, None).lock(450, 0, "c3", 3, None);
        match latest {
            Some(latest) => b.polled_expiry(401, latest, 2),
            None => b.expiry(401, 2),
        };
        b.wakeup(470, "c3");
        b
    };
    assert_eq!(polled(Some(500)).verdict(Property::Herd), Verdict::Pass);
    // Taken as exact, the expiry was over before c3 asked, and nothing else could wake it.
    let report = polled(None).report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["1 waiters woken with no release in the run", "c3"]);
    // Seen gone before c3 asked: no cause either.
    assert_eq!(polled(Some(440)).verdict(Property::Herd), Verdict::Fail);
}

#[test]
fn a_polled_expiry_seen_gone_before_it_was_recorded_is_refused() {
    let mut b = Builder::new();
    b.polled_expiry(500, 400, 2);
    let err = b.history.validate().expect_err("latest before the entry");
    assert_mentions(&err.to_string(), &["latest_ns", "before the entry's own time"]);
}

#[test]
fn lease_expiry_without_latest_ns_reads_and_writes_as_before() {
    let exact = Event::LeaseExpiry { lease: 7, latest_ns: None };
    let text = serde_json::to_string(&exact).unwrap();
    assert!(!text.contains("latest_ns"), "{text}");
    assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), exact);
    let polled = Event::LeaseExpiry { lease: 7, latest_ns: Some(9) };
    let text = serde_json::to_string(&polled).unwrap();
    assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), polled);
}

#[test]
fn herd_does_not_count_a_waiter_whose_lease_had_ended() {
    // c3's lease expired at 900, before c1's release: its entry left the queue (and c4, behind
    // it, woke for that). Its watch, still armed, fires on c1's release too: not a herd.
    let mut b = queue_of_three();
    b.expiry(900, 3).wakeup(905, "c4").wakeup(1005, "c2").wakeup(1006, "c3");
    let report = b.report(Property::Herd);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_mentions(&report.summary, &["1 wakeups of waiters whose lease had already ended not counted"]);
    // The same wakeup while c3's lease is alive is a second wakeup for one release.
    let mut alive = queue_of_three();
    alive.wakeup(1005, "c2").wakeup(1006, "c3");
    assert_eq!(alive.verdict(Property::Herd), Verdict::Fail);
}

// ---------------------------------------------------------------------------------------------
// fairness: first come (through the doorway), first served.

#[test]
fn fairness_passes_grants_in_queue_order_and_reports_the_longest_wait() {
    let report = queue_of_three().report(Property::Fairness);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_mentions(
        &report.summary,
        &["4 requests, 3 granted, none overtaken", "longest wait 1910 ms (c3", "1 requests still waiting"],
    );
}

#[test]
fn fairness_fails_a_grant_ahead_of_an_earlier_queue_entry() {
    // c3's token (queue position) is above c2's, yet c3 is granted while c2 still waits.
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 1, 2).unlock(1000, 1010, "c1");
    b.grant(100, 2020, "c2", 2, 3).grant(110, 1020, "c3", 3, 4);
    let report = b.report(Property::Fairness);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(
        &report.findings[0].message,
        &["c3 (asked at 0.110s) was granted at 1.020s (token 4) while c2 (waiting since 0.100s)"],
    );
}

#[test]
fn fairness_judges_invocation_order_only_with_proof_of_the_doorway() {
    // A compare-and-swap recipe: tokens follow grant order. c2 asked first, but without a wakeup
    // nothing shows it was waiting before c3 asked (their doorways may overlap).
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 1, 2).unlock(1000, 1010, "c1");
    b.grant(100, 2020, "c2", 2, 9).grant(600, 1020, "c3", 3, 8);
    assert_eq!(b.verdict(Property::Fairness), Verdict::Pass);
    // c2 woke (lost a race) at 500, before c3 asked at 600: c3 overtook it.
    b.wakeup(500, "c2");
    assert_eq!(b.verdict(Property::Fairness), Verdict::Fail);
}

#[test]
fn fairness_does_not_count_a_waiter_whose_lease_ended() {
    // As docs/cases/02: c2's lease expired while it waited, taking its queue entry with it.
    let mut b = Builder::new();
    b.grant(0, 10, "c1", 1, 2).unlock(1000, 1010, "c1");
    b.grant(100, 2020, "c2", 2, 3).grant(110, 1020, "c3", 3, 4).expiry(800, 2);
    assert_eq!(b.verdict(Property::Fairness), Verdict::Pass);
}

#[test]
fn fairness_counts_a_regrant_of_the_same_token_as_the_entry_it_already_had() {
    // c2 holds (token 3, asked at 0.1 s); its unlock at 1 s times out and never applies; c3 asks
    // at 0.2 s and waits (its wakeup at 0.5 s); c2 asks again at 1.5 s and is granted token 3, its
    // old entry, ahead of c3: no overtaking, c2's entry was older.
    let mut b = Builder::new();
    b.grant(100, 110, "c2", 2, 3).lock(200, 0, "c3", 3, None).wakeup(500, "c3");
    let call = Call::Unlock { name: "/l".into(), key: "/l/c2".into() };
    b.op(1000, 1400, "c2", call, Some(End::Info));
    b.grant(1500, 1510, "c2", 2, 3);
    assert_eq!(b.verdict(Property::Fairness), Verdict::Pass);
    // A new token at 1.5 s would be a new entry, behind c3's: overtaken.
    b.grant(1600, 1610, "c2", 2, 9);
    assert_eq!(b.verdict(Property::Fairness), Verdict::Fail);
}

#[test]
fn fairness_passes_the_recorded_history_of_seed_1757() {
    // The switch-off run that failed fairness in `sweep --seeds 601..2000` (issue 21), as the
    // simulator recorded it at 900c099 (37 s, 509 entries): c2's lock at 24.208 s found its old key.
    let history = recorded("swarm-deposed-leader-expires-leases-1757.json");
    let report = Property::Fairness.check(&history);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.findings);
    assert_mentions(&report.summary, &["none overtaken"]);
}

#[test]
fn linearizable_decides_the_recorded_history_of_seed_8150() {
    // 18 timed-out puts of values no one read, on one key, made 2^18 subsets for the search: the
    // 10 s limit was reached (the only run not as expected in a 10,000-seed switch-off sweep).
    let history = recorded("swarm-follower-reads-without-read-index-8150.json");
    let report = Property::Linearizable.check(&history);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
    assert_mentions(&report.summary, &["350 key-value operations on 3 keys (288 ok, 36 unknown, 26 failed)"]);
}

// ---------------------------------------------------------------------------------------------
// The history format: the new events' JSON is what history.rs documents for runners.

#[test]
fn new_events_have_the_documented_json_shapes() {
    let shapes: Vec<(Event, &str)> = vec![
        (
            Event::Invoke { op: 7, call: Call::Put { key: "k1".into(), value: "v7".into() } },
            r#"{"type":"invoke","op":7,"call":{"f":"put","key":"k1","value":"v7"}}"#,
        ),
        (
            Event::Ok { op: 7, ret: Return::Put { revision: 12 } },
            r#"{"type":"ok","op":7,"ret":{"f":"put","revision":12}}"#,
        ),
        (
            Event::Invoke { op: 8, call: Call::Get { key: "k1".into() } },
            r#"{"type":"invoke","op":8,"call":{"f":"get","key":"k1"}}"#,
        ),
        (
            Event::Ok { op: 8, ret: Return::Got { value: Some("v7".into()), revision: 12 } },
            r#"{"type":"ok","op":8,"ret":{"f":"got","value":"v7","revision":12}}"#,
        ),
        (
            Event::Ok { op: 8, ret: Return::Got { value: None, revision: 12 } },
            r#"{"type":"ok","op":8,"ret":{"f":"got","value":null,"revision":12}}"#,
        ),
        (
            Event::Invoke { op: 9, call: Call::Delete { key: "k1".into() } },
            r#"{"type":"invoke","op":9,"call":{"f":"delete","key":"k1"}}"#,
        ),
        (
            Event::Ok { op: 9, ret: Return::Deleted { count: 1, revision: 13 } },
            r#"{"type":"ok","op":9,"ret":{"f":"deleted","count":1,"revision":13}}"#,
        ),
        (
            Event::Invoke {
                op: 10,
                call: Call::Cas { key: "k1".into(), expected: Some("v7".into()), new: "v8".into() },
            },
            r#"{"type":"invoke","op":10,"call":{"f":"cas","key":"k1","expected":"v7","new":"v8"}}"#,
        ),
        (
            Event::Ok { op: 10, ret: Return::Cas { swapped: true, revision: 14 } },
            r#"{"type":"ok","op":10,"ret":{"f":"cas","swapped":true,"revision":14}}"#,
        ),
        (
            Event::LeaseCheckpoint { lease: 5, remaining_ms: 2400 },
            r#"{"type":"lease_checkpoint","lease":5,"remaining_ms":2400}"#,
        ),
        (Event::LessorPromoted { term: 3 }, r#"{"type":"lessor_promoted","term":3}"#),
        (
            Event::WatchStart { watch: 1, key: "k1".into(), prefix: false, start_revision: 5 },
            r#"{"type":"watch_start","watch":1,"key":"k1","start_revision":5}"#,
        ),
        (
            Event::WatchStart { watch: 2, key: "/locks/r/".into(), prefix: true, start_revision: 1 },
            r#"{"type":"watch_start","watch":2,"key":"/locks/r/","prefix":true,"start_revision":1}"#,
        ),
        (
            Event::WatchEvents {
                watch: 1,
                events: vec![
                    WatchedChange { revision: 5, key: "k1".into(), kind: Del, value: None },
                    WatchedChange { revision: 6, key: "k1".into(), kind: Put, value: Some("v9".into()) },
                ],
            },
            r#"{"type":"watch_events","watch":1,"events":[{"revision":5,"key":"k1","kind":"delete"},{"revision":6,"key":"k1","kind":"put","value":"v9"}]}"#,
        ),
        (Event::WatchProgress { watch: 1, revision: 9 }, r#"{"type":"watch_progress","watch":1,"revision":9}"#),
        (
            Event::WatchEnd { watch: 1, reason: WatchEndReason::Cancelled, compact_revision: None },
            r#"{"type":"watch_end","watch":1,"reason":"cancelled"}"#,
        ),
        (
            Event::WatchEnd { watch: 1, reason: WatchEndReason::Compacted, compact_revision: Some(7) },
            r#"{"type":"watch_end","watch":1,"reason":"compacted","compact_revision":7}"#,
        ),
        (
            Event::Wakeup { lock: "/locks/r".into(), waiter: "/locks/r/694d7c1e2f3a".into() },
            r#"{"type":"wakeup","lock":"/locks/r","waiter":"/locks/r/694d7c1e2f3a"}"#,
        ),
        (
            Event::Connection {
                state: ConnectionState::Suspended,
                server: Some("s3".into()),
                reason: Some("s3: not serving".into()),
            },
            r#"{"type":"connection","state":"suspended","server":"s3","reason":"s3: not serving"}"#,
        ),
        (
            Event::Connection { state: ConnectionState::Lost, server: None, reason: None },
            r#"{"type":"connection","state":"lost"}"#,
        ),
    ];
    for (event, json) in shapes {
        assert_eq!(serde_json::to_string(&event).unwrap(), json);
        assert_eq!(serde_json::from_str::<Event>(json).unwrap(), event, "{json}");
    }
    // Absent optional fields read as absent.
    let cas: Call = serde_json::from_str(r#"{"f":"cas","key":"k","new":"v"}"#).unwrap();
    assert_eq!(cas, Call::Cas { key: "k".into(), expected: None, new: "v".into() });
}

#[test]
fn impossible_watch_and_key_value_records_are_rejected() {
    let check = |build: &dyn Fn(&mut Builder), needle: &str| {
        let mut b = Builder::new();
        build(&mut b);
        let error = History::from_json(&b.history.to_json()).unwrap_err().to_string();
        assert!(error.contains(needle), "{needle:?} missing from {error:?}");
    };
    check(
        &|b| {
            b.op(0, 10, "c1", Call::Get { key: "k".into() }, ok(Return::Put { revision: 2 }));
        },
        "answered with",
    );
    check(
        &|b| {
            b.op(0, 10, "c1", Call::Lock { name: "/l".into(), lease: 1, permits: 1 }, ok(Return::Put { revision: 2 }));
        },
        "answered with",
    );
    check(
        &|b| {
            b.deliver(10, 3, &[(5, "k", Put, None)]);
        },
        "watch 3 was never started",
    );
    check(
        &|b| {
            b.watch(0, 3, "k", false, 1).watch(5, 3, "k", false, 1);
        },
        "starts twice",
    );
    check(
        &|b| {
            b.watch(0, 3, "k", false, 1);
            b.push(5, "c4", Event::WatchEnd { watch: 3, reason: WatchEndReason::Cancelled, compact_revision: None });
            b.push(6, "c4", Event::WatchProgress { watch: 3, revision: 4 });
        },
        "already ended",
    );
    check(
        &|b| {
            let end = Event::WatchEnd { watch: 3, reason: WatchEndReason::Compacted, compact_revision: None };
            b.watch(0, 3, "k", false, 1).push(5, "c4", end);
        },
        "names the compact revision",
    );
    check(
        &|b| {
            b.watch(0, 3, "k", false, 1).push(5, "c1", Event::WatchProgress { watch: 3, revision: 4 });
        },
        "belongs to c4",
    );
}

#[test]
fn every_property_has_a_snake_case_id_that_reads_back() {
    for property in Property::ALL {
        let id = property.id();
        assert!(id.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{id}");
        assert_eq!(Property::from_id(id), Some(property));
        assert_eq!(serde_json::to_string(&property).unwrap(), format!("\"{id}\""));
    }
    let new = ["lease_liveness", "grant_live_lease", "linearizable", "watch", "durability", "herd", "fairness"];
    for id in new {
        assert!(Property::from_id(id).is_some(), "{id}");
    }
}

// A stream from "now" (start_revision 0, the server's choice not recorded).

#[test]
fn watch_from_now_owes_nothing_acknowledged_before_it_started() {
    // Revisions 2, 3 and 4 were acknowledged before the stream started at 55 ms; 5 and 6 were
    // asked for after it. Read as "from revision 0", it would owe 2..4 too.
    let mut b = case_05_writes();
    b.watch(55, 1, "k", false, 0).deliver(110, 1, &[(5, "k", Del, None), (6, "k", Put, Some("v6"))]);
    let report = b.report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Pass, "{report:?}");
    assert_mentions(&report.summary, &["2 acknowledged writes in their ranges were all delivered"]);
}

#[test]
fn watch_from_now_owes_a_write_asked_for_after_it_started() {
    let mut b = case_05_writes();
    b.watch(55, 1, "k", false, 0).deliver(110, 1, &[(6, "k", Put, Some("v6"))]);
    let report = b.report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["never delivered revision 5", "a gap"]);
}

#[test]
fn watch_from_now_owes_every_revision_after_the_first_it_delivered() {
    // Started before any write: the first delivery, 3, bounds its start; 4 is missing.
    let mut b = case_05_writes();
    b.watch(5, 1, "k", false, 0).deliver(110, 1, &[(3, "k", Put, Some("v3")), (5, "k", Del, None)]);
    let report = b.report(Property::Watch);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["never delivered revision 4"]);
}

#[test]
fn watch_progress_below_the_start_owes_nothing_and_does_not_panic() {
    let mut b = case_05_writes();
    b.watch(100, 1, "k", false, 7);
    b.push(105, "c4", Event::WatchProgress { watch: 1, revision: 6 });
    assert_eq!(b.report(Property::Watch).verdict, Verdict::Pass);
}

// watch_continuity: a consumer's streams, re-created, go on from where it had got to
// (etcd issue 11496: re-created from "now", the writes in between are never seen).

/// c4 watches k from revision 2 and sees 2 and 3; its stream breaks at 55 ms; it watches again
/// from `restart` at 100 ms and sees what the new stream delivers.
fn rewatched(restart: i64, delivered: &[(i64, &str, ChangeKind, Option<&str>)]) -> Builder {
    let mut b = case_05_writes();
    b.watch(1, 1, "k", false, 2).deliver(35, 1, &[(2, "k", Put, Some("v2")), (3, "k", Put, Some("v3"))]);
    b.push(55, "c4", Event::WatchEnd { watch: 1, reason: WatchEndReason::Broken, compact_revision: None });
    b.watch(100, 2, "k", false, restart).deliver(110, 2, delivered);
    b
}

#[test]
fn watch_continuity_passes_a_consumer_that_resumes_after_the_last_revision_it_saw() {
    let b = rewatched(4, &[(4, "k", Put, Some("v4")), (5, "k", Del, None), (6, "k", Put, Some("v6"))]);
    let report = b.report(Property::WatchContinuity);
    assert_eq!(report.verdict, Verdict::Pass, "{report:?}");
    assert_mentions(&report.summary, &["2 watch streams, 1 of them a consumer's re-created watch"]);
    assert_eq!(b.verdict(Property::Watch), Verdict::Pass);
}

#[test]
fn watch_continuity_fails_a_consumer_that_watches_again_from_now() {
    // Re-created "from now" at 100 ms: the server starts it at 7, after the puts of 4, 5 and 6.
    let mut b = rewatched(7, &[]);
    b.put(120, 130, "c1", "k", "v7", 7);
    b.deliver(140, 2, &[(7, "k", Put, Some("v7"))]);
    // Each stream alone is faultless: `watch` passes, only the consumer's view has a gap.
    assert_eq!(b.verdict(Property::Watch), Verdict::Pass);
    let report = b.report(Property::WatchContinuity);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.findings.len(), 3, "revisions 4, 5 and 6: {report:?}");
    assert_mentions(
        &report.findings[0].message,
        &["c4's watch on k never saw revision 4 (c1 put k=v4", "seen up to revision 3", "from revision 7 at 0.100s"],
    );
}

#[test]
fn watch_continuity_passes_a_consumer_that_re_lists_before_it_watches_again() {
    let relist = |answered_at: u64| {
        let mut b = rewatched(7, &[]);
        // A read of k answered at revision 6, then the watch from 7.
        let ret = Return::Got { value: Some("v6".into()), revision: 6 };
        b.op(95, answered_at, "c4", Call::Get { key: "k".into() }, Some(End::Ok(ret)));
        b.put(120, 130, "c1", "k", "v7", 7);
        b.deliver(140, 2, &[(7, "k", Put, Some("v7"))]);
        b
    };
    assert_eq!(relist(98).verdict(Property::WatchContinuity), Verdict::Pass);
    // A read that came back only after the new stream started re-synced nothing in time.
    assert_eq!(relist(105).verdict(Property::WatchContinuity), Verdict::Fail);
}

#[test]
fn watch_continuity_counts_a_prefix_read_recorded_as_an_api_call() {
    let mut b = rewatched(7, &[]);
    let call = Call::Api {
        api: "etcd".into(),
        method: "get".into(),
        detail: "*".into(),
        writes: Vec::new(),
        reads: vec![coordsim_checker::history::Touched::Prefix(String::new())],
    };
    let ret = Return::Api { detail: "1 keys".into(), revision: 6, ephemeral_owner: None };
    b.op(95, 98, "c4", call, Some(End::Ok(ret)));
    b.put(120, 130, "c1", "k", "v7", 7);
    b.deliver(140, 2, &[(7, "k", Put, Some("v7"))]);
    assert_eq!(b.verdict(Property::WatchContinuity), Verdict::Pass);
}

// session_loss_notice: a request waiting under a lease ends within the TTL of the lease's expiry
// (etcd issue 19597: the waiter learns its session is gone only when the holder releases).

/// c1 holds /l from 0.1 s to `release`; c2 waits under lease 2 (TTL 3 s), which expires at 5 s;
/// c2's request ends at `c2_ends` (`None`: never).
fn waiter_whose_lease_expires(release: u64, c2_ends: Option<(u64, End)>) -> Builder {
    let mut b = Builder::new();
    b.lease(0, 10, "c1", 1, 3000).lease(0, 10, "c2", 2, 3000);
    b.grant(50, 100, "c1", 1, 7);
    match c2_ends {
        Some((ms, end)) => b.lock(200, ms, "c2", 2, Some(end)),
        None => b.lock(200, 0, "c2", 2, None),
    };
    b.expiry(5000, 2);
    b.unlock(release, release + 10, "c1");
    b
}

#[test]
fn session_loss_notice_fails_a_waiter_that_learns_only_when_the_holder_releases() {
    // etcd's Mutex: c2's lock fails at 20 s, when c1's release let it find its own key gone.
    let b = waiter_whose_lease_expires(20_000, Some((20_020, End::Fail)));
    let report = b.report(Property::SessionLossNotice);
    assert_eq!(report.verdict, Verdict::Fail, "{report:?}");
    assert_mentions(
        &report.findings[0].message,
        &["c2's lock request for /l under lease 2", "ended only at 20.020s", "expired at 5.000s", "(4000 ms)"],
    );
    // A request that never ends is the same failure.
    let never = waiter_whose_lease_expires(20_000, None).report(Property::SessionLossNotice);
    assert_mentions(&never.findings[0].message, &["was still waiting at the end of the run"]);
}

#[test]
fn session_loss_notice_passes_a_waiter_that_gives_up_once_its_lease_is_gone() {
    // The fix: c2 watches its lease and gives its request up 1.2 s after the expiry.
    let b = waiter_whose_lease_expires(20_000, Some((6_200, End::Info)));
    let report = b.report(Property::SessionLossNotice);
    assert_eq!(report.verdict, Verdict::Pass, "{report:?}");
    assert_mentions(&report.summary, &["1 lock requests were waiting when their lease expired"]);
}

#[test]
fn session_loss_notice_starts_the_bound_when_the_faults_active_at_the_expiry_end() {
    // c2 is cut off from 3 s to 10 s: it cannot hear of the expiry at 5 s before 10 s, and its
    // request failing at 12 s is within the TTL (and the slack) of that; at 15 s it is not.
    let mut b = waiter_whose_lease_expires(20_000, Some((12_000, End::Fail)));
    b.fault(3000, 10_000, 1, FaultKind::Partition, &["c2"]);
    assert_eq!(b.verdict(Property::SessionLossNotice), Verdict::Pass);
    let mut late = waiter_whose_lease_expires(20_000, Some((15_000, End::Fail)));
    late.fault(3000, 10_000, 1, FaultKind::Partition, &["c2"]);
    let report = late.report(Property::SessionLossNotice);
    assert_eq!(report.verdict, Verdict::Fail);
    assert_mentions(&report.findings[0].message, &["after the faults active then ended at 10.000s"]);
}

#[test]
fn session_loss_notice_stops_counting_while_a_later_fault_holds_the_waiter() {
    // c2 is cut off from 3 s to 10 s and paused again from 10.5 s to 16 s: 0.5 s of its 4 s ran
    // before the pause, so the bound is 19.5 s. Failing at 16.2 s, on its first moment awake, is
    // in time; at 19.6 s it is not (swarm-grant-without-lease-check seed 137).
    let mut b = waiter_whose_lease_expires(25_000, Some((16_200, End::Fail)));
    b.fault(3000, 10_000, 1, FaultKind::Partition, &["c2"]);
    b.fault(10_500, 16_000, 2, FaultKind::Pause, &["c2"]);
    assert_eq!(b.verdict(Property::SessionLossNotice), Verdict::Pass);
    let mut late = waiter_whose_lease_expires(25_000, Some((19_600, End::Fail)));
    late.fault(3000, 10_000, 1, FaultKind::Partition, &["c2"]);
    late.fault(10_500, 16_000, 2, FaultKind::Pause, &["c2"]);
    assert_eq!(late.verdict(Property::SessionLossNotice), Verdict::Fail);
    // A fault that ends as it begins (chaos-fenced-mutex seed 8) holds nothing, and the check ends.
    let mut empty = waiter_whose_lease_expires(25_000, Some((9_100, End::Fail)));
    empty.fault(6000, 6000, 1, FaultKind::Pause, &["c1"]);
    assert_eq!(empty.verdict(Property::SessionLossNotice), Verdict::Fail);
}

#[test]
fn session_loss_notice_does_not_judge_a_request_over_before_the_expiry() {
    // c2's request was answered (failed) before its lease expired: nothing was waiting.
    let b = waiter_whose_lease_expires(20_000, Some((4_000, End::Fail)));
    let report = b.report(Property::SessionLossNotice);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_mentions(&report.summary, &["0 lock requests"]);
}

// ---------------------------------------------------------------------------------------------
// A ZooKeeper session observed on a real ensemble: every request renews it (`session_touch`), a
// follower tells the leader of a touch up to half a tick after it answered (`renewal_relay_ms`),
// and the leader expires sessions in buckets of a tick.

/// A real ZooKeeper run's header: tick 500 ms, relay 250 ms, polled every 100 ms.
fn zookeeper_observed(b: &mut Builder, until_ms: u64) {
    observed(b, until_ms);
    b.history.recorded_on = Some("real zookeeper".into());
    b.history.service_timing = Some(ServiceTiming {
        heartbeat_ms: 250,
        election_timeout_min_ms: 2500,
        election_timeout_max_ms: 2500,
        lease_expiry_tick_ms: 500,
        lease_promotion_extend_ms: 0,
        renewal_relay_ms: 250,
    });
}

/// c1's 4 s session: a ping answered at 1.01 s, then a create answered at 2.01 s, then nothing.
fn touched_session() -> Builder {
    let mut b = Builder::new();
    b.leader(0, "s1", 1);
    b.lease(0, 10, "c1", 1, 4000).keepalive(1000, 1010, "c1", 1, ok(Return::LeaseKeptAlive { ttl_ms: 4000 }));
    let create = Call::SessionTouch { lease: 1, request: "create".into() };
    b.op(2000, 2010, "c1", create, ok(Return::LeaseKeptAlive { ttl_ms: 4000 }));
    zookeeper_observed(&mut b, 29_900);
    b
}

#[test]
fn a_session_touch_renews_a_zookeeper_session_for_the_lease_checkers() {
    // Expired at 5.3 s: 3.3 s after the create's touch, early by the create (not by the ping).
    let mut early = touched_session();
    early.polled_expiry(5200, 5300, 1);
    let report = early.report(Property::LeaseSafety);
    assert_eq!(report.verdict, Verdict::Fail, "{}", report.summary);
    assert_mentions(&report.findings[0].message, &["sent at 2.000s"]);
    // Expired at 6.6 s: past the ping's bound, within the create's (2.01 + 0.25 relay + 4 + 0.5
    // tick, plus the commit allowance and a 2.5 s election timeout for a stalled leader).
    let mut on_time = touched_session();
    on_time.polled_expiry(6550, 6650, 1);
    assert_eq!(on_time.verdict(Property::LeaseSafety), Verdict::Pass);
    let report = on_time.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
    // Still alive at 10 s: late.
    let mut late = touched_session();
    late.polled_expiry(10_000, 10_100, 1);
    let report = late.report(Property::LeaseLiveness);
    assert_eq!(report.verdict, Verdict::Fail, "{}", report.summary);
    assert_mentions(&report.findings[0].message, &["sent at 2.000s", "until 2.260s"]);
}

#[test]
fn a_followers_relay_of_a_touch_moves_the_liveness_bound_by_exactly_the_relay() {
    // Without the relay the bound is 2.01 + 4 + 0.5 + 2.5 + 0.25 = 9.26 s; with it 9.51 s.
    let at = |expired_ms: u64, relay_ms: u64| {
        let mut b = touched_session();
        b.history.service_timing.as_mut().expect("set").renewal_relay_ms = relay_ms;
        b.polled_expiry(expired_ms, expired_ms + 10, 1);
        b.verdict(Property::LeaseLiveness)
    };
    assert_eq!(at(9400, 0), Verdict::Fail);
    assert_eq!(at(9400, 250), Verdict::Pass);
    assert_eq!(at(9600, 250), Verdict::Fail);
}
