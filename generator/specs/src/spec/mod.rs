//! Loading and validating model-specs/. All files are read and checked before
//! anything is generated; every problem found is reported, each with its
//! file, line, column and fix.

pub mod cpu_classes;
mod error;
pub mod evidence;
pub mod passed;
pub mod resolve;
mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hwmatrix_cell::{Platform, Rating};
use serde::de::DeserializeOwned;

use crate::module_name::{check_model_type, module_name};

pub use error::{SpecError, SpecErrors, locate_key, locate_value};
pub use types::*;

/// Everything in a specs folder, validated.
#[derive(Debug)]
pub struct Specs {
    pub root: PathBuf,
    pub hardware: HardwareFile,
    pub architectures: ArchitecturesFile,
    pub categories: CategoriesFile,
    pub defaults: DefaultsFile,
    pub quantization: QuantizationFile,
    /// Sorted by category, then model_type.
    pub models: Vec<LoadedModel>,
}

#[derive(Debug)]
pub struct LoadedModel {
    pub spec: ModelSpec,
    /// The Rust module and folder name of `spec.model_type` in the generated
    /// crate ([`crate::module_name::module_name`]): `xlm-roberta` → `xlm_roberta`.
    pub module: String,
    /// The file as read (for errors).
    pub path: PathBuf,
    /// Where each resolved top-level field came from: curated, imported or default.
    pub sources: BTreeMap<&'static str, resolve::Source>,
    /// The `imported:` block as read (gen derive rewrites it).
    pub imported: Option<Imported>,
    /// `<specs folder name>/models/<category>/<model_type>.yaml`: machine-independent, for banners.
    pub display_path: String,
}

/// The part of a spec the exporter reads: what the fixture is built from.
/// Tolerances, platform overrides and expectations are left out, so changing
/// them never rebuilds (or invalidates) a fixture.
#[derive(serde::Serialize)]
struct ExporterView<'a> {
    model_type: &'a str,
    export: ExportView<'a>,
    tiny_config: &'a BTreeMap<String, serde_yaml::Value>,
    inputs: &'a [TensorSpec],
    outputs: &'a [TensorSpec],
    shapes: &'a [BTreeMap<String, u32>],
    /// Absent for a model checked whole, so its digest (and fixture key) is as before components.
    #[serde(skip_serializing_if = "<[Component]>::is_empty")]
    components: &'a [Component],
}

/// The part of a spec the generation exporter reads: the exporter's view and the
/// declared cache, which only generation fixtures are built from (so declaring it
/// never rebuilds a float32 fixture).
#[derive(serde::Serialize)]
struct GenerationView<'a> {
    #[serde(flatten)]
    exporter: ExporterView<'a>,
    cache: &'a [CacheGroup],
}

/// The exporter's part of `export`: a known issue is not part of a fixture.
#[derive(serde::Serialize)]
struct ExportView<'a> {
    class: &'a str,
    exporter: ExporterChoice,
    /// Absent unless the recipe's first attempt failed, so no other model's digest moves.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<&'a str>,
    /// Absent unless the attempt runs at the export shape only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    shape_only: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    fixed_inputs: &'a [String],
    /// Absent unless the spec draws zero-initialized weights: no other model's digest moves.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    drawn_weights: &'a [String],
}

impl LoadedModel {
    /// The path of the model's test module in the generated crate, as libtest prints
    /// its tests' names: `category::module::` (a `cargo test` filter or `--skip`).
    pub fn test_path(&self) -> String {
        format!("{}::{}::", self.spec.category, self.module)
    }

    /// The spec as the exporter receives it (JSON): only what builds the fixture.
    pub fn exporter_json(&self) -> Vec<u8> {
        serde_json::to_vec(&self.exporter_view()).expect("a validated spec serializes")
    }

    /// The spec as the generation exporter receives it (JSON): the exporter's and the cache.
    pub fn generation_json(&self) -> Vec<u8> {
        let view = GenerationView {
            exporter: self.exporter_view(),
            cache: &self.spec.cache,
        };
        serde_json::to_vec(&view).expect("a validated spec serializes")
    }

    fn exporter_view(&self) -> ExporterView<'_> {
        let spec = &self.spec;
        ExporterView {
            model_type: &spec.model_type,
            export: ExportView {
                class: &spec.export.class,
                exporter: spec.export.exporter,
                attempt: spec.export.attempt.as_deref(),
                shape_only: spec.export.shape_only,
                fixed_inputs: &spec.export.fixed_inputs,
                drawn_weights: &spec.export.drawn_weights,
            },
            tiny_config: &spec.tiny_config,
            inputs: &spec.inputs,
            outputs: &spec.outputs,
            shapes: &spec.shapes,
            components: &spec.components,
        }
    }

    /// The key its fixture is cached and checked under.
    pub fn fixture_key(&self) -> String {
        crate::fixture_key::fixture_key(&self.digest(), !self.spec.components.is_empty())
    }

    /// Whether the model generates ([`ModelSpec::generates`]).
    pub fn generates(&self) -> bool {
        self.spec.generates()
    }

    /// The key of its generation fixture.
    pub fn generation_fixture_key(&self) -> String {
        crate::fixture_key::generation_fixture_key(&self.generation_digest())
    }

    /// The digest of the spec as the generation exporter receives it, which the
    /// generated `GENERATION` declaration carries.
    pub fn generation_digest(&self) -> String {
        crate::fixture_key::spec_digest(&self.generation_json())
    }

    /// Its digest, which generated code carries so the runtime can refuse a
    /// fixture built from another spec ([`hwmatrix_cell::fixture_key`]).
    pub fn digest(&self) -> String {
        crate::fixture_key::spec_digest(&self.exporter_json())
    }
}

impl Specs {
    pub fn model(&self, model_type: &str) -> Option<&LoadedModel> {
        self.models.iter().find(|m| m.spec.model_type == model_type)
    }
}

pub fn load(root: &Path) -> Result<Specs, SpecErrors> {
    let mut errors = Vec::new();
    if !root.is_dir() {
        return Err(SpecErrors(vec![SpecError::new(
            root,
            (1, 1),
            "the specs folder does not exist",
            "pass --specs with the folder that holds hardware.yaml, architectures.yaml, categories.yaml and models/",
        )]));
    }
    let hardware: Option<(HardwareFile, String)> =
        parse_file(&root.join("hardware.yaml"), &mut errors);
    let architectures: Option<(ArchitecturesFile, String)> =
        parse_file(&root.join("architectures.yaml"), &mut errors);
    let categories: Option<(CategoriesFile, String)> =
        parse_file(&root.join("categories.yaml"), &mut errors);
    let defaults: Option<(DefaultsFile, String)> =
        parse_file(&root.join("defaults.yaml"), &mut errors);
    let quantization: Option<(QuantizationFile, String)> =
        parse_file(&root.join("quantization.yaml"), &mut errors);
    if let Some((file, src)) = &quantization {
        check_quantization(file, src, &root.join("quantization.yaml"), &mut errors);
    }
    if let Some((file, src)) = &defaults {
        check_precision_tolerances(file, src, &root.join("defaults.yaml"), &mut errors);
    }

    if let Some((hw, src)) = &hardware {
        let defaults = defaults.as_ref().map(|(d, _)| d);
        check_hardware(hw, src, &root.join("hardware.yaml"), defaults, &mut errors);
    }
    if let Some((archs, src)) = &architectures {
        check_architectures(archs, src, &root.join("architectures.yaml"), &mut errors);
    }

    let mut loader = ModelLoader {
        root,
        defaults: defaults.as_ref().map(|(d, _)| d),
        categories: categories.as_ref().map(|(c, _)| c),
        architectures: architectures.as_ref().map(|(a, _)| a),
        evidence: evidence::load_all(root, &mut errors),
        seen: BTreeMap::new(),
        modules: BTreeMap::new(),
    };
    let mut models = Vec::new();
    for path in model_files(&root.join("models"), &mut errors) {
        if let Some(model) = loader.load_model(path, &mut errors) {
            models.push(model);
        }
    }
    report_evidence_without_spec(&loader.evidence, &mut errors);

    match (hardware, architectures, categories, defaults, quantization) {
        (
            Some((hardware, _)),
            Some((architectures, _)),
            Some((categories, _)),
            Some((defaults, _)),
            Some((quantization, _)),
        ) if errors.is_empty() => {
            models.sort_by(|a, b| {
                (&a.spec.category, &a.spec.model_type).cmp(&(&b.spec.category, &b.spec.model_type))
            });
            Ok(Specs {
                root: root.to_path_buf(),
                hardware,
                architectures,
                categories,
                defaults,
                quantization,
                models,
            })
        }
        _ => Err(SpecErrors(errors)),
    }
}

/// defaults.yaml's precision bounds: one that can never pass or never fail would make its checks meaningless.
fn check_precision_tolerances(
    file: &DefaultsFile,
    src: &str,
    path: &Path,
    errors: &mut Vec<SpecError>,
) {
    for (precision, bound) in &file.precision_tolerances {
        if let Some(problem) = agreement_bound_problem(bound) {
            errors.push(SpecError::new(
                path,
                locate_key(src, "precision_tolerances", 0).unwrap_or((1, 1)),
                format!("precision_tolerances.{}: {problem}", precision.name()),
                "min_cosine and min_top1 are fractions in (0, 1], max_rel_l2 is above 0: choose them from measurements",
            ));
        }
    }
}

/// hardware.yaml's rules, the first broken one per platform: every platform is described, by its
/// own feature, with bounds its checks can be judged by and an engine to run its cells.
fn check_hardware(
    hw: &HardwareFile,
    src: &str,
    path: &Path,
    defaults: Option<&DefaultsFile>,
    errors: &mut Vec<SpecError>,
) {
    for platform in Platform::ALL {
        match hw.platforms.get(&platform) {
            None => errors.push(SpecError::new(
                path,
                locate_key(src, "platforms", 0).unwrap_or((1, 1)),
                format!("platform `{platform}` is missing"),
                format!(
                    "hardware.yaml must describe all {} platforms: {}",
                    Platform::ALL.len(),
                    platform_names()
                ),
            )),
            Some(p) if p.feature != platform.name() => errors.push(SpecError::new(
                path,
                locate_value(src, "feature", &p.feature).unwrap_or((1, 1)),
                format!("platform `{platform}` has feature `{}`", p.feature),
                format!("the cargo feature of a platform is its name: `feature: {platform}`"),
            )),
            Some(p) if p.precision_checks.iter().chain(p.engines.iter().flat_map(|e| match e {
                EngineSpec::Openvino { precision_checks, .. } => precision_checks.as_slice(),
                EngineSpec::Onnxruntime { precision_checks: Some(own), .. } => own.as_slice(),
                _ => &[],
            })).any(|c| !defaults.is_none_or(|d| d.precision_tolerances.contains_key(c))) => {
                errors.push(SpecError::new(
                    path,
                    locate_key(src, "precision_checks", 4).unwrap_or((1, 1)),
                    format!("platform `{platform}` checks a precision that defaults.yaml gives no tolerance"),
                    "add it to defaults.yaml's `precision_tolerances` ({min_cosine, max_rel_l2, min_top1}, chosen from measurements)",
                ))
            }
            Some(p) if p.float32_computed_in.as_ref().is_some_and(|c| !(c.max_error_of_spread > 0.0 && c.max_error_of_spread < 1.0)) => {
                errors.push(SpecError::new(
                    path,
                    locate_key(src, "float32_computed_in", 4).unwrap_or((1, 1)),
                    format!("platform `{platform}`'s float32_computed_in has max_error_of_spread outside (0, 1)"),
                    "give a fraction of each output's spread above 0 and below 1 (at 1 a constant would pass), chosen from measurements",
                ))
            }
            Some(p) if p.float32_computed_in.as_ref().is_some_and(|c| c.reason.trim().is_empty()) => errors.push(SpecError::new(
                path,
                locate_key(src, "float32_computed_in", 4).unwrap_or((1, 1)),
                format!("platform `{platform}`'s float32_computed_in has no reason"),
                "add `reason:` saying what computes in that precision and how it was found",
            )),
            Some(p) if p.tolerance.as_ref().is_some_and(|t| t.reason.as_deref().is_none_or(|r| r.trim().is_empty())) => errors.push(SpecError::new(
                path,
                locate_key(src, "tolerance", 4).unwrap_or((1, 1)),
                format!("platform `{platform}`'s tolerance has no reason"),
                "add `reason:` inside `tolerance:` with the measurement it was chosen from",
            )),
            Some(p) if p.engines.is_empty() => errors.push(SpecError::new(
                path,
                locate_key(src, platform.name(), 2).unwrap_or((1, 1)),
                format!("platform `{platform}` lists no engine"),
                "list at least one of onnxruntime, libtorch, openvino, browser",
            )),
            // wgpu runs quantization.yaml's kernels on a model's weights, never the model: its
            // cell is planned from quantization.yaml, one per model, on that file's platform.
            Some(p) if p.engines.iter().any(|e| !e.kind().runs_whole_models()) => errors.push(SpecError::new(
                path,
                locate_key(src, "engines", 4).unwrap_or((1, 1)),
                format!("platform `{platform}` lists wgpu among its engines, which run whole models"),
                "remove it: wgpu runs the quantization checks' kernels, and model-specs/quantization.yaml's `platform` is where its cells are planned",
            )),
            Some(p) if let Some(stray) = p.same_kernels.iter().flatten().chain(&p.compared_with_cpu).find(|k| !p.engines.iter().any(|e| e.kind() == **k)) => errors.push(SpecError::new(
                path,
                locate_key(src, if p.same_kernels.iter().flatten().any(|k| k == stray) { "same_kernels" } else { "compared_with_cpu" }, 4).unwrap_or((1, 1)),
                format!("platform `{platform}` names engine `{}`, which it does not list", stray.name()),
                "name only engines of the platform's `engines`",
            )),
            Some(_) => {}
        }
    }
}

/// architectures.yaml's rule: every architecture says what to expect on each platform, so every cell has an expectation.
fn check_architectures(
    archs: &ArchitecturesFile,
    src: &str,
    path: &Path,
    errors: &mut Vec<SpecError>,
) {
    for (name, arch) in &archs.architectures {
        let missing: Vec<&str> = Platform::ALL
            .iter()
            .filter(|p| !arch.platforms.contains_key(p))
            .map(|p| p.name())
            .collect();
        if !missing.is_empty() {
            errors.push(SpecError::new(
                path,
                locate_key(src, name, 2).unwrap_or((1, 1)),
                format!(
                    "architecture `{name}` has no entry for {}",
                    missing.join(", ")
                ),
                format!(
                    "give every architecture an entry for each of the {} platforms: {}",
                    Platform::ALL.len(),
                    platform_names()
                ),
            ));
        }
    }
}

/// Evidence no model file claimed: it would be silently ignored, so it is an error.
fn report_evidence_without_spec(
    evidence: &BTreeMap<String, (PathBuf, evidence::EvidenceFile)>,
    errors: &mut Vec<SpecError>,
) {
    for (model_type, (path, _)) in evidence {
        errors.push(SpecError::new(
            path,
            (1, 1),
            format!("evidence for `{model_type}`, which has no spec"),
            "remove the file, or add the model's spec under models/",
        ));
    }
}

/// What loading the model files one by one shares: the shared files each is checked against,
/// the evidence not yet claimed, and the model_types and modules earlier files took.
struct ModelLoader<'a> {
    root: &'a Path,
    defaults: Option<&'a DefaultsFile>,
    categories: Option<&'a CategoriesFile>,
    architectures: Option<&'a ArchitecturesFile>,
    /// model_type → its evidence file, until its spec claims it.
    evidence: BTreeMap<String, (PathBuf, evidence::EvidenceFile)>,
    /// model_type → the file that defines it.
    seen: BTreeMap<String, PathBuf>,
    /// module name → the first model_type and file that took it
    modules: BTreeMap<String, (String, PathBuf)>,
}

impl ModelLoader<'_> {
    /// Parses, resolves and validates one model file; the model, unless that reported an error
    /// (every problem is reported, so a broken file does not stop the others' checks).
    fn load_model(&mut self, path: PathBuf, errors: &mut Vec<SpecError>) -> Option<LoadedModel> {
        let (file, source) = parse_file::<SpecFile>(&path, errors)?;
        let defaults = self.defaults?;
        let imported = file.imported.clone();
        let (entries, passed) = self
            .evidence
            .remove(&file.model_type)
            .map(|(_, file)| (file.entries, file.passed))
            .unwrap_or_default();
        let (spec, sources) = match resolve::resolve(file, defaults, entries) {
            Ok((mut spec, sources)) => {
                spec.passed = passed;
                (spec, sources)
            }
            Err(problems) => {
                for (field, message, help) in problems {
                    // A curated field is on its own line; a missing one is reported at model_type.
                    let at = locate_key(&source, field, 0)
                        .or_else(|| locate_key(&source, "model_type", 0))
                        .unwrap_or((1, 1));
                    errors.push(SpecError::new(&path, at, message, help));
                }
                return None;
            }
        };
        let before = errors.len();
        validate_model(
            &spec,
            &path,
            &source,
            self.categories,
            self.architectures,
            errors,
        );
        self.check_unique(&spec, &path, &source, errors);
        if errors.len() != before {
            return None;
        }
        let relative = path.strip_prefix(self.root).unwrap_or(&path);
        let folder = self
            .root
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("model-specs");
        let display_path = format!("{folder}/{}", relative.to_string_lossy().replace('\\', "/"));
        let module = module_name(&spec.model_type).expect("validated above");
        Some(LoadedModel {
            spec,
            module,
            path,
            sources,
            imported,
            display_path,
        })
    }

    /// Claims the spec's model_type and its Rust module for this file: two specs of one model,
    /// or two model_types one module, would generate clashing code.
    fn check_unique(
        &mut self,
        spec: &ModelSpec,
        path: &Path,
        source: &str,
        errors: &mut Vec<SpecError>,
    ) {
        if let Some(first) = self.seen.get(&spec.model_type) {
            errors.push(SpecError::new(
                path,
                locate_key(source, "model_type", 0).unwrap_or((1, 1)),
                format!(
                    "duplicate model_type `{}`: {} already defines it",
                    spec.model_type,
                    first.display()
                ),
                "each model_type has exactly one spec; remove or merge one of the two files",
            ));
        } else {
            self.seen
                .insert(spec.model_type.clone(), path.to_path_buf());
            // A model_type that is not allowed was reported by validate_model.
            if let Ok(module) = module_name(&spec.model_type) {
                if let Some((other_type, other_path)) = self.modules.get(&module) {
                    errors.push(SpecError::new(
                        path,
                        locate_key(source, "model_type", 0).unwrap_or((1, 1)),
                        format!(
                            "model_type `{}` and model_type `{other_type}` of {} both become the Rust module `{module}` (`-` and `.` are written `_`)",
                            spec.model_type,
                            other_path.display()
                        ),
                        format!(
                            "keep only the spec whose model_type is transformers' own (its config's `model_type`), and remove {} or {}",
                            path.display(),
                            other_path.display()
                        ),
                    ));
                } else {
                    self.modules
                        .insert(module, (spec.model_type.clone(), path.to_path_buf()));
                }
            }
        }
    }
}

/// quantization.yaml's rules: every rating once, bounds rising, widths the kernels have.
fn check_quantization(
    file: &QuantizationFile,
    src: &str,
    path: &Path,
    errors: &mut Vec<SpecError>,
) {
    let at = |key: &str| locate_key(src, key, 0).unwrap_or((1, 1));
    let all = [
        Rating::Excellent,
        Rating::VeryGood,
        Rating::Good,
        Rating::Limited,
        Rating::NotRecommended,
        Rating::NotSupported,
    ];
    let listed: Vec<Rating> = file.ratings.iter().map(|r| r.rating).collect();
    if listed != all {
        errors.push(SpecError::new(
            path,
            at("ratings"),
            format!("ratings lists {listed:?}"),
            "list each rating once, best first: excellent, very-good, good, limited, not-recommended, not-supported",
        ));
    }
    let rising = file
        .ratings
        .windows(2)
        .all(|w| w[0].max_mean_relative_error <= w[1].max_mean_relative_error);
    // NaN is neither ≥ 0 nor ≤ anything: it fails both tests.
    if !rising
        || file
            .ratings
            .iter()
            .any(|r| r.max_mean_relative_error.is_nan() || r.max_mean_relative_error < 0.0)
    {
        errors.push(SpecError::new(
            path,
            at("ratings"),
            "the ratings' bounds do not rise",
            "each max_mean_relative_error is ≥ 0 and ≥ the one before it (`.inf` for no bound)",
        ));
    }
    if file.group_size == 0 {
        errors.push(SpecError::new(
            path,
            at("group_size"),
            "group_size is 0",
            "a group holds at least one weight; 32 is the common 4-bit formats' size",
        ));
    }
    let m = file.mixed;
    if [m.attention, m.embedding, m.output, m.feed_forward]
        .iter()
        .any(|b| ![16, 8, 4, 2].contains(b))
    {
        errors.push(SpecError::new(
            path,
            at("mixed"),
            format!("mixed asks for widths {m:?}"),
            "the kernels have 16, 8, 4 and 2 bits",
        ));
    }
}

/// `models/**/*.yaml`, sorted so that errors and output are deterministic.
fn model_files(dir: &Path, errors: &mut Vec<SpecError>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                errors.push(SpecError::new(
                    &dir,
                    (1, 1),
                    format!("cannot read the folder: {e}"),
                    "create models/<category>/ with one YAML file per model",
                ));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn parse_file<T: DeserializeOwned>(
    path: &Path,
    errors: &mut Vec<SpecError>,
) -> Option<(T, String)> {
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            errors.push(SpecError::new(
                path,
                (1, 1),
                format!("cannot read the file: {e}"),
                "create it; model-specs/README.md describes each file",
            ));
            return None;
        }
    };
    match serde_yaml::from_str::<T>(&source) {
        Ok(value) => Some((value, source)),
        Err(e) => {
            errors.push(SpecError::from_yaml(path, &e));
            None
        }
    }
}

fn validate_model(
    spec: &ModelSpec,
    path: &Path,
    src: &str,
    categories: Option<&CategoriesFile>,
    architectures: Option<&ArchitecturesFile>,
    errors: &mut Vec<SpecError>,
) {
    let mut check = ModelCheck { path, src, errors };
    validate_model_type(spec, &mut check);
    if let Some(categories) = categories {
        validate_category(spec, categories, &mut check);
    }
    if let Some(architectures) = architectures {
        validate_architecture(spec, architectures, &mut check);
    }
    validate_tensors(spec, &mut check);
    validate_cache(spec, &mut check);
    validate_fixed_inputs(spec, &mut check);
    validate_shapes(spec, &mut check);
    check.tolerance(&spec.tolerance, check.at("tolerance"));
    validate_platform_overrides(spec, &mut check);
    validate_known_issue(spec, &mut check);
}

/// One model file under validation: where its problems are located, and where they go.
struct ModelCheck<'a> {
    path: &'a Path,
    src: &'a str,
    errors: &'a mut Vec<SpecError>,
}

impl ModelCheck<'_> {
    /// Where a top-level key is written, or the file's start where it is not (a field filled in).
    fn at(&self, key: &str) -> (usize, usize) {
        locate_key(self.src, key, 0).unwrap_or((1, 1))
    }

    /// Reports a problem of this file, at `pos`, with its fix.
    fn error(&mut self, pos: (usize, usize), message: String, help: String) {
        self.errors
            .push(SpecError::new(self.path, pos, message, help))
    }

    /// Reports a tolerance that no comparison could use, at `pos`.
    fn tolerance(&mut self, t: &ToleranceSpec, pos: (usize, usize)) {
        check_tolerance(t, pos, &mut |pos, message, help| {
            self.error(pos, message, help)
        });
    }
}

/// A model_type must be transformers' own and name its file, so a model's spec is found by its name.
fn validate_model_type(spec: &ModelSpec, check: &mut ModelCheck) {
    if let Err(message) = check_model_type(&spec.model_type) {
        check.error(check.at("model_type"), message, "write transformers' model_type exactly as its config's `model_type` says (e.g. `xlm-roberta`)".into());
    } else if check.path.file_stem().and_then(|s| s.to_str()) != Some(spec.model_type.as_str()) {
        check.error(
            check.at("model_type"),
            format!(
                "model_type `{}` does not match the file name {}",
                spec.model_type,
                check.path.display()
            ),
            format!("name the file {}.yaml", spec.model_type),
        );
    }
}

/// A category must be one categories.yaml knows and name the file's folder, so the tree matches the report.
fn validate_category(spec: &ModelSpec, categories: &CategoriesFile, check: &mut ModelCheck) {
    let path = check.path;
    if !categories.categories.contains_key(&spec.category) {
        let known: Vec<&str> = categories.categories.keys().map(String::as_str).collect();
        check.error(
            check.at("category"),
            format!("unknown category `{}`", spec.category),
            format!("use one of: {}", known.join(", ")),
        );
    } else if path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        != Some(spec.category.as_str())
    {
        check.error(
            check.at("category"),
            format!(
                "category `{}` does not match the folder {}",
                spec.category,
                path.parent().unwrap_or(path).display()
            ),
            format!("move the file to models/{}/", spec.category),
        );
    }
}

/// An architecture must be one architectures.yaml describes: the cells' expectations come from it.
fn validate_architecture(
    spec: &ModelSpec,
    architectures: &ArchitecturesFile,
    check: &mut ModelCheck,
) {
    if !architectures.architectures.contains_key(&spec.architecture) {
        let known: Vec<&str> = architectures
            .architectures
            .keys()
            .map(String::as_str)
            .collect();
        check.error(
            check.at("architecture"),
            format!("unknown architecture type `{}`", spec.architecture),
            format!("use one of: {}", known.join(", ")),
        );
    }
}

/// Inputs and outputs are declared, once each and with axes, since the fixture and the cells are built from them.
fn validate_tensors(spec: &ModelSpec, check: &mut ModelCheck) {
    // A known issue (the exporter's or the importer's real error) stops every
    // cell before a tensor is read: such a spec may not know its tensors.
    let blocked = spec.export.known_issue.is_some();
    for (key, tensors) in [("inputs", &spec.inputs), ("outputs", &spec.outputs)] {
        if tensors.is_empty() && !blocked {
            check.error(
                check.at(key),
                format!("`{key}` is empty"),
                format!("declare the model's {key} with name, dtype and axes"),
            );
        }
        let mut names = BTreeSet::new();
        for t in tensors.iter() {
            if !names.insert(t.name.as_str()) {
                check.error(
                    locate_value(check.src, "name", &t.name).unwrap_or(check.at(key)),
                    format!("{key} declares `{}` twice", t.name),
                    "give each tensor one entry".into(),
                );
            }
            // A fixed input is Python data given to the model while tracing (a flag such as
            // `sample_posterior: False`), never a graph tensor: it may be a scalar.
            let fixed = key == "inputs" && spec.export.fixed_inputs.contains(&t.name);
            if t.axes.is_empty() && !fixed {
                check.error(locate_value(check.src, "name", &t.name).unwrap_or(check.at(key)), format!("`{}` has no axes", t.name), "list its named axes, e.g. [batch, sequence] (only an `export.fixed_inputs` entry may be a scalar)".into());
            }
        }
    }
}

/// A cache is declared only where a generation fixture uses it, and names each tensor once.
fn validate_cache(spec: &ModelSpec, check: &mut ModelCheck) {
    if !spec.cache.is_empty() && !spec.generates() {
        check.error(
            check.at("cache"),
            format!("`cache` is declared, but `{}` does not generate (task `{}`{})", spec.model_type, spec.task, if spec.components.is_empty() { "" } else { ", checked as components" }),
            "remove it: only a text-generation, text2text-generation or image-text-to-text model has a generation fixture".into(),
        );
    }
    let mut cache_names = BTreeSet::new();
    for (name, _) in CacheGroup::past_inputs(&spec.cache) {
        if !cache_names.insert(name.clone()) {
            check.error(
                check.at("cache"),
                format!("`cache` declares `{name}` twice"),
                "list each layer once per tensor name".into(),
            );
        }
    }
}

/// `export.fixed_inputs` names declared inputs: the exporter passes them by those names.
fn validate_fixed_inputs(spec: &ModelSpec, check: &mut ModelCheck) {
    for name in &spec.export.fixed_inputs {
        if !spec.inputs.iter().any(|t| &t.name == name) {
            check.error(
                check.at("export"),
                format!("`export.fixed_inputs` names `{name}`, which is not an input"),
                "list inputs declared under `inputs`".into(),
            );
        }
    }
}

/// Two shapes that size exactly the input axes and differ, so the dynamic-shapes check can fail.
fn validate_shapes(spec: &ModelSpec, check: &mut ModelCheck) {
    let blocked = spec.export.known_issue.is_some();
    if blocked && (spec.shapes.is_empty() || spec.inputs.is_empty()) {
        // nothing to check: the modality's default shapes of a spec whose
        // inputs are unknown (deriving them failed) size nothing
    } else if spec.shapes.len() != 2 {
        check.error(
            check.at("shapes"),
            format!("`shapes` has {} entries", spec.shapes.len()),
            "give exactly two: the export shape and a second shape that differs on a dynamic axis"
                .into(),
        );
    } else {
        let input_axes: BTreeSet<&str> = spec
            .inputs
            .iter()
            .flat_map(|t| t.axes.iter().map(String::as_str))
            .collect();
        for (i, shape) in spec.shapes.iter().enumerate() {
            let missing: Vec<&str> = input_axes
                .iter()
                .copied()
                .filter(|a| !shape.contains_key(*a))
                .collect();
            let extra: Vec<&str> = shape
                .keys()
                .map(String::as_str)
                .filter(|a| !input_axes.contains(a))
                .collect();
            if !missing.is_empty() {
                check.error(
                    check.at("shapes"),
                    format!(
                        "shape {} does not size the input axes {}",
                        i + 1,
                        missing.join(", ")
                    ),
                    "size every input axis in both shapes".into(),
                );
            }
            if !extra.is_empty() {
                check.error(
                    check.at("shapes"),
                    format!(
                        "shape {} sizes {} which no input has",
                        i + 1,
                        extra.join(", ")
                    ),
                    "remove them; output-only axes are sized from the fixture".into(),
                );
            }
        }
        if spec.shapes[0] == spec.shapes[1] {
            check.error(
                check.at("shapes"),
                "the two shapes are equal, so dynamic_shapes could not fail".into(),
                "change a dynamic axis (batch, sequence...) in the second".into(),
            );
        }
    }
}

/// Each platform override changes something and says why, since it overrules what a run would show.
fn validate_platform_overrides(spec: &ModelSpec, check: &mut ModelCheck) {
    for (platform, o) in &spec.platforms {
        let pos = locate_key(check.src, platform.name(), 2).unwrap_or(check.at("platforms"));
        if o.status.is_some() && o.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            check.error(
                pos,
                format!("the `{platform}` override sets a status without a reason"),
                "add `reason:` with the specific cause (the real error, or the seed that says so)"
                    .into(),
            );
        }
        if let Some(t) = &o.tolerance {
            check.tolerance(t, pos);
            if t.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                check.error(
                    pos,
                    format!("the `{platform}` tolerance override has no reason"),
                    "add `reason:` inside `tolerance:` saying why this platform needs it".into(),
                );
            }
        }
        for (op, reason) in &o.fallback_ops {
            if reason.trim().is_empty() {
                check.error(
                    locate_key(check.src, op, 6).unwrap_or(pos),
                    format!("the `{platform}` fallback of `{op}` has no reason"),
                    format!(
                        "say why `{op}` may run off {platform}'s provider (e.g. \"ORT places shape computations on CPU by design\")"
                    ),
                );
            }
        }
        if platform == &Platform::Cpu && !o.fallback_ops.is_empty() {
            check.error(
                pos,
                "`fallback_ops` on cpu: there is nothing to fall back to".into(),
                "remove it; cpu cells run every node on the CPU provider".into(),
            );
        }
        if o.status.is_none() && o.tolerance.is_none() && o.fallback_ops.is_empty() {
            check.error(
                pos,
                format!("the `{platform}` override changes nothing"),
                "set `status:` with `reason:`, `tolerance:`, or `fallback_ops:`, or remove it"
                    .into(),
            );
        }
    }
}

/// A written known issue carries the exporter's real error: an empty one would stop every cell without saying why.
fn validate_known_issue(spec: &ModelSpec, check: &mut ModelCheck) {
    if spec
        .export
        .known_issue
        .as_deref()
        .is_some_and(|r| r.trim().is_empty())
    {
        check.error(
            check.at("export"),
            "`export.known_issue` is empty".into(),
            "write the exporter's real error there, or remove the field".into(),
        );
    }
}

fn check_tolerance(
    t: &ToleranceSpec,
    pos: (usize, usize),
    error: &mut impl FnMut((usize, usize), String, String),
) {
    if !(t.abs.is_finite() && t.abs >= 0.0 && t.rel.is_finite() && t.rel >= 0.0) {
        error(
            pos,
            format!(
                "tolerance abs {} rel {} is not a pair of finite non-negative numbers",
                t.abs, t.rel
            ),
            "use e.g. {abs: 1.0e-4, rel: 1.0e-3}".into(),
        );
    }
}

/// What is wrong with a precision's bound, if anything: a cosine or top-1
/// bound outside (0, 1] can never pass or never fail, nor can a relative L2
/// bound at or below 0.
// `!(x > 0.0)` is meant: a NaN bound is a problem too.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn agreement_bound_problem(bound: &PrecisionTolerance) -> Option<String> {
    let fraction = |v: f64| v > 0.0 && v <= 1.0;
    if !fraction(bound.min_cosine) {
        Some(format!("min_cosine {} is not in (0, 1]", bound.min_cosine))
    } else if !fraction(bound.min_top1) {
        Some(format!("min_top1 {} is not in (0, 1]", bound.min_top1))
    } else if !(bound.max_rel_l2 > 0.0) {
        Some(format!("max_rel_l2 {} is not above 0", bound.max_rel_l2))
    } else {
        None
    }
}

/// Every platform's name, as the loader's help lists them: the list is `Platform::ALL`, so a
/// new platform is named here without another edit.
fn platform_names() -> String {
    Platform::ALL.map(|p| p.name()).join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_type_rules() {
        assert!(check_model_type("bert").is_ok());
        assert!(check_model_type("llava_next").is_ok());
        assert!(check_model_type("xlm-roberta").is_ok());
        assert!(check_model_type("kosmos-2.5").is_ok());
        assert!(
            check_model_type("type").is_ok(),
            "a keyword is a fine model_type; its module is `type_`"
        );
        assert!(check_model_type("../evil").unwrap_err().contains("escape"));
        assert!(check_model_type("a..b").unwrap_err().contains("escape"));
        assert!(check_model_type("a/b").unwrap_err().contains("escape"));
        assert!(check_model_type("a\\b").unwrap_err().contains("escape"));
        assert!(
            check_model_type("Bert")
                .unwrap_err()
                .contains("not allowed")
        );
        assert!(
            check_model_type("2bert")
                .unwrap_err()
                .contains("not allowed")
        );
        assert!(
            check_model_type("-bert")
                .unwrap_err()
                .contains("not allowed")
        );
        assert!(
            check_model_type("bert roberta")
                .unwrap_err()
                .contains("not allowed")
        );
        assert!(check_model_type("").is_err());
    }
}
