//! `gen fixtures`: builds the fixture of each selected model with the Python
//! exporter (runtime/exporter/export.py), skipping those whose cache key
//! (spec + exporter + its pinned requirements) has not changed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use hwmatrix_cell::fixture_key::{self, SEED};

use crate::plan::Plan;

/// The exporter and its requirements, next to the runtime that reads its output.
pub fn exporter_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime/exporter"))
}

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
    if !script.is_file() {
        return Err(format!("no exporter at {}", script.display()));
    }
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
        let key = fixture_key::fixture_key(&model.digest());
        let out_dir = root.join(name);
        if cached_key(&out_dir).as_deref() == Some(key.as_str()) {
            summary.cached += 1;
            let _ = writeln!(log, "{progress}: cached");
            continue;
        }
        let started = Instant::now();
        let _ = writeln!(log, "{progress}: exporting...");
        // The spec goes to the exporter exactly as its digest was taken.
        let spec: serde_json::Value = serde_json::from_slice(&model.exporter_json()).map_err(|e| e.to_string())?;
        let job = serde_json::json!({
            "spec": spec,
            "out_dir": out_dir,
            "cache_key": key,
            "seed": SEED,
        });
        let error_path = hwmatrix_cell::paths::export_error_file(root, name);
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
