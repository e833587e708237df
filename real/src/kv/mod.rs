//! The key-value workload on a real cluster: the simulator's writer and reader loops
//! (sim/src/kv_workload, over a [`KvConnection`]), each operation sent to real etcd
//! ([`etcd`]) or a real ZooKeeper server ([`zookeeper`]) and recorded in the client's journal as
//! the simulator records it.
//!
//! What counts as unknown: a write without an answer within [`OP_BUDGET`], or cut off by a lost
//! connection, may have been applied (`info`); a write the server turned down was not (`fail`);
//! a read without an answer changed nothing (`fail`). Watchers follow every change through
//! etcd's Watch service ([`watch`]).
//!
//! [`KvConnection`]: coordsim_sim::kv_workload::KvConnection

mod etcd;
mod watch;
mod zookeeper;

use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::Return;
use coordsim_sim::clock::LocalTime;
use coordsim_sim::kv_workload::{KvConnection, KvRole, Step, run_reader, run_writer};
use coordsim_sim::scenario::EtcdReads;

use crate::config::{ClientConfig, KvConfig, System};
use crate::journal::Journal;

/// How long one operation may take before its outcome counts as unknown (the simulator's).
const OP_BUDGET: Duration = Duration::from_secs(1);

/// Runs the client's part of the key-value workload until the process is stopped. A ZooKeeper
/// client starts with server `index` mod N (c1 is 0).
pub async fn run(config: &ClientConfig, kv: &KvConfig, journal: Arc<Journal>) -> Result<(), String> {
    crate::workload::sleep_until(&journal, config.start_ns).await;
    if kv.role == KvRole::Watcher {
        // The simulator's watchers use etcd's API whatever the writers use; the runner refuses
        // them on ZooKeeper before the run.
        let client = crate::etcd::connect(&config.endpoints, OP_BUDGET).await?;
        watch::watch(&config.name, &kv.spec, client, journal).await;
        return Ok(());
    }
    let clock = LocalClock(tokio::time::Instant::now());
    match config.system {
        System::Etcd => {
            let client = crate::etcd::connect(&config.endpoints, OP_BUDGET).await?;
            let serializable = kv.spec.etcd_reads() == EtcdReads::Serializable;
            drive(config, kv, &etcd::EtcdKv { client, serializable, journal, clock }).await;
        }
        System::Zookeeper => {
            let servers = config.endpoints.clone();
            drive(config, kv, &zookeeper::ZkKv::new(servers, kv.index, kv.spec.zk_reads(), journal, clock)).await;
        }
    }
    Ok(())
}

async fn drive(config: &ClientConfig, kv: &KvConfig, conn: &impl KvConnection) {
    match kv.role {
        KvRole::Reader => run_reader(&config.name, &kv.spec, conn).await,
        _ => run_writer(&config.name, kv.role, &kv.spec, conn).await,
    }
}

/// A client's local monotonic time: the process's own clock (which a `[[clock]]` skews through
/// libfaketime), from when the workload started.
struct LocalClock(tokio::time::Instant);

impl LocalClock {
    fn now(&self) -> LocalTime {
        LocalTime(self.0.elapsed().as_nanos().min(i64::MAX as u128) as i64)
    }
}

/// The outcome of one request: answered, turned down by the server, or unanswered.
enum Outcome<T> {
    Answered(T),
    Refused(String),
    Unanswered(String),
}

impl<T> Outcome<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Answered(answer) => Outcome::Answered(f(answer)),
            Outcome::Refused(error) => Outcome::Refused(error),
            Outcome::Unanswered(error) => Outcome::Unanswered(error),
        }
    }
}

/// What a request without an answer means for the history.
#[derive(Clone, Copy)]
enum Unanswered {
    /// A write: it may have been applied (`info`).
    MayHaveApplied,
    /// A read: it changed nothing, so it did not happen for anyone (`fail`).
    DidNotHappen,
}

/// Records an operation's outcome: `ok` with what `answered` makes of the answer, `fail` when
/// the server turned it down, and an unanswered one as `unanswered` says.
fn finish<T>(
    journal: &Journal,
    node: &str,
    op: u64,
    outcome: Outcome<T>,
    unanswered: Unanswered,
    answered: impl FnOnce(T) -> (Return, Step),
) -> Option<Step> {
    match (outcome, unanswered) {
        (Outcome::Answered(answer), _) => {
            let (ret, step) = answered(answer);
            journal.ok(node, op, ret);
            return Some(step);
        }
        (Outcome::Unanswered(error), Unanswered::MayHaveApplied) => journal.info(node, op, error),
        (Outcome::Refused(error) | Outcome::Unanswered(error), _) => journal.fail(node, op, error),
    }
    None
}
