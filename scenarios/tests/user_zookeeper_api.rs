//! coordsim::zookeeper, the zookeeper-client-shaped API, against the simulated ensemble: each
//! test runs a script in a Testbed client and checks what it saw and what the history says.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim::testbed::{Fault, Testbed};
use coordsim::zookeeper::{self, Acls, AddWatchMode, CreateMode, Error, EventType};
use coordsim_checker::history::{Call, Event, Return};
use coordsim_checker::verdict::Verdict;

type Log = Arc<Mutex<Vec<String>>>;

const TIMEOUT: Duration = Duration::from_secs(4);

fn run<F, Fut>(testbed: Testbed, script: F) -> (Vec<String>, coordsim::testbed::Run)
where
    F: Fn(coordsim::testbed::Ctx, Log) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let log: Log = Arc::default();
    let shared = log.clone();
    let script = Arc::new(script);
    let testbed = testbed.client(move |ctx| {
        let (log, script) = (shared.clone(), script.clone());
        async move {
            script(ctx, log.clone()).await;
            log.lock().unwrap().push("done".into());
        }
    });
    let run = testbed.try_run_seed(1).expect("the run completes");
    let log = log.lock().unwrap().clone();
    assert_eq!(log.last().map(String::as_str), Some("done"), "the script finished: {log:?}");
    (log, run)
}

fn testbed() -> Testbed {
    Testbed::new("zk-api").duration(Duration::from_secs(30))
}

fn note(log: &Log, line: impl Into<String>) {
    log.lock().unwrap().push(line.into());
}

fn persistent() -> zookeeper::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

#[test]
fn znode_calls_answer_as_zookeeper_and_writes_are_judged_linearizable() {
    let (log, run) = run(testbed(), |ctx, log| async move {
        let zk = ctx.zookeeper(TIMEOUT).await.unwrap();
        let (stat, sequence) = zk.create("/app", b"v1", &persistent()).await.unwrap();
        note(&log, format!("created version {} seq {}", stat.version, sequence.into_i64()));
        note(&log, format!("again {:?}", zk.create("/app", b"v2", &persistent()).await.err()));
        let (data, stat) = zk.get_data("/app").await.unwrap();
        note(&log, format!("data {} czxid>0 {}", String::from_utf8(data).unwrap(), stat.czxid > 0));
        let stat = zk.set_data("/app", b"v2", Some(0)).await.unwrap();
        note(&log, format!("set version {}", stat.version));
        note(&log, format!("stale version {:?}", zk.set_data("/app", b"v3", Some(0)).await.err()));
        zk.set_data("/app", b"v3", None).await.unwrap();
        note(&log, format!("missing {:?}", zk.get_data("/none").await.err()));
        zk.create("/app/child", b"", &persistent()).await.unwrap();
        note(&log, format!("not empty {:?}", zk.delete("/app", None).await.err()));
        note(&log, format!("children {:?}", zk.list_children("/app").await.unwrap()));
        zk.delete("/app/child", None).await.unwrap();
        zk.delete("/app", None).await.unwrap();
        note(&log, format!("gone {:?}", zk.check_stat("/app").await.unwrap()));
    });
    assert_eq!(
        log,
        [
            "created version 0 seq -1",
            "again Some(NodeExists)",
            "data v1 czxid>0 true",
            "set version 1",
            "stale version Some(BadVersion)",
            "missing Some(NoNode)",
            "not empty Some(NotEmpty)",
            "children [\"child\"]",
            "gone None",
            "done"
        ]
    );
    let judged = run
        .history
        .entries
        .iter()
        .filter(|e| {
            matches!(&e.event, Event::Invoke { call: Call::Cas { .. } | Call::Put { .. } | Call::Delete { .. }, .. })
        })
        .count();
    assert_eq!(judged, 7, "creates, unversioned setData and deletes are judged");
    assert_eq!(run.verdict("linearizable"), Some(Verdict::Pass));
}

#[test]
fn ephemeral_sequential_nodes_carry_the_session_and_go_with_it() {
    let (log, run) = run(testbed(), |ctx, log| async move {
        let zk = ctx.zookeeper(TIMEOUT).await.unwrap();
        zk.create("/q", b"", &persistent()).await.unwrap();
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (first, a) = zk.create("/q/n-", b"", &options).await.unwrap();
        let (_, b) = zk.create("/q/n-", b"", &options).await.unwrap();
        note(&log, format!("owner {}", first.ephemeral_owner == zk.session_id().0));
        note(&log, format!("session {}", zk.session_id().0));
        note(&log, format!("sequences {a} {b}"));
        zk.close();
        note(&log, format!("after close {:?}", zk.list_children("/q").await.err()));
        let other = ctx.zookeeper(TIMEOUT).await.unwrap();
        // Another session may read from a follower that has not applied the second create yet
        // (ZooKeeper orders reads only within a session): sync first, as a ZooKeeper user must.
        other.sync("/q").await.unwrap();
        note(&log, format!("still there {}", other.list_children("/q").await.unwrap().len()));
        coordsim::time::sleep(TIMEOUT * 2).await;
        note(&log, format!("expired with the session {:?}", other.list_children("/q").await.unwrap()));
    });
    // The history records each ephemeral create's owning session, the id its expiry has.
    let session: i64 = log[1].strip_prefix("session ").unwrap().parse().unwrap();
    let owners: Vec<Option<i64>> = run
        .history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Ok { ret: Return::Api { detail, ephemeral_owner, .. }, .. } if detail.starts_with("/q/n-") => {
                Some(*ephemeral_owner)
            }
            _ => None,
        })
        .collect();
    assert_eq!(owners, [Some(session), Some(session)]);
    let expired =
        run.history.entries.iter().any(|e| matches!(e.event, Event::LeaseExpiry { lease, .. } if lease == session));
    assert!(expired, "the session's expiry is recorded under the same id");
    assert_eq!(log[..2], ["owner true", format!("session {session}").as_str()]);
    assert_eq!(
        log[2..],
        [
            "sequences 0000000000 0000000001",
            "after close Some(ClientClosed)",
            "still there 2",
            "expired with the session []",
            "done"
        ]
    );
}

#[test]
fn one_shot_and_persistent_watchers_fire_on_their_changes() {
    let (log, _) = run(testbed(), |ctx, log| async move {
        let zk = ctx.zookeeper(TIMEOUT).await.unwrap();
        let (stat, created) = zk.check_and_watch_stat("/w").await.unwrap();
        note(&log, format!("absent {}", stat.is_none()));
        let mut recursive = zk.watch("/w", AddWatchMode::PersistentRecursive).await.unwrap();
        zk.create("/w", b"1", &persistent()).await.unwrap();
        let event = created.changed().await;
        note(&log, format!("{:?} {}", event.event_type, event.path));
        let (_, _, data) = zk.get_and_watch_data("/w").await.unwrap();
        let (_, children) = zk.list_and_watch_children("/w").await.unwrap();
        zk.set_data("/w", b"2", None).await.unwrap();
        note(&log, format!("{:?}", data.changed().await.event_type));
        zk.create("/w/c", b"", &persistent()).await.unwrap();
        note(&log, format!("{:?}", children.changed().await.event_type));
        let seen: Vec<EventType> = vec![
            recursive.changed().await.event_type,
            recursive.changed().await.event_type,
            recursive.changed().await.event_type,
        ];
        note(&log, format!("recursive {seen:?}"));
    });
    assert_eq!(
        log,
        [
            "absent true",
            "NodeCreated /w",
            "NodeDataChanged",
            "NodeChildrenChanged",
            "recursive [NodeCreated, NodeDataChanged, NodeCreated]",
            "done"
        ]
    );
}

#[test]
fn a_client_cut_off_past_its_timeout_is_disconnected_then_learns_its_session_expired() {
    // c1 is cut from every server from 5 s to 15 s, with a 4 s session.
    let testbed =
        testbed().fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)));
    let (log, run) = run(testbed, |ctx, log| async move {
        let zk = ctx.zookeeper(TIMEOUT).await.unwrap();
        let mut states = zk.state_watcher();
        note(&log, format!("{:?}", states.state()));
        let disconnected = states.changed().await;
        note(&log, format!("{disconnected:?}"));
        let expired = states.changed().await;
        note(&log, format!("{expired:?}"));
        note(&log, format!("call after expiry {:?}", zk.get_data("/x").await.err()));
    });
    assert_eq!(log, ["SyncConnected", "Disconnected", "Expired", "call after expiry Some(SessionExpired)", "done"]);
    assert_eq!(run.verdict("lease_safety"), Some(Verdict::Pass));
}

/// zookeeper-client 0.11's timers for a 4 s session (its `reset_timeout`): the connection is given
/// up after 1.6 s without an answer, the request in flight fails with `Custom`; a request made
/// while disconnected waits, and fails with SessionExpired when the client expires the session on
/// its own, 5.6 s after it last heard from a server, while still cut off. The same script on real
/// ZooKeeper: real/tests/zookeeper_session_states.rs.
#[test]
fn a_cut_off_client_gives_its_connection_up_and_expires_its_session_on_the_crates_timers() {
    let testbed =
        testbed().fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)));
    let (log, _) = run(testbed, |ctx, log| async move {
        let zk = ctx.zookeeper(TIMEOUT).await.unwrap();
        let seconds = |ctx: &coordsim::testbed::Ctx| ctx.monotonic_now_ns() as f64 / 1e9;
        let mut last_answer = 0.0;
        // Reads every 100 ms: each answer is heard; the one in flight at the cut is never answered.
        let in_flight = loop {
            match zk.get_data("/absent").await {
                Err(Error::NoNode) => last_answer = seconds(&ctx),
                other => break other.err(),
            }
            ctx.sleep(Duration::from_millis(100)).await;
        };
        let lost = seconds(&ctx) - last_answer;
        note(&log, format!("in flight: {}", matches!(in_flight, Some(Error::Custom(_)))));
        note(&log, format!("{:?} after {}", zk.state(), (1.5..=1.7).contains(&lost)));
        let waited = zk.get_data("/absent").await.err();
        let expired = seconds(&ctx) - last_answer;
        note(&log, format!("{waited:?} {:?} after {}", zk.state(), (5.5..=5.7).contains(&expired)));
        // Healed at 15 s: still expired.
        ctx.sleep(Duration::from_secs(6)).await;
        note(&log, format!("{:?}", zk.get_data("/absent").await.err()));
    });
    assert_eq!(
        log,
        [
            "in flight: true",
            "Disconnected after true",
            "Some(SessionExpired) Expired after true",
            "Some(SessionExpired)",
            "done"
        ]
    );
}

#[test]
fn bad_calls_are_errors_not_panics() {
    let (log, _) = run(testbed(), |ctx, log| async move {
        let wrong = zookeeper::Client::connector().connect("nowhere:2181").await;
        note(&log, format!("{:?}", wrong.err().map(|e| matches!(e, Error::BadArguments(_)))));
        let chroot = zookeeper::Client::connect(&format!("{}/app", ctx.zookeeper_cluster())).await;
        note(&log, format!("{:?}", chroot.err().map(|e| matches!(e, Error::BadArguments(_)))));
        let zk = ctx.zookeeper(TIMEOUT).await.unwrap();
        let bytes = zk.create("/b", &[0xff], &persistent()).await;
        note(&log, format!("{:?}", bytes.err().map(|e| matches!(e, Error::BadArguments(_)))));
        let container = zk.create("/c", b"", &CreateMode::Container.with_acls(Acls::anyone_all())).await;
        note(&log, format!("{:?}", container.err()));
        note(&log, format!("{:?}", zk.create("/no/parent", b"", &persistent()).await.err()));
        let short = zookeeper::Client::connector()
            .with_session_timeout(Duration::from_millis(10))
            .connect(&ctx.zookeeper_cluster())
            .await;
        note(&log, format!("{:?}", short.err().map(|e| matches!(e, Error::BadArguments(_)))));
    });
    assert_eq!(
        log,
        ["Some(true)", "Some(true)", "Some(true)", "Some(Unimplemented)", "Some(NoNode)", "Some(true)", "done"]
    );
}

#[test]
fn a_multi_applies_all_or_nothing_and_names_the_failing_op() {
    let (log, _) = run(testbed(), |ctx, log| async move {
        let zk = ctx.zookeeper(TIMEOUT).await.unwrap();
        let mut multi = zk.new_multi_writer();
        multi.add_create("/m", b"", &persistent()).unwrap();
        multi.add_create("/m/a", b"1", &persistent()).unwrap();
        note(&log, format!("{}", multi.commit().await.unwrap().len()));
        let mut failing = zk.new_multi_writer();
        failing.add_set_data("/m/a", b"2", None).unwrap();
        failing.add_check_version("/m", 5).unwrap();
        note(&log, format!("{}", failing.commit().await.unwrap_err()));
        note(&log, String::from_utf8(zk.get_data("/m/a").await.unwrap().0).unwrap());
    });
    assert_eq!(log, ["2", "operation at index 1 failed: bad version", "1", "done"]);
}
