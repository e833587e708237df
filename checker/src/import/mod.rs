//! Importers: histories recorded by other tools, turned into [`crate::linearizability`] operations.
//!
//! - [`porcupine_log`]: the Jepsen etcd logs that Porcupine ships as test data (register model).
//! - [`jepsen_edn`]: Jepsen EDN histories, one map per operation (register, cas-register, mutex).
//!
//! Both follow Jepsen's rules for pairing an invocation with its completion (see `pairing.rs`):
//! `:ok` completes, `:fail` means the operation did not take effect and drops it, `:info` means
//! the outcome is unknown and leaves the operation open to the end of the history.
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

pub(crate) fn read_to_string(path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|source| ImportError::Io { path: path.to_path_buf(), source })
}
