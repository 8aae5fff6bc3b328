//! NVIDIA GPUs: ONNX Runtime's CUDA and TensorRT providers, in the
//! `onnxruntime-gpu` build.

use std::path::PathBuf;

use crate::files::first_existing;
use crate::{Availability, Provider};

pub struct Cuda;
pub struct TensorRt;

fn gpu_build() -> (PathBuf, &'static str) {
    (
        hwmatrix_cell::paths::cache_dir().join("venv-gpu"),
        "onnxruntime-gpu",
    )
}

impl Provider for Cuda {
    fn build(&self) -> (PathBuf, &'static str) {
        gpu_build()
    }

    fn library(&self) -> Option<&'static str> {
        Some("libonnxruntime_providers_cuda.so")
    }
}

impl Provider for TensorRt {
    fn build(&self) -> (PathBuf, &'static str) {
        gpu_build()
    }

    fn library(&self) -> Option<&'static str> {
        Some("libonnxruntime_providers_tensorrt.so")
    }
}

pub fn detect() -> Availability {
    first_existing(&["/dev/nvidiactl", "/dev/nvidia0"])
        .map(|dev| Availability::Present(format!("NVIDIA device {}", dev.display())))
        .unwrap_or_else(|| {
            Availability::Absent(
                "no NVIDIA GPU: /dev/nvidiactl and /dev/nvidia0 do not exist (is the driver loaded?)"
                    .into(),
            )
        })
}
