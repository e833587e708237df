//! The nemesis's plan: partition shapes as links (`links`), and a scenario and a seed turned into
//! the fault plan and every node's clock schedule (`plan`), and how faults that overlap compose
//! (`compose`). The simulator's nemesis (`coordsim_sim::nemesis`) plays the plan at its true
//! times, the real runner (`coordsim_real::run`) with signals and nftables rules.

pub mod compose;
pub mod links;
pub mod plan;
