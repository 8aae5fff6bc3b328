//! Where hwmatrix keeps what lives outside the checkout (venv, fixtures) and
//! what a test run produces (results). Environment variables override each.
//!
//! Nothing here depends on where the binary was built: a test binary shared
//! by two checkouts would otherwise write into the checkout that built it.

use std::path::{Path, PathBuf};

/// `HWMATRIX_CACHE`, else `$XDG_CACHE_HOME/hwmatrix`, else `~/.cache/hwmatrix`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HWMATRIX_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("hwmatrix");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("hwmatrix")
}

/// The file nncf_variants.py writes beside a fixture: how it made each NNCF
/// format, from which export.
pub const NNCF_RECORD: &str = "nncf.json";

/// The file transformersjs_formats.py writes beside a fixture: how it made bnb4, q2 and q2f16, from
/// which export.
pub const TRANSFORMERSJS_RECORD: &str = "transformersjs.json";

/// The file openvino_pytorch.py writes beside a fixture: how OpenVINO's PyTorch frontend
/// converted its module (or the converter's whole error), and NNCF's formats of that IR.
pub const OPENVINO_PYTORCH_RECORD: &str = "openvino_pytorch.json";

/// Every record a script made after the export leaves beside a fixture: content.json keeps
/// each one's `key` under its file name, so `gen fixtures` retakes the digests when it changes.
pub const AFTER_EXPORT_RECORDS: [&str; 3] =
    [NNCF_RECORD, TRANSFORMERSJS_RECORD, OPENVINO_PYTORCH_RECORD];

/// The fixture root of the contract: `HWMATRIX_FIXTURES`, else `<cache>/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    std::env::var_os("HWMATRIX_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("fixtures"))
}

/// A path as messages and stored evidence name it: under the fixture root,
/// `<fixtures>/bert/model.onnx`, so no machine's home folder reaches a record;
/// elsewhere, as it is.
pub fn in_fixtures(path: &Path) -> String {
    match path.strip_prefix(fixtures_dir()) {
        Ok(relative) => format!("<fixtures>/{}", relative.display()),
        Err(_) => path.display().to_string(),
    }
}

/// Where `gen fixtures` keeps the exporter's error for a model it could not export.
pub fn export_error_file(fixtures: &Path, model_type: &str) -> PathBuf {
    fixtures.join(format!("{model_type}.error.txt"))
}

/// Where the generation fixtures live under a fixture root: `<root>/generation/<model_type>`
/// (no model_type is `generation`, and a float32 rebuild replaces only its own folder).
pub fn generation_fixtures(fixtures: &Path) -> PathBuf {
    fixtures.join("generation")
}

/// The web platforms' npm install (onnxruntime-web, @sparticuz/chromium) and
/// the WebNN Chromium unpacked from it: `HWMATRIX_WEB`, else `<cache>/web`.
pub fn web_dir() -> PathBuf {
    std::env::var_os("HWMATRIX_WEB")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("web"))
}

/// The Python of the exporter's venv: `HWMATRIX_PYTHON`, else `<cache>/venv/bin/python`.
pub fn python() -> PathBuf {
    std::env::var_os("HWMATRIX_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("venv/bin/python"))
}

/// Whose graph the fixtures under `fixtures_dir()` hold, where not ours: the `graph` of
/// the root's `graph.json` (`optimum`: `gen fixtures --graph optimum` writes it), read once.
pub fn fixtures_graph() -> Option<String> {
    static GRAPH: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    GRAPH
        .get_or_init(|| {
            let text = std::fs::read_to_string(fixtures_dir().join(GRAPH_RECORD)).ok()?;
            let value: serde_json::Value = serde_json::from_str(&text).ok()?;
            value["graph"].as_str().map(str::to_string)
        })
        .clone()
}

/// The file at a fixture root that names whose graphs it holds (absent: ours).
pub const GRAPH_RECORD: &str = "graph.json";

/// Fixtures whose graph optimum's ONNX exporter made (`gen fixtures --graph optimum`):
/// `<cache>/fixtures-optimum`; cells run on them with `HWMATRIX_FIXTURES` set to it.
pub fn optimum_fixtures_dir() -> PathBuf {
    cache_dir().join("fixtures-optimum")
}

/// The Python of optimum's venv (`bash tests/setup.sh optimum`): `<cache>/venv-optimum/bin/python`.
pub fn optimum_python() -> PathBuf {
    cache_dir().join("venv-optimum/bin/python")
}

/// The Python of optimum-intel's venv (`bash tests/setup.sh optimum-intel`), which converts the
/// saved tiny model of each fixture on optimum's graph: `<cache>/venv-optimum-intel/bin/python`.
pub fn optimum_intel_python() -> PathBuf {
    cache_dir().join("venv-optimum-intel/bin/python")
}

/// The checkout the current folder is in: the nearest ancestor holding
/// `model-specs/hardware.yaml`. `cargo test` runs a test binary in its
/// package's folder, and `gen` is run from the checkout.
pub fn checkout_root() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    checkout_root_from(&cwd)
}

pub fn checkout_root_from(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join("model-specs/hardware.yaml").is_file())
        .map(Path::to_path_buf)
}

/// Where result records go: `HWMATRIX_RESULTS`, else `results/` of the
/// checkout the process runs in.
pub fn results_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("HWMATRIX_RESULTS") {
        return Ok(PathBuf::from(dir));
    }
    checkout_root().map(|root| root.join("results")).ok_or_else(|| {
        let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
        format!("{cwd} is not inside a hwmatrix checkout (no model-specs/hardware.yaml above it): run from the checkout or set HWMATRIX_RESULTS")
    })
}

/// `/tmp/<scratch>/...` as `<tmp>/...`: a temporary folder's name is random
/// (a stored error, and meta.json's errors in a fixture's content digest).
pub fn without_tmp_paths(text: &str) -> String {
    const TMP: &str = "/tmp/";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(TMP) {
        out.push_str(&rest[..at]);
        out.push_str("<tmp>");
        let after = &rest[at + TMP.len() - 1..];
        // Drop the scratch folder's name, keep what is inside it.
        let name_end = after[1..]
            .find(|c: char| c == '/' || c.is_whitespace() || "'\"),:".contains(c))
            .map_or(after.len(), |i| i + 1);
        rest = &after[name_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkout_root_is_found_from_a_subfolder() {
        let root = std::env::temp_dir().join(format!("hwmatrix-paths-{}", std::process::id()));
        std::fs::create_dir_all(root.join("model-specs")).unwrap();
        std::fs::create_dir_all(root.join("generated/src")).unwrap();
        std::fs::write(root.join("model-specs/hardware.yaml"), "").unwrap();
        assert_eq!(
            checkout_root_from(&root.join("generated/src")),
            Some(root.clone())
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
