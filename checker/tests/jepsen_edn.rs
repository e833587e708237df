//! Jepsen EDN histories: import, then check.

use std::path::Path;

use coordsim_checker::import::{ImportError, jepsen_edn};
use coordsim_checker::linearizability::models::{
    MutexInput, MutexModel, MutexOutput, RegisterInput, RegisterModel, RegisterOutput,
};
use coordsim_checker::linearizability::{CheckOptions, RETURN_NEVER, Verdict, check};

const CAS_REGISTER: &str = r#"
{:type :invoke, :f :write, :value 1, :process 0, :time 100, :index 0}
{:type :ok,     :f :write, :value 1, :process 0, :time 200, :index 1}
{:type :info,   :f :start-partition, :value nil, :process :nemesis, :time 250}
{:type :invoke, :f :cas, :value [1 2], :process 1, :time 300}
{:type :invoke, :f :read, :value nil, :process 2, :time 310}
{:type :fail,   :f :cas, :value [1 2], :process 1, :time 400, :error :timeout}
{:type :ok,     :f :read, :value 1, :process 2, :time 420}
{:type :invoke, :f :write, :value 3, :process 0, :time 500}
{:type :info,   :f :write, :value 3, :process 0, :time 600, :error [:timeout "no reply"]}
{:type :invoke, :f :read, :value nil, :process 0, :time 700}
{:type :ok,     :f :read, :value 3, :process 0, :time 800}
"#;

#[test]
fn a_cas_register_history_imports_with_jepsens_rules() {
    let history = jepsen_edn::register(CAS_REGISTER, None).unwrap();
    let summary: Vec<_> = history
        .iter()
        .map(|op| (op.id, op.client, op.input.clone(), op.output.clone(), op.call_ns, op.return_ns))
        .collect();
    assert_eq!(
        summary,
        vec![
            (0, 0, RegisterInput::Write(1), Some(RegisterOutput::Write), 100, 200),
            // id 1, the failed cas, is dropped: it did not take effect.
            (2, 2, RegisterInput::Read, Some(RegisterOutput::Read(Some(1))), 310, 420),
            // :info: open to the end; process 0 crashed and comes back as a new client.
            (3, 0, RegisterInput::Write(3), None, 500, RETURN_NEVER),
            (4, 3, RegisterInput::Read, Some(RegisterOutput::Read(Some(3))), 700, 800),
        ]
    );
    assert_eq!(check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap(), Verdict::Ok);
}

#[test]
fn a_stale_read_in_an_edn_history_is_illegal() {
    let text = "[{:type :invoke :f :write :value 1 :process 0}\n\
                 {:type :ok :f :write :value 1 :process 0}\n\
                 {:type :invoke :f :write :value 2 :process 0}\n\
                 {:type :ok :f :write :value 2 :process 0}\n\
                 {:type :invoke :f :read :value nil :process 1}\n\
                 {:type :ok :f :read :value 1 :process 1}]";
    let history = jepsen_edn::register(text, None).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!((history[2].call_ns, history[2].return_ns), (5, 6), "positions stand in for times");
    assert!(check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap().is_illegal());
}

#[test]
fn a_mutex_history_names_owners_by_client() {
    let text = r#"
{:type :invoke, :f :acquire, :value nil, :process 0, :time 10}
{:type :ok,     :f :acquire, :value nil, :process 0, :time 20}
{:type :invoke, :f :acquire, :value nil, :process 1, :time 30}
{:type :fail,   :f :acquire, :value nil, :process 1, :time 40}
{:type :invoke, :f :release, :value nil, :process 0, :time 50}
{:type :ok,     :f :release, :value nil, :process 0, :time 60}
{:type :invoke, :f :acquire, :value nil, :process 1, :time 70}
{:type :ok,     :f :acquire, :value nil, :process 1, :time 80}
"#;
    let history = jepsen_edn::mutex(text, None).unwrap();
    let inputs: Vec<_> = history.iter().map(|op| (op.input, op.output)).collect();
    assert_eq!(
        inputs,
        vec![
            (MutexInput::Acquire { owner: 0 }, Some(MutexOutput::Ok)),
            (MutexInput::Release { owner: 0 }, Some(MutexOutput::Ok)),
            (MutexInput::Acquire { owner: 1 }, Some(MutexOutput::Ok)),
        ]
    );
    assert_eq!(check(&MutexModel, &history, &CheckOptions::default()).unwrap(), Verdict::Ok);

    let double_grant = text.replace(
        "{:type :invoke, :f :release, :value nil, :process 0, :time 50}\n{:type :ok,     :f :release, :value nil, :process 0, :time 60}\n",
        "",
    );
    let history = jepsen_edn::mutex(&double_grant, None).unwrap();
    assert!(check(&MutexModel, &history, &CheckOptions::default()).unwrap().is_illegal());
}

#[test]
fn malformed_records_name_file_line_and_field() {
    let file = Path::new("history.edn");
    let cases = [
        ("{:type :invoke, :f :write, :value 1}", 1, "process"),
        ("{:type :invoke, :f :write, :value 1, :process \"p\"}", 1, "process"),
        ("{:type :begin, :f :write, :value 1, :process 0}", 1, "type"),
        ("{:f :write, :value 1, :process 0}", 1, "type"),
        ("{:type :invoke, :value 1, :process 0}", 1, "f"),
        ("{:type :invoke, :f :write, :value :x, :process 0}", 1, "value"),
        ("{:type :invoke, :f :append, :value 1, :process 0}", 1, "f"),
        ("\n\n{:type :invoke, :f :write, :value 1, :process 0, :time -5}", 3, "time"),
        ("{:type :invoke, :f :read, :process 0, :time 1}\n{:type :ok, :f :read, :value 1, :process 0}", 2, "time"),
        ("{:type :ok, :f :read, :value 1, :process 0}", 1, "process"),
        ("{:type :invoke, :f :read, :process 0}\n{:type :ok, :f :write, :process 0}", 2, "f"),
        ("{:type :invoke, :f :read, :process 0}\n{:type :invoke, :f :read, :process 0}", 2, "process"),
        ("{:type :invoke, :f :read, :process 0}\n[1 2]", 2, "edn"),
        ("{:type :invoke\n :f :read :process 0", 2, "edn"),
        ("[{:type :invoke, :f :read, :process 0}] {}", 1, "edn"),
    ];
    for (text, line, field) in cases {
        let error = jepsen_edn::register(text, Some(file)).unwrap_err();
        let ImportError::Malformed { line: got_line, field: got_field, .. } = &error else {
            panic!("{text}: {error:?}");
        };
        assert_eq!((*got_line, *got_field), (line, field), "{text}: {error}");
        assert!(error.to_string().starts_with("history.edn: line "), "{error}");
    }
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let error = jepsen_edn::read_register(Path::new("/nonexistent/history.edn")).unwrap_err();
    assert!(matches!(error, ImportError::Io { .. }));
    assert!(error.to_string().starts_with("/nonexistent/history.edn: "));
}
