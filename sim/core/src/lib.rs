//! coordsim-core: the sans-IO cores of the coordination service and of a run's plan. Nothing
//! here is async, reads a clock, draws from the OS or knows the simulator: each core takes
//! inputs and returns what to do next, and the drivers (`coordsim-sim` on madsim, `coordsim-real`
//! on real clusters, `coordsim-model` under stateright) feed them.

pub mod clock;
pub mod etcd_release;
pub mod lessor;
pub mod nemesis;
pub mod queue_depth;
pub mod recipe;
pub mod redis;
pub mod resource;
pub mod scenario;
pub mod store;
pub mod timing;
pub mod zk;
