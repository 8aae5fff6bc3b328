//! Why a check failed, as a kind a report can group by (with the message a
//! maintainer acts on beside it, in the record), and who failed: the vocabulary
//! records and the evidence store share, carried as enum values and never
//! recovered from message text.

use serde::{Deserialize, Serialize};

use crate::Stage;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    /// Our exporter stopped at its own limit before torch.onnx ran (a cache
    /// the generation exporter cannot flatten): our harness's gap.
    ExporterLimit,
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
    /// The adapter lacks a feature the graph needs (shader-f16 on SwiftShader):
    /// this machine's, never the model's.
    AdapterFeatureMissing,
    /// The check's test wrote no record (its process died before it could).
    NoRecord,
    /// The check has nothing to act on: a format whose quantizer finds no
    /// weight to quantize (q4 on a graph without a MatMul weight), a model
    /// without a matrix-product layer for the kernels. Neither pass nor failure.
    DoesNotApply,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 23] = [
        ErrorKind::PlatformAbsent,
        ErrorKind::EngineNotBuilt,
        ErrorKind::LibraryMissing,
        ErrorKind::ProviderRegistration,
        ErrorKind::ProviderFallback,
        ErrorKind::ProviderUnverified,
        ErrorKind::FixtureMissing,
        ErrorKind::FixtureStale,
        ErrorKind::FixtureInvalid,
        ErrorKind::ExportFailed,
        ErrorKind::ExporterLimit,
        ErrorKind::ModelLoad,
        ErrorKind::RunFailed,
        ErrorKind::OutputMismatch,
        ErrorKind::NonFinite,
        ErrorKind::OutOfTolerance,
        ErrorKind::ReferenceNotInformative,
        ErrorKind::Timeout,
        ErrorKind::EngineExited,
        ErrorKind::RecordWrite,
        ErrorKind::AdapterFeatureMissing,
        ErrorKind::NoRecord,
        ErrorKind::DoesNotApply,
    ];

    /// The name records and the store carry (serde's, kebab-case).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::PlatformAbsent => "platform-absent",
            ErrorKind::EngineNotBuilt => "engine-not-built",
            ErrorKind::LibraryMissing => "library-missing",
            ErrorKind::ProviderRegistration => "provider-registration",
            ErrorKind::ProviderFallback => "provider-fallback",
            ErrorKind::ProviderUnverified => "provider-unverified",
            ErrorKind::FixtureMissing => "fixture-missing",
            ErrorKind::FixtureStale => "fixture-stale",
            ErrorKind::FixtureInvalid => "fixture-invalid",
            ErrorKind::ExportFailed => "export-failed",
            ErrorKind::ExporterLimit => "exporter-limit",
            ErrorKind::ModelLoad => "model-load",
            ErrorKind::RunFailed => "run-failed",
            ErrorKind::OutputMismatch => "output-mismatch",
            ErrorKind::NonFinite => "non-finite",
            ErrorKind::OutOfTolerance => "out-of-tolerance",
            ErrorKind::ReferenceNotInformative => "reference-not-informative",
            ErrorKind::Timeout => "timeout",
            ErrorKind::EngineExited => "engine-exited",
            ErrorKind::RecordWrite => "record-write",
            ErrorKind::AdapterFeatureMissing => "adapter-feature-missing",
            ErrorKind::NoRecord => "no-record",
            ErrorKind::DoesNotApply => "does-not-apply",
        }
    }

    /// The stage a check that failed this way stopped at; None where it never
    /// reached the model (the platform, library, fixture or record is the
    /// problem: the set-up's, which says nothing about the model).
    pub fn stage(self) -> Option<Stage> {
        match self {
            ErrorKind::ExportFailed => Some(Stage::Export),
            ErrorKind::ExporterLimit => Some(Stage::Reference),
            ErrorKind::ProviderRegistration | ErrorKind::ModelLoad => Some(Stage::Load),
            ErrorKind::RunFailed
            | ErrorKind::ProviderFallback
            | ErrorKind::ProviderUnverified
            | ErrorKind::Timeout
            | ErrorKind::EngineExited
            | ErrorKind::NoRecord => Some(Stage::Run),
            ErrorKind::AdapterFeatureMissing => Some(Stage::Load),
            ErrorKind::DoesNotApply => None,
            ErrorKind::OutputMismatch
            | ErrorKind::NonFinite
            | ErrorKind::OutOfTolerance
            | ErrorKind::ReferenceNotInformative => Some(Stage::Mismatch),
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

/// Who failed, for every outcome that is not a pass (the design's attribution).
/// Only [`Attribution::Model`] and [`Attribution::Engine`] are a model's known
/// issue; the other two leave the check *not tested here*, with the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attribution {
    /// The model with the standard tool: torch.onnx after every exporter we run
    /// failed, or a graph they made that the reference engine (ONNX Runtime's
    /// CPU provider, libtorch on the CPU) cannot run as PyTorch does.
    Model,
    /// The engine or provider: its error on a graph the reference engine runs.
    Engine,
    /// This machine: a software adapter without a feature (SwiftShader's missing
    /// shader-f16), an emulator's crash, our own time limit.
    Environment,
    /// Our harness: a tiny config or reference it could not build, a step it
    /// never tried, a check that wrote no record.
    Harness,
}

impl Attribution {
    pub const ALL: [Attribution; 4] = [
        Attribution::Model,
        Attribution::Engine,
        Attribution::Environment,
        Attribution::Harness,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Attribution::Model => "model",
            Attribution::Engine => "engine",
            Attribution::Environment => "environment",
            Attribution::Harness => "harness",
        }
    }

    /// Whether an outcome so attributed is a known issue of the model (else: not tested here).
    pub fn is_known_issue(self) -> bool {
        matches!(self, Attribution::Model | Attribution::Engine)
    }

    /// Who failed a check that failed this way on `platform`: the kind's own
    /// attribution, else an emulator's crash is this machine's, and any other
    /// failure is the standard tool's on the reference platform (cpu: ONNX
    /// Runtime's CPU provider and libtorch run what torch.onnx and torch.jit
    /// made) or the engine's elsewhere.
    pub fn of_failure(
        kind: Option<ErrorKind>,
        platform: crate::Platform,
        emulated: bool,
    ) -> Attribution {
        if let Some(attribution) = kind.and_then(ErrorKind::attribution) {
            return attribution;
        }
        if emulated && kind == Some(ErrorKind::EngineExited) {
            return Attribution::Environment;
        }
        if platform == crate::Platform::Cpu {
            Attribution::Model
        } else {
            Attribution::Engine
        }
    }

    /// What the attribution says in a reason: `the model with torch.onnx`...
    pub fn phrase(self) -> &'static str {
        match self {
            Attribution::Model => "the model with the standard tool",
            Attribution::Engine => "the engine or its provider",
            Attribution::Environment => "the environment here (not tested here)",
            Attribution::Harness => "our harness (not tested here)",
        }
    }
}

impl ErrorKind {
    /// The kind of an engine's refusal to load or run a graph, where the
    /// engine's own error says the adapter lacks a feature (Dawn on SwiftShader,
    /// which has no shader-f16: "Program Transpose requires f16 but the device
    /// does not support it"): this machine's, not the model's; else `self`.
    pub fn or_adapter_feature(self, engine_error: &str) -> ErrorKind {
        if engine_error.contains("requires f16 but the device does not support it") {
            ErrorKind::AdapterFeatureMissing
        } else {
            self
        }
    }

    /// Who failed, where the kind alone says so: our own limits, this machine's
    /// pieces and our harness's gaps; None where it is the model's or the
    /// engine's, which the platform decides ([`Attribution::of_failure`]).
    pub fn attribution(self) -> Option<Attribution> {
        match self {
            ErrorKind::Timeout | ErrorKind::AdapterFeatureMissing => Some(Attribution::Environment),
            ErrorKind::FixtureMissing
            | ErrorKind::FixtureStale
            | ErrorKind::FixtureInvalid
            | ErrorKind::RecordWrite
            | ErrorKind::NoRecord
            | ErrorKind::ExporterLimit => Some(Attribution::Harness),
            ErrorKind::PlatformAbsent | ErrorKind::EngineNotBuilt | ErrorKind::LibraryMissing => {
                Some(Attribution::Environment)
            }
            _ => None,
        }
    }
}
