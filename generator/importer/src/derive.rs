//! `gen derive`: one spec per architecture of transformers' base-model
//! registry, derived by the Python worker (generator/importer/exporter/registry.py):
//! category, architecture type and task from the task registries, a generic
//! tiny config, and inputs and outputs from running the tiny model. Each
//! architecture then goes through the fixture pipeline once (export, then
//! onnxruntime against PyTorch; TorchScript where ONNX fails); a failure is
//! written into the evidence store (model-specs/evidence/) with who failed,
//! so a cell that cannot run says why, in the pipeline's own words.
//!
//! Why Rust drives and Python derives: only Python can ask transformers; only
//! gen knows the specs, their defaults and the fixture cache, and it already
//! owns the worker pool that `gen fixtures` uses.
//!
//! A spec file has two parts. Everything above [`MARKER`] is curated: the
//! importer never changes a byte of it. Everything below is the `imported:`
//! block, which the importer rewrites. A curated field wins over the imported
//! one. A file whose content would not change is not written.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use hwmatrix_cell::{CheckId, Stage};

use crate::workers::{JobError, Pool, Progress};
use hwmatrix_specs::spec::evidence::PipelineFailure;
use hwmatrix_specs::spec::{self, DefaultsFile, Imported, LoadedModel, SpecFile};

pub const MARKER: &str = "# ---- written by `gen derive`: everything below this line is derived and rewritten on each derive; edit above it ----";
/// The marker as `gen import` (the command's old name) wrote it: still read, so a
/// spec written before the rename keeps its curated part; the next derive writes [`MARKER`].
const OLD_MARKER: &str = "# ---- written by `gen import`: everything below this line is derived and rewritten on each import; edit above it ----";

/// The checked-in list of architectures the importer leaves out, each with its reason.
pub const EXCLUSIONS: &str = "import-exclusions.yaml";

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ExclusionsFile {
    exclusions: BTreeMap<String, String>,
}

pub struct Options {
    pub python: PathBuf,
    pub fixtures: PathBuf,
    pub workers: usize,
    /// Only these model_types (all when empty).
    pub only: Vec<String>,
    /// Compare category, architecture and task with the registries; write nothing.
    pub check: bool,
}

/// What the stages share: the specs folder, the options, the worker pool and defaults.
struct Import<'a> {
    specs_dir: &'a Path,
    options: &'a Options,
    pool: Pool,
    defaults: DefaultsFile,
    /// Progress redraws in place on a terminal.
    tty: bool,
}

/// The architectures transformers registers, and which of them this import takes.
struct Registered {
    version: String,
    all: BTreeSet<String>,
    exclusions: ExclusionsFile,
    exclusions_path: PathBuf,
    selected: Vec<String>,
}

/// The architectures a derive left without a category: the model_type and why.
type Undecided = Vec<(String, String)>;

/// What writing found: counts, and the files a person changed while the import ran.
#[derive(Default)]
struct Written {
    written: usize,
    unchanged: usize,
    known: usize,
    changed_meanwhile: Vec<PathBuf>,
}

/// The stages, in order: list the registries, derive, compose, trial export,
/// trace TorchScript where ONNX failed, trace the caches, write.
pub fn run(
    specs_dir: &Path,
    options: &Options,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let started = Instant::now();
    let defaults: DefaultsFile = serde_yaml::from_str(
        &std::fs::read_to_string(specs_dir.join("defaults.yaml"))
            .map_err(|e| format!("error: defaults.yaml: {e}"))?,
    )
    .map_err(|e| format!("error: defaults.yaml: {e}"))?;
    let import = Import {
        specs_dir,
        options,
        pool: Pool {
            python: options.python.clone(),
            workers: options.workers,
            timeout: Duration::from_secs(300),
            log_dir: options.fixtures.join(".logs"),
        },
        defaults,
        tty: Progress::stderr_is_terminal(),
    };
    let registered = import.registered(err)?;
    let existing = existing_specs(&specs_dir.join("models"))?;
    if options.check {
        return check(
            &import.pool,
            &registered.selected,
            &existing,
            &import.defaults,
            out,
            import.tty,
        );
    }
    // Each existing spec is read once: its curated fields start the derive, and its
    // curated part goes into the new file.
    let (derived, texts) = import.derive(&registered.selected, &existing, err)?;
    let (mut drafts, undecided) =
        import.compose(derived, &existing, &texts, &registered.version)?;
    let failures = import.trial_export(&drafts, err)?;
    let traced = import.trace_torchscript(&drafts, &failures, err)?;
    let caches_unread = import.trace_caches(&mut drafts, err)?;
    let written = import.write(drafts, &texts, &failures, &traced, out)?;
    let _ = writeln!(
        out,
        "gen derive (transformers {}): {} architectures, {} excluded ({}), {} specs written, {} unchanged, {} with a known issue, {caches_unread} generating with a cache it could not read, {} undecided ({:.0} s)",
        registered.version,
        registered.all.len(),
        registered.exclusions.exclusions.len(),
        registered.exclusions_path.display(),
        written.written,
        written.unchanged,
        written.known,
        undecided.len(),
        started.elapsed().as_secs_f64()
    );
    for (model_type, why) in &undecided {
        let _ = writeln!(
            err,
            "error: the registries cannot decide the category of `{model_type}`: {why}\n  help: write a spec with `category:` (and `architecture:`, `modality:`, `task:`) or exclude it in {} with the reason",
            registered.exclusions_path.display()
        );
    }
    for path in &written.changed_meanwhile {
        let _ = writeln!(
            err,
            "error: {} changed while gen derive ran; it is left as it is, with its change\n  help: run `gen derive --model {}` again",
            path.display(),
            path.file_stem().and_then(|s| s.to_str()).unwrap_or("?")
        );
    }
    Ok(
        if undecided.is_empty() && written.changed_meanwhile.is_empty() {
            0
        } else {
            1
        },
    )
}

impl Import<'_> {
    /// transformers' base-model registry, less the checked-in exclusions (each
    /// must say why), narrowed to `--model`.
    fn registered(&self, err: &mut dyn Write) -> Result<Registered, String> {
        let listed = self.pool.run(
            vec![("registries".into(), serde_json::json!({"kind": "list"}))],
            &mut Progress::new("listed", 1, &mut std::io::sink(), false),
        )?;
        let listed = listed
            .into_iter()
            .next()
            .expect("one job")
            .1
            .map_err(|e| format!("error: cannot read transformers' registries: {e}"))?;
        let version = listed["transformers"].as_str().unwrap_or("?").to_string();
        let all: BTreeSet<String> = listed["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["model_type"].as_str().map(str::to_string))
            .collect();
        let exclusions_path = self.specs_dir.join(EXCLUSIONS);
        let exclusions: ExclusionsFile = serde_yaml::from_str(
            &std::fs::read_to_string(&exclusions_path)
                .map_err(|e| format!("error: {}: {e}", exclusions_path.display()))?,
        )
        .map_err(|e| format!("error: {}: {e}", exclusions_path.display()))?;
        for (model_type, reason) in &exclusions.exclusions {
            if reason.trim().is_empty() {
                return Err(format!(
                    "error: {}: the exclusion of `{model_type}` has no reason\n  help: say why it is left out",
                    exclusions_path.display()
                ));
            }
            if !all.contains(model_type) {
                let _ = writeln!(
                    err,
                    "warning: {} excludes `{model_type}`, which transformers {version} does not register",
                    exclusions_path.display()
                );
            }
        }
        let only = &self.options.only;
        if let Some(wanted) = only.iter().find(|w| !all.contains(*w)) {
            return Err(format!(
                "error: transformers {version} has no model_type `{wanted}` in its base-model registry"
            ));
        }
        let selected = all
            .iter()
            .filter(|m| !exclusions.exclusions.contains_key(*m))
            .filter(|m| only.is_empty() || only.contains(m))
            .cloned()
            .collect();
        Ok(Registered {
            version,
            all,
            exclusions,
            exclusions_path,
            selected,
        })
    }

    /// Stage 1: the worker derives every selected architecture, starting from
    /// the curated fields of its existing spec. Returns the answers and the
    /// existing specs' text as read.
    #[allow(clippy::type_complexity)]
    fn derive(
        &self,
        selected: &[String],
        existing: &BTreeMap<String, PathBuf>,
        err: &mut dyn Write,
    ) -> Result<
        (
            Vec<(String, Result<Value, JobError>)>,
            BTreeMap<String, String>,
        ),
        String,
    > {
        let mut jobs = Vec::new();
        let mut texts = BTreeMap::new();
        for m in selected {
            let mut job = serde_json::json!({"kind": "derive", "model_type": m});
            if let Some(path) = existing.get(m) {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                for (key, value) in curated_derive_fields(&text, path)? {
                    job[key] = value;
                }
                texts.insert(m.clone(), text);
            }
            jobs.push((m.clone(), job));
        }
        let mut progress = Progress::new("derived", selected.len(), err, self.tty);
        Ok((self.pool.run(jobs, &mut progress)?, texts))
    }

    /// Stage 2: each file composed in memory, its curated part and the new
    /// imported block, with the derive's failure (evidence, not spec). An
    /// architecture without a category is left undecided.
    fn compose(
        &self,
        derived: Vec<(String, Result<Value, JobError>)>,
        existing: &BTreeMap<String, PathBuf>,
        texts: &BTreeMap<String, String>,
        version: &str,
    ) -> Result<(Vec<Draft>, Undecided), String> {
        let mut drafts: Vec<Draft> = Vec::new();
        let mut undecided = Vec::new();
        for (model_type, outcome) in derived {
            // The pipeline's failure is evidence (model-specs/evidence/), not part of the spec:
            // the job's own (our pool's limit, a dead worker), or the one the worker reports
            // with the stage it stopped at.
            let (mut value, mut failure) = match outcome {
                Ok(value) => (value, None),
                Err(e) => {
                    let failure = PipelineFailure {
                        error: format!("deriving: {e}"),
                        ..e.failure_at(Stage::Reference)
                    };
                    (
                        serde_json::json!({"registries": [], "export_class": ""}),
                        Some(failure),
                    )
                }
            };
            if let Some(error) = value.get("known_issue").and_then(Value::as_str) {
                let stage = value
                    .get("stage")
                    .and_then(Value::as_str)
                    .map(str::parse::<Stage>)
                    .transpose()
                    .map_err(|e| format!("error: the worker's answer for {model_type}: {e}"))?;
                let missing_libraries = match value.get("missing_libraries") {
                    None => Vec::new(),
                    Some(names) => serde_json::from_value(names.clone()).map_err(|e| {
                        format!(
                            "error: the worker's answer for {model_type}: missing_libraries: {e}"
                        )
                    })?,
                };
                failure = Some(PipelineFailure {
                    stage: stage.unwrap_or(Stage::Reference),
                    timed_out: false,
                    harness_limit: false,
                    missing_libraries,
                    error: error.to_string(),
                });
            }
            // A successful derive always has inputs: without them, deriving failed.
            let derive_failed = failure.is_some() && value.get("inputs").is_none();
            if let Some(object) = value.as_object_mut() {
                object.remove("known_issue");
                object.remove("stage");
                object.remove("missing_libraries");
            }
            let mut imported = to_imported(&value, version)?;
            // The attempt that made the last fixture: the trial export starts from it.
            (imported.export_attempt, imported.export_shape_only) = texts
                .get(&model_type)
                .and_then(|t| previous_attempt(t))
                .unwrap_or_default();
            let path = existing.get(&model_type).cloned();
            let curated = match (&path, texts.get(&model_type)) {
                (Some(_), Some(text)) => curated_part(text),
                _ => format!(
                    "# {model_type}: imported by `gen derive`. Curated fields go here, above the line.\nmodel_type: {model_type}\n"
                ),
            };
            let file: SpecFile = parse_draft(&curated, &imported, &model_type)?;
            // Deriving failed, but a person wrote every field it derives: the
            // fixture pipeline judges the curated spec instead (its own error, if
            // any, becomes the known issue below).
            let curated_io = file.inputs.is_some()
                && file.outputs.is_some()
                && file.shapes.is_some()
                && !file.tiny_config.is_empty();
            if curated_io && derive_failed {
                failure = None;
            }
            let category = file.category.clone().or_else(|| imported.category.clone());
            let Some(category) = category else {
                undecided.push((
                    model_type.clone(),
                    imported.undecided.clone().unwrap_or_default(),
                ));
                continue;
            };
            omit_defaults(&mut imported, &file, &self.defaults);
            let target = self
                .specs_dir
                .join("models")
                .join(&category)
                .join(format!("{model_type}.yaml"));
            drafts.push(Draft {
                model_type,
                curated,
                imported,
                failure,
                old_path: path,
                path: target,
            });
        }
        Ok((drafts, undecided))
    }

    /// Stage 3: each architecture through the fixture pipeline once (export,
    /// then onnxruntime against PyTorch); cached fixtures are not rebuilt.
    /// Returns the exports that failed.
    fn trial_export(
        &self,
        drafts: &[Draft],
        err: &mut dyn Write,
    ) -> Result<BTreeMap<String, JobError>, String> {
        let fixtures = &self.options.fixtures;
        let mut jobs = Vec::new();
        for draft in drafts {
            let Some(model) = draft.loaded(&self.defaults)? else {
                continue;
            };
            if model.spec.export.known_issue.is_some() {
                continue;
            }
            let key = model.fixture_key();
            let out_dir = fixtures.join(&draft.model_type);
            if crate::fixtures::cached(&out_dir, &key, crate::fixtures::FixtureKind::Whole) {
                continue;
            }
            jobs.push((
                draft.model_type.clone(),
                crate::fixtures::export_job(
                    &model,
                    &out_dir,
                    &key,
                    &crate::fixtures::Source::TinyRandom,
                )?,
            ));
        }
        let mut failures = BTreeMap::new();
        if jobs.is_empty() {
            return Ok(failures);
        }
        let _lock = crate::fixtures::StoreLock::acquire(fixtures, err)?;
        let mut progress = Progress::new("exported", jobs.len(), err, self.tty);
        for (model_type, outcome) in self.pool.run(jobs, &mut progress)? {
            let error_path = hwmatrix_cell::paths::export_error_file(fixtures, &model_type);
            match outcome {
                Ok(_) => {
                    let _ = std::fs::remove_file(&error_path);
                }
                Err(e) => {
                    let _ = std::fs::write(&error_path, format!("{e}\n"));
                    failures.insert(model_type, e);
                }
            }
        }
        Ok(failures)
    }

    /// Stage 3b: where the ONNX export failed, the TorchScript trace libtorch
    /// runs, tried all the same (torchscript.py): its fixture, or its own failure.
    fn trace_torchscript(
        &self,
        drafts: &[Draft],
        failures: &BTreeMap<String, JobError>,
        err: &mut dyn Write,
    ) -> Result<BTreeMap<String, Result<(), JobError>>, String> {
        let mut jobs = Vec::new();
        for draft in drafts
            .iter()
            .filter(|d| failures.contains_key(&d.model_type))
        {
            let Some(model) = draft.loaded(&self.defaults)? else {
                continue;
            };
            let onnx_error = format!("exporting: {}", failures[&draft.model_type]);
            jobs.push((
                draft.model_type.clone(),
                crate::fixtures::torchscript_job(
                    &model,
                    &self.options.fixtures.join(&draft.model_type),
                    &onnx_error,
                )?,
            ));
        }
        let mut traced = BTreeMap::new();
        if jobs.is_empty() {
            return Ok(traced);
        }
        let _lock = crate::fixtures::StoreLock::acquire(&self.options.fixtures, err)?;
        let mut progress = Progress::new(
            "traced (TorchScript without ONNX)",
            jobs.len(),
            err,
            self.tty,
        );
        for (model_type, outcome) in self.pool.run(jobs, &mut progress)? {
            traced.insert(model_type, outcome.map(|_| ()));
        }
        Ok(traced)
    }

    /// Stage 4: the cache of each generating model, traced as its generation
    /// fixture traces it (a float32 export's known issue does not stop it:
    /// generation has its own exporter). Returns how many stayed unread.
    fn trace_caches(&self, drafts: &mut [Draft], err: &mut dyn Write) -> Result<usize, String> {
        let mut jobs = Vec::new();
        for draft in drafts.iter() {
            let Some(model) = draft.loaded(&self.defaults)? else {
                continue;
            };
            if model.generates() {
                let out_dir = hwmatrix_cell::paths::generation_fixtures(&self.options.fixtures)
                    .join(&draft.model_type);
                jobs.push((
                    draft.model_type.clone(),
                    crate::fixtures::generation_job(&model, "cache", &out_dir, "")?,
                ));
            }
        }
        let mut unread = 0;
        if jobs.is_empty() {
            return Ok(unread);
        }
        let mut progress = Progress::new("caches read", jobs.len(), err, self.tty);
        for (model_type, outcome) in self.pool.run(jobs, &mut progress)? {
            let draft = drafts
                .iter_mut()
                .find(|d| d.model_type == model_type)
                .expect("a job per draft");
            // Unread (a cache this exporter cannot flatten, a model generate() cannot run): the
            // generation exporter fails the same way, and its error becomes `generation_export`.
            draft.imported.cache = outcome.ok().and_then(|v| serde_json::from_value(v).ok());
            unread += usize::from(draft.imported.cache.is_none());
        }
        Ok(unread)
    }

    /// Stage 5: what changed is written, the pipeline's outcome into the
    /// evidence store. A file that changed on disk since stage 1 read it (a
    /// person's edit, another gen derive) is left as it is: writing the draft
    /// would lose that change.
    fn write(
        &self,
        drafts: Vec<Draft>,
        texts: &BTreeMap<String, String>,
        failures: &BTreeMap<String, JobError>,
        traced: &BTreeMap<String, Result<(), JobError>>,
        out: &mut dyn Write,
    ) -> Result<Written, String> {
        let mut written = Written::default();
        for mut draft in drafts {
            if let Some(old) = &draft.old_path {
                let now = std::fs::read_to_string(old).ok();
                if now.as_ref() != texts.get(&draft.model_type) {
                    written.changed_meanwhile.push(old.clone());
                    continue;
                }
            }
            if let Some(error) = failures.get(&draft.model_type) {
                draft.failure = Some(PipelineFailure {
                    error: format!("exporting: {error}"),
                    ..error.failure_at(Stage::Export)
                });
            }
            (
                draft.imported.export_attempt,
                draft.imported.export_shape_only,
            ) = match &draft.failure {
                Some(_) => (None, false),
                None => self.attempt_of_fixture(&draft)?,
            };
            if draft.failure.is_some() {
                written.known += 1;
            }
            self.record_pipeline(&draft, traced.get(&draft.model_type))?;
            if write_spec(draft, out)? {
                written.written += 1;
            } else {
                written.unchanged += 1;
            }
        }
        Ok(written)
    }

    /// The recipe's attempt that made the draft's fixture, where attempts before it failed
    /// or it is the one the draft already starts from (meta.json's `exporter`); None where the
    /// recipe's first attempt made it, or no fixture of this draft's key exists (a known issue
    /// a person wrote skips the export). With it, whether its graph runs at the export shape
    /// only (`exporter.export_shape_only`).
    fn attempt_of_fixture(&self, draft: &Draft) -> Result<(Option<String>, bool), String> {
        let Some(model) = draft.loaded(&self.defaults)? else {
            return Ok((None, false));
        };
        let meta = self
            .options
            .fixtures
            .join(&draft.model_type)
            .join("meta.json");
        let Some(meta) = std::fs::read_to_string(meta)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            return Ok((None, false));
        };
        let exporter = &meta["exporter"];
        let Some(made_by) = exporter["name"].as_str() else {
            return Ok((None, false));
        };
        let others_failed = exporter["fallback_errors"]
            .as_object()
            .is_some_and(|errors| !errors.is_empty());
        let shape_only = exporter["export_shape_only"].is_string();
        // A fixture made by the attempt the draft starts from has no failed attempts before it.
        let started_there = draft.imported.export_attempt.as_deref() == Some(made_by);
        let current = meta["cache_key"].as_str() == Some(model.fixture_key().as_str());
        if !current || !(others_failed || started_there || shape_only) {
            return Ok((None, false));
        }
        Ok((Some(made_by.to_string()), shape_only))
    }

    /// The pipeline's outcome into the evidence store: a failure with this
    /// run's provenance (kept as it was when it says the same), a pass clears
    /// it; the TorchScript trace's own outcome where it was tried.
    fn record_pipeline(
        &self,
        draft: &Draft,
        traced: Option<&Result<(), JobError>>,
    ) -> Result<(), String> {
        let Some(model) = draft.loaded(&self.defaults)? else {
            return Ok(());
        };
        let key = model.fixture_key();
        let mut file = spec::evidence::read(self.specs_dir, &draft.model_type)?;
        let measured = draft
            .failure
            .as_ref()
            .map(|failure| spec::evidence::pipeline_failure(CheckId::Export, failure, &key));
        let trace = match traced {
            Some(Err(e)) => Some(spec::evidence::pipeline_failure(
                CheckId::TorchscriptExport,
                &e.failure_at(Stage::Export),
                &key,
            )),
            _ => None,
        };
        let check = |check: CheckId| spec::evidence::EntryKey {
            platform: None,
            engine: None,
            check,
            cpu_class: None,
        };
        spec::evidence::merge(
            &mut file.entries,
            vec![
                (check(CheckId::Export), measured),
                (check(CheckId::TorchscriptExport), trace),
            ],
            &key,
        );
        spec::evidence::write(self.specs_dir, file)?;
        Ok(())
    }
}

/// The `export_attempt` an existing spec's imported block holds, and its
/// `export_shape_only`.
fn previous_attempt(text: &str) -> Option<(Option<String>, bool)> {
    let imported = serde_yaml::from_str::<SpecFile>(text).ok()?.imported?;
    Some((imported.export_attempt, imported.export_shape_only))
}

/// Writes a draft's spec file where its category puts it (moving it when its
/// category changed); false when the file already says the same.
fn write_spec(draft: Draft, out: &mut dyn Write) -> Result<bool, String> {
    let text = format!(
        "{}{MARKER}\n{}",
        draft.curated,
        imported_yaml(&draft.imported)?
    );
    let same_place = draft.old_path.as_deref() == Some(draft.path.as_path());
    if same_place && std::fs::read_to_string(&draft.path).ok().as_deref() == Some(text.as_str()) {
        return Ok(false);
    }
    if let Some(parent) = draft.path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    hwmatrix_specs::files::write_atomically(&draft.path, text.as_bytes())?;
    if let Some(old) = draft.old_path.filter(|old| old != &draft.path) {
        std::fs::remove_file(&old).map_err(|e| format!("{}: {e}", old.display()))?;
        let _ = writeln!(
            out,
            "moved {} to {} (its category is now {})",
            old.display(),
            draft.path.display(),
            draft
                .path
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .unwrap_or("?")
        );
    }
    Ok(true)
}

struct Draft {
    model_type: String,
    curated: String,
    imported: Imported,
    /// The fixture pipeline's failure (deriving or exporting): its stage and the worker's words.
    failure: Option<PipelineFailure>,
    old_path: Option<PathBuf>,
    path: PathBuf,
}

impl Draft {
    /// The draft resolved as gen will load it once written; None where it does not resolve
    /// (gen's own load then says why).
    fn loaded(&self, defaults: &DefaultsFile) -> Result<Option<LoadedModel>, String> {
        let file = parse_draft(&self.curated, &self.imported, &self.model_type)?;
        // The draft's own pipeline failure, as its evidence entry would hold it (the key is not compared here).
        let evidence = self
            .failure
            .iter()
            .map(|failure| spec::evidence::pipeline_failure(CheckId::Export, failure, ""))
            .collect();
        let Ok((spec, sources)) = spec::resolve::resolve(file, defaults, evidence) else {
            return Ok(None);
        };
        Ok(Some(LoadedModel {
            module: String::new(),
            path: self.path.clone(),
            display_path: String::new(),
            sources,
            imported: Some(self.imported.clone()),
            spec,
        }))
    }
}

/// model_type → its spec file, for every file under models/.
pub(crate) fn existing_specs(models: &Path) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut found = BTreeMap::new();
    let Ok(categories) = std::fs::read_dir(models) else {
        return Ok(found);
    };
    for category in categories.flatten() {
        let Ok(files) = std::fs::read_dir(category.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "yaml") {
                let stem = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default()
                    .to_string();
                found.insert(stem, path);
            }
        }
    }
    Ok(found)
}

/// Everything above the marker (the whole file when it has none), ending in a newline.
pub fn curated_part(text: &str) -> String {
    let curated = match text.find(MARKER).or_else(|| text.find(OLD_MARKER)) {
        Some(at) => &text[..at],
        None => text,
    };
    let mut curated = curated.trim_end().to_string();
    curated.push('\n');
    curated
}

/// What a person wrote that the derive must start from: `tiny_config_overrides` (over the
/// generic shrink), and `inputs` with `shapes` (the input layout to run, when no generic one
/// fits: LayoutLM's boxes, an AST spectrogram), `components`, and `export.drawn_weights`. The derive then measures
/// the outputs, and each component's inputs and outputs.
fn curated_derive_fields(text: &str, path: &Path) -> Result<Vec<(&'static str, Value)>, String> {
    let curated: serde_yaml::Value = serde_yaml::from_str(&curated_part(text)).map_err(|e| {
        format!(
            "error: {}: the curated part does not parse: {e}",
            path.display()
        )
    })?;
    let mut fields = Vec::new();
    let layout = curated.get("inputs").is_some() && curated.get("shapes").is_some();
    // `components` too: the derive measures each one's tensors on the whole model's run.
    // `export` for its `drawn_weights`: the derive runs the tiny model with them drawn.
    for (key, wanted) in [
        ("tiny_config_overrides", true),
        ("inputs", layout),
        ("shapes", layout),
        ("components", true),
        ("export", true),
    ] {
        if let (true, Some(v)) = (wanted, curated.get(key)) {
            fields.push((
                key,
                serde_json::to_value(v)
                    .map_err(|e| format!("error: {}: {key}: {e}", path.display()))?,
            ));
        }
    }
    Ok(fields)
}

fn parse_draft(curated: &str, imported: &Imported, model_type: &str) -> Result<SpecFile, String> {
    let text = format!("{curated}{}", imported_yaml(imported)?);
    serde_yaml::from_str(&text).map_err(|e| {
        format!("error: the spec of {model_type} does not parse with its imported block: {e}")
    })
}

pub(crate) fn imported_yaml(imported: &Imported) -> Result<String, String> {
    #[derive(serde::Serialize)]
    struct Block<'a> {
        imported: &'a Imported,
    }
    serde_yaml::to_string(&Block { imported }).map_err(|e| e.to_string())
}

fn to_imported(value: &Value, version: &str) -> Result<Imported, String> {
    let mut value = value.clone();
    // A diffusers architecture says which library it came from; the rest are transformers'.
    if value.get("from").and_then(Value::as_str).is_none() {
        value["from"] = format!("transformers {version}").into();
    }
    if value.get("tiny_config").is_none() {
        value["tiny_config"] = serde_json::json!({});
    }
    let yaml: serde_yaml::Value = serde_yaml::to_value(&value).map_err(|e| e.to_string())?;
    serde_yaml::from_value(yaml).map_err(|e| {
        format!("error: the importer's answer does not fit the imported block: {e}: {value}")
    })
}

/// A spec states only what differs: imported inputs, outputs and shapes equal
/// to defaults.yaml's are left out of the block.
fn omit_defaults(imported: &mut Imported, file: &SpecFile, defaults: &DefaultsFile) {
    let architecture = file
        .architecture
        .as_ref()
        .or(imported.architecture.as_ref());
    if let Some(io) = architecture.and_then(|a| defaults.io.get(a)) {
        if imported.inputs.as_ref() == Some(&io.inputs) {
            imported.inputs = None;
        }
        if imported.outputs.as_ref() == Some(&io.outputs) {
            imported.outputs = None;
        }
    }
    let modality = file.modality.or(imported.modality);
    if let Some(shapes) = modality.and_then(|m| defaults.shapes.get(&m))
        && imported.shapes.as_ref() == Some(shapes)
    {
        imported.shapes = None;
    }
}

/// `gen derive --check`: every spec's effective category, architecture type
/// and task against what the registries decide now. A curated field may
/// differ (a person decided); an imported one may not (the import is stale).
fn check(
    pool: &Pool,
    selected: &[String],
    existing: &BTreeMap<String, PathBuf>,
    defaults: &DefaultsFile,
    out: &mut dyn Write,
    tty: bool,
) -> Result<i32, String> {
    let jobs = selected
        .iter()
        .filter(|m| existing.contains_key(*m))
        .map(|m| {
            (
                m.clone(),
                serde_json::json!({"kind": "classify", "model_type": m}),
            )
        })
        .collect();
    let mut sink = std::io::sink();
    let mut progress = Progress::new("classified", selected.len(), &mut sink, tty);
    let mut problems = Vec::new();
    let mut curated_differs = 0;
    let mut checked = 0;
    let without_spec: Vec<&String> = selected
        .iter()
        .filter(|m| !existing.contains_key(*m))
        .collect();
    for (model_type, outcome) in pool.run(jobs, &mut progress)? {
        let derived = outcome.map_err(|e| format!("error: classifying {model_type}: {e}"))?;
        let Some(path) = existing.get(&model_type) else {
            continue;
        };
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file: SpecFile =
            serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let curated = (
            file.category.clone(),
            file.architecture.clone(),
            file.task.clone(),
        );
        // <specs>/models/<category>/<model_type>.yaml: the model's evidence decides whether it stopped before export.
        let root = path.ancestors().nth(3).unwrap_or(Path::new("."));
        let evidence = spec::evidence::read(root, &model_type)?.entries;
        let Ok((spec, sources)) = spec::resolve::resolve(file, defaults, evidence) else {
            problems.push(format!("{}: does not resolve", path.display()));
            continue;
        };
        checked += 1;
        for (field, have, curated, want) in [
            (
                "category",
                &spec.category,
                &curated.0,
                derived.get("category"),
            ),
            (
                "architecture",
                &spec.architecture,
                &curated.1,
                derived.get("architecture"),
            ),
            ("task", &spec.task, &curated.2, derived.get("task")),
        ] {
            let want = want.and_then(Value::as_str);
            if want == Some(have.as_str()) || want.is_none() {
                continue;
            }
            if curated.is_some() && sources.get(field) == Some(&spec::resolve::Source::Curated) {
                curated_differs += 1;
                let _ = writeln!(
                    out,
                    "note: {} sets {field} `{have}` by hand; the registries say `{}`",
                    path.display(),
                    want.unwrap_or("?")
                );
            } else {
                problems.push(format!("{}: imported {field} `{have}`, but the registries now say `{}` (run `gen derive --model {model_type}`)", path.display(), want.unwrap_or("?")));
            }
        }
    }
    for p in &problems {
        let _ = writeln!(out, "error: {p}");
    }
    let _ = writeln!(
        out,
        "gen derive --check: {checked} specs checked against the registries, {} problems, {curated_differs} curated fields that differ on purpose; {} registered architectures have no spec yet (`gen derive` writes them)",
        problems.len(),
        without_spec.len()
    );
    Ok(if problems.is_empty() { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_import_starts_from_the_recorded_attempt() {
        let spec = |tail: &str| {
            format!(
                "model_type: x\n{MARKER}\nimported:\n  from: transformers 5.23.0\n  registries: []\n  export_class: XModel\n{tail}"
            )
        };
        assert_eq!(
            previous_attempt(&spec(
                "  export_attempt: legacy\n  export_shape_only: true\n"
            )),
            Some((Some("legacy".to_string()), true))
        );
        assert_eq!(
            previous_attempt(&spec("  export_attempt: dynamo\n")),
            Some((Some("dynamo".to_string()), false))
        );
        assert_eq!(previous_attempt(&spec("")), Some((None, false)));
    }
}
