//! The `coordsim` CLI and the scenario library.

pub mod bench_check;
pub mod bug_sweep;
pub mod check;
pub mod cli;
pub mod etcd;
pub mod explain;
pub mod fuzz;
pub mod library;
pub mod load;
pub mod model_cmd;
pub mod output;
pub mod owned;
pub mod real_cmd;
pub mod report_cmd;
pub mod shrink;
pub mod soak;
pub mod sweep;
pub mod switches;
pub mod testbed;
pub mod time;
pub mod zookeeper;
