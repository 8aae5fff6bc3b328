//! libtorch, the torch engine's library: the exporter venv's torch.

use std::path::{Path, PathBuf};

use crate::files::{exporter_venv, site_packages};

/// The libtorch of the exporter venv's torch (the one the `torch` feature
/// links with LIBTORCH_USE_PYTORCH=1), and its version from torch/version.py.
pub fn find() -> Result<(PathBuf, String), String> {
    let venv = exporter_venv();
    let torch = site_packages(&venv)
        .map(|site| site.join("torch"))
        .find(|t| t.join("lib/libtorch_cpu.so").is_file())
        .ok_or_else(|| format!("no libtorch: torch is not installed in the venv {} (`bash tests/run.sh` installs torch 2.13.0 there)", venv.display()))?;
    let version = std::fs::read_to_string(torch.join("version.py"))
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                l.strip_prefix("__version__ = ")
                    .map(|v| v.trim_matches(['\'', '"']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown version".into());
    Ok((torch.join("lib"), version))
}

/// Whether the libtorch in `lib_dir` is a ROCm (HIP) build. Such a build
/// calls AMD GPUs `cuda`, so the folder's libraries tell the vendors apart.
pub fn is_hip(lib_dir: &Path) -> bool {
    lib_dir.join("libamdhip64.so").is_file() || lib_dir.join("libtorch_hip.so").is_file()
}
