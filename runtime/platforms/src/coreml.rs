//! Apple Silicon (the mps platform): ONNX Runtime's CoreML provider, compiled
//! into the macOS build.

use crate::{Availability, Provider};

pub struct CoreMl;

impl Provider for CoreMl {}

pub fn detect() -> Availability {
    if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        Availability::Present("Apple Silicon (Metal)".into())
    } else {
        Availability::Absent(format!(
            "MPS needs an Apple Silicon Mac; this is {}-{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        ))
    }
}
