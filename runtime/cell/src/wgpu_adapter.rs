//! What the native WebGPU adapter is, as records and `gen doctor` state it:
//! plain data. Looking the adapter up is hwmatrix-platforms' (wgpu_adapter),
//! so this crate links no engine library.

use serde::{Deserialize, Serialize};

/// What the adapter is, as its records and `gen doctor` state it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AdapterReport {
    pub name: String,
    /// `vulkan` or `gl`.
    pub backend: String,
    /// `cpu` for software rasterisers such as Mesa's lavapipe.
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
    pub shader_f16: bool,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroup_size_x: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub wgpu_version: String,
}

impl AdapterReport {
    /// One line: `llvmpipe (LLVM 15.0.6, 256 bits) (vulkan, cpu, shader-f16)`.
    pub fn summary(&self) -> String {
        let f16 = if self.shader_f16 {
            "shader-f16"
        } else {
            "no shader-f16"
        };
        format!(
            "{} ({}, {}, {f16}, max storage binding {} MiB)",
            self.name,
            self.backend,
            self.device_type,
            self.max_storage_buffer_binding_size >> 20
        )
    }
}
