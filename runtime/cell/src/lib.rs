//! The vocabulary gen and the runtime share, and nothing that runs a model.
//!
//! `gen` plans cells with these types and emits them as static data into
//! `generated/`; the runtime reads that data and runs the cell. Keeping them
//! here means the generator links no engine library (ONNX Runtime, libtorch).

pub mod browsers;
pub mod check_id;
pub mod content;
pub mod cpu_class;
pub mod decl;
pub mod dtype;
pub mod error_kind;
pub mod export_error;
pub mod paths;
pub mod planned;
pub mod platform;
pub mod quantization;
pub mod run;
pub mod stage;
pub mod verdict_code;
pub mod wgpu_adapter;

pub use check_id::{BENCH_RECORD, CheckId};
pub use cpu_class::CpuClass;
pub use decl::{
    AgreementBound, AllowedFallback, BrowserApp, BrowserBackend, Cell, CheckPlan, ClassPlan,
    ComputedIn, Engine, EngineKind, ExecutionProvider, GenerationCheck, GenerationDecl, ModelDecl,
    OpenVinoFrontend, PlatformDecl, Precision, PrecisionCheck, TensorDecl, Tolerance,
};
pub use dtype::DType;
pub use error_kind::{Attribution, ErrorKind};
pub use planned::{Basis, Outcome, Planned};
pub use platform::{DeviceKind, Platform};
pub use quantization::{
    LayerRole, MixedWidths, QuantScheme, QuantizationCheck, QuantizationChecks, QuantizationDecl,
    Rating,
};
pub use stage::Stage;

/// What each generated `cells.rs` declares its cells with (`use
/// runtime::cells_prelude::*`), so thousands of declarations do not repeat
/// the crate's path in every name.
pub mod cells_prelude {
    pub use crate::{
        AgreementBound, AllowedFallback, Basis, Cell, CheckPlan, ClassPlan, Planned, Precision,
        PrecisionCheck, QuantScheme, QuantizationCheck, Rating, Stage,
    };
}

/// The float32 checks' names ([`CheckId::FLOAT32`]), as the runtime's verdict code
/// spells them (its files are digested into every record: changing their text stales
/// the evidence store, so they keep these names rather than take a `CheckId`).
pub const CHECKS: [&str; 3] = [
    CheckId::Runs.name(),
    CheckId::MatchesReference.name(),
    CheckId::DynamicShapes.name(),
];

/// [`CheckId::Generates`]'s name, for the runtime's verdict code (see [`CHECKS`]).
pub const GENERATES: &str = CheckId::Generates.name();

/// How a `generates` check says the generation exporter failed on its model
/// (no fixture to run): `gen derive` reads the exporter's error after it.
pub const GENERATION_EXPORT_FAILED: &str = "the generation exporter failed on it: ";
