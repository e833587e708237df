//! coordsim-sim: the coordination service under test and the simulation harness.
//!
//! Pure state machines (the store, the lessor, the recipe cores) sit at the core; the madsim
//! drivers (servers, clients, the resource, the nemesis) feed them.

pub mod client;
pub mod clock;
pub mod etcd_release;
pub mod harness;
pub mod kv_workload;
pub mod lessor;
pub mod nemesis;
pub mod netfault;
pub mod node;
pub mod observers;
pub mod raft;
pub mod recipe;
pub mod recorder;
pub mod redis;
pub mod resource;
pub mod rpc;
pub mod rt;
pub mod scenario;
pub mod server;
pub mod store;
pub mod testbed;
pub mod workload;
pub mod zk;
