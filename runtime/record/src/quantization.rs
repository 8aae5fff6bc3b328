//! A quantization check's measurements (webgpu cells' native kernels).

use serde::{Deserialize, Serialize};

use hwmatrix_cell::wgpu_adapter::AdapterReport;
use hwmatrix_cell::{LayerRole, QuantScheme, Rating};

/// What a quantization check measured: each layer's error against float32
/// and the kernel's agreement with the CPU, and the weights' memory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QuantizationRecord {
    pub scheme: QuantScheme,
    pub group_size: u32,
    pub adapter: Option<AdapterReport>,
    /// How the fixture's layers were sampled, and from how many.
    pub layers_captured: Option<usize>,
    pub sampling: Option<String>,
    pub layers: Vec<LayerQuantization>,
    /// Mean over the layers of ‖y_quantized − y_float32‖₂ / ‖y_float32‖₂: what the rating is judged on.
    pub mean_relative_error: Option<f64>,
    pub max_relative_error: Option<f64>,
    pub weight_bytes_float32: usize,
    /// Codes, scales and minimums, as the kernel reads them.
    pub weight_bytes_quantized: usize,
    /// 1 − quantized / float32.
    pub memory_saved: Option<f64>,
    pub measured_rating: Option<Rating>,
    pub expected_rating: Option<Rating>,
    /// The mean relative errors the expected rating stands for, (above, up to).
    #[serde(default, deserialize_with = "crate::float::open_band")]
    pub expected_band: Option<(f64, f64)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LayerQuantization {
    pub name: String,
    pub role: LayerRole,
    pub kind: String,
    pub bits: u32,
    pub rows: usize,
    pub in_features: usize,
    pub out_features: usize,
    /// None where the float32 product is all zeros.
    pub relative_error: Option<f64>,
    /// The kernel's largest distance from the CPU's product of the same quantized weights, and the
    /// float32 rounding bound it must stay within.
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub kernel_max_abs_difference: f64,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub kernel_bound: f64,
}
