//! The 8 hardware platforms, by name, and what kind of device a check ran on.
//! Whether one is present on this machine: hwmatrix-platforms.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Cpu,
    Cuda,
    Rocm,
    Mps,
    Openvino,
    Qnn,
    Webnn,
    Webgpu,
}

impl Platform {
    pub const ALL: [Platform; 8] = [
        Platform::Cpu,
        Platform::Cuda,
        Platform::Rocm,
        Platform::Mps,
        Platform::Openvino,
        Platform::Qnn,
        Platform::Webnn,
        Platform::Webgpu,
    ];

    /// The lowercase name used in specs, test paths, cargo features and records.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Cpu => "cpu",
            Platform::Cuda => "cuda",
            Platform::Rocm => "rocm",
            Platform::Mps => "mps",
            Platform::Openvino => "openvino",
            Platform::Qnn => "qnn",
            Platform::Webnn => "webnn",
            Platform::Webgpu => "webgpu",
        }
    }

    pub fn from_name(name: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether the platform's engines compute on this machine's own CPU (cpu;
    /// openvino's CPU device), whose class decides their integer kernels: its
    /// records and entries name the class (`cpu_class`).
    pub fn computes_on_host_cpu(self) -> bool {
        matches!(self, Platform::Cpu | Platform::Openvino)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for platform in Platform::ALL {
            assert_eq!(Platform::from_name(platform.name()), Some(platform));
        }
        assert_eq!(Platform::from_name("tpu"), None);
    }
}

/// What a check's device is: the hardware itself, an emulator standing in for
/// it (QNN's x86-64 HTP emulator), or a software adapter standing in for a
/// GPU (SwiftShader). Only hardware's timings mean anything, and an
/// emulator's crash is this machine's, not the engine's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    Hardware,
    Emulator,
    SoftwareAdapter,
}

impl DeviceKind {
    /// Not the hardware itself: its timings rank nothing.
    pub fn stands_in(self) -> bool {
        self != DeviceKind::Hardware
    }
}
