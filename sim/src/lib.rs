//! coordsim-sim: the coordination service under test and the simulation harness.
//!
//! Pure state machines (the store, the lessor, the recipe cores) sit at the core; the madsim
//! drivers (servers, clients, the resource, the nemesis) feed them.

pub mod rt;
pub mod store;
