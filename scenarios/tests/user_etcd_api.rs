//! coordsim::etcd, the etcd-client-shaped API, against the simulated cluster: each test runs a
//! script in a Testbed client and checks what it saw (etcd's answers, etcd's errors) and what
//! the history and its checkers say.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim::etcd::{
    self, Code, Compare, CompareOp, Error, EventType, GetOptions, PutOptions, Txn, TxnOp, WatchOptions,
};
use coordsim::testbed::{Checker, Testbed};
use coordsim_checker::history::{Call, Event, History};
use coordsim_checker::verdict::{PropertyReport, Verdict};

type Log = Arc<Mutex<Vec<String>>>;

/// Runs `script` as the only client of a 3-server cluster on seed 1; returns its log and the run.
fn run<F, Fut>(script: F) -> (Vec<String>, coordsim::testbed::Run)
where
    F: Fn(etcd::Client, Log) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let log: Log = Arc::default();
    let shared = log.clone();
    let script = Arc::new(script);
    let testbed = Testbed::new("etcd-api").duration(Duration::from_secs(20)).client(move |ctx| {
        let (log, script) = (shared.clone(), script.clone());
        async move {
            let client = ctx.etcd().await.expect("connects");
            script(client, log.clone()).await;
            log.lock().unwrap().push("done".into());
        }
    });
    let run = testbed.try_run_seed(1).expect("the run completes");
    let log = log.lock().unwrap().clone();
    assert_eq!(log.last().map(String::as_str), Some("done"), "the script finished: {log:?}");
    (log, run)
}

fn note(log: &Log, line: impl Into<String>) {
    log.lock().unwrap().push(line.into());
}

#[test]
fn kv_calls_answer_as_etcd_and_are_judged_linearizable() {
    let (log, run) = run(|mut client, log| async move {
        let put = client.put("k1", "v1", None).await.unwrap();
        let rev = put.header().unwrap().revision();
        let got = client.get("k1", None).await.unwrap();
        note(&log, format!("get {} mod {}", got.kvs()[0].value_str().unwrap(), got.kvs()[0].mod_revision() == rev));
        let swapped = client
            .txn(
                Txn::new()
                    .when([Compare::value("k1", CompareOp::Equal, "v1")])
                    .and_then([TxnOp::put("k1", "v2", None)]),
            )
            .await
            .unwrap();
        note(&log, format!("cas {}", swapped.succeeded()));
        let again = client
            .txn(
                Txn::new()
                    .when([Compare::value("k1", CompareOp::Equal, "v1")])
                    .and_then([TxnOp::put("k1", "v3", None)]),
            )
            .await
            .unwrap();
        note(&log, format!("cas {}", again.succeeded()));
        client.put("dir/a", "1", None).await.unwrap();
        client.put("dir/b", "2", None).await.unwrap();
        let listed = client.get("dir/", Some(GetOptions::new().with_prefix())).await.unwrap();
        note(&log, format!("prefix {} count {}", listed.kvs().len(), listed.count()));
        let deleted = client.delete("k1", None).await.unwrap();
        note(&log, format!("deleted {}", deleted.deleted()));
        let missing = client.get("k1", None).await.unwrap();
        note(&log, format!("after delete {}", missing.kvs().len()));
    });
    assert_eq!(
        log,
        ["get v1 mod true", "cas true", "cas false", "prefix 2 count 2", "deleted 1", "after delete 0", "done"]
    );
    let calls: Vec<&str> = run
        .history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Invoke { call: Call::Put { .. }, .. } => Some("put"),
            Event::Invoke { call: Call::Get { .. }, .. } => Some("get"),
            Event::Invoke { call: Call::Cas { .. }, .. } => Some("cas"),
            Event::Invoke { call: Call::Delete { .. }, .. } => Some("delete"),
            Event::Invoke { call: Call::Api { .. }, .. } => Some("api"),
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["put", "get", "cas", "cas", "put", "put", "api", "delete", "get"]);
    assert_eq!(run.verdict("linearizable"), Some(Verdict::Pass));
    assert!(run.as_expected(), "{:?}", run.failure());
}

#[test]
fn unknown_leases_get_etcds_answers() {
    let (log, _) = run(|mut client, log| async move {
        match client.put("k", "v", Some(PutOptions::new().with_lease(12345))).await {
            Err(Error::GRpcStatus(status)) => note(&log, format!("put {:?} {}", status.code(), status.message())),
            other => note(&log, format!("put {other:?}")),
        }
        match client.lease_keep_alive(12345).await {
            Err(Error::LeaseKeepAliveError(message)) => note(&log, format!("keepalive {message}")),
            Err(other) => note(&log, format!("keepalive {other:?}")),
            Ok(_) => note(&log, "keepalive ok"),
        }
        match client.lease_revoke(12345).await {
            Err(Error::GRpcStatus(status)) => note(&log, format!("revoke {:?}", status.code())),
            other => note(&log, format!("revoke {other:?}")),
        }
        let ttl = client.lease_time_to_live(12345, None).await.unwrap();
        note(&log, format!("ttl {}", ttl.ttl()));
    });
    assert_eq!(
        log,
        [
            "put NotFound etcdserver: requested lease not found",
            "keepalive lease not found",
            "revoke NotFound",
            "ttl -1",
            "done"
        ]
    );
}

#[test]
fn a_lease_left_unrenewed_expires_and_its_keepalive_answers_ttl_zero() {
    let (log, run) = run(|mut client, log| async move {
        let lease = client.lease_grant(2, None).await.unwrap();
        note(&log, format!("granted {}", lease.ttl()));
        client.put("owned", "x", Some(PutOptions::new().with_lease(lease.id()))).await.unwrap();
        let (mut keeper, mut answers) = client.lease_keep_alive(lease.id()).await.unwrap();
        coordsim::time::sleep(Duration::from_secs(5)).await;
        keeper.keep_alive().await.unwrap();
        let answer = answers.message().await.unwrap().unwrap();
        note(&log, format!("keepalive ttl {}", answer.ttl()));
        let gone = client.get("owned", None).await.unwrap();
        note(&log, format!("key {}", gone.kvs().len()));
    });
    assert_eq!(log, ["granted 2", "keepalive ttl 0", "key 0", "done"]);
    // The leased key is changed by the lease's expiry, which no client records: it is left out
    // of the linearizability check instead of failing it.
    assert_eq!(run.verdict("linearizable"), Some(Verdict::Pass));
    assert_eq!(run.verdict("lease_liveness"), Some(Verdict::Pass));
}

#[test]
fn watches_start_now_or_at_a_revision_and_end_at_compaction() {
    let (log, run) = run(|mut client, log| async move {
        let first = client.put("w", "1", None).await.unwrap().header().unwrap().revision();
        let mut from_now = client.watch("w", None).await.unwrap();
        let created = from_now.message().await.unwrap().unwrap();
        note(&log, format!("created {}", created.created()));
        client.put("w", "2", None).await.unwrap();
        let changed = from_now.message().await.unwrap().unwrap();
        let event = &changed.events()[0];
        note(&log, format!("{:?} {}", event.event_type(), event.kv().unwrap().value_str().unwrap()));
        let mut from_first = client.watch("w", Some(WatchOptions::new().with_start_revision(first))).await.unwrap();
        from_first.message().await.unwrap().unwrap();
        let replayed = from_first.message().await.unwrap().unwrap();
        let values: Vec<&str> = replayed.events().iter().map(|e| e.kv().unwrap().value_str().unwrap()).collect();
        note(&log, format!("replayed {values:?}"));
        client.delete("w", None).await.unwrap();
        let deleted = from_now.message().await.unwrap().unwrap();
        note(&log, format!("{:?}", deleted.events()[0].event_type() == EventType::Delete));
        let now = client.put("w", "3", None).await.unwrap().header().unwrap().revision();
        client.compact(now, None).await.unwrap();
        let mut stale = client.watch("w", Some(WatchOptions::new().with_start_revision(first))).await.unwrap();
        stale.message().await.unwrap().unwrap();
        let refused = stale.message().await.unwrap().unwrap();
        note(&log, format!("canceled {} at {}", refused.canceled(), refused.compact_revision() == now));
        from_now.cancel(0).await.unwrap();
    });
    assert_eq!(log, ["created true", "Put 2", "replayed [\"1\", \"2\"]", "true", "canceled true at true", "done"]);
    assert_eq!(run.verdict("watch"), Some(Verdict::Pass), "{:?}", run.failure());
    let starts = run.history.entries.iter().filter(|e| matches!(e.event, Event::WatchStart { .. })).count();
    assert_eq!(starts, 3);
}

#[test]
fn bad_calls_are_errors_not_panics() {
    let (log, _) = run(|mut client, log| async move {
        match client.put(vec![0xff, 0xfe], "v", None).await {
            Err(Error::InvalidArgs(_)) => note(&log, "bytes refused"),
            other => note(&log, format!("{other:?}")),
        }
        match client.lock("/locks/x", None).await {
            Err(Error::InvalidArgs(_)) => note(&log, "lock without lease refused"),
            other => note(&log, format!("{other:?}")),
        }
        match client.get("k", Some(GetOptions::new().with_revision(1_000_000))).await {
            Err(Error::GRpcStatus(status)) if status.code() == Code::OutOfRange => note(&log, "future revision"),
            other => note(&log, format!("{other:?}")),
        }
        match etcd::Client::connect(["nowhere:2379"], None).await {
            Err(Error::EndpointError(_)) => note(&log, "unknown endpoint"),
            Err(other) => note(&log, format!("{other:?}")),
            Ok(_) => note(&log, "connected"),
        }
    });
    assert_eq!(log, ["bytes refused", "lock without lease refused", "future revision", "unknown endpoint", "done"]);
}

#[test]
fn lock_service_grants_with_a_fencing_token_and_the_lock_properties_judge_it() {
    let (log, run) = run(|mut client, log| async move {
        let lease = client.lease_grant(5, None).await.unwrap().id();
        let held = client.lock("/locks/r", Some(etcd::LockOptions::new().with_lease(lease))).await.unwrap();
        let key = String::from_utf8(held.key().to_vec()).unwrap();
        note(&log, format!("held {}", key.starts_with("/locks/r/")));
        client.unlock(key).await.unwrap();
        note(&log, "released");
    });
    assert_eq!(log, ["held true", "released", "done"]);
    assert_eq!(run.verdict("grant_live_lease"), Some(Verdict::Pass));
    assert_eq!(run.verdict("mutual_exclusion"), Some(Verdict::Pass));
}

/// A property of the user's: no key `dir/...` is ever written.
struct NoDirWrites;

impl Checker for NoDirWrites {
    fn id(&self) -> &str {
        "no_dir_writes"
    }

    fn check(&self, history: &History) -> PropertyReport {
        let writes = history
            .entries
            .iter()
            .filter(
                |e| matches!(&e.event, Event::Invoke { call: Call::Put { key, .. }, .. } if key.starts_with("dir/")),
            )
            .count();
        PropertyReport {
            property: String::new(),
            verdict: if writes == 0 { Verdict::Pass } else { Verdict::Fail },
            summary: format!("{writes} writes under dir/"),
            findings: Vec::new(),
        }
    }
}

#[test]
fn a_users_checker_is_judged_with_the_built_in_properties() {
    let testbed =
        Testbed::new("user-checker").duration(Duration::from_secs(5)).checker(NoDirWrites).client(|ctx| async move {
            let mut client = ctx.etcd().await.unwrap();
            client.put("dir/x", "1", None).await.unwrap();
        });
    let run = testbed.run_seed(1);
    assert_eq!(run.verdict("no_dir_writes"), Some(Verdict::Fail));
    assert!(!run.as_expected());
    assert!(run.failure().unwrap().starts_with("no_dir_writes is fail (expected pass)"));
    let report = testbed.write_report(&run).unwrap();
    assert!(std::fs::read_to_string(&report).unwrap().contains("no_dir_writes"));
    // Written again over its own files: fine. A user's file where a report goes stays as it was,
    // and nothing else of the seed's is written (docs/hostile-input.md).
    testbed.write_report(&run).unwrap();
    let out = std::env::temp_dir().join(format!("coordsim-testbed-owned-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let seed_dir = out.join("user-checker").join("seed-1");
    std::fs::create_dir_all(&seed_dir).unwrap();
    std::fs::write(seed_dir.join("report.html"), "my notes").unwrap();
    let error = testbed.clone().out_dir(&out).write_report(&run).unwrap_err().to_string();
    assert!(error.contains("report.html: exists and was not written by coordsim"), "{error}");
    assert_eq!(std::fs::read_to_string(seed_dir.join("report.html")).unwrap(), "my notes");
    assert!(!seed_dir.join("history.json").exists());
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_scenario_file_states_what_it_expects_of_a_users_checker() {
    let text = "name = \"mine\"\nsummary = \"\"\nduration = \"5s\"\n[cluster]\nservers = 3\n[clients]\ncount = 1\n\
                [expect]\nno_dir_writes = \"fail\"\n";
    let body = |ctx: coordsim::testbed::Ctx| async move {
        let mut client = ctx.etcd().await.unwrap();
        client.put("dir/x", "1", None).await.unwrap();
    };
    let testbed = Testbed::from_toml("mine.toml", text).unwrap().checker(NoDirWrites).client(body);
    let run = testbed.run_seed(1);
    assert_eq!(run.verdict("no_dir_writes"), Some(Verdict::Fail));
    assert!(run.as_expected(), "the file expects the checker to fail: {:?}", run.failure());
    // In code, the expectation given with the checker wins over the file's.
    let strict = Testbed::from_toml("mine.toml", text)
        .unwrap()
        .checker_expecting(NoDirWrites, coordsim_sim::scenario::Expectation::Pass)
        .client(body);
    assert!(!strict.run_seed(1).as_expected());
    // A key that names no property and no checker of the Testbed is refused by name.
    let error = Testbed::from_toml("mine.toml", text).unwrap().client(body).validate().unwrap_err();
    assert!(error.contains("expect.no_dir_writes") && error.contains("its checkers: none"), "{error}");
}

#[test]
fn a_testbed_without_clients_or_with_a_workload_is_refused_with_the_field() {
    assert!(Testbed::new("empty").validate().unwrap_err().contains("no clients"));
    let text = "name = \"x\"\nsummary = \"\"\nduration = \"5s\"\n[cluster]\nservers = 3\n[clients]\ncount = 1\n[lock]\nrecipe = \"etcd-mutex\"\nname = \"/l\"\nttl = \"5s\"\n";
    let error = Testbed::from_toml("mine.toml", text).err().unwrap().to_string();
    assert!(error.starts_with("mine.toml:"), "{error}");
    assert!(error.contains("field `lock`"), "{error}");
    let unknown_node = Testbed::new("bad-fault")
        .fault(coordsim::testbed::Fault::pause("c9"))
        .client(|_ctx| async {})
        .validate()
        .unwrap_err();
    assert!(unknown_node.contains("nemesis[0]"), "{unknown_node}");
}

#[test]
fn status_names_the_leader_and_member_list_every_server() {
    let (log, _) = run(|mut client, log| async move {
        let members = client.member_list().await.unwrap();
        let names: Vec<&str> = members.members().iter().map(|m| m.name()).collect();
        note(&log, names.join(","));
        // Give the cluster a leader and a write, then ask.
        client.put("k", "v", None).await.unwrap();
        let status = client.status().await.unwrap();
        note(&log, format!("leader known {}", (1..=3).contains(&status.leader())));
        note(&log, format!("applied {}", status.raft_applied_index() > 0 && status.raft_term() > 0));
    });
    assert_eq!(log, ["s1,s2,s3", "leader known true", "applied true", "done"]);
}

/// A client reaches only the endpoints it is given, as etcd-client does: given s2 alone, its put
/// fails while s2 is paused (before, the simulated client went round the pause through s1, which
/// a real client given one endpoint cannot), and succeeds through s2 (a follower, which forwards
/// it to the leader) once s2 is back.
#[test]
fn a_client_reaches_only_the_endpoints_it_names() {
    let log: Log = Arc::default();
    let shared = log.clone();
    let testbed = Testbed::new("one-endpoint")
        .duration(Duration::from_secs(12))
        .fault(coordsim::testbed::Fault::pause("s2").at(Duration::from_secs(3)).lasting(Duration::from_secs(4)))
        .client(move |ctx| {
            let log = shared.clone();
            async move {
                let options = etcd::ConnectOptions::new().with_timeout(Duration::from_secs(1));
                let mut client = etcd::Client::connect(["s2:2379"], Some(options)).await.expect("connects");
                ctx.sleep(Duration::from_secs(4)).await;
                match client.put("k", "during", None).await {
                    Err(Error::GRpcStatus(status)) if status.code() == Code::DeadlineExceeded => {
                        note(&log, "no answer while s2 is paused")
                    }
                    other => note(&log, format!("{other:?}")),
                }
                ctx.sleep(Duration::from_secs(4)).await;
                match client.put("k", "after", None).await {
                    Ok(_) => note(&log, "put through s2"),
                    Err(error) => note(&log, format!("{error:?}")),
                }
            }
        });
    let run = testbed.try_run_seed(1).expect("the run completes");
    assert_eq!(*log.lock().unwrap(), ["no answer while s2 is paused", "put through s2"]);
    assert_eq!(run.verdict("linearizable"), Some(Verdict::Pass), "{:?}", run.failure());
}
