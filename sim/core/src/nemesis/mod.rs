//! The nemesis's plan: partition shapes as links (`links`), and a scenario and a seed turned into
//! the fault plan and every node's clock schedule (`plan`). The simulator's nemesis
//! (`coordsim_sim::nemesis`) plays the plan at its true times.

pub mod links;
pub mod plan;
