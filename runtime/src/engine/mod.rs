//! Engines run a fixture's model on a platform. Each registers its backend
//! strictly (no silent fallback) and gives its own account of where every
//! operator ran, which [`crate::placement`] turns into a verdict.

#[cfg(feature = "browser")]
pub mod browser;
pub mod onnx;
#[cfg(feature = "openvino")]
pub mod openvino;
pub mod torch;
#[cfg(feature = "wgpu")]
pub mod wgpu;

use crate::error::{CheckError, ErrorKind};
use crate::fixture::Fixture;
use crate::placement::{self, OpPlacement};
use crate::tensor::Tensor;
use std::path::Path;

pub use hwmatrix_record::Threads;

use crate::{BrowserApp, BrowserBackend, Cell, Engine, Precision};

/// How a session is opened: profiled (to see where operators ran) or plain
/// (to time it: ORT's profiler makes a tiny model's run about 9× slower).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Profiled,
    Timed,
}

/// A loaded model, ready to run on the cell's platform.
pub trait Session {
    /// Runs the model on named inputs; returns every output the model has, by name.
    fn run(&mut self, inputs: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>, CheckError>;

    /// Where each operator of the runs so far executed, from the engine's own
    /// account (ONNX Runtime: its profile). Only for [`Mode::Profiled`] sessions.
    fn placement(&mut self) -> Result<Placement, CheckError>;

    /// Name and version (or path) of the library that ran it, for records.
    fn library(&self) -> String;

    fn threads(&self) -> Threads;

    /// The device the session runs on, where the engine can say more than the
    /// platform's presence probe (a plugin's adapter), for records.
    fn device(&self) -> Option<String> {
        None
    }

    /// Why this session's latency would mean nothing, so the check takes none:
    /// a software adapter standing in for a GPU (SwiftShader's times say nothing
    /// of any GPU's, and timing its slowest models took minutes of every sweep).
    fn untimed(&self) -> Option<String> {
        None
    }

    /// One run's time in milliseconds. By default the run as the check sees
    /// it; an engine whose runs cross a process boundary times the run alone.
    fn time_run(&mut self, inputs: &[(String, Tensor)]) -> Result<f64, CheckError> {
        let start = std::time::Instant::now();
        self.run(inputs)?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    }

    /// Whether the session the check opened [`Mode::Profiled`] may be timed
    /// as it is: true where profiling does not slow runs (the browser engine
    /// reads placements from the log written when the session opened), so the
    /// model is not compiled twice.
    fn reusable_for_timing(&self) -> bool {
        false
    }
}

/// What a profiled run tells: per-operator placement and the engine's own memory figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placement {
    pub ops: Vec<OpPlacement>,
    /// Bytes ORT's CPU arena held at the end of the run (from its profile).
    pub arena_held_bytes: Option<u64>,
    /// Peak bytes in use in that arena during the run.
    pub arena_in_use_peak_bytes: Option<u64>,
}

/// Opens the fixture's model with the cell's engine: the float32 export, or
/// the variant of `precision` (ONNX only: the quantizer works on ONNX graphs).
pub fn open(
    cell: &Cell,
    fixture: &Fixture,
    precision: Option<Precision>,
    mode: Mode,
) -> Result<Box<dyn Session>, CheckError> {
    match *cell.engine {
        Engine::OnnxRuntime { .. } | Engine::Browser { .. } => open_graph(
            cell,
            &onnx_model(fixture, precision)?,
            declared_inputs(cell, fixture),
            graph_nodes(fixture),
            mode,
        ),
        #[cfg(feature = "openvino")]
        Engine::OpenVino {
            device,
            frontend: crate::OpenVinoFrontend::Pytorch,
        } => openvino::open(device, &fixture.openvino_pytorch(precision)?),
        #[cfg(feature = "openvino")]
        Engine::OpenVino { device, .. } => openvino::open(
            device,
            &match precision {
                None => fixture.model_onnx(),
                // OpenVINO's runtime runs NNCF's formats; ONNX Runtime's quantized graphs are
                // the provider engine's.
                Some(p) if p.is_openvino_ir() => fixture.model_precision(p)?,
                Some(p) => {
                    return Err(CheckError::new(
                        ErrorKind::EngineNotBuilt,
                        format!(
                            "{}: OpenVINO's runtime checks NNCF's weight formats, not ONNX Runtime's {} graph",
                            cell.id(),
                            p.name()
                        ),
                    ));
                }
            },
        ),
        Engine::Libtorch { .. } if precision.is_some() => Err(CheckError::new(
            ErrorKind::EngineNotBuilt,
            format!(
                "{}: the libtorch engine runs float32 TorchScript only",
                cell.id()
            ),
        )),
        Engine::Libtorch { device } => {
            let outputs: Vec<&'static str> = cell.model.outputs.iter().map(|o| o.name).collect();
            torch::open(
                cell.platform.platform,
                device,
                &fixture.model_torchscript()?,
                &outputs,
            )
        }
        engine => Err(CheckError::new(
            ErrorKind::EngineNotBuilt,
            format!(
                "{} cannot run: its engine ({}) is not built into this runtime yet; its cells are planned `no-engine`, \
                 so they fail only with the `{}` feature on",
                cell.id(),
                engine.describe(),
                cell.platform.feature
            ),
        )),
    }
}

/// The library the cell's engine runs in, as [`Session::library`] names it,
/// without a session: a check whose model failed to open still says which
/// engine refused it, so its stored failure can go stale when that engine
/// changes. None where the engine itself is missing (its error says so), and for
/// the browser engine, whose model opens in the page at the first run (a check
/// that stopped before it failed in the harness or the browser, not the model).
pub fn library_of(cell: &Cell) -> Option<String> {
    match *cell.engine {
        Engine::OnnxRuntime { provider, .. } => onnx::library_of(provider),
        #[cfg(feature = "openvino")]
        Engine::OpenVino { .. } => openvino::library_of(),
        #[cfg(feature = "torch")]
        Engine::Libtorch { .. } => Some(torch::library()),
        _ => None,
    }
}

/// Opens an ONNX graph of the model (its fixture's, a variant, a generation
/// fixture's decoder) with the cell's engine, strictly; the named axes of
/// `inputs` are fixed per run where the engine builds static graphs.
pub fn open_graph(
    cell: &Cell,
    graph: &Path,
    inputs: onnx::StaticInputs,
    nodes: placement::GraphNodes,
    mode: Mode,
) -> Result<Box<dyn Session>, CheckError> {
    match *cell.engine {
        Engine::OnnxRuntime { provider, options } => {
            let static_inputs = provider.static_shapes().then_some(inputs);
            Ok(Box::new(onnx::OnnxSession::open(
                provider,
                options,
                graph,
                mode,
                static_inputs,
                nodes,
            )?))
        }
        Engine::Browser {
            backend,
            device_type,
            app,
        } => open_browser(cell, app, backend, device_type, graph, inputs, nodes),
        #[cfg(feature = "openvino")]
        Engine::OpenVino {
            device,
            frontend: crate::OpenVinoFrontend::Onnx,
        } => openvino::open(device, graph),
        engine => Err(CheckError::new(
            ErrorKind::EngineNotBuilt,
            format!(
                "{}: the {} engine does not run ONNX graphs, and generation is checked on the ONNX decoder with its cache",
                cell.id(),
                engine.describe()
            ),
        )),
    }
}

/// The graph's inputs and their named axes, for engines that fix them per run (WebNN,
/// QNN's HTP): the spec's, which our exporter gives the graph, or those another tool's
/// graph names its own (the fixture records them). Fixing the spec's names on optimum's
/// graph fixed nothing, and left WebNN a dynamic graph it runs on the CPU.
fn declared_inputs(cell: &Cell, fixture: &Fixture) -> onnx::StaticInputs {
    if let Some(axes) = fixture.graph_input_axes() {
        return axes;
    }
    cell.model
        .inputs
        .iter()
        .map(|d| {
            (
                d.name.to_string(),
                d.axes.iter().map(|a| a.to_string()).collect(),
            )
        })
        .collect()
}

/// The fixture's account of its graph's nodes (integer-only and float), for
/// engines that judge CPU placements by node name.
fn graph_nodes(fixture: &Fixture) -> placement::GraphNodes {
    fixture
        .meta
        .integer_nodes
        .as_ref()
        .map(|n| placement::GraphNodes::new(&n.names, &n.float))
        .unwrap_or_default()
}

/// The ONNX export a check runs: float32, or the variant of `precision`.
fn onnx_model(
    fixture: &Fixture,
    precision: Option<Precision>,
) -> Result<std::path::PathBuf, CheckError> {
    match precision {
        None => Ok(fixture.model_onnx()),
        Some(p) if p.is_openvino_ir() => Err(CheckError::new(
            ErrorKind::EngineNotBuilt,
            format!(
                "the {} format is OpenVINO IR, which only OpenVINO's runtime reads",
                p.name()
            ),
        )),
        Some(p) => fixture.model_precision(p),
    }
}

#[cfg(feature = "browser")]
fn open_browser(
    _: &Cell,
    app: BrowserApp,
    backend: BrowserBackend,
    device_type: Option<&'static str>,
    model: &Path,
    inputs: onnx::StaticInputs,
    nodes: placement::GraphNodes,
) -> Result<Box<dyn Session>, CheckError> {
    browser::open(app, backend, device_type, model, inputs, nodes)
}

#[cfg(not(feature = "browser"))]
fn open_browser(
    cell: &Cell,
    _: BrowserApp,
    _: BrowserBackend,
    _: Option<&'static str>,
    _: &Path,
    _: onnx::StaticInputs,
    _: placement::GraphNodes,
) -> Result<Box<dyn Session>, CheckError> {
    Err(CheckError::new(
        ErrorKind::EngineNotBuilt,
        format!(
            "{}: this runtime was built without its `browser` feature (the generated crate's `webgpu` and `webnn` features turn it on)",
            cell.id()
        ),
    ))
}

/// Which OpenVINO this process loaded: ONNX Runtime's provider build bundles its own
/// (2025.4.1) and OpenVINO's runtime engine loads PyPI's, and a process holds one.
/// The first to open a session claims the process; the other is refused with how to
/// run each in a process of its own, never run beside it.
pub(crate) fn claim_openvino(who: &'static str) -> Result<(), CheckError> {
    static CLAIMED: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    let holder = *CLAIMED.get_or_init(|| who);
    if holder == who {
        return Ok(());
    }
    Err(CheckError::new(
        ErrorKind::LibraryMissing,
        format!(
            "{who} cannot open a model in this process: {holder} already loaded its own OpenVINO here (one per process); run the openvino platform's engines in processes of their own (`cargo test -p generated --features openvino ::openvino::onnx::`, then `::openvino::ov::`)"
        ),
    ))
}
