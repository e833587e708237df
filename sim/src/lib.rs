//! coordsim-sim: the coordination service under test and the simulation harness.
//!
//! Pure state machines (the store, the lessor, the recipe cores) sit at the core; the madsim
//! drivers (servers, clients, the resource, the nemesis) feed them. The cores live in
//! `coordsim-core` and are re-exported here under their old paths.

pub mod client;
pub mod clock;
pub mod harness;
pub mod kv_workload;
pub mod lock_loop;
pub mod nemesis;
pub mod net;
pub mod node;
pub mod observers;
pub mod raft;
pub mod recorder;
pub mod resource;
pub mod rpc;
pub mod rt;
pub mod server;
pub mod testbed;
pub mod timing;
pub mod workload;

pub use coordsim_core::{etcd_release, lessor, recipe, redis, scenario, store, zk};
