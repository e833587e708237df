//! The `coordsim` CLI and the scenario library, and the crate a user's tests depend on: the
//! Testbed ([`testbed`]), the etcd and ZooKeeper client APIs ([`etcd`], [`zookeeper`]), timers
//! with tokio's names ([`time`]), tasks and random numbers ([`task`], [`rand`]), the history and
//! the checkers' types ([`history`], [`properties`], [`verdict`]), and all of it at once in
//! [`prelude`].

pub mod bench_check;
pub mod bug_sweep;
pub mod calibrate;
pub mod check;
pub mod cli;
pub mod compare;
pub mod etcd;
pub mod explain;
pub mod fuzz;
pub mod input;
pub mod library;
pub mod load;
pub mod metrics_cmd;
pub mod model_cmd;
pub mod output;
pub mod owned;
pub mod prelude;
pub mod real_cmd;
pub mod real_verdicts;
pub mod report_cmd;
pub mod shrink;
pub mod soak;
pub mod sweep;
pub mod switches;
pub mod testbed;
pub mod time;
pub mod zookeeper;

/// The history format, the properties and the verdicts (the `coordsim-checker` crate's modules),
/// so a test needs no dependency but `coordsim`.
pub use coordsim_checker::{history, properties, verdict};

/// A scenario's parts a Testbed is built from: expectations, bug switches, chaos, faults' reply
/// kinds, the resource's mode.
pub mod scenario {
    pub use coordsim_sim::resource::ResourceMode;
    pub use coordsim_sim::scenario::{Bugs, Chaos, Expectation, ReplyKind, Scenario};
}

/// Tasks inside the simulation (madsim's, deterministic): `spawn` as `tokio::spawn`.
pub mod task {
    pub use madsim::task::{JoinHandle, spawn, spawn_local, yield_now};
}

/// Random numbers from the run's seed (madsim's RNG): `coordsim::rand::random::<u64>()`,
/// `coordsim::rand::thread_rng().gen_range(..)`. Never the OS's: a run must replay from its seed.
pub mod rand {
    pub use madsim::rand::*;
}

/// The simulator itself, for what the modules above do not cover (`madsim::runtime::Runtime`
/// for `check_determinism`).
pub use madsim;
