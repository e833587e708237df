//! coordsim-model: stateright models of the lock, lease and election protocols that coordsim
//! simulates. Simulation samples schedules; the model checker tries all of them on small
//! configurations, so what the simulator catches sometimes, these models catch always.
//!
//! Three worlds, each a plain stateright `Model` with the clients in a fixed order:
//! - [`etcd`]: lease locks on the **shipped sans-IO cores** of `coordsim-sim` — the etcd mutex
//!   recipe (`recipe::mutex::EtcdMutex`), the MVCC store with leases (`store::Store`), the
//!   leader's lease deadlines (`lessor::Lessor`) and the protected resource
//!   (`resource::Resource`) — fed by model steps instead of RPCs, with discrete time (ticks),
//!   pauses, partitions and clocks at bounded rates. Cases 01, 02 and 09.
//! - [`zk`]: the ZooKeeper locks on the **shipped sans-IO cores** — the recipe
//!   (`recipe::zk_lock::ZkLock`, with its herd, `recheck_vanished` and `unique_tag` switches)
//!   against the store's ZooKeeper view (`store::Store` with `Command::Zk`, `zk::tree` for reads,
//!   `zk::watch::fired` for watch notifications): the queue lock, the herd lock, the lost wakeup
//!   and the orphaned sequential node. Cases 07, 08 and 10.
//! - [`election`]: term-based election with fencing by term, abstract (openraft's election is
//!   not a sans-IO core).
//!
//! [`registry`] names the models and runs them ([`runner`] drives stateright, [`shortest`] finds
//! shortest counterexamples, [`trace`] tells them in the simulator's vocabulary); [`bench`]
//! measures them. Properties: `always` invariants (mutual exclusion at the resource, fencing,
//! wakeups per release, and liveness as an explicit "stuck" state, since stateright 0.31's
//! `eventually` is unreliable), each paired with `sometimes` properties so that a vacuous model
//! is caught.

pub mod bench;
pub mod checked;
pub mod election;
pub mod etcd;
pub mod expectations;
pub mod fingerprint;
pub mod registry;
pub mod report;
pub mod runner;
pub mod shortest;
pub mod trace;
pub mod zk;

pub use checked::{CheckedModel, Expected};
pub use registry::{MODELS, RunOptions, run};
pub use report::ModelReport;
pub use runner::{Search, Strategy};
