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

/// The venv holding PyPI's `openvino` wheel, OpenVINO's own runtime (the
/// openvino platform's `ov` cells): apart from the provider build's
/// venv, which bundles an older OpenVINO (one OpenVINO per process).
pub fn runtime_venv() -> PathBuf {
    hwmatrix_cell::paths::cache_dir().join("venv-openvino-runtime")
}

/// The Python of OpenVINO's runtime venv, which makes NNCF's weight formats of the
/// fixtures (generator/importer/exporter/nncf_variants.py).
pub fn runtime_python() -> PathBuf {
    runtime_venv().join("bin/python")
}

/// OpenVINO's C library (`openvino/libs/libopenvino_c.so.<version>` in the
/// wheel), which the runtime engine loads; `OPENVINO_C_LIBRARY` names another.
pub fn runtime_library() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("OPENVINO_C_LIBRARY") {
        return Ok(PathBuf::from(path));
    }
    let venv = runtime_venv();
    crate::files::site_packages(&venv)
        .map(|site| site.join("openvino/libs"))
        .flat_map(|libs| std::fs::read_dir(libs).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libopenvino_c.so"))
        })
        .ok_or_else(|| {
            format!(
                "no OpenVINO runtime: install PyPI's `openvino` (generator/importer/exporter/requirements-openvino-runtime.txt) into {} (`bash tests/setup.sh openvino` does), or set OPENVINO_C_LIBRARY to a libopenvino_c.so",
                venv.display()
            )
        })
}

/// The wheel's version (its dist-info folder), for records and `gen doctor`.
pub fn runtime_version() -> Option<String> {
    venv_package_version("openvino")
}

/// The version of `package` installed in the runtime's venv (its dist-info folder).
fn venv_package_version(package: &str) -> Option<String> {
    let prefix = format!("{package}-");
    crate::files::site_packages(&runtime_venv())
        .flat_map(|site| std::fs::read_dir(site).into_iter().flatten().flatten())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .find_map(|name| {
            name.strip_prefix(&prefix)?
                .strip_suffix(".dist-info")
                .map(str::to_string)
        })
}

/// What `gen doctor` says of the runtime engine on `device`: its library, or why none.
pub fn runtime(device: &str) -> Result<Vec<String>, String> {
    let library = runtime_library()?;
    // NNCF makes the engine's weight formats (`gen fixtures`), in the same venv.
    let nncf = venv_package_version("nncf").ok_or_else(|| {
        format!(
            "no NNCF in {}: run `bash tests/setup.sh openvino`",
            runtime_venv().display()
        )
    })?;
    Ok(vec![format!(
        "OpenVINO runtime {} ({}), device {device} checked when a cell compiles its model; NNCF {nncf} makes its int8 and int4 formats",
        runtime_version().unwrap_or_else(|| "of unknown version".into()),
        library.display()
    )])
}
