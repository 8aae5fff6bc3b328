//! AMD GPUs: ONNX Runtime's MIGraphX provider, in the `onnxruntime-migraphx` build.

use std::path::PathBuf;

use crate::files::first_existing;
use crate::{Availability, Provider};

pub struct MiGraphX;

impl Provider for MiGraphX {
    fn build(&self) -> (PathBuf, &'static str) {
        (
            hwmatrix_cell::paths::cache_dir().join("venv-migraphx"),
            "onnxruntime-migraphx",
        )
    }

    fn library(&self) -> Option<&'static str> {
        Some("libonnxruntime_providers_migraphx.so")
    }
}

pub fn detect() -> Availability {
    first_existing(&["/dev/kfd"])
        .map(|_| Availability::Present("AMD ROCm device /dev/kfd".into()))
        .unwrap_or_else(|| {
            Availability::Absent(
                "no AMD GPU: /dev/kfd does not exist (is the amdgpu driver with ROCm loaded?)"
                    .into(),
            )
        })
}
