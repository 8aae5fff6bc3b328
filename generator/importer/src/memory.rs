//! `gen memory`'s computation: each selected architecture built at its default
//! size on PyTorch's meta device by the Python worker (exporter/memory.py),
//! cached per model under `<cache>/memory/`, keyed by what the figure depends
//! on (the spec as the worker receives it, memory.py, the pinned requirements
//! and a checkpoint's config), so a warm `gen memory --all` reads files only.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::workers::{JobError, Pool, Progress};
use hwmatrix_specs::plan::Plan;
use hwmatrix_specs::spec::LoadedModel;

/// A job may take this long: building the largest default (a 400-billion-parameter MoE) on
/// the meta device takes seconds; a minute means something is allocating for real.
pub const MEMORY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// One architecture's computed figures (memory.py's answer), or why there are none.
pub type Computed = Result<Value, String>;

/// The figures of every model of the plan found in the cache, in plan order;
/// a model without them has its reason. No Python runs (`gen report`).
pub fn cached(plan: &Plan, cache: &Path) -> Result<Vec<(String, Computed)>, String> {
    let (source, requirements) = sources()?;
    plan.models
        .iter()
        .map(|model_plan| {
            let model = model_plan.model;
            let name = model.spec.model_type.clone();
            let key = key(&job(model, None)?, &source, &requirements, None)?;
            let found = read_cached(&file(cache, &name, None), &key).unwrap_or_else(|| {
                Err("not computed for this spec yet: run `gen memory --all`".into())
            });
            Ok((name, found))
        })
        .collect()
}

/// The figures `gen memory --model M --checkpoint DIR` cached for a checkpoint folder's config,
/// if they are current (None where not computed, or computed from another config or memory.py).
pub fn cached_checkpoint(
    plan: &Plan,
    cache: &Path,
    model_type: &str,
    checkpoint: &Path,
) -> Option<Computed> {
    let (source, requirements) = sources().ok()?;
    let model = plan
        .models
        .iter()
        .find(|m| m.model.spec.model_type == model_type)?
        .model;
    let key = key(
        &job(model, Some(checkpoint)).ok()?,
        &source,
        &requirements,
        Some(checkpoint),
    )
    .ok()?;
    read_cached(&file(cache, model_type, Some(checkpoint)), &key)
}

/// memory.py and the exporter's pinned requirements: what the figures depend on besides the spec.
fn sources() -> Result<(Vec<u8>, Vec<u8>), String> {
    let read = |name: &str| {
        let path = crate::workers::exporter_dir().join(name);
        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    Ok((read("memory.py")?, read("requirements.txt")?))
}

/// The figures of every model of the plan, in plan order: cached ones read,
/// the others computed by `workers` Python processes and cached.
/// `checkpoint`: a pretrained folder whose config.json replaces the defaults
/// (cached in a file of its own, under a key that covers that config).
pub fn compute(
    plan: &Plan,
    cache: &Path,
    python: &Path,
    workers: usize,
    checkpoint: Option<&Path>,
    log: &mut dyn Write,
) -> Result<Vec<(String, Computed)>, String> {
    let (source, requirements) = sources()?;
    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let mut results: Vec<(String, Option<Computed>)> = Vec::new();
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for model_plan in &plan.models {
        let model = model_plan.model;
        let name = model.spec.model_type.clone();
        let job = job(model, checkpoint)?;
        let key = key(&job, &source, &requirements, checkpoint)?;
        match read_cached(&file(cache, &name, checkpoint), &key) {
            Some(found) => results.push((name, Some(found))),
            None => {
                keys.push((results.len(), key));
                jobs.push((name.clone(), json!({"kind": "memory", "job": job})));
                results.push((name, None));
            }
        }
    }
    if !jobs.is_empty() {
        if !python.exists() {
            return Err(format!(
                "no Python for the exporter at {}: run `bash tests/setup.sh exporter` once, or set HWMATRIX_PYTHON",
                python.display()
            ));
        }
        let pool = Pool {
            python: python.to_path_buf(),
            workers,
            timeout: MEMORY_TIMEOUT,
            log_dir: cache.join(".logs"),
        };
        let mut progress =
            Progress::new("computed", jobs.len(), log, Progress::stderr_is_terminal());
        let outcomes = pool.run(jobs, &mut progress)?;
        for ((index, key), (name, outcome)) in keys.into_iter().zip(outcomes) {
            let computed = match outcome {
                Ok(value) => Ok(value),
                Err(JobError::Failed { error, .. }) => Err(error),
                // Not the architecture's answer: our limit or a crash; never cached.
                Err(other) => {
                    results[index].1 = Some(Err(format!("not computed here: {other}")));
                    continue;
                }
            };
            write_cached(&file(cache, &name, checkpoint), &key, &computed)?;
            results[index].1 = Some(computed);
        }
    }
    Ok(results
        .into_iter()
        .map(|(name, computed)| (name, computed.expect("every model answered")))
        .collect())
}

/// The worker's job: the spec as the exporter receives it (with the declared
/// cache of a model that generates), its task, and a checkpoint folder.
fn job(model: &LoadedModel, checkpoint: Option<&Path>) -> Result<Value, String> {
    let spec = if model.generates() {
        model.generation_json()
    } else {
        model.exporter_json()
    };
    let spec: Value = serde_json::from_slice(&spec).map_err(|e| e.to_string())?;
    Ok(json!({
        "spec": spec,
        "task": model.spec.task,
        "checkpoint": checkpoint.map(|p| p.display().to_string()),
    }))
}

fn key(
    job: &Value,
    source: &[u8],
    requirements: &[u8],
    checkpoint: Option<&Path>,
) -> Result<String, String> {
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(job).map_err(|e| e.to_string())?);
    hasher.update(source);
    hasher.update(requirements);
    if let Some(dir) = checkpoint {
        let config = dir.join("config.json");
        hasher.update(std::fs::read(&config).map_err(|e| format!("{}: {e}", config.display()))?);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// A model's cached figures: the defaults' in `<model_type>.json`, a checkpoint's beside them.
fn file(cache: &Path, model_type: &str, checkpoint: Option<&Path>) -> PathBuf {
    match checkpoint {
        None => cache.join(format!("{model_type}.json")),
        Some(_) => cache.join(format!("{model_type}.checkpoint.json")),
    }
}

/// A cached answer under this key, else None (absent, another key, unreadable).
fn read_cached(path: &Path, key: &str) -> Option<Computed> {
    let value: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    if value.get("key")?.as_str()? != key {
        return None;
    }
    match (value.get("result"), value.get("error")) {
        (Some(result), _) => Some(Ok(result.clone())),
        (None, Some(Value::String(error))) => Some(Err(error.clone())),
        _ => None,
    }
}

fn write_cached(path: &Path, key: &str, computed: &Computed) -> Result<(), String> {
    let value = match computed {
        Ok(result) => json!({"key": key, "result": result}),
        Err(error) => json!({"key": key, "error": error}),
    };
    let text = serde_json::to_vec_pretty(&value).map_err(|e| e.to_string())?;
    let partial = path.with_extension("json.partial");
    std::fs::write(&partial, text).map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_answer_counts_only_under_its_own_key() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-memory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = file(&dir, "bert", None);
        write_cached(&path, "k1", &Ok(json!({"parameters": {"total": 3}}))).unwrap();
        assert_eq!(
            read_cached(&path, "k1"),
            Some(Ok(json!({"parameters": {"total": 3}})))
        );
        assert_eq!(read_cached(&path, "k2"), None);
        write_cached(&path, "k3", &Err("cannot build".into())).unwrap();
        assert_eq!(read_cached(&path, "k3"), Some(Err("cannot build".into())));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
