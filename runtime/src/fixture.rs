//! The fixture contract of DESIGN.md: `<root>/<model_type>/` with meta.json,
//! model.onnx, and inputs/outputs for two shapes. Anything may produce one
//! (our exporter, a real checkpoint); checks rely on nothing but this layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::npy;
use crate::paths;
use crate::tensor::Tensor;

#[derive(Debug, Deserialize)]
pub struct Meta {
    pub model_type: String,
    pub source: String,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    /// One entry per shape; the first is the export shape.
    pub shapes: Vec<ShapeMeta>,
}

#[derive(Debug, Deserialize)]
pub struct ShapeMeta {
    /// The size of every named input axis in this shape.
    pub axes: BTreeMap<String, usize>,
    pub inputs: Vec<TensorMeta>,
    pub outputs: Vec<TensorMeta>,
}

#[derive(Debug, Deserialize)]
pub struct TensorMeta {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
}

/// The two shapes of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The shape the model was exported with (`inputs/`, `outputs/`).
    Export,
    /// A second shape that must run too (`inputs2/`, `outputs2/`).
    Second,
}

impl Shape {
    fn index(self) -> usize {
        match self {
            Shape::Export => 0,
            Shape::Second => 1,
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Shape::Export => "",
            Shape::Second => "2",
        }
    }
}

#[derive(Debug)]
pub struct Fixture {
    pub dir: PathBuf,
    pub meta: Meta,
}

impl Fixture {
    /// Opens `<HWMATRIX_FIXTURES>/<model_type>`. A missing fixture names the
    /// command that builds it, and the exporter's own error when it failed.
    pub fn open(model_type: &str) -> Result<Fixture, String> {
        Fixture::open_in(&paths::fixtures_dir(), model_type)
    }

    pub fn open_in(root: &Path, model_type: &str) -> Result<Fixture, String> {
        let dir = root.join(model_type);
        let meta_path = dir.join("meta.json");
        let text = match std::fs::read_to_string(&meta_path) {
            Ok(text) => text,
            Err(_) => {
                let exporter_error = std::fs::read_to_string(error_file(root, model_type))
                    .map(|e| format!("\nthe exporter failed on it: {}", e.trim()))
                    .unwrap_or_default();
                return Err(format!(
                    "no fixture for {model_type}: {} does not exist; build it with `cargo run -p generator --bin gen -- fixtures --model {model_type}`{exporter_error}",
                    meta_path.display()
                ));
            }
        };
        let meta: Meta = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", meta_path.display()))?;
        if meta.model_type != model_type {
            return Err(format!("{}: model_type is {:?}, expected {model_type:?}", meta_path.display(), meta.model_type));
        }
        if meta.shapes.len() != 2 {
            return Err(format!("{}: {} shapes, the contract has 2", meta_path.display(), meta.shapes.len()));
        }
        Ok(Fixture { dir, meta })
    }

    pub fn model_onnx(&self) -> PathBuf {
        self.dir.join("model.onnx")
    }

    pub fn shape(&self, shape: Shape) -> &ShapeMeta {
        &self.meta.shapes[shape.index()]
    }

    /// The inputs of one shape, in the order meta.json lists them.
    pub fn inputs(&self, shape: Shape) -> Result<Vec<(String, Tensor)>, String> {
        self.load(&format!("inputs{}", shape.suffix()), &self.shape(shape).inputs)
    }

    /// The PyTorch float32 reference outputs of one shape.
    pub fn outputs(&self, shape: Shape) -> Result<Vec<(String, Tensor)>, String> {
        self.load(&format!("outputs{}", shape.suffix()), &self.shape(shape).outputs)
    }

    fn load(&self, folder: &str, tensors: &[TensorMeta]) -> Result<Vec<(String, Tensor)>, String> {
        tensors
            .iter()
            .map(|t| {
                let tensor = npy::read(&self.dir.join(folder).join(format!("{}.npy", t.name)))?;
                if tensor.shape != t.shape {
                    return Err(format!("{folder}/{}.npy has shape {:?}, meta.json says {:?}", t.name, tensor.shape, t.shape));
                }
                Ok((t.name.clone(), tensor))
            })
            .collect()
    }
}

/// Where `gen fixtures` keeps the exporter's error for a model it could not export.
pub fn error_file(root: &Path, model_type: &str) -> PathBuf {
    root.join(format!("{model_type}.error.txt"))
}
