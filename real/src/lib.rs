//! coordsim-real: the simulator's lock workloads, faults and checkers against real etcd and
//! ZooKeeper clusters on this machine, as Jepsen does but without SSH, containers or a second
//! machine.
//!
//! - [`cluster`]: a 3-member etcd cluster or a ZooKeeper ensemble from Debian's packages on
//!   127.0.0.1 (free ports, data under the run's folder); [`procs`] kills every process it
//!   started, by pid, at the end, on an error, on Ctrl-C and on a panic.
//! - Clients are separate processes (`coordsim real-client`), so a pause is a real SIGSTOP. They
//!   run the simulator's recipe cores ([`etcd`], [`zk`]) through the `etcd-client` and
//!   `zookeeper-client` crates, write to the [`resource`] (fenced or unfenced, over TCP), and
//!   record into a [`journal`] with the machine's monotonic clock.
//! - [`testbed`]: a user's own code (compiled against the real etcd-client or zookeeper-client
//!   crate) as tasks of the test process on a real cluster, each client reaching the servers
//!   through [`proxy`] links that the test cuts at the simulated test's times; the history is
//!   the simulator's format, for a differential test of the same source in both worlds.
//! - [`run`]: one run of a scenario: cluster, resource, clients, the fault plan (pauses, crashes,
//!   partitions, packet loss, latency and slow links; [`netns`], [`links`]), then the journals merged into one history in the simulator's
//!   format, for the same checkers and reports.
//!
//! What the history of a real run cannot hold: the servers' own records (exact lease expiries,
//! lease checkpoints, the lessor's promotions). Expiries are observed by polling instead, each
//! within an interval the lease checkers widen their bounds by; what is judged is [`judged`].

pub mod client_main;
pub mod cluster;
pub mod config;
pub mod etcd;
pub mod h2_frames;
pub mod journal;
pub mod kv;
pub mod links;
pub mod netns;
pub mod procs;
pub mod proxy;
pub mod resource;
pub mod run;
pub mod session;
pub mod testbed;
pub mod workload;
pub mod zk;
pub mod zk_frames;

use coordsim_checker::properties::Property;

pub use config::System;

/// The properties a real run on `system` judges: those that need only what clients and the
/// resource record, the lease properties (our etcd client journals every LeaseKeepAlive, a
/// ZooKeeper client's session tap every request that renews its session, [`zk::tap`]; the
/// runner observes expiries by polling etcd's LeaseLeases or the ZooKeeper leader's session
/// tracker) and on etcd the watch properties (the key-value watchers record their streams:
/// [`kv`]).
pub fn judged(system: System) -> Vec<Property> {
    Property::judged_outside(true, system == System::Etcd)
}

/// Runs [`run::run`] on a current-thread runtime on this thread, until it ends or SIGINT/SIGTERM;
/// either way every process and namespace it made is gone before this returns.
pub fn run_blocking(
    scenario: &coordsim_sim::scenario::Scenario,
    system: System,
    run: u64,
    dir: &std::path::Path,
    exe: &std::path::Path,
) -> Result<run::RealRun, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Failed(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        // Registered before the run starts anything, so that no moment of it (the namespaces'
        // set-up included) dies of the signal's default action with its processes left behind.
        let caught = |e: std::io::Error| RunError::Failed(format!("cannot catch signals: {e}"));
        let mut interrupt = signal(SignalKind::interrupt()).map_err(caught)?;
        let mut terminate = signal(SignalKind::terminate()).map_err(caught)?;
        tokio::select! {
            result = run::run(scenario, system, run, dir, exe) => result.map_err(RunError::Failed),
            _ = interrupt.recv() => Err(RunError::Interrupted("SIGINT", libc::SIGINT)),
            _ = terminate.recv() => Err(RunError::Interrupted("SIGTERM", libc::SIGTERM)),
        }
    })
}

/// Why a real run ended without a history.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The cluster, a process or the run's files failed.
    #[error("{0}")]
    Failed(String),
    /// A signal (name, number) stopped it; every process and namespace of the run was removed
    /// first.
    #[error("interrupted ({0}): every process and namespace of the run was stopped and removed")]
    Interrupted(&'static str, i32),
}
