//! One run of a scenario against a real cluster: start the cluster, the resource and one process
//! per client; play the fault plan (the scenario's fixed `[[nemesis]]` timeline, or faults drawn
//! from `[chaos]` with the run number as seed) with real signals; stop everything; join the
//! journals into one history in the simulator's format.
//!
//! The orchestrator runs on a current-thread runtime on the calling thread: every child is then
//! spawned by that thread, which `PR_SET_PDEATHSIG` ties the children's lives to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{
    Event, FaultKind, History, LeaseObservation, NodeInfo, NodeRole, Phase, RaftRole, SCHEMA, WhichClock,
};
use coordsim_sim::etcd_release::{EtcdRelease, ReleaseDifference};
use coordsim_sim::kv_workload::KvRole;
use coordsim_sim::nemesis::compose::{self, Composition};
use coordsim_sim::nemesis::links::{self, Link};
use coordsim_sim::nemesis::plan::{self, Fault, Partition, PlannedFault, Target};
use coordsim_sim::scenario::{KeepAliveMode, KvApi, KvSpec, LockSpec, Recipe, ReplyKind, Scenario};

use crate::cluster::etcd::EtcdCluster;
use crate::cluster::zookeeper::ZkEnsemble;
use crate::cluster::{Cluster, Hosts};
use crate::config::{ClientConfig, KvConfig, LockConfig, System, Workload};
use crate::journal::{self, Journal};
use crate::links::LinkControl;
use crate::procs::{self, Procs};
use crate::proxy::Delay;
use crate::zk_frames::LostReplies;

/// libfaketime (Debian `faketime`), the multithreaded build: preloaded into a process whose
/// clock the scenario skews, it shifts the wall clock by the offset and runs every clock and
/// timer of the process (monotonic included) at the rate.
pub const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// Why an etcd member's clock is left alone.
const ETCD_CLOCK: &str = "etcd is a Go program: it reads both clocks through the vDSO, past libfaketime; a \
     time namespace (unshare --time) could offset its monotonic clock, but only before it starts and never \
     its wall clock";

/// The environment that gives each node with a `[[clock]]` its clock; a node whose wall clock
/// steps during the run ([`ClockSteps`]) reads its offset from a file instead.
fn clock_env(scenario: &Scenario, steps: &ClockSteps) -> std::collections::BTreeMap<String, Vec<(String, String)>> {
    let mut env = std::collections::BTreeMap::new();
    for (node, file) in &steps.files {
        let vars = vec![
            ("LD_PRELOAD".to_string(), FAKETIME_LIB.to_string()),
            ("FAKETIME_TIMESTAMP_FILE".to_string(), file.display().to_string()),
            // Re-read at every reading of the wall clock (about 6 us each, measured): a step
            // lands at once, not within the default cache's 10 s.
            ("FAKETIME_NO_CACHE".to_string(), "1".to_string()),
            // A step moves the wall clock only, as an NTP step or `date -s` does.
            ("FAKETIME_DONT_FAKE_MONOTONIC".to_string(), "1".to_string()),
        ];
        env.insert(node.clone(), vars);
    }
    for clock in scenario.clock.iter().filter(|c| !steps.files.contains_key(&c.node)) {
        let offset_s = clock.offset.ns as f64 / 1e9;
        let vars = vec![
            ("LD_PRELOAD".to_string(), FAKETIME_LIB.to_string()),
            ("FAKETIME".to_string(), format!("{offset_s:+} x{}", clock.rate)),
        ];
        env.insert(clock.node.clone(), vars);
    }
    env
}

/// The wall-clock steps of a run (`clock-jump`, `clock-strobe`) on the nodes they hit: each such
/// node runs under libfaketime reading its offset from a file of its own
/// (`FAKETIME_TIMESTAMP_FILE`, the documented way to change a process's fake time while it
/// runs: libfaketime's README, "Changing the 'x' modifier during run-time"), which the
/// orchestrator rewrites at each step; its monotonic clock stays the kernel's. The steps and
/// the history's `clock` records come from the simulator's own schedule
/// (`plan::clock_schedule`), so both worlds step the same clocks at the same true times.
#[derive(Default)]
struct ClockSteps {
    /// Each stepped node's offset file.
    files: std::collections::BTreeMap<String, PathBuf>,
    /// (true time, node, new wall offset to write (none: a record only), the `clock` record),
    /// in time order.
    pending: std::collections::VecDeque<(u64, String, Option<i64>, Event)>,
}

impl ClockSteps {
    fn new(scenario: &Scenario, faults: &[PlannedFault], folder: &Path) -> ClockSteps {
        let mut stepped: Vec<&str> = faults
            .iter()
            .filter_map(|f| match &f.fault {
                Fault::ClockJump { node, .. } | Fault::ClockStrobe { node, .. } => Some(node.as_str()),
                _ => None,
            })
            .collect();
        stepped.sort_unstable();
        stepped.dedup();
        let mut steps = ClockSteps::default();
        let mut all = Vec::new();
        for node in stepped {
            steps.files.insert(node.to_string(), folder.join(format!("{node}.faketime")));
            let schedule = plan::clock_schedule(scenario, faults, node);
            // Wall first at equal times, as the simulator records them.
            for (at_ns, local_ns, rate_ppm) in schedule.wall.segments() {
                let offset = local_ns - at_ns as i64;
                let event = Event::Clock { local_ns, rate_ppm, clock: WhichClock::Wall };
                all.push((at_ns, 0, node.to_string(), Some(offset), event));
            }
            for (at_ns, local_ns, rate_ppm) in schedule.monotonic.segments() {
                let event = Event::Clock { local_ns, rate_ppm, clock: WhichClock::Monotonic };
                all.push((at_ns, 1, node.to_string(), None, event));
            }
        }
        all.sort_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
        steps.pending = all.into_iter().map(|(at, _, node, offset, event)| (at, node, offset, event)).collect();
        steps
    }

    /// When the next step is due.
    fn next_at(&self) -> Option<u64> {
        self.pending.front().map(|(at, ..)| *at)
    }

    /// Writes every step due by `now_ns` and records it. A step's record is timed when its file
    /// was written (the process reads it at its next reading of the wall clock); the clocks' start
    /// at 0, their files having been written before any process started ([`ClockSteps::new`]).
    fn apply_due(&mut self, now_ns: u64, journal: &Journal) -> Result<(), String> {
        while self.pending.front().is_some_and(|(at, ..)| *at <= now_ns) {
            let (at, node, offset, event) = self.pending.pop_front().expect("a due step");
            if let Some(offset_ns) = offset.filter(|_| at > 0) {
                write_offset(&self.files[&node], offset_ns)?;
            }
            let time = if at == 0 { 0 } else { journal.now_ns() };
            journal.record_at(time, &node, event);
        }
        Ok(())
    }

    /// Writes each stepped node's starting offset, before its process starts.
    fn write_starts(&self) -> Result<(), String> {
        for (at, node, offset, _) in &self.pending {
            if let (0, Some(offset_ns)) = (*at, offset) {
                write_offset(&self.files[node], *offset_ns)?;
            }
        }
        Ok(())
    }
}

/// Replaces `file` with libfaketime's relative offset `offset_ns` ("+2.5" or "-10.000000000":
/// seconds), whole: written aside and renamed, so a reader never sees half a line.
fn write_offset(file: &Path, offset_ns: i64) -> Result<(), String> {
    let sign = if offset_ns < 0 { '-' } else { '+' };
    let abs = offset_ns.unsigned_abs();
    let text = format!("{sign}{}.{:09}\n", abs / 1_000_000_000, abs % 1_000_000_000);
    let aside = file.with_extension("faketime.new");
    std::fs::write(&aside, text).map_err(|e| format!("{}: {e}", aside.display()))?;
    std::fs::rename(&aside, file).map_err(|e| format!("{}: {e}", file.display()))
}

/// The node name of the orchestrator's own records (faults).
const NEMESIS: &str = "nemesis";
/// The resource's node name, as in simulated runs.
pub const RESOURCE: &str = "resource";
/// The file in a run's cluster folder that holds the servers' own counters at the run's end
/// (`Cluster::server_metrics`, one `# <server>` heading per server).
pub const SERVER_METRICS: &str = "server-metrics.txt";
/// Operation ids of client incarnation k of client i start at `(i * 16 + k + 1) * OP_SPACING`.
const OP_SPACING: u64 = 1_000_000;
/// How often the orchestrator asks who leads (for `role` records and `leader` targets) and which
/// leases or sessions live (for `lease_expiry` records).
const ROLE_POLL: Duration = Duration::from_millis(100);
/// The most one look at the cluster (its leader, its leases) may take.
const OBSERVE_BUDGET: Duration = Duration::from_millis(300);
/// While clients wait for their turn to start: how often the orchestrator looks.
const QUEUE_POLL: Duration = Duration::from_millis(20);
/// The longest a client waits for its predecessor to queue, past its planned start.
const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// Why a scenario cannot run against a real system; names the scenario's field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Unsupported {
    pub field: String,
    pub message: String,
}

fn unsupported(field: impl Into<String>, message: impl Into<String>) -> Unsupported {
    Unsupported { field: field.into(), message: message.into() }
}

/// Checks that `scenario` can run on `system` and returns its fault plan for `run`.
pub fn check(scenario: &Scenario, system: System, run: u64) -> Result<Vec<PlannedFault>, Unsupported> {
    match (&scenario.lock, &scenario.kv) {
        (Some(lock), _) => check_lock(lock, system)?,
        (None, Some(kv)) => check_kv(kv, system)?,
        (None, None) => unreachable!("validated: a scenario has a workload"),
    }
    // Three switches live in the client (the ZooKeeper recipe's two, the etcd session's one) and
    // run against real clusters; the others are bugs of the simulated servers, which a real
    // cluster does not have (it has its own).
    let bugs = &scenario.bugs;
    let server_bugs = [
        ("grant_without_lease_check", bugs.grant_without_lease_check),
        ("deposed_leader_expires_leases", bugs.deposed_leader_expires_leases),
        ("ttl_reset_on_leader_change", bugs.ttl_reset_on_leader_change),
        ("watch_skip_at_compaction", bugs.watch_skip_at_compaction),
        ("follower_reads_without_read_index", bugs.follower_reads_without_read_index),
    ];
    if let Some((name, _)) = server_bugs.iter().find(|(_, on)| *on) {
        return Err(unsupported(
            format!("bugs.{name}"),
            "a switch of the simulated service: a real cluster has no such switch",
        ));
    }
    for (i, clock) in scenario.clock.iter().enumerate() {
        let field = format!("clock[{i}].node");
        if system == System::Etcd && clock.node.starts_with('s') {
            return Err(unsupported(field, ETCD_CLOCK));
        }
        if !std::path::Path::new(FAKETIME_LIB).exists() {
            return Err(unsupported(
                field,
                format!("a skewed clock needs libfaketime ({FAKETIME_LIB}, Debian faketime)"),
            ));
        }
    }
    if scenario.cluster.watch_event_cost.is_some() {
        return Err(unsupported(
            "cluster.watch_event_cost",
            "a cost model of the simulated servers: real servers spend what they spend",
        ));
    }
    if scenario.observers.is_some() {
        return Err(unsupported("observers", "observers (watch-only clients) run only in the simulator so far"));
    }
    if system == System::Zookeeper && scenario.cluster.heartbeat_interval.is_some() {
        return Err(unsupported(
            "cluster.heartbeat_interval",
            "etcd's --heartbeat-interval and --election-timeout: ZooKeeper's timing is its tickTime, not these",
        ));
    }
    if system == System::Etcd && scenario.cluster.etcd.lease_checkpoint_interval.is_some() {
        return Err(unsupported(
            "cluster.etcd.lease_checkpoint_interval",
            "real etcd has no flag for the lease checkpoint interval (a fixed 5 minutes in 3.4 to 3.6: \
             lease/lessor.go defaultLeaseCheckpointInterval)",
        ));
    }
    if !scenario.cluster.fsync {
        return Err(unsupported(
            "cluster.fsync",
            "real etcd and ZooKeeper always fsync; fsync = false is a simulator mode",
        ));
    }
    let faults = plan::plan(scenario, run);
    for fault in &faults {
        let field = format!("nemesis fault {} ({})", fault.id, fault.spec.kind.name());
        match &fault.fault {
            Fault::Pause { .. } | Fault::Crash { .. } => {}
            Fault::Partition { .. } | Fault::PacketLoss { .. } | Fault::Latency { .. } | Fault::LinkDelay { .. } => {
                if let Some(reason) = crate::netns::unavailable() {
                    return Err(unsupported(
                        field,
                        format!("network faults need a network namespace per node: {reason}"),
                    ));
                }
            }
            Fault::SlowDisk { .. } | Fault::SlowCpu { .. } => {
                return Err(unsupported(
                    field,
                    "slow-disk and slow-cpu slow the simulator's time model; on a real cluster a slow \
                     disk needs a device of its own (dm-delay) and a slow CPU a cgroup quota, which \
                     this runner does not set up",
                ));
            }
            // The scenario's own check has made the target a client.
            Fault::DropReplies { .. } => {
                if let Some(reason) = crate::netns::unavailable() {
                    return Err(unsupported(
                        field,
                        format!("lost replies go through a link proxy in a network namespace per node: {reason}"),
                    ));
                }
            }
            Fault::ClockJump { node, .. } | Fault::ClockStrobe { node, .. } => {
                if system == System::Etcd && node.starts_with('s') {
                    return Err(unsupported(field, ETCD_CLOCK));
                }
                if !std::path::Path::new(FAKETIME_LIB).exists() {
                    return Err(unsupported(
                        field,
                        format!("a clock step needs libfaketime ({FAKETIME_LIB}, Debian faketime)"),
                    ));
                }
                if let Some(i) = scenario.clock.iter().position(|c| c.node == *node && c.rate != 1.0) {
                    return Err(unsupported(
                        field,
                        format!(
                            "a step moves the wall clock only, so the process's monotonic clock is left to the kernel \
                             (FAKETIME_DONT_FAKE_MONOTONIC), and libfaketime cannot then run it at clock[{i}].rate"
                        ),
                    ));
                }
            }
            Fault::ClockRate { .. } => {
                return Err(unsupported(
                    field,
                    "a rate change during a run: libfaketime re-reads a rate from its file, but a new rate \
                     counts from the process's start (a jump) unless FAKETIME_XRESET, which its README calls \
                     experimental; a [[clock]] rate runs from the start",
                ));
            }
        }
    }
    Ok(faults)
}

/// What of a `[lock]` workload a real cluster runs.
fn check_lock(lock: &LockSpec, system: System) -> Result<(), Unsupported> {
    let ok = match system {
        System::Etcd => matches!(
            lock.recipe,
            Recipe::EtcdMutex | Recipe::EtcdCas | Recipe::EtcdLockApi | Recipe::EtcdSemaphore | Recipe::EtcdElection
        ),
        System::Zookeeper => matches!(lock.recipe, Recipe::ZkQueueLock | Recipe::ZkHerdLock | Recipe::ZkElection),
    };
    if !ok {
        let name = serde_json::to_string(&lock.recipe).unwrap_or_default();
        let supported = match system {
            System::Etcd => "etcd-mutex, etcd-cas, etcd-lock-api, etcd-semaphore, etcd-election",
            System::Zookeeper => "zk-queue-lock, zk-herd-lock, zk-election",
        };
        return Err(unsupported(
            "lock.recipe",
            format!("{name} does not run on {} (there: {supported})", system.name()),
        ));
    }
    if lock.client_deadline.is_some() && system == System::Zookeeper {
        return Err(unsupported(
            "lock.client_deadline",
            "a client deadline is a lease-session setting: etcd recipes only",
        ));
    }
    if lock.connection_state_error_policy.is_some() {
        return Err(unsupported(
            "lock.connection_state_error_policy",
            "Curator's connection-state policies run only in the simulator so far (the real client is the zookeeper-client crate, whose hold ends when its session does)",
        ));
    }
    // Simulator-only so far: the real clients always attach their entry to the session and keep
    // it alive from a task of their own.
    if !lock.lease || !lock.ephemeral {
        let field = if lock.lease { "lock.ephemeral" } else { "lock.lease" };
        return Err(unsupported(field, "lock entries that outlive their session run only in the simulator so far"));
    }
    if lock.keepalive != KeepAliveMode::Background {
        return Err(unsupported(
            "lock.keepalive",
            "keepalives between holds run only in the simulator so far (real clients renew in the background)",
        ));
    }
    Ok(())
}

/// What of a `[kv]` workload a real cluster runs: its own API's writers and readers.
fn check_kv(kv: &KvSpec, system: System) -> Result<(), Unsupported> {
    let api = match kv.api {
        KvApi::Etcd => System::Etcd,
        KvApi::Zookeeper => System::Zookeeper,
    };
    if api != system {
        return Err(unsupported(
            "kv.api",
            format!("the workload uses {}'s API: run it on real {}", api.name(), api.name()),
        ));
    }
    if kv.watchers > 0 && system == System::Zookeeper {
        return Err(unsupported(
            "kv.watchers",
            "the simulator's key-value watchers use etcd's Watch API, which ZooKeeper does not have",
        ));
    }
    Ok(())
}

/// Where a run puts its files.
pub struct RunDirs {
    pub root: PathBuf,
}

impl RunDirs {
    fn cluster(&self) -> PathBuf {
        self.root.join("cluster")
    }
    fn clients(&self) -> PathBuf {
        self.root.join("clients")
    }
    fn links(&self) -> PathBuf {
        self.root.join("links")
    }
    /// The offset files of the nodes whose wall clock steps ([`ClockSteps`]).
    fn clocks(&self) -> PathBuf {
        self.root.join("clocks")
    }
}

/// Runs `scenario` once against a fresh `system` cluster; files go under `dir` (which must not
/// hold an earlier run's files: the caller picks a fresh folder). `exe` is the coordsim binary
/// that serves `real-client`.
pub async fn run(scenario: &Scenario, system: System, run: u64, dir: &Path, exe: &Path) -> Result<RealRun, String> {
    let faults = check(scenario, system, run).map_err(|e| e.to_string())?;
    let dirs = RunDirs { root: dir.to_path_buf() };
    for folder in [dirs.cluster(), dirs.clients()] {
        std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    let servers = scenario.cluster.servers;
    let steps = ClockSteps::new(scenario, &faults, &dirs.clocks());
    if !steps.files.is_empty() {
        std::fs::create_dir_all(dirs.clocks()).map_err(|e| format!("{}: {e}", dirs.clocks().display()))?;
        steps.write_starts()?;
    }
    // Namespaces only when a network fault needs them: they need root, and loopback is simpler.
    let mut hosts = Hosts { net: None, env: clock_env(scenario, &steps) };
    let nodes: Vec<String> =
        (1..=servers).map(|i| format!("s{i}")).chain((1..=scenario.clients.count).map(|i| format!("c{i}"))).collect();
    let preset = preset_delay(scenario);
    if preset.is_some() || faults.iter().any(|f| is_network_fault(&f.fault)) {
        hosts.net = Some(Arc::new(crate::netns::Network::create(&nodes)?));
    }
    // Declared after `hosts`, so dropped first: the processes die before their namespaces go.
    let procs = Arc::new(Procs::default());
    // Delays need a proxy on every link, in place before the servers open their connections.
    let mut links = None;
    if let Some(net) = &hosts.net
        && (preset.is_some()
            || faults.iter().any(|f| {
                matches!(f.fault, Fault::Latency { .. } | Fault::LinkDelay { .. } | Fault::DropReplies { .. })
            }))
    {
        // A client's connections to ZooKeeper are read as its protocol, to lose chosen replies;
        // to etcd only where a fault loses some (HTTP/2 is read frame by frame, with HPACK).
        let loses_replies = faults.iter().any(|f| matches!(f.fault, Fault::DropReplies { .. }));
        let reads = match system {
            System::Zookeeper => Some((crate::cluster::zookeeper::CLIENT_PORT, crate::proxy::Protocol::Zookeeper)),
            System::Etcd => loses_replies.then_some((crate::cluster::etcd::CLIENT_PORT, crate::proxy::Protocol::Etcd)),
        };
        let mut control =
            crate::links::LinkControl::start(net, &nodes, RESOURCE, &procs, exe, &dirs.links(), reads).await?;
        if preset.is_some() {
            // In force before the servers open their connections, for the whole run.
            control.set(&crate::links::delays(&control.nodes(), preset, &[]), &Default::default())?;
        }
        links = Some(control);
    }
    let started = std::time::Instant::now();
    let history = match system {
        System::Etcd => {
            let checkpoint = scenario.cluster.etcd.lease_checkpoint;
            let raft = crate::cluster::etcd::RaftFlags::of(&scenario.cluster);
            let cluster =
                EtcdCluster::start(&dirs.cluster(), servers, checkpoint, raft, procs.clone(), hosts.clone()).await?;
            let ready = started.elapsed();
            (drive(scenario, system, run, &dirs, exe, cluster, &faults, steps, procs, &hosts, &mut links).await?, ready)
        }
        System::Zookeeper => {
            let cluster = ZkEnsemble::start(&dirs.cluster(), servers, procs.clone(), hosts.clone()).await?;
            let ready = started.elapsed();
            (drive(scenario, system, run, &dirs, exe, cluster, &faults, steps, procs, &hosts, &mut links).await?, ready)
        }
    };
    Ok(RealRun { history: history.0, cluster_ready: history.1, namespaces: hosts.net.is_some() })
}

/// What one real run produced.
pub struct RealRun {
    pub history: History,
    /// From starting the servers to the cluster serving (wall time).
    pub cluster_ready: Duration,
    /// Whether the nodes ran in network namespaces (the plan had a partition).
    pub namespaces: bool,
}

/// A client process's current incarnation.
struct ClientProc {
    name: String,
    index: usize,
    /// Its role in a key-value workload.
    kv_role: Option<KvRole>,
    incarnation: u64,
    journals: Vec<PathBuf>,
}

#[allow(clippy::too_many_arguments)]
async fn drive<C: Cluster>(
    scenario: &Scenario,
    system: System,
    run: u64,
    dirs: &RunDirs,
    exe: &Path,
    mut cluster: C,
    faults: &[PlannedFault],
    mut steps: ClockSteps,
    procs: Arc<Procs>,
    hosts: &Hosts,
    links: &mut Option<LinkControl>,
) -> Result<History, String> {
    let epoch_ns = journal::monotonic_ns();
    let nemesis_journal = dirs.root.join("nemesis.jsonl");
    let journal = Arc::new(Journal::create(&nemesis_journal, epoch_ns, 0).map_err(|e| e.to_string())?);
    let resource_journal = dirs.root.join("resource.jsonl");
    let mut own_journals = vec![nemesis_journal];
    let workload = match (&scenario.lock, &scenario.kv) {
        (Some(lock), _) => {
            let resource_mode = scenario.resource.as_ref().expect("validated: a lock workload has a resource").mode;
            // The resource: a process of its own on 127.0.0.1 (on the bridge when nodes have namespaces).
            let ip = hosts.net.as_ref().map_or_else(|| "127.0.0.1".to_string(), |net| net.bridge_ip().to_string());
            let resource_addr = format!("{ip}:{}", procs::free_port().map_err(|e| e.to_string())?);
            spawn_resource(&procs, dirs, exe, resource_mode, &resource_addr, epoch_ns, &resource_journal).await?;
            own_journals.push(resource_journal);
            Workload::Lock(LockConfig {
                recipe: lock.recipe,
                lock_name: lock.name.clone(),
                ttl_ms: lock.ttl.0.as_millis() as u64,
                deadline_ms: lock.client_deadline.map(|d| d.0.as_millis() as u64),
                deadline_clock: lock.client_deadline_clock.unwrap_or_default(),
                backoff_ms: lock.backoff.map(|b| b.0.as_millis() as u64),
                permits: lock.permits,
                nested: lock.nested,
                reentrant: lock.reentrant,
                hold_ms: scenario.clients.hold.0.as_millis() as u64,
                writes_per_hold: scenario.clients.writes_per_hold,
                think_ms: scenario.clients.think.0.as_millis() as u64,
                resource_name: RESOURCE.to_string(),
                resource_addr,
                ignore_keepalive_failure: scenario.bugs.ignore_keepalive_failure,
                unique_tag: !scenario.bugs.no_unique_tag_in_sequential_create,
                recheck_vanished: !scenario.bugs.lost_wakeup_on_vanished_predecessor,
            })
        }
        // The role and the index are set per client when it is spawned.
        (None, Some(kv)) => Workload::Kv(KvConfig { spec: kv.clone(), role: KvRole::Writer, index: 0 }),
        (None, None) => unreachable!("validated: a scenario has a workload"),
    };
    let duration_ns = scenario.duration.0.as_nanos() as u64;
    let base = ClientConfig {
        name: String::new(),
        system,
        endpoints: cluster.client_endpoints(),
        workload,
        epoch_ns,
        start_ns: 0,
        stop_ns: duration_ns,
        journal: PathBuf::new(),
        op_base: 0,
    };
    // Skewed clocks: recorded for the checkers and reports (local = offset + rate × true time);
    // a stepped clock's records are its steps'.
    steps.apply_due(0, &journal)?;
    for spec in scenario.clock.iter().filter(|c| !steps.files.contains_key(&c.node)) {
        let rate_ppm = (spec.rate * 1e6).round() as u64;
        journal.record_at(
            0,
            &spec.node,
            Event::Clock { local_ns: spec.offset.ns, rate_ppm, clock: Default::default() },
        );
    }
    let mut clients: Vec<ClientProc> = Vec::new();
    // Clients start in the scenario's order: c1 now, each next one once its predecessor queued.
    let mut pending: std::collections::VecDeque<(ClientProc, u64)> = (0..scenario.clients.count)
        .map(|index| {
            let start = scenario.clients.start.0 + scenario.clients.stagger.0 * index as u32;
            let kv_role = scenario.kv.as_ref().map(|kv| KvRole::of(index, scenario.clients.count, kv));
            let client =
                ClientProc { name: format!("c{}", index + 1), index, kv_role, incarnation: 0, journals: Vec::new() };
            (client, start.as_nanos() as u64)
        })
        .collect();
    // Only a lock's clients queue: a key-value client has no predecessor to wait for.
    let ordered = scenario.lock.is_some() && !scenario.clients.stagger.0.is_zero();
    start_due_clients(&mut pending, &mut clients, journal.now_ns(), ordered, |client, start_ns| {
        spawn_client(&procs, hosts, dirs, exe, &base, client, start_ns)
    })?;
    let mut timeline = Timeline::new(faults);
    timeline.base_latency = preset_delay(scenario);
    let mut last_leader: Option<String> = None;
    let mut term = 0u64;
    let mut sessions = Sessions::default();
    loop {
        // Faults first: the observations below may take a few hundred ms while a server is paused.
        steps.apply_due(journal.now_ns(), &journal)?;
        while let Some((_, action)) = timeline.next_due(journal.now_ns()) {
            apply(
                action,
                &mut timeline,
                &mut cluster,
                &procs,
                hosts,
                &journal,
                &last_leader,
                dirs,
                exe,
                &base,
                &mut clients,
                links,
            )?;
        }
        if let Some(error) = client_died(&procs, &clients, dirs) {
            return Err(error);
        }
        if journal.now_ns() >= duration_ns {
            break;
        }
        start_due_clients(&mut pending, &mut clients, journal.now_ns(), ordered, |client, start_ns| {
            spawn_client(&procs, hosts, dirs, exe, &base, client, start_ns)
        })?;
        // Record who leads whenever it changes (the report draws it; `leader` targets use it).
        // `term` counts the changes seen: the cluster's own term is not asked for.
        if let Ok(Some(leader)) = tokio::time::timeout(OBSERVE_BUDGET, cluster.leader()).await
            && Some(&leader) != last_leader.as_ref()
        {
            term += 1;
            // The one the cluster no longer names leader is recorded as following, so that a
            // timeline never shows two leaders (a crashed or partitioned old leader included).
            match &last_leader {
                Some(old) => journal.record(old, Event::Role { role: RaftRole::Follower, term }),
                // The first leader named: every server up then follows it, so the report draws
                // follower lanes from the start, as the simulator's does.
                None => {
                    for server in (1..=scenario.cluster.servers).map(|i| format!("s{i}")) {
                        if server != leader && !timeline.composed.is_crashed(&server) {
                            journal.record(&server, Event::Role { role: RaftRole::Follower, term });
                        }
                    }
                }
            }
            journal.record(&leader, Event::Role { role: RaftRole::Leader, term });
            last_leader = Some(leader);
        }
        let observe = observe_sessions(&cluster, &journal, last_leader.as_deref(), &mut sessions);
        let _ = tokio::time::timeout(OBSERVE_BUDGET, observe).await;
        let next = timeline.next_at().unwrap_or(u64::MAX).min(steps.next_at().unwrap_or(u64::MAX)).min(duration_ns);
        let poll = if pending.is_empty() { ROLE_POLL } else { QUEUE_POLL };
        let wait = Duration::from_nanos(next.saturating_sub(journal.now_ns())).min(poll);
        tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
    }
    // The end: faults still active end with the run (their end is recorded), every process stops.
    for (fault_id, _) in timeline.active.clone() {
        timeline.end_early(fault_id);
    }
    while let Some((_, action)) = timeline.next_due(u64::MAX) {
        if let Action::End(_) = action {
            apply(
                action,
                &mut timeline,
                &mut cluster,
                &procs,
                hosts,
                &journal,
                &last_leader,
                dirs,
                exe,
                &base,
                &mut clients,
                links,
            )?;
        }
    }
    // The servers' own counters, for the time model's calibration (`coordsim real calibrate`).
    let mut counters = String::new();
    for (server, text) in cluster.server_metrics().await {
        counters.push_str(&format!("# {server}\n{text}"));
    }
    let metrics_file = dirs.cluster().join(SERVER_METRICS);
    std::fs::write(&metrics_file, counters).map_err(|e| format!("{}: {e}", metrics_file.display()))?;
    if let Some(error) = client_died(&procs, &clients, dirs) {
        return Err(error);
    }
    procs.kill_all();
    drop(cluster);
    let observation = sessions.observation();
    merge(scenario, system, run, duration_ns, &own_journals, &clients, observation)
}

/// Leases (sessions) seen alive, with the last true time each was seen.
#[derive(Default)]
struct Sessions {
    alive: std::collections::BTreeMap<i64, u64>,
    /// Leases missing from the last answers, not yet confirmed gone
    /// ([`Cluster::ABSENCES_TO_CONFIRM`]): when each was last seen alive, and how many answers
    /// in a row left it out.
    missing: std::collections::BTreeMap<i64, (u64, u32)>,
    /// When the last answer's question was asked: every lease not recorded gone was alive then.
    last_seen_ns: u64,
}

impl Sessions {
    /// What the history says of how leases were seen (`History::lease_observation`).
    fn observation(&self) -> LeaseObservation {
        LeaseObservation {
            poll_ms: ROLE_POLL.as_millis() as u64,
            until_ns: self.last_seen_ns,
            // Our etcd client journals each LeaseKeepAlive; a ZooKeeper client's session tap
            // each ping and each other request, which renews the session too (zk/tap.rs).
            renewals_recorded: true,
        }
    }
}

/// Records a `lease_expiry` for each lease that was alive at an earlier look and is gone now.
///
/// A real cluster does not say when it expired a lease; the orchestrator asks every
/// [`ROLE_POLL`] which leases live (etcd: LeaseLeases; ZooKeeper: the session tracker in the
/// leader's `dump`) and records a vanished one just after it was last seen alive: no later than
/// the expiry, so before the wakeups the expiry caused, and less than a poll early; its
/// `latest_ns` is when the answer that confirmed it gone came back
/// ([`Cluster::ABSENCES_TO_CONFIRM`] answers in a row without it), so a checker knows the
/// expiry happened somewhere in between. A lease that comes back was missed by a listing, not
/// gone. A ZooKeeper session its client closed vanishes the same way: the client's tap records
/// the close as a revocation, and [`merge`] drops such a session's expiry record.
async fn observe_sessions<C: Cluster>(cluster: &C, journal: &Journal, leader: Option<&str>, seen: &mut Sessions) {
    // Seen alive at the latest when the question was asked: an answer reflects a moment after it.
    let asked = journal.now_ns();
    let Some(live) = cluster.sessions().await else { return };
    // Gone by the time the answer came back: the expiry's latest possible time.
    let answered = journal.now_ns();
    let recorder = leader.unwrap_or("s1");
    for (lease, last_seen) in seen.answer(&live, asked, C::ABSENCES_TO_CONFIRM) {
        let event = Event::LeaseExpiry { lease, latest_ns: Some(answered.max(last_seen + 1)) };
        journal.record_at(last_seen + 1, recorder, event);
    }
}

impl Sessions {
    /// Takes an answer to a question asked at `asked`: the leases confirmed gone by it
    /// (`absences` answers in a row without them), each with when it was last seen alive.
    fn answer(&mut self, live: &std::collections::BTreeSet<i64>, asked: u64, absences: u32) -> Vec<(i64, u64)> {
        let vanished: Vec<(i64, u64)> =
            self.alive.iter().filter(|(id, _)| !live.contains(id)).map(|(id, t)| (*id, *t)).collect();
        for (lease, last_seen) in vanished {
            self.alive.remove(&lease);
            self.missing.insert(lease, (last_seen, 0));
        }
        let mut confirmed = Vec::new();
        for (lease, (last_seen, missed)) in self.missing.iter_mut() {
            if live.contains(lease) {
                continue;
            }
            *missed += 1;
            if *missed >= absences {
                confirmed.push((*lease, *last_seen));
            }
        }
        for (lease, _) in &confirmed {
            self.missing.remove(lease);
        }
        for lease in live {
            self.missing.remove(lease);
            self.alive.insert(*lease, asked);
        }
        self.last_seen_ns = asked;
        confirmed
    }
}

/// Starts the next clients whose turn has come. In the simulator client k+1 starts `stagger`
/// after client k and finds it queued; a real process can take longer than that to open its
/// session (seen once under load: c2 held the lock at 1.29 s, c1 only at 13.3 s, and the
/// scenario's pause of c1 hit a waiter). So client k+1 is started once client k has asked for
/// the lock (its first `lock` call is in its journal), no earlier than its planned time (it
/// sleeps until then itself), and at the latest [`QUEUE_WAIT`] after it. Without `ordered`
/// (clients that start at the same instant, `stagger = 0`: no order to keep) every client is
/// started at once, so that their requests stay simultaneous.
fn start_due_clients(
    pending: &mut std::collections::VecDeque<(ClientProc, u64)>,
    started: &mut Vec<ClientProc>,
    now_ns: u64,
    ordered: bool,
    mut spawn: impl FnMut(&mut ClientProc, u64) -> Result<(), String>,
) -> Result<(), String> {
    while let Some((_, start_ns)) = pending.front() {
        let predecessor_queued =
            !ordered || started.last().is_none_or(|before| before.journals.iter().any(|j| asked_for_lock(j)));
        let waited_enough = now_ns >= start_ns.saturating_add(QUEUE_WAIT.as_nanos() as u64);
        if !predecessor_queued && !waited_enough {
            return Ok(());
        }
        let (mut client, start_ns) = pending.pop_front().expect("front exists");
        spawn(&mut client, start_ns)?;
        started.push(client);
    }
    Ok(())
}

/// A client process that ended by itself, badly (a signal, a panic, an error exit), while the
/// nemesis had not crashed it: the history would lose a client without a word and the verdicts
/// judge a run that did not happen as planned, so the run fails, naming the client's log. (A
/// client could die of SIGPIPE this way, silently, while the CLI set SIGPIPE to its default:
/// scenarios/src/output.rs.)
fn client_died(procs: &Procs, clients: &[ClientProc], dirs: &RunDirs) -> Option<String> {
    clients.iter().find_map(|client| {
        let status = procs.failed(&client.name)?;
        let log = dirs.clients().join(format!("{}.{}.log", client.name, client.incarnation));
        Some(format!("client {} ended on its own mid-run ({status}); its log: {}", client.name, log.display()))
    })
}

/// Whether a client's journal records a `lock` call (its first request for the lock).
fn asked_for_lock(journal: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(journal) else {
        return false;
    };
    text.lines().any(|line| line.contains("\"type\":\"invoke\"") && line.contains("\"call\":{\"f\":\"lock\""))
}

fn spawn_client(
    procs: &Procs,
    hosts: &Hosts,
    dirs: &RunDirs,
    exe: &Path,
    base: &ClientConfig,
    client: &mut ClientProc,
    start_ns: u64,
) -> Result<(), String> {
    let stem = format!("{}.{}", client.name, client.incarnation);
    let journal = dirs.clients().join(format!("{stem}.jsonl"));
    let mut config = ClientConfig {
        name: client.name.clone(),
        start_ns,
        journal: journal.clone(),
        op_base: (client.index as u64 * 16 + client.incarnation + 1) * OP_SPACING,
        ..base.clone()
    };
    if let (Workload::Kv(kv), Some(role)) = (&mut config.workload, client.kv_role) {
        kv.role = role;
        kv.index = client.index;
    }
    let path = dirs.clients().join(format!("{stem}.json"));
    let text = serde_json::to_string_pretty(&config).expect("client configs serialize");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut command = std::process::Command::new(exe);
    command.arg("real-client").arg("--config").arg(&path);
    let command = hosts.command(&client.name, command);
    procs.spawn(&client.name, command, &dirs.clients().join(format!("{stem}.log")))?;
    client.journals.push(journal);
    Ok(())
}

/// Starts the resource process and waits until it accepts connections (at most 5 s).
async fn spawn_resource(
    procs: &Procs,
    dirs: &RunDirs,
    exe: &Path,
    mode: coordsim_sim::resource::ResourceMode,
    addr: &str,
    epoch_ns: u64,
    journal: &Path,
) -> Result<(), String> {
    let config = crate::resource::ResourceConfig {
        name: RESOURCE.to_string(),
        mode,
        listen: addr.to_string(),
        epoch_ns,
        journal: journal.to_path_buf(),
    };
    let path = dirs.root.join("resource.json");
    std::fs::write(&path, serde_json::to_string_pretty(&config).expect("configs serialize"))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut command = std::process::Command::new(exe);
    command.arg("real-resource").arg("--config").arg(&path);
    procs.spawn(RESOURCE, command, &dirs.root.join("resource.log"))?;
    for _ in 0..250 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        if let Some(status) = procs.exited(RESOURCE) {
            return Err(format!(
                "the resource process exited ({status}); see {}",
                dirs.root.join("resource.log").display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!("the resource did not listen on {addr} within 5 s"))
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Start(usize),
    End(usize),
}

/// The plan as start and end actions in time order, and what each active fault hit.
struct Timeline<'a> {
    faults: &'a [PlannedFault],
    pending: Vec<(u64, Action)>,
    /// Active faults: plan index and the nodes it hit.
    active: Vec<(usize, Vec<String>)>,
    /// The links each active partition cuts, by plan index.
    cuts: std::collections::BTreeMap<usize, BTreeSet<Link>>,
    /// Pauses, crashes, cuts, loss and latency in force, composed as in the simulator.
    composed: Composition<String>,
    /// Active link delays, by plan index.
    link_delays: std::collections::BTreeMap<usize, (String, String, Duration)>,
    /// Active lost replies (`drop-replies` on real ZooKeeper): the node whose replies are lost,
    /// and which, by plan index.
    lost: std::collections::BTreeMap<usize, (String, ReplyKind)>,
    /// The cuts and loss the namespaces' rules hold now (none written yet: `None`).
    applied_rules: Option<(BTreeSet<Link>, f64)>,
    /// Every link's delay while no latency fault is in force: the scenario's network preset
    /// ([`preset_delay`]); `None`, the machine's own loopback.
    base_latency: Option<Delay>,
}

impl<'a> Timeline<'a> {
    fn new(faults: &'a [PlannedFault]) -> Self {
        let mut pending = Vec::new();
        for (i, fault) in faults.iter().enumerate() {
            pending.push((fault.at.as_nanos() as u64, Action::Start(i)));
            pending.push((fault.end().as_nanos() as u64, Action::End(i)));
        }
        // Ends before starts at one instant, then plan order: a fault that ends as another starts
        // releases its node first. An instantaneous fault (a clock jump) ends after it starts.
        let rank = |action: &Action| match action {
            Action::End(i) if faults[*i].end() == faults[*i].at => 2,
            Action::Start(_) => 1,
            Action::End(_) => 0,
        };
        pending.sort_by_key(|(at, action)| (*at, rank(action), action_index(*action)));
        pending.reverse();
        Timeline {
            faults,
            pending,
            active: Vec::new(),
            cuts: Default::default(),
            composed: Composition::default(),
            link_delays: Default::default(),
            lost: Default::default(),
            applied_rules: None,
            base_latency: None,
        }
    }

    /// Each node's lost replies under the active `drop-replies` faults: the widest kind when
    /// several hit one node (all, then writes, then creates, then pings).
    fn lost_replies(&self) -> std::collections::BTreeMap<String, LostReplies> {
        let rank = |lost: LostReplies| match lost {
            LostReplies::All => 4,
            LostReplies::Writes => 3,
            LostReplies::Creates => 2,
            LostReplies::Pings => 1,
            LostReplies::None => 0,
        };
        let mut table = std::collections::BTreeMap::new();
        for (node, kind) in self.lost.values() {
            let lost = lost_replies(*kind);
            let entry = table.entry(node.clone()).or_insert(LostReplies::None);
            if rank(lost) > rank(*entry) {
                *entry = lost;
            }
        }
        table
    }

    /// Starts fault `index` if it is packet loss, latency or a link delay: its kind, targets and
    /// detail, as the simulator's nemesis records them (sim/src/nemesis/mod.rs).
    fn start_network_fault(&mut self, index: usize) -> Option<(FaultKind, Vec<String>, String)> {
        let planned = &self.faults[index];
        match &planned.fault {
            Fault::PacketLoss { rate } => {
                self.composed.add_loss(planned.id, *rate);
                Some((FaultKind::PacketLoss, Vec::new(), compose::loss_detail(*rate)))
            }
            Fault::Latency { min, max } => {
                self.composed.add_latency(planned.id, *min..*max);
                Some((FaultKind::Latency, Vec::new(), compose::latency_detail(*min, *max)))
            }
            Fault::LinkDelay { from, to, delay } => {
                self.link_delays.insert(index, (from.clone(), to.clone(), *delay));
                let detail = compose::link_delay_detail(from, to, *delay);
                Some((FaultKind::LinkDelay, vec![from.clone(), to.clone()], detail))
            }
            _ => None,
        }
    }

    /// Ends fault `index` if it is packet loss, latency or a link delay: its kind.
    fn end_network_fault(&mut self, index: usize) -> Option<FaultKind> {
        let id = self.faults[index].id;
        if self.composed.remove_loss(id).is_some() {
            Some(FaultKind::PacketLoss)
        } else if self.composed.remove_latency(id).is_some() {
            Some(FaultKind::Latency)
        } else if self.link_delays.remove(&index).is_some() {
            Some(FaultKind::LinkDelay)
        } else {
            None
        }
    }

    /// The loss rate now: the highest active one, as in the simulator.
    fn loss(&self) -> f64 {
        self.composed.loss()
    }

    /// The latency now: the latest-starting active fault's range, as in the simulator (plan order
    /// is start order), else the network preset's.
    fn latency(&self) -> Option<Delay> {
        self.composed.latency().map(|range| Delay { min: range.start, max: range.end }).or(self.base_latency)
    }

    fn next_due(&mut self, now: u64) -> Option<(u64, Action)> {
        if self.pending.last().is_some_and(|(at, _)| *at <= now) { self.pending.pop() } else { None }
    }

    fn next_at(&self) -> Option<u64> {
        self.pending.last().map(|(at, _)| *at)
    }

    /// Moves the end of an active fault to now (the run is ending).
    fn end_early(&mut self, index: usize) {
        self.pending.retain(|(_, action)| !matches!(action, Action::End(i) if *i == index));
        self.pending.push((0, Action::End(index)));
    }
}

/// A line for the reader when the installed etcd (`installed`) behaves differently from the
/// release the scenario stands for (`cluster.etcd.version`, default 3.5) in a behaviour this
/// run can reach: lease checkpoints scheduled by a new leader (with `lease_checkpoint` on), a
/// stalled leader's revocations (a pause, slow disk or slow CPU that may hit a server), or a
/// deletion at the compact revision (key-value watchers with compaction). The
/// run's verdicts are judged against the scenario's expectations all the same; where they
/// differ, this says why they may. `None`: nothing reachable differs.
pub fn release_note(scenario: &Scenario, faults: &[PlannedFault], installed: EtcdRelease) -> Option<String> {
    let named = scenario.cluster.etcd.release();
    let stalls_a_server = faults.iter().any(|planned| match &planned.fault {
        Fault::Pause { target } | Fault::SlowDisk { target, .. } | Fault::SlowCpu { target, .. } => match target {
            Target::Node(name) => name.starts_with('s'),
            Target::AnyClient => false,
            Target::Leader | Target::Follower | Target::AnyServer | Target::AnyNode => true,
        },
        _ => false,
    });
    let reached: Vec<String> = installed
        .differences_from(&named)
        .into_iter()
        .filter(|difference| match difference {
            ReleaseDifference::CheckpointsOnPromotion => scenario.cluster.etcd.lease_checkpoint,
            ReleaseDifference::RevocationsAfterStepDown => stalls_a_server,
            ReleaseDifference::TombstoneAtCompactRevision => {
                scenario.kv.as_ref().is_some_and(|kv| kv.watchers > 0 && !kv.compact_every.0.is_zero())
            }
        })
        .map(|difference| difference.to_string())
        .collect();
    (!reached.is_empty()).then(|| {
        format!(
            "note: the scenario stands for etcd {named} (cluster.etcd.version), the installed etcd is {installed}; they \
             differ in {}, which this run can reach: where its verdicts differ from the scenario's expectations, \
             that may be why",
            reached.join(", and ")
        )
    })
}

/// The delay each link's proxy holds a chunk back under the scenario's network preset
/// (`[timing] network_preset`, `--network`): uniform between the preset's one-way minimum and
/// its p90 (the proxies draw from a range; the preset's median and mean fall inside it, its
/// tail beyond the p90 is left out). `None` without a preset.
pub fn preset_delay(scenario: &Scenario) -> Option<Delay> {
    let name = scenario.timing.as_ref()?.network_preset.as_ref()?;
    let latency = coordsim_sim::timing::network_preset(name)?.network.latency;
    Some(Delay { min: latency.at(0.0), max: latency.at(0.9) })
}

fn is_network_fault(fault: &Fault) -> bool {
    matches!(
        fault,
        Fault::Partition { .. }
            | Fault::PacketLoss { .. }
            | Fault::Latency { .. }
            | Fault::LinkDelay { .. }
            | Fault::DropReplies { .. }
    )
}

/// Makes the namespaces' rules and the link proxies' delays those of the active faults.
/// The namespaces' rules are rewritten only when the cuts or the loss change: one rewrite costs
/// about 20 ms per namespace (an `nft` process each), and a plan of nine link delays that start
/// 100 ms apart would otherwise start them 130 ms apart.
fn push_network(timeline: &mut Timeline<'_>, hosts: &Hosts, links: &mut Option<LinkControl>) -> Result<(), String> {
    let net = hosts.net.as_ref().expect("a plan with network faults runs in namespaces");
    let rules = (timeline.composed.cut_links().cloned().collect(), timeline.loss());
    if timeline.applied_rules.as_ref() != Some(&rules) {
        net.apply(&rules.0, rules.1)?;
        timeline.applied_rules = Some(rules);
    }
    if let Some(control) = links {
        let link_delays: Vec<_> = timeline.link_delays.values().cloned().collect();
        control
            .set(&crate::links::delays(&control.nodes(), timeline.latency(), &link_delays), &timeline.lost_replies())?;
    }
    Ok(())
}

/// The replies a link loses for one `drop-replies` kind (real/src/zk_frames.rs).
fn lost_replies(kind: ReplyKind) -> LostReplies {
    match kind {
        ReplyKind::KeepAlive => LostReplies::Pings,
        ReplyKind::Create => LostReplies::Creates,
        ReplyKind::Write => LostReplies::Writes,
        ReplyKind::All => LostReplies::All,
    }
}

/// A clock step's kind, node and detail (as the simulator's nemesis words it).
fn clock_fault(fault: &Fault) -> Option<(FaultKind, String, String)> {
    let signed = |ns: i64| format!("{}{} ms", if ns < 0 { "-" } else { "+" }, ns.unsigned_abs() / 1_000_000);
    match fault {
        Fault::ClockJump { node, by_ns } => {
            Some((FaultKind::ClockJump, node.clone(), format!("by {}", signed(*by_ns))))
        }
        Fault::ClockStrobe { node, by_ns, period } => {
            Some((FaultKind::ClockStrobe, node.clone(), format!("{} every {} ms", signed(*by_ns), period.as_millis())))
        }
        _ => None,
    }
}

fn action_index(action: Action) -> usize {
    match action {
        Action::Start(i) | Action::End(i) => i,
    }
}

#[allow(clippy::too_many_arguments)]
fn apply<C: Cluster>(
    action: Action,
    timeline: &mut Timeline<'_>,
    cluster: &mut C,
    procs: &Procs,
    hosts: &Hosts,
    journal: &Journal,
    leader: &Option<String>,
    dirs: &RunDirs,
    exe: &Path,
    base: &ClientConfig,
    clients: &mut [ClientProc],
    links: &mut Option<LinkControl>,
) -> Result<(), String> {
    match action {
        Action::Start(index) => {
            let planned = &timeline.faults[index];
            if let Some((kind, targets, detail)) = timeline.start_network_fault(index) {
                push_network(timeline, hosts, links)?;
                let event =
                    Event::Fault { fault: planned.id, phase: Phase::Start, kind, targets: targets.clone(), detail };
                journal.record(NEMESIS, event);
                timeline.active.push((index, targets));
                return Ok(());
            }
            if let Fault::Partition { shape } = &planned.fault {
                let (cut, targets, detail) = partition(shape, cluster, clients, leader, planned.id);
                timeline.composed.cut(cut.iter().cloned());
                timeline.cuts.insert(index, cut);
                push_network(timeline, hosts, links)?;
                let event = Event::Fault {
                    fault: planned.id,
                    phase: Phase::Start,
                    kind: FaultKind::Partition,
                    targets: targets.clone(),
                    detail,
                };
                journal.record(NEMESIS, event);
                timeline.active.push((index, targets));
                return Ok(());
            }
            if let Fault::DropReplies { target, replies } = &planned.fault {
                let Some(node) = resolve(target, cluster, clients, leader, planned.id) else { return Ok(()) };
                timeline.lost.insert(index, (node.clone(), *replies));
                push_network(timeline, hosts, links)?;
                let event = Event::Fault {
                    fault: planned.id,
                    phase: Phase::Start,
                    kind: FaultKind::DropReplies,
                    targets: vec![node.clone()],
                    detail: format!("drop {} replies", replies.name()),
                };
                journal.record(NEMESIS, event);
                timeline.active.push((index, vec![node]));
                return Ok(());
            }
            // A clock step's files are written by the run's `ClockSteps`; the fault is recorded here.
            if let Some((kind, node, detail)) = clock_fault(&planned.fault) {
                let event =
                    Event::Fault { fault: planned.id, phase: Phase::Start, kind, targets: vec![node.clone()], detail };
                journal.record(NEMESIS, event);
                timeline.active.push((index, vec![node]));
                return Ok(());
            }
            let (kind, target) = match &planned.fault {
                Fault::Pause { target } => (FaultKind::Pause, target),
                Fault::Crash { target } => (FaultKind::Crash, target),
                other => unreachable!("checked before the run: {other:?}"),
            };
            let Some(node) = resolve(target, cluster, clients, leader, planned.id) else {
                return Ok(());
            };
            let pid = procs.pid(&node);
            // Faults on one node compose as in the simulator: it runs again when the last of its
            // pauses ends, and restarts when the last of its crashes ends.
            match kind {
                FaultKind::Pause => {
                    if timeline.composed.pause(&node)
                        && !timeline.composed.is_crashed(&node)
                        && let Some(pid) = pid
                    {
                        procs::signal(pid, libc::SIGSTOP);
                    }
                }
                _ if timeline.composed.crash(&node) => {
                    if cluster.servers().contains(&node) {
                        cluster.crash(&node);
                    } else {
                        procs.kill(&node);
                    }
                }
                _ => {}
            }
            let detail = match pid {
                Some(pid) => format!("{kind} {node} (pid {pid})", kind = kind.name()),
                None => format!("{kind} {node}", kind = kind.name()),
            };
            journal.record(
                NEMESIS,
                Event::Fault { fault: planned.id, phase: Phase::Start, kind, targets: vec![node.clone()], detail },
            );
            timeline.active.push((index, vec![node]));
        }
        Action::End(index) => {
            let Some(position) = timeline.active.iter().position(|(i, _)| *i == index) else { return Ok(()) };
            let (_, targets) = timeline.active.remove(position);
            let planned = &timeline.faults[index];
            if let Some(kind) = timeline.end_network_fault(index) {
                push_network(timeline, hosts, links)?;
                let event = Event::Fault { fault: planned.id, phase: Phase::End, kind, targets, detail: String::new() };
                journal.record(NEMESIS, event);
                return Ok(());
            }
            if let Some(cut) = timeline.cuts.remove(&index) {
                timeline.composed.heal(cut);
                push_network(timeline, hosts, links)?;
                let event = Event::Fault {
                    fault: planned.id,
                    phase: Phase::End,
                    kind: FaultKind::Partition,
                    targets,
                    detail: String::new(),
                };
                journal.record(NEMESIS, event);
                return Ok(());
            }
            if timeline.lost.remove(&index).is_some() {
                push_network(timeline, hosts, links)?;
                let kind = FaultKind::DropReplies;
                let event = Event::Fault { fault: planned.id, phase: Phase::End, kind, targets, detail: String::new() };
                journal.record(NEMESIS, event);
                return Ok(());
            }
            if let Some((kind, ..)) = clock_fault(&planned.fault) {
                let event = Event::Fault { fault: planned.id, phase: Phase::End, kind, targets, detail: String::new() };
                journal.record(NEMESIS, event);
                return Ok(());
            }
            let kind = match planned.fault {
                Fault::Pause { .. } => FaultKind::Pause,
                _ => FaultKind::Crash,
            };
            for node in &targets {
                match kind {
                    FaultKind::Pause => {
                        if timeline.composed.resume(node)
                            && !timeline.composed.is_crashed(node)
                            && let Some(pid) = procs.pid(node)
                        {
                            procs::signal(pid, libc::SIGCONT);
                        }
                    }
                    _ if timeline.composed.restart(node) => {
                        if cluster.servers().contains(node) {
                            cluster.restart(node)?;
                        } else if let Some(client) = clients.iter_mut().find(|c| &c.name == node) {
                            // A crashed client starts again at once, as in the simulator.
                            client.incarnation += 1;
                            spawn_client(procs, hosts, dirs, exe, base, client, 0)?;
                        }
                        // Still paused by another fault: it comes back paused.
                        if timeline.composed.is_paused(node)
                            && let Some(pid) = procs.pid(node)
                        {
                            procs::signal(pid, libc::SIGSTOP);
                        }
                    }
                    _ => {}
                }
            }
            journal.record(
                NEMESIS,
                Event::Fault { fault: planned.id, phase: Phase::End, kind, targets, detail: String::new() },
            );
        }
    }
    Ok(())
}

/// The node a fault hits. Random choices (`server`, `client`, `any`, `follower`) are drawn from
/// the fault's id, so a run of the same plan hits the same nodes.
fn resolve<C: Cluster>(
    target: &Target,
    cluster: &C,
    clients: &[ClientProc],
    leader: &Option<String>,
    id: u64,
) -> Option<String> {
    let servers = cluster.servers();
    let names: Vec<String> = clients.iter().map(|c| c.name.clone()).collect();
    let pick = |from: &[String]| (!from.is_empty()).then(|| from[(id as usize * 7919) % from.len()].clone());
    match target {
        Target::Node(name) => Some(name.clone()),
        Target::Leader => leader.clone().or_else(|| pick(&servers)),
        Target::Follower => {
            let followers: Vec<String> = servers.iter().filter(|s| Some(*s) != leader.as_ref()).cloned().collect();
            pick(&followers)
        }
        Target::AnyServer => pick(&servers),
        Target::AnyClient => pick(&names),
        Target::AnyNode => pick(&[servers, names].concat()),
    }
}

/// The links a partition cuts, the nodes it names and its description, as the simulator's
/// nemesis draws them (sim/src/nemesis/mod.rs), with the server order rotated by the fault's id
/// where the simulator shuffles it. The resource stays reachable: it is not a node of the network.
fn partition<C: Cluster>(
    shape: &Partition,
    cluster: &C,
    clients: &[ClientProc],
    leader: &Option<String>,
    id: u64,
) -> (BTreeSet<Link>, Vec<String>, String) {
    let servers = cluster.servers();
    let names: Vec<String> = clients.iter().map(|c| c.name.clone()).collect();
    let all: Vec<String> = servers.iter().chain(&names).cloned().collect();
    let node = |target: &Target| resolve(target, cluster, clients, leader, id).unwrap_or_else(|| servers[0].clone());
    let mut order = servers.clone();
    order.rotate_left(id as usize % servers.len().max(1));
    match shape {
        Partition::Isolate(target) => {
            let member = node(target);
            (links::isolate(&member, &all), vec![member.clone()], format!("isolate {member}"))
        }
        Partition::CutFromServers(target) => {
            let member = node(target);
            let detail = format!("{member} cut from the other servers");
            (links::between(std::slice::from_ref(&member), &servers), vec![member], detail)
        }
        Partition::MajorityMinority => {
            let (cut, minority, majority) = links::majority_minority(&order);
            let detail = format!("cut {} | {}", minority.join(" "), majority.join(" "));
            (cut, minority, detail)
        }
        Partition::Ring => (links::ring(&order), order.clone(), format!("ring {}", order.join(" "))),
        Partition::Bridge => {
            let (cut, middle) = links::bridge(&order);
            (cut, order.clone(), format!("bridge {} via {middle}", order.join(" ")))
        }
        Partition::OneWay { from, to } => {
            let (from, to) = (node(from), node(to));
            let detail = format!("{from} cannot reach {to}");
            ([(from.clone(), to.clone())].into_iter().collect(), vec![from, to], detail)
        }
        Partition::Clients(chosen) => {
            let chosen = chosen.clone().unwrap_or(names);
            let detail = format!("clients {} cut from servers", chosen.join(" "));
            (links::between(&chosen, &servers), chosen, detail)
        }
        Partition::Servers => (links::between(&servers, &servers), servers, "servers cut from each other".into()),
    }
}

/// Joins the journals into one history (entries in true-time order; ties keep journal order).
/// Removes the `lease_expiry` record of a lease its owner revoked before the record's latest
/// time: the observer saw the lease go, but its owner ended it (a ZooKeeper client closing its
/// session vanishes from the leader's tracker as an expired one does). A revocation answered
/// "expired" ended nothing and does not count.
fn drop_closed_sessions(entries: &mut Vec<coordsim_checker::history::Entry>) {
    use coordsim_checker::history::Call;
    let mut invoked: std::collections::BTreeMap<u64, (i64, u64)> = std::collections::BTreeMap::new();
    let mut revoked: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
    for entry in entries.iter() {
        match &entry.event {
            Event::Invoke { op, call: Call::LeaseRevoke { lease } } => {
                invoked.insert(*op, (*lease, entry.time_ns));
            }
            Event::Ok { op, .. } | Event::Info { op, .. } => {
                if let Some((lease, at)) = invoked.remove(op) {
                    revoked.entry(lease).or_insert(at);
                }
            }
            Event::Fail { op, .. } => {
                invoked.remove(op);
            }
            _ => {}
        }
    }
    // Never answered: the client died or the run ended with the close in flight.
    for (lease, at) in invoked.into_values() {
        revoked.entry(lease).or_insert(at);
    }
    entries.retain(|entry| match &entry.event {
        Event::LeaseExpiry { lease, latest_ns } => {
            revoked.get(lease).is_none_or(|at| *at > latest_ns.unwrap_or(entry.time_ns))
        }
        _ => true,
    });
}

fn merge(
    scenario: &Scenario,
    system: System,
    run: u64,
    duration_ns: u64,
    own: &[PathBuf],
    clients: &[ClientProc],
    observation: LeaseObservation,
) -> Result<History, String> {
    let servers = scenario.cluster.servers;
    let mut entries = Vec::new();
    for path in own {
        entries.extend(journal::read(path)?);
    }
    for client in clients {
        for path in &client.journals {
            // A client killed before it wrote anything leaves no journal.
            if path.exists() {
                entries.extend(journal::read(path)?);
            }
        }
    }
    entries.sort_by_key(|entry| entry.time_ns);
    drop_closed_sessions(&mut entries);
    let last = entries.last().map_or(0, |e| e.time_ns);
    let mut nodes: Vec<NodeInfo> =
        (1..=servers).map(|i| NodeInfo { name: format!("s{i}"), role: NodeRole::Server }).collect();
    nodes.extend(clients.iter().map(|c| NodeInfo { name: c.name.clone(), role: NodeRole::Client }));
    nodes.push(NodeInfo { name: RESOURCE.to_string(), role: NodeRole::Resource });
    let history = History {
        schema: SCHEMA.to_string(),
        scenario: scenario.name.clone(),
        seed: run,
        duration_ns: duration_ns.max(last),
        nodes,
        entries,
        recorded_on: Some(format!("real {}", system.name())),
        time_model: None,
        service_timing: Some(match system {
            System::Etcd => {
                crate::cluster::etcd::service_timing(crate::cluster::etcd::RaftFlags::of(&scenario.cluster))
            }
            System::Zookeeper => crate::cluster::zookeeper::service_timing(),
        }),
        lease_observation: Some(observation),
        // The servers' queues are not watched from outside: their own counters at the run's end
        // are in cluster/server-metrics.txt.
        queues: Vec::new(),
    };
    history.validate().map_err(|error| format!("the merged history is invalid (a bug in coordsim real): {error}"))?;
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seen in a real ZooKeeper run (swarm-no-unique-tag-in-sequential-create): a session left
    /// out of one `dump` and renewed for 38 s after. One answer without a lease is a miss where
    /// two are needed; the expiry, once confirmed, dates from the last answer that had it.
    #[test]
    fn a_lease_missing_from_one_listing_is_gone_only_when_enough_answers_confirm_it() {
        let set = |ids: &[i64]| ids.iter().copied().collect::<std::collections::BTreeSet<i64>>();
        let mut seen = Sessions::default();
        assert!(seen.answer(&set(&[7, 8]), 100, 2).is_empty());
        assert!(seen.answer(&set(&[8]), 200, 2).is_empty(), "7 missed once");
        assert!(seen.answer(&set(&[7, 8]), 300, 2).is_empty(), "7 was missed, not gone");
        assert!(seen.answer(&set(&[8]), 400, 2).is_empty());
        assert_eq!(seen.answer(&set(&[8]), 500, 2), vec![(7, 300)], "gone after its last sighting at 300");
        assert!(seen.answer(&set(&[8]), 600, 2).is_empty(), "recorded once");
        // Where a listing is exact, one answer is enough.
        let mut exact = Sessions::default();
        exact.answer(&set(&[7]), 100, 1);
        assert_eq!(exact.answer(&set(&[]), 200, 1), vec![(7, 100)]);
    }

    /// A session its client closed vanishes as an expired one does: its observed expiry goes.
    #[test]
    fn a_closed_sessions_observed_expiry_is_dropped_and_a_failed_close_keeps_it() {
        use coordsim_checker::history::{Call, Entry, Return};
        let at = |ms: u64, node: &str, event: Event| Entry { time_ns: ms * 1_000_000, node: node.into(), event };
        let expiry = |lease: i64, ms: u64| Event::LeaseExpiry { lease, latest_ns: Some(ms * 1_000_000) };
        let mut entries = vec![
            at(100, "c1", Event::Invoke { op: 1, call: Call::LeaseRevoke { lease: 7 } }),
            at(110, "c1", Event::Ok { op: 1, ret: Return::LeaseRevoked }),
            at(150, "s1", expiry(7, 250)),
            at(100, "c2", Event::Invoke { op: 2, call: Call::LeaseRevoke { lease: 8 } }),
            at(110, "c2", Event::Fail { op: 2, error: "session expired".into() }),
            at(90, "s1", expiry(8, 95)),
            at(900, "c3", Event::Invoke { op: 3, call: Call::LeaseRevoke { lease: 9 } }),
            at(150, "s1", expiry(9, 250)),
        ];
        drop_closed_sessions(&mut entries);
        let expiries: Vec<i64> = entries
            .iter()
            .filter_map(|e| match e.event {
                Event::LeaseExpiry { lease, .. } => Some(lease),
                _ => None,
            })
            .collect();
        assert_eq!(expiries, vec![8, 9], "7 was closed; 8's close failed; 9 expired before its close");
    }

    fn scenario(text: &str) -> Scenario {
        toml::from_str(text).expect("a scenario")
    }

    const BASE: &str = r#"
name = "t"
summary = "s"
description = "d"
duration = "10s"
[cluster]
servers = 3
[lock]
recipe = "etcd-mutex"
name = "/locks/r"
ttl = "5s"
[resource]
mode = "fenced"
[clients]
count = 2
"#;

    #[test]
    fn the_installed_etcd_is_named_only_where_a_difference_can_be_reached() {
        let installed: EtcdRelease = "3.4.23".parse().unwrap();
        let pause =
            |target: &str| format!("[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"pause\"\ntarget = \"{target}\"\n");
        let note = |text: String| {
            let s = scenario(&text);
            let faults = check(&s, System::Etcd, 1).unwrap();
            release_note(&s, &faults, installed)
        };
        // 3.5 (the default) and 3.4.23 differ in a stalled leader's revocations: reached by a
        // pause of the leader, not by a client's.
        let leader = note(format!("{BASE}{}", pause("leader"))).expect("a note");
        assert!(leader.contains("etcd 3.5") && leader.contains("3.4.23") && leader.contains("3.4.31"), "{leader}");
        assert_eq!(note(format!("{BASE}{}", pause("c1"))), None);
        // A scenario naming the installed release has nothing to say.
        let named =
            BASE.replace("[cluster]\nservers = 3\n", "[cluster]\nservers = 3\n[cluster.etcd]\nversion = \"3.4.23\"\n");
        assert_eq!(note(format!("{named}{}", pause("leader"))), None);
        // And in a deletion at the compact revision: reached by key-value watchers with compaction.
        let kv = |extra: &str| {
            format!(
                "name = \"t\"\nsummary = \"s\"\nduration = \"10s\"\n[cluster]\nservers = 3\n[kv]\nkeys = 3\n\
                 interval = \"50ms\"\n{extra}\n[clients]\ncount = 3\n"
            )
        };
        let watched = note(kv("watchers = 1\ncompact_every = \"1s\"")).expect("a note");
        assert!(watched.contains("compact revision") && watched.contains("3.4.34"), "{watched}");
        assert_eq!(note(kv("watchers = 1")), None, "no compaction");
        assert_eq!(note(kv("compact_every = \"1s\"")), None, "no watcher");
    }

    #[test]
    fn a_network_preset_delays_every_link_from_its_minimum_to_its_p90() {
        let wan = BASE.replace(
            "[cluster]\nservers = 3\n",
            "[cluster]\nservers = 3\nheartbeat_interval = \"100ms\"\nelection_timeout = \"1s\"\n[timing]\nnetwork_preset = \"wan\"\n",
        );
        let delay = preset_delay(&scenario(&wan)).expect("a delay");
        assert_eq!(delay, Delay { min: Duration::from_millis(30), max: Duration::from_millis(38) });
        assert_eq!(preset_delay(&scenario(BASE)), None);
        assert_eq!(crate::cluster::etcd::RaftFlags::of(&scenario(&wan).cluster).heartbeat_ms, 100);
        assert_eq!(crate::cluster::etcd::RaftFlags::of(&scenario(BASE).cluster), Default::default());
    }

    #[test]
    fn a_lock_scenario_with_a_pause_runs_on_etcd_but_not_on_zookeeper() {
        let s = scenario(&format!("{BASE}[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"pause\"\ntarget = \"c1\"\n"));
        assert_eq!(check(&s, System::Etcd, 1).unwrap().len(), 1);
        let error = check(&s, System::Zookeeper, 1).unwrap_err();
        assert_eq!(error.field, "lock.recipe");
    }

    #[test]
    fn each_client_starts_once_its_predecessor_has_asked_for_the_lock() {
        let dir = std::env::temp_dir().join(format!("coordsim-start-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c1_journal = dir.join("c1.0.jsonl");
        let client = |index: usize| ClientProc {
            name: format!("c{}", index + 1),
            index,
            kv_role: None,
            incarnation: 0,
            journals: Vec::new(),
        };
        let mut pending: std::collections::VecDeque<(ClientProc, u64)> =
            [(client(0), 500_000_000), (client(1), 1_000_000_000)].into();
        let mut started = Vec::new();
        let mut spawned = Vec::new();
        let mut spawn = |c: &mut ClientProc, start_ns: u64| {
            c.journals.push(dir.join(format!("{}.0.jsonl", c.name)));
            spawned.push((c.name.clone(), start_ns));
            Ok(())
        };
        // c1 at once (it sleeps until its start itself); c2 waits: c1 has not queued, even past
        // c2's planned start.
        start_due_clients(&mut pending, &mut started, 0, true, &mut spawn).unwrap();
        start_due_clients(&mut pending, &mut started, 2_000_000_000, true, &mut spawn).unwrap();
        assert_eq!(started.len(), 1);
        // A session is not enough; the lock call is.
        std::fs::write(&c1_journal, "{\"time_ns\":1,\"node\":\"c1\",\"type\":\"invoke\",\"op\":1,\"call\":{\"f\":\"lease_grant\",\"ttl_ms\":5000}}\n").unwrap();
        start_due_clients(&mut pending, &mut started, 2_000_000_000, true, &mut spawn).unwrap();
        assert_eq!(started.len(), 1);
        let lock = "{\"time_ns\":2,\"node\":\"c1\",\"type\":\"invoke\",\"op\":2,\"call\":{\"f\":\"lock\",\"name\":\"/l\",\"lease\":1,\"permits\":1}}\n";
        std::fs::write(&c1_journal, lock).unwrap();
        start_due_clients(&mut pending, &mut started, 2_000_000_000, true, &mut spawn).unwrap();
        assert_eq!(spawned, vec![("c1".to_string(), 500_000_000), ("c2".to_string(), 1_000_000_000)]);
        // A predecessor that never queues holds the next client back for QUEUE_WAIT at most.
        let mut pending: std::collections::VecDeque<(ClientProc, u64)> = [(client(2), 1_000_000_000)].into();
        let mut started = vec![client(1)];
        let mut spawned = Vec::new();
        let mut spawn = |c: &mut ClientProc, start_ns: u64| {
            spawned.push((c.name.clone(), start_ns));
            Ok(())
        };
        start_due_clients(&mut pending, &mut started, 10_999_000_000, true, &mut spawn).unwrap();
        assert_eq!(started.len(), 1, "c3 still waits");
        start_due_clients(&mut pending, &mut started, 11_000_000_000, true, &mut spawn).unwrap();
        assert_eq!(spawned, vec![("c3".to_string(), 1_000_000_000)]);
        // Clients that start at the same instant start together: no order to keep.
        let mut pending: std::collections::VecDeque<(ClientProc, u64)> =
            [(client(0), 500_000_000), (client(1), 500_000_000)].into();
        let mut started = Vec::new();
        start_due_clients(&mut pending, &mut started, 0, false, |_, _| Ok(())).unwrap();
        assert_eq!(started.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn faults_without_a_real_counterpart_and_server_bug_switches_are_refused_by_field() {
        let rate = format!(
            "{BASE}[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"clock-rate\"\ntarget = \"c1\"\nrate = 0.5\n"
        );
        assert!(
            check(&scenario(&rate), System::Etcd, 1).unwrap_err().field.starts_with("nemesis fault 1 (clock-rate)")
        );
        // Network faults run in namespaces: where they can be made, they are accepted.
        let partition = format!(
            "{BASE}[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"partition\"\nshape = \"isolate\"\ntarget = \"leader\"\n"
        );
        let loss = format!("{BASE}[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"packet-loss\"\nrate = 0.5\n");
        let latency =
            format!("{BASE}[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"latency\"\nmin = \"1ms\"\nmax = \"9ms\"\n");
        let slow = format!(
            "{BASE}[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"link-delay\"\nfrom = \"c1\"\nto = \"s1\"\ndelay = \"30ms\"\n"
        );
        for text in [partition, loss, latency, slow] {
            let checked = check(&scenario(&text), System::Etcd, 1);
            match crate::netns::unavailable() {
                None => assert!(checked.is_ok(), "{checked:?}"),
                Some(_) => assert!(checked.unwrap_err().message.contains("network namespace")),
            }
        }
        let bug = format!("{BASE}[bugs]\nttl_reset_on_leader_change = true\n");
        assert_eq!(check(&scenario(&bug), System::Etcd, 1).unwrap_err().field, "bugs.ttl_reset_on_leader_change");
    }

    #[test]
    fn lock_entries_outliving_their_session_and_keepalives_between_holds_are_refused_by_field() {
        let lease = BASE.replace("ttl = \"5s\"", "ttl = \"5s\"\nlease = false");
        assert_eq!(check(&scenario(&lease), System::Etcd, 1).unwrap_err().field, "lock.lease");
        let zk = BASE.replace("etcd-mutex", "zk-queue-lock").replace("ttl = \"5s\"", "ttl = \"5s\"\nephemeral = false");
        assert_eq!(check(&scenario(&zk), System::Zookeeper, 1).unwrap_err().field, "lock.ephemeral");
        let keepalive = BASE.replace("ttl = \"5s\"", "ttl = \"5s\"\nkeepalive = \"between-holds\"");
        assert_eq!(check(&scenario(&keepalive), System::Etcd, 1).unwrap_err().field, "lock.keepalive");
    }

    #[test]
    fn observers_and_a_watch_event_cost_are_refused_by_field() {
        let cost = BASE.replace("servers = 3", "servers = 3\nwatch_event_cost = \"1ms\"");
        assert_eq!(check(&scenario(&cost), System::Etcd, 1).unwrap_err().field, "cluster.watch_event_cost");
        let observers = format!("{BASE}[observers]\ncount = 10\n");
        assert_eq!(check(&scenario(&observers), System::Etcd, 1).unwrap_err().field, "observers");
    }

    #[test]
    fn the_key_value_workload_runs_on_its_own_apis_system_watchers_on_etcd_and_the_rest_is_refused_by_field() {
        let kv = |api: &str, extra: &str| {
            format!(
                "name = \"t\"\nsummary = \"s\"\nduration = \"10s\"\n[cluster]\nservers = 3\n[kv]\n{api}\nkeys = 3\n\
                 interval = \"50ms\"\nupdates = 0.5\nwork = \"1s\"\nreaders = 1\n{extra}\n[clients]\ncount = 3\n"
            )
        };
        let etcd = kv("etcd_reads = \"serializable\"", "");
        assert!(check(&scenario(&etcd), System::Etcd, 1).is_ok(), "etcd's API on real etcd");
        assert_eq!(check(&scenario(&etcd), System::Zookeeper, 1).unwrap_err().field, "kv.api");
        let zookeeper = kv("api = \"zookeeper\"\nzk_reads = \"sync\"", "");
        assert!(check(&scenario(&zookeeper), System::Zookeeper, 1).is_ok(), "ZooKeeper's API on real ZooKeeper");
        assert_eq!(check(&scenario(&zookeeper), System::Etcd, 1).unwrap_err().field, "kv.api");
        let watched = kv("", "watchers = 1");
        assert!(check(&scenario(&watched), System::Etcd, 1).is_ok(), "watchers on real etcd");
        let watched = kv("api = \"zookeeper\"", "watchers = 1");
        assert_eq!(check(&scenario(&watched), System::Zookeeper, 1).unwrap_err().field, "kv.watchers");
    }

    #[test]
    fn the_timeline_holds_the_highest_loss_and_the_latest_latency_as_the_simulator_does() {
        let text = format!(
            "{BASE}[[nemesis]]\nat = \"1s\"\nfor = \"9s\"\nkind = \"packet-loss\"\nrate = 0.3\n\
             [[nemesis]]\nat = \"2s\"\nfor = \"2s\"\nkind = \"packet-loss\"\nrate = 0.1\n\
             [[nemesis]]\nat = \"3s\"\nfor = \"5s\"\nkind = \"latency\"\nmin = \"1ms\"\nmax = \"9ms\"\n\
             [[nemesis]]\nat = \"4s\"\nfor = \"1s\"\nkind = \"latency\"\nmin = \"100ms\"\nmax = \"200ms\"\n"
        );
        let faults = plan::plan(&scenario(&text), 1);
        let mut timeline = Timeline::new(&faults);
        for index in 0..4 {
            assert!(timeline.start_network_fault(index).is_some());
        }
        assert_eq!(timeline.loss(), 0.3, "the highest rate");
        let ms = Duration::from_millis;
        assert_eq!(timeline.latency(), Some(Delay { min: ms(100), max: ms(200) }), "the latest start");
        assert_eq!(timeline.end_network_fault(0), Some(FaultKind::PacketLoss));
        assert_eq!(timeline.end_network_fault(3), Some(FaultKind::Latency));
        assert_eq!((timeline.loss(), timeline.latency()), (0.1, Some(Delay { min: ms(1), max: ms(9) })));
        assert_eq!(timeline.end_network_fault(3), None, "ended once");
    }

    /// A clock step runs on a client and a ZooKeeper server (libfaketime reads its offset from a
    /// file the orchestrator rewrites), never on an etcd member (Go reads the clock past libc),
    /// nor on a node whose `[[clock]]` runs at another rate; the steps and records are the
    /// simulator's schedule, and an instantaneous fault ends right after it starts.
    #[test]
    fn clock_steps_run_where_libfaketime_reaches_and_follow_the_simulators_schedule() {
        if !std::path::Path::new(FAKETIME_LIB).exists() {
            eprintln!("skipped: {FAKETIME_LIB} is missing (Debian faketime)");
            return;
        }
        let jump = |node: &str| {
            format!("{BASE}[[nemesis]]\nat = \"2s\"\nkind = \"clock-jump\"\ntarget = \"{node}\"\nby = \"-10s\"\n")
        };
        let faults = check(&scenario(&jump("c1")), System::Etcd, 1).expect("a client's wall clock steps");
        let zk = jump("s1").replace("etcd-mutex", "zk-queue-lock");
        assert!(check(&scenario(&zk), System::Zookeeper, 1).is_ok(), "so does a ZooKeeper server's");
        let error = check(&scenario(&jump("s1")), System::Etcd, 1).unwrap_err();
        assert!(error.field.starts_with("nemesis fault 1 (clock-jump)") && error.message.contains("vDSO"), "{error}");
        let slow = jump("c1").replace("[resource]", "[[clock]]\nnode = \"c1\"\nrate = 0.5\n\n[resource]");
        let error = check(&scenario(&slow), System::Etcd, 1).unwrap_err();
        assert!(error.message.contains("clock[0].rate"), "{error}");

        let dir = std::env::temp_dir().join(format!("coordsim-clock-steps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let steps = ClockSteps::new(&scenario(&jump("c1")), &faults, &dir);
        let env = clock_env(&scenario(&jump("c1")), &steps);
        let vars: Vec<&str> = env["c1"].iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            vars,
            ["LD_PRELOAD", "FAKETIME_TIMESTAMP_FILE", "FAKETIME_NO_CACHE", "FAKETIME_DONT_FAKE_MONOTONIC"]
        );
        let planned: Vec<(u64, &str, Option<i64>)> =
            steps.pending.iter().map(|(at, node, offset, _)| (*at, node.as_str(), *offset)).collect();
        assert_eq!(
            planned,
            [(0, "c1", Some(0)), (0, "c1", None), (2_000_000_000, "c1", Some(-10_000_000_000))],
            "wall and monotonic from the start, then the wall clock 10 s back"
        );
        steps.write_starts().unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("c1.faketime")).unwrap(), "+0.000000000\n");
        write_offset(&dir.join("c1.faketime"), -10_500_000_000).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("c1.faketime")).unwrap(), "-10.500000000\n");
        std::fs::remove_dir_all(&dir).unwrap();

        let mut timeline = Timeline::new(&faults);
        let order: Vec<String> =
            std::iter::from_fn(|| timeline.next_due(u64::MAX)).map(|(at, a)| format!("{at}:{a:?}")).collect();
        assert_eq!(order, ["2000000000:Start(0)", "2000000000:End(0)"]);
    }

    /// Lost replies run on both systems: the clients' link proxies read ZooKeeper's packets or
    /// etcd's HTTP/2 frames.
    #[test]
    fn lost_replies_run_on_both_systems() {
        let drop = |target: &str, recipe: &str| {
            let text = format!(
                "{BASE}[[nemesis]]\nat = \"2s\"\nfor = \"5s\"\nkind = \"drop-replies\"\ntarget = \"{target}\"\nreplies = \"create\"\n"
            );
            scenario(&text.replace("etcd-mutex", recipe))
        };
        if crate::netns::unavailable().is_none() {
            assert!(check(&drop("c1", "etcd-mutex"), System::Etcd, 1).is_ok());
            assert!(check(&drop("c1", "zk-queue-lock"), System::Zookeeper, 1).is_ok());
            assert!(check(&drop("client", "zk-queue-lock"), System::Zookeeper, 1).is_ok());
        }
        assert_eq!(lost_replies(ReplyKind::KeepAlive), LostReplies::Pings);
        assert_eq!(lost_replies(ReplyKind::Create), LostReplies::Creates);
    }

    #[test]
    fn the_timeline_ends_a_fault_before_one_starting_at_the_same_instant() {
        let s = scenario(&format!(
            "{BASE}[[nemesis]]\nat = \"1s\"\nfor = \"1s\"\nkind = \"pause\"\ntarget = \"c1\"\n\
             [[nemesis]]\nat = \"2s\"\nfor = \"1s\"\nkind = \"pause\"\ntarget = \"c1\"\n"
        ));
        let faults = check(&s, System::Etcd, 1).unwrap();
        let mut timeline = Timeline::new(&faults);
        let order: Vec<String> =
            std::iter::from_fn(|| timeline.next_due(u64::MAX)).map(|(at, a)| format!("{at}:{a:?}")).collect();
        assert_eq!(order, ["1000000000:Start(0)", "2000000000:End(0)", "2000000000:Start(1)", "3000000000:End(1)"]);
    }
}
