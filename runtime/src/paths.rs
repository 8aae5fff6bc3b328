//! Where hwmatrix keeps what lives outside the checkout (venv, fixtures) and
//! what a test run produces (results). Environment variables override each.

use std::path::PathBuf;

/// `HWMATRIX_CACHE`, else `$XDG_CACHE_HOME/hwmatrix`, else `~/.cache/hwmatrix`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HWMATRIX_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("hwmatrix");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("hwmatrix")
}

/// The fixture root of the contract: `HWMATRIX_FIXTURES`, else `<cache>/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    std::env::var_os("HWMATRIX_FIXTURES").map(PathBuf::from).unwrap_or_else(|| cache_dir().join("fixtures"))
}

/// The Python of the exporter's venv: `HWMATRIX_PYTHON`, else `<cache>/venv/bin/python`.
pub fn python() -> PathBuf {
    std::env::var_os("HWMATRIX_PYTHON").map(PathBuf::from).unwrap_or_else(|| cache_dir().join("venv/bin/python"))
}

/// Where result records go: `HWMATRIX_RESULTS`, else `results/` at the workspace root.
pub fn results_dir() -> PathBuf {
    std::env::var_os("HWMATRIX_RESULTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../results")))
}
