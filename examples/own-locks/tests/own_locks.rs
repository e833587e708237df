//! Locks of the user's own, judged from the grants they record. The service records no grant for
//! them (they are plain txn/get/watch and create/list/exists calls), so each holder's belief with
//! its token is the grant every lock property judges. c1, the first holder, is cut off from every
//! server (not from the store) for 10 s: a correct lock steps down and passes every property on
//! every seed; the broken variant holds alongside its successor and fails `single_holder`.

use coordsim::prelude::*;
use own_locks::{Effects, latch, txn_mutex};

/// The holders' effects, recorded through the Testbed's client handle.
struct Recorded(Ctx);

impl Effects for Recorded {
    async fn write(&self, token: i64, value: String) -> bool {
        self.0.write_resource(token, value).await == WriteOutcome::Accepted
    }

    fn holding(&self, lock: &str, token: i64) {
        self.0.believe_held(lock, token);
    }

    fn released(&self, lock: &str, token: i64, reason: &str) {
        self.0.believe_released(lock, token, reason);
    }
}

fn cut_off_first_holder(name: &str) -> Testbed {
    Testbed::new(name)
        .servers(3)
        .duration(Duration::from_secs(30))
        .client_start(Duration::from_secs(1), Duration::from_millis(300))
        .fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)))
}

fn txn_mutex(variant: txn_mutex::Variant) -> Testbed {
    let name = match variant {
        txn_mutex::Variant::StepsDownAtDeadline => "own-txn-mutex",
        txn_mutex::Variant::IgnoresLeaseLoss => "own-txn-mutex-ignores-lease-loss",
    };
    cut_off_first_holder(name).clients(3, move |ctx| async move {
        let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
        txn_mutex::run_client(endpoints, name, variant, Recorded(ctx)).await;
    })
}

fn latch(variant: latch::Variant) -> Testbed {
    let name = match variant {
        latch::Variant::StepsDownWhenSuspended => "own-latch",
        latch::Variant::StepsDownWhenLost => "own-latch-steps-down-when-lost",
    };
    cut_off_first_holder(name).clients(3, move |ctx| async move {
        let (cluster, name) = (ctx.zookeeper_cluster(), ctx.name().to_string());
        latch::run_candidate(cluster, name, variant, Recorded(ctx)).await;
    })
}

const SEEDS: std::ops::RangeInclusive<u64> = 1..=200;

/// The broken variant fails `single_holder` on at least 90 % of the seeds, and the fenced store
/// keeps every accepted write in grant order all the same.
fn assert_caught(testbed: Testbed) {
    let sweep = testbed.expect(Property::SingleHolder, Expectation::Fail).run_seeds(SEEDS);
    let caught = sweep.count("single_holder", Verdict::Fail);
    eprintln!("single_holder failed on {caught} of {} seeds", sweep.runs.len());
    assert!(caught * 10 >= sweep.runs.len() * 9, "two holders at once on only {caught} of {} seeds", sweep.runs.len());
    assert_eq!(sweep.count("mutual_exclusion", Verdict::Fail), 0, "the fenced store refused every stale write");
}

#[test]
fn a_correct_txn_mutex_passes_every_property() {
    let sweep = txn_mutex(txn_mutex::Variant::StepsDownAtDeadline).check(SEEDS);
    // The verdicts judged its own grants: mutual_exclusion names them.
    let run = sweep.runs[0].1.as_ref().expect("seed 1 ran");
    let mutual_exclusion = run.summary.outcomes.iter().find(|o| o.report.property == "mutual_exclusion").unwrap();
    assert!(mutual_exclusion.report.summary.contains("own recipes"), "{}", mutual_exclusion.report.summary);
}

#[test]
fn a_txn_mutex_that_ignores_its_lease_loss_holds_alongside_its_successor() {
    assert_caught(txn_mutex(txn_mutex::Variant::IgnoresLeaseLoss));
}

#[test]
fn a_correct_leader_latch_passes_every_property() {
    latch(latch::Variant::StepsDownWhenSuspended).check(SEEDS);
}

#[test]
fn a_leader_latch_that_leads_until_its_session_is_lost_leads_alongside_its_successor() {
    assert_caught(latch(latch::Variant::StepsDownWhenLost));
}

#[test]
fn without_its_grants_an_own_lock_is_a_mutual_exclusion_failure() {
    // The same correct mutex that records no belief: its writes carry tokens no grant gave.
    let silent = cut_off_first_holder("own-txn-mutex-silent").clients(3, |ctx| async move {
        struct Silent(Ctx);
        impl Effects for Silent {
            async fn write(&self, token: i64, value: String) -> bool {
                self.0.write_resource(token, value).await == WriteOutcome::Accepted
            }
            fn holding(&self, _: &str, _: i64) {}
            fn released(&self, _: &str, _: i64, _: &str) {}
        }
        let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
        txn_mutex::run_client(endpoints, name, txn_mutex::Variant::StepsDownAtDeadline, Silent(ctx)).await;
    });
    let run = silent.run_seed(1);
    assert_eq!(run.verdict("mutual_exclusion"), Some(Verdict::Fail));
    assert!(run.failure().unwrap().contains("believe_held"), "{}", run.failure().unwrap());
}
