//! `coordsim check`: judge recorded histories. Our JSON histories get the safety properties;
//! Jepsen etcd logs (Porcupine's format) and Jepsen EDN histories (Knossos's and Porcupine's data)
//! get the linearizability checker with the model their records are written for.
//!
//! Several files or folders may be given: each file gets one line, then a total. Exit codes hold
//! for every format: 0 every file valid; 1 a violation in some file; 2 bad input (a file that
//! cannot be read or parsed, an empty history) when nothing was violated; 3 unknown (a limit was
//! reached) when nothing was violated and every file could be read.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use coordsim_checker::history::History;
use coordsim_checker::import::{self, ImportError, jepsen_edn};
use coordsim_checker::linearizability::models::{AppendKvModel, MultiRegisterModel, MutexModel, RegisterModel};
use coordsim_checker::linearizability::{self as lin, CheckOptions, Model, Operation, PartVerdict};
use coordsim_checker::properties::{Property, linearizable};
use coordsim_checker::verdict::Verdict;

use crate::load::InputError;

/// Exit code for "the checker could not decide".
pub const EXIT_UNKNOWN: u8 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// By extension (.json coordsim history, .log Jepsen etcd log, .edn Jepsen EDN), else by the
    /// first characters of the file.
    Auto,
    Json,
    JepsenLog,
    Edn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelName {
    /// From the records: :read/:write/:cas register, :acquire/:release mutex, :get/:put/:append kv,
    /// :txn multi-register.
    Auto,
    /// Read, write and compare-and-set on one register (Jepsen's cas-register).
    Register,
    /// Same model as `register`: it includes cas.
    CasRegister,
    /// Acquire and release of one lock.
    Mutex,
    /// String keys with get, put and append (Porcupine's kv data).
    Kv,
    /// Transactions of reads and writes over named registers (Knossos's multi-register).
    MultiRegister,
}

/// What `coordsim check` was asked.
#[derive(Clone, Debug)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    pub format: Format,
    pub model: ModelName,
    /// The register's initial value (`--initial 0`) or the multi-register's (`--initial x=0,y=0`);
    /// nil (never written) by default.
    pub initial: Option<String>,
    pub timeout: Duration,
    pub memory_limit_bytes: usize,
    /// The largest input file read (`--max-input`; [`crate::input::DEFAULT_LIMIT`]).
    pub max_input_bytes: u64,
}

/// One file's outcome.
pub(crate) struct Outcome {
    /// 0, 1, 2 or 3, as the exit codes.
    pub(crate) code: u8,
    /// The one line printed when several files are checked.
    pub(crate) line: String,
    /// The full report printed when one file is checked.
    detail: Vec<String>,
}

impl Outcome {
    fn bad_input(path: &Path, message: String) -> Outcome {
        let message = message.strip_prefix(&format!("{}: ", path.display())).map(str::to_string).unwrap_or(message);
        let line = crate::output::one_line(&format!("{}: bad input: {message}", path.display()));
        Outcome { code: 2, line, detail: Vec::new() }
    }
}

/// The limits of a command-line check.
pub(crate) fn options_of(request: &Request) -> CheckOptions {
    CheckOptions {
        time_limit: Some(request.timeout),
        memory_limit_bytes: Some(request.memory_limit_bytes),
        parallel: true,
        // A command-line check wants the verdict soon: the first failing partition found decides.
        first_failure_wins: true,
    }
}

pub fn run(request: &Request) -> Result<ExitCode, InputError> {
    let files = files_of(&request.paths)?;
    let options = options_of(request);
    if let [file] = files.as_slice() {
        let outcome = check_file(file, request, &options);
        if outcome.code == 2 && outcome.detail.is_empty() {
            return Err(InputError::Usage(outcome.line));
        }
        for line in &outcome.detail {
            crate::outln!("{line}");
        }
        return Ok(ExitCode::from(outcome.code));
    }
    let mut counts = [0usize; 4];
    let started = Instant::now();
    for file in &files {
        let outcome = check_file(file, request, &options);
        counts[usize::from(outcome.code)] += 1;
        crate::outln!("{}", outcome.line);
    }
    crate::outln!(
        "{} files in {:.2} s: {} valid, {} violated, {} unknown, {} bad input",
        files.len(),
        started.elapsed().as_secs_f64(),
        counts[0],
        counts[1],
        counts[3],
        counts[2]
    );
    let code = if counts[1] > 0 {
        1
    } else if counts[2] > 0 {
        2
    } else if counts[3] > 0 {
        EXIT_UNKNOWN
    } else {
        0
    };
    Ok(ExitCode::from(code))
}

/// The files named, folders walked in name order (their files with a history's extension:
/// .json, .log, .edn, .txt; hidden entries skipped).
pub(crate) fn files_of(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut files = Vec::new();
    for path in paths {
        let metadata =
            std::fs::metadata(path).map_err(|error| InputError::Io { path: path.display().to_string(), error })?;
        if metadata.is_dir() {
            let before = files.len();
            walk(path, &mut files)?;
            if files.len() == before {
                return Err(InputError::Usage(format!(
                    "{}: no history files in this folder (.json, .log, .edn, .txt)",
                    path.display()
                )));
            }
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

fn walk(folder: &Path, files: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let io = |error| InputError::Io { path: folder.display().to_string(), error };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(io)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    for entry in entries {
        let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name.ends_with(".report.html") {
            continue;
        }
        if entry.is_dir() {
            walk(&entry, files)?;
        } else if matches!(entry.extension().and_then(|e| e.to_str()), Some("json" | "log" | "edn" | "txt")) {
            files.push(entry);
        }
    }
    Ok(())
}

pub(crate) fn check_file(path: &Path, request: &Request, options: &CheckOptions) -> Outcome {
    let text = match crate::input::read_text(path, request.max_input_bytes) {
        Ok(text) => text,
        Err(error @ crate::input::InputFileError::TooLarge { .. }) => {
            return Outcome::bad_input(path, format!("{error} (--max-input raises it)"));
        }
        Err(error) => return Outcome::bad_input(path, error.to_string()),
    };
    check_text(path, &text, request, options)
}

/// [`check_file`] of a text already read; `path` names it and sets the format by extension.
pub(crate) fn check_text(path: &Path, text: &str, request: &Request, options: &CheckOptions) -> Outcome {
    let format = match request.format {
        Format::Auto => match format_of(path, text) {
            Some(format) => format,
            None => {
                return Outcome::bad_input(
                    path,
                    "cannot tell the format from the extension or the first line; pass --format json|jepsen-log|edn"
                        .into(),
                );
            }
        },
        other => other,
    };
    let result = match format {
        Format::Json => Ok(check_json(path, text, options)),
        Format::JepsenLog => match request.model {
            ModelName::Auto | ModelName::Register | ModelName::CasRegister => initial_register(request)
                .and_then(|model| Ok((model, import::porcupine_log::parse(text, Some(path)).map_err(import_error)?)))
                .map(|(model, history)| judge(path, "register", &model, &history, options, |_| None)),
            _ => Err("a Jepsen etcd log is a register history: use --model register".to_string()),
        },
        Format::Edn => check_edn(path, text, request, options),
        Format::Auto => unreachable!("auto was resolved above"),
    };
    result.unwrap_or_else(|message| Outcome::bad_input(path, message))
}

/// The format by extension, else by the first non-blank characters: `{"` a coordsim history,
/// `INFO` a Jepsen etcd log, `{:`, `[`, `(` or `;` EDN.
fn format_of(path: &Path, text: &str) -> Option<Format> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => return Some(Format::Json),
        Some("log") => return Some(Format::JepsenLog),
        Some("edn") => return Some(Format::Edn),
        _ => {}
    }
    let start = text.trim_start();
    if start.starts_with("INFO") {
        Some(Format::JepsenLog)
    } else if start.starts_with('{') && start[1..].trim_start().starts_with('"') {
        Some(Format::Json)
    } else if start.starts_with(['{', '[', '(', ';']) {
        Some(Format::Edn)
    } else {
        None
    }
}

fn import_error(error: ImportError) -> String {
    error.to_string()
}

fn check_edn(path: &Path, text: &str, request: &Request, options: &CheckOptions) -> Result<Outcome, String> {
    let flavor = match request.model {
        // No record names a known operation: the register's import says what is wrong with them
        // (or, for records of the nemesis alone, finds no client operations).
        ModelName::Auto => jepsen_edn::Flavor::detect(text).unwrap_or(jepsen_edn::Flavor::Register),
        ModelName::Register | ModelName::CasRegister => jepsen_edn::Flavor::Register,
        ModelName::Mutex => jepsen_edn::Flavor::Mutex,
        ModelName::Kv => jepsen_edn::Flavor::AppendKv,
        ModelName::MultiRegister => jepsen_edn::Flavor::MultiRegister,
    };
    let file = Some(path);
    Ok(match flavor {
        jepsen_edn::Flavor::Register => {
            let model = initial_register(request)?;
            let history = jepsen_edn::register(text, file).map_err(import_error)?;
            judge(path, "register", &model, &history, options, |_| None)
        }
        jepsen_edn::Flavor::Mutex => {
            no_initial(request, "mutex")?;
            let history = jepsen_edn::mutex(text, file).map_err(import_error)?;
            judge(path, "mutex", &MutexModel, &history, options, |_| None)
        }
        jepsen_edn::Flavor::AppendKv => {
            no_initial(request, "kv")?;
            let history = jepsen_edn::append_kv(text, file).map_err(import_error)?;
            judge(path, "kv", &AppendKvModel, &history, options, |op| Some(format!("key {:?}", op.input.key)))
        }
        jepsen_edn::Flavor::MultiRegister => {
            let model = initial_registers(request)?;
            let history = jepsen_edn::multi_register(text, file).map_err(import_error)?;
            judge(path, "multi-register", &model, &history, options, |op| {
                let keys: std::collections::BTreeSet<&str> = op.input.steps.iter().map(|s| s.key()).collect();
                Some(format!("keys {}", keys.into_iter().collect::<Vec<_>>().join(",")))
            })
        }
    })
}

fn initial_register(request: &Request) -> Result<RegisterModel<i64>, String> {
    match &request.initial {
        None => Ok(RegisterModel::new()),
        Some(text) => text.trim().parse().map(RegisterModel::starting_at).map_err(|_| {
            format!("--initial {}: a register's initial value is an integer, e.g. --initial 0", import::cut(text))
        }),
    }
}

/// `x=0,y=0`.
fn initial_registers(request: &Request) -> Result<MultiRegisterModel, String> {
    let Some(text) = &request.initial else {
        return Ok(MultiRegisterModel::default());
    };
    let mut values = std::collections::BTreeMap::new();
    for pair in text.split(',') {
        let parsed =
            pair.split_once('=').and_then(|(key, value)| Some((key.trim(), value.trim().parse::<i64>().ok()?)));
        match parsed {
            Some((key, value)) if !key.is_empty() => values.insert(key.trim_start_matches(':').to_string(), value),
            _ => {
                return Err(format!(
                    "--initial {}: a multi-register's initial values are key=integer pairs, e.g. --initial x=0,y=0",
                    import::cut(text)
                ));
            }
        };
    }
    Ok(MultiRegisterModel::new(values))
}

fn no_initial(request: &Request, model: &str) -> Result<(), String> {
    match request.initial {
        Some(_) => Err(format!("--initial applies to the register and multi-register models, not {model}")),
        None => Ok(()),
    }
}

/// Runs the linearizability checker on one history and words its verdict: the one-line summary
/// and, for a single file, the counterexample. `part_name` names a partition by one of its
/// operations (its key), for models that split by key.
fn judge<M: Model>(
    path: &Path,
    model_name: &str,
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    options: &CheckOptions,
    part_name: impl Fn(&Operation<M::Input, M::Output>) -> Option<String>,
) -> Outcome {
    let started = Instant::now();
    let checked = lin::check_with_stats(model, history, options);
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let head =
        format!("{}: {} operations, {model_name} model, checked in {elapsed_ms:.1} ms", path.display(), history.len());
    let (verdict, stats) = match checked {
        Ok(checked) => checked,
        Err(error) => return Outcome::bad_input(path, format!("malformed history: {error}")),
    };
    let name_of = |first_op: u64| history.iter().find(|op| op.id == first_op).and_then(&part_name);
    let mut detail = vec![head];
    if stats.parts.len() > 1 {
        let count = |wanted: fn(&PartVerdict) -> bool| stats.parts.iter().filter(|p| wanted(&p.verdict)).count();
        detail.push(format!(
            "  {} partitions: {} linearizable, {} not, {} unknown, {} not finished (decided elsewhere)",
            stats.parts.len(),
            count(|v| *v == PartVerdict::Linearizable),
            count(|v| *v == PartVerdict::Illegal),
            count(|v| matches!(v, PartVerdict::Unknown(_))),
            count(|v| *v == PartVerdict::Skipped),
        ));
    }
    let short = |verdict: &str| {
        format!("{}: {verdict} ({} operations, {model_name} model, {elapsed_ms:.1} ms)", path.display(), history.len())
    };
    match verdict {
        lin::Verdict::Ok => {
            detail.push("  linearizable".into());
            Outcome { code: 0, line: short("linearizable"), detail }
        }
        lin::Verdict::Unknown { reason } => {
            let what = unknown_message(reason, options);
            detail.push(format!("  unknown: {what}"));
            Outcome { code: EXIT_UNKNOWN, line: short(&format!("unknown, {what}")), detail }
        }
        lin::Verdict::Illegal(counterexample) => {
            let part = stats.parts.get(counterexample.partition);
            let named = part.and_then(|p| name_of(p.first_op)).map(|n| format!(", {n}")).unwrap_or_default();
            detail.push(format!("  NOT linearizable (partition {}{named})", counterexample.partition));
            let prefix: Vec<String> = counterexample.prefix.iter().map(|id| id.to_string()).collect();
            detail.push(format!(
                "  longest linearizable prefix ({} operations): {}",
                prefix.len(),
                if prefix.is_empty() { "(none)".to_string() } else { import::cut(&prefix.join(" ")) }
            ));
            detail.push(format!("  state after it: {}", import::cut(&counterexample.state_after_prefix)));
            detail.push("  operations that could not be placed next:".into());
            for stuck in &counterexample.stuck {
                detail.push(format!(
                    "    op {} (client {}): {}",
                    stuck.id,
                    stuck.client,
                    import::cut(&stuck.description)
                ));
            }
            Outcome {
                code: 1,
                line: short(&format!("NOT linearizable (partition {}{named})", counterexample.partition)),
                detail,
            }
        }
    }
}

/// The limit that stopped the search, its value, and the flag that raises it.
fn unknown_message(reason: lin::UnknownReason, options: &CheckOptions) -> String {
    let flag = match reason {
        lin::UnknownReason::TimeLimit => "--timeout",
        lin::UnknownReason::MemoryLimit => "--memory-limit",
    };
    format!("{}; raise {flag} to search further", linearizable::limit_reached(reason, options))
}

/// Our own history: the safety properties.
fn check_json(path: &Path, text: &str, options: &CheckOptions) -> Outcome {
    let history = match History::from_json(text) {
        Ok(history) => history,
        Err(error) => return Outcome::bad_input(path, error.to_string()),
    };
    if history.entries.is_empty() {
        return Outcome::bad_input(path, "the history is empty: no entries".into());
    }
    let mut detail = Vec::new();
    // A history recorded on a real cluster lacks the servers' own records: judge only what it can
    // decide, and say which were left out.
    let judged = Property::judged_on(&history);
    match &history.recorded_on {
        Some(on) => {
            detail.push(format!(
                "{} ({on}) run {} ({} entries)",
                history.scenario,
                history.seed,
                history.entries.len()
            ));
            let skipped: Vec<&str> = Property::ALL.iter().filter(|p| !judged.contains(p)).map(|p| p.id()).collect();
            detail.push(format!("  not judged on a history recorded {on}: {}", skipped.join(", ")));
        }
        None => {
            detail.push(format!("{} seed {} ({} entries)", history.scenario, history.seed, history.entries.len()));
        }
    };
    let (mut failed, mut unknown) = (Vec::new(), Vec::new());
    for &property in &judged {
        let report = property.check_with(&history, options);
        match report.verdict {
            Verdict::Fail => failed.push(report.property.clone()),
            Verdict::Unknown => unknown.push(report.property.clone()),
            Verdict::Pass => {}
        }
        detail.push(format!("  {:<18} {:<7} {}", report.property, report.verdict, report.summary));
        for finding in &report.findings {
            detail.push(format!("      {}", finding.message));
        }
    }
    if failed.is_empty() && !unknown.is_empty() {
        detail.push("  undecided: raise --timeout or --memory-limit to search further".into());
    }
    let (code, verdict) = if !failed.is_empty() {
        (1, format!("FAIL ({})", failed.join(", ")))
    } else if !unknown.is_empty() {
        (EXIT_UNKNOWN, format!("unknown ({})", unknown.join(", ")))
    } else {
        (0, "pass".to_string())
    };
    let line =
        format!("{}: {verdict} ({} entries, {} properties)", path.display(), history.entries.len(), judged.len());
    Outcome { code, line, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_the_extension_or_the_first_characters() {
        let cases = [
            ("a.json", "", Some(Format::Json)),
            ("a.log", "", Some(Format::JepsenLog)),
            ("a.edn", "", Some(Format::Edn)),
            ("a.txt", "{:process 0, :type :invoke}", Some(Format::Edn)),
            ("a.txt", "\n ( {:process 0} )", Some(Format::Edn)),
            ("a.txt", "  { \"scenario\": 1 }", Some(Format::Json)),
            ("a", "INFO  jepsen.util - 1 :invoke :read nil", Some(Format::JepsenLog)),
            ("a.txt", "hello", None),
            ("a.txt", "", None),
        ];
        for (name, text, expected) in cases {
            assert_eq!(format_of(Path::new(name), text), expected, "{name} {text:?}");
        }
    }
}
