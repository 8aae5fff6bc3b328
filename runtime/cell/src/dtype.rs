//! Element types a spec may declare. Names follow numpy/ONNX (`float32`, `int64`...).

use std::fmt;

use serde::{Deserialize, Serialize};

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
