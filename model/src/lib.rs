//! coordsim-model: stateright models of the lock, lease and election protocols, built on the
//! sans-IO recipe cores of `coordsim-sim` (e.g. `coordsim_sim::recipe::mutex`), so that the
//! model checker explores the code the simulator runs. The models arrive with issue 6; the
//! crate exists now so that the workspace has its final shape.
