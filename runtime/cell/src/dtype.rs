//! Element types a spec may declare. Names follow numpy/ONNX (`float32`, `int64`...).

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Float32,
    Float16,
    Bfloat16,
    Int64,
    Int32,
    Int8,
    Uint8,
    Bool,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Float16 => "float16",
            DType::Bfloat16 => "bfloat16",
            DType::Int64 => "int64",
            DType::Int32 => "int32",
            DType::Int8 => "int8",
            DType::Uint8 => "uint8",
            DType::Bool => "bool",
        }
    }

    /// Floating-point types compare within a tolerance; the others exactly.
    pub fn is_float(self) -> bool {
        matches!(self, DType::Float32 | DType::Float16 | DType::Bfloat16)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
