//! A scenario: the cluster, the clients and their recipe, the protected resource, the fault
//! schedule and the expected verdicts. Read from TOML (see `scenarios/library/*.toml`); the
//! harness runs one scenario for one seed.
//!
//! Times are written as strings with a unit: `"500ms"`, `"5s"`, `"1.5s"`, `"2m"`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use coordsim_checker::properties::{ByDefault, Property};
use coordsim_checker::verdict::Verdict;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::etcd_release::EtcdRelease;
use crate::lessor::LeasePolicy;
pub use crate::recipe::EntryLifetime;
use crate::resource::ResourceMode;
pub use crate::timing::TimingSpec;

/// Largest cluster and client counts a scenario may ask for (a limit on everything). Clients
/// get addresses 10.0.1.1..=10.0.1.N, so N < 255: 254 clients, enough for the field's flood
/// (a release to 250 waiters: flood-cas-lock-250). Measured for the 100-client comparison
/// (hundred-requests-*): a 20 s seed with 100 clients runs in 0.13–0.36 s at 44–53 MB peak RSS
/// (release); a run's memory is bounded by its entry limit whatever the count.
pub const SERVERS_MAX: usize = 7;
pub const CLIENTS_MAX: usize = 254;
/// Longest simulated run.
pub const DURATION_MAX: Duration = Duration::from_secs(3600);
/// Shortest lease TTL, as the server enforces it (etcd raises shorter TTLs to its minimum,
/// derived from the election timeout; ours is 1 s against a 300 ms election timeout).
pub const TTL_MIN: Duration = Duration::from_millis(1000);

/// The shortest client deadline (`[lock] client_deadline`): keepalives go every third of it, so
/// at most ten per second per client, which bounds a run's history by its length.
pub const CLIENT_DEADLINE_MIN: Duration = Duration::from_millis(300);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// One line: what the scenario shows.
    pub summary: String,
    /// The teaching text: what happens, why, what fixes it.
    #[serde(default)]
    pub description: String,
    /// Simulated (true) time the run lasts.
    pub duration: Dur,
    pub cluster: Cluster,
    /// The lock workload: every client acquires, writes to the resource, releases. Needs
    /// `[resource]`. A scenario has this or `[kv]`.
    #[serde(default)]
    pub lock: Option<LockSpec>,
    #[serde(default)]
    pub resource: Option<ResourceSpec>,
    /// The key-value workload: clients put, get, delete and compare-and-swap a few keys; some
    /// of them watch the keys instead.
    #[serde(default)]
    pub kv: Option<KvSpec>,
    pub clients: Clients,
    /// Watch-only clients on one host, named `observers`, following the lock's keys: the load
    /// of a watch storm (lock scenarios only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observers: Option<ObserverSpec>,
    /// How long things take (`crate::timing`): a calibrated profile, or tables of the
    /// scenario's own. Absent: the calibrated profile of the scenario's service
    /// ([`Scenario::time_model`]); `profile = "none"`: every message 1–10 ms and servers that
    /// cost nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingSpec>,
    /// Per-node clocks at the start of the run (nodes not listed run at true time).
    #[serde(default)]
    pub clock: Vec<ClockSpec>,
    /// Faults at fixed times.
    #[serde(default)]
    pub nemesis: Vec<ScheduledFault>,
    /// A random fault mix that each seed draws from.
    #[serde(default)]
    pub chaos: Option<Chaos>,
    /// Known real-world bugs, reintroduced by name (all off by default: the fixed path is the
    /// default path).
    #[serde(default)]
    pub bugs: Bugs,
    /// Expected verdict per property; properties not listed are expected to pass.
    #[serde(default)]
    pub expect: Expectations,
}

/// A scenario's `[expect]` table: an expected verdict per built-in property, and per checker of
/// the user's own (a key that names no built-in property). The checkers' keys are claimed where
/// the checkers are known: a Testbed's checkers (`Testbed::validate`), or those registered for
/// a user's build of the CLI (the scenario loader); a key nobody claims is an error there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expectations {
    properties: BTreeMap<Property, Expectation>,
    checkers: BTreeMap<String, Expectation>,
}

impl Expectations {
    pub fn get(&self, property: &Property) -> Option<&Expectation> {
        self.properties.get(property)
    }

    pub fn contains_key(&self, property: &Property) -> bool {
        self.properties.contains_key(property)
    }

    pub fn insert(&mut self, property: Property, expectation: Expectation) {
        self.properties.insert(property, expectation);
    }

    /// The built-in properties' expectations.
    pub fn iter(&self) -> impl Iterator<Item = (&Property, &Expectation)> {
        self.properties.iter()
    }

    /// The expectation the file states for the checker `id`, if any.
    pub fn checker(&self, id: &str) -> Option<Expectation> {
        self.checkers.get(id).copied()
    }

    /// Expects the checker `id` (not a built-in property's id) to have `expectation`.
    pub fn set_checker(&mut self, id: &str, expectation: Expectation) {
        assert!(Property::from_id(id).is_none(), "{id} is a built-in property, not a checker");
        self.checkers.insert(id.to_string(), expectation);
    }

    /// The ids of the checkers the file states expectations for.
    pub fn checker_ids(&self) -> impl Iterator<Item = &str> {
        self.checkers.keys().map(String::as_str)
    }
}

impl FromIterator<(Property, Expectation)> for Expectations {
    fn from_iter<I: IntoIterator<Item = (Property, Expectation)>>(items: I) -> Self {
        Expectations { properties: items.into_iter().collect(), checkers: BTreeMap::new() }
    }
}

impl Serialize for Expectations {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.properties.len() + self.checkers.len()))?;
        for (property, expectation) in &self.properties {
            map.serialize_entry(property.id(), expectation)?;
        }
        for (id, expectation) in &self.checkers {
            map.serialize_entry(id, expectation)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Expectations {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = BTreeMap::<String, Expectation>::deserialize(deserializer)?;
        let mut expectations = Expectations::default();
        for (key, expectation) in table {
            match Property::from_id(&key) {
                Some(property) => expectations.insert(property, expectation),
                None => {
                    expectations.checkers.insert(key, expectation);
                }
            }
        }
        Ok(expectations)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Number of servers, named s1..sN.
    pub servers: usize,
    /// What the servers are: one replicated etcd-style cluster (`raft`, the default), or N
    /// independent Redis servers that share nothing (`independent`, for the `redlock` recipe).
    #[serde(default, skip_serializing_if = "ClusterKind::is_raft")]
    pub kind: ClusterKind,
    /// Whether servers sync every log append and vote before acknowledging it (true). With
    /// false they sync every 100 ms of their clock, and a crash loses what was not synced:
    /// acknowledged writes can vanish (what the durability checker is for). Independent Redis
    /// servers: true is `appendfsync always`; false is Redis's default persistence (RDB snapshots
    /// at the default save points, `crate::redis`), so a restart loses the keys set since the
    /// last snapshot, which a short run never takes.
    #[serde(default = "yes")]
    pub fsync: bool,
    /// True time a server spends notifying one watcher of one event, in its apply loop, before
    /// it applies the next entry (etcd's watchableStore notifies the watchers of a write's keys
    /// as the write's transaction ends: etcd issue 18109, slow watchers raising PUT latency).
    /// Absent (the default): watch notifications cost nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_event_cost: Option<Dur>,
    /// The etcd release and lease configuration the servers stand for (`[cluster.etcd]`).
    #[serde(default, skip_serializing_if = "EtcdSpec::is_default")]
    pub etcd: EtcdSpec,
    /// How often a leader sends heartbeats (etcd's `--heartbeat-interval`), in each server's
    /// local time. Given with `election_timeout`, or neither: absent, the simulator's 50 ms
    /// with an election timeout drawn from 150–300 ms ([`RaftTiming::default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval: Option<Dur>,
    /// How long a follower waits without hearing from a leader before it stands for election
    /// (etcd's `--election-timeout`); each wait is drawn from [t, 2t), as etcd's raft draws its
    /// randomized election timeout. At least 5 heartbeat intervals and under 50 s (etcd's own
    /// checks: embed/config.go `ElectionMs < 5*TickMs`, `maxElectionMs`). etcd's tuning guide:
    /// a heartbeat about the round trip between members, an election timeout about 10 times it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub election_timeout: Option<Dur>,
}

/// Raft timing, in ms of each server's local clock: how often a leader sends heartbeats, and
/// the range a follower's election timeout is drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaftTiming {
    pub heartbeat_ms: u64,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
}

impl Default for RaftTiming {
    /// The simulator's own (every history before `[cluster] heartbeat_interval`): a heartbeat
    /// every 50 ms, elections after 150–300 ms. Faster than etcd's defaults (100 ms and 1 s),
    /// which the real runner starts its members with.
    fn default() -> Self {
        RaftTiming { heartbeat_ms: 50, election_timeout_min_ms: 150, election_timeout_max_ms: 300 }
    }
}

/// The longest `cluster.election_timeout` etcd accepts (etcd's `maxElectionMs`).
const ELECTION_TIMEOUT_MAX: Duration = Duration::from_secs(50);

impl Cluster {
    /// The servers' Raft timing: `heartbeat_interval` and `election_timeout` when given, else
    /// [`RaftTiming::default`].
    pub fn raft_timing(&self) -> RaftTiming {
        match (self.heartbeat_interval, self.election_timeout) {
            (Some(heartbeat), Some(election)) => {
                let election_ms = election.0.as_millis() as u64;
                RaftTiming {
                    heartbeat_ms: heartbeat.0.as_millis() as u64,
                    election_timeout_min_ms: election_ms,
                    election_timeout_max_ms: 2 * election_ms,
                }
            }
            _ => RaftTiming::default(),
        }
    }
}

/// What `cluster.servers` are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterKind {
    /// One etcd-style cluster replicated with Raft (and its ZooKeeper view).
    #[default]
    Raft,
    /// Independent single-node Redis servers: no replication, no leader, keys expire by each
    /// server's wall clock (`crate::redis`). Only the `redlock` recipe runs on them.
    Independent,
}

impl ClusterKind {
    fn is_raft(&self) -> bool {
        *self == ClusterKind::Raft
    }
}

/// `[cluster.etcd]`: which etcd the servers behave as, where releases and flags differ
/// (`crate::etcd_release` lists the facts and their sources). Today that is the lessor: whether
/// and when it checkpoints remaining TTLs, so whether a leader change restarts leases.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdSpec {
    /// A release line (`"3.4"`, `"3.5"`, `"3.6"`: its latest patch) or a patch release
    /// (`"3.5.1"`). Default 3.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<EtcdRelease>,
    /// etcd's `--experimental-enable-lease-checkpoint` (3.6: `--feature-gates=LeaseCheckpoint=true`):
    /// the leader records leases' remaining TTLs in the log, so a new leader continues them.
    /// Default false, as in every etcd release.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lease_checkpoint: bool,
    /// How often a lease is checkpointed; only leases with more TTL left than this ever are.
    /// Default etcd's fixed 5 minutes (no command-line flag: only embedders set
    /// `LessorConfig.CheckpointInterval`, as etcd's integration tests do). Needs `lease_checkpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_checkpoint_interval: Option<Dur>,
}

impl EtcdSpec {
    fn is_default(&self) -> bool {
        *self == EtcdSpec::default()
    }

    /// The release, default 3.5.
    pub fn release(&self) -> EtcdRelease {
        self.version.unwrap_or_default()
    }

    /// The servers' lessor; `election_timeout_ms` is what a promotion adds to every lease.
    pub fn lease_policy(&self, election_timeout_ms: u64) -> LeasePolicy {
        let interval_ms = self.lease_checkpoint_interval.map(|d| d.0.as_millis() as u64);
        self.release().lease_policy(self.lease_checkpoint, interval_ms, election_timeout_ms)
    }
}

/// The largest `cluster.watch_event_cost`.
pub const WATCH_EVENT_COST_MAX: Duration = Duration::from_millis(100);
/// The most observers.
pub const OBSERVERS_MAX: usize = 2000;

/// Watchers of the lock's keys that do nothing else (`[observers]`): a dashboard, a router
/// that sends work to the holder, every pod watching one configuration key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserverSpec {
    /// How many watches of the lock's prefix the host keeps (1..=2000).
    pub count: usize,
    /// Whether they go through a coalescing proxy (etcd's gRPC proxy, Kubernetes' watch
    /// cache): the servers then see one watch, and the proxy fans its events out to the
    /// `count` watchers at no cost to the servers. Default false: `count` watches on the servers.
    #[serde(default)]
    pub proxy: bool,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recipe {
    /// etcd's concurrency.Mutex: own key per session, wait for the predecessor's delete.
    EtcdMutex,
    /// etcd's Lock service (v3lock): the server runs the mutex recipe for the client.
    EtcdLockApi,
    /// Compare-and-swap on one key, every waiter watching that key: one release wakes them all.
    EtcdCas,
    /// ZooKeeper's lock recipe: an ephemeral sequential node, a watch on the predecessor only,
    /// a unique tag in the name to survive a lost create reply.
    ZkQueueLock,
    /// The naive ZooKeeper lock: every waiter watches the lock node's children, so every
    /// change wakes them all.
    ZkHerdLock,
    /// etcd's Election service: Campaign (the leader's term is its key's create_revision, the
    /// fencing token), Resign. Leadership is recorded as a lock on the election's name.
    EtcdElection,
    /// ZooKeeper's leader election recipe: ephemeral sequential `n_` nodes, the lowest leads,
    /// each candidate watches its predecessor.
    ZkElection,
    /// A counting semaphore on etcd: `permits` holders at once (the N oldest keys).
    EtcdSemaphore,
    /// Redlock (redis.io's "Distributed Locks with Redis"): `SET name value NX PX ttl` on each
    /// of N independent Redis servers in turn; held when a majority answered OK and the validity
    /// time (TTL − elapsed − drift) is still positive; released everywhere with a
    /// compare-and-delete. No fencing token (`crate::client::redlock`).
    Redlock,
}

impl Recipe {
    /// Whether the recipe runs on the ZooKeeper view (its lock name is a znode path).
    pub fn is_zookeeper(self) -> bool {
        matches!(self, Recipe::ZkQueueLock | Recipe::ZkHerdLock | Recipe::ZkElection)
    }

    /// Whether the client puts its own queue key (etcd recipes run by the client; the Lock and
    /// Election services put it on the server).
    pub fn puts_own_key(self) -> bool {
        matches!(self, Recipe::EtcdMutex | Recipe::EtcdCas | Recipe::EtcdSemaphore)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    pub recipe: Recipe,
    /// The lock's name: the key prefix under which holders queue.
    pub name: String,
    /// Session lease TTL.
    pub ttl: Dur,
    /// A client-side lease deadline: how long after sending its last acknowledged keepalive a
    /// client keeps acting as holder without a newer acknowledgement, by its own clock. Safe
    /// only with a margin below the TTL that covers clock-rate skew (docs/cases/06, 09).
    /// Unset: the client acts until its session learns that the lease is gone (etcd clientv3).
    #[serde(default)]
    pub client_deadline: Option<Dur>,
    /// Which of the client's clocks times `client_deadline`: `monotonic` (unset; as etcd's
    /// clientv3 times its keepalive deadline, and ZooKeeper's client its read timeout) or `wall`
    /// (a deadline computed from wall-clock timestamps, which a jump of the client's clock moves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_deadline_clock: Option<crate::clock::ClockKind>,
    /// etcd-cas only: after a wakeup, wait a random time in [0, backoff) before trying again
    /// (jitter spreads the herd's retries, not its wakeups).
    #[serde(default)]
    pub backoff: Option<Dur>,
    /// etcd-semaphore only: how many holders at once.
    #[serde(default = "one_permit")]
    pub permits: u32,
    /// While holding, each client takes the lock again this many times (nested, like a
    /// recursive function) and releases it as often. With `reentrant`, a per-client count makes
    /// the inner acquisitions free; without it they go to the recipe again.
    #[serde(default)]
    pub nested: u32,
    /// Count nested acquisitions in the client (a reentrant lock, as Curator's InterProcessMutex
    /// is) instead of asking the recipe again.
    #[serde(default = "yes")]
    pub reentrant: bool,
    /// etcd recipes that put their own key (etcd-mutex, etcd-cas, etcd-semaphore): whether the
    /// key is attached to the session's lease (true, the default: a crashed holder's key is
    /// deleted when its lease expires, one TTL after its last keepalive). false puts it without
    /// a lease, a common mistake of home-made locks: only an explicit delete removes it, so a
    /// holder that crashes leaves the lock held for ever.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub lease: bool,
    /// ZooKeeper recipes: whether the lock node is ephemeral (true, the default: ZooKeeper
    /// deletes it when the creating session expires) or persistent (false: it outlives a crashed
    /// holder, and the lock with it).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub ephemeral: bool,
    /// etcd recipes: who renews the session's lease. `background` (the default, etcd clientv3's
    /// session): a task of its own, every TTL/3, whatever the client is doing. `between-holds`: the
    /// client's one request loop, when it is not working in its critical section, so a hold
    /// longer than the TTL lets the lease expire under the holder (self-eviction).
    #[serde(default, skip_serializing_if = "KeepAliveMode::is_background")]
    pub keepalive: KeepAliveMode,
    /// ZooKeeper recipes: which connection states end a hold, as Apache Curator's
    /// `ConnectionStateErrorPolicy` says. `standard` (Curator's default,
    /// `StandardConnectionStateErrorPolicy`): SUSPENDED (the connection lost) and LOST;
    /// `session` (`SessionConnectionStateErrorPolicy`): LOST only, so a holder keeps acting while
    /// it reconnects. Either way Curator declares LOST on the client once SUSPENDED has lasted a
    /// session timeout (`simulatedSessionExpirationPercent` 100). Unset: a plain ZooKeeper
    /// client's recipe, whose hold ends only when the ensemble says the session expired
    /// (`sim/src/client/zk_session.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_state_error_policy: Option<ConnectionStateErrorPolicy>,
}

/// Apache Curator's `ConnectionStateErrorPolicy` (`[lock] connection_state_error_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionStateErrorPolicy {
    /// SUSPENDED and LOST end a hold (`StandardConnectionStateErrorPolicy`, the default).
    Standard,
    /// Only LOST ends a hold (`SessionConnectionStateErrorPolicy`).
    Session,
}

fn one_permit() -> u32 {
    1
}

fn is_true(value: &bool) -> bool {
    *value
}

/// Who keeps a session's lease alive (`[lock] keepalive`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepAliveMode {
    /// A background task sends a keepalive every TTL/3 (or client deadline/3), holding or not.
    #[default]
    Background,
    /// Keepalives are sent only while the client is not holding the lock: its request loop
    /// renews while it waits for the lock and while it thinks, not while it works.
    BetweenHolds,
}

impl KeepAliveMode {
    fn is_background(&self) -> bool {
        *self == KeepAliveMode::Background
    }
}

impl LockSpec {
    /// The lifetime of the lock's queue entries (`lease = false` or `ephemeral = false`:
    /// persistent).
    pub fn entry_lifetime(&self) -> EntryLifetime {
        if self.lease && self.ephemeral { EntryLifetime::Session } else { EntryLifetime::Persistent }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    pub mode: ResourceMode,
}

/// Every client runs the same loop: acquire, write `writes_per_hold` times spread over `hold`,
/// release, wait `think`, again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clients {
    /// Number of clients, named c1..cN.
    pub count: usize,
    /// When c1 starts.
    #[serde(default = "Dur::zero")]
    pub start: Dur,
    /// Each next client starts this much later.
    #[serde(default = "Dur::zero")]
    pub stagger: Dur,
    /// How long a holder keeps the lock (lock workload).
    #[serde(default = "one_second")]
    pub hold: Dur,
    /// Writes to the resource per hold, the first right after acquiring (lock workload).
    #[serde(default = "one_write")]
    pub writes_per_hold: u32,
    /// Pause between releasing and acquiring again.
    #[serde(default = "Dur::zero")]
    pub think: Dur,
}

fn one_second() -> Dur {
    Dur(Duration::from_secs(1))
}

fn one_write() -> u32 {
    1
}

/// The key-value workload (`[kv]`): each writer picks a key and an operation at random every
/// `interval` (±50%); values are unique (`c2-17`). The last `watchers` clients watch instead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvSpec {
    /// Which API the clients use: etcd's (keys `k0`..) or ZooKeeper's (znodes `/k0`..).
    #[serde(default)]
    pub api: KvApi,
    /// ZooKeeper only: how getData is served (default `local`, as in ZooKeeper).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zk_reads: Option<ZkReads>,
    /// etcd only: how a range is served (default `linearizable`, as etcd's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_reads: Option<EtcdReads>,
    /// Keys `k0`..`k<keys-1>`.
    pub keys: usize,
    /// Time between one writer's operations.
    pub interval: Dur,
    /// Share of linearizable reads, compare-and-swaps and deletes; the rest are puts.
    #[serde(default)]
    pub reads: f64,
    #[serde(default)]
    pub cas: f64,
    #[serde(default)]
    pub deletes: f64,
    /// Share of read-modify-writes: read the key, work for `work`, then write the new value only
    /// if the key's version is still the one read (etcd: a transaction comparing its
    /// mod_revision; ZooKeeper: setData with the version); on a conflict read again and redo.
    #[serde(default)]
    pub updates: f64,
    /// The time a read-modify-write spends between its read and its write (local time).
    #[serde(default = "Dur::zero")]
    pub work: Dur,
    /// How many of the clients (the last ones) watch every key instead of writing.
    #[serde(default)]
    pub watchers: usize,
    /// How many of the clients before the watchers only read, a random key every `interval`.
    #[serde(default)]
    pub readers: usize,
    /// A watcher's pause after each delivery: a slow consumer lets compaction overtake it.
    #[serde(default = "Dur::zero")]
    pub watch_lag: Dur,
    /// Every so often the first writer compacts the store at its latest revision (0: never).
    #[serde(default = "Dur::zero")]
    pub compact_every: Dur,
    /// Where a watcher's first stream starts (default `first`, every change from revision 1).
    /// Later streams resume after the last revision delivered, or at the compact revision.
    #[serde(default, skip_serializing_if = "WatchStart::is_first")]
    pub watch_start: WatchStart,
}

/// Where a watcher's first stream starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchStart {
    /// Revision 1: every change the store made.
    #[default]
    First,
    /// etcd's `start_revision = 0`: from the revision after the store's current one when the
    /// server creates the stream (etcd's `mvcc` watchable store: `startRev` 0 is `currentRev + 1`;
    /// the created response's header carries `currentRev`). The history records that revision.
    Now,
}

impl WatchStart {
    fn is_first(&self) -> bool {
        *self == WatchStart::First
    }
}

impl KvSpec {
    /// How the ZooKeeper workload's getData is served (unset: local, as in ZooKeeper).
    pub fn zk_reads(&self) -> ZkReads {
        self.zk_reads.unwrap_or(ZkReads::Local)
    }

    /// How the etcd workload's ranges are served (unset: linearizable, as in etcd).
    pub fn etcd_reads(&self) -> EtcdReads {
        self.etcd_reads.unwrap_or(EtcdReads::Linearizable)
    }
}

/// The API of the key-value workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KvApi {
    /// put, range (linearizable, through a read index), delete, txn.
    #[default]
    Etcd,
    /// setData, getData, create, setData with a version, on the ZooKeeper view; each client
    /// stays connected to one server, which serves its reads.
    Zookeeper,
}

/// How an etcd client's range is served: etcd's `serializable` request option. Source: etcd's API
/// guarantees (etcd.io/docs/v3.5/learning/api_guarantees, "Linearizability"): a serializable
/// read is served by whichever member receives it from its own applied state, and may be stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EtcdReads {
    /// Through the leader's read index (etcd's default): never stale.
    Linearizable,
    /// From the receiving member's applied state, without asking the leader: possibly stale.
    Serializable,
}

/// How a ZooKeeper client's getData is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZkReads {
    /// From the connected server's applied state: possibly stale.
    Local,
    /// `sync` first, so that the connected server has caught up with the leader.
    Sync,
}

/// Bug switches: each reintroduces one known bug as a plain branch at the one place it lived
/// (docs/cases). Off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bugs {
    /// The server's Lock service returns success to a waiter without checking that the
    /// waiter's lease is still alive (etcd 3.4.3, issues 11456/9921; docs/cases/02).
    pub grant_without_lease_check: bool,
    /// A leader that steps down keeps its lessor primary: it goes on expiring leases (its
    /// revocations forwarded to the new leader) and acknowledging keepalives without a quorum
    /// (etcd issues 12528, 15247; docs/cases/03).
    pub deposed_leader_expires_leases: bool,
    /// A new leader restarts every lease at its full TTL instead of continuing from the last
    /// checkpoint (etcd issues 9395, 13294, 17132; docs/cases/04).
    pub ttl_reset_on_leader_change: bool,
    /// A watch started at exactly the compact revision misses the events of that revision
    /// (docs/cases/05).
    pub watch_skip_at_compaction: bool,
    /// "Linearizable" reads are served from the contacted server's state without a read index:
    /// a follower or a deposed leader answers stale data.
    pub follower_reads_without_read_index: bool,
    /// The client ignores failed keepalives ("lease not found", timeouts): its session never
    /// ends and it goes on acting as holder after its lease expired.
    pub ignore_keepalive_failure: bool,
    /// The ZooKeeper queue lock treats "predecessor already gone" at `exists` as "watch set"
    /// and sleeps forever (Apache Helix, CURATOR-527; docs/cases/08).
    pub lost_wakeup_on_vanished_predecessor: bool,
    /// The ZooKeeper locks create `lock-` without a unique tag, so after a lost create reply the
    /// client cannot find its node and creates another, orphaning the first at the head of the
    /// queue (ZOOKEEPER-1262, CURATOR-79; docs/cases/07).
    pub no_unique_tag_in_sequential_create: bool,
}

/// A fault at a fixed time, as written in `[[nemesis]]`. Which fields apply depends on `kind`;
/// `crate::nemesis::plan` checks them and turns the entry into a typed fault.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledFault {
    /// True time at which the fault starts.
    pub at: Dur,
    /// How long it lasts (every kind but `clock-jump`).
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Dur>,
    pub kind: FaultKindSpec,
    /// The node it hits: a name (c1, s2), or `leader`, `follower`, `server`, `client`, `any`
    /// (resolved when the fault starts; random choices come from the run's seeded RNG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Partition shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<PartitionShape>,
    /// Nodes a partition shape applies to (`one-way`: [from, to]; `clients`: which clients).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// Clock jump or strobe amount, signed: `"+5s"`, `"-2s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<SignedDur>,
    /// Clock rate (`clock-rate`, 0.1..=10) or message loss rate (`packet-loss`, 0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Strobe period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Dur>,
    /// Latency range (`latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Dur>,
    /// Link of a `link-delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Dur>,
    /// Which replies `drop-replies` drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replies: Option<ReplyKind>,
}

/// A fault's kind, as scenario files and histories name it: `pause`, `crash`, `partition`,
/// `clock-jump`, `clock-rate`, `clock-strobe`, `packet-loss`, `latency`, `drop-replies`,
/// `link-delay` (the fields each takes are checked by `crate::nemesis::plan`).
pub use coordsim_checker::history::FaultKind as FaultKindSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionShape {
    /// Cut `target` off from every other node.
    Isolate,
    /// Cut the server `target` off from the other servers only: clients still reach it (a
    /// deposed leader that clients can still talk to).
    CutFromServers,
    /// Split the servers into a majority and a minority (clients reach both).
    MajorityMinority,
    /// Each server reaches only its neighbours in a random ring (Jepsen's majorities-ring).
    Ring,
    /// Two halves that only one bridge server connects.
    Bridge,
    /// `targets = [a, b]`: messages from a to b are lost; b still reaches a.
    OneWay,
    /// Clients (all, or `targets`) cut off from every server.
    Clients,
    /// Servers cut off from each other; clients still reach every server.
    Servers,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyKind {
    /// Replies to writes (put, delete, txn: the etcd lock recipes' create; ZooKeeper writes).
    Write,
    /// Replies to keepalives.
    KeepAlive,
    /// Replies to the writes that queue a lock entry: ZooKeeper creates, and etcd transactions
    /// (the etcd lock recipes' create). The rest of the client's writes get through.
    Create,
    /// Every reply from the cluster.
    All,
}

impl ReplyKind {
    /// Its name in a scenario file and in a fault's detail (`drop create replies`).
    pub fn name(self) -> &'static str {
        match self {
            ReplyKind::All => "all",
            ReplyKind::Write => "write",
            ReplyKind::KeepAlive => "keepalive",
            ReplyKind::Create => "create",
        }
    }
}

/// A node's clock at the start of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    pub node: String,
    /// Local time at true time 0 (signed).
    #[serde(default)]
    pub offset: SignedDur,
    /// Local seconds per true second, 0.1..=10.
    #[serde(default = "one")]
    pub rate: f64,
}

fn one() -> f64 {
    1.0
}

/// A random fault mix: every seed draws its own plan (swarm testing: with `swarm`, a seed
/// enables only a random subset of `kinds`, as FoundationDB's buggify does).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chaos {
    pub kinds: Vec<FaultKindSpec>,
    #[serde(default)]
    pub swarm: bool,
    /// First fault no earlier than this.
    pub start: Dur,
    /// Every fault has ended by this; after it the cluster runs fault-free (the liveness phase).
    pub stop: Dur,
    /// Time between the starts of consecutive faults, drawn from this range.
    pub gap: DurRange,
    /// Length of each fault, drawn from this range.
    pub length: DurRange,
    /// Whom drawn pauses, crashes and isolating partitions hit, drawn from this list: node names
    /// or `leader`, `follower`, `server`, `client`, `any`. Empty (the default): pauses and
    /// crashes hit a leader, a follower, a server or a client; isolation a leader, a follower or
    /// a client. A bug that only a paused client shows is found faster with `["client"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// Which partition shapes drawn partitions take. Empty (the default): isolate,
    /// majority-minority, ring, bridge, clients, servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<PartitionShape>,
    /// Which replies drawn `drop-replies` faults drop. Empty (the default): write, keep-alive
    /// or all. `["create"]` aims them at the creates of lock entries (docs/cases/07).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<ReplyKind>,
}

/// A range of durations written `"1s..5s"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurRange {
    pub min: Dur,
    pub max: Dur,
}

impl DurRange {
    pub fn parse(text: &str) -> Result<DurRange, String> {
        let (a, b) =
            text.split_once("..").ok_or_else(|| format!("invalid range {text:?}: expected like \"1s..5s\""))?;
        let (min, max) = (Dur::parse(a)?, Dur::parse(b)?);
        if min > max {
            return Err(format!("invalid range {text:?}: the minimum is above the maximum"));
        }
        Ok(DurRange { min, max })
    }
}

impl fmt::Display for DurRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.min, self.max)
    }
}

impl Serialize for DurRange {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DurRange {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<DurRange, D::Error> {
        let text = String::deserialize(deserializer)?;
        DurRange::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A signed duration: `"+5s"`, `"-500ms"`, `"2s"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct SignedDur {
    pub ns: i64,
}

impl SignedDur {
    pub fn parse(text: &str) -> Result<SignedDur, String> {
        let text = text.trim();
        let (sign, rest) = match text.strip_prefix('-') {
            Some(rest) => (-1, rest),
            None => (1, text.strip_prefix('+').unwrap_or(text)),
        };
        let magnitude = Dur::parse(rest).map_err(|e| e.replace(&format!("{rest:?}"), &format!("{text:?}")))?;
        Ok(SignedDur { ns: sign * magnitude.0.as_nanos().min(i64::MAX as u128) as i64 })
    }
}

impl fmt::Display for SignedDur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.ns < 0 { "-" } else { "+" };
        write!(f, "{sign}{}", Dur(Duration::from_nanos(self.ns.unsigned_abs())))
    }
}

impl Serialize for SignedDur {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SignedDur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SignedDur, D::Error> {
        let text = String::deserialize(deserializer)?;
        SignedDur::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// What a scenario expects of a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    Pass,
    Fail,
    /// Not judged: the verdict is reported but matches either way (e.g. `single_holder` under a
    /// random fault mix, where pauses may or may not hit a holder).
    Any,
}

impl Expectation {
    /// What a scenario that does not name `property` expects: its registry entry's default
    /// (`coordsim_checker::properties::REGISTRY`). A property registered with `ByDefault::Any`
    /// changes no verdict of a scenario written before it.
    pub fn by_default(property: Property) -> Expectation {
        match property.by_default() {
            ByDefault::Pass | ByDefault::Informational => Expectation::Pass,
            ByDefault::Any => Expectation::Any,
        }
    }

    pub fn matches(self, verdict: Verdict) -> bool {
        matches!(
            (self, verdict),
            (Expectation::Pass, Verdict::Pass) | (Expectation::Fail, Verdict::Fail) | (Expectation::Any, _)
        )
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expectation::Pass => "pass",
            Expectation::Fail => "fail",
            Expectation::Any => "any",
        })
    }
}

/// A semantic problem in a scenario, naming the field (`nemesis[0].target`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub field: String,
    pub message: String,
}

impl Scenario {
    pub fn server_names(&self) -> Vec<String> {
        (1..=self.cluster.servers).map(|i| format!("s{i}")).collect()
    }

    pub fn client_names(&self) -> Vec<String> {
        (1..=self.clients.count).map(|i| format!("c{i}")).collect()
    }

    /// The expectation for `property`: the scenario's, else the property's default
    /// ([`Expectation::by_default`]).
    pub fn expectation(&self, property: Property) -> Expectation {
        self.expect.get(&property).copied().unwrap_or_else(|| Expectation::by_default(property))
    }

    /// Checks what the types cannot: ranges, names, limits, and every fault of `[[nemesis]]`
    /// and `[chaos]` (see `crate::nemesis::plan`).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.validate_for(Workload::Builtin)
    }

    /// [`Scenario::validate`] for a run whose clients are the user's code (the Testbed): no
    /// `[lock]` or `[kv]` (the code is the workload), `[resource]` optional (fenced by default).
    pub fn validate_for_user_code(&self) -> Result<(), ScenarioError> {
        self.validate_for(Workload::UserCode)
    }

    fn validate_for(&self, workload: Workload) -> Result<(), ScenarioError> {
        /// Longest scenario name: a folder name well under every file system's 255 bytes, with
        /// room for the seed folders and files below it.
        const NAME_MAX: usize = 100;
        // The name is a folder of every output (`<out>/<name>/seed-N`): a file-system name.
        let name_ok = (1..=NAME_MAX).contains(&self.name.len())
            && self.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c));
        check(name_ok, "name", || {
            let shown: String = self.name.chars().take(40).collect();
            let more = if self.name.chars().count() > 40 {
                format!("… ({} characters)", self.name.chars().count())
            } else {
                String::new()
            };
            format!("\"{shown}{more}\" must be 1 to {NAME_MAX} letters, digits, '-' and '_'")
        })?;
        check(!self.duration.0.is_zero() && self.duration.0 <= DURATION_MAX, "duration", || {
            format!("{} must be above 0 and at most {}", self.duration, Dur(DURATION_MAX))
        })?;
        check((1..=SERVERS_MAX).contains(&self.cluster.servers), "cluster.servers", || {
            format!("{} must be between 1 and {SERVERS_MAX}", self.cluster.servers)
        })?;
        check((1..=CLIENTS_MAX).contains(&self.clients.count), "clients.count", || {
            format!("{} must be between 1 and {CLIENTS_MAX}", self.clients.count)
        })?;
        match (workload, &self.lock, &self.kv) {
            (Workload::UserCode, Some(_), _) => {
                return Err(missing("lock", "the clients run your code: a Testbed scenario has no [lock] workload"));
            }
            (Workload::UserCode, None, Some(_)) => {
                return Err(missing("kv", "the clients run your code: a Testbed scenario has no [kv] workload"));
            }
            (Workload::UserCode, None, None) => {}
            (Workload::Builtin, _, _) => self.validate_workload()?,
        }
        self.validate_cluster_kind(workload)?;
        if let Some(interval) = self.cluster.etcd.lease_checkpoint_interval {
            check(self.cluster.etcd.lease_checkpoint, "cluster.etcd.lease_checkpoint_interval", || {
                "applies only with cluster.etcd.lease_checkpoint = true".to_string()
            })?;
            check(
                (Duration::from_secs(1)..=DURATION_MAX).contains(&interval.0),
                "cluster.etcd.lease_checkpoint_interval",
                || format!("{interval} must be between 1s and {}s", DURATION_MAX.as_secs()),
            )?;
        }
        if let Some(cost) = self.cluster.watch_event_cost {
            check(cost.0 <= WATCH_EVENT_COST_MAX, "cluster.watch_event_cost", || {
                format!("{cost} must be at most {}", Dur(WATCH_EVENT_COST_MAX))
            })?;
        }
        self.validate_raft_timing()?;
        if let Some(observers) = &self.observers {
            check(self.lock.is_some(), "observers", || "observers watch the lock's keys: they need [lock]".into())?;
            check((1..=OBSERVERS_MAX).contains(&observers.count), "observers.count", || {
                format!("{} must be between 1 and {OBSERVERS_MAX}", observers.count)
            })?;
        }
        check((1..=WRITES_PER_HOLD_MAX).contains(&self.clients.writes_per_hold), "clients.writes_per_hold", || {
            format!("{} must be between 1 and {WRITES_PER_HOLD_MAX}", self.clients.writes_per_hold)
        })?;
        check(!self.clients.hold.0.is_zero(), "clients.hold", || "must be above 0".to_string())?;
        for (property, expectation) in self.expect.iter() {
            check(
                !property.is_informational() || *expectation != Expectation::Fail,
                &format!("expect.{property}"),
                || format!("{property} is informational and never fails; it cannot be expected to {expectation}"),
            )?;
        }
        let nodes: Vec<String> = self.server_names().into_iter().chain(self.client_names()).collect();
        for (i, clock) in self.clock.iter().enumerate() {
            check(nodes.contains(&clock.node), &format!("clock[{i}].node"), || {
                format!("unknown node {:?} ({})", clock.node, self.node_names_hint())
            })?;
            check(self.clock[..i].iter().all(|c| c.node != clock.node), &format!("clock[{i}].node"), || {
                format!("{:?} already has a clock", clock.node)
            })?;
            check(
                clock.offset.ns.unsigned_abs() <= DURATION_MAX.as_nanos() as u64,
                &format!("clock[{i}].offset"),
                || format!("{} is beyond ±{}", clock.offset, Dur(DURATION_MAX)),
            )?;
            check(rate_in_bounds(clock.rate), &format!("clock[{i}].rate"), || {
                format!("{} must be between {RATE_MIN} and {RATE_MAX}", clock.rate)
            })?;
        }
        crate::nemesis::plan::validate(self)
    }

    /// `cluster.heartbeat_interval` and `cluster.election_timeout` as etcd checks them, and a
    /// heartbeat that can come back before the next one goes out on the run's network.
    fn validate_raft_timing(&self) -> Result<(), ScenarioError> {
        let model = self.time_model()?;
        let cluster = &self.cluster;
        match (cluster.heartbeat_interval, cluster.election_timeout) {
            (Some(heartbeat), Some(election)) => {
                check(heartbeat.0 >= Duration::from_millis(1), "cluster.heartbeat_interval", || {
                    format!("{heartbeat} must be at least 1ms")
                })?;
                check(election.0 >= heartbeat.0 * 5, "cluster.election_timeout", || {
                    format!(
                        "{election} must be at least 5 times cluster.heartbeat_interval ({heartbeat}), as etcd requires"
                    )
                })?;
                check(election.0 < ELECTION_TIMEOUT_MAX, "cluster.election_timeout", || {
                    format!("{election} must be under {} (etcd's limit)", Dur(ELECTION_TIMEOUT_MAX))
                })?;
            }
            (None, None) => {}
            (given, _) => {
                let (field, other) = match given {
                    Some(_) => ("cluster.heartbeat_interval", "cluster.election_timeout"),
                    None => ("cluster.election_timeout", "cluster.heartbeat_interval"),
                };
                return Err(ScenarioError {
                    field: field.into(),
                    message: format!("give {other} with it (both, or neither)"),
                });
            }
        }
        // openraft gives a heartbeat one interval to come back (its heartbeat worker's timeout):
        // past that, no heartbeat is ever acknowledged and the leader's lease lapses, so every
        // write is refused. etcd's heartbeats are not timed out that way; its tuning guide asks
        // for a heartbeat about the round trip anyway.
        if let Some(model) = model.filter(|_| cluster.kind == ClusterKind::Raft) {
            let peer = model.network.peer.as_ref().unwrap_or(&model.network.latency);
            let round_trip = peer.at(0.9) * 2;
            let heartbeat = Duration::from_millis(cluster.raft_timing().heartbeat_ms);
            check(round_trip < heartbeat, "cluster.heartbeat_interval", || {
                format!(
                    "{} must be longer than the servers' round trip in the time model {} ({} at its p90): set \
                     cluster.heartbeat_interval and cluster.election_timeout (etcd's tuning guide: about the round trip, \
                     and 10 times it)",
                    Dur(heartbeat),
                    model.name,
                    Dur(round_trip)
                )
            })?;
        }
        Ok(())
    }

    /// An independent cluster runs Redlock and nothing else; Redlock runs on nothing else.
    fn validate_cluster_kind(&self, workload: Workload) -> Result<(), ScenarioError> {
        let redlock = self.lock.as_ref().is_some_and(|lock| lock.recipe == Recipe::Redlock);
        if self.cluster.kind != ClusterKind::Independent {
            return check(!redlock, "lock.recipe", || {
                "\"redlock\" runs on independent Redis servers: add `kind = \"independent\"` to [cluster]".into()
            });
        }
        let field = "cluster.kind";
        check(workload == Workload::Builtin, field, || {
            "user code talks to etcd or ZooKeeper: the Testbed has no Redis API; use a raft cluster".into()
        })?;
        check(redlock, field, || {
            "independent Redis servers run only the lock workload with recipe = \"redlock\"".into()
        })?;
        check(self.observers.is_none(), "observers", || "observers watch etcd keys: Redis has no watches here".into())?;
        check(self.cluster.etcd == EtcdSpec::default(), "cluster.etcd", || {
            "applies to etcd servers, not to independent Redis servers".into()
        })?;
        check(self.cluster.watch_event_cost.is_none(), "cluster.watch_event_cost", || {
            "applies to etcd servers, not to independent Redis servers".into()
        })?;
        check(self.bugs == Bugs::default(), "bugs", || {
            "the bug switches are in the etcd and ZooKeeper services, not in the Redis servers".into()
        })?;
        for (i, fault) in self.nemesis.iter().enumerate() {
            let at = |name: &str| format!("nemesis[{i}].{name}");
            let aimed = fault.target.as_deref();
            check(!matches!(aimed, Some("leader" | "follower")), &at("target"), || {
                "independent servers have no leader: name a server (s1) or write \"server\"".into()
            })?;
            check(fault.kind != FaultKindSpec::DropReplies, &at("kind"), || {
                "drop-replies drops etcd and ZooKeeper replies; cut a link (partition one-way) instead".into()
            })?;
        }
        if let Some(chaos) = &self.chaos {
            check(!chaos.kinds.contains(&FaultKindSpec::DropReplies), "chaos.kinds", || {
                "drop-replies drops etcd and ZooKeeper replies; it does not apply to independent servers".into()
            })?;
        }
        Ok(())
    }

    /// The built-in workload: `[lock]` with `[resource]`, or `[kv]`.
    fn validate_workload(&self) -> Result<(), ScenarioError> {
        match (&self.lock, &self.resource, &self.kv) {
            (Some(lock), Some(_), None) => self.validate_lock(lock),
            (Some(_), None, None) => Err(missing("resource", "the lock workload writes to a [resource]")),
            (None, _, Some(kv)) => self.validate_kv(kv),
            (Some(_), _, Some(_)) => Err(missing("kv", "a scenario has one workload: [lock] or [kv], not both")),
            (None, _, None) => Err(missing("lock", "a scenario needs a workload: [lock] (with [resource]) or [kv]")),
        }
    }

    fn validate_lock(&self, lock: &LockSpec) -> Result<(), ScenarioError> {
        check(lock.ttl.0 >= TTL_MIN, "lock.ttl", || format!("{} is below the minimum TTL {}", lock.ttl, Dur(TTL_MIN)))?;
        if lock.recipe == Recipe::Redlock {
            return self.validate_redlock(lock);
        }
        if let Some(deadline) = lock.client_deadline {
            check(deadline.0 >= CLIENT_DEADLINE_MIN && deadline.0 <= DURATION_MAX, "lock.client_deadline", || {
                format!(
                    "{deadline} must be between {} and {}: the client sends a keepalive every third of its deadline, and below {} that is a keepalive loop no client runs (etcd's clientv3 looks at its keepalives every 500 ms, sendKeepAliveLoop in client/v3/lease.go), at a cost that grows with the run",
                    Dur(CLIENT_DEADLINE_MIN),
                    Dur(DURATION_MAX),
                    Dur(CLIENT_DEADLINE_MIN)
                )
            })?;
        }
        check(
            lock.client_deadline.is_some() || lock.client_deadline_clock.is_none(),
            "lock.client_deadline_clock",
            || "applies only with lock.client_deadline".to_string(),
        )?;
        check(!lock.name.is_empty() && !lock.name.ends_with('/'), "lock.name", || {
            format!("{:?} must be non-empty and must not end with '/'", lock.name)
        })?;
        let semaphore = lock.recipe == Recipe::EtcdSemaphore;
        check(lock.permits >= 1 && (semaphore || lock.permits == 1), "lock.permits", || match semaphore {
            true => format!("{} must be at least 1", lock.permits),
            false => format!("{} permits: only the etcd-semaphore recipe has more than one", lock.permits),
        })?;
        check(lock.nested <= 8, "lock.nested", || format!("{} must be at most 8", lock.nested))?;
        check(lock.backoff.is_none() || lock.recipe == Recipe::EtcdCas, "lock.backoff", || {
            "only the etcd-cas recipe retries after a wakeup: a queue recipe wakes one waiter per release".into()
        })?;
        if lock.recipe.is_zookeeper() {
            let valid = lock.name != "/" && crate::zk::validate_path(&lock.name).is_ok();
            check(valid, "lock.name", || format!("{:?} must be a znode path such as \"/locks/resource\"", lock.name))?;
        }
        self.validate_entry_lifetime(lock)?;
        check(lock.keepalive == KeepAliveMode::Background || !lock.recipe.is_zookeeper(), "lock.keepalive", || {
            "\"between-holds\" is for etcd recipes: a ZooKeeper client library pings its session from a thread of its own".into()
        })?;
        check(
            lock.connection_state_error_policy.is_none() || lock.recipe.is_zookeeper(),
            "lock.connection_state_error_policy",
            || "applies only to the ZooKeeper recipes (Curator's connection states)".into(),
        )?;
        check(lock.client_deadline.is_none() || !lock.recipe.is_zookeeper(), "lock.client_deadline", || {
            "does not apply to the ZooKeeper recipes: a ZooKeeper client gives its connection up after 2/3 of the session timeout unheard and learns an expiry from the ensemble; for a client-side end use connection_state_error_policy (Curator)".into()
        })
    }

    /// Redlock has no session, no queue and no token: the fields about those do not apply.
    fn validate_redlock(&self, lock: &LockSpec) -> Result<(), ScenarioError> {
        check(lock.client_deadline.is_none(), "lock.client_deadline", || {
            "Redlock's deadline is its validity time (TTL - elapsed - drift); `client_deadline_clock` says which clock measures it".into()
        })?;
        let unused = [
            ("lock.permits", lock.permits != 1),
            ("lock.nested", lock.nested != 0),
            ("lock.reentrant", !lock.reentrant),
            ("lock.backoff", lock.backoff.is_some()),
            ("lock.keepalive", lock.keepalive != KeepAliveMode::Background),
            ("lock.lease", !lock.lease),
            ("lock.ephemeral", !lock.ephemeral),
        ];
        for (field, set) in unused {
            check(!set, field, || "does not apply to redlock (no session, no queue, one holder)".into())?;
        }
        check(!lock.name.is_empty(), "lock.name", || "must be non-empty: it is the Redis key".into())?;
        let floor_ms = crate::recipe::redlock::validity_floor_ms(lock.ttl.ms(), self.cluster.servers);
        check(self.clients.hold.0 < Duration::from_millis(floor_ms), "clients.hold", || {
            format!(
                "{} must be shorter than the lock's validity time, at least {floor_ms} ms here (ttl {} minus {} servers x 50 ms minus the 1% + 2 ms drift allowance): Redlock has no keepalive, and a holder whose work outlasts its validity writes after its keys expired",
                self.clients.hold, lock.ttl, self.cluster.servers
            )
        })?;
        let unfenced = self.resource.as_ref().is_some_and(|r| r.mode == ResourceMode::Unfenced);
        check(unfenced, "resource.mode", || {
            "Redlock gives no fencing token (Kleppmann, \"How to do distributed locking\", 2016): a redlock scenario's resource is \"unfenced\"".into()
        })
    }

    /// `lease = false` needs a recipe that puts its own key; `ephemeral = false` a ZooKeeper one.
    fn validate_entry_lifetime(&self, lock: &LockSpec) -> Result<(), ScenarioError> {
        let recipe = serde_json::to_string(&lock.recipe).unwrap_or_default();
        if !lock.lease {
            check(!lock.recipe.is_zookeeper(), "lock.lease", || {
                format!("{recipe} has no lease on its lock node: write `ephemeral = false` for a persistent znode")
            })?;
            check(lock.recipe.puts_own_key(), "lock.lease", || {
                format!(
                    "{recipe} is a service of the server, which attaches the key to the lease itself; \
                     false needs etcd-mutex, etcd-cas or etcd-semaphore"
                )
            })?;
        }
        check(lock.ephemeral || lock.recipe.is_zookeeper(), "lock.ephemeral", || {
            format!("{recipe} is an etcd recipe: write `lease = false` for a key put without a lease")
        })
    }

    fn validate_kv(&self, kv: &KvSpec) -> Result<(), ScenarioError> {
        check((1..=KEYS_MAX).contains(&kv.keys), "kv.keys", || {
            format!("{} must be between 1 and {KEYS_MAX}", kv.keys)
        })?;
        check(kv.interval.0 >= Duration::from_millis(1), "kv.interval", || "must be at least 1ms".into())?;
        let shares =
            [("kv.reads", kv.reads), ("kv.cas", kv.cas), ("kv.deletes", kv.deletes), ("kv.updates", kv.updates)];
        for (field, share) in shares {
            check(share.is_finite() && (0.0..=1.0).contains(&share), field, || {
                format!("{share} must be between 0 and 1")
            })?;
        }
        let last = if kv.updates > 0.0 { "kv.updates" } else { "kv.deletes" };
        check(kv.reads + kv.cas + kv.deletes + kv.updates <= 1.0, last, || {
            "reads + cas + deletes + updates must be at most 1".into()
        })?;
        check(kv.work.0 <= DURATION_MAX, "kv.work", || format!("{} must be at most {}", kv.work, Dur(DURATION_MAX)))?;
        check(kv.watchers < self.clients.count, "kv.watchers", || {
            format!("{} leaves no writer among {} clients", kv.watchers, self.clients.count)
        })?;
        check(kv.readers + kv.watchers < self.clients.count, "kv.readers", || {
            format!(
                "{} readers and {} watchers leave no writer among {} clients",
                kv.readers, kv.watchers, self.clients.count
            )
        })?;
        check(kv.watch_start.is_first() || kv.watchers > 0, "kv.watch_start", || {
            "there are no watchers (kv.watchers) to start".into()
        })?;
        match kv.api {
            KvApi::Etcd => check(kv.zk_reads.is_none(), "kv.zk_reads", || {
                "only for api = \"zookeeper\" (etcd's reads are set by kv.etcd_reads)".into()
            }),
            KvApi::Zookeeper => {
                check(kv.etcd_reads.is_none(), "kv.etcd_reads", || {
                    "only for api = \"etcd\" (ZooKeeper's reads are set by kv.zk_reads)".into()
                })?;
                self.validate_zk_kv(kv)
            }
        }
    }

    /// What the ZooKeeper key-value workload leaves out, each with its reason.
    fn validate_zk_kv(&self, kv: &KvSpec) -> Result<(), ScenarioError> {
        check(kv.deletes == 0.0, "kv.deletes", || {
            "must be 0 with api = \"zookeeper\": a znode created again restarts its version at 0, so a setData with an old version could overwrite a value it never read".into()
        })?;
        check(kv.watchers == 0, "kv.watchers", || {
            "must be 0 with api = \"zookeeper\" (its watchers are etcd watch streams)".into()
        })?;
        check(kv.compact_every.0.is_zero(), "kv.compact_every", || {
            "must be 0s with api = \"zookeeper\" (ZooKeeper has no compaction to ask for)".into()
        })
    }

    /// The time model this scenario runs on: its `[timing]`, or without one the calibrated
    /// profile of the service its clients talk to (`auto_profile`: a scenario should take as
    /// long as the real service it stands for; docs/time.md). A `[timing]` that names no
    /// profile and does not give every table is over that profile too (`network_preset =
    /// "wan"` alone: the service's costs on a WAN). `None`: `profile = "none"`.
    pub fn time_model(&self) -> Result<Option<crate::timing::TimeModel>, ScenarioError> {
        let auto = || crate::timing::auto_profile(self.uses_zookeeper()).to_string();
        match &self.timing {
            Some(spec) if spec.profile.is_none() && (spec.server.is_none() || spec.resource.is_none()) => {
                TimingSpec { profile: Some(auto()), ..spec.clone() }.model()
            }
            Some(spec) => spec.model(),
            None => TimingSpec::named(&auto()).model(),
        }
    }

    /// Whether this scenario runs with a time model (see [`Scenario::time_model`]).
    pub fn is_timed(&self) -> bool {
        !self.timing.as_ref().is_some_and(TimingSpec::is_off)
    }

    /// Whether the clients talk to the ZooKeeper view (a ZooKeeper recipe, or `[kv] api =
    /// "zookeeper"`) rather than to etcd's API.
    pub fn uses_zookeeper(&self) -> bool {
        self.lock.as_ref().is_some_and(|lock| lock.recipe.is_zookeeper())
            || self.kv.as_ref().is_some_and(|kv| kv.api == KvApi::Zookeeper)
    }

    /// The lock workload's settings (validated: present when `kv` is absent).
    pub fn lock_spec(&self) -> Option<(&LockSpec, &ResourceSpec)> {
        self.lock.as_ref().zip(self.resource.as_ref())
    }

    /// "servers are s1..s3, clients c1..c2", for error messages.
    pub fn node_names_hint(&self) -> String {
        format!("servers are s1..s{}, clients c1..c{}", self.cluster.servers, self.clients.count)
    }
}

/// Who runs on the client nodes, for validation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    Builtin,
    UserCode,
}

fn missing(field: &str, message: &str) -> ScenarioError {
    ScenarioError { field: field.to_string(), message: message.to_string() }
}

/// Most keys of the key-value workload.
pub const KEYS_MAX: usize = 1000;

/// Slowest and fastest clock rates, in local seconds per true second.
pub const RATE_MIN: f64 = 0.1;
pub const RATE_MAX: f64 = 10.0;
/// Most writes one holder makes per hold.
pub const WRITES_PER_HOLD_MAX: u32 = 1000;

pub fn rate_in_bounds(rate: f64) -> bool {
    rate.is_finite() && (RATE_MIN..=RATE_MAX).contains(&rate)
}

/// `Err` naming `field` when `ok` is false.
pub fn check(ok: bool, field: &str, message: impl FnOnce() -> String) -> Result<(), ScenarioError> {
    if ok { Ok(()) } else { Err(ScenarioError { field: field.to_string(), message: message() }) }
}

/// A duration written with a unit in scenario files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn zero() -> Dur {
        Dur(Duration::ZERO)
    }

    pub fn ms(self) -> u64 {
        self.0.as_millis() as u64
    }

    /// Parses `"250ms"`, `"5s"`, `"1.5s"`, `"2m"`, `"100us"`, `"10ns"`.
    pub fn parse(text: &str) -> Result<Dur, String> {
        let text = text.trim();
        let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let unit_ns: f64 = match unit.trim() {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => {
                return Err(format!("invalid duration {text:?}: expected a number followed by ns, us, ms, s, m or h"));
            }
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("invalid duration {text:?}: expected a number followed by ns, us, ms, s, m or h"))?;
        let ns = value * unit_ns;
        if !ns.is_finite() || ns < 0.0 || ns > 1e18 {
            return Err(format!("invalid duration {text:?}: out of range"));
        }
        Ok(Dur(Duration::from_nanos(ns.round() as u64)))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        if ns == 0 {
            f.write_str("0s")
        } else if ns % 1_000_000_000 == 0 {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns % 1_000_000 == 0 {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns % 1000 == 0 {
            write!(f, "{}us", ns / 1000)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Dur, D::Error> {
        let text = String::deserialize(deserializer)?;
        Dur::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field names serde knows for a struct type: a deserializer that only answers
    /// `deserialize_struct`, where derive(Deserialize) names every field it accepts.
    fn fields_of<'de, T: Deserialize<'de>>() -> Vec<&'static str> {
        struct Names(Vec<&'static str>);
        #[derive(Debug)]
        struct Done;
        impl std::fmt::Display for Done {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("done")
            }
        }
        impl std::error::Error for Done {}
        impl serde::de::Error for Done {
            fn custom<M: std::fmt::Display>(_: M) -> Self {
                Done
            }
        }
        impl<'de> serde::Deserializer<'de> for &mut Names {
            type Error = Done;
            fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Done> {
                Err(Done)
            }
            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Done> {
                self.0.extend_from_slice(fields);
                Err(Done)
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
                unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
            }
        }
        let mut names = Names(Vec::new());
        let _ = T::deserialize(&mut names);
        assert!(!names.0.is_empty(), "{} is read as a struct", std::any::type_name::<T>());
        names.0
    }

    #[test]
    fn the_scenario_file_page_names_every_field_a_scenario_file_may_hold() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenario-files.md"))
            .expect("docs/scenario-files.md");
        let tables: [(&str, Vec<&'static str>); 14] = [
            ("the top level", fields_of::<Scenario>()),
            ("[cluster]", fields_of::<Cluster>()),
            ("[cluster.etcd]", fields_of::<EtcdSpec>()),
            ("[lock]", fields_of::<LockSpec>()),
            ("[resource]", fields_of::<ResourceSpec>()),
            ("[clients]", fields_of::<Clients>()),
            ("[observers]", fields_of::<ObserverSpec>()),
            ("[kv]", fields_of::<KvSpec>()),
            ("[timing]", fields_of::<TimingSpec>()),
            ("[timing.network]", fields_of::<crate::timing::NetworkTimes>()),
            ("[timing.server]", fields_of::<crate::timing::ServerTimes>()),
            ("[[clock]]", fields_of::<ClockSpec>()),
            ("[[nemesis]]", fields_of::<ScheduledFault>()),
            ("[chaos]", fields_of::<Chaos>()),
        ];
        let mut missing = Vec::new();
        for (table, fields) in &tables {
            for field in fields {
                // Written as a key (`name =`, commented out or not), as a table (`[name]`,
                // `[[name]]`, `[parent.name]`), or quoted in the prose.
                let named = [format!("{field} ="), format!("`{field}`"), format!("[{field}]"), format!(".{field}]")]
                    .iter()
                    .any(|form| page.contains(form.as_str()));
                if !named {
                    missing.push(format!("{table} {field}"));
                }
            }
        }
        let bugs = fields_of::<Bugs>();
        missing.extend(bugs.iter().filter(|b| !page.contains(&format!("`{b}`"))).map(|b| format!("[bugs] {b}")));
        assert!(missing.is_empty(), "docs/scenario-files.md does not name: {}", missing.join(", "));
    }

    #[test]
    fn durations_parse_with_units_and_print_back() {
        for (text, ms) in [("500ms", 500), ("5s", 5000), ("1.5s", 1500), ("2m", 120_000), ("0s", 0)] {
            let dur = Dur::parse(text).unwrap();
            assert_eq!(dur.ms(), ms, "{text}");
            assert_eq!(Dur::parse(&dur.to_string()).unwrap(), dur);
        }
    }

    fn kv_scenario(kv: &str) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "name = \"t\"\nsummary = \"t\"\nduration = \"1s\"\n[cluster]\nservers = 3\n[clients]\ncount = 2\n[kv]\nkeys = 1\ninterval = \"50ms\"\n{kv}"
        );
        let scenario: Scenario = toml::from_str(&text).expect("the table parses");
        scenario.validate().map(|()| scenario)
    }

    #[test]
    fn the_zookeeper_kv_workload_reads_locally_unless_told_to_sync() {
        let local = kv_scenario("api = \"zookeeper\"").unwrap();
        assert_eq!(local.kv.as_ref().unwrap().zk_reads(), ZkReads::Local);
        let synced = kv_scenario("api = \"zookeeper\"\nzk_reads = \"sync\"\nupdates = 0.5\nwork = \"1s\"").unwrap();
        assert_eq!(synced.kv.as_ref().unwrap().zk_reads(), ZkReads::Sync);
        assert_eq!(kv_scenario("").unwrap().kv.unwrap().api, KvApi::Etcd, "etcd by default");
    }

    #[test]
    fn the_etcd_kv_workload_reads_linearizably_unless_told_serializable() {
        assert_eq!(kv_scenario("").unwrap().kv.unwrap().etcd_reads(), EtcdReads::Linearizable);
        let serializable = kv_scenario("etcd_reads = \"serializable\"").unwrap();
        assert_eq!(serializable.kv.unwrap().etcd_reads(), EtcdReads::Serializable);
    }

    #[test]
    fn kv_knobs_that_do_not_fit_their_api_are_refused_with_the_field_named() {
        for (kv, field, words) in [
            ("zk_reads = \"sync\"", "kv.zk_reads", "only for api = \"zookeeper\""),
            ("api = \"zookeeper\"\netcd_reads = \"serializable\"", "kv.etcd_reads", "only for api = \"etcd\""),
            ("api = \"zookeeper\"\ndeletes = 0.1", "kv.deletes", "restarts its version"),
            ("api = \"zookeeper\"\ncompact_every = \"1s\"", "kv.compact_every", "no compaction"),
            ("reads = 0.5\nupdates = 0.6", "kv.updates", "at most 1"),
            ("updates = 1.5", "kv.updates", "between 0 and 1"),
            ("readers = 2", "kv.readers", "leave no writer"),
        ] {
            let error = kv_scenario(kv).expect_err(kv);
            assert_eq!(error.field, field, "{kv}");
            assert!(error.message.contains(words), "{kv}: {}", error.message);
        }
        let watchers = kv_scenario("api = \"zookeeper\"\nwatchers = 1").expect_err("zookeeper watchers");
        assert_eq!(watchers.field, "kv.watchers");
    }

    #[test]
    fn a_watch_start_needs_a_watcher() {
        let error = kv_scenario("watch_start = \"now\"").expect_err("no watchers");
        assert_eq!(error.field, "kv.watch_start");
        let now = kv_scenario("watch_start = \"now\"\nwatchers = 1").unwrap();
        assert_eq!(now.kv.unwrap().watch_start, WatchStart::Now);
    }

    fn lock_scenario(extra: &str) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "name = \"t\"\nsummary = \"t\"\nduration = \"1s\"\n[cluster]\nservers = 3\n{extra}\n[clients]\ncount = 2\n\
             [lock]\nrecipe = \"etcd-mutex\"\nname = \"/l\"\nttl = \"2s\"\n[resource]\nmode = \"fenced\"\n"
        );
        let scenario: Scenario = toml::from_str(&text).expect("the table parses");
        scenario.validate().map(|()| scenario)
    }

    #[test]
    fn raft_timing_is_given_whole_checked_as_etcd_checks_it_and_fits_the_network() {
        let timing = |extra: &str| lock_scenario(extra).map(|s| s.cluster.raft_timing());
        assert_eq!(timing("").unwrap(), RaftTiming::default());
        let tuned = timing("heartbeat_interval = \"100ms\"\nelection_timeout = \"1s\"").unwrap();
        assert_eq!(
            tuned,
            RaftTiming { heartbeat_ms: 100, election_timeout_min_ms: 1000, election_timeout_max_ms: 2000 }
        );
        let alone = timing("heartbeat_interval = \"100ms\"").unwrap_err();
        assert_eq!(alone.field, "cluster.heartbeat_interval");
        assert!(alone.message.contains("cluster.election_timeout"), "{}", alone.message);
        let short = timing("heartbeat_interval = \"100ms\"\nelection_timeout = \"400ms\"").unwrap_err();
        assert_eq!(short.field, "cluster.election_timeout");
        assert!(short.message.contains("5 times"), "{}", short.message);
        let long = timing("heartbeat_interval = \"1s\"\nelection_timeout = \"50s\"").unwrap_err();
        assert!(long.message.contains("under 50s"), "{}", long.message);
        // On a WAN the simulator's 50 ms heartbeat cannot come back before the next one goes out.
        let wan = "[timing]\nnetwork_preset = \"wan\"";
        let refused = timing(wan).unwrap_err();
        assert_eq!(refused.field, "cluster.heartbeat_interval");
        assert!(refused.message.contains("round trip"), "{}", refused.message);
        let tuned_wan = format!("heartbeat_interval = \"100ms\"\nelection_timeout = \"1s\"\n{wan}");
        assert_eq!(timing(&tuned_wan).unwrap(), tuned);
        let model = lock_scenario(&tuned_wan).unwrap().time_model().unwrap().unwrap();
        assert_eq!(model.name, "etcd-3.4-loopback on the wan network", "a preset alone is over the service's profile");
    }

    #[test]
    fn a_back_off_is_only_for_the_recipe_that_retries() {
        let with = |recipe: &str| {
            let text = format!(
                "name = \"t\"\nsummary = \"t\"\nduration = \"1s\"\n[cluster]\nservers = 3\n[clients]\ncount = 2\n\
                 [resource]\nmode = \"fenced\"\n[lock]\nrecipe = \"{recipe}\"\nname = \"/l\"\nttl = \"2s\"\nbackoff = \"100ms\"\n"
            );
            toml::from_str::<Scenario>(&text).expect("the table parses").validate()
        };
        assert!(with("etcd-cas").is_ok());
        for recipe in ["etcd-mutex", "etcd-semaphore", "etcd-lock-api"] {
            let error = with(recipe).expect_err(recipe);
            assert_eq!(error.field, "lock.backoff", "{recipe}");
        }
    }

    #[test]
    fn a_scenario_runs_on_its_services_profile_unless_it_says_otherwise() {
        let model = |extra: &str| lock_scenario(extra).unwrap().time_model().unwrap().map(|m| m.name);
        assert_eq!(model("").as_deref(), Some("etcd-3.4-loopback"));
        assert_eq!(
            model("[timing]\nprofile = \"zookeeper-3.8-loopback\"\n").as_deref(),
            Some("zookeeper-3.8-loopback")
        );
        assert_eq!(model("[timing]\nprofile = \"none\"\n"), None);
        let tables = lock_scenario("[timing]\nprofile = \"none\"\n[timing.resource]\nwrite = \"1ms\"\n").unwrap_err();
        assert_eq!(tables.field, "timing.resource");
        let unknown = lock_scenario("[timing]\nprofile = \"lan\"\n").unwrap_err();
        assert_eq!(unknown.field, "timing.profile");
        assert!(unknown.message.contains("none"), "{}", unknown.message);
    }

    #[test]
    fn slow_disk_and_slow_cpu_need_a_time_model_and_a_server() {
        let timed = "[timing]\nprofile = \"etcd-3.4-loopback\"\n";
        let disk = "[[nemesis]]\nat = \"0s\"\nfor = \"1s\"\nkind = \"slow-disk\"\n";
        let cpu = "[[nemesis]]\nat = \"0s\"\nfor = \"1s\"\nkind = \"slow-cpu\"\n";
        assert!(lock_scenario(&format!("{timed}{disk}target = \"leader\"\ndelay = \"2s\"")).is_ok());
        assert!(lock_scenario(&format!("{timed}{cpu}target = \"s2\"\nrate = 20.0")).is_ok());
        assert!(lock_scenario(&format!("{disk}target = \"leader\"\ndelay = \"2s\"")).is_ok(), "timed by default");
        let none = "[timing]\nprofile = \"none\"\n";
        let untimed = lock_scenario(&format!("{none}{disk}target = \"leader\"\ndelay = \"2s\"")).unwrap_err();
        assert_eq!(untimed.field, "nemesis[0].kind");
        assert!(untimed.message.contains("profile = \"none\""), "{}", untimed.message);
        let client = lock_scenario(&format!("{timed}{disk}target = \"c1\"\ndelay = \"2s\"")).unwrap_err();
        assert_eq!(client.field, "nemesis[0].target");
        let forever = lock_scenario(&format!("{timed}{disk}target = \"leader\"\ndelay = \"11s\"")).unwrap_err();
        assert_eq!(forever.field, "nemesis[0].delay");
        let no_delay = lock_scenario(&format!("{timed}{disk}target = \"leader\"")).unwrap_err();
        assert_eq!(no_delay.field, "nemesis[0].delay");
        let zero = lock_scenario(&format!("{timed}{cpu}target = \"leader\"\nrate = 0.5")).unwrap_err();
        assert_eq!(zero.field, "nemesis[0].rate");
        let wrong = lock_scenario(&format!("{timed}{cpu}target = \"leader\"\nrate = 2.0\ndelay = \"1s\"")).unwrap_err();
        assert_eq!(wrong.field, "nemesis[0].delay", "a field the kind does not take");
    }

    #[test]
    fn observers_and_a_watch_event_cost_are_checked_with_the_field_named() {
        let storm = lock_scenario("watch_event_cost = \"1ms\"\n[observers]\ncount = 2000").unwrap();
        assert_eq!(storm.observers, Some(ObserverSpec { count: 2000, proxy: false }));
        assert_eq!(storm.cluster.watch_event_cost, Some(Dur(Duration::from_millis(1))));
        for (extra, field, words) in [
            ("watch_event_cost = \"1s\"", "cluster.watch_event_cost", "at most 100ms"),
            ("[observers]\ncount = 0", "observers.count", "between 1 and 2000"),
            ("[observers]\ncount = 2001", "observers.count", "between 1 and 2000"),
        ] {
            let error = lock_scenario(extra).expect_err(extra);
            assert_eq!(error.field, field, "{extra}");
            assert!(error.message.contains(words), "{extra}: {}", error.message);
        }
        let kv = "name = \"t\"\nsummary = \"t\"\nduration = \"1s\"\n[cluster]\nservers = 3\n[clients]\ncount = 2\n\
                  [kv]\nkeys = 1\ninterval = \"50ms\"\n[observers]\ncount = 5\n";
        let scenario: Scenario = toml::from_str(kv).expect("the table parses");
        assert_eq!(scenario.validate().unwrap_err().field, "observers", "observers need [lock]");
    }

    #[test]
    fn bad_durations_are_rejected_with_the_text() {
        for text in ["10", "10x", "s", "-1s", "1.2.3s", ""] {
            let error = Dur::parse(text).unwrap_err();
            assert!(error.contains(&format!("{text:?}")), "{error}");
        }
    }
}
