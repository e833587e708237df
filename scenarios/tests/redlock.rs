//! Redlock on independent Redis servers (issue 18): the library's teaching scenarios fail where
//! Kleppmann's counterexamples say and pass once their fault is taken away or answered as
//! Redlock's author proposes; the etcd mutex under the same server clock jump stays safe; and
//! the validator refuses what does not apply to Redlock, naming the field.

mod common;

use common::{library_text, run};
use coordsim::load;
use coordsim_checker::history::{Call, Event, History, Return};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;

fn verdict(history: &History, property: Property) -> Verdict {
    property.check(history).verdict
}

/// The servers' answers to `client`'s SETs, as "s3: OK", in order.
fn set_answers(history: &History, client: &str) -> Vec<String> {
    let sets: std::collections::BTreeSet<u64> = history
        .entries
        .iter()
        .filter(|e| e.node == client)
        .filter_map(|e| match &e.event {
            Event::Invoke { op, call: Call::Api { api, method, .. } } if api == "redis" && method == "set" => Some(*op),
            _ => None,
        })
        .collect();
    history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Ok { op, ret: Return::Api { detail, .. } } if sets.contains(op) => Some(detail.clone()),
            _ => None,
        })
        .collect()
}

/// The same scenario without its one `[[nemesis]]` entry of `kind`.
fn without_fault(text: &str, kind: &str) -> String {
    let line = format!("kind = \"{kind}\"");
    let mut parts: Vec<&str> = text.split("[[nemesis]]").collect();
    let before = parts.len();
    parts.retain(|part| !part.contains(&line));
    assert_eq!(parts.len(), before - 1, "exactly one fault is a {kind}");
    let joined = parts.join("[[nemesis]]");
    // Its expectations were about the fault: with it gone, everything must pass.
    match joined.split_once("[expect]") {
        Some((head, _)) => head.to_string(),
        None => joined,
    }
}

#[test]
fn a_clean_run_has_one_holder_at_a_time_and_grants_in_order() {
    let history = run("redlock-clean", &library_text("redlock-clean"), 1);
    let grants = history.entries.iter().filter(|e| matches!(e.event, Event::Ok { ret: Return::Locked { .. }, .. }));
    assert!(grants.count() >= 8, "two clients taking 3 s turns over 30 s");
    for property in [Property::SingleHolder, Property::MutualExclusion, Property::Fencing, Property::Progress] {
        assert_eq!(verdict(&history, property), Verdict::Pass, "{property}");
    }
}

#[test]
fn a_wall_clock_jump_on_one_server_gives_two_holders_and_without_it_one() {
    let text = library_text("redlock-server-clock-jump");
    for seed in 1..=3 {
        let history = run("redlock-server-clock-jump", &text, seed);
        assert_eq!(verdict(&history, Property::SingleHolder), Verdict::Fail, "seed {seed}");
        assert_eq!(verdict(&history, Property::MutualExclusion), Verdict::Fail, "seed {seed}");
        // c2 won the jumped server while c1 held it.
        assert!(set_answers(&history, "c2").contains(&"s3: OK".to_string()), "seed {seed}");
    }
    let calm = without_fault(&text, "clock-jump");
    let history = run("redlock-no-jump", &calm, 1);
    assert_eq!(verdict(&history, Property::SingleHolder), Verdict::Pass);
    assert_eq!(verdict(&history, Property::MutualExclusion), Verdict::Pass);
}

#[test]
fn the_same_jump_on_every_etcd_server_expires_nothing_early() {
    let history = run("server-clock-jump-etcd", &library_text("server-clock-jump-etcd"), 1);
    for property in [Property::SingleHolder, Property::MutualExclusion, Property::LeaseSafety] {
        assert_eq!(verdict(&history, property), Verdict::Pass, "{property}");
    }
    let expiries = history.entries.iter().filter(|e| matches!(e.event, Event::LeaseExpiry { .. })).count();
    assert_eq!(expiries, 0, "both clients renew throughout: no lease expires");
}

#[test]
fn a_pause_past_the_validity_time_writes_late_and_nothing_fences_it() {
    let text = library_text("redlock-gc-pause");
    let history = run("redlock-gc-pause", &text, 1);
    assert_eq!(verdict(&history, Property::MutualExclusion), Verdict::Fail);
    assert_eq!(verdict(&history, Property::SingleHolder), Verdict::Fail);
    let history = run("redlock-no-pause", &without_fault(&text, "pause"), 1);
    assert_eq!(verdict(&history, Property::MutualExclusion), Verdict::Pass);
}

#[test]
fn a_restart_loses_the_key_without_fsync_and_keeps_it_with_it_or_after_a_delayed_restart() {
    let lost = run("redlock-restart-without-fsync", &library_text("redlock-restart-without-fsync"), 1);
    assert_eq!(verdict(&lost, Property::SingleHolder), Verdict::Fail);
    for kept in ["redlock-restart-with-fsync", "redlock-delayed-restart"] {
        let history = run(kept, &library_text(kept), 1);
        assert_eq!(verdict(&history, Property::SingleHolder), Verdict::Pass, "{kept}");
        assert_eq!(verdict(&history, Property::MutualExclusion), Verdict::Pass, "{kept}");
    }
    // With fsync, the restarted s3 still had c1's key: c2's first SETs on it after the restart
    // answered nil.
    let with_fsync = run("with", &library_text("redlock-restart-with-fsync"), 1);
    assert!(set_answers(&with_fsync, "c2").contains(&"s3: nil".to_string()));
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let text = library_text("redlock-server-clock-jump");
    let first = serde_json::to_string(&run("a", &text, 7)).expect("serializes");
    let second = serde_json::to_string(&run("a", &text, 7)).expect("serializes");
    assert_eq!(first, second);
}

/// Every attempt sets a value of its own: a late release of a failed attempt (or of the run
/// before a restart) cannot delete a later attempt's key.
#[test]
fn every_attempt_sets_a_value_of_its_own() {
    let history = run("redlock-server-clock-jump", &library_text("redlock-server-clock-jump"), 1);
    let mut values_by_attempt = std::collections::BTreeSet::new();
    let mut sets = 0;
    for entry in history.entries.iter().filter(|e| e.node == "c2") {
        if let Event::Invoke { call: Call::Api { method, detail, .. }, .. } = &entry.event {
            if method == "set" {
                sets += 1;
                // "s3: SET lock:resource c2-<hex> NX PX 5000"
                values_by_attempt.insert(detail.split_whitespace().nth(3).expect("a value").to_string());
            }
        }
    }
    assert!(sets >= 10, "c2 retried: {sets} SETs");
    assert_eq!(values_by_attempt.len() * 5, sets, "one value per attempt of five SETs");
}

/// Redlock does not need the clients' clocks to agree, and neither do its verdicts: a client
/// whose clock is 10 s behind changes nothing (the grant numbers come from the recorder).
#[test]
fn a_client_clock_offset_changes_no_verdict() {
    let text = library_text("redlock-clean")
        .replace(
            "count = 2
",
            "count = 3
",
        )
        .replace(
            "[resource]",
            "[[clock]]
node = \"c2\"
offset = \"-10s\"

[resource]",
        )
        + "
[expect]
fairness = \"any\"
";
    for seed in 1..=5 {
        let history = run("redlock-offset", &text, seed);
        for property in [Property::SingleHolder, Property::MutualExclusion, Property::Fencing] {
            assert_eq!(verdict(&history, property), Verdict::Pass, "seed {seed}: {property}");
        }
    }
}

/// `[chaos]` on independent servers draws no leader or follower, so a drawn plan pasted as a
/// fixed timeline (what `--show-plan` prints and `shrink` writes) is a valid scenario.
#[test]
fn chaos_plans_on_independent_servers_paste_back_as_valid_timelines() {
    let base = library_text("redlock-clean");
    let chaos = format!(
        "{base}\n[chaos]\nkinds = [\"pause\", \"crash\", \"partition\"]\nstart = \"1s\"\nstop = \"20s\"\ngap = \"500ms..2s\"\nlength = \"200ms..2s\"\n"
    );
    let scenario = load::parse("chaos.toml", &chaos).unwrap_or_else(|e| panic!("{e}"));
    for seed in 1..=20 {
        let plan = coordsim_sim::nemesis::plan::plan(&scenario, seed);
        assert!(!plan.is_empty());
        let pasted = format!("{base}\n{}", coordsim_sim::nemesis::plan::to_toml(&plan));
        load::parse("pasted.toml", &pasted).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{pasted}"));
    }
}

/// The validator's refusals, each naming its field.
#[test]
fn what_does_not_apply_to_redlock_is_refused_with_its_field() {
    let base = library_text("redlock-clean");
    let cases: Vec<(String, &str)> = vec![
        (base.replace("kind = \"independent\"\n", ""), "lock.recipe"),
        (base.replace("recipe = \"redlock\"", "recipe = \"etcd-mutex\""), "cluster.kind"),
        (base.replace("mode = \"unfenced\"", "mode = \"fenced\""), "resource.mode"),
        (base.replace("ttl = \"5s\"", "ttl = \"5s\"\nclient_deadline = \"4s\""), "lock.client_deadline"),
        (base.replace("ttl = \"5s\"", "ttl = \"5s\"\npermits = 2"), "lock.permits"),
        (base.replace("hold = \"3s\"", "hold = \"4700ms\""), "clients.hold"),
        (base.replace("ttl = \"5s\"", "ttl = \"5s\"\nlease = false"), "lock.lease"),
        (base.replace("[resource]", "[bugs]\nttl_reset_on_leader_change = true\n\n[resource]"), "bugs"),
        (
            format!("{base}\n[[nemesis]]\nat = \"1s\"\nfor = \"1s\"\nkind = \"pause\"\ntarget = \"leader\"\n"),
            "nemesis[0].target",
        ),
        (
            format!("{base}\n[[nemesis]]\nat = \"1s\"\nfor = \"1s\"\nkind = \"drop-replies\"\ntarget = \"c1\"\n"),
            "nemesis[0].kind",
        ),
    ];
    for (text, field) in cases {
        let error = load::parse("redlock.toml", &text).expect_err(field).to_string();
        assert!(error.contains(field), "{field}: {error}");
    }
    let clock = base.replace("ttl = \"5s\"", "ttl = \"5s\"\nclient_deadline_clock = \"wall\"");
    load::parse("redlock.toml", &clock).expect("the validity time may be timed on the wall clock");
}
