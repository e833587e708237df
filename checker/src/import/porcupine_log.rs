//! Jepsen etcd logs as redistributed in Porcupine's test data, one event per line:
//!
//! ```text
//! INFO  jepsen.util - 3 :invoke :cas [1 2]
//! INFO  jepsen.util - 3 :ok :cas [1 2]
//! ```
//!
//! Fields: the logger prefix (`INFO jepsen.util -`), the process, the type (`:invoke`, `:ok`,
//! `:fail`, `:info`), the function (`:read`, `:write`, `:cas`) and the value (an EDN value that may
//! contain spaces, e.g. `[1 2]`). Fields are split on any run of whitespace: most files use tabs,
//! some spaces. Blank lines are skipped.
//!
//! The logs carry no clock, so an event's time is its line number: only the order matters for
//! linearizability. The register starts as nil; a read's `:ok` value is what it read.
//!
//! Completions are read as Porcupine reads these files (`parseJepsenLog` in its tests): `:ok`
//! took effect; `:fail :cas` is a compare-and-set that took effect as a compare that did not
//! match (etcd's client reports a failed compare as a failure), so the register held another value
//! at that point; `:fail` of a read or write did not take effect (Porcupine's `:fail :read
//! :timed-out`, a read that answered nothing, constrains nothing either way); `:info` is unknown
//! and open to the end of the history.

use std::path::Path;

use super::edn;
use super::pairing::{Completion, Pairing};
use super::register;
use super::{FieldError, ImportError, RegisterHistory, cut, read_to_string};
use crate::linearizability::models::{RegisterInput, RegisterOutput};

/// Reads and parses one log file.
pub fn read(path: &Path) -> Result<RegisterHistory, ImportError> {
    parse(&read_to_string(path)?, Some(path))
}

/// Parses a log; `file` only labels errors.
pub fn parse(text: &str, file: Option<&Path>) -> Result<RegisterHistory, ImportError> {
    let mut pairing = Pairing::new();
    let mut events = 0usize;
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        parse_line(&mut pairing, line, line_number).map_err(|e| e.at(file, line_number))?;
        events += 1;
    }
    if events == 0 {
        return Err(ImportError::Empty { file: file.map(Path::to_path_buf) });
    }
    Ok(pairing.finish())
}

fn parse_line(
    pairing: &mut Pairing<RegisterInput<i64>, RegisterOutput<i64>>,
    line: &str,
    line_number: usize,
) -> Result<(), FieldError> {
    let (fields, value) = split_fields(line)?;
    let [info, logger, dash, process, kind, f] = fields;
    if (info, logger, dash) != ("INFO", "jepsen.util", "-") {
        return Err(FieldError::new(
            "prefix",
            format!("expected `INFO jepsen.util -`, found `{}`", cut(&format!("{info} {logger} {dash}"))),
        ));
    }
    let process: i64 = process
        .parse()
        .map_err(|_| FieldError::new("process", format!("expected an integer, found `{}`", cut(process))))?;
    let f = keyword(f, "f")?;
    let value =
        edn::parse_one(value).map_err(|e| FieldError::new("value", format!("`{}`: {}", cut(value), e.message)))?;
    let time = line_number as u64;
    match keyword(kind, "type")? {
        "invoke" => pairing.invoke(line_number, process, f, time, |_| register::input(f, &value)),
        "ok" => {
            let output = register::ok_output(f, &value)?;
            pairing.complete(process, f, time, Completion::Ok(output))
        }
        // Porcupine's reading of these logs (its `parseJepsenLog`): a failed cas is a compare that
        // did not match, which tells the checker the register held another value then.
        "fail" if f == "cas" => {
            pairing.complete(process, f, time, Completion::Ok(RegisterOutput::Cas { swapped: false }))
        }
        "fail" => pairing.complete(process, f, time, Completion::Fail),
        "info" => pairing.complete(process, f, time, Completion::Info),
        other => Err(FieldError::new("type", format!("expected :invoke, :ok, :fail or :info, found :{}", cut(other)))),
    }
}

/// The six leading fields and the rest of the line (the value).
fn split_fields(line: &str) -> Result<([&str; 6], &str), FieldError> {
    const NAMES: [&str; 7] = ["prefix", "prefix", "prefix", "process", "type", "f", "value"];
    let mut fields = [""; 6];
    let mut rest = line.trim_start();
    for (slot, name) in fields.iter_mut().zip(NAMES) {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if end == 0 {
            return Err(FieldError::new(name, "missing"));
        }
        *slot = &rest[..end];
        rest = rest[end..].trim_start();
    }
    let value = rest.trim_end();
    if value.is_empty() {
        return Err(FieldError::new(NAMES[6], "missing"));
    }
    Ok((fields, value))
}

fn keyword<'a>(token: &'a str, field: &'static str) -> Result<&'a str, FieldError> {
    match token.strip_prefix(':') {
        Some(name) if !name.is_empty() => Ok(name),
        _ => Err(FieldError::new(field, format!("expected a keyword, found `{}`", cut(token)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::RETURN_NEVER;

    #[test]
    fn pairs_invocations_with_completions_and_reads_a_failed_cas_as_a_failed_compare() {
        let text = "INFO  jepsen.util - 4\t:invoke\t:read\tnil\n\
                    INFO  jepsen.util - 1   :invoke :cas    [1 2]\n\
                    INFO  jepsen.util - 4\t:ok\t:read\t3\n\
                    \n\
                    INFO  jepsen.util - 2\t:invoke\t:write\t5\n\
                    INFO  jepsen.util - 1\t:fail\t:cas\t[1 2]\n\
                    INFO  jepsen.util - 2\t:info\t:write\t:timed-out\n\
                    INFO  jepsen.util - 0\t:invoke\t:cas\t[5 6]\n\
                    INFO  jepsen.util - 0\t:ok\t:cas\t[5 6]\n";
        let history = parse(text, None).unwrap();
        let summary: Vec<_> = history
            .iter()
            .map(|op| (op.id, op.client, op.input.clone(), op.output.clone(), op.call_ns, op.return_ns))
            .collect();
        assert_eq!(
            summary,
            vec![
                (0, 0, RegisterInput::Read, Some(RegisterOutput::Read(Some(3))), 1, 3),
                (1, 1, RegisterInput::Cas { expected: 1, new: 2 }, Some(RegisterOutput::Cas { swapped: false }), 2, 6),
                (2, 2, RegisterInput::Write(5), None, 5, RETURN_NEVER),
                (3, 3, RegisterInput::Cas { expected: 5, new: 6 }, Some(RegisterOutput::Cas { swapped: true }), 8, 9),
            ]
        );
    }

    #[test]
    fn a_failed_cas_of_the_value_just_written_is_not_linearizable() {
        use crate::linearizability::models::RegisterModel;
        use crate::linearizability::{CheckOptions, check};
        let text = "INFO jepsen.util - 0 :invoke :write 1\n\
                    INFO jepsen.util - 0 :ok :write 1\n\
                    INFO jepsen.util - 0 :invoke :cas [1 2]\n\
                    INFO jepsen.util - 0 :fail :cas [1 2]\n";
        let history = parse(text, None).unwrap();
        assert!(check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap().is_illegal());
        // A failed read or write did not happen.
        let text = "INFO jepsen.util - 0 :invoke :write 1\n\
                    INFO jepsen.util - 0 :fail :write 1\n\
                    INFO jepsen.util - 1 :invoke :read nil\n\
                    INFO jepsen.util - 1 :fail :read :timed-out\n";
        assert!(parse(text, None).unwrap().is_empty());
    }

    #[test]
    fn a_process_number_reused_after_info_is_a_new_client() {
        let text = "INFO jepsen.util - 7 :invoke :write 1\n\
                    INFO jepsen.util - 7 :info :write :timed-out\n\
                    INFO jepsen.util - 7 :invoke :read nil\n\
                    INFO jepsen.util - 7 :ok :read 1\n";
        let history = parse(text, None).unwrap();
        assert_eq!(history.len(), 2);
        assert_ne!(history[0].client, history[1].client);
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let file = Path::new("etcd_x.log");
        let cases = [
            ("INFO jepsen.util - x :invoke :read nil", 1, "process"),
            ("INFO jepsen.util - 1 :invoke :read", 1, "value"),
            ("INFO jepsen.util - 1 :invoke :write [1", 1, "value"),
            ("INFO jepsen.util - 1 :invoke :write x1", 1, "value"),
            ("INFO jepsen.util - 1 :invoke :cas [1]", 1, "value"),
            ("INFO jepsen.util - 1 :invoke :append 1", 1, "f"),
            ("INFO jepsen.util - 1 :begin :read nil", 1, "type"),
            ("INFO jepsen.util - 1 invoke :read nil", 1, "type"),
            ("WARN jepsen.util - 1 :invoke :read nil", 1, "prefix"),
            ("INFO", 1, "prefix"),
            ("\nINFO jepsen.util - 1 :ok :read nil", 2, "process"),
            ("INFO jepsen.util - 1 :invoke :read nil\nINFO jepsen.util - 1 :invoke :read nil", 2, "process"),
            ("INFO jepsen.util - 1 :invoke :read nil\nINFO jepsen.util - 1 :ok :write 1", 2, "f"),
            ("INFO jepsen.util - 1 :invoke :read nil\nINFO jepsen.util - 1 :ok :read [1]", 2, "value"),
        ];
        for (text, line, field) in cases {
            let error = parse(text, Some(file)).unwrap_err();
            let ImportError::Malformed { file: Some(name), line: got_line, field: got_field, .. } = &error else {
                panic!("{text}: {error:?}");
            };
            assert_eq!((name.as_path(), *got_line, *got_field), (file, line, field), "{text}: {error}");
            assert!(error.to_string().starts_with(&format!("etcd_x.log: line {line}: field `{field}`")));
        }
    }

    #[test]
    fn an_empty_log_is_bad_input() {
        for text in ["", "\n  \n"] {
            let error = parse(text, Some(Path::new("e.log"))).unwrap_err();
            assert_eq!(error.to_string(), "e.log: the history is empty: no operation records");
        }
    }

    #[test]
    fn a_long_value_is_cut_in_the_message() {
        let text = format!("INFO jepsen.util - 1 :invoke :write [{}", "1 ".repeat(1_000_000));
        let message = parse(&text, None).unwrap_err().to_string();
        assert!(message.len() < 300, "{} bytes", message.len());
        assert!(message.contains("(2000000 characters)"), "{message}");
    }
}
