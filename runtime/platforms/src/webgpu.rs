//! ONNX Runtime's WebGPU provider, a plugin (`onnxruntime-ep-webgpu`, Dawn
//! inside): webgpu's native engine, beside the browser's.

use std::path::PathBuf;

use hwmatrix_cell::ExecutionProvider;

use crate::files::{first_existing, has_library};
use crate::onnxruntime::Plugin;
use crate::{Availability, Provider};

pub struct WebGpu;

/// A GPU's device files: where none exists, WebGPU (Dawn, or Chromium's)
/// runs on a software adapter.
pub const GPU_DEVICES: [&str; 2] = ["/dev/dri/renderD128", "/dev/nvidiactl"];

/// Whether this machine has no GPU device node, so WebGPU gets a software
/// Vulkan adapter (lavapipe, SwiftShader) at best.
pub fn software_adapter_only() -> bool {
    first_existing(&GPU_DEVICES).is_none()
}

impl Provider for WebGpu {
    fn own_needs(&self) -> Option<Availability> {
        Some(native())
    }

    /// GitHub's hosted runners have no GPU, so the plugin takes SwiftShader, the software
    /// Vulkan driver Debian's chromium ships, which it only does when allowed.
    fn hosted_runner_env(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (ALLOW_SOFTWARE_ADAPTER, "1"),
            ("VK_ICD_FILENAMES", SWIFTSHADER_ICD),
        ]
    }

    fn plugin(&self) -> Option<Plugin> {
        Some(Plugin {
            package: "onnxruntime_ep_webgpu",
            file: "libonnxruntime_providers_webgpu.so",
            wheel: "onnxruntime-ep-webgpu==0.4.0",
        })
    }
}

/// The variable that lets ONNX Runtime's WebGPU plugin take a software
/// adapter: without it the plugin offers no device where no GPU is.
pub const ALLOW_SOFTWARE_ADAPTER: &str = "ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER";

/// SwiftShader's Vulkan driver as Debian's chromium ships it: the software
/// adapter Dawn accepts.
pub const SWIFTSHADER_ICD: &str = "/usr/lib/chromium/vk_swiftshader_icd.json";

/// The variable naming the ICD file of Mesa 25's lavapipe as `tests/setup.sh`
/// unpacks it (`$HWMATRIX_CACHE/web/lavapipe/lvp_icd.json`): a software
/// adapter with shader-f16, which `tests/run.sh` gives the native engine.
pub const LAVAPIPE_ICD: &str = "HWMATRIX_LAVAPIPE_ICD";

/// The native WebGPU engine's pieces: the plugin, the Vulkan loader Dawn
/// opens, and a device. A GPU's Vulkan driver (`/dev/dri/renderD*`, or
/// NVIDIA's) is a device; without one, a software adapter only where the
/// user allowed it ([`ALLOW_SOFTWARE_ADAPTER`]) with a Vulkan driver Dawn
/// accepts, named by `VK_ICD_FILENAMES`: Mesa 25's lavapipe (which has
/// shader-f16; `tests/setup.sh web` unpacks it, [`LAVAPIPE_ICD`]), or
/// SwiftShader (Debian's chromium ships `vk_swiftshader_icd.json`; no
/// shader-f16). Debian 12's own lavapipe (Mesa 22.3) is rejected by Dawn
/// ("shaderUniform*ArrayDynamicIndexing"). What the adapter really is, the
/// engine reads from the plugin's device when it opens a session.
pub fn native() -> Availability {
    let plugin = match crate::plugin_library(ExecutionProvider::WebGpu)
        .expect("WebGPU is a plugin provider")
    {
        Ok(plugin) => plugin,
        Err(missing) => return Availability::Absent(missing),
    };
    if !has_library("libvulkan.so.1") {
        return Availability::Absent("no Vulkan loader (libvulkan.so.1), which ONNX Runtime's WebGPU plugin (Dawn) opens: install Debian's libvulkan1".into());
    }
    let gpu = first_existing(&GPU_DEVICES);
    let software = std::env::var_os(ALLOW_SOFTWARE_ADAPTER).is_some_and(|v| v == "1");
    let icd = std::env::var_os("VK_ICD_FILENAMES").map(PathBuf::from);
    match (gpu, software) {
        (Some(dev), _) => Availability::Present(format!(
            "ONNX Runtime's WebGPU plugin {} (GPU device {})",
            plugin.display(),
            dev.display()
        )),
        (None, true) => match icd {
            Some(icd) if icd.is_file() => Availability::Present(format!(
                "ONNX Runtime's WebGPU plugin {} on a software Vulkan adapter ({}{})",
                plugin.display(),
                icd.display(),
                unpacked_version(&icd)
                    .map(|v| format!(", mesa-vulkan-drivers {v}"))
                    .unwrap_or_default()
            )),
            Some(icd) => Availability::Absent(format!(
                "VK_ICD_FILENAMES names {}, which does not exist",
                icd.display()
            )),
            None => Availability::Absent(format!(
                "no GPU here (no /dev/dri/renderD128 or /dev/nvidiactl) and VK_ICD_FILENAMES names no software Vulkan driver: set it to Mesa 25's lavapipe (${LAVAPIPE_ICD}, from `bash tests/setup.sh web`; it has shader-f16) or SwiftShader's ({SWIFTSHADER_ICD} from Debian's chromium; no shader-f16), as tests/run.sh does"
            )),
        },
        (None, false) => Availability::Absent(format!(
            "no GPU here (no /dev/dri/renderD128 or /dev/nvidiactl); to run on a software adapter set {ALLOW_SOFTWARE_ADAPTER}=1 and VK_ICD_FILENAMES to Mesa 25's lavapipe (${LAVAPIPE_ICD}, from `bash tests/setup.sh web`) or {SWIFTSHADER_ICD}, as tests/run.sh does"
        )),
    }
}

/// The package version `tests/setup.sh` wrote beside a driver it unpacked
/// (`.version` next to lavapipe's ICD file), so that records say which Mesa ran.
fn unpacked_version(icd: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(icd.parent()?.join(".version")).ok()?;
    Some(text.trim().to_string()).filter(|v| !v.is_empty())
}
