//! The typed form of model-specs/. Every struct rejects unknown fields, so a
//! typo is an error with a position, never a silently ignored setting.

use std::collections::BTreeMap;

use hwmatrix_cell::{
    BrowserApp, BrowserBackend, DType, EngineKind, ExecutionProvider, OpenVinoFrontend, Platform,
    Precision, QuantScheme, Rating, Stage,
};
use serde::{Deserialize, Serialize};

// ---- hardware.yaml ---------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareFile {
    pub platforms: BTreeMap<Platform, PlatformSpec>,
}

/// model-specs/quantization.yaml: how a platform's cells measure weight quantization.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuantizationFile {
    pub platform: Platform,
    pub group_size: u32,
    pub mixed: hwmatrix_cell::MixedWidths,
    /// Best first; each the largest mean relative error its rating allows.
    pub ratings: Vec<RatingBound>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatingBound {
    pub rating: Rating,
    pub max_mean_relative_error: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformSpec {
    pub display_name: String,
    /// In order of preference; the first one the runtime has built serves
    /// the platform's cells. The one place that says which engine, provider
    /// and options a platform uses. Written as one-key maps (`- wgpu: {}`).
    #[serde(with = "serde_yaml::with::singleton_map_recursive")]
    pub engines: Vec<EngineSpec>,
    pub feature: String,
    pub precisions: Vec<HardwarePrecision>,
    /// Precision variants every ONNX Runtime cell of the platform checks
    /// besides float32, each with its tolerance in defaults.yaml (`int8`: the
    /// fixture's dynamically quantized model).
    #[serde(default)]
    pub precision_checks: Vec<Precision>,
    pub runner: String,
    /// The parts of `tests/setup.sh` the platform's CI job installs (`gen ci`); the
    /// exporter's venv and the tools where it says none.
    #[serde(default = "SetupPart::least")]
    pub ci_setup: Vec<SetupPart>,
    /// What must be present; quoted in ignore reasons and failures.
    pub requires: String,
    /// The least float32 tolerance of the platform's cells, with its reason
    /// (measured): a model's own tolerance applies where it is wider, and a
    /// spec's per-platform override always wins.
    #[serde(default)]
    pub tolerance: Option<ToleranceSpec>,
    /// Where the platform's hardware computes float32 graphs in a lower
    /// precision, as it does on devices (QNN's HTP runs them in float16): its
    /// float32 checks are judged by that precision's bound
    /// (`precision_tolerances`), and their failures say why.
    #[serde(default)]
    pub float32_computed_in: Option<ComputedIn>,
    /// Why every check of the platform runs in a process of its own (an
    /// engine here has crashed its process): the policy, as data.
    #[serde(default)]
    pub checks_in_own_process: Option<String>,
    /// Why each of the platform's engines is measured in a test process of its own (two of
    /// its engines load libraries that cannot share a process): the policy, as data.
    #[serde(default)]
    pub engines_in_own_processes: Option<String>,
    /// Pairs of this platform's engines that run the same kernels, so their verdicts must
    /// agree: the report lists a model they disagree on (one of the engines is the finding
    /// there, not the model).
    #[serde(default)]
    pub same_kernels: Vec<[EngineKind; 2]>,
    /// This platform's engines that compute on the CPU of the machine that runs the cpu
    /// cells: each is timed against ONNX Runtime's CPU provider there (the report's engine
    /// ratios), the one speed comparison a machine without other hardware makes honestly.
    #[serde(default)]
    pub compared_with_cpu: Vec<EngineKind>,
}

/// A part of `tests/setup.sh` (its usage lists what each installs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetupPart {
    Exporter,
    Plugins,
    Openvino,
    Web,
    Firefox,
    Tools,
    Checkpoints,
}

impl SetupPart {
    /// What every platform's job needs: the venv with ONNX Runtime and the fixtures'
    /// Python, and cargo-nextest.
    fn least() -> Vec<SetupPart> {
        vec![SetupPart::Exporter, SetupPart::Tools]
    }

    /// Its name on `tests/setup.sh`'s command line.
    pub fn name(self) -> &'static str {
        match self {
            SetupPart::Exporter => "exporter",
            SetupPart::Plugins => "plugins",
            SetupPart::Openvino => "openvino",
            SetupPart::Web => "web",
            SetupPart::Firefox => "firefox",
            SetupPart::Tools => "tools",
            SetupPart::Checkpoints => "checkpoints",
        }
    }
}

/// The precision a platform's hardware computes float32 graphs in, and why.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputedIn {
    pub precision: Precision,
    /// Every element within this fraction of its output's spread: float32
    /// outputs computed in that precision, judged elementwise (chosen from
    /// measurements, like every bound).
    pub max_error_of_spread: f64,
    pub reason: String,
}

/// An engine and its settings, e.g. `- onnxruntime: {provider: CUDAExecutionProvider}`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum EngineSpec {
    Onnxruntime {
        provider: ExecutionProvider,
        /// Provider options passed to ONNX Runtime as they are (key: value).
        #[serde(default)]
        options: BTreeMap<String, String>,
        /// The formats this engine checks, in place of the platform's `precision_checks`
        /// (for a format only one engine of the platform is measured on).
        #[serde(default)]
        precision_checks: Option<Vec<Precision>>,
    },
    Libtorch {
        device: String,
    },
    Wgpu {},
    Browser {
        backend: BrowserBackend,
        /// WebNN's `deviceType` (cpu, gpu, npu), asked of `navigator.ml.createContext` and the EP.
        #[serde(default)]
        device_type: Option<String>,
        /// The browser: Chromium (the default) or Firefox, whose cells are
        /// `<platform>::firefox` beside Chromium's `<platform>::browser`.
        #[serde(default)]
        app: BrowserApp,
    },
    /// OpenVINO's own runtime on one of its devices (`CPU`, `GPU`, `NPU`).
    Openvino {
        device: String,
        /// The weight formats of OpenVINO's own it checks besides float32 (NNCF's IR
        /// variants), in place of the platform's `precision_checks`, which are ONNX
        /// Runtime's graphs.
        #[serde(default)]
        precision_checks: Vec<Precision>,
        /// Which of its frontends makes the model: `onnx` (our graph, the default) or
        /// `pytorch` (the module converted as optimum-intel converts it, `ov_pytorch`).
        #[serde(default)]
        frontend: OpenVinoFrontend,
    },
}

impl EngineSpec {
    pub fn kind(&self) -> EngineKind {
        match self {
            EngineSpec::Onnxruntime { .. } => EngineKind::Onnxruntime,
            EngineSpec::Libtorch { .. } => EngineKind::Libtorch,
            EngineSpec::Wgpu {} => EngineKind::Wgpu,
            EngineSpec::Browser {
                app: BrowserApp::Chromium,
                ..
            } => EngineKind::Chromium,
            EngineSpec::Browser {
                app: BrowserApp::Firefox,
                ..
            } => EngineKind::Firefox,
            EngineSpec::Openvino {
                frontend: OpenVinoFrontend::Onnx,
                ..
            } => EngineKind::Openvino,
            EngineSpec::Openvino {
                frontend: OpenVinoFrontend::Pytorch,
                ..
            } => EngineKind::OpenvinoPytorch,
        }
    }
}

/// A number format a platform's hardware computes in (hardware.yaml
/// `precisions`): what the hardware offers, not a check (the checks'
/// variants are hwmatrix_cell's `Precision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HardwarePrecision {
    Fp32,
    Fp16,
    Bf16,
    Int8,
    Int4,
    Int2,
}

// ---- architectures.yaml ----------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitecturesFile {
    pub architectures: BTreeMap<String, ArchitectureSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitectureSpec {
    #[serde(default)]
    pub examples: Vec<String>,
    pub platforms: BTreeMap<Platform, Expectation>,
}

/// What the seeds expect of an architecture type on a platform.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub support: Support,
    pub performance: Performance,
    #[serde(default)]
    pub memory: Option<MemoryClass>,
    pub notes: String,
    #[serde(default)]
    pub optimizations: Vec<String>,
    pub source: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Support {
    Yes,
    Limited,
    No,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Performance {
    Excellent,
    Good,
    Moderate,
    Baseline,
    Poor,
    Varies,
    Unknown,
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryClass {
    Low,
    LowMedium,
    Medium,
    MediumHigh,
    High,
    VeryHigh,
}

// ---- categories.yaml -------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoriesFile {
    pub categories: BTreeMap<String, CategorySpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategorySpec {
    pub display_name: String,
    pub expected_architectures: u32,
    #[serde(default)]
    pub seed_coverage: BTreeMap<Platform, u32>,
}

// ---- defaults.yaml -----------------------------------------------------------

/// What a spec gets when it does not say: the one place for the tolerance,
/// the shapes of a modality and the inputs and outputs of an architecture type.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsFile {
    pub priority: Priority,
    pub tolerance: ToleranceSpec,
    /// The bound of each precision check, against the float32 reference.
    #[serde(default)]
    pub precision_tolerances: BTreeMap<Precision, PrecisionTolerance>,
    /// Per modality: the two shapes.
    #[serde(default)]
    pub shapes: BTreeMap<Modality, Vec<BTreeMap<String, u32>>>,
    /// Per architecture type: the usual inputs and outputs.
    #[serde(default)]
    pub io: BTreeMap<String, DefaultIo>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DefaultIo {
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
}

// ---- models/<category>/<model_type>.yaml ----------------------------------

/// A spec file as written. Top-level fields are curated (written by a
/// person); `imported:` is the block `gen derive` owns and rewrites. A
/// curated field wins over the imported one, which wins over defaults.yaml
/// ([`super::resolve`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    pub model_type: String,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub architecture: Option<String>,
    #[serde(default)]
    pub modality: Option<Modality>,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub priority: Option<Priority>,
    #[serde(default)]
    pub checkpoints: Option<Checkpoints>,
    #[serde(default)]
    pub export: Option<ExportFile>,
    /// Replaces the imported tiny config when set.
    #[serde(default)]
    pub tiny_config: BTreeMap<String, serde_yaml::Value>,
    /// Merged (nested dicts key by key) over the importer's generic shrink: the few keys an
    /// architecture's own rules tie together. `gen derive` derives with them, so inputs,
    /// outputs and the imported tiny config all follow.
    #[serde(default)]
    pub tiny_config_overrides: BTreeMap<String, serde_yaml::Value>,
    #[serde(default)]
    pub inputs: Option<Vec<TensorSpec>>,
    #[serde(default)]
    pub outputs: Option<Vec<TensorSpec>>,
    #[serde(default)]
    pub shapes: Option<Vec<BTreeMap<String, u32>>>,
    #[serde(default)]
    pub tolerance: Option<ToleranceSpec>,
    /// A precision check's tolerance where this model needs another than
    /// defaults.yaml's, with the reason.
    #[serde(default)]
    pub precision_tolerances: BTreeMap<Precision, PrecisionTolerance>,
    #[serde(default)]
    pub platforms: BTreeMap<Platform, PlatformOverride>,
    #[serde(default)]
    pub web_quantization: Option<WebQuantization>,
    /// The parts a model is checked as, where its whole forward pass cannot
    /// be exported: each by the submodule that computes it. `gen derive`
    /// derives each part's inputs, outputs and shapes.
    #[serde(default)]
    pub components: Vec<ComponentChoice>,
    /// The cache of a generating model's decoder, where `gen derive` cannot read it from the
    /// model (it derives `imported.cache` where it can): replaces the imported one whole.
    #[serde(default)]
    pub cache: Option<Vec<CacheGroup>>,
    #[serde(default)]
    pub imported: Option<Imported>,
}

/// Layers of a generating model's cache that hold the same tensors (`cache:`): each tensor
/// is a past input `past_key_values.<layer>.<name>` of its generation fixture's decoder and
/// the present output `present.<layer>.<name>` that the next step feeds back, as optimum
/// and transformers.js flatten a cache. An encoder-decoder's names say which cache:
/// `decoder.key` (self-attention, grows every step), `encoder.key` (cross-attention, made
/// by the first step); a state-space layer's are its states of a fixed size, `conv_state`
/// and `recurrent_state`. The generation exporter refuses a model whose cache is another.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheGroup {
    pub layers: Vec<u32>,
    pub tensors: Vec<CacheTensor>,
}

/// One tensor of a cache layer, as its past input: the axis that grows one position per
/// token is `past_sequence`; `batch` and `encoder_sequence` vary too; "" is fixed.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheTensor {
    pub name: String,
    pub dtype: DType,
    pub axes: Vec<String>,
}

impl CacheGroup {
    /// The graph inputs a declared cache makes, in declaration order: (name, tensor).
    pub fn past_inputs(groups: &[CacheGroup]) -> Vec<(String, &CacheTensor)> {
        groups
            .iter()
            .flat_map(|g| {
                g.layers.iter().flat_map(move |l| {
                    g.tensors
                        .iter()
                        .map(move |t| (format!("past_key_values.{l}.{}", t.name), t))
                })
            })
            .collect()
    }
}

/// A component as a person chooses it (`components:` in a spec).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ComponentChoice {
    /// `vision`, `embed`, `language`: its fixture folder and how records name it.
    pub name: String,
    /// The submodule's attribute path in the export class (`language_model.embed_tokens`).
    pub module: String,
    /// Tensor arguments baked into the graph as the fixture's data, not fed
    /// (Qwen2-VL's `grid_thw`, which sizes Python loops).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed_inputs: Vec<String>,
}

/// A component with what `gen derive` measured of it: the tensors its
/// submodule receives and returns while the whole model runs on the spec's
/// inputs, and their sizes in the spec's two shapes.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Component {
    pub name: String,
    pub module: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed_inputs: Vec<String>,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    pub shapes: Vec<BTreeMap<String, u32>>,
}

impl Component {
    pub fn choice(&self) -> ComponentChoice {
        ComponentChoice {
            name: self.name.clone(),
            module: self.module.clone(),
            fixed_inputs: self.fixed_inputs.clone(),
        }
    }
}

/// What `gen derive` derived from transformers' registries and from running
/// the tiny model. Never edited by hand: re-running the importer rewrites it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Imported {
    /// The transformers version it was derived from.
    pub from: String,
    /// The task registries the architecture appears in (evidence for category and task).
    pub registries: Vec<String>,
    /// Which rule decided the category, or why none could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undecided: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modality: Option<Modality>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The base model class (transformers' base-model registry).
    pub export_class: String,
    #[serde(default)]
    pub tiny_config: BTreeMap<String, serde_yaml::Value>,
    /// Omitted when they equal defaults.yaml's for the architecture type / modality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<TensorSpec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Vec<TensorSpec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Vec<BTreeMap<String, u32>>>,
    /// Outputs the model returns that are constant on the tiny inputs, so not declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constant_outputs: Vec<String>,
    /// The spec's `components`, each with its measured inputs, outputs and shapes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// A generating model's cache, read from its decoder as its generation fixture traces
    /// it (generator/importer/exporter/generation.py's `measure_cache`). Absent where it cannot be
    /// read: the generation exporter's error then says why (`generation_export`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Vec<CacheGroup>>,
    /// The export recipe's attempt that made the fixture, where it is not the first
    /// (generator/importer/exporter/export.py `RECIPE`): the exporter starts from it, so a model
    /// that needs the recipe's last attempts does not fail the others again on every export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_attempt: Option<String>,
    /// That attempt's graph runs at the export shape only, and no attempt of the recipe passed
    /// both shapes when it was made: the exporter tries that attempt alone (the others failed
    /// on every export, a third of a cold export's time). Delete it to try them all again (a
    /// newer torch).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub export_shape_only: bool,
}

/// `export:` as written: every field optional (the class defaults to the imported one).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportFile {
    #[serde(default)]
    pub class: Option<String>,
    #[serde(default)]
    pub exporter: Option<ExporterChoice>,
    #[serde(default)]
    pub known_issue: Option<String>,
    /// Inputs given to the model as data when it is exported, not as graph
    /// inputs: the graph is specialised to the export shape's values.
    #[serde(default)]
    pub fixed_inputs: Vec<String>,
    /// Parameters the architecture initializes to zero (learned in every
    /// checkpoint), drawn from a normal distribution in the tiny model so the
    /// path behind them is checked (export.py `draw_weights`).
    #[serde(default)]
    pub drawn_weights: Vec<String>,
    /// A parameter limit above the tiny-model limit (generator/importer/exporter/tiny.py
    /// `MAX_PARAMETERS`) for an architecture that hard-codes a width no config reaches
    /// (HunyuanVideo 1.5's 2048-wide ByT5 projection): the derive only, with the reason in a
    /// comment beside it.
    #[serde(default)]
    pub max_parameters: Option<u64>,
}

/// One architecture with everything resolved (curated, imported, defaults).
/// Serialize is for `gen show` and the exporter.
#[derive(Debug, Serialize)]
pub struct ModelSpec {
    pub model_type: String,
    pub category: String,
    pub architecture: String,
    pub modality: Modality,
    pub task: String,
    pub priority: Priority,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<Checkpoints>,
    pub export: Export,
    pub tiny_config: BTreeMap<String, serde_yaml::Value>,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    pub shapes: Vec<BTreeMap<String, u32>>,
    pub tolerance: ToleranceSpec,
    /// Each precision check's tolerance: the spec's, else defaults.yaml's.
    pub precision_tolerances: BTreeMap<Precision, PrecisionTolerance>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub platforms: BTreeMap<Platform, PlatformOverride>,
    /// What runs measured of the model that was not a pass (the evidence store,
    /// `model-specs/evidence/<model_type>.yaml`), sorted by platform, engine and check.
    #[serde(skip)]
    pub evidence: Vec<super::evidence::Entry>,
    /// Each measured cell's passed checks from the same file, with the run that
    /// measured them (super::passed).
    #[serde(skip)]
    pub passed: Vec<super::passed::PassedCell>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_quantization: Option<WebQuantization>,
    /// The components the model is checked as (empty: checked whole).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// A generating model's cache: curated `cache:`, else `imported.cache` (empty: none declared).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cache: Vec<CacheGroup>,
}

impl ModelSpec {
    /// Whether the model generates text token by token with a cache (its task is
    /// text-generation, or text2text-generation for an encoder-decoder), so it has
    /// a generation fixture and `generates` checks. A vision-language model
    /// (image-text-to-text) generates with its language component, whether or not
    /// its float32 checks take it in components.
    pub fn generates(&self) -> bool {
        match self.task.as_str() {
            "text-generation" | "text2text-generation" => self.components.is_empty(),
            "image-text-to-text" => true,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Modality {
    Text,
    Vision,
    Audio,
    Video,
    Multimodal,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    High,
    Medium,
    Low,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoints {
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Export {
    /// The transformers class built from `tiny_config`.
    pub class: String,
    pub exporter: ExporterChoice,
    /// The recipe's attempt to start from (`imported.export_attempt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<String>,
    /// Only that attempt, whose graph runs at the export shape only
    /// (`imported.export_shape_only`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shape_only: bool,
    /// Why the architecture cannot be exported yet: a person's note
    /// (`export.known_issue`) or the pipeline's failure in the evidence store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_issue: Option<String>,
    /// Whether `known_issue` is the evidence store's (else a person wrote it).
    #[serde(skip)]
    pub known_issue_measured: bool,
    /// Where the fixture pipeline stopped, with `known_issue`: `config` or
    /// `reference` (our harness: the cells are not tested) or `export`.
    #[serde(skip)]
    pub stage: Option<Stage>,
    /// Inputs the exporter gives the model as Python data (not graph inputs):
    /// the fixture and the cells do not have them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed_inputs: Vec<String>,
    /// Zero-initialized parameters the exporter draws in the tiny model
    /// (`export.drawn_weights`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drawn_weights: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExporterChoice {
    #[default]
    Auto,
    Legacy,
    Dynamo,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: DType,
    pub axes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<Fill>,
    /// The two values a `halves` fill writes (a role per position: Ideogram 4's text tokens,
    /// then its image tokens); no other fill reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<i64>>,
}

/// How the exporter fills an input (see generator/importer/exporter/export.py).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fill {
    Tokens,
    Mask,
    Zeros,
    Normal,
    Uniform,
    DecoderTokens,
    ImageTextTokens,
    ImageSize,
    /// Diffusion timesteps (float, 0..1000).
    Timesteps,
    /// Class labels below the number of classes the config embeds.
    Labels,
    /// Each image's patch grid (temporal, height, width), for Qwen2-VL-style vision towers.
    ImageGrid,
    /// 1 on an image-text prompt's image placeholders, 0 on its text (`mm_token_type_ids`).
    ImageTokenTypes,
    /// Layout boxes [x0, y0, x1, y1] on a 0..1000 page with x0 <= x1, y0 <= y1 (LayoutLM's bbox).
    Boxes,
    /// Text with one clip's audio placeholders, as many as the model's audio features have rows.
    AudioTextTokens,
    /// All ones in both shapes: a mask that must never be padded (an audio clip's frames).
    Ones,
    /// The first of `values` over the first half of the last axis, the second over the rest:
    /// per-position roles of a packed sequence (text tokens, then image tokens).
    Halves,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToleranceSpec {
    pub abs: f64,
    pub rel: f64,
    /// Required on per-platform overrides: why this platform needs another tolerance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A precision check's bound on each float output, as users accept a
/// quantized model (see `runtime::AgreementBound`): each row's cosine
/// similarity with the float32 reference, the relative L2 error, and for
/// logits the top-1 agreement.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrecisionTolerance {
    pub min_cosine: f64,
    pub max_rel_l2: f64,
    pub min_top1: f64,
    /// Required in a model's spec: why it needs another bound than defaults.yaml's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<OverrideStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<ToleranceSpec>,
    /// Operators allowed to run off this platform's provider (ONNX op type →
    /// why). Every other node must run on the provider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fallback_ops: BTreeMap<String, String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverrideStatus {
    Run,
    Unsupported,
    KnownIssue,
}

/// The seeds' ratings of each weight quantization scheme, per platform
/// (`web_quantization: {webgpu: {fp16: excellent, ...}, webnn: {...}}`):
/// expectations shown beside what the checks measure, never judged on a
/// tiny model's random weights.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(transparent)]
pub struct WebQuantization(pub BTreeMap<Platform, BTreeMap<QuantScheme, Rating>>);

impl WebQuantization {
    /// The spec's rating of `scheme` on `platform`, where it rates it.
    pub fn rating(&self, platform: Platform, scheme: QuantScheme) -> Option<Rating> {
        self.0.get(&platform)?.get(&scheme).copied()
    }
}
