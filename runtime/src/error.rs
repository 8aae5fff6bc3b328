//! Why a check failed, as a kind a report can group by and a message a
//! maintainer can act on. Both go into the check's record.

use std::fmt;

use serde::Serialize;

use crate::Stage;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The platform's hardware or system pieces are not on this machine.
    PlatformAbsent,
    /// The platform's engine is not built into this runtime yet.
    EngineNotBuilt,
    /// The engine's library (e.g. libonnxruntime) cannot be found or loaded.
    LibraryMissing,
    /// The execution provider refused to register (no silent CPU fallback).
    ProviderRegistration,
    /// Nodes ran on another provider than the one the cell asked for.
    ProviderFallback,
    /// The engine's own account of where nodes ran is missing or unreadable.
    ProviderUnverified,
    /// No fixture for the model has been built.
    FixtureMissing,
    /// The fixture was built from another spec or exporter than this cell's.
    FixtureStale,
    /// The fixture breaks the contract (meta.json, npy files).
    FixtureInvalid,
    /// The exporter could not export the model.
    ExportFailed,
    /// The engine could not load the model.
    ModelLoad,
    /// The engine failed while running the model.
    RunFailed,
    /// Output names, dtypes or shapes differ from the spec.
    OutputMismatch,
    /// An output holds NaN or infinity.
    NonFinite,
    /// Outputs differ from the reference beyond the tolerance.
    OutOfTolerance,
    /// A constant output would pass: the reference cannot catch a wrong model.
    ReferenceNotInformative,
    /// A step of the check ran past its time limit.
    Timeout,
    /// The engine's process (the browser) exited or was killed during the run.
    EngineExited,
    /// The check's record could not be written.
    RecordWrite,
}

impl ErrorKind {
    /// The stage a check that failed this way stopped at; None where it never
    /// reached the model (the platform, library, fixture or record is the
    /// problem: the set-up's, which says nothing about the model).
    pub fn stage(self) -> Option<Stage> {
        match self {
            ErrorKind::ExportFailed => Some(Stage::Export),
            ErrorKind::ProviderRegistration | ErrorKind::ModelLoad => Some(Stage::Load),
            ErrorKind::RunFailed | ErrorKind::ProviderFallback | ErrorKind::ProviderUnverified | ErrorKind::Timeout | ErrorKind::EngineExited => Some(Stage::Run),
            ErrorKind::OutputMismatch | ErrorKind::NonFinite | ErrorKind::OutOfTolerance | ErrorKind::ReferenceNotInformative => {
                Some(Stage::Mismatch)
            }
            ErrorKind::PlatformAbsent
            | ErrorKind::EngineNotBuilt
            | ErrorKind::LibraryMissing
            | ErrorKind::FixtureMissing
            | ErrorKind::FixtureStale
            | ErrorKind::FixtureInvalid
            | ErrorKind::RecordWrite => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    pub kind: ErrorKind,
    pub message: String,
}

impl CheckError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> CheckError {
        CheckError { kind, message: message.into() }
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
