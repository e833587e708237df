//! The `coordsim` CLI and the scenario library.

pub mod check;
pub mod cli;
pub mod library;
pub mod load;
pub mod model_cmd;
pub mod output;
pub mod report_cmd;
pub mod sweep;
