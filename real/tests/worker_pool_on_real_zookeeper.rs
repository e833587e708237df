//! The worker-pool example's own source (`examples/worker-pool/src/pool.rs`), unchanged, compiled
//! against the real zookeeper-client crate and run on a real 3-server ZooKeeper ensemble under the
//! fault its simulator test gives it (`examples/worker-pool/tests/partitions.rs`): c1, the first
//! worker and the leader, cut off from every server at 8 s for 8 s, longer than its 4 s session.
//! Judged by the same `no_double_assignment` function; the verdicts must be the simulator's.

use std::time::Duration;

use coordsim_checker::history::{Event, History};
use coordsim_checker::verdict::Verdict;
use coordsim_real::System;
use coordsim_real::testbed::{RealCtx, RealTestbed};

// The pool's world: the real zookeeper-client crate under the name the source uses
// (`super::zookeeper_client` from the pool module).
#[allow(clippy::single_component_path_imports)]
use zookeeper_client;

#[path = "../../examples/worker-pool/src/pool.rs"]
mod pool;

#[path = "../../examples/worker-pool/tests/support/no_double_assignment.rs"]
mod no_double_assignment;

use pool::{Effects, PARTITIONS, Variant, run_worker};

/// The simulator test's `Recorded`, on `RealCtx`.
struct Recorded(RealCtx);

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

/// The simulator test's run, with its tail after the partition cut from 30 s to 22 s.
fn run(variant: Variant) -> History {
    RealTestbed::new(format!("worker-pool-{variant:?}-real"), System::Zookeeper)
        .duration(Duration::from_secs(22))
        .client_start(Duration::from_secs(1), Duration::from_secs(1))
        .partition_clients(&["c1"], Duration::from_secs(8), Duration::from_secs(8))
        .run(3, move |ctx| async move {
            let (cluster, name) = (ctx.zookeeper_cluster(), ctx.name().to_string());
            run_worker(cluster, name, variant, Recorded(ctx)).await;
        })
        .expect("the run on real ZooKeeper")
}

fn owners(history: &History) -> std::collections::BTreeSet<&str> {
    history
        .entries
        .iter()
        .filter(|e| matches!(&e.event, Event::User { name, .. } if name == "own"))
        .map(|e| e.node.as_str())
        .collect()
}

#[test]
fn on_real_zookeeper_workers_that_own_what_they_read_process_a_partition_twice() {
    let history = run(Variant::OwnsWhatItReads);
    history.validate().expect("a valid history");
    let report = no_double_assignment::check(&history);
    assert_eq!(report.verdict, Verdict::Fail, "as in the simulator: {}", report.summary);
}

#[test]
fn on_real_zookeeper_workers_that_claim_before_owning_never_share_a_partition() {
    let history = run(Variant::ClaimsBeforeOwning);
    history.validate().expect("a valid history");
    assert_eq!(owners(&history).len(), 3, "every worker owned some of the {PARTITIONS} partitions");
    let report = no_double_assignment::check(&history);
    assert_eq!(report.verdict, Verdict::Pass, "as in the simulator: {}", report.summary);
}
