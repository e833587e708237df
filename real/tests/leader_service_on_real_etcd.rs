//! The leader-service example's own source (`examples/leader-service/src/service.rs`), unchanged,
//! compiled against the real etcd-client crate and run on a real 3-member etcd: the code the
//! simulator tests is the code that runs. Its replicas' beliefs are judged by the same
//! `single_holder` checker as in the simulator.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coordsim_checker::history::{Entry, Event, History, NodeInfo, NodeRole, Phase};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use coordsim_real::cluster::{Cluster, Hosts, etcd::EtcdCluster};
use coordsim_real::procs::Procs;

// The service's world: the real etcd-client crate under the name the source uses
// (`super::etcd_client` from the service module).
#[allow(clippy::single_component_path_imports)]
use etcd_client;

#[path = "../../examples/leader-service/src/service.rs"]
mod service;

use service::{ELECTION, Effects, Variant, run_replica};

/// What the replicas did, in the order they did it: (true time since the start, replica, event).
#[derive(Default)]
struct Journal {
    entries: Vec<(Duration, String, Event)>,
    highest_token: i64,
    accepted: usize,
}

struct Recorded {
    name: String,
    start: Instant,
    journal: Rc<RefCell<Journal>>,
}

impl Effects for Recorded {
    async fn write(&self, token: i64, _value: String) -> bool {
        // The fenced store: a write with a token below one it accepted is refused.
        let mut journal = self.journal.borrow_mut();
        if token < journal.highest_token {
            return false;
        }
        journal.highest_token = token;
        journal.accepted += 1;
        true
    }

    fn leading(&self, term: i64) {
        let event = Event::Belief { lock: ELECTION.into(), token: term, phase: Phase::Start, reason: None };
        self.journal.borrow_mut().entries.push((self.start.elapsed(), self.name.clone(), event));
    }

    fn stepped_down(&self, term: i64, reason: &str) {
        let event =
            Event::Belief { lock: ELECTION.into(), token: term, phase: Phase::End, reason: Some(reason.into()) };
        self.journal.borrow_mut().entries.push((self.start.elapsed(), self.name.clone(), event));
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

#[test]
fn the_simulated_services_source_leads_one_at_a_time_on_real_etcd() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let dir = std::env::temp_dir().join(format!("coordsim-leader-service-real-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a run folder");
    let journal = Rc::new(RefCell::new(Journal::default()));
    let start = Instant::now();
    runtime.block_on(async {
        let procs = Arc::new(Procs::default());
        let cluster = EtcdCluster::start(&dir, 3, false, procs.clone(), Hosts::default()).await.expect("etcd starts");
        let endpoints = cluster.client_endpoints();
        let local = tokio::task::LocalSet::new();
        for i in 1..=3 {
            let effects = Recorded { name: format!("c{i}"), start, journal: journal.clone() };
            let (endpoints, name) = (endpoints.clone(), format!("c{i}"));
            local.spawn_local(run_replica(endpoints, name, Variant::StepsDownAtDeadline, effects));
        }
        local.run_until(tokio::time::sleep(Duration::from_secs(8))).await;
        drop(local);
        procs.kill_all();
    });
    std::fs::remove_dir_all(&dir).ok();

    let journal = journal.borrow();
    let mut history = History::new("leader-service-real", 1);
    history.recorded_on = Some("real etcd".into());
    history.nodes = (1..=3).map(|i| NodeInfo { name: format!("c{i}"), role: NodeRole::Client }).collect();
    history.entries = journal
        .entries
        .iter()
        .map(|(at, node, event)| Entry { time_ns: at.as_nanos() as u64, node: node.clone(), event: event.clone() })
        .collect();
    history.duration_ns = start.elapsed().as_nanos() as u64;
    history.validate().expect("a valid history");
    let leaderships =
        history.entries.iter().filter(|e| matches!(e.event, Event::Belief { phase: Phase::Start, .. })).count();
    assert!(leaderships >= 1, "a replica was elected on real etcd");
    assert!(journal.accepted > 10, "the leader worked: {} accepted writes", journal.accepted);
    assert_eq!(Property::SingleHolder.check(&history).verdict, Verdict::Pass);
}
