//! Knossos's own test histories (tests/data/knossos, EPL-1.0, see SOURCE.md there) and Porcupine's
//! key-value histories (tests/data/porcupine/kv) must get the verdicts their projects' tests assert,
//! read as the files are.

use std::path::{Path, PathBuf};

use coordsim_checker::import::jepsen_edn::{self, Flavor};
use coordsim_checker::linearizability::models::{AppendKvModel, MultiRegisterModel, MutexModel, RegisterModel};
use coordsim_checker::linearizability::{CheckOptions, Verdict, check};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn files(folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data().join(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| matches!(path.extension().and_then(|e| e.to_str()), Some("edn" | "txt")))
        .collect();
    files.sort();
    files
}

/// Imports with the flavor the records name and checks; `register_initial` and `registers_initial`
/// are the models' starting values.
///
/// The first failing key found decides (Porcupine's choice, and `coordsim check`'s): in c50-bad,
/// keys before the one found first take seconds to prove illegal one by one.
fn verdict(path: &Path, register_initial: Option<i64>, registers_initial: &[(&str, i64)]) -> Verdict {
    let text = std::fs::read_to_string(path).unwrap();
    let options = CheckOptions { first_failure_wins: true, ..CheckOptions::default() };
    let file = Some(path);
    let verdict = match Flavor::detect(&text).unwrap_or(Flavor::Register) {
        Flavor::Register => {
            let model = register_initial.map_or_else(RegisterModel::new, RegisterModel::starting_at);
            check(&model, &jepsen_edn::register(&text, file).unwrap(), &options)
        }
        Flavor::Mutex => check(&MutexModel, &jepsen_edn::mutex(&text, file).unwrap(), &options),
        Flavor::AppendKv => check(&AppendKvModel, &jepsen_edn::append_kv(&text, file).unwrap(), &options),
        Flavor::MultiRegister => {
            let initial = registers_initial.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            check(&MultiRegisterModel::new(initial), &jepsen_edn::multi_register(&text, file).unwrap(), &options)
        }
    };
    verdict.unwrap()
}

fn assert_all(folder: &str, expected_ok: bool, count: usize, register_initial: Option<i64>) {
    let files = files(folder);
    assert_eq!(files.len(), count, "{folder}");
    let wrong: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let verdict = verdict(path, register_initial, &[]);
            (verdict.is_ok() != expected_ok || verdict.is_unknown()).then(|| format!("{}: {verdict:?}", path.display()))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn knossos_cas_register_histories_get_their_labels_from_zero_and_from_nil() {
    for initial in [Some(0), None] {
        assert_all("knossos/cas-register/good", true, 113, initial);
        assert_all("knossos/cas-register/bad", false, 7, initial);
    }
}

#[test]
fn knossos_multi_register_history_is_linearizable_from_zero_only() {
    let path = data().join("knossos/multi-register/good/multi-register.edn");
    assert_eq!(verdict(&path, None, &[("x", 0), ("y", 0)]), Verdict::Ok);
    assert!(verdict(&path, None, &[]).is_illegal(), "x = 0 is read before any write of x could take effect");
}

#[test]
fn knossos_etcd_mutex_history_is_not_linearizable() {
    assert_all("knossos/mutex/bad", false, 1, None);
}

#[test]
fn porcupines_kv_histories_get_their_labels() {
    for name in ["c01", "c10", "c50"] {
        let ok = data().join(format!("porcupine/kv/{name}-ok.txt"));
        let bad = data().join(format!("porcupine/kv/{name}-bad.txt"));
        assert_eq!(verdict(&ok, None, &[]), Verdict::Ok, "{name}-ok");
        assert!(verdict(&bad, None, &[]).is_illegal(), "{name}-bad");
    }
}

#[test]
fn a_list_wrapped_history_reads_as_a_vector_wrapped_one() {
    let records = "{:type :invoke, :f :write, :value 1, :process 0}\n{:type :ok, :f :write, :value 1, :process 0}";
    let vector = jepsen_edn::register(&format!("[{records}]"), None).unwrap();
    let list = jepsen_edn::register(&format!("({records})"), None).unwrap();
    assert_eq!(vector, list);
    assert!(jepsen_edn::register("(  )", None).is_err(), "an empty list is an empty history");
}

#[test]
fn a_nil_read_is_unknown_as_knossos_reads_it() {
    // Knossos's models accept a nil read in any state; a write of 1 then a read of nil is valid.
    let text = "{:type :invoke, :f :write, :value 1, :process 0}\n{:type :ok, :f :write, :value 1, :process 0}\n\
                {:type :invoke, :f :read, :value nil, :process 1}\n{:type :ok, :f :read, :value nil, :process 1}";
    let history = jepsen_edn::register(text, None).unwrap();
    assert_eq!(history.len(), 1, "the nil read constrains nothing and is left out");
    assert_eq!(check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap(), Verdict::Ok);
}
