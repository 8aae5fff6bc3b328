//! ONNX Runtime's libraries: the build a provider is compiled into, and the
//! plugin providers registered into the cpu build.

use std::path::{Path, PathBuf};

use hwmatrix_cell::ExecutionProvider;

use crate::files::{exporter_venv, site_packages};

/// A plugin execution provider's wheel: its Python package, the library file
/// in it, and the pinned wheel that installs it.
pub struct Plugin {
    pub package: &'static str,
    pub file: &'static str,
    pub wheel: &'static str,
}

/// The ONNX Runtime library a platform's cells load. ONNX Runtime ships one
/// build per set of execution providers, each as its own PyPI wheel, and a
/// process can load only one: `ORT_DYLIB_PATH` (ort's own variable) wins for
/// every platform; else each provider's wheel in a venv of its own under the
/// cache ([`crate::Provider::build`]: `venv-openvino` with `onnxruntime-openvino`,
/// `venv-gpu` with `onnxruntime-gpu`...), and for CPU (and CoreML, in the macOS
/// build) the exporter venv's `onnxruntime`.
pub fn onnxruntime_library(provider: ExecutionProvider) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH") {
        return Ok(PathBuf::from(path));
    }
    let (venv, wheel) = crate::provider(provider).build();
    let found = site_packages(&venv)
        .map(|site| site.join("onnxruntime/capi"))
        .flat_map(|capi| std::fs::read_dir(capi).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libonnxruntime.so."))
        });
    found.ok_or_else(|| {
        format!(
            "no ONNX Runtime library for {}: install the PyPI wheel `{wheel}` into the venv {} (`bash tests/run.sh` installs the cpu and openvino ones), or set ORT_DYLIB_PATH to a libonnxruntime.so that has it",
            provider.ort_name(),
            venv.display()
        )
    })
}

/// The ONNX Runtime version in a library's file name (`libonnxruntime.so.1.31.1`).
pub fn onnxruntime_version(library: &Path) -> Option<&str> {
    library
        .file_name()?
        .to_str()?
        .strip_prefix("libonnxruntime.so.")
}

/// A provider shipped as a plugin execution provider (ONNX Runtime's EP ABI):
/// its own PyPI wheel holds the library, which the runtime registers into the
/// cpu build it already loaded (`Environment::register_ep_library`), so its
/// cells share a process with the cpu cells. QNN: `onnxruntime-qnn`; WebGPU:
/// `onnxruntime-ep-webgpu` (Dawn inside); both in the exporter venv
/// (generator/importer/exporter/requirements-plugins.txt). `None` for providers
/// compiled into their build.
pub fn plugin_library(provider: ExecutionProvider) -> Option<Result<PathBuf, String>> {
    let Plugin {
        package,
        file,
        wheel,
    } = crate::provider(provider).plugin()?;
    let venv = exporter_venv();
    let found = site_packages(&venv)
        .map(|site| site.join(package).join(file))
        .find(|p| p.is_file());
    Some(found.ok_or_else(|| {
        format!(
            "no {} plugin: install the PyPI wheel `{wheel}` into the venv {} (`bash tests/run.sh` installs it)",
            provider.ort_name(),
            venv.display()
        )
    }))
}
