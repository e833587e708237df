//! The 102 Jepsen etcd histories that Porcupine ships as test data (tests/data/porcupine, MIT,
//! see SOURCE.md there) must get the verdicts of expected.tsv, which Porcupine's own tests assert
//! and which agree with Knossos wherever Knossos finished.

use std::path::{Path, PathBuf};
use std::time::Instant;

use coordsim_checker::import::{ImportError, porcupine_log};
use coordsim_checker::linearizability::models::RegisterModel;
use coordsim_checker::linearizability::{CheckOptions, Verdict, check};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine")
}

/// (file name, expected verdict) for every row of expected.tsv.
fn expectations() -> Vec<(String, String)> {
    let table = std::fs::read_to_string(data_dir().join("expected.tsv")).unwrap();
    table
        .lines()
        .skip(1)
        .map(|row| {
            let columns: Vec<&str> = row.split('\t').collect();
            (columns[0].to_string(), columns[1].to_string())
        })
        .collect()
}

fn verdict_of(file: &str, options: &CheckOptions) -> Verdict {
    let history = porcupine_log::read(&data_dir().join("jepsen").join(file)).unwrap();
    check(&RegisterModel::new(), &history, options).unwrap()
}

/// The verdict's name in expected.tsv; an empty file is refused by the importer ("empty").
fn label_of(file: &str, options: &CheckOptions) -> String {
    match porcupine_log::read(&data_dir().join("jepsen").join(file)) {
        Err(ImportError::Empty { .. }) => "empty".into(),
        Err(error) => format!("import error: {error}"),
        Ok(history) => match check(&RegisterModel::new(), &history, options).unwrap() {
            Verdict::Ok => "linearizable".into(),
            Verdict::Illegal(_) => "not_linearizable".into(),
            Verdict::Unknown { reason } => format!("unknown ({reason})"),
        },
    }
}

#[test]
fn all_jepsen_etcd_histories_get_porcupines_verdicts() {
    let expectations = expectations();
    assert_eq!(expectations.len(), 103, "102 histories and the empty etcd_095");
    let options = CheckOptions::default();
    let started = Instant::now();
    let mut mismatches = Vec::new();
    for (file, expected) in &expectations {
        let got = label_of(file, &options);
        if got != *expected {
            mismatches.push(format!("{file}: expected {expected}, got {got}"));
        }
    }
    eprintln!("checked {} files in {:?}", expectations.len(), started.elapsed());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn the_empty_log_is_refused_and_an_empty_history_is_linearizable() {
    let error = porcupine_log::read(&data_dir().join("jepsen/etcd_095.log")).unwrap_err();
    assert!(matches!(error, ImportError::Empty { .. }), "{error}");
    // Porcupine calls the empty etcd_095 linearizable: so is an empty history, given directly.
    assert_eq!(check(&RegisterModel::<i64>::new(), &[], &CheckOptions::default()).unwrap(), Verdict::Ok);
}

#[test]
fn imported_histories_match_the_table_counts() {
    // expected.tsv's `invocations` counts every :invoke (including those that later :fail) and
    // `pending_at_end` the operations still open at the end (:info or never completed).
    let table = std::fs::read_to_string(data_dir().join("expected.tsv")).unwrap();
    for row in table.lines().skip(1) {
        let columns: Vec<&str> = row.split('\t').collect();
        let history = match porcupine_log::read(&data_dir().join("jepsen").join(columns[0])) {
            Err(ImportError::Empty { .. }) => Vec::new(),
            other => other.unwrap(),
        };
        let open = history.iter().filter(|op| op.output.is_none()).count();
        let invocations = history.iter().map(|op| op.id + 1).max().unwrap_or(0);
        assert_eq!(invocations.to_string(), columns[2], "{}", columns[0]);
        assert_eq!(open.to_string(), columns[3], "{}", columns[0]);
    }
}

#[test]
fn a_non_linearizable_history_reports_a_prefix_and_the_stuck_operations() {
    let Verdict::Illegal(counterexample) = verdict_of("etcd_000.log", &CheckOptions::default()) else {
        panic!("etcd_000 is not linearizable");
    };
    assert!(!counterexample.prefix.is_empty());
    assert!(!counterexample.stuck.is_empty());
    // Deterministic: the same report on a second run, sequential or parallel.
    let sequential = CheckOptions { parallel: false, ..CheckOptions::default() };
    assert_eq!(verdict_of("etcd_000.log", &sequential), Verdict::Illegal(counterexample));
}
