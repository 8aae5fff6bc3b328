//! Intel's OpenVINO: its provider in the `onnxruntime-openvino` build, on
//! OpenVINO's CPU device.

use std::path::PathBuf;

use crate::{Availability, Provider};

pub struct OpenVino;

impl Provider for OpenVino {
    fn build(&self) -> (PathBuf, &'static str) {
        (
            hwmatrix_cell::paths::cache_dir().join("venv-openvino"),
            "onnxruntime-openvino",
        )
    }

    fn library(&self) -> Option<&'static str> {
        Some("libonnxruntime_providers_openvino.so")
    }
}

/// OpenVINO's CPU device is any x86-64 CPU; what can be missing is the
/// onnxruntime-openvino library, which the engine reports when it loads.
pub fn detect() -> Availability {
    if cfg!(target_arch = "x86_64") {
        Availability::Present("x86-64 CPU for OpenVINO's CPU device".into())
    } else {
        Availability::Absent(format!(
            "OpenVINO's CPU device needs x86-64, this is {}",
            std::env::consts::ARCH
        ))
    }
}
