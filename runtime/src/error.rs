//! Why a check failed, as a kind a report can group by and a message a
//! maintainer can act on. Both go into the check's record.

use std::fmt;

pub use hwmatrix_cell::ErrorKind;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    pub kind: ErrorKind,
    pub message: String,
}

impl CheckError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> CheckError {
        CheckError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CheckError {}

/// `result.map_err(kind.with("context"))`-style helper: wraps any error as a
/// `CheckError` of one kind.
pub trait Kind<T> {
    fn kind(self, kind: ErrorKind) -> Result<T, CheckError>;
}

impl<T, E: fmt::Display> Kind<T> for Result<T, E> {
    fn kind(self, kind: ErrorKind) -> Result<T, CheckError> {
        self.map_err(|e| CheckError::new(kind, e.to_string()))
    }
}
