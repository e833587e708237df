//! What the orchestrator tells each client process: one JSON file per client, passed as
//! `coordsim real-client --config <file>`.

use std::path::PathBuf;

use coordsim_sim::kv_workload::KvRole;
use coordsim_sim::scenario::{KvSpec, Recipe};
use serde::{Deserialize, Serialize};

/// Which real system a run targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum System {
    Etcd,
    Zookeeper,
}

impl System {
    pub fn name(self) -> &'static str {
        match self {
            System::Etcd => "etcd",
            System::Zookeeper => "zookeeper",
        }
    }
}

/// One client process's part of the scenario. Times are true time (`CLOCK_MONOTONIC`) in ns
/// since the run's epoch; durations are in ms of the client's own timers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// The client's node name in the history (`c1`).
    pub name: String,
    pub system: System,
    /// etcd: `http://127.0.0.1:PORT` per member; ZooKeeper: `127.0.0.1:PORT` per server.
    pub endpoints: Vec<String>,
    /// What the client does: the lock workload or the key-value workload.
    pub workload: Workload,
    /// `CLOCK_MONOTONIC` reading, in ns, at the run's start.
    pub epoch_ns: u64,
    /// When the client starts acting and when it stops (exits), in ns since the epoch.
    pub start_ns: u64,
    pub stop_ns: u64,
    /// Where the client writes its journal.
    pub journal: PathBuf,
    /// First operation id of this client (spaced per client so ids never collide).
    pub op_base: u64,
}

/// A client's workload: the scenario's `[lock]` or its `[kv]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Workload {
    Lock(LockConfig),
    Kv(KvConfig),
}

/// The lock workload (`[lock]`, `[clients]`, `[resource]`). Durations in ms of the client's own
/// timers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockConfig {
    pub recipe: Recipe,
    /// etcd: the lock prefix (`/locks/resource`); ZooKeeper: the lock node's path.
    pub lock_name: String,
    /// The session's TTL (etcd lease TTL, rounded up to whole seconds; ZooKeeper session timeout).
    pub ttl_ms: u64,
    /// etcd: a client that stops acting this long after its last acknowledged keepalive, by its
    /// own clock, watching the deadline continuously (`None`: etcd clientv3's default, which
    /// notices a missed TTL only when a keepalive attempt ends).
    pub deadline_ms: Option<u64>,
    /// Which clock times `deadline_ms` (`[lock] client_deadline_clock`): the monotonic clock
    /// (tokio's `Instant`), or the wall clock (`SystemTime`), which a clock step moves.
    #[serde(default)]
    pub deadline_clock: coordsim_sim::clock::ClockKind,
    /// etcd-cas: random backoff before retrying after a wakeup.
    pub backoff_ms: Option<u64>,
    /// etcd-semaphore: holders at once.
    pub permits: u32,
    /// Nested acquisitions per hold, and whether the client counts them (reentrant) instead of
    /// asking the recipe again.
    pub nested: u32,
    pub reentrant: bool,
    pub hold_ms: u64,
    pub writes_per_hold: u32,
    pub think_ms: u64,
    /// The protected resource: its name in the history and its TCP address.
    pub resource_name: String,
    pub resource_addr: String,
    /// The `ignore_keepalive_failure` bug (etcd): the session never ends, whatever its keepalives
    /// learn (docs/cases/03).
    pub ignore_keepalive_failure: bool,
    /// ZooKeeper recipe switches.
    pub unique_tag: bool,
    pub recheck_vanished: bool,
}

/// The key-value workload (`[kv]`): the client's part of it (sim/src/kv_workload).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvConfig {
    pub spec: KvSpec,
    pub role: KvRole,
    /// The client's position (c1 is 0): a ZooKeeper client talks to server `index` mod N.
    pub index: usize,
}
