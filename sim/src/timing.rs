//! The time model's driver (`coordsim_core::timing` says what; this spends it): a server's one
//! CPU, on which requests, Raft messages and applies wait their turn, and its one disk, on which
//! log appends wait for an fsync. Draws come from madsim's seeded generator; waits are exact
//! ([`crate::net::sleep_until_exact`]) and in true time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coordsim_core::queue_depth::QueueDepth;
use madsim::task::NodeId;

pub use coordsim_core::timing::Dist;
use madsim::rand::Rng;
use tokio::sync::{mpsc, oneshot};

use crate::net::sleep_until_exact;

pub use coordsim_core::timing::{
    PROFILE_NONE, RequestClass, ServerTimes, TimeModel, auto_profile, network_preset, network_preset_names, profile,
    profile_names,
};

/// The run's `slow-disk` and `slow-cpu` faults in force, by server: (fault id, fsync time) and
/// (fault id, CPU factor). Where several overlap, the slowest holds.
#[derive(Debug, Default)]
struct Slowdowns {
    disks: BTreeMap<NodeId, Vec<(u64, Duration)>>,
    cpus: BTreeMap<NodeId, Vec<(u64, f64)>>,
}

/// Starts the run's table of slowdowns (with the run's node registry, whose guard it ends with).
pub fn install() {
    crate::node::attach_to_run(Slowdowns::default());
}

fn with_slowdowns<R>(f: impl FnOnce(&mut Slowdowns) -> R) -> Option<R> {
    crate::node::with_run_attached(f)
}

/// A `slow-disk` fault starts on `node`: each of its syncs takes `fsync`.
pub fn slow_disk(node: NodeId, fault: u64, fsync: Duration) {
    with_slowdowns(|s| s.disks.entry(node).or_default().push((fault, fsync)));
}

/// A `slow-cpu` fault starts on `node`: its CPU costs are multiplied by `factor`.
pub fn slow_cpu(node: NodeId, fault: u64, factor: f64) {
    with_slowdowns(|s| s.cpus.entry(node).or_default().push((fault, factor)));
}

/// The fault `fault` ends, whichever of the two it was.
pub fn end_slowdown(node: NodeId, fault: u64) {
    with_slowdowns(|s| {
        if let Some(list) = s.disks.get_mut(&node) {
            list.retain(|(id, _)| *id != fault);
        }
        if let Some(list) = s.cpus.get_mut(&node) {
            list.retain(|(id, _)| *id != fault);
        }
    });
}

/// Whether a `slow-disk` fault is in force on the running node.
pub fn disk_slowed() -> bool {
    disk_slowdown().is_some()
}

/// The running node's sync time under a `slow-disk` fault, if one is in force.
fn disk_slowdown() -> Option<Duration> {
    let node = crate::node::current()?;
    with_slowdowns(|s| s.disks.get(&node).and_then(|list| list.iter().map(|(_, d)| *d).max())).flatten()
}

/// The running node's CPU factor (1 without a `slow-cpu` fault).
fn cpu_factor() -> f64 {
    let Some(node) = crate::node::current() else { return 1.0 };
    with_slowdowns(|s| s.cpus.get(&node).and_then(|list| list.iter().map(|(_, f)| *f).reduce(f64::max)))
        .flatten()
        .unwrap_or(1.0)
}

/// One draw from `dist` (none from the generator when every draw is the same, so a model of
/// fixed costs takes nothing from the run's random stream).
pub fn draw(dist: &Dist) -> Duration {
    if dist.is_fixed() {
        return dist.max();
    }
    dist.at(madsim::rand::thread_rng().r#gen::<f64>())
}

/// Where a CPU writes how deep its queue was: the node's record in the run's recorder
/// ([`crate::recorder::Recorder::queue_record`]), read against the run's epoch.
#[derive(Clone, Debug)]
pub struct QueueRecord {
    epoch: Instant,
    depth: Arc<Mutex<QueueDepth>>,
}

impl QueueRecord {
    pub fn new(epoch: Instant, depth: Arc<Mutex<QueueDepth>>) -> QueueRecord {
        QueueRecord { epoch, depth }
    }

    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    fn with<R>(&self, f: impl FnOnce(&mut QueueDepth) -> R) -> R {
        f(&mut self.depth.lock().expect("queue record lock poisoned"))
    }
}

/// A processor that does one thing at a time, first come first served: each piece of work
/// waits for the ones before it, then takes its cost. One per server (and the resource), made
/// when the node starts, so a restarted node starts idle.
#[derive(Debug, Default)]
pub struct Cpu {
    state: Mutex<CpuState>,
    /// How deep the queue was, for the history (`None`: not recorded).
    record: Option<QueueRecord>,
}

#[derive(Debug, Default)]
struct CpuState {
    /// When the last piece of work queued so far is done.
    busy_until: Option<Instant>,
    /// Pieces queued or running.
    queued: usize,
    /// The most ever queued at once.
    deepest: usize,
}

impl Cpu {
    /// A CPU whose queue depth goes into `record`; what the record held queued from the
    /// node's last life is dropped (a restarted node starts idle).
    pub fn recorded(record: QueueRecord) -> Cpu {
        let now = record.ns(Instant::now());
        record.with(|depth| depth.clear(now));
        Cpu { state: Mutex::default(), record: Some(record) }
    }

    /// Waits for the CPU, then spends `cost` on it.
    pub async fn spend(&self, cost: Duration) {
        self.spend_then_wait(cost, Duration::ZERO).await;
    }

    /// [`Cpu::spend`], then waits `after` more without holding the CPU: one timer for both.
    pub async fn spend_then_wait(&self, cost: Duration, after: Duration) {
        if cost.is_zero() {
            if !after.is_zero() {
                sleep_until_exact(Instant::now() + after).await;
            }
            return;
        }
        let done = {
            let mut state = self.state.lock().expect("cpu lock poisoned");
            let now = Instant::now();
            let start = state.busy_until.filter(|busy| *busy > now).unwrap_or(now);
            state.busy_until = Some(start + cost);
            state.queued += 1;
            state.deepest = state.deepest.max(state.queued);
            if let Some(record) = &self.record {
                let (now, done) = (record.ns(now), record.ns(start + cost));
                record.with(|depth| depth.arrive(now, done));
            }
            start + cost
        };
        // Counted out even if the waiting task is dropped (a killed node, a cancelled request).
        struct Done<'a>(&'a Cpu);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.state.lock().expect("cpu lock poisoned").queued -= 1;
            }
        }
        let _done = Done(self);
        sleep_until_exact(done + after).await;
    }

    /// Pieces of work queued or running now (or waiting out the overhead that follows them).
    pub fn queued(&self) -> usize {
        self.state.lock().expect("cpu lock poisoned").queued
    }

    /// The most pieces of work ever queued at once.
    pub fn deepest(&self) -> usize {
        self.state.lock().expect("cpu lock poisoned").deepest
    }
}

/// A server's disk: syncs one at a time; what is written while a sync runs waits for the next
/// one, which takes it all (group commit: etcd's WAL syncs what a Ready batch holds, ZooKeeper's
/// SyncRequestProcessor flushes a group of transactions at once).
#[derive(Clone, Debug)]
pub struct Disk {
    writes: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

impl Disk {
    /// Starts the disk's task on the running node: it dies with the node.
    pub fn start(fsync: Dist) -> Disk {
        let (writes, mut pending) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
        madsim::task::spawn(async move {
            while let Some(first) = pending.recv().await {
                let mut batch = vec![first];
                while let Ok(more) = pending.try_recv() {
                    batch.push(more);
                }
                // A draw even when a fault replaces it, so that the fault changes nothing else.
                let normal = draw(&fsync);
                sleep_until_exact(Instant::now() + disk_slowdown().unwrap_or(normal)).await;
                for write in batch {
                    let _ = write.send(());
                }
            }
        });
        Disk { writes }
    }

    /// Waits until what was written before this call is on disk (`false`: the disk is gone
    /// with its node).
    pub async fn sync(&self) -> bool {
        let (done, synced) = oneshot::channel();
        self.writes.send(done).is_ok() && synced.await.is_ok()
    }
}

/// A server's costs and its CPU.
#[derive(Debug)]
pub struct ServerCosts {
    pub times: ServerTimes,
    pub cpu: Cpu,
}

impl ServerCosts {
    /// A server's costs, its CPU's queue depth going into `record`.
    pub fn new(times: ServerTimes, record: QueueRecord) -> Arc<ServerCosts> {
        Arc::new(ServerCosts { times, cpu: Cpu::recorded(record) })
    }

    /// A client request of `class` takes its turn on the CPU, then waits its overhead (a
    /// [`RequestClass::Stream`] poll neither).
    pub async fn request(&self, class: RequestClass) {
        if class == RequestClass::Stream {
            return;
        }
        let cost = draw(self.times.request_cost(class)).mul_f64(cpu_factor());
        let overhead = self.times.overhead.as_ref().map_or(Duration::ZERO, draw);
        self.cpu.spend_then_wait(cost, overhead).await;
    }

    /// A Raft message takes its turn on the CPU.
    pub async fn peer_message(&self) {
        self.cpu.spend(draw(&self.times.peer).mul_f64(cpu_factor())).await;
    }

    /// Applying one entry takes its turn on the CPU.
    pub async fn apply(&self) {
        self.cpu.spend(draw(&self.times.apply).mul_f64(cpu_factor())).await;
    }
}
