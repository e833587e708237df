//! One test per fault kind: the fault's observable effect, asserted from the history
//! (issue 4). Each runs a small scenario — 3 servers, 2 clients contending for one lock — with
//! one scheduled fault.

use coordsim::load;
use coordsim::sweep::{self, SeedResult};
use coordsim_checker::history::{Call, Event, FaultKind, History, Phase, RaftRole, Return, WhichClock};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// The base scenario; `extra` adds `[[clock]]`, `[[nemesis]]` or overrides.
fn scenario(ttl: &str, extra: &str) -> String {
    format!(
        r#"
name = "fault-test"
summary = "one fault"
duration = "20s"
[cluster]
servers = 3
[lock]
recipe = "etcd-mutex"
name = "/locks/r"
ttl = "{ttl}"
[resource]
mode = "fenced"
[clients]
count = 2
start = "500ms"
stagger = "300ms"
hold = "1s"
writes_per_hold = 2
think = "300ms"
[expect]
single_holder = "any"
lease_safety = "any"
{extra}
"#
    )
}

fn run(text: &str, seed: u64) -> History {
    let scenario = load::parse("fault-test.toml", text).unwrap_or_else(|e| panic!("{e}"));
    match sweep::run_seed(&scenario, "fault-test.toml", seed) {
        SeedResult::Done { history, .. } => history,
        SeedResult::Crashed { message, .. } | SeedResult::Stopped { message, .. } => {
            panic!("seed {seed} crashed: {message}")
        }
    }
}

/// (start, end, targets) of the fault of `kind`.
fn fault(history: &History, kind: FaultKind) -> (u64, u64, Vec<String>) {
    let start = history.entries.iter().find_map(|e| match &e.event {
        Event::Fault { kind: k, phase: Phase::Start, targets, fault, .. } if *k == kind => {
            Some((e.time_ns, targets.clone(), *fault))
        }
        _ => None,
    });
    let (start_ns, targets, id) = start.unwrap_or_else(|| panic!("no {kind:?} fault in the history"));
    let end_ns = history
        .entries
        .iter()
        .find_map(|e| match &e.event {
            Event::Fault { fault, phase: Phase::End, .. } if *fault == id => Some(e.time_ns),
            _ => None,
        })
        .expect("every fault ends");
    (start_ns, end_ns, targets)
}

/// (time, server, term) of every "became leader" event.
fn leaders(history: &History) -> Vec<(u64, String, u64)> {
    history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Role { role: RaftRole::Leader, term } => Some((e.time_ns, e.node.clone(), *term)),
            _ => None,
        })
        .collect()
}

/// The lease each client was granted, by client.
fn leases_of(history: &History, client: &str) -> Vec<i64> {
    history
        .entries
        .iter()
        .filter(|e| e.node == client)
        .filter_map(|e| match &e.event {
            Event::Ok { ret: Return::LeaseGranted { lease, .. }, .. } => Some(*lease),
            _ => None,
        })
        .collect()
}

fn expiry_of(history: &History, lease: i64) -> Option<u64> {
    history.entries.iter().find_map(|e| match &e.event {
        Event::LeaseExpiry { lease: l, .. } if *l == lease => Some(e.time_ns),
        _ => None,
    })
}

/// Completions (ok / fail / info) of `client`'s operations of `f` that started in [from, to).
fn outcomes(history: &History, client: &str, f: &str, from: u64, to: u64) -> Vec<(&'static str, u64)> {
    let mut invoked = std::collections::BTreeMap::new();
    let mut found = Vec::new();
    for e in &history.entries {
        match &e.event {
            Event::Invoke { op, call }
                if e.node == client && call_name(call) == f && (from..to).contains(&e.time_ns) =>
            {
                invoked.insert(*op, e.time_ns);
            }
            Event::Ok { op, .. } | Event::Fail { op, .. } | Event::Info { op, .. } => {
                if let Some(start) = invoked.remove(op) {
                    let kind = match &e.event {
                        Event::Ok { .. } => "ok",
                        Event::Fail { .. } => "fail",
                        _ => "info",
                    };
                    found.push((kind, e.time_ns - start));
                }
            }
            _ => {}
        }
    }
    found
}

fn call_name(call: &Call) -> &'static str {
    match call {
        Call::LeaseGrant { .. } => "lease_grant",
        Call::LeaseKeepAlive { .. } => "lease_keep_alive",
        Call::SessionTouch { .. } => "session_touch",
        Call::LeaseRevoke { .. } => "lease_revoke",
        Call::Lock { .. } => "lock",
        Call::Unlock { .. } => "unlock",
        Call::Write { .. } => "write",
        Call::Put { .. } | Call::Get { .. } | Call::Delete { .. } | Call::Cas { .. } => "key-value",
        Call::Api { .. } => "api",
    }
}

fn verdict(history: &History, property: Property) -> Verdict {
    property.check(history).verdict
}

#[test]
fn paused_client_misses_its_keepalives_and_its_lease_expires() {
    let history = run(&scenario("2s", "[[nemesis]]\nat = \"3s\"\nfor = \"6s\"\nkind = \"pause\"\ntarget = \"c1\""), 1);
    let (start, end, _) = fault(&history, FaultKind::Pause);
    let lease = leases_of(&history, "c1")[0];
    let expired = expiry_of(&history, lease).expect("c1's lease expires while c1 is paused");
    assert!(expired > start && expired < end, "expired at {expired}, pause {start}..{end}");
    assert_eq!(verdict(&history, Property::LeaseSafety), Verdict::Pass);
}

#[test]
fn isolated_leader_is_replaced() {
    let faults =
        "[[nemesis]]\nat = \"3s\"\nfor = \"5s\"\nkind = \"partition\"\nshape = \"isolate\"\ntarget = \"leader\"";
    let history = run(&scenario("2s", faults), 2);
    let (start, end, targets) = fault(&history, FaultKind::Partition);
    let old = leaders(&history).into_iter().filter(|(t, _, _)| *t < start).last().expect("a leader before the fault");
    assert_eq!(targets, vec![old.1.clone()], "the isolated node is the leader of the time");
    let replaced =
        leaders(&history).into_iter().any(|(t, name, term)| t > start && t < end && name != old.1 && term > old.2);
    assert!(replaced, "another server leads a higher term during the partition");
}

#[test]
fn crashed_leader_is_replaced_and_rejoins_after_restart() {
    let history =
        run(&scenario("2s", "[[nemesis]]\nat = \"3s\"\nfor = \"4s\"\nkind = \"crash\"\ntarget = \"leader\""), 3);
    let (start, end, targets) = fault(&history, FaultKind::Crash);
    let crashed = &targets[0];
    assert!(leaders(&history).iter().any(|(t, name, _)| *t > start && *t < end && name != crashed));
    let rejoined =
        history.entries.iter().any(|e| e.node == *crashed && e.time_ns >= end && matches!(e.event, Event::Role { .. }));
    assert!(rejoined, "{crashed} restarts and reports its role again");
    let grants_after = history
        .entries
        .iter()
        .filter(|e| e.time_ns > end && matches!(e.event, Event::Ok { ret: Return::Locked { .. }, .. }))
        .count();
    assert!(grants_after > 0, "the lock keeps being granted after the restart");
}

#[test]
fn crashed_client_loses_its_session_and_its_belief() {
    let history = run(&scenario("2s", "[[nemesis]]\nat = \"1s\"\nfor = \"5s\"\nkind = \"crash\"\ntarget = \"c1\""), 4);
    let (start, end, _) = fault(&history, FaultKind::Crash);
    let lease = leases_of(&history, "c1")[0];
    let expired = expiry_of(&history, lease).expect("the dead client's lease expires");
    assert!(expired > start && expired < end);
    assert!(leases_of(&history, "c1").len() >= 2, "after its restart c1 opens a new session");
    assert_eq!(verdict(&history, Property::SingleHolder), Verdict::Pass, "a dead client believes nothing");
}

#[test]
fn slow_leader_clock_keeps_leases_alive_longer_in_true_time() {
    // The leader's clock at 0.5x: a paused client's 2 s lease lives about 4 s of true time.
    let extra = "[[clock]]\nnode = \"s1\"\nrate = 0.5\n[[nemesis]]\nat = \"3s\"\nfor = \"8s\"\nkind = \"pause\"\ntarget = \"c1\"";
    let history = run(&scenario("2s", extra), 5);
    assert_eq!(leaders(&history)[0].1, "s1", "s1 bootstraps and leads");
    let lease = leases_of(&history, "c1")[0];
    let expired = expiry_of(&history, lease).expect("the lease expires eventually");
    let (start, _, _) = fault(&history, FaultKind::Pause);
    assert!(expired > start + 3 * S, "a 2 s lease outlived 3 s of true time: expired at {expired}");
    let report = Property::LeaseSafety.check(&history);
    assert_eq!(report.verdict, Verdict::Pass);
    let late_ms: u64 = report.summary.split("expired ").nth(1).unwrap().split(" ms").next().unwrap().parse().unwrap();
    assert!(late_ms >= 1000, "the report states the lateness: {}", report.summary);
}

#[test]
fn fast_follower_clocks_depose_the_leader() {
    // At 10x, the followers' election timeouts (150-300 ms of their clocks) and their memory of
    // the leader (its lease, election_timeout_max of their clocks) last 15-30 ms of true time,
    // less than the 50 ms between heartbeats: they grant each other's pre-votes and elect.
    // Measured: one follower alone, or both at 5x, never depose it — pre-vote holds them off
    // as long as the other voter still hears the leader within its lease.
    let extra = "[[clock]]\nnode = \"s2\"\nrate = 10.0\n[[clock]]\nnode = \"s3\"\nrate = 10.0";
    let history = run(&scenario("2s", extra), 6);
    let elected = leaders(&history);
    assert_eq!(elected[0].1, "s1", "s1 bootstraps and leads");
    assert!(elected.iter().any(|(_, name, term)| name != "s1" && *term > 1), "{elected:?}");
}

#[test]
fn fast_leader_clock_expires_leases_early() {
    let extra = "[[nemesis]]\nat = \"2s\"\nfor = \"10s\"\nkind = \"clock-rate\"\ntarget = \"s1\"\nrate = 2.0\n\
                 [[nemesis]]\nat = \"3s\"\nfor = \"6s\"\nkind = \"pause\"\ntarget = \"c1\"";
    let history = run(&scenario("3s", extra), 7);
    let report = Property::LeaseSafety.check(&history);
    assert_eq!(report.verdict, Verdict::Fail, "{}", report.summary);
    assert!(report.findings[0].message.contains("early"), "{}", report.findings[0].message);
}

#[test]
fn forward_wall_clock_jump_on_the_leader_expires_no_lease_early() {
    // etcd's lessor times leases on the monotonic clock (Go's monotonic reading): a step of the
    // wall clock moves nothing. A paused client's lease still lives its whole TTL.
    let extra = "[[nemesis]]\nat = \"4s\"\nkind = \"clock-jump\"\ntarget = \"s1\"\nby = \"+20s\"\n\
                 [[nemesis]]\nat = \"3s\"\nfor = \"6s\"\nkind = \"pause\"\ntarget = \"c1\"";
    for seed in 1..=3 {
        let history = run(&scenario("3s", extra), seed);
        let (at, _, _) = fault(&history, FaultKind::ClockJump);
        let records: Vec<(u64, WhichClock)> = history
            .entries
            .iter()
            .filter_map(|e| match e.event {
                Event::Clock { clock, .. } if e.node == "s1" => Some((e.time_ns, clock)),
                _ => None,
            })
            .collect();
        // Recorded as the run starts and as the jump happens (within a millisecond of the fault).
        let kinds: Vec<WhichClock> = records.iter().map(|(_, kind)| *kind).collect();
        assert_eq!(kinds, [WhichClock::Wall, WhichClock::Monotonic, WhichClock::Wall], "{records:?}");
        assert!(records[0].0 < MS && records[1].0 < MS && records[2].0.abs_diff(at) < MS, "{records:?}");
        let report = Property::LeaseSafety.check(&history);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}: {}", report.summary);
        assert!(!expiries(&history).is_empty(), "seed {seed}: the paused client's lease does expire, on time");
    }
}

#[test]
fn clock_strobe_on_the_leader_expires_no_lease_early() {
    // c1, paused, stops renewing: its lease must expire on time despite the strobe.
    let extra = "[[nemesis]]\nat = \"3s\"\nfor = \"8s\"\nkind = \"clock-strobe\"\ntarget = \"s1\"\nby = \"+3s\"\nperiod = \"700ms\"\n\
                 [[nemesis]]\nat = \"3s\"\nfor = \"6s\"\nkind = \"pause\"\ntarget = \"c1\"";
    let history = run(&scenario("3s", extra), 9);
    fault(&history, FaultKind::ClockStrobe);
    // The strobe steps s1's wall clock back and forth (many wall records) and leaves the
    // monotonic clock, which the lessor reads, alone (its one record at the start).
    let count = |which: WhichClock| {
        history
            .entries
            .iter()
            .filter(|e| e.node == "s1" && matches!(e.event, Event::Clock { clock, .. } if clock == which))
            .count()
    };
    assert!(
        count(WhichClock::Wall) > 5 && count(WhichClock::Monotonic) == 1,
        "{} {}",
        count(WhichClock::Wall),
        count(WhichClock::Monotonic)
    );
    assert_eq!(verdict(&history, Property::LeaseSafety), Verdict::Pass);
    assert!(!expiries(&history).is_empty(), "leases still expire, on the monotonic clock");
}

#[test]
fn a_rate_change_moves_both_clocks() {
    // The same 2x clock as `fast_leader_clock_expires_leases_early`, recorded as one clock.
    let extra = "[[nemesis]]\nat = \"2s\"\nfor = \"10s\"\nkind = \"clock-rate\"\ntarget = \"s1\"\nrate = 2.0";
    let history = run(&scenario("3s", extra), 7);
    let kinds: Vec<WhichClock> = history
        .entries
        .iter()
        .filter_map(|e| match e.event {
            Event::Clock { clock, .. } if e.node == "s1" => Some(clock),
            _ => None,
        })
        .collect();
    assert!(!kinds.is_empty() && kinds.iter().all(|k| *k == WhichClock::Both), "{kinds:?}");
}

fn expiries(history: &History) -> Vec<u64> {
    history.entries.iter().filter(|e| matches!(e.event, Event::LeaseExpiry { .. })).map(|e| e.time_ns).collect()
}

#[test]
fn servers_cut_from_each_other_stop_progress_until_healed() {
    let faults = "[[nemesis]]\nat = \"4s\"\nfor = \"5s\"\nkind = \"partition\"\nshape = \"servers\"";
    let history = run(&scenario("2s", faults), 10);
    let (start, end, _) = fault(&history, FaultKind::Partition);
    let grants_in = |from: u64, to: u64| {
        history
            .entries
            .iter()
            .filter(|e| {
                (from..to).contains(&e.time_ns) && matches!(e.event, Event::Ok { ret: Return::Locked { .. }, .. })
            })
            .count()
    };
    // A second to notice and for in-flight grants to land; then nothing until the heal.
    assert_eq!(grants_in(start + S, end), 0, "no quorum, no grant");
    assert!(grants_in(end, history.duration_ns) > 0, "progress resumes after the heal");
}

/// etcd's members relay a keepalive to the leader's lessor (3.4 `LeaseRenew` forwards it over
/// the peer URL): a client cut from the leader alone renews through a follower and keeps its
/// lease; cut from every server, it loses it.
#[test]
fn a_client_cut_from_the_leader_alone_keeps_its_lease_through_a_follower() {
    let faults = "[[nemesis]]\nat = \"3s\"\nfor = \"8s\"\nkind = \"partition\"\nshape = \"one-way\"\ntargets = [\"c1\", \"leader\"]";
    let history = run(&scenario("2s", faults), 11);
    let (start, end, targets) = fault(&history, FaultKind::Partition);
    assert_eq!(targets[0], "c1");
    let lease = *leases_of(&history, "c1").first().unwrap();
    assert!(expiry_of(&history, lease).is_none_or(|t| t > end), "c1 renews through a follower");
    let renewed = outcomes(&history, "c1", "lease_keep_alive", start, end).iter().filter(|(k, _)| *k == "ok").count();
    assert!(renewed > 0, "no keepalive of c1 was answered during the cut");

    let faults =
        "[[nemesis]]\nat = \"3s\"\nfor = \"8s\"\nkind = \"partition\"\nshape = \"clients\"\ntargets = [\"c1\"]";
    let history = run(&scenario("2s", faults), 11);
    let (start, end, _) = fault(&history, FaultKind::Partition);
    let lease = *leases_of(&history, "c1").first().unwrap();
    let expired = expiry_of(&history, lease).expect("c1's keepalives reach no server");
    assert!(expired > start && expired < end);
    let c2_lease = leases_of(&history, "c2")[0];
    assert!(expiry_of(&history, c2_lease).is_none_or(|t| t > end), "c2 keeps its lease");
}

#[test]
fn packet_loss_makes_operations_time_out() {
    let faults = "[[nemesis]]\nat = \"3s\"\nfor = \"8s\"\nkind = \"packet-loss\"\nrate = 0.6";
    let history = run(&scenario("2s", faults), 12);
    let (start, end, _) = fault(&history, FaultKind::PacketLoss);
    let unknown = ["c1", "c2"]
        .iter()
        .flat_map(|c| outcomes(&history, c, "lease_keep_alive", start, end))
        .filter(|(kind, _)| *kind == "info")
        .count();
    assert!(unknown > 0, "lost messages leave keepalives with unknown outcomes");
    let before = ["c1", "c2"]
        .iter()
        .flat_map(|c| outcomes(&history, c, "lease_keep_alive", 0, start))
        .filter(|(k, _)| *k == "info")
        .count();
    assert_eq!(before, 0, "no losses before the fault");
}

#[test]
fn latency_slows_every_round_trip() {
    // Below the clients' 500 ms RPC timeout, so the round trips complete, slowly.
    let faults = "[[nemesis]]\nat = \"3s\"\nfor = \"8s\"\nkind = \"latency\"\nmin = \"100ms\"\nmax = \"150ms\"";
    let history = run(&scenario("3s", faults), 13);
    let (start, end, _) = fault(&history, FaultKind::Latency);
    let slow: Vec<u64> = ["c1", "c2"]
        .iter()
        .flat_map(|c| outcomes(&history, c, "write", start, end - S))
        .filter(|(k, _)| *k == "ok")
        .map(|(_, d)| d)
        .collect();
    assert!(!slow.is_empty() && slow.iter().all(|d| *d >= 200_000_000), "two slow hops per write: {slow:?}");
    let fast = outcomes(&history, "c1", "write", 0, start);
    assert!(fast.iter().all(|(_, d)| *d < 50_000_000), "{fast:?}");
}

#[test]
fn dropped_write_replies_leave_the_clients_writes_unknown() {
    let faults =
        "[[nemesis]]\nat = \"2s\"\nfor = \"6s\"\nkind = \"drop-replies\"\ntarget = \"c1\"\nreplies = \"write\"";
    let history = run(&scenario("3s", faults), 14);
    let (start, end, _) = fault(&history, FaultKind::DropReplies);
    let mut lock_outcomes = outcomes(&history, "c1", "lock", start, end);
    lock_outcomes.extend(outcomes(&history, "c1", "unlock", start, end));
    assert!(lock_outcomes.iter().any(|(k, _)| *k == "info"), "{lock_outcomes:?}");
    let keepalives = outcomes(&history, "c1", "lease_keep_alive", start, end);
    assert!(keepalives.iter().all(|(k, _)| *k == "ok"), "keepalive replies still arrive: {keepalives:?}");
}

#[test]
fn link_delay_holds_back_one_clients_requests() {
    // Below the client's 500 ms RPC timeout, so the requests arrive, late.
    let faults =
        "[[nemesis]]\nat = \"2s\"\nfor = \"10s\"\nkind = \"link-delay\"\nfrom = \"c1\"\nto = \"s1\"\ndelay = \"300ms\"";
    let history = run(&scenario("3s", faults), 15);
    let (start, end, _) = fault(&history, FaultKind::LinkDelay);
    let c1: Vec<u64> = outcomes(&history, "c1", "lease_keep_alive", start, end - S)
        .into_iter()
        .filter(|(k, _)| *k == "ok")
        .map(|(_, d)| d)
        .collect();
    assert!(!c1.is_empty() && c1.iter().all(|d| *d >= 300_000_000), "{c1:?}");
    let c2: Vec<u64> = outcomes(&history, "c2", "lease_keep_alive", start, end).into_iter().map(|(_, d)| d).collect();
    assert!(c2.iter().all(|d| *d < 100_000_000), "c2's link is not delayed: {c2:?}");
}

/// madsim's determinism check with every fault kind enabled at once (issue 4).
#[test]
fn determinism_holds_with_every_fault_kind() {
    fn body() -> impl std::future::Future<Output = History> {
        let mut loaded = load::resolve("chaos-fenced-mutex").expect("library scenario");
        loaded.scenario.chaos.as_mut().expect("a chaos scenario").swarm = false;
        loaded.scenario.duration = coordsim_sim::scenario::Dur::parse("30s").unwrap();
        loaded.scenario.chaos.as_mut().unwrap().stop = coordsim_sim::scenario::Dur::parse("25s").unwrap();
        coordsim_sim::harness::simulate(loaded.scenario)
    }
    for seed in 1..=5 {
        let history = std::thread::spawn(move || {
            madsim::runtime::Runtime::check_determinism(seed, madsim::Config::default(), body)
        })
        .join()
        .unwrap_or_else(|_| panic!("seed {seed}: the two runs diverged"));
        let kinds: std::collections::BTreeSet<FaultKind> = history
            .entries
            .iter()
            .filter_map(|e| match &e.event {
                Event::Fault { kind, .. } => Some(*kind),
                _ => None,
            })
            .collect();
        assert!(kinds.len() >= 6, "seed {seed}: many kinds hit: {kinds:?}");
    }
}
