//! `gen fixtures`: builds the fixture of each selected model with the Python
//! exporter (generator/importer/exporter/export.py), skipping those whose cache key
//! (spec + exporter + its pinned requirements) has not changed.

use std::io::Write;
use std::path::{Path, PathBuf};

use hwmatrix_cell::Stage;
use hwmatrix_cell::export_error::ExportError;
use hwmatrix_specs::fixture_key::SEED;

use crate::workers::{Pool, Progress};
use hwmatrix_specs::plan::Plan;
use hwmatrix_specs::spec::LoadedModel;

#[derive(Debug, Default)]
pub struct Summary {
    pub built: usize,
    pub cached: usize,
    pub skipped_known_issue: usize,
    /// (model_type, the exporter's error)
    pub failed: Vec<(String, String)>,
    /// NNCF's formats of the exported fixtures (None: not asked for).
    pub nncf: Option<crate::after_export::Summary>,
    /// OpenVINO's PyTorch frontend's conversions of the traced fixtures, with NNCF's formats
    /// of them (None: not asked for, with `nncf`).
    pub openvino_pytorch: Option<crate::after_export::Summary>,
    /// transformers.js's formats export.py does not make (bnb4, q2, q2f16).
    pub transformersjs: crate::after_export::Summary,
    /// Fixtures whose content.json was (re)written.
    pub content_taken: usize,
}

/// Where a fixture's model comes from.
#[derive(Clone, Debug, Default)]
pub enum Source {
    /// The spec's tiny config with seeded random weights (the default).
    #[default]
    TinyRandom,
    /// A local pretrained checkpoint folder (config and weights, e.g. one in the HF cache).
    Checkpoint(PathBuf),
    /// The tiny model's graph as optimum's ONNX exporter makes it (transformers.js's
    /// conversion), by optimum_graph.py; optimum runs with this Python (its own venv).
    Optimum(PathBuf),
}

/// Builds (or finds cached) the fixture of every model of the plan, spread
/// over `workers` Python processes. Failed exports leave
/// `<root>/<model_type>.error.txt` with the real error.
/// `retry_generation`: also export the models whose generation exporter failed before
/// (`imported.generation_export`), to see whether a change to it fixed them.
/// `nncf_python`: OpenVINO's venv, which then makes NNCF's formats of every exported fixture,
/// and converts every traced one with OpenVINO's PyTorch frontend.
#[allow(clippy::too_many_arguments)]
pub fn build(
    plan: &Plan,
    root: &Path,
    python: &Path,
    workers: usize,
    source: &Source,
    retry_generation: bool,
    nncf_python: Option<&Path>,
    log: &mut dyn Write,
) -> Result<Summary, String> {
    check_graph_root(root, source)?;
    let script = crate::workers::worker_script();
    if !script.is_file() {
        return Err(format!("no exporter at {}", script.display()));
    }
    if !python.exists() {
        return Err(format!(
            "no Python for the exporter at {}: run `bash tests/run.sh` once (it creates the venv), or set HWMATRIX_PYTHON",
            python.display()
        ));
    }
    if matches!(source, Source::Optimum(_)) {
        let marker = root.join(hwmatrix_cell::paths::GRAPH_RECORD);
        std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
        std::fs::write(&marker, "{\"graph\": \"optimum\"}\n")
            .map_err(|e| format!("{}: {e}", marker.display()))?;
    }
    let _lock = StoreLock::acquire(root, log)?;
    let mut summary = Summary::default();
    let mut jobs = Vec::new();
    for model_plan in &plan.models {
        let model = model_plan.model;
        let name = &model.spec.model_type;
        // Where our recipe's export failed, optimum's may not: its fixture is tried (the
        // tiny model and its references are built before the export).
        let optimum_tries = matches!(source, Source::Optimum(_))
            && model.spec.export.stage == Some(hwmatrix_cell::Stage::Export);
        if model.spec.export.known_issue.is_some() && !optimum_tries {
            if matches!(source, Source::Optimum(_)) {
                // Our harness stopped before the export: no tiny model to give optimum.
                summary.skipped_known_issue += 1;
                continue;
            }
            // The ONNX export failed: libtorch's cells may still run, on a fixture built without it.
            let out_dir = root.join(name);
            match onnx_failure_to_trace(model_plan, source) {
                None => summary.skipped_known_issue += 1,
                Some(_) if cached(&out_dir, &model.fixture_key(), FixtureKind::TorchScriptOnly) => {
                    summary.cached += 1
                }
                Some(onnx_error) => {
                    jobs.push((name.clone(), torchscript_job(model, &out_dir, onnx_error)?))
                }
            }
            continue;
        }
        let mut key = model.fixture_key();
        match source {
            // Never mistaken for the tiny fixture: `gen fixtures` without
            // --checkpoint rebuilds the tiny one.
            Source::Checkpoint(dir) => key = format!("checkpoint:{}:{key}", dir.display()),
            Source::Optimum(_) => key = hwmatrix_specs::fixture_key::optimum_key(&key),
            Source::TinyRandom => {}
        }
        if matches!(source, Source::Optimum(_)) && !model.spec.components.is_empty() {
            // optimum exports the whole model; ours checks it as its components.
            summary.skipped_known_issue += 1;
            continue;
        }
        let out_dir = root.join(name);
        if cached(&out_dir, &key, FixtureKind::Whole) {
            summary.cached += 1;
            continue;
        }
        jobs.push((name.clone(), export_job(model, &out_dir, &key, source)?));
    }
    // Generation fixtures: tiny random models only (a checkpoint's generation is not built yet).
    let generation_root = hwmatrix_cell::paths::generation_fixtures(root);
    let mut generation_names = std::collections::BTreeSet::new();
    for model_plan in plan
        .models
        .iter()
        .filter(|m| matches!(source, Source::TinyRandom) && m.model.generates())
    {
        let model = model_plan.model;
        // A measured failure of the generation exporter (`imported.generation_export`) is the
        // spec's known issue, skipped like a float32 export's: its checks say why, and
        // `gen measure --platform cpu` records a fixture built after a fix (`--retry-generation`).
        if model
            .spec
            .pipeline_entry(hwmatrix_cell::CheckId::GenerationExport)
            .is_some()
            && !retry_generation
        {
            summary.skipped_known_issue += 1;
            continue;
        }
        let out_dir = generation_root.join(&model.spec.model_type);
        let key = model.generation_fixture_key();
        if cached(&out_dir, &key, FixtureKind::Whole) {
            summary.cached += 1;
            continue;
        }
        let label = format!("{} (generation)", model.spec.model_type);
        generation_names.insert(label.clone());
        jobs.push((label, generation_job(model, "generation", &out_dir, &key)?));
    }
    if !jobs.is_empty() {
        export(
            jobs,
            root,
            python,
            workers,
            &generation_names,
            &mut summary,
            log,
        )?;
    }
    let logs = root.join(".logs");
    use crate::after_export::{
        Maker, NNCF, OPENVINO_PYTORCH, OPTIMUM_INTEL, TRANSFORMERS_JS, fixtures_with, make,
    };
    // Each maker takes the fixture folders holding the file it reads.
    let made_by = |maker: &Maker, python: &Path, log: &mut dyn Write| {
        let models = plan.models.iter().map(|m| m.model.spec.model_type.as_str());
        let dirs = fixtures_with(root, models, maker.reads);
        make(maker, root, &dirs, python, workers, &logs, log)
    };
    summary.transformersjs = made_by(&TRANSFORMERS_JS, python, log)?;
    if let Some(nncf_python) = nncf_python {
        summary.nncf = Some(made_by(&NNCF, nncf_python, log)?);
        // OpenVINO's conversion of the PyTorch model: on our fixtures its PyTorch frontend's
        // of the traced module; on optimum's, optimum-intel's of the saved tiny model.
        let converter = match source {
            Source::Optimum(_) => {
                let python = hwmatrix_cell::paths::optimum_intel_python();
                python.exists().then_some((&OPTIMUM_INTEL, python))
            }
            _ => Some((&OPENVINO_PYTORCH, nncf_python.to_path_buf())),
        };
        match converter {
            Some((maker, python)) => {
                summary.openvino_pytorch = Some(made_by(maker, &python, log)?);
            }
            None => {
                let _ = writeln!(
                    log,
                    "optimum-intel's conversions: not made (no optimum-intel venv at {}: `bash tests/setup.sh optimum-intel` installs it); the ov_pytorch checks on these fixtures will say so",
                    hwmatrix_cell::paths::optimum_intel_python().display()
                );
            }
        }
    }
    summary.content_taken = record_content(plan, root, log)?;
    Ok(summary)
}

/// A root holds one graph's fixtures: optimum's are marked by its `graph.json` (which every
/// record of a check on them carries as `graph`), ours by its absence. Building one kind into
/// a root of the other is refused before anything is written.
fn check_graph_root(root: &Path, source: &Source) -> Result<(), String> {
    use hwmatrix_cell::paths::GRAPH_RECORD;
    let marker = root.join(GRAPH_RECORD);
    let holds_fixtures = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("meta.json").is_file());
    match source {
        Source::Optimum(_) if !marker.is_file() && holds_fixtures => Err(format!(
            "error: {} holds fixtures of our own graphs\n  help: build optimum's into another folder (the default, {}, or --fixtures DIR)",
            root.display(),
            hwmatrix_cell::paths::optimum_fixtures_dir().display()
        )),
        _ if marker.is_file() && !matches!(source, Source::Optimum(_)) => Err(format!(
            "error: {} holds fixtures of another tool's graphs ({})\n  help: build ours into the fixture root (leave out --fixtures), or pass --graph optimum",
            root.display(),
            marker.display()
        )),
        _ => Ok(()),
    }
}

/// Writes `content.json` (hwmatrix_cell::content) beside every fixture of the
/// plan that lacks a current one: taken after the export and NNCF's formats,
/// it says what each check will read, which records and evidence then
/// carry. A fixture found cached keeps its record unless its build key or
/// NNCF's key changed since. Returns how many it took.
fn record_content(plan: &Plan, root: &Path, log: &mut dyn Write) -> Result<usize, String> {
    use hwmatrix_cell::content::Content;
    let mut dirs = Vec::new();
    for model_plan in &plan.models {
        let model = model_plan.model;
        let name = model.spec.model_type.as_str();
        let (digest, key) = (model.digest(), model.fixture_key());
        for dir in crate::after_export::exported_fixtures(root, [name]) {
            dirs.push((dir, digest.clone(), key.clone(), false));
        }
        // A libtorch-only fixture (its ONNX export failed) has no model.onnx;
        // nor has the folder of a model checked as components, which is none.
        let whole = root.join(name);
        if model.spec.components.is_empty()
            && whole.join("meta.json").is_file()
            && !whole.join("model.onnx").is_file()
        {
            dirs.push((whole, digest.clone(), key.clone(), false));
        }
        let generation = hwmatrix_cell::paths::generation_fixtures(root).join(name);
        if model.generates() && generation.join("meta.json").is_file() {
            let key = model.generation_fixture_key();
            dirs.push((generation, model.generation_digest(), key, true));
        }
    }
    let key_in = |dir: &Path, file: &str, field: &str| {
        std::fs::read_to_string(dir.join(file))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v[field].as_str().map(str::to_string))
    };
    let mut taken = 0;
    for (dir, spec_digest, key, generation) in dirs {
        let cache_key = key_in(&dir, "meta.json", "cache_key");
        // Only a fixture built from today's spec is recorded as built from it
        // (a checkpoint's key ends with the tiny one's): one an export left
        // as it was, having failed, keeps its own record.
        if !cache_key
            .as_deref()
            .is_some_and(|k| k.ends_with(key.as_str()))
        {
            continue;
        }
        let made_after_export: std::collections::BTreeMap<String, String> =
            hwmatrix_cell::paths::AFTER_EXPORT_RECORDS
                .iter()
                .filter_map(|record| Some((record.to_string(), key_in(&dir, record, "key")?)))
                .collect();
        // Taken again where it does not name the CPU that built the fixture (its
        // class and kernel features): the cache is this machine's. (One whose
        // digests are of another form reads as none.)
        let current = Content::read(&dir).is_some_and(|c| {
            c.spec_digest == spec_digest
                && c.cache_key == cache_key
                && c.made_after_export == made_after_export
                && c.built_on
                    .as_deref()
                    .is_some_and(hwmatrix_cell::content::names_the_features)
        });
        if current {
            continue;
        }
        Content::take(&dir, &spec_digest, generation, cache_key, made_after_export)
            .and_then(|c| c.write(&dir))
            .map_err(|e| format!("{}: cannot record what it holds: {e}", dir.display()))?;
        taken += 1;
        if taken % 100 == 0 {
            let _ = writeln!(
                log,
                "recorded the content of {taken} fixtures (last {})",
                dir.display()
            );
        }
    }
    Ok(taken)
}

/// Runs the export jobs in a pool of workers, leaving each failure's error beside the fixtures.
fn export(
    jobs: Vec<(String, serde_json::Value)>,
    root: &Path,
    python: &Path,
    workers: usize,
    generation_names: &std::collections::BTreeSet<String>,
    summary: &mut Summary,
    log: &mut dyn Write,
) -> Result<(), String> {
    let generation_root = hwmatrix_cell::paths::generation_fixtures(root);
    let pool = Pool {
        python: python.to_path_buf(),
        workers,
        timeout: EXPORT_TIMEOUT,
        log_dir: root.join(".logs"),
    };
    let tty = Progress::stderr_is_terminal();
    let mut progress = Progress::new("exported", jobs.len(), log, tty);
    for (name, outcome) in pool.run(jobs, &mut progress)? {
        let generation = name
            .strip_suffix(" (generation)")
            .filter(|_| generation_names.contains(&name));
        let error_path = match generation {
            Some(model) => hwmatrix_cell::paths::export_error_file(&generation_root, model),
            None => hwmatrix_cell::paths::export_error_file(root, &name),
        };
        match outcome {
            Ok(_) => {
                let _ = std::fs::remove_file(&error_path);
                summary.built += 1;
            }
            Err(error) => {
                // A generation export's error keeps the stage the worker named, for
                // the generates checks to say who failed (ExportError).
                let text = match generation {
                    Some(_) => ExportError {
                        stage: error.failure_at(Stage::Reference).stage,
                        error: error.to_string(),
                    }
                    .to_json(),
                    None => format!("{error}\n"),
                };
                std::fs::write(&error_path, text)
                    .map_err(|e| format!("{}: {e}", error_path.display()))?;
                // Another tool's fixture is never asked whether it is this spec's (the runtime
                // asks that of our exporter's only): an older one must not outlive its failure.
                if generation.is_none() && root.join(hwmatrix_cell::paths::GRAPH_RECORD).is_file() {
                    let _ = std::fs::remove_dir_all(root.join(&name));
                }
                summary.failed.push((name, error.to_string()));
            }
        }
    }
    Ok(())
}

/// One export job for the worker: the spec exactly as its digest was taken.
pub fn export_job(
    model: &LoadedModel,
    out_dir: &Path,
    key: &str,
    source: &Source,
) -> Result<serde_json::Value, String> {
    let spec: serde_json::Value =
        serde_json::from_slice(&model.exporter_json()).map_err(|e| e.to_string())?;
    let checkpoint = match source {
        Source::Checkpoint(dir) => serde_json::Value::String(dir.display().to_string()),
        Source::TinyRandom | Source::Optimum(_) => serde_json::Value::Null,
    };
    let mut job = serde_json::json!({
        "kind": "export",
        "job": {
            "spec": spec,
            "out_dir": out_dir,
            "cache_key": key,
            "seed": SEED,
            "tolerance": {"abs": model.spec.tolerance.abs, "rel": model.spec.tolerance.rel},
            "checkpoint": checkpoint,
        }
    });
    if let Source::Optimum(python) = source {
        job["kind"] = "optimum".into();
        job["job"]["optimum_python"] = python.display().to_string().into();
    }
    Ok(job)
}

/// A worker's job on a generating model (`kind`: `generation` builds its fixture in
/// `out_dir`, `cache` only reads its cache for gen derive): the spec as the
/// generation exporter receives it, with the declared cache.
pub fn generation_job(
    model: &LoadedModel,
    kind: &str,
    out_dir: &Path,
    key: &str,
) -> Result<serde_json::Value, String> {
    let mut job = export_job(model, out_dir, key, &Source::TinyRandom)?;
    job["kind"] = kind.into();
    job["job"]["spec"] =
        serde_json::from_slice(&model.generation_json()).map_err(|e| e.to_string())?;
    // Decoder-only or encoder-decoder: not part of the exporter's spec view (nor of the key).
    job["job"]["task"] = model.spec.task.clone().into();
    Ok(job)
}

/// A job may take this long: the dynamo exporter on a large tiny model takes ~30 s here, and
/// a model that needs the recipe's last attempt (torch.export's draft mode, which runs the
/// model on real tensors beside the fake ones) fails five attempts before it: mimi's whole
/// recipe took 239 s on 2 busy cores.
pub const EXPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(480);

/// Which fixture a model gets: the whole one (its ONNX graph, the precision
/// variants, the TorchScript trace), or, where its ONNX export failed,
/// libtorch's alone (generator/importer/exporter/torchscript.py: `onnx.error` in meta.json).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixtureKind {
    Whole,
    TorchScriptOnly,
}

/// Whether `out_dir` holds a fixture of this kind built under `key`: a
/// libtorch-only fixture is never taken for a whole one (nor the reverse).
pub fn cached(out_dir: &Path, key: &str, kind: FixtureKind) -> bool {
    let Some(meta) = std::fs::read_to_string(out_dir.join("meta.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
    else {
        return false;
    };
    let without_onnx = meta.get("onnx").is_some();
    meta.get("cache_key").and_then(|k| k.as_str()) == Some(key)
        && without_onnx == (kind == FixtureKind::TorchScriptOnly)
}

/// The ONNX exporters' failure of a model whose cells on the trace (libtorch's, OpenVINO's
/// PyTorch frontend's) the plan runs on a tiny random model: its trace-only fixture is
/// built, with that failure as why it has no graph. None where no such fixture is wanted.
fn onnx_failure_to_trace<'a>(
    model_plan: &'a hwmatrix_specs::plan::ModelPlan,
    source: &Source,
) -> Option<&'a str> {
    let entry = model_plan
        .model
        .spec
        .pipeline_entry(hwmatrix_cell::CheckId::Export)?;
    let runs_the_trace = model_plan.cells.iter().any(|c| {
        c.engine.kind().runs_the_trace() && matches!(c.planned, hwmatrix_cell::Planned::Run)
    });
    (runs_the_trace && matches!(source, Source::TinyRandom)).then_some(entry.error.as_str())
}

/// The job that builds libtorch's fixture alone (torchscript.py), `onnx_error` being why there is no ONNX graph.
pub fn torchscript_job(
    model: &LoadedModel,
    out_dir: &Path,
    onnx_error: &str,
) -> Result<serde_json::Value, String> {
    let mut job = export_job(model, out_dir, &model.fixture_key(), &Source::TinyRandom)?;
    job["kind"] = "torchscript".into();
    job["job"]["onnx_error"] = onnx_error.into();
    Ok(job)
}

/// The fixture store, held by one gen at a time: an exclusive lock on
/// `<root>/.lock` for as long as this value lives (the OS drops it when gen
/// ends, however it ends). A second gen waits, saying for whom. Once held,
/// partial exports left by a gen that was killed are removed: no worker of
/// another run can still be writing them (workers end with their gen), and
/// none can be mistaken for a model's failure.
pub struct StoreLock {
    _file: std::fs::File,
}

impl StoreLock {
    pub fn acquire(root: &Path, log: &mut dyn Write) -> Result<StoreLock, String> {
        std::fs::create_dir_all(root)
            .map_err(|e| format!("cannot create the fixture root {}: {e}", root.display()))?;
        let path = root.join(".lock");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                let _ = writeln!(
                    log,
                    "waiting: another gen ({}) is building fixtures in {}",
                    holder.trim(),
                    root.display()
                );
                file.lock().map_err(|e| {
                    format!("{}: cannot lock the fixture store: {e}", path.display())
                })?;
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(format!(
                    "{}: cannot lock the fixture store: {e}",
                    path.display()
                ));
            }
        }
        use std::io::Seek;
        let _ = file
            .set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| write!(file, "pid {}", std::process::id()));
        remove_partial_exports(root)?;
        let generation = hwmatrix_cell::paths::generation_fixtures(root);
        if generation.is_dir() {
            remove_partial_exports(&generation)?;
        }
        Ok(StoreLock { _file: file })
    }
}

/// Removes every `<model>.partial*` folder of the store (the exporter's
/// scratch space; a finished export renames its own into place).
fn remove_partial_exports(root: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().contains(".partial") {
            std::fs::remove_dir_all(entry.path()).map_err(|e| {
                format!(
                    "cannot remove the leftover partial export {}: {e}",
                    entry.path().display()
                )
            })?;
        }
    }
    Ok(())
}
