//! Jepsen EDN histories: one map per operation event, e.g.
//!
//! ```text
//! {:type :invoke, :f :cas, :value [1 2], :process 3, :time 1200}
//! {:type :ok,     :f :cas, :value [1 2], :process 3, :time 3400}
//! ```
//!
//! The maps may stand one per line (Jepsen's `history.edn`) or inside one top-level vector.
//! `:type` is `:invoke`, `:ok`, `:fail` or `:info`; `:process` is an integer (records of other
//! processes, such as `:nemesis`, are skipped: they are faults, not operations on the object);
//! `:time` is in nanoseconds. If the first operation record has no `:time`, none may have one and a
//! record's position (1, 2, …) is its time. Other keys (`:index`, `:error`, …) are ignored.
//!
//! Models:
//! - [`register`]: `:read` (value read, nil if never written), `:write v`, `:cas [expected new]` —
//!   Knossos' register and cas-register both map to the one register model.
//! - [`mutex`]: `:acquire` and `:release`; the owner is the client (process incarnation) that
//!   invoked. A `:fail` acquire did not get the lock and is dropped.

use std::path::Path;

use super::edn::{Edn, Reader};
use super::pairing::{Completion, Pairing};
use super::{FieldError, ImportError, RegisterHistory, read_to_string, register as register_ops};
use crate::linearizability::Operation;
use crate::linearizability::models::{MutexInput, MutexOutput, RegisterInput, RegisterOutput};

/// A mutex history as this importer produces it.
pub type MutexHistory = Vec<Operation<MutexInput, MutexOutput>>;

pub fn read_register(path: &Path) -> Result<RegisterHistory, ImportError> {
    register(&read_to_string(path)?, Some(path))
}

pub fn read_mutex(path: &Path) -> Result<MutexHistory, ImportError> {
    mutex(&read_to_string(path)?, Some(path))
}

/// A register or cas-register history; `file` only labels errors.
pub fn register(text: &str, file: Option<&Path>) -> Result<RegisterHistory, ImportError> {
    import(text, file, &RegisterFlavor)
}

/// A mutex history; `file` only labels errors.
pub fn mutex(text: &str, file: Option<&Path>) -> Result<MutexHistory, ImportError> {
    import(text, file, &MutexFlavor)
}

/// The history a flavor's import produces.
type History<F> = Vec<Operation<<F as Flavor>::Input, <F as Flavor>::Output>>;

/// How one model reads the `:f` and `:value` of its records.
trait Flavor {
    type Input;
    type Output;
    fn input(&self, f: &str, value: &Edn, client: u64) -> Result<Self::Input, FieldError>;
    fn ok_output(&self, f: &str, value: &Edn) -> Result<Self::Output, FieldError>;
}

struct RegisterFlavor;

impl Flavor for RegisterFlavor {
    type Input = RegisterInput<i64>;
    type Output = RegisterOutput<i64>;

    fn input(&self, f: &str, value: &Edn, _client: u64) -> Result<Self::Input, FieldError> {
        register_ops::input(f, value)
    }

    fn ok_output(&self, f: &str, value: &Edn) -> Result<Self::Output, FieldError> {
        register_ops::ok_output(f, value)
    }
}

struct MutexFlavor;

impl Flavor for MutexFlavor {
    type Input = MutexInput;
    type Output = MutexOutput;

    fn input(&self, f: &str, _value: &Edn, owner: u64) -> Result<MutexInput, FieldError> {
        match f {
            "acquire" => Ok(MutexInput::Acquire { owner }),
            "release" => Ok(MutexInput::Release { owner }),
            _ => Err(not_mutex(f)),
        }
    }

    fn ok_output(&self, f: &str, _value: &Edn) -> Result<MutexOutput, FieldError> {
        match f {
            "acquire" | "release" => Ok(MutexOutput::Ok),
            _ => Err(not_mutex(f)),
        }
    }
}

fn not_mutex(f: &str) -> FieldError {
    FieldError::new("f", format!("`{f}` is not a mutex operation (acquire, release)"))
}

fn import<F: Flavor>(text: &str, file: Option<&Path>, flavor: &F) -> Result<History<F>, ImportError> {
    let mut reader = Reader::new(text);
    let edn_error = |e: super::edn::EdnError| FieldError::new("edn", e.to_string()).at(file, e.line);
    let in_vector = reader.enter('[').map_err(edn_error)?;
    let mut pairing = Pairing::new();
    let mut clock = Clock::Unset;
    let mut position = 0u64;
    loop {
        let next = match in_vector {
            true => reader.next_element(']'),
            false => reader.next_form(),
        };
        let Some((line, form)) = next.map_err(edn_error)? else {
            break;
        };
        position += 1;
        apply(flavor, &mut pairing, &mut clock, position, line, &form).map_err(|e| e.at(file, line))?;
    }
    if in_vector && reader.next_form().map_err(edn_error)?.is_some() {
        let line = text.lines().count();
        return Err(FieldError::new("edn", "text after the history's closing `]`").at(file, line));
    }
    Ok(pairing.finish())
}

/// Where times come from: decided by the first operation record.
enum Clock {
    Unset,
    Recorded,
    Position,
}

fn apply<F: Flavor>(
    flavor: &F,
    pairing: &mut Pairing<F::Input, F::Output>,
    clock: &mut Clock,
    position: u64,
    line: usize,
    form: &Edn,
) -> Result<(), FieldError> {
    if !matches!(form, Edn::Map(_)) {
        return Err(FieldError::new("edn", format!("expected a map, found {form:?}")));
    }
    let process = match form.get("process") {
        Some(Edn::Int(process)) => *process,
        // The nemesis and other non-client actors: not operations on the object.
        Some(Edn::Keyword(_)) => return Ok(()),
        Some(other) => {
            return Err(FieldError::new("process", format!("expected an integer, found {other:?}")));
        }
        None => return Err(FieldError::new("process", "missing")),
    };
    let kind = keyword(form, "type")?;
    let f = keyword(form, "f")?;
    let time = time_of(form, clock, position)?;
    let value = form.get("value").unwrap_or(&Edn::Nil);
    match kind {
        "invoke" => pairing.invoke(line, process, f, time, |client| flavor.input(f, value, client)),
        "ok" => {
            let output = flavor.ok_output(f, value)?;
            pairing.complete(process, f, time, Completion::Ok(output))
        }
        "fail" => pairing.complete(process, f, time, Completion::Fail),
        "info" => pairing.complete(process, f, time, Completion::Info),
        other => Err(FieldError::new("type", format!("expected :invoke, :ok, :fail or :info, found :{other}"))),
    }
}

fn time_of(form: &Edn, clock: &mut Clock, position: u64) -> Result<u64, FieldError> {
    let recorded = form.get("time");
    if matches!(clock, Clock::Unset) {
        *clock = if recorded.is_some() { Clock::Recorded } else { Clock::Position };
    }
    match (clock, recorded) {
        (Clock::Position, None) => Ok(position),
        (Clock::Position, Some(_)) => Err(FieldError::new(
            "time",
            "present, but the first operation had none: times must be given for all or none",
        )),
        (_, None) => Err(FieldError::new("time", "missing (the first operation had one)")),
        (_, Some(Edn::Int(time))) if *time >= 0 => Ok(*time as u64),
        (_, Some(other)) => Err(FieldError::new("time", format!("expected a non-negative integer, found {other:?}"))),
    }
}

fn keyword<'a>(form: &'a Edn, field: &'static str) -> Result<&'a str, FieldError> {
    match form.get(field) {
        Some(Edn::Keyword(name)) => Ok(name),
        Some(other) => Err(FieldError::new(field, format!("expected a keyword, found {other:?}"))),
        None => Err(FieldError::new(field, "missing")),
    }
}
