//! The static declarations a generated cell is made of: plain data, no logic.
//! `gen` writes values of these types into `generated/`; the runtime reads them.

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::planned::Planned;
use crate::platform::Platform;

/// What a model's spec declares about its exported graph, for every platform.
#[derive(Debug)]
pub struct ModelDecl {
    pub model_type: &'static str,
    pub category: &'static str,
    /// The spec file this was generated from, relative to the workspace.
    pub spec_path: &'static str,
    /// sha256 of the spec as the exporter receives it: with the exporter's own
    /// digest it makes the fixture key ([`crate::fixture_key`]).
    pub spec_digest: &'static str,
    pub inputs: &'static [TensorDecl],
    pub outputs: &'static [TensorDecl],
    /// The tolerance of every platform that does not override it.
    pub tolerance: Tolerance,
    /// Set on a component's declaration (`vision`): its fixture is
    /// `<model_type>/<component>/`, and its records name it.
    pub component: Option<&'static str>,
    /// The components a model is checked as, where its whole forward pass
    /// cannot be exported (generator/importer/exporter/components.py): each its own fixture, reference and
    /// checks; a cell passes only when every component passes. Empty: the
    /// model is checked whole.
    pub components: &'static [ModelDecl],
}

impl ModelDecl {
    /// What the checks run: the components, or the whole model.
    pub fn parts(&'static self) -> &'static [ModelDecl] {
        if self.components.is_empty() {
            std::slice::from_ref(self)
        } else {
            self.components
        }
    }

    /// A failure message as a record keeps it: a component's says which
    /// component (`component vision: ...`), so the spec's known issue does too.
    pub fn qualify(&self, message: &str) -> String {
        match self.component {
            Some(component) => format!("component {component}: {message}"),
            None => message.to_string(),
        }
    }

    /// `qwen2_vl`, or `qwen2_vl/vision` for a component: how messages name it.
    pub fn name(&self) -> String {
        match self.component {
            Some(component) => format!("{}/{component}", self.model_type),
            None => self.model_type.to_string(),
        }
    }
}

/// A generating model's generation fixture as its spec declares it.
#[derive(Debug)]
pub struct GenerationDecl {
    /// sha256 of the spec as the generation exporter receives it (the exporter's
    /// view and the declared cache): the generation fixture key's part.
    pub spec_digest: &'static str,
    /// The cache's past inputs (`past_key_values.<layer>.<name>`, each fed from
    /// `present.<layer>.<name>`), as the spec's `cache:` declares them.
    pub cache: &'static [TensorDecl],
}

/// A cell's `generates` check: the model's generation declaration and the check's plan.
#[derive(Clone, Copy, Debug)]
pub struct GenerationCheck {
    pub decl: &'static GenerationDecl,
    pub planned: Planned,
}

/// A declared input or output: name, element type and named axes.
#[derive(Debug)]
pub struct TensorDecl {
    pub name: &'static str,
    pub dtype: DType,
    pub axes: &'static [&'static str],
}

/// `|actual - expected| <= abs + rel * |expected|` elementwise (numpy's allclose rule).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

/// A platform as hardware.yaml describes it: its cargo feature and what it
/// needs. Its engines are part of each cell ([`Cell::engine`]).
#[derive(Debug)]
pub struct PlatformDecl {
    pub platform: Platform,
    pub feature: &'static str,
    /// What must be present (hardware.yaml `requires`), quoted in failures.
    pub requires: &'static str,
    /// Why every check of the platform runs in a process of its own
    /// (hardware.yaml `checks_in_own_process`): an engine here that has
    /// crashed its process would take the other checks' records with it.
    pub checks_in_own_process: Option<&'static str>,
}

/// How a platform's cells run: an engine and its settings, from hardware.yaml.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// ONNX Runtime with one execution provider, registered strictly.
    OnnxRuntime {
        provider: ExecutionProvider,
        options: &'static [(&'static str, &'static str)],
    },
    /// libtorch through tch on a device (`cpu`, `cuda`, `mps`).
    Libtorch { device: &'static str },
    /// Native WebGPU compute through wgpu.
    Wgpu,
    /// onnxruntime-web in a headless browser (Chromium, or Firefox for
    /// webgpu); WebNN asks for a device type.
    Browser {
        backend: BrowserBackend,
        device_type: Option<&'static str>,
        app: BrowserApp,
    },
    /// OpenVINO's own runtime (not ONNX Runtime's provider) on one of its devices
    /// (`CPU`, `GPU`, `NPU`), on the model one of its frontends made: our ONNX graph read
    /// by its ONNX frontend, or the PyTorch module converted by its PyTorch frontend.
    OpenVino {
        device: &'static str,
        frontend: OpenVinoFrontend,
    },
}

/// The engines, without their settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Onnxruntime,
    Libtorch,
    Wgpu,
    /// onnxruntime-web in headless Chromium. Named `browser` in records, evidence and
    /// test paths (`webgpu::browser`): it was the one browser before Firefox had cells.
    #[serde(rename = "browser")]
    Chromium,
    Openvino,
    /// onnxruntime-web in Firefox: the browser engine's cells in the other
    /// browser that ships WebGPU (`webgpu::firefox` beside `webgpu::browser`).
    Firefox,
    /// OpenVINO's runtime on the model its PyTorch frontend converted from the PyTorch
    /// module, as optimum-intel converts one (`openvino::ov_pytorch`): the converter is
    /// part of what it checks, where `openvino` reads our ONNX graph.
    #[serde(rename = "openvino_pytorch")]
    OpenvinoPytorch,
}

impl EngineKind {
    pub const ALL: [EngineKind; 7] = [
        EngineKind::Onnxruntime,
        EngineKind::Libtorch,
        EngineKind::Wgpu,
        EngineKind::Chromium,
        EngineKind::Openvino,
        EngineKind::Firefox,
        EngineKind::OpenvinoPytorch,
    ];

    /// The engine a record or a report names (`onnxruntime`, `wgpu`).
    pub fn from_name(name: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether it runs the module the exporter traced (model.pt), not an ONNX graph: libtorch
    /// runs the trace, OpenVINO's PyTorch frontend converts it. Their cells run where
    /// torch.onnx failed and the trace did not (a fixture of its own, torchscript.py).
    pub fn runs_the_trace(self) -> bool {
        matches!(self, EngineKind::Libtorch | EngineKind::OpenvinoPytorch)
    }

    /// Whether its checks run whole models. wgpu's do not: they run our WGSL quantization
    /// kernels on a model's sampled matrix-product layers, evidence about the kernels on an
    /// adapter that never says the model runs on its platform (the report keeps them apart).
    pub fn runs_whole_models(self) -> bool {
        self != EngineKind::Wgpu
    }

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Onnxruntime => "onnxruntime",
            EngineKind::Libtorch => "libtorch",
            EngineKind::Wgpu => "wgpu",
            EngineKind::Chromium => "browser",
            EngineKind::Openvino => "openvino",
            EngineKind::Firefox => "firefox",
            EngineKind::OpenvinoPytorch => "openvino_pytorch",
        }
    }

    /// The module a cell of this engine has under its platform in test paths
    /// (`bert::cpu::onnx::runs`, `bert::cpu::torch::runs`). On webgpu, ONNX
    /// Runtime runs the WebGPU execution provider natively (Dawn), the same
    /// kernels as the browser's: `webgpu::native` beside `webgpu::browser`.
    pub fn module(self, platform: Platform) -> &'static str {
        match self {
            EngineKind::Onnxruntime if platform == Platform::Webgpu => "native",
            EngineKind::Onnxruntime => "onnx",
            EngineKind::Libtorch => "torch",
            EngineKind::Wgpu => "wgpu",
            EngineKind::Chromium => "browser",
            // `openvino::ov` (OpenVINO's runtime) beside `openvino::onnx` (ONNX Runtime's
            // OpenVINO provider); not `runtime`, which would shadow the runtime crate in cells.
            EngineKind::Openvino => "ov",
            EngineKind::Firefox => "firefox",
            EngineKind::OpenvinoPytorch => "ov_pytorch",
        }
    }

    /// Whether this version of the runtime has code for the engine (it may
    /// still sit behind a cargo feature: [`EngineKind::cargo_feature`]). A
    /// platform gets a cell per engine in hardware.yaml; those of engines not
    /// built are `no-engine`. A runtime test keeps this in step with
    /// `runtime::engine::open`.
    pub fn is_built(self) -> bool {
        matches!(
            self,
            EngineKind::Onnxruntime
                | EngineKind::Libtorch
                | EngineKind::Chromium
                | EngineKind::Openvino
                | EngineKind::Firefox
                | EngineKind::OpenvinoPytorch
        )
    }

    /// The cargo feature (of `generated`, passed on to `runtime`) an engine
    /// needs besides its platform's: libtorch links a 1 GB library that
    /// users who only want ONNX Runtime should not have to install.
    pub fn cargo_feature(self) -> Option<&'static str> {
        match self {
            EngineKind::Libtorch => Some("torch"),
            // Firefox comes from Debian's unstable suite in a root of its own
            // (`tests/setup.sh firefox`, 1.4 GB): not every webgpu machine has it.
            EngineKind::Firefox => Some("firefox"),
            _ => None,
        }
    }
}

impl Engine {
    pub fn kind(self) -> EngineKind {
        match self {
            Engine::OnnxRuntime { .. } => EngineKind::Onnxruntime,
            Engine::Libtorch { .. } => EngineKind::Libtorch,
            Engine::Wgpu => EngineKind::Wgpu,
            Engine::Browser {
                app: BrowserApp::Chromium,
                ..
            } => EngineKind::Chromium,
            Engine::Browser {
                app: BrowserApp::Firefox,
                ..
            } => EngineKind::Firefox,
            Engine::OpenVino {
                frontend: OpenVinoFrontend::Onnx,
                ..
            } => EngineKind::Openvino,
            Engine::OpenVino {
                frontend: OpenVinoFrontend::Pytorch,
                ..
            } => EngineKind::OpenvinoPytorch,
        }
    }

    /// How the engine reads in docs and messages.
    pub fn describe(self) -> String {
        match self {
            Engine::OnnxRuntime { provider, options } => {
                describe_onnxruntime(provider, options.iter().copied())
            }
            Engine::Libtorch { device } => describe_libtorch(device),
            Engine::Wgpu => "wgpu".into(),
            Engine::Browser {
                backend,
                device_type,
                app,
            } => describe_browser(backend, device_type, app),
            Engine::OpenVino { device, frontend } => describe_openvino(device, frontend),
        }
    }
}

/// How an ONNX Runtime engine reads in docs, messages and records.
pub fn describe_onnxruntime<'a>(
    provider: ExecutionProvider,
    options: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> String {
    let options: Vec<String> = options
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if options.is_empty() {
        format!("onnxruntime, {}", provider.ort_name())
    } else {
        format!(
            "onnxruntime, {} ({})",
            provider.ort_name(),
            options.join(", ")
        )
    }
}

pub fn describe_openvino(device: &str, frontend: OpenVinoFrontend) -> String {
    match frontend {
        OpenVinoFrontend::Onnx => format!("OpenVINO runtime, device {device}"),
        OpenVinoFrontend::Pytorch => {
            format!("OpenVINO runtime, device {device}, on its PyTorch frontend's conversion")
        }
    }
}

/// Which of OpenVINO's frontends made the model its runtime compiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenVinoFrontend {
    /// Our ONNX graph, read by its ONNX frontend (`Core::read_model("model.onnx")`).
    #[default]
    Onnx,
    /// The PyTorch module converted by its PyTorch frontend (`openvino.convert_model`), as
    /// optimum-intel converts a model: the IR openvino_pytorch.py makes beside the fixture.
    Pytorch,
}

pub fn describe_libtorch(device: &str) -> String {
    format!("libtorch, device {device}")
}

pub fn describe_browser(
    backend: BrowserBackend,
    device_type: Option<&str>,
    app: BrowserApp,
) -> String {
    let app = app.name();
    match device_type {
        Some(device) => format!(
            "onnxruntime-web in headless {app}, {} (deviceType {device})",
            backend.name()
        ),
        None => format!("onnxruntime-web in headless {app}, {}", backend.name()),
    }
}

/// ONNX Runtime's execution providers, named as ORT names them (in its
/// profiles and in hardware.yaml).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum ExecutionProvider {
    #[serde(rename = "CPUExecutionProvider")]
    Cpu,
    #[serde(rename = "CUDAExecutionProvider")]
    Cuda,
    #[serde(rename = "TensorrtExecutionProvider")]
    TensorRt,
    #[serde(rename = "MIGraphXExecutionProvider")]
    MiGraphX,
    #[serde(rename = "CoreMLExecutionProvider")]
    CoreMl,
    #[serde(rename = "OpenVINOExecutionProvider")]
    OpenVino,
    #[serde(rename = "QNNExecutionProvider")]
    Qnn,
    /// ONNX Runtime's C++ WebGPU provider (Dawn inside) as a native plugin:
    /// the kernels onnxruntime-web's `webgpu` bundle compiles to wasm.
    #[serde(rename = "WebGpuExecutionProvider")]
    WebGpu,
}

impl ExecutionProvider {
    /// Whether the provider compiles static graphs, so each run's input sizes
    /// fix the model's named dimensions (QNN's HTP finalizes one graph per shape).
    pub fn static_shapes(self) -> bool {
        self == ExecutionProvider::Qnn
    }

    /// The provider name ONNX Runtime writes into its profile.
    pub fn ort_name(self) -> &'static str {
        match self {
            ExecutionProvider::Cpu => "CPUExecutionProvider",
            ExecutionProvider::Cuda => "CUDAExecutionProvider",
            ExecutionProvider::TensorRt => "TensorrtExecutionProvider",
            ExecutionProvider::MiGraphX => "MIGraphXExecutionProvider",
            ExecutionProvider::CoreMl => "CoreMLExecutionProvider",
            ExecutionProvider::OpenVino => "OpenVINOExecutionProvider",
            ExecutionProvider::Qnn => "QNNExecutionProvider",
            ExecutionProvider::WebGpu => "WebGpuExecutionProvider",
        }
    }
}

/// The browser onnxruntime-web runs in: Debian's Chromium (webgpu and webnn),
/// or Firefox (webgpu: Firefox has no WebNN).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BrowserApp {
    #[default]
    Chromium,
    Firefox,
}

impl BrowserApp {
    pub fn name(self) -> &'static str {
        match self {
            BrowserApp::Chromium => "Chromium",
            BrowserApp::Firefox => "Firefox",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BrowserBackend {
    Webnn,
    Webgpu,
}

impl BrowserBackend {
    /// The onnxruntime-web bundle the harness imports for this backend.
    /// webgpu: `ort.webgpu.min.mjs` (`onnxruntime-web/webgpu`), whose wasm
    /// build carries the C++ WebGPU execution provider: what transformers.js
    /// imports, and onnxruntime's default since its JSEP-to-WebGPU-EP
    /// migration. `ort.all.min.mjs` runs WebGPU through JSEP, the older
    /// JavaScript kernels (no TopK, no ScatterElements), which users no longer
    /// get. webnn: `ort.all.min.mjs`, the JSEP build, whose WebNN execution
    /// provider (the same C++ provider both builds compile) our webnn records
    /// were measured with.
    pub fn ort_bundle(self) -> &'static str {
        match self {
            BrowserBackend::Webnn => "ort.all.min.mjs",
            BrowserBackend::Webgpu => "ort.webgpu.min.mjs",
        }
    }

    /// The execution provider onnxruntime-web names in its log for this
    /// backend with its bundle (`ort_bundle`).
    pub fn ort_provider(self) -> &'static str {
        match self {
            BrowserBackend::Webnn => "WebNNExecutionProvider",
            BrowserBackend::Webgpu => "WebGpuExecutionProvider",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BrowserBackend::Webnn => "webnn",
            BrowserBackend::Webgpu => "webgpu",
        }
    }
}

/// An operator the spec allows to run off the requested provider on one
/// platform, with why (e.g. ORT places shape computations on CPU by design).
#[derive(Debug)]
pub struct AllowedFallback {
    pub op: &'static str,
    pub reason: &'static str,
}

/// A precision a cell checks besides float32, each as a check of its own: the
/// formats deployments ship, each a variant of the fixture's float32 graph made
/// by the standard tool with the settings its users use (generator/importer/exporter,
/// `VARIANTS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Half precision: the float32 graph with its weights and arithmetic in
    /// float16 (ONNX Runtime's `convert_float_to_float16`, float32 inputs and
    /// outputs), for the platforms whose hardware computes in float16.
    Fp16,
    /// ONNX Runtime's dynamic quantization, per channel: int8 weights (a scale
    /// per output channel), activations quantized at run time.
    Int8,
    /// int8 as optimum's `avx2` preset makes it (dynamic, per channel): uint8
    /// weights, symmetric (zero point 128), uint8 activations, no
    /// reduce_range; the same operators as `int8`. ONNX Runtime runs its
    /// u8 x u8 products widened to 16 bits, which cannot saturate on a CPU
    /// without VNNI, where `int8`'s u8 x s8 ones can: what to ship for AVX2.
    #[serde(rename = "int8_avx2")]
    Int8Avx2,
    /// 4-bit weights in blocks of 32 (ONNX Runtime's `MatMulNBitsQuantizer`,
    /// symmetric): transformers.js's q4, which onnxruntime-web's WebGPU
    /// provider runs natively as MatMulNBits.
    Q4,
    /// q4 with float16 activations: transformers.js's default for language
    /// models on WebGPU.
    Q4f16,
    /// Static QDQ as ONNX Runtime documents it for QNN's HTP (uint8
    /// activations and weights), calibrated on the fixture's own inputs: the
    /// format QNN's HTP and WebNN NPUs take.
    Qdq8,
    /// OpenVINO IR with int8 weights (NNCF's `compress_weights`, INT8_ASYM: a
    /// scale and zero point per output channel), float32 activations:
    /// optimum-intel's `--weight-format int8`. OpenVINO's runtime only.
    #[serde(rename = "nncf_int8")]
    NncfInt8,
    /// OpenVINO IR with int4 weights (INT4_ASYM in groups of 128, ratio 1.0,
    /// embeddings and the last layer in the int8 backup): optimum-intel's
    /// `--weight-format int4`. OpenVINO's runtime only.
    #[serde(rename = "nncf_int4")]
    NncfInt4,
    /// 4-bit NormalFloat weights in blocks of 64 (ONNX Runtime's `MatMulBnb4Quantizer`, NF4):
    /// transformers.js's bnb4. Made after the export by
    /// generator/importer/exporter/transformersjs_formats.py.
    Bnb4,
    /// 2-bit weights in blocks of 32 (`MatMulNBitsQuantizer` with bits 2, symmetric):
    /// transformers.js's q2 (its version 4). Made with bnb4.
    Q2,
    /// q2 converted to float16 activations, float32 inputs and outputs (as q4f16 is q4):
    /// transformers.js's q2f16. Made with bnb4, from q2.
    Q2f16,
}

impl Precision {
    pub const ALL: [Precision; 11] = [
        Precision::Fp16,
        Precision::Int8,
        Precision::Int8Avx2,
        Precision::Q4,
        Precision::Q4f16,
        Precision::Qdq8,
        Precision::NncfInt8,
        Precision::NncfInt4,
        Precision::Bnb4,
        Precision::Q2,
        Precision::Q2f16,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
            Precision::Int8Avx2 => "int8_avx2",
            Precision::Q4 => "q4",
            Precision::Q4f16 => "q4f16",
            Precision::Qdq8 => "qdq8",
            Precision::NncfInt8 => "nncf_int8",
            Precision::NncfInt4 => "nncf_int4",
            Precision::Bnb4 => "bnb4",
            Precision::Q2 => "q2",
            Precision::Q2f16 => "q2f16",
        }
    }

    /// The test function and the `check` of its records ([`crate::CheckId`]'s name).
    pub const fn check_name(self) -> &'static str {
        crate::CheckId::Precision(self).name()
    }

    /// The fixture's model file of this precision.
    pub fn model_file(self) -> &'static str {
        match self {
            Precision::Fp16 => "model.fp16.onnx",
            Precision::Int8 => "model.int8.onnx",
            Precision::Int8Avx2 => "model.int8_avx2.onnx",
            Precision::Q4 => "model.q4.onnx",
            Precision::Q4f16 => "model.q4f16.onnx",
            Precision::Qdq8 => "model.qdq8.onnx",
            Precision::NncfInt8 => "model.nncf_int8.xml",
            Precision::NncfInt4 => "model.nncf_int4.xml",
            Precision::Bnb4 => "model.bnb4.onnx",
            Precision::Q2 => "model.q2.onnx",
            Precision::Q2f16 => "model.q2f16.onnx",
        }
    }

    /// A format of OpenVINO's own (an IR NNCF made), which only OpenVINO's runtime reads;
    /// the others are ONNX graphs.
    pub fn is_openvino_ir(self) -> bool {
        matches!(self, Precision::NncfInt8 | Precision::NncfInt4)
    }

    /// For a format a script makes after the export, the record that script leaves beside
    /// the fixture (how it made each format, or the tool's whole error) and the tool it
    /// names; None for the exporter's own formats, which meta.json accounts for.
    pub fn made_after_export(self) -> Option<(&'static str, &'static str)> {
        match self {
            Precision::NncfInt8 | Precision::NncfInt4 => Some((crate::paths::NNCF_RECORD, "NNCF")),
            Precision::Bnb4 | Precision::Q2 | Precision::Q2f16 => Some((
                crate::paths::TRANSFORMERSJS_RECORD,
                "ONNX Runtime's quantizer",
            )),
            _ => None,
        }
    }
}

/// A precision check of a cell: its own planned status and bound.
#[derive(Debug)]
pub struct PrecisionCheck {
    pub precision: Precision,
    pub planned: Planned,
    /// How close to the float32 reference the variant's outputs must be, as
    /// users accept a quantized model. From the spec's `precision_tolerances`,
    /// else defaults.yaml's (chosen from measurements).
    pub bound: AgreementBound,
}

impl PrecisionCheck {
    /// A check as generated code declares it, in one line.
    pub const fn new(precision: Precision, planned: Planned, bound: AgreementBound) -> Self {
        PrecisionCheck {
            precision,
            planned,
            bound,
        }
    }

    /// A check planned to run (most of them), in one line.
    pub const fn run(precision: Precision, bound: AgreementBound) -> Self {
        PrecisionCheck::new(precision, Planned::Run, bound)
    }
}

/// A precision check's status on one CPU class, where the evidence store
/// holds that class's own outcome (an int8 graph whose u8 x s8 kernels
/// saturate without VNNI fails there and passes elsewhere). The test runs on
/// every class; on this one it must fail as stored, and a pass fails it as an
/// out-of-date entry.
#[derive(Clone, Copy, Debug)]
pub struct ClassPlan {
    pub precision: Precision,
    /// The class's name (`x86-64 avx2`, [`crate::CpuClass`]).
    pub class: &'static str,
    pub planned: Planned,
}

/// A precision variant's bound on every float output: each row's cosine
/// similarity with the reference's (a row is a feature vector: a token's hidden
/// state, an embedding, a logits vector; or one batch item of a feature map),
/// the relative L2 error of the whole output, and for logits the fraction of
/// rows whose top class is the reference's. Max elementwise error is recorded
/// as evidence, not judged: quantization error scales with a layer's range,
/// so no elementwise rule separates a good quantized model from a broken one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgreementBound {
    pub min_cosine: f64,
    pub max_rel_l2: f64,
    pub min_top1: f64,
}

impl AgreementBound {
    /// A bound as generated code declares it, in one line.
    pub const fn new(min_cosine: f64, max_rel_l2: f64, min_top1: f64) -> Self {
        AgreementBound {
            min_cosine,
            max_rel_l2,
            min_top1,
        }
    }
}

/// A float32 check planned otherwise than its cell, from its own stored
/// outcomes: a cell whose only stored failure is `dynamic_shapes` runs
/// `runs` and `matches_reference` (the cell's status) and plans
/// `dynamic_shapes` as its known issue, so the matrix can say "runs at a
/// fixed shape".
#[derive(Clone, Copy, Debug)]
pub struct CheckPlan {
    /// The check's name (`hwmatrix_cell::CHECKS`).
    pub check: &'static str,
    pub planned: Planned,
}

/// One model × platform × engine cell.
#[derive(Debug)]
pub struct Cell {
    pub model: &'static ModelDecl,
    pub platform: &'static PlatformDecl,
    pub engine: &'static Engine,
    /// The cell's status: that of its checks at the export shape (`runs`,
    /// `matches_reference`).
    pub planned: Planned,
    /// Float32 checks planned otherwise than the cell, from their own stored
    /// outcomes (see [`CheckPlan`]).
    pub check_plans: &'static [CheckPlan],
    /// Set only where the spec overrides the model's tolerance for this platform.
    pub tolerance_override: Option<Tolerance>,
    pub allowed_fallback: &'static [AllowedFallback],
    /// Precision variants checked besides float32 (hardware.yaml `precision_checks`).
    pub precision_checks: &'static [PrecisionCheck],
    /// A CPU class's own status of a precision check, where its stored
    /// entries say otherwise than `precision_checks` (see [`ClassPlan`]).
    pub class_plans: &'static [ClassPlan],
    /// Where the platform's hardware computes float32 graphs in a lower precision.
    pub float32_computed_in: Option<ComputedIn>,
    /// The `generates` check, for a generating model's ONNX cells.
    pub generation: Option<GenerationCheck>,
    /// Why this cell's checks run each in a process of its own: one of them
    /// crashed its process before (the evidence store's `engine-exited`).
    pub in_own_process: Option<&'static str>,
    /// A kernel cell's checks (wgpu: the weight quantization schemes on the
    /// model's own matrices) in place of the whole-model checks above.
    pub quantization: Option<crate::QuantizationChecks>,
}

/// The precision a platform computes float32 graphs in (QNN's HTP: float16),
/// the bound its float32 checks are judged by, and why.
#[derive(Clone, Copy, Debug)]
pub struct ComputedIn {
    pub precision: Precision,
    /// Every element within this fraction of its output's spread (the
    /// reference's largest distance from its mean): hardware.yaml's bound for
    /// float32 graphs computed in that precision.
    pub max_error_of_spread: f64,
    pub reason: &'static str,
    /// That precision's agreement bound (the model's `precision_tolerances`):
    /// every float output judged as a variant in that precision is judged,
    /// besides the elementwise bound (an output scaled by 0.91 stays within
    /// 10% of its spread, not within fp16's relative L2 error).
    pub agreement: AgreementBound,
}

impl Cell {
    /// A cell with the model's tolerance and no allowed fallback; generated
    /// code adds what its spec overrides, so a plain cell is one line.
    pub const fn new(
        model: &'static ModelDecl,
        platform: &'static PlatformDecl,
        engine: &'static Engine,
        planned: Planned,
    ) -> Cell {
        Cell {
            model,
            platform,
            engine,
            planned,
            check_plans: &[],
            tolerance_override: None,
            allowed_fallback: &[],
            precision_checks: &[],
            class_plans: &[],
            float32_computed_in: None,
            generation: None,
            in_own_process: None,
            quantization: None,
        }
    }

    /// A kernel cell (wgpu): its checks are the quantization schemes, as
    /// `settings` quantize and `checks` plan them, not the whole-model checks.
    pub const fn with_quantization(
        mut self,
        settings: &'static crate::QuantizationDecl,
        checks: &'static [crate::QuantizationCheck],
    ) -> Cell {
        self.quantization = Some(crate::QuantizationChecks { settings, checks });
        self
    }

    /// Each check of this cell in a process of its own, for `reason`.
    pub const fn in_own_process(mut self, reason: &'static str) -> Cell {
        self.in_own_process = Some(reason);
        self
    }

    /// Why this cell's checks each run in a process of their own, if they do:
    /// its own crash, else its platform's policy.
    pub fn own_process_reason(&self) -> Option<&'static str> {
        self.in_own_process.or(self.platform.checks_in_own_process)
    }

    pub const fn computing_float32_in(
        mut self,
        precision: Precision,
        max_error_of_spread: f64,
        reason: &'static str,
        agreement: AgreementBound,
    ) -> Cell {
        self.float32_computed_in = Some(ComputedIn {
            precision,
            max_error_of_spread,
            reason,
            agreement,
        });
        self
    }

    pub const fn with_tolerance(mut self, tolerance: Tolerance) -> Cell {
        self.tolerance_override = Some(tolerance);
        self
    }

    pub const fn allowing_fallback(mut self, ops: &'static [AllowedFallback]) -> Cell {
        self.allowed_fallback = ops;
        self
    }

    pub const fn with_precision_checks(mut self, checks: &'static [PrecisionCheck]) -> Cell {
        self.precision_checks = checks;
        self
    }

    /// Float32 checks planned otherwise than the cell.
    pub const fn with_check_plans(mut self, plans: &'static [CheckPlan]) -> Cell {
        self.check_plans = plans;
        self
    }

    /// A float32 check's status (`runs`, `matches_reference`,
    /// `dynamic_shapes`): its own where it has one, else the cell's.
    pub fn check_planned(&self, check: &str) -> Planned {
        self.check_plans
            .iter()
            .find(|p| p.check == check)
            .map_or(self.planned, |p| p.planned)
    }

    /// Precision checks whose status on a CPU class is that class's own.
    pub const fn with_class_plans(mut self, plans: &'static [ClassPlan]) -> Cell {
        self.class_plans = plans;
        self
    }

    /// The class's own status of a precision check, where the store holds one
    /// (only cells of platforms that compute on the host's CPU have them).
    pub fn class_plan(&self, precision: Precision, class: &str) -> Option<&'static ClassPlan> {
        self.class_plans
            .iter()
            .find(|p| p.precision == precision && p.class == class)
    }

    /// The model generates: this cell runs the `generates` check on the fixture
    /// `decl` declares, as `planned` says.
    pub const fn with_generation(
        mut self,
        decl: &'static GenerationDecl,
        planned: Planned,
    ) -> Cell {
        self.generation = Some(GenerationCheck { decl, planned });
        self
    }

    /// This cell with one of its model's parts in place of the model.
    pub fn for_part(&self, part: &'static ModelDecl) -> Cell {
        Cell {
            model: part,
            ..*self
        }
    }

    pub fn precision_check(&self, precision: Precision) -> Option<&'static PrecisionCheck> {
        self.precision_checks
            .iter()
            .find(|c| c.precision == precision)
    }

    /// `model_type::platform::engine`, the way messages name a cell. (Test
    /// paths use the model's Rust module, `xlm_roberta::cpu::onnx` for `xlm-roberta`.)
    pub fn id(&self) -> String {
        format!(
            "{}::{}::{}",
            self.model.name(),
            self.platform.platform,
            self.engine.kind().module(self.platform.platform)
        )
    }

    /// The cargo features its checks need: the platform's, and the engine's if it has one.
    pub fn features(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.platform.feature).chain(self.engine.kind().cargo_feature())
    }

    /// The tolerance this cell compares with: its override, else the model's.
    pub fn effective_tolerance(&self) -> Tolerance {
        self.tolerance_override.unwrap_or(self.model.tolerance)
    }
}
