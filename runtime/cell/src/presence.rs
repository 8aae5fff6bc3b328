//! Whether a platform's hardware is present on this machine, and where its
//! engine libraries are, without loading any of them: the runtime asks before
//! a check runs (an absent platform fails with the message), `gen doctor`
//! asks for its report.
//!
//! Every platform compiles everywhere (candle's way); detection looks at what
//! the machine really has and says what is missing.

use std::path::{Path, PathBuf};

use crate::{BrowserBackend, Engine, ExecutionProvider, Platform, paths};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Present, with what was found.
    Present(String),
    /// Absent, with what is missing and how to get it.
    Absent(String),
}

/// Looks for the hardware and system pieces a platform needs, without loading
/// any engine. `Absent` names what is missing.
pub fn detect(platform: Platform) -> Availability {
    match platform {
        Platform::Cpu => Availability::Present("host CPU".into()),
        Platform::Cuda => first_existing(&["/dev/nvidiactl", "/dev/nvidia0"])
            .map(|dev| Availability::Present(format!("NVIDIA device {}", dev.display())))
            .unwrap_or_else(|| Availability::Absent("no NVIDIA GPU: /dev/nvidiactl and /dev/nvidia0 do not exist (is the driver loaded?)".into())),
        Platform::Rocm => first_existing(&["/dev/kfd"])
            .map(|_| Availability::Present("AMD ROCm device /dev/kfd".into()))
            .unwrap_or_else(|| Availability::Absent("no AMD GPU: /dev/kfd does not exist (is the amdgpu driver with ROCm loaded?)".into())),
        Platform::Mps => {
            if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
                Availability::Present("Apple Silicon (Metal)".into())
            } else {
                Availability::Absent(format!("MPS needs an Apple Silicon Mac; this is {}-{}", std::env::consts::OS, std::env::consts::ARCH))
            }
        }
        // OpenVINO's CPU device is any x86-64 CPU; what can be missing is the
        // onnxruntime-openvino library, which the engine reports when it loads.
        Platform::Openvino => {
            if cfg!(target_arch = "x86_64") {
                Availability::Present("x86-64 CPU for OpenVINO's CPU device".into())
            } else {
                Availability::Absent(format!("OpenVINO's CPU device needs x86-64, this is {}", std::env::consts::ARCH))
            }
        }
        // A Snapdragon's Hexagon NPU, else Qualcomm's HTP emulator: the x86-64
        // libQnnHtp.so of PyPI's onnxruntime-qnn runs the same graphs on the CPU.
        Platform::Qnn => match first_existing(&["/dev/fastrpc-cdsp", "/dev/adsprpc-smd", "/dev/fastrpc-adsp"]) {
            Some(dev) => Availability::Present(format!("Qualcomm DSP {}", dev.display())),
            None => match qnn_htp_emulator() {
                Ok(htp) => Availability::Present(format!("{QNN_HTP_EMULATOR}: {}", htp.display())),
                Err(why) => Availability::Absent(format!("no Qualcomm Hexagon NPU (none of /dev/fastrpc-cdsp, /dev/adsprpc-smd, /dev/fastrpc-adsp exists), and {why}")),
            },
        },
        Platform::Webnn => browser_presence(BrowserBackend::Webnn),
        Platform::Webgpu => browser_presence(BrowserBackend::Webgpu),
    }
}

/// Whether what one engine of a platform needs is here. Most engines need
/// only their platform's hardware ([`detect`]); webgpu's native engine (ONNX
/// Runtime's WebGPU plugin, [`native_webgpu`]) needs a Vulkan adapter that
/// Dawn accepts, not the browser.
pub fn detect_engine(platform: Platform, engine: &Engine) -> Availability {
    match engine {
        Engine::OnnxRuntime {
            provider: ExecutionProvider::WebGpu,
            ..
        } => native_webgpu(),
        _ => detect(platform),
    }
}

/// The variable that lets ONNX Runtime's WebGPU plugin take a software
/// adapter: without it the plugin offers no device where no GPU is.
pub const ALLOW_SOFTWARE_ADAPTER: &str = "ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER";

/// The native WebGPU engine's pieces: the plugin, the Vulkan loader Dawn
/// opens, and a device. A GPU's Vulkan driver (`/dev/dri/renderD*`, or
/// NVIDIA's) is a device; without one, a software adapter only where the
/// user allowed it ([`ALLOW_SOFTWARE_ADAPTER`]) with a Vulkan driver Dawn
/// accepts: SwiftShader (Debian's chromium ships `vk_swiftshader_icd.json`),
/// named by `VK_ICD_FILENAMES`; Mesa's lavapipe in Debian 12 is rejected by
/// Dawn ("shaderUniform*ArrayDynamicIndexing"). What the adapter really is,
/// the engine reads from the plugin's device when it opens a session.
pub fn native_webgpu() -> Availability {
    let plugin =
        match plugin_library(ExecutionProvider::WebGpu).expect("WebGPU is a plugin provider") {
            Ok(plugin) => plugin,
            Err(missing) => return Availability::Absent(missing),
        };
    if !has_library("libvulkan.so.1") {
        return Availability::Absent("no Vulkan loader (libvulkan.so.1), which ONNX Runtime's WebGPU plugin (Dawn) opens: install Debian's libvulkan1".into());
    }
    let gpu = first_existing(&["/dev/dri/renderD128", "/dev/nvidiactl"]);
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
                "ONNX Runtime's WebGPU plugin {} on a software Vulkan adapter ({})",
                plugin.display(),
                icd.display()
            )),
            Some(icd) => Availability::Absent(format!(
                "VK_ICD_FILENAMES names {}, which does not exist",
                icd.display()
            )),
            None => Availability::Absent(format!(
                "no GPU here (no /dev/dri/renderD128 or /dev/nvidiactl) and VK_ICD_FILENAMES names no software Vulkan driver: set it to SwiftShader's ({SWIFTSHADER_ICD} from Debian's chromium), as tests/run.sh does"
            )),
        },
        (None, false) => Availability::Absent(format!(
            "no GPU here (no /dev/dri/renderD128 or /dev/nvidiactl); to run on a software adapter set {ALLOW_SOFTWARE_ADAPTER}=1 and VK_ICD_FILENAMES={SWIFTSHADER_ICD}, as tests/run.sh does"
        )),
    }
}

/// SwiftShader's Vulkan driver as Debian's chromium ships it: the software
/// adapter Dawn accepts.
pub const SWIFTSHADER_ICD: &str = "/usr/lib/chromium/vk_swiftshader_icd.json";

fn has_library(name: &str) -> bool {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
    ]
    .iter()
    .any(|dir| Path::new(dir).join(name).exists())
}

/// What records and reports call evidence from Qualcomm's HTP emulator: not a
/// Snapdragon, so its timings mean nothing and its numerics are the emulator's.
pub const QNN_HTP_EMULATOR: &str = "QNN HTP emulator (x86_64)";

/// The HTP emulator of the plugin's wheel (`libQnnHtp.so` beside the plugin
/// library), on an x86-64 machine.
pub fn qnn_htp_emulator() -> Result<PathBuf, String> {
    if !cfg!(target_arch = "x86_64") {
        return Err(format!(
            "Qualcomm's HTP emulator is an x86-64 library; this is {}",
            std::env::consts::ARCH
        ));
    }
    let plugin = plugin_library(ExecutionProvider::Qnn).expect("QNN is a plugin provider")?;
    let htp = plugin.with_file_name("libQnnHtp.so");
    if htp.is_file() {
        Ok(htp)
    } else {
        Err(format!("no HTP emulator: {} does not exist", htp.display()))
    }
}

/// Whether a platform's hardware here is an emulator rather than the device.
pub fn emulated(platform: Platform) -> bool {
    matches!(detect(platform), Availability::Present(what) if what.starts_with(QNN_HTP_EMULATOR))
}

fn browser_presence(backend: BrowserBackend) -> Availability {
    match (browser_executable(backend), onnxruntime_web_dist()) {
        (Ok(chromium), Ok(_)) => Availability::Present(format!(
            "Chromium at {} with onnxruntime-web",
            chromium.display()
        )),
        (Err(missing), _) | (_, Err(missing)) => Availability::Absent(missing),
    }
}

/// The onnxruntime-web the browser cells load: its `dist/` folder in the
/// web platforms' npm install ([`paths::web_dir`]).
pub fn onnxruntime_web_dist() -> Result<PathBuf, String> {
    let dist = paths::web_dir().join("node_modules/onnxruntime-web/dist");
    let bundles = [
        BrowserBackend::Webgpu.ort_bundle(),
        BrowserBackend::Webnn.ort_bundle(),
    ];
    if bundles.iter().all(|bundle| dist.join(bundle).is_file()) {
        Ok(dist)
    } else {
        Err(format!(
            "no onnxruntime-web at {}: `bash tests/run.sh` installs it (npm ci from runtime/web/package.json into {}), or set HWMATRIX_WEB to a folder holding node_modules/onnxruntime-web",
            dist.display(),
            paths::web_dir().display()
        ))
    }
}

/// The Chromium a browser backend runs in. WebGPU: `HWMATRIX_CHROMIUM`, else
/// a `chromium` on PATH (Debian's package has WebGPU with
/// `--enable-unsafe-webgpu`). WebNN: Debian's build has none, so
/// `HWMATRIX_WEBNN_CHROMIUM`, else the npm package @sparticuz/chromium's
/// binary, unpacked by the set-up to `<web>/chromium-webnn/chromium`.
pub fn browser_executable(backend: BrowserBackend) -> Result<PathBuf, String> {
    match backend {
        BrowserBackend::Webgpu => find_chromium().ok_or_else(|| {
            "no Chromium for WebGPU: install Debian's `chromium` package (`bash tests/run.sh` does, as root on Debian) or set HWMATRIX_CHROMIUM to a Chromium with WebGPU".into()
        }),
        BrowserBackend::Webnn => {
            let path = std::env::var_os("HWMATRIX_WEBNN_CHROMIUM")
                .map(PathBuf::from)
                .unwrap_or_else(|| paths::web_dir().join("chromium-webnn/chromium"));
            if is_file(&path) {
                Ok(path)
            } else {
                Err(format!(
                    "no Chromium with WebNN at {}: `bash tests/run.sh` unpacks npm's @sparticuz/chromium@153.0.0 there, or set HWMATRIX_WEBNN_CHROMIUM to a Chromium with WebNN (Debian's has none)",
                    path.display()
                ))
            }
        }
    }
}

/// The ONNX Runtime library a platform's cells load. ONNX Runtime ships one
/// build per set of execution providers, each as its own PyPI wheel, and a
/// process can load only one: `ORT_DYLIB_PATH` (ort's own variable) wins for
/// every platform; else each provider's wheel in a venv of its own under the
/// cache ([`onnxruntime_venv`]: `venv-openvino` with `onnxruntime-openvino`,
/// `venv-gpu` with `onnxruntime-gpu`...), and for CPU (and CoreML, in the macOS
/// build) the exporter venv's `onnxruntime`.
pub fn onnxruntime_library(provider: ExecutionProvider) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH") {
        return Ok(PathBuf::from(path));
    }
    let (venv, wheel) = onnxruntime_venv(provider);
    let lib_dir = venv.join("lib");
    let found = std::fs::read_dir(&lib_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages/onnxruntime/capi"))
        .flat_map(|capi| std::fs::read_dir(capi).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libonnxruntime.so."))
        });
    found.ok_or_else(|| {
        format!(
            "no ONNX Runtime library for {}: install the PyPI wheel `{wheel}` into the venv {} (`bash tests/run.sh` installs the cpu and openvino ones), or set ORT_DYLIB_PATH to a libonnxruntime.so that has it",
            provider.ort_name(),
            venv.display()
        )
    })
}

/// The venv and PyPI wheel that hold a provider's ONNX Runtime build.
pub fn onnxruntime_venv(provider: ExecutionProvider) -> (PathBuf, &'static str) {
    match provider {
        ExecutionProvider::OpenVino => (
            paths::cache_dir().join("venv-openvino"),
            "onnxruntime-openvino",
        ),
        ExecutionProvider::Cuda | ExecutionProvider::TensorRt => {
            (paths::cache_dir().join("venv-gpu"), "onnxruntime-gpu")
        }
        ExecutionProvider::MiGraphX => (
            paths::cache_dir().join("venv-migraphx"),
            "onnxruntime-migraphx",
        ),
        _ => (
            paths::python()
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            "onnxruntime",
        ),
    }
}

/// The ONNX Runtime version in a library's file name (`libonnxruntime.so.1.31.1`).
pub fn onnxruntime_version(library: &Path) -> Option<&str> {
    library
        .file_name()?
        .to_str()?
        .strip_prefix("libonnxruntime.so.")
}

/// The shared library a provider needs beside `libonnxruntime.so` (CPU and
/// CoreML are compiled into it; QNN's wheel ships one like the others).
pub fn provider_library(provider: ExecutionProvider) -> Option<&'static str> {
    match provider {
        ExecutionProvider::Cpu | ExecutionProvider::CoreMl => None,
        ExecutionProvider::Cuda => Some("libonnxruntime_providers_cuda.so"),
        ExecutionProvider::TensorRt => Some("libonnxruntime_providers_tensorrt.so"),
        ExecutionProvider::MiGraphX => Some("libonnxruntime_providers_migraphx.so"),
        ExecutionProvider::OpenVino => Some("libonnxruntime_providers_openvino.so"),
        // Plugins registered at run time, not libraries of the build (plugin_library).
        ExecutionProvider::Qnn | ExecutionProvider::WebGpu => None,
    }
}

/// A provider shipped as a plugin execution provider (ONNX Runtime's EP ABI):
/// its own PyPI wheel holds the library, which the runtime registers into the
/// cpu build it already loaded (`Environment::register_ep_library`), so its
/// cells share a process with the cpu cells. QNN: `onnxruntime-qnn`; WebGPU:
/// `onnxruntime-ep-webgpu` (Dawn inside); both in the exporter venv
/// (runtime/exporter/requirements-plugins.txt). `None` for providers
/// compiled into their build.
pub fn plugin_library(provider: ExecutionProvider) -> Option<Result<PathBuf, String>> {
    let (package, file, wheel) = match provider {
        ExecutionProvider::Qnn => (
            "onnxruntime_qnn",
            "libonnxruntime_providers_qnn.so",
            "onnxruntime-qnn==2.7.0",
        ),
        ExecutionProvider::WebGpu => (
            "onnxruntime_ep_webgpu",
            "libonnxruntime_providers_webgpu.so",
            "onnxruntime-ep-webgpu==0.4.0",
        ),
        _ => return None,
    };
    let venv = paths::python()
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let found = std::fs::read_dir(venv.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages").join(package).join(file))
        .find(|p| p.is_file());
    Some(found.ok_or_else(|| {
        format!(
            "no {} plugin: install the PyPI wheel `{wheel}` into the venv {} (`bash tests/run.sh` installs it)",
            provider.ort_name(),
            venv.display()
        )
    }))
}

/// The libtorch of the exporter venv's torch (the one the `torch` feature
/// links with LIBTORCH_USE_PYTORCH=1), and its version from torch/version.py.
pub fn libtorch() -> Result<(PathBuf, String), String> {
    let venv = paths::python()
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let torch = std::fs::read_dir(venv.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages/torch"))
        .find(|t| t.join("lib/libtorch_cpu.so").is_file())
        .ok_or_else(|| format!("no libtorch: torch is not installed in the venv {} (`bash tests/run.sh` installs torch 2.13.0 there)", venv.display()))?;
    let version = std::fs::read_to_string(torch.join("version.py"))
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                l.strip_prefix("__version__ = ")
                    .map(|v| v.trim_matches(['\'', '"']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown version".into());
    Ok((torch.join("lib"), version))
}

/// Whether the libtorch in `lib_dir` is a ROCm (HIP) build. Such a build
/// calls AMD GPUs `cuda`, so the folder's libraries tell the vendors apart.
pub fn libtorch_is_hip(lib_dir: &Path) -> bool {
    lib_dir.join("libamdhip64.so").is_file() || lib_dir.join("libtorch_hip.so").is_file()
}

fn first_existing(paths: &[&str]) -> Option<PathBuf> {
    paths.iter().map(PathBuf::from).find(|p| p.exists())
}

/// `HWMATRIX_CHROMIUM`, else a chromium on PATH.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HWMATRIX_CHROMIUM") {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| {
            ["chromium", "chromium-browser", "google-chrome"].map(|name| dir.join(name))
        })
        .find(|candidate| is_file(candidate))
}

fn is_file(path: &Path) -> bool {
    path.metadata().map(|m| m.is_file()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_always_present() {
        assert!(matches!(detect(Platform::Cpu), Availability::Present(_)));
    }
}
