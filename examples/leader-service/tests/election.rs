//! The leader service under a partition that cuts the first leader off from etcd for 10 s (it
//! still reaches the store): the variant that ignores the loss of its lease leads alongside its
//! successor; the variant that steps down at its deadline never does.

use std::time::Duration;

use coordsim::etcd;
use coordsim::testbed::{Ctx, Fault, Testbed, WriteOutcome};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use coordsim_sim::scenario::Expectation;
use leader_service::{ELECTION, Effects, Variant, run_replica};

/// The service's effects, recorded through the Testbed's client handle.
struct Recorded(Ctx);

impl Effects for Recorded {
    async fn write(&self, token: i64, value: String) -> bool {
        self.0.write_resource(token, value).await == WriteOutcome::Accepted
    }

    fn leading(&self, term: i64) {
        self.0.believe_held(ELECTION, term);
    }

    fn stepped_down(&self, term: i64, reason: &str) {
        self.0.believe_released(ELECTION, term, reason);
    }

    async fn sleep(&self, duration: Duration) {
        self.0.sleep(duration).await;
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.0.monotonic_now_ns().max(0) as u64)
    }
}

fn testbed(variant: Variant) -> Testbed {
    Testbed::new(match variant {
        Variant::IgnoresLeaseLoss => "leader-service-ignores-lease-loss",
        Variant::StepsDownAtDeadline => "leader-service-steps-down",
    })
    .servers(3)
    .duration(Duration::from_secs(30))
    // c1 campaigns first and leads; then it is cut off from every server, not from the store.
    .client_start(Duration::from_secs(1), Duration::from_millis(500))
    .fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)))
    .clients(3, move |ctx| async move {
        let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
        run_replica(endpoints, name, variant, Recorded(ctx)).await;
    })
}

const SEEDS: std::ops::RangeInclusive<u64> = 1..=200;

#[test]
fn a_leader_that_ignores_its_lease_loss_leads_alongside_its_successor() {
    let sweep = testbed(Variant::IgnoresLeaseLoss).expect(Property::SingleHolder, Expectation::Fail).run_seeds(SEEDS);
    let caught = sweep.count("single_holder", Verdict::Fail);
    eprintln!("single_holder failed on {caught} of {} seeds; {} as expected", sweep.runs.len(), sweep.as_expected());
    assert!(caught * 10 >= sweep.runs.len() * 9, "two leaders at once on only {caught} of {} seeds", sweep.runs.len());
    // The store is fenced: the old leader's late writes are refused, so the store stays safe.
    assert_eq!(sweep.count("mutual_exclusion", Verdict::Fail), 0);
}

#[test]
fn a_leader_that_steps_down_at_its_deadline_never_overlaps_its_successor() {
    testbed(Variant::StepsDownAtDeadline).check(SEEDS);
}

#[test]
fn the_same_seed_gives_the_same_history() {
    let testbed = testbed(Variant::IgnoresLeaseLoss);
    let (first, second) = (testbed.run_seed(7), testbed.run_seed(7));
    assert_eq!(first.history.to_json(), second.history.to_json());
    assert!(first.history.entries.len() > 100, "the run recorded the service's calls");
}

fn simulation() -> impl std::future::Future<Output = coordsim_checker::history::History> + use<> {
    testbed(Variant::StepsDownAtDeadline).simulation()
}

#[test]
fn madsim_sees_the_same_random_draws_in_two_runs_of_user_code() {
    // Panics at the first draw that differs between the two runs.
    let history = madsim::runtime::Runtime::check_determinism(11, madsim::Config::default(), simulation);
    assert!(history.entries.len() > 100);
}

#[test]
fn connecting_outside_a_testbed_client_is_an_error_not_a_panic() {
    let runtime = madsim::runtime::Runtime::new();
    let result = runtime.block_on(etcd::Client::connect(["s1:2379"], None));
    assert!(matches!(result, Err(etcd::Error::Internal(_))));
}

#[test]
fn a_failing_seed_names_the_property_the_finding_the_report_and_the_replay() {
    let out = std::env::temp_dir().join(format!("coordsim-leader-service-{}", std::process::id()));
    let testbed = testbed(Variant::IgnoresLeaseLoss).out_dir(&out);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| testbed.check(3..=3)))
        .expect_err("the bug fails single_holder");
    let message = panic.downcast_ref::<String>().expect("a formatted message").clone();
    assert!(message.contains("seed 3"), "{message}");
    assert!(message.contains("single_holder is fail (expected pass)"), "{message}");
    assert!(message.contains("COORDSIM_SEED=3 cargo test"), "{message}");
    let report = out.join("leader-service-ignores-lease-loss/seed-3/report.html");
    assert!(message.contains(&report.display().to_string()), "{message}");
    let html = std::fs::read_to_string(&report).expect("report.html is written");
    assert!(html.contains("single_holder"));
    // The report's replay line names the test too, though the seed ran on another thread.
    assert!(html.contains("a_failing_seed_names_the_property_the_finding_the_report_and_the_replay"));
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_failing_seed_shrinks_to_a_shorter_run_that_still_fails() {
    let testbed = testbed(Variant::IgnoresLeaseLoss);
    let shrunk = testbed.shrink(3, Some("single_holder")).expect("seed 3 shrinks");
    assert_eq!(shrunk.property, "single_holder");
    let minimal = &shrunk.scenario;
    assert_eq!(minimal.nemesis.len(), 1, "the partition of c1 is needed");
    assert!(minimal.duration.0 < Duration::from_secs(30), "{}", coordsim::shrink::to_toml(minimal));
    // The minimal scenario, read back from its TOML, still fails on the same seed.
    let text = coordsim::shrink::to_toml(minimal);
    let reread = Testbed::from_toml("minimal.toml", &text).expect("it reads back").scenario().clone();
    let replayed = testbed.with_scenario(reread).run_seed(3);
    assert_eq!(replayed.verdict("single_holder"), Some(Verdict::Fail));
}
