//! The worker-pool example's own source (`examples/worker-pool/src/pool.rs`), unchanged, compiled
//! against the real zookeeper-client crate and run on a real 3-server ZooKeeper ensemble, judged by
//! the same `no_double_assignment` function as in the simulator.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coordsim_checker::history::{Entry, Event, History, NodeInfo, NodeRole};
use coordsim_checker::verdict::Verdict;
use coordsim_real::cluster::{Cluster, Hosts, zookeeper::ZkEnsemble};
use coordsim_real::procs::Procs;

// The pool's world: the real zookeeper-client crate under the name the source uses
// (`super::zookeeper_client` from the pool module).
#[allow(clippy::single_component_path_imports)]
use zookeeper_client;

#[path = "../../examples/worker-pool/src/pool.rs"]
mod pool;

#[path = "../../examples/worker-pool/tests/support/no_double_assignment.rs"]
mod no_double_assignment;

use pool::{Effects, PARTITIONS, Variant, run_worker};

struct Recorded {
    name: String,
    start: Instant,
    journal: Rc<RefCell<Vec<(Duration, String, Event)>>>,
}

impl Recorded {
    fn record(&self, name: &str, attrs: &[(&str, String)]) {
        let attrs: BTreeMap<String, String> = attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let event = Event::User { name: name.into(), attrs };
        self.journal.borrow_mut().push((self.start.elapsed(), self.name.clone(), event));
    }
}

impl Effects for Recorded {
    fn owned(&self, partition: usize) {
        self.record("own", &[("partition", partition.to_string())]);
    }

    fn released(&self, partition: usize, reason: &str) {
        self.record("release", &[("partition", partition.to_string()), ("reason", reason.to_string())]);
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

#[test]
fn the_simulated_pools_source_shares_every_partition_once_on_real_zookeeper() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let dir = std::env::temp_dir().join(format!("coordsim-worker-pool-real-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a run folder");
    let journal = Rc::new(RefCell::new(Vec::new()));
    let start = Instant::now();
    runtime.block_on(async {
        let procs = Arc::new(Procs::default());
        let ensemble = ZkEnsemble::start(&dir, 3, procs.clone(), Hosts::default()).await.expect("ZooKeeper starts");
        let cluster = ensemble.client_endpoints().join(",");
        let local = tokio::task::LocalSet::new();
        for i in 1..=3 {
            let effects = Recorded { name: format!("c{i}"), start, journal: journal.clone() };
            local.spawn_local(run_worker(cluster.clone(), format!("c{i}"), Variant::ClaimsBeforeOwning, effects));
            // Workers join one after another, so partitions move between them.
            local.run_until(tokio::time::sleep(Duration::from_secs(2))).await;
        }
        local.run_until(tokio::time::sleep(Duration::from_secs(6))).await;
        drop(local);
        procs.kill_all();
    });
    std::fs::remove_dir_all(&dir).ok();

    let mut history = History::new("worker-pool-real", 1);
    history.recorded_on = Some("real zookeeper".into());
    history.nodes = (1..=3).map(|i| NodeInfo { name: format!("c{i}"), role: NodeRole::Client }).collect();
    history.entries = journal
        .borrow()
        .iter()
        .map(|(at, node, event)| Entry { time_ns: at.as_nanos() as u64, node: node.clone(), event: event.clone() })
        .collect();
    history.duration_ns = start.elapsed().as_nanos() as u64;
    history.validate().expect("a valid history");
    let owners: std::collections::BTreeSet<&str> = history
        .entries
        .iter()
        .filter(|e| matches!(&e.event, Event::User { name, .. } if name == "own"))
        .map(|e| e.node.as_str())
        .collect();
    assert_eq!(owners.len(), 3, "every worker owned some of the {PARTITIONS} partitions: {owners:?}");
    let report = no_double_assignment::check(&history);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
}
