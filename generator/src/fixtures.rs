//! `gen fixtures`: builds the fixture of each selected model with the Python
//! exporter (runtime/exporter/export.py), skipping those whose cache key
//! (spec + exporter + its pinned requirements) has not changed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::plan::Plan;
use crate::spec::LoadedModel;

/// The exporter and its requirements, next to the runtime that reads its output.
pub fn exporter_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime/exporter"))
}

/// The seed every fixture is built with.
const SEED: u64 = 0;

#[derive(Debug, Default)]
pub struct Summary {
    pub built: usize,
    pub cached: usize,
    pub skipped_known_issue: usize,
    /// (model_type, the exporter's error)
    pub failed: Vec<(String, String)>,
}

pub fn build(plan: &Plan, root: &Path, python: &Path, log: &mut dyn Write) -> Result<Summary, String> {
    let dir = exporter_dir();
    let script = dir.join("export.py");
    let exporter_source = std::fs::read(&script).map_err(|e| format!("cannot read the exporter {}: {e}", script.display()))?;
    let requirements = std::fs::read(dir.join("requirements.txt")).map_err(|e| format!("cannot read {}/requirements.txt: {e}", dir.display()))?;
    if !python.exists() {
        return Err(format!(
            "no Python for the exporter at {}: run `bash tests/run.sh` once (it creates the venv), or set HWMATRIX_PYTHON",
            python.display()
        ));
    }
    std::fs::create_dir_all(root).map_err(|e| format!("cannot create the fixture root {}: {e}", root.display()))?;
    let mut summary = Summary::default();
    let total = plan.models.len();
    for (i, model_plan) in plan.models.iter().enumerate() {
        let model = model_plan.model;
        let name = &model.spec.model_type;
        let progress = format!("[{}/{total}] {name}", i + 1);
        if let Some(issue) = &model.spec.export.known_issue {
            summary.skipped_known_issue += 1;
            let _ = writeln!(log, "{progress}: skipped, known issue: {issue}");
            continue;
        }
        let key = cache_key(model, &exporter_source, &requirements)?;
        let out_dir = root.join(name);
        if cached_key(&out_dir).as_deref() == Some(key.as_str()) {
            summary.cached += 1;
            let _ = writeln!(log, "{progress}: cached");
            continue;
        }
        let started = Instant::now();
        let _ = writeln!(log, "{progress}: exporting...");
        let job = serde_json::json!({
            "spec": &model.spec,
            "out_dir": out_dir,
            "cache_key": key,
            "seed": SEED,
        });
        let error_path = runtime::fixture::error_file(root, name);
        match run_exporter(python, &script, &job) {
            Ok(()) => {
                let _ = std::fs::remove_file(&error_path);
                summary.built += 1;
                let _ = writeln!(log, "{progress}: exported in {:.1} s", started.elapsed().as_secs_f64());
            }
            Err(error) => {
                std::fs::write(&error_path, format!("{error}\n")).map_err(|e| format!("{}: {e}", error_path.display()))?;
                let _ = writeln!(log, "{progress}: FAILED: {error}");
                summary.failed.push((name.clone(), error));
            }
        }
    }
    Ok(summary)
}

/// sha256 over the spec as the exporter receives it, the exporter and its requirements.
pub fn cache_key(model: &LoadedModel, exporter: &[u8], requirements: &[u8]) -> Result<String, String> {
    let spec = serde_json::to_vec(&model.spec).map_err(|e| e.to_string())?;
    let mut hasher = Sha256::new();
    for part in [&spec[..], exporter, requirements, &SEED.to_le_bytes()] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn cached_key(out_dir: &Path) -> Option<String> {
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("meta.json")).ok()?).ok()?;
    meta.get("cache_key")?.as_str().map(str::to_string)
}

/// Runs the exporter with the job on stdin; on failure returns its last stderr line (the real error).
fn run_exporter(python: &Path, script: &Path, job: &serde_json::Value) -> Result<(), String> {
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
    let body = serde_json::to_vec(job).map_err(|e| e.to_string())?;
    child.stdin.take().expect("piped").write_all(&body).map_err(|e| format!("cannot send the job to the exporter: {e}"))?;
    let output = child.wait_with_output().map_err(|e| format!("exporter: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
    Err(format!("{last} (exit {})", output.status))
}
