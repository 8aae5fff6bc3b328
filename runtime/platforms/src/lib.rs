//! Where each platform's hardware and engine libraries are on this machine,
//! without loading any engine: the runtime asks before a check runs (an
//! absent platform fails with the message), `gen doctor` asks for its report.
//! Every platform compiles everywhere (candle's way); detection looks at what
//! the machine really has and says what is missing.
//!
//! One module per execution provider or engine: [`cpu`], [`cuda`] (CUDA and
//! TensorRT), [`rocm`] (MIGraphX), [`coreml`] (MPS), [`openvino`], [`qnn`],
//! [`webgpu`] (ONNX Runtime's native WebGPU plugin), [`browser`] (WebNN and
//! WebGPU in Chromium), [`libtorch`] and [`wgpu_adapter`]. An execution
//! provider answers [`Provider`]: its ONNX Runtime build and its library or
//! plugin. Policies (which checks run in a process of their own) are data in
//! hardware.yaml, not code here.

pub mod browser;
pub mod coreml;
pub mod cpu;
pub mod cuda;
mod files;
pub mod libtorch;
pub mod onnxruntime;
pub mod openvino;
pub mod qnn;
pub mod rocm;
pub mod webgpu;
pub mod wgpu_adapter;

use std::path::PathBuf;

use hwmatrix_cell::{BrowserApp, BrowserBackend, DeviceKind, Engine, ExecutionProvider, Platform};

pub use onnxruntime::{onnxruntime_library, onnxruntime_version, plugin_library};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Present, with what was found.
    Present(String),
    /// Absent, with what is missing and how to get it.
    Absent(String),
}

/// An ONNX Runtime execution provider, as this machine has it.
pub trait Provider: Sync {
    /// The venv holding the ONNX Runtime build the provider is compiled into,
    /// and that build's PyPI wheel.
    fn build(&self) -> (PathBuf, &'static str) {
        (files::exporter_venv(), "onnxruntime")
    }

    /// The shared library the provider needs beside `libonnxruntime.so`
    /// (None where it is compiled into the build, or is a plugin).
    fn library(&self) -> Option<&'static str> {
        None
    }

    /// A plugin execution provider (ONNX Runtime's EP ABI): its own wheel's
    /// package, library file and pinned wheel.
    fn plugin(&self) -> Option<onnxruntime::Plugin> {
        None
    }

    /// What the provider needs beyond its platform's hardware, where it needs more: webgpu's
    /// native plugin needs a Vulkan adapter Dawn accepts, not the browser the platform's
    /// probe looks for.
    fn own_needs(&self) -> Option<Availability> {
        None
    }

    /// What a CI job on a hosted runner (no GPU) sets for the provider's cells: the
    /// variables `gen ci` writes before its test command (`NAME=value `).
    fn hosted_runner_env(&self) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }
}

/// The module that answers for `provider`.
pub fn provider(provider: ExecutionProvider) -> &'static dyn Provider {
    match provider {
        ExecutionProvider::Cpu => &cpu::Cpu,
        ExecutionProvider::Cuda => &cuda::Cuda,
        ExecutionProvider::TensorRt => &cuda::TensorRt,
        ExecutionProvider::MiGraphX => &rocm::MiGraphX,
        ExecutionProvider::CoreMl => &coreml::CoreMl,
        ExecutionProvider::OpenVino => &openvino::OpenVino,
        ExecutionProvider::Qnn => &qnn::Qnn,
        ExecutionProvider::WebGpu => &webgpu::WebGpu,
    }
}

/// Looks for the hardware and system pieces a platform needs, without loading
/// any engine. `Absent` names what is missing.
pub fn detect(platform: Platform) -> Availability {
    match platform {
        Platform::Cpu => cpu::detect(),
        Platform::Cuda => cuda::detect(),
        Platform::Rocm => rocm::detect(),
        Platform::Mps => coreml::detect(),
        Platform::Openvino => openvino::detect(),
        Platform::Qnn => qnn::detect(),
        Platform::Webnn => browser::detect(BrowserBackend::Webnn),
        Platform::Webgpu => browser::detect(BrowserBackend::Webgpu),
    }
}

/// Whether what one engine of a platform needs is here. Most engines need
/// only their platform's hardware ([`detect`]); a provider may need more of
/// its own ([`Provider::own_needs`]).
pub fn detect_engine(platform: Platform, engine: &Engine) -> Availability {
    match engine {
        Engine::OnnxRuntime { provider: p, .. } if let Some(needs) = provider(*p).own_needs() => {
            needs
        }
        // Firefox runs in a root of its own, not the Chromium the platform's probe looks for.
        Engine::Browser {
            app: BrowserApp::Firefox,
            ..
        } => browser::detect_firefox(),
        _ => detect(platform),
    }
}

/// What kind of device an engine of a platform runs on here: QNN without a
/// Snapdragon's DSP runs on Qualcomm's emulator, WebGPU (the native plugin or
/// Chromium's) without a GPU on a software adapter (SwiftShader).
pub fn device_kind(platform: Platform, engine: &Engine) -> DeviceKind {
    let webgpu = matches!(
        engine,
        Engine::OnnxRuntime {
            provider: ExecutionProvider::WebGpu,
            ..
        } | Engine::Browser {
            backend: BrowserBackend::Webgpu,
            ..
        }
    );
    if platform == Platform::Qnn && files::first_existing(&qnn::DSP_DEVICES).is_none() {
        DeviceKind::Emulator
    } else if webgpu && webgpu::software_adapter_only() {
        DeviceKind::SoftwareAdapter
    } else {
        DeviceKind::Hardware
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_always_present() {
        assert!(matches!(detect(Platform::Cpu), Availability::Present(_)));
    }
}
