//! Engines run a fixture's model on a platform. Each one registers its backend
//! strictly (no silent fallback) and reports which backend really ran it.

pub mod onnx;

use crate::cell::{Cell, Engine};
use crate::fixture::Fixture;
use crate::tensor::Tensor;

/// A loaded model, ready to run on the cell's platform.
pub trait Session {
    /// Runs the model on named inputs; returns every output the model has, by name.
    fn run(&mut self, inputs: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>, String>;

    /// Verifies that the work ran on the backend the cell asked for, from the
    /// engine's own account (ONNX Runtime: its profile), and says what ran where.
    fn verify_backend(&mut self) -> Result<String, String>;

    /// Name and version of the library that ran it, for result records.
    fn library(&self) -> String;
}

/// Opens the fixture's model with the cell's engine.
pub fn open(cell: &Cell, fixture: &Fixture) -> Result<Box<dyn Session>, String> {
    match cell.engine {
        Engine::OnnxRuntime(provider) => Ok(Box::new(onnx::OnnxSession::open(provider, &fixture.model_onnx())?)),
        Engine::Browser(backend) => Err(format!(
            "the browser engine ({backend:?} through onnxruntime-web in headless Chromium) is not built yet, so {} cannot run; \
             build without the `{}` feature until it lands",
            cell.id(),
            cell.platform
        )),
    }
}
