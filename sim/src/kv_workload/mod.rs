//! The key-value workload: writers put, read, delete, compare-and-swap and read-modify-write a
//! few keys at random; readers only read; watchers follow every change. Every operation is recorded with the store
//! revision it saw, so the linearizability, durability and watch checkers can judge the service.
//!
//! Writers use etcd's API ([`etcd`]) or ZooKeeper's ([`zookeeper`]); both are recorded as the
//! same put, get, delete and cas calls. Watchers use etcd's ([`watch`]).
//!
//! The writers' and readers' loops ([`run_writer`], [`run_reader`]) are written once for both
//! worlds of I/O: a [`KvConnection`] is the simulator's client here and a real cluster's client in
//! coordsim-real, so the operations a seed draws and what a writer learns from their outcomes
//! cannot drift apart between the two.

mod etcd;
mod watch;

pub use watch::relist_call;
mod zookeeper;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use madsim::rand::{Rng, RngCore};

use crate::client::Client;
use crate::client::zk::ZkClient;
use crate::clock::{Clock, LocalTime};
use crate::recorder::Recorder;
use crate::scenario::{EtcdReads, KvApi, KvSpec, ZkReads};

/// How long one operation may take before its outcome counts as unknown.
const OP_BUDGET: Duration = Duration::from_secs(1);
/// How long one watch long-poll waits on the server for changes.
const WATCH_POLL: Duration = Duration::from_millis(500);
/// Most attempts of one read-modify-write (each a read, the work and a compare-and-swap).
const UPDATE_ATTEMPTS_MAX: u32 = 100;
/// The keys' common prefix, which watchers watch.
pub const KEY_PREFIX: &str = "k";

/// One client's part of the key-value workload.
#[derive(Clone, Debug)]
pub struct KvPlan {
    pub name: String,
    /// The client's position (c1 is 0): a ZooKeeper client connects to server `index` mod N.
    pub index: usize,
    pub addr: SocketAddr,
    pub servers: Vec<(u64, SocketAddr)>,
    pub start: Instant,
    pub spec: KvSpec,
    pub role: KvRole,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvRole {
    Writer,
    /// The first writer also compacts the store now and then.
    WriterAndCompactor,
    /// Only reads.
    Reader,
    Watcher,
}

impl KvRole {
    /// The role of client `index` (c1 is 0) of `count`: the last `watchers` watch, the
    /// `readers` before them read, the first writer also compacts.
    pub fn of(index: usize, count: usize, spec: &KvSpec) -> KvRole {
        if index >= count - spec.watchers {
            KvRole::Watcher
        } else if index >= count - spec.watchers - spec.readers {
            KvRole::Reader
        } else if index == 0 {
            KvRole::WriterAndCompactor
        } else {
            KvRole::Writer
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Put,
    Get,
    Delete,
    Cas,
    Update,
}

impl Op {
    /// The operation a uniform `draw` in [0, 1) picks under the spec's shares, in the order
    /// reads, cas, deletes, updates; the rest are puts. The bounds are summed left to right, as
    /// before updates existed, so that a seed draws the same operations as it always did.
    fn pick(spec: &KvSpec, draw: f64) -> Op {
        let shares =
            [(Op::Get, spec.reads), (Op::Cas, spec.cas), (Op::Delete, spec.deletes), (Op::Update, spec.updates)];
        let mut bound = 0.0;
        for (op, share) in shares {
            bound += share;
            if draw < bound {
                return op;
            }
        }
        Op::Put
    }
}

/// What a client last learned of a key: its value (`None`: absent) and the version it had with
/// that value (etcd: its mod_revision, 0 when absent; ZooKeeper: the znode's version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub value: Option<String>,
    pub version: i64,
}

/// What a compare-and-swap requires of the key's current state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guard {
    /// The key does not exist.
    Absent,
    /// It holds this value (etcd's value compare).
    Value(String),
    /// It still has the version seen with `value` (etcd: mod_revision; ZooKeeper: version).
    Version { value: String, version: i64 },
}

impl Guard {
    /// The guard on what was seen of a key, as a read-modify-write writes back: by version.
    pub fn on_version(seen: &Seen) -> Guard {
        match &seen.value {
            None => Guard::Absent,
            Some(value) => Guard::Version { value: value.clone(), version: seen.version },
        }
    }

    /// The value the history records as expected (`None`: absent).
    pub fn expected(&self) -> Option<&str> {
        match self {
            Guard::Absent => None,
            Guard::Value(value) | Guard::Version { value, .. } => Some(value),
        }
    }
}

/// What a completed operation told the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The store revision (zxid) it saw or made.
    pub revision: i64,
    /// The key's state as the operation left or found it; `None` for a compare-and-swap that
    /// found the key changed (a conflict) and so learned nothing of its new state.
    pub seen: Option<Seen>,
}

impl Step {
    pub fn learned(revision: i64, seen: Seen) -> Step {
        Step { revision, seen: Some(seen) }
    }

    pub fn conflict(revision: i64) -> Step {
        Step { revision, seen: None }
    }
}

/// A writer's or reader's connection to the key-value store, in either world of I/O. Each
/// operation records its call and its outcome in the run's history (a write without an answer as
/// `info`: it may have happened) and returns what it taught, `None` when nothing was learned.
/// Times are the client's own local time.
#[allow(async_fn_in_trait)] // each world drives its clients on one thread: no `Send` bound is needed
pub trait KvConnection {
    /// The key `k<i>` (etcd) or the znode `/k<i>` (ZooKeeper).
    fn key(&self, i: usize) -> String;
    /// The guard of a plain compare-and-swap on the key as last seen (never seen: absent). etcd
    /// compares the value; ZooKeeper can only compare the version.
    fn last_seen_guard(&self, seen: Option<&Seen>) -> Guard;
    /// Whether the keys must be created before a put can change them (ZooKeeper's setData).
    fn creates_keys_first(&self) -> bool;
    /// Whether the store can be compacted (etcd).
    fn compacts(&self) -> bool;
    /// The client's local monotonic time.
    fn now(&self) -> LocalTime;
    /// Runs `draw` on the world's random numbers: the run's seeded RNG in the simulator, the
    /// OS's on a real cluster.
    fn random<T>(&self, draw: impl FnOnce(&mut dyn RngCore) -> T) -> T;
    /// Sleeps `duration` of the client's local time.
    async fn sleep(&self, duration: Duration);
    async fn put(&self, node: &str, key: &str, value: String) -> Option<Step>;
    async fn get(&self, node: &str, key: &str) -> Option<Step>;
    async fn delete(&self, node: &str, key: &str) -> Option<Step>;
    async fn cas(&self, node: &str, key: &str, guard: Guard, new: String) -> Option<Step>;
    /// Compacts the store at `revision`. Not an operation of the history: it changes no key,
    /// only what watches can replay.
    async fn compact(&self, revision: i64);
}

/// A writer's connection in the simulator: etcd's API, or a ZooKeeper client connected to one
/// server.
enum Api<'a> {
    Etcd { client: Client, reads: EtcdReads, recorder: &'a Recorder },
    Zookeeper { zk: ZkClient, reads: ZkReads, recorder: &'a Recorder },
}

impl Api<'_> {
    fn clock(&self) -> &Clock {
        match self {
            Api::Etcd { client, .. } => client.clock(),
            Api::Zookeeper { zk, .. } => zk.client().clock(),
        }
    }
}

impl KvConnection for Api<'_> {
    fn key(&self, i: usize) -> String {
        match self {
            Api::Etcd { .. } => format!("{KEY_PREFIX}{i}"),
            Api::Zookeeper { .. } => format!("/{KEY_PREFIX}{i}"),
        }
    }

    fn last_seen_guard(&self, seen: Option<&Seen>) -> Guard {
        match (self, seen) {
            (_, None) => Guard::Absent,
            (Api::Etcd { .. }, Some(seen)) => seen.value.clone().map_or(Guard::Absent, Guard::Value),
            (Api::Zookeeper { .. }, Some(seen)) => Guard::on_version(seen),
        }
    }

    fn creates_keys_first(&self) -> bool {
        matches!(self, Api::Zookeeper { .. })
    }

    fn compacts(&self) -> bool {
        matches!(self, Api::Etcd { .. })
    }

    fn now(&self) -> LocalTime {
        self.clock().now()
    }

    fn random<T>(&self, draw: impl FnOnce(&mut dyn RngCore) -> T) -> T {
        draw(&mut madsim::rand::thread_rng())
    }

    async fn sleep(&self, duration: Duration) {
        self.clock().sleep(duration).await;
    }

    async fn put(&self, node: &str, key: &str, value: String) -> Option<Step> {
        match self {
            Api::Etcd { client, recorder, .. } => etcd::put(client, recorder, node, key, value).await,
            Api::Zookeeper { zk, recorder, .. } => zookeeper::put(zk, recorder, node, key, value).await,
        }
    }

    async fn get(&self, node: &str, key: &str) -> Option<Step> {
        match self {
            Api::Etcd { client, reads, recorder } => etcd::get(client, *reads, recorder, node, key).await,
            Api::Zookeeper { zk, reads, recorder } => zookeeper::get(zk, *reads, recorder, node, key).await,
        }
    }

    async fn delete(&self, node: &str, key: &str) -> Option<Step> {
        match self {
            Api::Etcd { client, recorder, .. } => etcd::delete(client, recorder, node, key).await,
            Api::Zookeeper { .. } => unreachable!("a validated ZooKeeper workload has no deletes"),
        }
    }

    async fn cas(&self, node: &str, key: &str, guard: Guard, new: String) -> Option<Step> {
        match self {
            Api::Etcd { client, recorder, .. } => etcd::cas(client, recorder, node, key, guard, new).await,
            Api::Zookeeper { zk, recorder, .. } => zookeeper::cas(zk, recorder, node, key, guard, new).await,
        }
    }

    async fn compact(&self, revision: i64) {
        if let Api::Etcd { client, .. } = self {
            etcd::compact(client, revision).await;
        }
    }
}

pub async fn run_kv_client(plan: KvPlan, clock: Clock, recorder: Recorder) {
    madsim::time::sleep_until(plan.start).await;
    let client =
        Client::connect(plan.addr, plan.servers.clone(), clock.clone()).await.expect("a client binds its own address");
    if plan.role == KvRole::Watcher {
        return watch::watch(&plan, &client, &recorder).await;
    }
    let api = match plan.spec.api {
        KvApi::Etcd => Api::Etcd { client, reads: plan.spec.etcd_reads(), recorder: &recorder },
        // No session: the workload's znodes are persistent.
        KvApi::Zookeeper => Api::Zookeeper {
            zk: ZkClient::connected_to(&client, 0, plan.index),
            reads: plan.spec.zk_reads(),
            recorder: &recorder,
        },
    };
    match plan.role {
        KvRole::Reader => run_reader(&plan.name, &plan.spec, &api).await,
        _ => run_writer(&plan.name, plan.role, &plan.spec, &api).await,
    }
}

/// A reader's loop: a random key every interval (±50%), forever.
pub async fn run_reader(node: &str, spec: &KvSpec, conn: &impl KvConnection) {
    loop {
        let factor = conn.random(|rng| rng.gen_range(0.5..1.5));
        conn.sleep(spec.interval.0.mul_f64(factor)).await;
        let key = conn.key(conn.random(|rng| rng.gen_range(0..spec.keys)));
        conn.get(node, &key).await;
    }
}

/// A writer's loop, forever: every interval (±50%) a random key and an operation drawn by the
/// spec's shares; the writer-and-compactor also compacts the store every `compact_every`.
pub async fn run_writer(node: &str, role: KvRole, spec: &KvSpec, conn: &impl KvConnection) {
    Writer { node, spec, conn, written: 0, seen: BTreeMap::new() }.run(role).await
}

/// One writer's state: how many values it made (they are unique: `c2-17`) and what it last
/// learned of each key.
struct Writer<'a, C> {
    node: &'a str,
    spec: &'a KvSpec,
    conn: &'a C,
    written: u64,
    seen: BTreeMap<String, Seen>,
}

impl<C: KvConnection> Writer<'_, C> {
    async fn run(mut self, role: KvRole) {
        let spec = self.spec;
        let mut latest_revision = 0i64;
        let mut next_compaction = self.conn.now().plus(spec.compact_every.0);
        if self.conn.creates_keys_first() {
            // Znodes must exist before setData can change them: each writer creates those not
            // there yet (a create that finds the node changes nothing: a cas that did not swap).
            for i in 0..spec.keys {
                let key = self.conn.key(i);
                let value = self.next_value();
                let step = self.conn.cas(self.node, &key, Guard::Absent, value).await;
                self.learn(&key, step);
            }
        }
        loop {
            let factor = self.conn.random(|rng| rng.gen_range(0.5..1.5));
            self.conn.sleep(spec.interval.0.mul_f64(factor)).await;
            if self.conn.compacts()
                && role == KvRole::WriterAndCompactor
                && !spec.compact_every.0.is_zero()
                && self.conn.now() >= next_compaction
            {
                next_compaction = self.conn.now().plus(spec.compact_every.0);
                self.conn.compact(latest_revision).await;
            }
            let key = self.conn.key(self.conn.random(|rng| rng.gen_range(0..spec.keys)));
            let op = Op::pick(spec, self.conn.random(|rng| rng.r#gen()));
            let step = match op {
                Op::Update => self.update(&key).await,
                op => self.once(op, &key).await,
            };
            if let Some(step) = step {
                latest_revision = latest_revision.max(step.revision);
            }
        }
    }

    /// One operation of `op`'s kind on `key`, with a fresh value.
    async fn once(&mut self, op: Op, key: &str) -> Option<Step> {
        let (conn, node) = (self.conn, self.node);
        let value = self.next_value();
        let step = match op {
            Op::Put => conn.put(node, key, value).await,
            Op::Get => conn.get(node, key).await,
            Op::Delete => conn.delete(node, key).await,
            Op::Cas => conn.cas(node, key, conn.last_seen_guard(self.seen.get(key)), value).await,
            Op::Update => unreachable!("a read-modify-write is not one operation"),
        };
        self.learn(key, step)
    }

    /// A read-modify-write: read, work, then write the new value only if the key still has the
    /// version read; on a conflict, again from the read. Ends at the first write that swapped,
    /// at an operation without an answer, or after [`UPDATE_ATTEMPTS_MAX`] attempts.
    async fn update(&mut self, key: &str) -> Option<Step> {
        let (conn, node) = (self.conn, self.node);
        for _ in 0..UPDATE_ATTEMPTS_MAX {
            let read = conn.get(node, key).await;
            let seen = self.learn(key, read)?.seen.expect("a read learns the key's state");
            conn.sleep(self.spec.work.0).await;
            let value = self.next_value();
            let write = self.learn(key, conn.cas(node, key, Guard::on_version(&seen), value).await)?;
            if write.seen.is_some() {
                return Some(write);
            }
        }
        None
    }

    fn next_value(&mut self) -> String {
        self.written += 1;
        format!("{}-{}", self.node, self.written)
    }

    /// Remembers what a completed operation taught about `key`, and passes it on.
    fn learn(&mut self, key: &str, step: Option<Step>) -> Option<Step> {
        if let Some(seen) = step.as_ref().and_then(|step| step.seen.clone()) {
            self.seen.insert(key.to_string(), seen);
        }
        step
    }
}

#[cfg(test)]
mod tests;
