//! The leader-service example's own source (`examples/leader-service/src/service.rs`), unchanged,
//! compiled against the real etcd-client crate and run on a real 3-member etcd under the fault its
//! simulator test gives it (`examples/leader-service/tests/election.rs`): c1, the first leader,
//! cut off from every server at 5 s for 10 s, still reaching the store. The verdicts must be the
//! simulator's: the variant that ignores its lease loss leads alongside its successor
//! (`single_holder` fails), the variant that steps down at its deadline never does.

use std::time::Duration;

use coordsim_checker::history::{Event, History, Phase};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use coordsim_real::System;
use coordsim_real::testbed::{RealCtx, RealTestbed};

// The service's world: the real etcd-client crate under the name the source uses
// (`super::etcd_client` from the service module).
#[allow(clippy::single_component_path_imports)]
use etcd_client;

#[path = "../../examples/leader-service/src/service.rs"]
mod service;

use service::{ELECTION, Effects, Variant, run_replica};

/// The service's effects, recorded through the real testbed's client handle (the simulator test's
/// `Recorded`, on `RealCtx`).
struct Recorded(RealCtx);

impl Effects for Recorded {
    async fn write(&self, token: i64, value: String) -> bool {
        self.0.write_resource(token, value).await
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
        self.0.monotonic_now()
    }
}

/// The simulator test's run, with its tail after the partition cut from 30 s to 20 s.
fn run(variant: Variant) -> History {
    RealTestbed::new(format!("leader-service-{variant:?}-real"), System::Etcd)
        .duration(Duration::from_secs(20))
        .client_start(Duration::from_secs(1), Duration::from_millis(500))
        .partition_clients(&["c1"], Duration::from_secs(5), Duration::from_secs(10))
        .run(3, move |ctx| async move {
            let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
            run_replica(endpoints, name, variant, Recorded(ctx)).await;
        })
        .expect("the run on real etcd")
}

fn leaderships(history: &History) -> Vec<(&str, i64)> {
    history
        .entries
        .iter()
        .filter_map(|e| match e.event {
            Event::Belief { token, phase: Phase::Start, .. } => Some((e.node.as_str(), token)),
            _ => None,
        })
        .collect()
}

fn accepted_writes(history: &History) -> usize {
    history.entries.iter().filter(|e| matches!(e.event, Event::Ok { .. })).count()
}

#[test]
fn on_real_etcd_a_leader_that_ignores_its_lease_loss_leads_alongside_its_successor() {
    let history = run(Variant::IgnoresLeaseLoss);
    history.validate().expect("a valid history");
    let leaders = leaderships(&history);
    assert_eq!(leaders.first().map(|l| l.0), Some("c1"), "c1 led first: {leaders:?}");
    assert!(leaders.iter().any(|l| l.0 != "c1"), "a successor was elected while c1 was cut off: {leaders:?}");
    let single = Property::SingleHolder.check(&history);
    assert_eq!(single.verdict, Verdict::Fail, "as in the simulator: {}", single.summary);
    // The store is fenced: the old leader's late writes are refused.
    assert_eq!(Property::MutualExclusion.check(&history).verdict, Verdict::Pass);
}

#[test]
fn on_real_etcd_a_leader_that_steps_down_at_its_deadline_never_overlaps_its_successor() {
    let history = run(Variant::StepsDownAtDeadline);
    history.validate().expect("a valid history");
    let leaders = leaderships(&history);
    assert_eq!(leaders.first().map(|l| l.0), Some("c1"), "c1 led first: {leaders:?}");
    assert!(leaders.iter().any(|l| l.0 != "c1"), "a successor was elected while c1 was cut off: {leaders:?}");
    assert!(accepted_writes(&history) > 10, "the leaders worked: {} accepted writes", accepted_writes(&history));
    let single = Property::SingleHolder.check(&history);
    assert_eq!(single.verdict, Verdict::Pass, "as in the simulator: {}", single.summary);
}
