//! The checkers take the service's timing (its election timeout, heartbeat, the lessor's expiry
//! tick and promotion extension) from the history's header (`History::service_timing`), never
//! from constants of their own, so that a verdict on a real etcd history uses etcd's timers and
//! one on a simulated history the simulator's. Every time constant in `checker/src/properties`
//! must be one of the properties' own margins, listed here with the reason it is not the
//! service's: a constant that is not listed fails this test.

use std::path::Path;

/// (constant, why it belongs to the property and not to the service).
const MARGINS: [(&str, &str); 6] = [
    ("CHECKPOINT_STALENESS_MS", "lease_liveness: how stale a new leader's view of a lease the promise tolerates"),
    ("COMMIT_ALLOWANCE_MS", "lease_liveness: a revocation's commit over a few round trips, with a wide margin"),
    ("FAULT_RECOVERY_MS", "lease_liveness, spurious_expiry: the time allowed to resume after a fault ends"),
    ("DEFAULT_TTL_MS", "session_loss_notice: the TTL assumed when the history does not show the grant"),
    ("SLACK_MS", "session_loss_notice: the round trips that carry the news of an expiry"),
    ("TAIL_MIN_NS", "progress: the shortest fault-free tail worth judging"),
];

/// A time constant's name: what a bound could be made of.
fn is_time(name: &str) -> bool {
    ["_MS", "_NS", "_US", "_SECS", "_TICK", "TIMEOUT", "HEARTBEAT", "INTERVAL"].iter().any(|s| name.ends_with(s))
        || ["ELECTION", "EXPIRY", "PROMOTION"].iter().any(|s| name.contains(s))
}

#[test]
fn every_time_constant_of_a_checker_is_a_listed_margin() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/properties");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&folder).expect("the properties folder") {
        let path = entry.expect("a folder entry").path();
        let text = std::fs::read_to_string(&path).expect("a source file");
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            let Some(rest) = code.strip_prefix("pub const ").or_else(|| code.strip_prefix("const ")) else {
                continue;
            };
            let name = rest.split(':').next().expect("a name").trim();
            if !is_time(name) {
                continue;
            }
            let file = path.file_name().expect("a file name").to_string_lossy();
            assert!(
                MARGINS.iter().any(|(margin, _)| *margin == name),
                "{file}:{}: {name} is a time constant of a checker: take the service's timing from \
                 the history (History::service_timing), or list it here as the property's own margin",
                number + 1
            );
            found.push(name.to_string());
        }
    }
    for (margin, _) in MARGINS {
        assert!(found.iter().any(|name| name == margin), "{margin} is listed but no checker has it any more");
    }
}
