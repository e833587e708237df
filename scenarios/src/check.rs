//! `coordsim check`: judge a recorded history. Our JSON histories get the safety properties;
//! Jepsen etcd logs (Porcupine's format) and Jepsen EDN histories get the linearizability
//! checker with the register (cas-register) or mutex model.
//!
//! Exit codes: 0 every property holds / linearizable; 1 a violation; 3 unknown (a limit was
//! reached); 2 bad input.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use coordsim_checker::history::History;
use coordsim_checker::import::{self, ImportError};
use coordsim_checker::linearizability::models::{MutexModel, RegisterModel};
use coordsim_checker::linearizability::{self as lin, CheckOptions, Model, Operation};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;

use crate::load::InputError;

/// Exit code for "the checker could not decide".
pub const EXIT_UNKNOWN: u8 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// By extension: .json = coordsim history, .log = Jepsen etcd log, .edn = Jepsen EDN.
    Auto,
    Json,
    JepsenLog,
    Edn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelName {
    /// Read, write and compare-and-set on one register (Jepsen's cas-register).
    Register,
    /// Same model as `register`: it includes cas.
    CasRegister,
    /// Acquire and release of one lock.
    Mutex,
}

pub fn run(path: &Path, format: Format, model: Option<ModelName>, timeout: Duration) -> Result<ExitCode, InputError> {
    let format = match format {
        Format::Auto => match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Format::Json,
            Some("log") => Format::JepsenLog,
            Some("edn") => Format::Edn,
            _ => {
                return Err(InputError::Usage(format!(
                    "{}: cannot tell the format from the extension; pass --format json|jepsen-log|edn",
                    path.display()
                )));
            }
        },
        other => other,
    };
    let options = CheckOptions { time_limit: Some(timeout), ..CheckOptions::default() };
    let model = model.unwrap_or(ModelName::Register);
    match (format, model) {
        (Format::Json, _) => check_json(path),
        (Format::JepsenLog, ModelName::Mutex) => {
            Err(InputError::Usage("a Jepsen etcd log is a register history: use --model register".into()))
        }
        (Format::JepsenLog, _) => {
            let history = import::porcupine_log::read(path).map_err(import_error)?;
            Ok(report(path, "register", &RegisterModel::<i64>::new(), &history, &options))
        }
        (Format::Edn, ModelName::Mutex) => {
            let history = import::jepsen_edn::read_mutex(path).map_err(import_error)?;
            Ok(report(path, "mutex", &MutexModel, &history, &options))
        }
        (Format::Edn, _) => {
            let history = import::jepsen_edn::read_register(path).map_err(import_error)?;
            Ok(report(path, "register", &RegisterModel::<i64>::new(), &history, &options))
        }
        (Format::Auto, _) => unreachable!("auto was resolved above"),
    }
}

fn import_error(error: ImportError) -> InputError {
    InputError::Usage(error.to_string())
}

/// Runs the linearizability checker and prints the verdict with its counterexample.
fn report<M: Model>(
    path: &Path,
    model_name: &str,
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    options: &CheckOptions,
) -> ExitCode {
    let started = Instant::now();
    let verdict = lin::check(model, history, options);
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    crate::outln!(
        "{}: {} operations, {model_name} model, checked in {elapsed_ms:.1} ms",
        path.display(),
        history.len()
    );
    match verdict {
        Err(error) => {
            crate::outln!("  malformed history: {error}");
            ExitCode::from(2)
        }
        Ok(lin::Verdict::Ok) => {
            crate::outln!("  linearizable");
            ExitCode::SUCCESS
        }
        Ok(lin::Verdict::Unknown { reason }) => {
            crate::outln!("  unknown: {reason} (raise --timeout to search longer)");
            ExitCode::from(EXIT_UNKNOWN)
        }
        Ok(lin::Verdict::Illegal(counterexample)) => {
            crate::outln!("  NOT linearizable (partition {})", counterexample.partition);
            let prefix: Vec<String> = counterexample.prefix.iter().map(|id| id.to_string()).collect();
            crate::outln!(
                "  longest linearizable prefix ({} operations): {}",
                prefix.len(),
                if prefix.is_empty() { "(none)".to_string() } else { prefix.join(" ") }
            );
            crate::outln!("  state after it: {}", counterexample.state_after_prefix);
            crate::outln!("  operations that could not be placed next:");
            for stuck in &counterexample.stuck {
                crate::outln!("    op {} (client {}): {}", stuck.id, stuck.client, stuck.description);
            }
            ExitCode::from(1)
        }
    }
}

/// Our own history: the safety properties.
fn check_json(path: &Path) -> Result<ExitCode, InputError> {
    let text =
        std::fs::read_to_string(path).map_err(|error| InputError::Io { path: path.display().to_string(), error })?;
    let history =
        History::from_json(&text).map_err(|error| InputError::Usage(format!("{}: {error}", path.display())))?;
    // A history recorded on a real cluster lacks the servers' own records: judge only what it can
    // decide, and say which were left out.
    let judged: &[Property] = match &history.recorded_on {
        Some(on) => {
            crate::outln!("{} ({on}) run {} ({} entries)", history.scenario, history.seed, history.entries.len());
            let skipped: Vec<&str> =
                Property::ALL.iter().filter(|p| !Property::FROM_OUTSIDE.contains(p)).map(|p| p.id()).collect();
            crate::outln!("  not judged on a history recorded {on}: {}", skipped.join(", "));
            &Property::FROM_OUTSIDE
        }
        None => {
            crate::outln!("{} seed {} ({} entries)", history.scenario, history.seed, history.entries.len());
            &Property::ALL
        }
    };
    let mut failed = false;
    for &property in judged {
        let report = property.check(&history);
        failed |= report.verdict == Verdict::Fail;
        crate::outln!("  {:<18} {:<7} {}", report.property, report.verdict, report.summary);
        for finding in &report.findings {
            crate::outln!("      {}", finding.message);
        }
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
