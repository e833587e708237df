//! Jepsen register operations (`:read`, `:write`, `:cas`) as register model inputs and outputs.
//! Values are integers; a read of a never-written register returns nil.

use super::FieldError;
use super::edn::Edn;
use crate::linearizability::models::{RegisterInput, RegisterOutput};

/// An invocation's input. A read's value is ignored (Jepsen writes nil); a write carries its value;
/// a cas carries `[expected new]`.
pub(crate) fn input(f: &str, value: &Edn) -> Result<RegisterInput<i64>, FieldError> {
    match f {
        "read" => Ok(RegisterInput::Read),
        "write" => Ok(RegisterInput::Write(int(value)?)),
        "cas" => {
            let (expected, new) = pair(value)?;
            Ok(RegisterInput::Cas { expected, new })
        }
        _ => Err(unknown_f(f)),
    }
}

/// An `:ok` completion's output. A read's value is what it read; write and cas echo their
/// invocation, whose value is the one used.
pub(crate) fn ok_output(f: &str, value: &Edn) -> Result<RegisterOutput<i64>, FieldError> {
    match f {
        "read" => match value {
            Edn::Nil => Ok(RegisterOutput::Read(None)),
            other => Ok(RegisterOutput::Read(Some(int(other)?))),
        },
        "write" => Ok(RegisterOutput::Write),
        "cas" => Ok(RegisterOutput::Cas { swapped: true }),
        _ => Err(unknown_f(f)),
    }
}

fn unknown_f(f: &str) -> FieldError {
    FieldError::new("f", format!("`{f}` is not a register operation (read, write, cas)"))
}

fn int(value: &Edn) -> Result<i64, FieldError> {
    value
        .as_int()
        .ok_or_else(|| FieldError::new("value", format!("expected an integer, found {}", super::brief(value))))
}

fn pair(value: &Edn) -> Result<(i64, i64), FieldError> {
    match value {
        Edn::Vector(items) | Edn::List(items) if items.len() == 2 => Ok((int(&items[0])?, int(&items[1])?)),
        _ => Err(FieldError::new("value", format!("expected [expected new], found {}", super::brief(value)))),
    }
}
