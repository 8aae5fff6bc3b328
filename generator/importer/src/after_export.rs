//! Formats made after the export, beside each exported fixture, by scripts of their own (so
//! that adding one rebuilds no export), each remade only where a fixture was re-exported or
//! its script or requirements changed:
//! - NNCF's weight formats (OpenVINO IR with int8 or int4 weights, as optimum-intel ships
//!   them), for the openvino platform's OpenVINO-runtime engine, by nncf_variants.py in
//!   OpenVINO's own venv (openvino and nncf; the exporter's venv has neither);
//! - transformers.js's formats export.py does not make (bnb4, q2, q2f16), by
//!   transformersjs_formats.py in the exporter's venv (onnxruntime's quantizers);
//! - OpenVINO's own conversion of the fixture's PyTorch module (its PyTorch frontend, as
//!   optimum-intel converts a model) and NNCF's formats of that IR, by openvino_pytorch.py
//!   in OpenVINO's venv with the exporter venv's torch; on fixtures of optimum's graph,
//!   optimum-intel's conversion of the saved tiny model, by optimum_intel.py (the same
//!   record and NNCF formats) in optimum-intel's venv.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use hwmatrix_cell::paths::{NNCF_RECORD, OPENVINO_PYTORCH_RECORD, TRANSFORMERSJS_RECORD};
use hwmatrix_specs::fixture_key::{
    nncf_key, openvino_pytorch_key, optimum_intel_key, transformersjs_key,
};

use crate::workers::{JobError, Progress, exporter_dir};

/// A script that makes formats beside each exported fixture and records how in a file of its
/// own (whose `key` says which version of the script made them).
pub struct Maker {
    /// Its progress line's title.
    pub progress: &'static str,
    /// Its file in generator/importer/exporter/.
    pub script: &'static str,
    /// The record it writes beside each fixture.
    pub record: &'static str,
    pub key: fn() -> String,
    /// What its Python needs, for the error when it is missing.
    pub python_needs: &'static str,
    /// The fixture's file it makes its formats from: a fixture without it gets none.
    pub reads: &'static str,
    /// Whether it imports torch from the exporter's venv (JOBS.json's `torch_packages`).
    pub needs_torch: bool,
}

/// NNCF's formats (nncf_int8, nncf_int4), in OpenVINO's venv.
pub const NNCF: Maker = Maker {
    progress: "NNCF formats made",
    script: "nncf_variants.py",
    record: NNCF_RECORD,
    key: nncf_key,
    python_needs: "OpenVINO and NNCF: run `bash tests/setup.sh openvino`",
    reads: "model.onnx",
    needs_torch: false,
};

/// transformers.js's bnb4, q2 and q2f16, in the exporter's venv.
pub const TRANSFORMERS_JS: Maker = Maker {
    progress: "transformers.js formats made",
    script: "transformersjs_formats.py",
    record: TRANSFORMERSJS_RECORD,
    key: transformersjs_key,
    python_needs: "onnxruntime's quantizers: run `bash tests/setup.sh`",
    reads: "model.onnx",
    needs_torch: false,
};

/// OpenVINO's PyTorch frontend's conversion of the TorchScript module, and NNCF's formats of
/// it, in OpenVINO's venv with torch from the exporter's. Made for every fixture, the
/// libtorch-only ones whose ONNX export failed among them; one whose module did not trace
/// gets the trace's error as the conversion's.
pub const OPENVINO_PYTORCH: Maker = Maker {
    progress: "OpenVINO PyTorch frontend conversions made",
    script: "openvino_pytorch.py",
    record: OPENVINO_PYTORCH_RECORD,
    key: openvino_pytorch_key,
    python_needs: "OpenVINO and NNCF: run `bash tests/setup.sh openvino`",
    reads: "meta.json",
    needs_torch: true,
};

/// The same conversion on fixtures of optimum's graph, by optimum-intel (OpenVINO's exporter
/// of Hugging Face models) from the saved tiny model each keeps in `hf/`, in optimum-intel's
/// venv (which reads OpenVINO's and the exporter's after its own).
pub const OPTIMUM_INTEL: Maker = Maker {
    progress: "optimum-intel conversions made",
    script: "optimum_intel.py",
    record: OPENVINO_PYTORCH_RECORD,
    key: optimum_intel_key,
    python_needs: "optimum-intel: run `bash tests/setup.sh optimum-intel`",
    reads: "hf/config.json",
    needs_torch: true,
};

/// What one call did.
#[derive(Debug, Default)]
pub struct Summary {
    pub made: usize,
    pub cached: usize,
    /// (fixture folder, why) for a fixture whose script run failed as a whole; a format the
    /// tool could not make is not one of them: its error is in the fixture's record.
    pub failed: Vec<(String, String)>,
}

/// The fixture folders of `models` under `root` that have an ONNX export (a model's, and each
/// of its components').
pub fn exported_fixtures<'a>(
    root: &Path,
    models: impl IntoIterator<Item = &'a str>,
) -> Vec<PathBuf> {
    fixtures_with(root, models, "model.onnx")
}

/// The fixture folders of `models` under `root` (a model's, and each of its components') that
/// hold `file`.
pub fn fixtures_with<'a>(
    root: &Path,
    models: impl IntoIterator<Item = &'a str>,
    file: &str,
) -> Vec<PathBuf> {
    let exported = |dir: &Path| dir.join("meta.json").is_file() && dir.join(file).is_file();
    let mut dirs = Vec::new();
    for model in models {
        let dir = root.join(model);
        if exported(&dir) {
            dirs.push(dir.clone());
        }
        let mut components: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| exported(p))
            .collect();
        components.sort();
        dirs.extend(components);
    }
    dirs
}

/// Whether `dir`'s formats were made by this version of the script from its current export.
fn up_to_date(dir: &Path, record: &str, key: &str) -> bool {
    let read = |file: &str| -> Option<serde_json::Value> {
        serde_json::from_str(&std::fs::read_to_string(dir.join(file)).ok()?).ok()
    };
    let (Some(meta), Some(record)) = (read("meta.json"), read(record)) else {
        return false;
    };
    record["key"].as_str() == Some(key) && record["fixture_key"] == meta["cache_key"]
}

/// Makes `maker`'s formats of every fixture in `dirs` (folders under `root`) that lacks current
/// ones, with `python` (its venv) in `workers` processes. The caller holds the store's lock.
pub fn make(
    maker: &Maker,
    root: &Path,
    dirs: &[PathBuf],
    python: &Path,
    workers: usize,
    log_dir: &Path,
    log: &mut dyn Write,
) -> Result<Summary, String> {
    let key = (maker.key)();
    let mut summary = Summary::default();
    let todo: Vec<&PathBuf> = dirs
        .iter()
        .filter(|d| !up_to_date(d, maker.record, &key))
        .collect();
    summary.cached = dirs.len() - todo.len();
    if todo.is_empty() {
        return Ok(summary);
    }
    if !python.exists() {
        return Err(format!(
            "no Python with {} at {}",
            maker.python_needs,
            python.display()
        ));
    }
    std::fs::create_dir_all(log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
    let torch_packages = if maker.needs_torch {
        Some(exporter_packages()?)
    } else {
        None
    };
    let workers = workers.clamp(1, todo.len());
    let script: &'static str = maker.script;
    let (sender, receiver) = std::sync::mpsc::channel::<(String, Result<(), String>)>();
    let mut children = Vec::new();
    for (n, chunk) in todo.chunks(todo.len().div_ceil(workers)).enumerate() {
        let stem = maker.script.trim_end_matches(".py");
        let jobs = log_dir.join(format!("{stem}-{n}.jobs.json"));
        let body = serde_json::json!({"key": key, "dirs": chunk, "torch_packages": torch_packages});
        std::fs::write(&jobs, body.to_string()).map_err(|e| format!("{}: {e}", jobs.display()))?;
        let stderr_path = log_dir.join(format!("{stem}-{n}.log"));
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|e| format!("{}: {e}", stderr_path.display()))?;
        let mut child = Command::new(python)
            .arg(exporter_dir().join(maker.script))
            .arg(&jobs)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let sender = sender.clone();
        let expected: Vec<String> = chunk.iter().map(|d| d.display().to_string()).collect();
        let reader = std::thread::spawn(move || {
            let mut seen = 0;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Ok(done) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                seen += 1;
                let dir = done["dir"].as_str().unwrap_or_default().to_string();
                let _ = sender.send((dir, Ok(())));
            }
            // A process that died part-way leaves the rest of its chunk unmade.
            for dir in expected.into_iter().skip(seen) {
                let why = format!(
                    "the {script} process died before this fixture (its log: {})",
                    stderr_path.display()
                );
                let _ = sender.send((dir, Err(why)));
            }
        });
        children.push((child, reader));
    }
    drop(sender);
    let mut progress = Progress::new(
        maker.progress,
        todo.len(),
        log,
        Progress::stderr_is_terminal(),
    );
    let mut last = Instant::now();
    for (dir, outcome) in receiver {
        let took = last.elapsed();
        last = Instant::now();
        let label = Path::new(&dir)
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| dir.clone());
        let as_outcome = outcome
            .clone()
            .map(|()| serde_json::Value::Null)
            .map_err(|error| JobError::Failed { error, stage: None });
        progress.finished(&label, &as_outcome, took);
        match outcome {
            Ok(()) => summary.made += 1,
            Err(why) => summary.failed.push((dir, why)),
        }
    }
    progress.end();
    for (mut child, reader) in children {
        let _ = child.wait();
        let _ = reader.join();
    }
    Ok(summary)
}

/// The exporter venv's site-packages (where its torch is), as its Python names them.
fn exporter_packages() -> Result<String, String> {
    let python = hwmatrix_cell::paths::python();
    let output = Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .map_err(|e| {
            format!(
                "cannot start the exporter's Python at {} (torch for OpenVINO's PyTorch frontend): {e}: run `bash tests/setup.sh exporter`",
                python.display()
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "{} could not name its site-packages: {}",
            python.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}
