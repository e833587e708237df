//! Helpers shared by the scenario tests: a library scenario's text, and one seed's history.

use coordsim::library;
use coordsim::load;
use coordsim::sweep::{self, SeedResult};
use coordsim_checker::history::History;

/// Parses `text` as the scenario file `<name>.toml` and runs `seed`; panics with the message of a
/// refused file, a crash or a stopped run.
pub fn run(name: &str, text: &str, seed: u64) -> History {
    let scenario = load::parse(&format!("{name}.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    match sweep::run_seed(&scenario, name, seed) {
        SeedResult::Done { history, .. } => history,
        SeedResult::Crashed { message, .. } | SeedResult::Stopped { message, .. } => panic!("{name}: {message}"),
    }
}

/// The text of the library scenario `name`.
pub fn library_text(name: &str) -> String {
    library::get(name).unwrap_or_else(|| panic!("{name} is in the library")).to_string()
}
