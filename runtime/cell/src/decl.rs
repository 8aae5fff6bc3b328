//! The static declarations a generated cell is made of: plain data, no logic.
//! `gen` writes values of these types into `generated/`; the runtime reads them.

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::planned::Planned;
use crate::platform::Platform;

/// What a model's spec declares about its exported graph, for every platform.
#[derive(Debug)]
pub struct ModelDecl {
    pub model_type: &'static str,
    pub category: &'static str,
    /// The spec file this was generated from, relative to the workspace.
    pub spec_path: &'static str,
    /// sha256 of the spec as the exporter receives it: with the exporter's own
    /// digest it makes the fixture key ([`crate::fixture_key`]).
    pub spec_digest: &'static str,
    pub inputs: &'static [TensorDecl],
    pub outputs: &'static [TensorDecl],
    /// The tolerance of every platform that does not override it.
    pub tolerance: Tolerance,
}

/// A declared input or output: name, element type and named axes.
#[derive(Debug)]
pub struct TensorDecl {
    pub name: &'static str,
    pub dtype: DType,
    pub axes: &'static [&'static str],
}

/// `|actual - expected| <= abs + rel * |expected|` elementwise (numpy's allclose rule).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

/// A platform as hardware.yaml describes it: its cargo feature, what it needs,
/// and the engine that serves its cells.
#[derive(Debug)]
pub struct PlatformDecl {
    pub platform: Platform,
    pub feature: &'static str,
    /// What must be present (hardware.yaml `requires`), quoted in failures.
    pub requires: &'static str,
    pub engine: Engine,
}

/// How a platform's cells run: an engine and its settings, from hardware.yaml.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// ONNX Runtime with one execution provider, registered strictly.
    OnnxRuntime { provider: ExecutionProvider, options: &'static [(&'static str, &'static str)] },
    /// libtorch through tch on a device (`cpu`, `cuda`, `mps`).
    Libtorch { device: &'static str },
    /// Native WebGPU compute through wgpu.
    Wgpu,
    /// onnxruntime-web in a headless Chromium.
    Browser { backend: BrowserBackend },
}

/// The engines, without their settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Onnxruntime,
    Libtorch,
    Wgpu,
    Browser,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Onnxruntime => "onnxruntime",
            EngineKind::Libtorch => "libtorch",
            EngineKind::Wgpu => "wgpu",
            EngineKind::Browser => "browser",
        }
    }

    /// Whether this version of the runtime has the engine. The planner gives a
    /// platform the first engine in its hardware.yaml list that is built; a
    /// runtime test keeps this in step with `runtime::engine::open`.
    pub fn is_built(self) -> bool {
        matches!(self, EngineKind::Onnxruntime)
    }
}

impl Engine {
    pub fn kind(self) -> EngineKind {
        match self {
            Engine::OnnxRuntime { .. } => EngineKind::Onnxruntime,
            Engine::Libtorch { .. } => EngineKind::Libtorch,
            Engine::Wgpu => EngineKind::Wgpu,
            Engine::Browser { .. } => EngineKind::Browser,
        }
    }

    /// How the engine reads in docs and messages.
    pub fn describe(self) -> String {
        match self {
            Engine::OnnxRuntime { provider, options } => describe_onnxruntime(provider, options.iter().copied()),
            Engine::Libtorch { device } => describe_libtorch(device),
            Engine::Wgpu => "wgpu".into(),
            Engine::Browser { backend } => describe_browser(backend),
        }
    }
}

/// How an ONNX Runtime engine reads in docs, messages and records.
pub fn describe_onnxruntime<'a>(provider: ExecutionProvider, options: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let options: Vec<String> = options.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    if options.is_empty() {
        format!("onnxruntime, {}", provider.ort_name())
    } else {
        format!("onnxruntime, {} ({})", provider.ort_name(), options.join(", "))
    }
}

pub fn describe_libtorch(device: &str) -> String {
    format!("libtorch, device {device}")
}

pub fn describe_browser(backend: BrowserBackend) -> String {
    format!("onnxruntime-web in headless Chromium, {}", backend.name())
}

/// ONNX Runtime's execution providers, named as ORT names them (in its
/// profiles and in hardware.yaml).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum ExecutionProvider {
    #[serde(rename = "CPUExecutionProvider")]
    Cpu,
    #[serde(rename = "CUDAExecutionProvider")]
    Cuda,
    #[serde(rename = "TensorrtExecutionProvider")]
    TensorRt,
    #[serde(rename = "MIGraphXExecutionProvider")]
    MiGraphX,
    #[serde(rename = "CoreMLExecutionProvider")]
    CoreMl,
    #[serde(rename = "OpenVINOExecutionProvider")]
    OpenVino,
    #[serde(rename = "QNNExecutionProvider")]
    Qnn,
}

impl ExecutionProvider {
    /// The provider name ONNX Runtime writes into its profile.
    pub fn ort_name(self) -> &'static str {
        match self {
            ExecutionProvider::Cpu => "CPUExecutionProvider",
            ExecutionProvider::Cuda => "CUDAExecutionProvider",
            ExecutionProvider::TensorRt => "TensorrtExecutionProvider",
            ExecutionProvider::MiGraphX => "MIGraphXExecutionProvider",
            ExecutionProvider::CoreMl => "CoreMLExecutionProvider",
            ExecutionProvider::OpenVino => "OpenVINOExecutionProvider",
            ExecutionProvider::Qnn => "QNNExecutionProvider",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BrowserBackend {
    Webnn,
    Webgpu,
}

impl BrowserBackend {
    pub fn name(self) -> &'static str {
        match self {
            BrowserBackend::Webnn => "webnn",
            BrowserBackend::Webgpu => "webgpu",
        }
    }
}

/// An operator the spec allows to run off the requested provider on one
/// platform, with why (e.g. ORT places shape computations on CPU by design).
#[derive(Debug)]
pub struct AllowedFallback {
    pub op: &'static str,
    pub reason: &'static str,
}

/// One model × platform cell.
#[derive(Debug)]
pub struct Cell {
    pub model: &'static ModelDecl,
    pub platform: &'static PlatformDecl,
    pub planned: Planned,
    /// Set only where the spec overrides the model's tolerance for this platform.
    pub tolerance_override: Option<Tolerance>,
    pub allowed_fallback: &'static [AllowedFallback],
}

impl Cell {
    /// A cell with the model's tolerance and no allowed fallback; generated
    /// code adds what its spec overrides, so a plain cell is one line.
    pub const fn new(model: &'static ModelDecl, platform: &'static PlatformDecl, planned: Planned) -> Cell {
        Cell { model, platform, planned, tolerance_override: None, allowed_fallback: &[] }
    }

    pub const fn with_tolerance(mut self, tolerance: Tolerance) -> Cell {
        self.tolerance_override = Some(tolerance);
        self
    }

    pub const fn allowing_fallback(mut self, ops: &'static [AllowedFallback]) -> Cell {
        self.allowed_fallback = ops;
        self
    }

    /// `model_type::platform`, the way messages name a cell. (Test paths use
    /// the model's Rust module, `xlm_roberta::cpu` for `xlm-roberta`.)
    pub fn id(&self) -> String {
        format!("{}::{}", self.model.model_type, self.platform.platform)
    }

    /// The tolerance this cell compares with: its override, else the model's.
    pub fn effective_tolerance(&self) -> Tolerance {
        self.tolerance_override.unwrap_or(self.model.tolerance)
    }
}
