//! Whether a platform is present on this machine.
//!
//! Every platform compiles everywhere (candle's way); detection looks at what
//! the machine really has and says what is missing, so a test that asked for
//! an absent platform fails with that message instead of passing.

use std::path::{Path, PathBuf};

use crate::Platform;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Present, with what was found.
    Present(String),
    /// Absent, with what is missing and how to get it.
    Absent(String),
}

/// Looks for the hardware and system pieces a platform needs, without loading
/// any engine. `Absent` names what is missing.
pub fn detect(platform: Platform) -> Availability {
    match platform {
        Platform::Cpu => Availability::Present("host CPU".into()),
        Platform::Cuda => first_existing(&["/dev/nvidiactl", "/dev/nvidia0"])
            .map(|dev| Availability::Present(format!("NVIDIA device {}", dev.display())))
            .unwrap_or_else(|| Availability::Absent("no NVIDIA GPU: /dev/nvidiactl and /dev/nvidia0 do not exist (is the driver loaded?)".into())),
        Platform::Rocm => first_existing(&["/dev/kfd"])
            .map(|_| Availability::Present("AMD ROCm device /dev/kfd".into()))
            .unwrap_or_else(|| Availability::Absent("no AMD GPU: /dev/kfd does not exist (is the amdgpu driver with ROCm loaded?)".into())),
        Platform::Mps => {
            if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
                Availability::Present("Apple Silicon (Metal)".into())
            } else {
                Availability::Absent(format!("MPS needs an Apple Silicon Mac; this is {}-{}", std::env::consts::OS, std::env::consts::ARCH))
            }
        }
        // OpenVINO's CPU device is any x86-64 CPU; what can be missing is the
        // onnxruntime-openvino library, which the engine reports when it loads.
        Platform::Openvino => {
            if cfg!(target_arch = "x86_64") {
                Availability::Present("x86-64 CPU for OpenVINO's CPU device".into())
            } else {
                Availability::Absent(format!("OpenVINO's CPU device needs x86-64, this is {}", std::env::consts::ARCH))
            }
        }
        Platform::Qnn => first_existing(&["/dev/fastrpc-cdsp", "/dev/adsprpc-smd", "/dev/fastrpc-adsp"])
            .map(|dev| Availability::Present(format!("Qualcomm DSP {}", dev.display())))
            .unwrap_or_else(|| {
                Availability::Absent("no Qualcomm Hexagon NPU: none of /dev/fastrpc-cdsp, /dev/adsprpc-smd, /dev/fastrpc-adsp exists".into())
            }),
        Platform::Webnn | Platform::Webgpu => match find_chromium() {
            Some(path) => Availability::Present(format!("Chromium at {}", path.display())),
            None => Availability::Absent(
                "no Chromium: set HWMATRIX_CHROMIUM or install one (Debian package chromium, or npm @sparticuz/chromium for WebNN)".into(),
            ),
        },
    }
}

fn first_existing(paths: &[&str]) -> Option<PathBuf> {
    paths.iter().map(PathBuf::from).find(|p| p.exists())
}

/// `HWMATRIX_CHROMIUM`, else a chromium on PATH.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HWMATRIX_CHROMIUM") {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser", "google-chrome"].map(|name| dir.join(name)))
        .find(|candidate| is_file(candidate))
}

fn is_file(path: &Path) -> bool {
    path.metadata().map(|m| m.is_file()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_always_present() {
        assert!(matches!(detect(Platform::Cpu), Availability::Present(_)));
    }
}
