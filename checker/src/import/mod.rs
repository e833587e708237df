//! Importers: histories recorded by other tools, turned into [`crate::linearizability`] operations.
//!
//! - [`porcupine_log`]: the Jepsen etcd logs that Porcupine ships as test data (register model).
//! - [`jepsen_edn`]: Jepsen EDN histories, one map per operation (register, cas-register, mutex,
//!   Porcupine's kv with append, Knossos's multi-register).
//!
//! Both follow Jepsen's rules for pairing an invocation with its completion (see `pairing.rs`):
//! `:ok` completes, `:fail` means the operation did not take effect and drops it, `:info` means
//! the outcome is unknown and leaves the operation open to the end of the history. Each reads
//! the completions as the checker its files come from does: Porcupine's etcd logs as Porcupine (a
//! failed cas is a compare that failed), EDN as Knossos (a nil read is unknown); the module of
//! each format says so in full.
//!
//! Errors name the file (when known), the line and the field; malformed input never panics.

pub mod edn;
pub mod jepsen_edn;
mod pairing;
pub mod porcupine_log;
mod register;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::linearizability::Operation;
use crate::linearizability::models::{RegisterInput, RegisterOutput};

/// A register history as the importers produce it.
pub type RegisterHistory = Vec<Operation<RegisterInput<i64>, RegisterOutput<i64>>>;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}line {line}: field `{field}`: {message}", FileLabel(file.as_deref()))]
    Malformed { file: Option<PathBuf>, line: usize, field: &'static str, message: String },
    /// No operation records at all (blank, or only comments and nemesis records): nothing to
    /// check, which is bad input rather than a history that trivially passes.
    #[error("{}the history is empty: no operation records", FileLabel(file.as_deref()))]
    Empty { file: Option<PathBuf> },
}

/// A problem with one field, before the importer adds where it was.
#[derive(Debug)]
pub(crate) struct FieldError {
    pub(crate) field: &'static str,
    pub(crate) message: String,
}

impl FieldError {
    pub(crate) fn new(field: &'static str, message: impl Into<String>) -> Self {
        FieldError { field, message: message.into() }
    }

    pub(crate) fn at(self, file: Option<&Path>, line: usize) -> ImportError {
        ImportError::Malformed { file: file.map(Path::to_path_buf), line, field: self.field, message: self.message }
    }
}

struct FileLabel<'a>(Option<&'a Path>);

impl fmt::Display for FileLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(path) => write!(f, "{}: ", path.display()),
            None => Ok(()),
        }
    }
}

/// A value as shown in an error message: its debug form, cut to a readable length (a 10 MB line
/// must not come back as 20 MB of stderr).
pub(crate) fn brief(value: &dyn fmt::Debug) -> String {
    cut(&format!("{value:?}"))
}

/// Text from the input as shown in an error message: at most 80 characters, then how long it was.
pub fn cut(text: &str) -> String {
    const SHOWN: usize = 80;
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}… ({} characters)", &text[..end], text.chars().count()),
        None => text.to_string(),
    }
}

pub(crate) fn read_to_string(path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|source| ImportError::Io { path: path.to_path_buf(), source })
}
