//! Looking things up on disk: no engine is loaded.

use std::path::{Path, PathBuf};

pub(crate) fn first_existing(paths: &[&str]) -> Option<PathBuf> {
    paths.iter().map(PathBuf::from).find(|p| p.exists())
}

pub(crate) fn is_file(path: &Path) -> bool {
    path.metadata().map(|m| m.is_file()).unwrap_or(false)
}

/// Whether a system library is installed (in Debian's and the usual folders).
pub(crate) fn has_library(name: &str) -> bool {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
    ]
    .iter()
    .any(|dir| Path::new(dir).join(name).exists())
}

/// The exporter venv (`HWMATRIX_PYTHON`'s): its onnxruntime is the cpu
/// build, and the plugin providers' wheels and torch live there too.
pub(crate) fn exporter_venv() -> PathBuf {
    hwmatrix_cell::paths::python()
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The `site-packages` folders of a venv (one per Python in `lib/`).
pub(crate) fn site_packages(venv: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(venv.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages"))
}
