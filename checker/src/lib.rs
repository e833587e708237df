//! coordsim-checker: the history format and every checker. Pure and synchronous: it reads
//! histories and never calls the service's code.

pub mod generate;
pub mod history;
pub mod import;
pub mod linearizability;
pub mod metrics;
pub mod properties;
pub mod verdict;
