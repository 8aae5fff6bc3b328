//! Host tensors: what fixtures hold and what engines return, in one plain form.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Element types a spec may declare. Names follow numpy/ONNX (`float32`, `int64`...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Float32,
    Int64,
    Int32,
    Bool,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Int64 => "int64",
            DType::Int32 => "int32",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Float32(Vec<f32>),
    Int64(Vec<i64>),
    Int32(Vec<i32>),
    Bool(Vec<bool>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Data,
}

impl Tensor {
    pub fn dtype(&self) -> DType {
        match self.data {
            Data::Float32(_) => DType::Float32,
            Data::Int64(_) => DType::Int64,
            Data::Int32(_) => DType::Int32,
            Data::Bool(_) => DType::Bool,
        }
    }

    pub fn len(&self) -> usize {
        match &self.data {
            Data::Float32(v) => v.len(),
            Data::Int64(v) => v.len(),
            Data::Int32(v) => v.len(),
            Data::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of the first NaN or infinity, if any (integers are always finite).
    pub fn first_non_finite(&self) -> Option<usize> {
        match &self.data {
            Data::Float32(v) => v.iter().position(|x| !x.is_finite()),
            _ => None,
        }
    }
}
