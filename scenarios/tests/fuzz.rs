//! Issue 21: hostile input never panics. A short run of the structured fuzzer (the long one is
//! `coordsim fuzz --inputs 100000`, docs/hostile-input.md), and the reproducers the issue names.

use std::process::Command;

use coordsim_checker::history::{History, HistoryError};

#[test]
fn a_short_fuzz_run_has_no_panics() {
    let report = coordsim::fuzz::run(2_500, 7);
    assert_eq!(report.inputs(), 2_500);
    assert_eq!(report.panics(), 0, "{}", report.lines().join("\n"));
    // The mutations reach the checkers: some inputs of every kind are accepted.
    assert_eq!(report.accepted.len(), 5, "{}", report.lines().join("\n"));
}

/// A recorded history, changed by `edit`.
fn history_with(edit: impl Fn(&mut serde_json::Value)) -> Result<History, HistoryError> {
    let dir = std::env::temp_dir().join(format!("coordsim-fuzz-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_coordsim"))
        .args(["run", "split-brain-gc-pause", "--seed", "1", "--report", "none", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.join("split-brain-gc-pause/seed-1/history.json")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut value);
    History::from_json(&value.to_string())
}

#[test]
fn numbers_no_run_records_are_refused_naming_the_field() {
    let error = history_with(|history| {
        let entries = history["entries"].as_array_mut().unwrap();
        let grant = entries.iter_mut().find(|e| e["ret"]["f"] == "lease_granted").expect("a lease grant");
        grant["ret"]["ttl_ms"] = u64::MAX.into();
    })
    .unwrap_err()
    .to_string();
    assert!(error.contains("].ret.ttl_ms: 18446744073709551615 ms is past the limit"), "{error}");
    assert!(error.starts_with("entries["), "{error}");
    let error = history_with(|history| history["duration_ns"] = u64::MAX.into()).unwrap_err().to_string();
    assert!(error.starts_with("duration_ns: 18446744073709551615 is past the limit"), "{error}");
}

#[test]
fn a_seed_range_of_every_u64_is_a_usage_error() {
    let commands: [&[&str]; 2] = [&["run", "split-brain-gc-pause", "--seeds"], &["sweep", "--bugs", "all", "--seeds"]];
    for flag in commands {
        let out =
            Command::new(env!("CARGO_BIN_EXE_coordsim")).args(flag).arg("0..18446744073709551615").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("2^64 seeds is more than the limit"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
