//! Jepsen EDN histories: one map per operation event, e.g.
//!
//! ```text
//! {:type :invoke, :f :cas, :value [1 2], :process 3, :time 1200}
//! {:type :ok,     :f :cas, :value [1 2], :process 3, :time 3400}
//! ```
//!
//! The maps may stand one per line (Jepsen's `history.edn`) or inside one top-level vector or list
//! (`[ … ]` or `( … )`, as Knossos's data files have both).
//! `:type` is `:invoke`, `:ok`, `:fail` or `:info`; `:process` is an integer (records of other
//! processes, such as `:nemesis`, are skipped: they are faults, not operations on the object);
//! `:time` is in nanoseconds. If the first operation record has no `:time`, none may have one and a
//! record's position (1, 2, …) is its time. Other keys (`:index`, `:error`, …) are ignored.
//!
//! Completions are read as Knossos reads them: `:ok` took effect, `:fail` did not (dropped),
//! `:info` may have, at any time after its invocation (open to the end).
//!
//! Models ([`Flavor`] picks one from the records' `:f` when the caller does not):
//! - [`register`]: `:read`, `:write v`, `:cas [expected new]` — Knossos's register and
//!   cas-register both map to the one register model. A read that returned nil is a read whose
//!   value is not known and is dropped: Knossos's models accept a nil read in any state ("we
//!   don't know what the read was").
//! - [`mutex`]: `:acquire` and `:release`; the owner is the client (process incarnation) that
//!   invoked. A `:fail` acquire did not get the lock and is dropped.
//! - [`append_kv`]: Porcupine's kv data: `:get`, `:put`, `:append` with `:key` and string values.
//! - [`multi_register`]: Knossos's multi-register: `:txn` whose value is a list of
//!   `[:read k v]` / `[:write k v]` steps; the completion's reads carry the values read.

use std::path::Path;

use super::edn::{Edn, Reader};
use super::pairing::{Completion, Pairing};
use super::{FieldError, ImportError, RegisterHistory, brief, read_to_string, register as register_ops};
use crate::linearizability::Operation;
use crate::linearizability::models::{
    AppendKvInput, AppendKvOp, AppendKvOutput, MicroOp, MultiRegisterInput, MultiRegisterOutput, MutexInput,
    MutexOutput, RegisterInput, RegisterOutput,
};

/// A mutex history as this importer produces it.
pub type MutexHistory = Vec<Operation<MutexInput, MutexOutput>>;
/// A history of Porcupine's kv data.
pub type AppendKvHistory = Vec<Operation<AppendKvInput, AppendKvOutput>>;
/// A history of Knossos's multi-register transactions.
pub type MultiRegisterHistory = Vec<Operation<MultiRegisterInput, MultiRegisterOutput>>;

/// The model a history's records are written for, as told by their `:f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `:read`, `:write`, `:cas`.
    Register,
    /// `:acquire`, `:release`.
    Mutex,
    /// `:get`, `:put`, `:append` (with `:key`).
    AppendKv,
    /// `:txn`.
    MultiRegister,
}

impl Flavor {
    /// The flavor of the first record whose `:f` names a known operation; `None` if no record does.
    /// It reads the text, not the parsed forms, so it is cheap on a large file; the import that
    /// follows checks every record against the flavor found.
    pub fn detect(text: &str) -> Option<Flavor> {
        let mut rest = text;
        while let Some(at) = rest.find(":f") {
            rest = &rest[at + 2..];
            let after = rest.trim_start_matches([' ', '\t', ',', '\n', '\r']);
            let Some(name) = after.strip_prefix(':') else { continue };
            let end = name.find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')).unwrap_or(name.len());
            let flavor = match &name[..end] {
                "read" | "write" | "cas" => Flavor::Register,
                "acquire" | "release" => Flavor::Mutex,
                "get" | "put" | "append" => Flavor::AppendKv,
                "txn" => Flavor::MultiRegister,
                _ => continue,
            };
            return Some(flavor);
        }
        None
    }
}

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

/// A history of Porcupine's kv test data; `file` only labels errors.
pub fn append_kv(text: &str, file: Option<&Path>) -> Result<AppendKvHistory, ImportError> {
    import(text, file, &AppendKvFlavor)
}

/// A Knossos multi-register history; `file` only labels errors.
pub fn multi_register(text: &str, file: Option<&Path>) -> Result<MultiRegisterHistory, ImportError> {
    import(text, file, &MultiRegisterFlavor)
}

/// The history a flavor's import produces.
type History<F> = Vec<Operation<<F as Records>::Input, <F as Records>::Output>>;

/// How one model reads the `:f`, `:value` (and other keys) of its records.
trait Records {
    type Input;
    type Output;
    fn input(&self, f: &str, value: &Edn, record: &Edn, client: u64) -> Result<Self::Input, FieldError>;
    fn ok_output(&self, f: &str, value: &Edn) -> Result<Completion<Self::Output>, FieldError>;
}

struct RegisterFlavor;

impl Records for RegisterFlavor {
    type Input = RegisterInput<i64>;
    type Output = RegisterOutput<i64>;

    fn input(&self, f: &str, value: &Edn, _record: &Edn, _client: u64) -> Result<Self::Input, FieldError> {
        register_ops::input(f, value)
    }

    fn ok_output(&self, f: &str, value: &Edn) -> Result<Completion<Self::Output>, FieldError> {
        if f == "read" && *value == Edn::Nil {
            // Knossos: a nil read is legal in every state, so it constrains nothing.
            return Ok(Completion::Fail);
        }
        register_ops::ok_output(f, value).map(Completion::Ok)
    }
}

struct MutexFlavor;

impl Records for MutexFlavor {
    type Input = MutexInput;
    type Output = MutexOutput;

    fn input(&self, f: &str, _value: &Edn, _record: &Edn, owner: u64) -> Result<MutexInput, FieldError> {
        match f {
            "acquire" => Ok(MutexInput::Acquire { owner }),
            "release" => Ok(MutexInput::Release { owner }),
            _ => Err(not_mutex(f)),
        }
    }

    fn ok_output(&self, f: &str, _value: &Edn) -> Result<Completion<MutexOutput>, FieldError> {
        match f {
            "acquire" | "release" => Ok(Completion::Ok(MutexOutput::Ok)),
            _ => Err(not_mutex(f)),
        }
    }
}

fn not_mutex(f: &str) -> FieldError {
    FieldError::new("f", format!("`{}` is not a mutex operation (acquire, release)", brief(&f)))
}

struct AppendKvFlavor;

impl Records for AppendKvFlavor {
    type Input = AppendKvInput;
    type Output = AppendKvOutput;

    fn input(&self, f: &str, value: &Edn, record: &Edn, _client: u64) -> Result<AppendKvInput, FieldError> {
        let key = match record.get("key") {
            Some(Edn::Str(key)) => key.clone(),
            Some(Edn::Int(key)) => key.to_string(),
            Some(other) => return Err(FieldError::new("key", format!("expected a string, found {}", brief(other)))),
            None => return Err(FieldError::new("key", "missing")),
        };
        let op = match f {
            "get" => AppendKvOp::Get,
            "put" => AppendKvOp::Put(string(value)?),
            "append" => AppendKvOp::Append(string(value)?),
            _ => return Err(FieldError::new("f", format!("`{}` is not a kv operation (get, put, append)", brief(&f)))),
        };
        Ok(AppendKvInput { key, op })
    }

    fn ok_output(&self, f: &str, value: &Edn) -> Result<Completion<AppendKvOutput>, FieldError> {
        match f {
            // Porcupine's data writes a key never written as "" (its model's initial state).
            "get" => Ok(Completion::Ok(AppendKvOutput::Get(match value {
                Edn::Nil => String::new(),
                other => string(other)?,
            }))),
            "put" | "append" => Ok(Completion::Ok(AppendKvOutput::Done)),
            _ => Err(FieldError::new("f", format!("`{}` is not a kv operation (get, put, append)", brief(&f)))),
        }
    }
}

fn string(value: &Edn) -> Result<String, FieldError> {
    match value {
        Edn::Str(text) => Ok(text.clone()),
        other => Err(FieldError::new("value", format!("expected a string, found {}", brief(other)))),
    }
}

struct MultiRegisterFlavor;

impl Records for MultiRegisterFlavor {
    type Input = MultiRegisterInput;
    type Output = MultiRegisterOutput;

    fn input(&self, f: &str, value: &Edn, _record: &Edn, _client: u64) -> Result<MultiRegisterInput, FieldError> {
        not_txn(f)?;
        // The invocation's reads carry nil; a value there would be ignored by Knossos too.
        let steps = micro_ops(value)?
            .into_iter()
            .map(|step| match step {
                MicroOp::Read { key, .. } => MicroOp::Read { key, value: None },
                write => write,
            })
            .collect();
        Ok(MultiRegisterInput { steps })
    }

    fn ok_output(&self, f: &str, value: &Edn) -> Result<Completion<MultiRegisterOutput>, FieldError> {
        not_txn(f)?;
        Ok(Completion::Ok(MultiRegisterOutput { steps: micro_ops(value)? }))
    }
}

fn not_txn(f: &str) -> Result<(), FieldError> {
    match f {
        "txn" => Ok(()),
        _ => Err(FieldError::new("f", format!("`{}` is not a multi-register operation (txn)", brief(&f)))),
    }
}

/// `[[:read :x nil] [:write :y 2] …]`.
fn micro_ops(value: &Edn) -> Result<Vec<MicroOp>, FieldError> {
    let (Edn::Vector(steps) | Edn::List(steps)) = value else {
        return Err(FieldError::new("value", format!("expected a list of [f k v] steps, found {}", brief(value))));
    };
    steps
        .iter()
        .map(|step| {
            let bad = || {
                FieldError::new("value", format!("expected a step [:read k v] or [:write k v], found {}", brief(step)))
            };
            let (Edn::Vector(parts) | Edn::List(parts)) = step else { return Err(bad()) };
            let [f, key, v] = parts.as_slice() else { return Err(bad()) };
            let key = match key {
                Edn::Keyword(name) | Edn::Str(name) => name.clone(),
                Edn::Int(n) => n.to_string(),
                _ => return Err(bad()),
            };
            match (f.as_keyword(), v) {
                (Some("read"), Edn::Nil) => Ok(MicroOp::Read { key, value: None }),
                (Some("read"), Edn::Int(n)) => Ok(MicroOp::Read { key, value: Some(*n) }),
                (Some("write"), Edn::Int(n)) => Ok(MicroOp::Write { key, value: *n }),
                _ => Err(bad()),
            }
        })
        .collect()
}

fn import<F: Records>(text: &str, file: Option<&Path>, flavor: &F) -> Result<History<F>, ImportError> {
    let mut reader = Reader::new(text);
    let edn_error = |e: super::edn::EdnError| FieldError::new("edn", e.to_string()).at(file, e.line);
    let close = if reader.enter('[').map_err(edn_error)? {
        Some(']')
    } else if reader.enter('(').map_err(edn_error)? {
        Some(')')
    } else {
        None
    };
    let mut pairing = Pairing::new();
    let mut clock = Clock::Unset;
    let mut position = 0u64;
    loop {
        let next = match close {
            Some(close) => reader.next_element(close),
            None => reader.next_form(),
        };
        let Some((line, form)) = next.map_err(edn_error)? else {
            break;
        };
        position += 1;
        apply(flavor, &mut pairing, &mut clock, position, line, &form).map_err(|e| e.at(file, line))?;
    }
    if let Some(close) = close
        && reader.next_form().map_err(edn_error)?.is_some()
    {
        let line = text.lines().count();
        return Err(FieldError::new("edn", format!("text after the history's closing `{close}`")).at(file, line));
    }
    // No records at all is no history; records of the nemesis alone are a history in which no
    // client operated (Knossos calls it valid, and so does the checker).
    if position == 0 {
        return Err(ImportError::Empty { file: file.map(Path::to_path_buf) });
    }
    Ok(pairing.finish())
}

/// Where times come from: decided by the first operation record.
enum Clock {
    Unset,
    Recorded,
    Position,
}

fn apply<F: Records>(
    flavor: &F,
    pairing: &mut Pairing<F::Input, F::Output>,
    clock: &mut Clock,
    position: u64,
    line: usize,
    form: &Edn,
) -> Result<(), FieldError> {
    if !matches!(form, Edn::Map(_)) {
        return Err(FieldError::new("edn", format!("expected an operation map, found {}", brief(form))));
    }
    let process = match form.get("process") {
        Some(Edn::Int(process)) => *process,
        // The nemesis and other non-client actors: not operations on the object.
        Some(Edn::Keyword(_)) => return Ok(()),
        Some(other) => {
            return Err(FieldError::new("process", format!("expected an integer, found {}", brief(other))));
        }
        None => return Err(FieldError::new("process", "missing")),
    };
    let kind = keyword(form, "type")?;
    let f = keyword(form, "f")?;
    let time = time_of(form, clock, position)?;
    let value = form.get("value").unwrap_or(&Edn::Nil);
    match kind {
        "invoke" => pairing.invoke(line, process, f, time, |client| flavor.input(f, value, form, client)),
        "ok" => {
            let completion = flavor.ok_output(f, value)?;
            pairing.complete(process, f, time, completion)
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
        (_, Some(other)) => {
            Err(FieldError::new("time", format!("expected a non-negative integer, found {}", brief(other))))
        }
    }
}

fn keyword<'a>(form: &'a Edn, field: &'static str) -> Result<&'a str, FieldError> {
    match form.get(field) {
        Some(Edn::Keyword(name)) => Ok(name),
        Some(other) => Err(FieldError::new(field, format!("expected a keyword, found {}", brief(other)))),
        None => Err(FieldError::new(field, "missing")),
    }
}
