//! Engines run a fixture's model on a platform. Each registers its backend
//! strictly (no silent fallback) and gives its own account of where every
//! operator ran, which [`crate::placement`] turns into a verdict.

pub mod onnx;
pub mod torch;

use crate::error::{CheckError, ErrorKind};
use crate::fixture::Fixture;
use crate::placement::OpPlacement;
use crate::tensor::Tensor;
use crate::{Cell, Engine, Precision};

/// How a session is opened: profiled (to see where operators ran) or plain
/// (to time it: ORT's profiler makes a tiny model's run about 9× slower).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Profiled,
    Timed,
}

/// The engine settings a timing was taken under, for records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Threads {
    pub intra_op: usize,
    pub inter_op: usize,
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
pub fn open(cell: &Cell, fixture: &Fixture, precision: Option<Precision>, mode: Mode) -> Result<Box<dyn Session>, CheckError> {
    match *cell.engine {
        Engine::OnnxRuntime { provider, options } => {
            let model = match precision {
                None => fixture.model_onnx(),
                Some(p) => fixture.model_precision(p)?,
            };
            Ok(Box::new(onnx::OnnxSession::open(provider, options, &model, mode)?))
        }
        Engine::Libtorch { .. } if precision.is_some() => {
            Err(CheckError::new(ErrorKind::EngineNotBuilt, format!("{}: the libtorch engine runs float32 TorchScript only", cell.id())))
        }
        Engine::Libtorch { device } => {
            let outputs: Vec<&'static str> = cell.model.outputs.iter().map(|o| o.name).collect();
            torch::open(cell.platform.platform, device, &fixture.model_torchscript()?, &outputs)
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
