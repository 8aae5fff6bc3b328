//! What a generated cell hands to the runtime: plain static data, no logic.
//! The adapters in `generated/` are nothing but values of these types.

use crate::platform::Platform;
use crate::tensor::DType;

/// The platform-independent part of a model's spec.
#[derive(Debug)]
pub struct ModelCard {
    pub model_type: &'static str,
    pub category: &'static str,
    /// The spec file this card was generated from, relative to the workspace.
    pub spec_path: &'static str,
    pub inputs: &'static [TensorDecl],
    pub outputs: &'static [TensorDecl],
}

/// A declared input or output: name, element type and named axes.
#[derive(Debug)]
pub struct TensorDecl {
    pub name: &'static str,
    pub dtype: DType,
    pub axes: &'static [&'static str],
}

/// `|actual - expected| <= abs + rel * |expected|` elementwise (numpy's allclose rule).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

/// How a cell runs: an engine and, for ONNX Runtime, the execution provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    OnnxRuntime(ExecutionProvider),
    /// onnxruntime-web in a headless Chromium (WebNN / WebGPU).
    Browser(BrowserBackend),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionProvider {
    Cpu,
    Cuda,
    MiGraphX,
    CoreMl,
    OpenVino,
    Qnn,
}

impl ExecutionProvider {
    /// The provider name ONNX Runtime writes into its profile.
    pub fn ort_name(self) -> &'static str {
        match self {
            ExecutionProvider::Cpu => "CPUExecutionProvider",
            ExecutionProvider::Cuda => "CUDAExecutionProvider",
            ExecutionProvider::MiGraphX => "MIGraphXExecutionProvider",
            ExecutionProvider::CoreMl => "CoreMLExecutionProvider",
            ExecutionProvider::OpenVino => "OpenVINOExecutionProvider",
            ExecutionProvider::Qnn => "QNNExecutionProvider",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrowserBackend {
    WebNn,
    WebGpu,
}

impl Engine {
    /// The name written into result records.
    pub fn name(self) -> &'static str {
        match self {
            Engine::OnnxRuntime(_) => "onnxruntime",
            Engine::Browser(_) => "browser",
        }
    }
}

/// One model × platform cell that is expected to run.
#[derive(Debug)]
pub struct Cell {
    pub model: &'static ModelCard,
    pub platform: Platform,
    pub engine: Engine,
    pub tolerance: Tolerance,
}

impl Cell {
    /// `model::platform`, the way test paths and messages name a cell.
    pub fn id(&self) -> String {
        format!("{}::{}", self.model.model_type, self.platform)
    }
}
