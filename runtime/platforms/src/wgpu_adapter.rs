//! The native WebGPU adapter wgpu finds on this machine: the one the webgpu
//! cells' quantization kernels run on, and what `gen doctor` reports. One
//! lookup for both, so they never disagree; what the adapter is, records
//! carry as [`AdapterReport`] (plain data, in hwmatrix-cell).

pub use hwmatrix_cell::wgpu_adapter::AdapterReport;

/// Vulkan first (lavapipe in CI), then GL (llvmpipe); `WGPU_BACKEND` narrows it.
pub fn request() -> Result<(wgpu::Adapter, AdapterReport), String> {
    // Vulkan alone first: opening GL too costs an EGL probe (and its stderr noise) where Vulkan serves.
    let from_env = std::env::var_os("WGPU_BACKEND").is_some();
    let tries: &[wgpu::Backends] = if from_env {
        &[wgpu::Backends::empty()]
    } else {
        &[wgpu::Backends::VULKAN, wgpu::Backends::GL]
    };
    let mut errors = Vec::new();
    for backends in tries {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        if !from_env {
            descriptor.backends = *backends;
        }
        let instance = wgpu::Instance::new(descriptor);
        let options = wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        };
        match pollster::block_on(instance.request_adapter(&options)) {
            Ok(adapter) => return Ok(describe(adapter)),
            Err(e) => errors.push(format!("{backends:?}: {e}")),
        }
    }
    Err(format!(
        "no WebGPU adapter for wgpu ({}): install a Vulkan driver (Debian: `apt-get install mesa-vulkan-drivers libvulkan1` gives Mesa's lavapipe on any CPU; `bash tests/run.sh` does it as root) or a GL one",
        errors.join("; ")
    ))
}

fn describe(adapter: wgpu::Adapter) -> (wgpu::Adapter, AdapterReport) {
    let info = adapter.get_info();
    let limits = adapter.limits();
    let report = AdapterReport {
        name: info.name,
        backend: info.backend.to_str().to_string(),
        device_type: format!("{:?}", info.device_type).to_lowercase(),
        driver: info.driver,
        driver_info: info.driver_info,
        shader_f16: adapter.features().contains(wgpu::Features::SHADER_F16),
        max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
        max_buffer_size: limits.max_buffer_size,
        max_compute_workgroup_size_x: limits.max_compute_workgroup_size_x,
        max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
        wgpu_version: "30".into(),
    };
    (adapter, report)
}
