//! Host tensors: what fixtures hold and what engines return, in one plain form.

pub use half::{bf16, f16};

pub use crate::DType;

/// The elements, in the dtypes specs may declare: float32, float16 and
/// bfloat16 for the precisions, int8 and uint8 for quantized and image data.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Float32(Vec<f32>),
    Float16(Vec<f16>),
    Bfloat16(Vec<bf16>),
    Int64(Vec<i64>),
    Int32(Vec<i32>),
    Int8(Vec<i8>),
    Uint8(Vec<u8>),
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
            Data::Float16(_) => DType::Float16,
            Data::Bfloat16(_) => DType::Bfloat16,
            Data::Int64(_) => DType::Int64,
            Data::Int32(_) => DType::Int32,
            Data::Int8(_) => DType::Int8,
            Data::Uint8(_) => DType::Uint8,
            Data::Bool(_) => DType::Bool,
        }
    }

    pub fn len(&self) -> usize {
        match &self.data {
            Data::Float32(v) => v.len(),
            Data::Float16(v) => v.len(),
            Data::Bfloat16(v) => v.len(),
            Data::Int64(v) => v.len(),
            Data::Int32(v) => v.len(),
            Data::Int8(v) => v.len(),
            Data::Uint8(v) => v.len(),
            Data::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as f64 (bools as 0/1), for comparisons and messages.
    pub fn value(&self, i: usize) -> f64 {
        match &self.data {
            Data::Float32(v) => v[i] as f64,
            Data::Float16(v) => v[i].to_f64(),
            Data::Bfloat16(v) => v[i].to_f64(),
            Data::Int64(v) => v[i] as f64,
            Data::Int32(v) => v[i] as f64,
            Data::Int8(v) => v[i] as f64,
            Data::Uint8(v) => v[i] as f64,
            Data::Bool(v) => u8::from(v[i]) as f64,
        }
    }

    /// Every element as f64.
    pub fn values(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.value(i)).collect()
    }

    /// The index of the first NaN or infinity, if any (integers are always finite).
    pub fn first_non_finite(&self) -> Option<usize> {
        match &self.data {
            Data::Float32(v) => v.iter().position(|x| !x.is_finite()),
            Data::Float16(v) => v.iter().position(|x| !x.is_finite()),
            Data::Bfloat16(v) => v.iter().position(|x| !x.is_finite()),
            _ => None,
        }
    }
}
