//! The worker pool under a partition that cuts c1 (the first worker, the leader) off from the
//! ensemble for 8 s, longer than its 4 s session: the workers that own what they read process
//! c1's partitions twice; the workers that claim before owning never do. Judged by a checker of
//! our own, written against the history as the built-in ones are.

use std::time::Duration;

use coordsim::testbed::{Checker, Ctx, Fault, Testbed};
use coordsim_checker::history::{Event, History};
use coordsim_checker::verdict::{PropertyReport, Verdict};
use coordsim_sim::scenario::Expectation;
use worker_pool::{Effects, Variant, run_worker};

mod support {
    pub mod no_double_assignment;
}

/// The pool's own property, as a Testbed checker.
struct NoDoubleAssignment;

impl Checker for NoDoubleAssignment {
    fn id(&self) -> &str {
        support::no_double_assignment::ID
    }

    fn check(&self, history: &History) -> PropertyReport {
        support::no_double_assignment::check(history)
    }
}

struct Recorded(Ctx);

impl Effects for Recorded {
    fn owned(&self, partition: usize) {
        self.0.record("own", &[("partition", &partition.to_string())]);
    }

    fn released(&self, partition: usize, reason: &str) {
        self.0.record("release", &[("partition", &partition.to_string()), ("reason", reason)]);
    }

    async fn sleep(&self, duration: Duration) {
        self.0.sleep(duration).await;
    }
}

fn testbed(variant: Variant) -> Testbed {
    Testbed::new(match variant {
        Variant::OwnsWhatItReads => "worker-pool-owns-what-it-reads",
        Variant::ClaimsBeforeOwning => "worker-pool-claims-before-owning",
    })
    .duration(Duration::from_secs(30))
    .client_start(Duration::from_secs(1), Duration::from_secs(1))
    .fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(8)).lasting(Duration::from_secs(8)))
    .clients(3, move |ctx| async move {
        let (cluster, name) = (ctx.zookeeper_cluster(), ctx.name().to_string());
        run_worker(cluster, name, variant, Recorded(ctx)).await;
    })
}

const SEEDS: std::ops::RangeInclusive<u64> = 1..=200;

#[test]
fn workers_that_own_what_they_read_process_a_partition_twice() {
    let sweep =
        testbed(Variant::OwnsWhatItReads).checker_expecting(NoDoubleAssignment, Expectation::Fail).run_seeds(SEEDS);
    let caught = sweep.count("no_double_assignment", Verdict::Fail);
    eprintln!(
        "no_double_assignment failed on {caught} of {} seeds; {} as expected",
        sweep.runs.len(),
        sweep.as_expected()
    );
    assert!(caught * 10 >= sweep.runs.len() * 9, "double ownership on only {caught} of {} seeds", sweep.runs.len());
}

#[test]
fn workers_that_claim_before_owning_never_share_a_partition() {
    let sweep = testbed(Variant::ClaimsBeforeOwning).checker(NoDoubleAssignment).check(SEEDS);
    // The run did real work: every partition was owned by someone.
    let run = testbed(Variant::ClaimsBeforeOwning).checker(NoDoubleAssignment).run_seed(1);
    let owns =
        run.history.entries.iter().filter(|e| matches!(&e.event, Event::User { name, .. } if name == "own")).count();
    assert!(owns >= 6, "only {owns} ownerships in seed 1");
    assert_eq!(sweep.as_expected(), sweep.runs.len());
}

#[test]
fn the_same_seed_gives_the_same_history() {
    let testbed = testbed(Variant::ClaimsBeforeOwning).checker(NoDoubleAssignment);
    let (first, second) = (testbed.run_seed(5), testbed.run_seed(5));
    assert_eq!(first.history.to_json(), second.history.to_json());
    // The session's pings and a disconnection are in it.
    let pings = first
        .history
        .entries
        .iter()
        .filter(|e| {
            matches!(&e.event, Event::Invoke { call: coordsim_checker::history::Call::LeaseKeepAlive { .. }, .. })
        })
        .count();
    assert!(pings > 50, "{pings} pings");
}
