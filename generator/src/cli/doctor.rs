//! `gen doctor`: for each platform, whether its cells can run on this machine
//! and, when not, exactly what is missing; with the library each would load
//! and the command that runs the platform's cells.
//!
//! Everything here is looked up, never loaded: the hardware by
//! [`hwmatrix_platforms::detect`] (the same probe a check runs before it
//! opens an engine, so doctor and tests never disagree), the ONNX Runtime
//! build by [`hwmatrix_platforms::onnxruntime_library`] (the one the
//! runtime loads) and its provider library beside it, for the engine the
//! planner gives the platform ([`hwmatrix_specs::plan::plan_platform`]). A platform is
//! usable when the hardware is there and that engine has what it needs.
//! One probe does load something: webgpu's quantization checks need a wgpu
//! adapter, and only asking wgpu for one tells whether the driver works
//! ([`hwmatrix_platforms::wgpu_adapter::request`], the runtime's own lookup).

use std::io::Write;
use std::path::Path;

use hwmatrix_cell::{BrowserApp, BrowserBackend, EngineKind, ExecutionProvider, Platform};
use hwmatrix_platforms::{self as platforms, Availability};

use hwmatrix_specs::spec::{EngineSpec, Specs};

use super::Context;

pub const ABOUT: &str = "\
Says, for each platform (all, or those given with --platform), whether its
cells can run on this machine: the hardware found (the same probe a check runs
before it opens an engine), the engine library it would load with its version
and path (for ONNX Runtime, the build with the platform's execution provider
and the provider library beside it), and otherwise exactly what is missing and
how to get it. Each platform ends with the command that runs its cells.

Nothing is loaded or run. Exit status 0 when every selected platform is
usable, 1 when one is not: `gen doctor --platform cpu --platform openvino`
checks a CI runner before its tests.";

/// Diagnoses the selected platforms (all when none is); exit 1 when one is not usable.
pub fn run(cx: &Context, out: &mut dyn Write) -> Result<i32, String> {
    let specs = cx.specs()?;
    let platforms = if cx.select.platform.is_empty() {
        Platform::ALL.to_vec()
    } else {
        cx.select.platform.clone()
    };
    let diagnoses: Vec<_> = platforms.into_iter().map(|p| diagnose(&specs, p)).collect();
    Ok(if report(&diagnoses, out) { 0 } else { 1 })
}

/// One platform's verdict.
pub struct Diagnosis {
    pub platform: Platform,
    /// Present pieces, each a line (device, library, version).
    pub found: Vec<String>,
    /// What is missing and how to get it; empty when the platform is usable.
    pub missing: Vec<String>,
    /// The command that runs the platform's cells.
    pub command: String,
    /// The generated crate's features its cells need.
    pub features: Vec<String>,
    /// Test-path filters under a model's module (`category::module::`), one per process:
    /// openvino's engines each load their own OpenVINO, so each runs alone.
    pub engine_filters: Vec<String>,
}

impl Diagnosis {
    pub fn usable(&self) -> bool {
        self.missing.is_empty()
    }

    /// The filters that run one model's cells on this platform, `module` being its
    /// `category::module::` path.
    pub fn filters(&self, module: &str) -> Vec<String> {
        self.engine_filters
            .iter()
            .map(|f| format!("{module}{}", f.trim_start_matches("::")))
            .collect()
    }
}

pub fn diagnose(specs: &Specs, platform: Platform) -> Diagnosis {
    let spec = &specs.hardware.platforms[&platform];
    let mut found = Vec::new();
    let mut missing = Vec::new();
    match platforms::detect(platform) {
        Availability::Present(what) => found.push(format!("hardware: {what}")),
        Availability::Absent(why) => missing.push(why),
    }
    if platform.computes_on_host_cpu() {
        cpu_class(specs, platform, &mut found, &mut missing);
    }
    // Each engine the planner gives the platform's cells: what it would load, or why it cannot.
    let planned = hwmatrix_specs::plan::plan_platform(specs, platform);
    let mut features = vec![spec.feature.clone()];
    for engine in &planned.engines {
        let name = engine.kind().module(platform);
        if let Some(reason) = planned.no_engine(engine) {
            missing.push(format!("{name}: {reason}"));
            continue;
        }
        let probe = match engine {
            EngineSpec::Onnxruntime { provider, .. } => {
                onnxruntime(*provider).and_then(|mut lines| {
                    // What the provider needs beyond the platform's hardware, where it needs more.
                    match platforms::provider(*provider).own_needs() {
                        Some(Availability::Present(what)) => lines.push(what),
                        Some(Availability::Absent(why)) => return Err(why),
                        None => {}
                    }
                    Ok(lines)
                })
            }
            EngineSpec::Libtorch { device } => libtorch(platform, device),
            EngineSpec::Browser {
                backend,
                device_type,
                app: BrowserApp::Chromium,
            } => browser(*backend, device_type.as_deref()),
            EngineSpec::Browser {
                app: BrowserApp::Firefox,
                ..
            } => firefox(),
            EngineSpec::Openvino { device, .. } => platforms::openvino::runtime(device),
            other => Err(format!(
                "engine {} has no doctor probe yet",
                other.kind().name()
            )),
        };
        match probe {
            Ok(lines) => found.extend(lines.into_iter().map(|l| format!("{name}: {l}"))),
            Err(why) => missing.push(format!("{name}: {why}")),
        }
        features.extend(engine.kind().cargo_feature().map(str::to_string));
    }
    // The quantization checks run on wgpu's adapter, found the same way the runtime finds it.
    if platform == specs.quantization.platform {
        match hwmatrix_platforms::wgpu_adapter::request() {
            Ok((_, adapter)) => found.push(format!(
                "wgpu (quantization checks): {}; driver {} {}; max buffer {} MiB, workgroup x {}",
                adapter.summary(),
                adapter.driver,
                adapter.driver_info,
                adapter.max_buffer_size >> 20,
                adapter.max_compute_workgroup_size_x
            )),
            Err(why) => missing.push(format!("wgpu (quantization checks): {why}")),
        }
    }
    // The runtime finds the platform's own ONNX Runtime library
    // (hwmatrix_platforms::onnxruntime_library); libtorch is linked at build time from
    // the venv's torch (LIBTORCH_USE_PYTORCH=1 with its python first on PATH).
    let run = |filter: String| {
        format!(
            "cargo test -p generated --features {} {filter}",
            features.join(",")
        )
    };
    // openvino's engines each load their own OpenVINO, one per process: a command per engine.
    let kinds: Vec<EngineKind> = planned.engines.iter().map(|e| e.kind()).collect();
    let engine_filters: Vec<String> = if kinds.contains(&EngineKind::Openvino) && kinds.len() > 1 {
        kinds
            .iter()
            .map(|k| format!("::{}::{}::", platform.name(), k.module(platform)))
            .collect()
    } else {
        vec![format!("::{}::", platform.name())]
    };
    let command = engine_filters
        .iter()
        .map(|f| run(f.clone()))
        .collect::<Vec<_>>()
        .join(", then ");
    Diagnosis {
        platform,
        found,
        missing,
        command,
        features,
        engine_filters,
    }
}

/// This machine's CPU class, and whether the evidence store was measured on
/// it. cpu's precision verdicts are per class (int8's kernels saturate
/// without VNNI), so a class the store never measured for cpu is missing: its
/// checks would be judged by another CPU's entries. openvino's store has no
/// class of its own yet on every class CI lands on, so there it is said, not failed.
fn cpu_class(
    specs: &Specs,
    platform: Platform,
    found: &mut Vec<String>,
    missing: &mut Vec<String>,
) {
    let here = hwmatrix_cell::CpuClass::here();
    let measured = hwmatrix_specs::spec::cpu_classes::read(&specs.root)
        .map(|file| file.measured(platform, &here.class).cloned());
    match measured {
        Ok(Some(class)) => found.push(format!(
            "cpu class: {}; the store's {platform} evidence of this class is run {} on {} ({})",
            here.describe(),
            class.run,
            class.host,
            class.date
        )),
        Ok(None) if platform == Platform::Cpu => missing.push(format!(
            "cpu class: {}: the evidence store has no cpu evidence measured on a CPU of this class ({}), so its precision checks would be judged by another class's verdicts (int8's kernels differ by class). Record this class on this machine: `gen measure --platform cpu`, then `gen`, and commit model-specs/evidence/ (a reviewed diff)",
            here.describe(),
            hwmatrix_specs::spec::cpu_classes::path(Path::new("model-specs")).display()
        )),
        Ok(None) => found.push(format!(
            "cpu class: {}: never measured for {platform} (its precision checks run and are this class's first measurements; `gen measure --platform {platform}` records them)",
            here.describe()
        )),
        Err(e) => missing.push(format!("cpu class: {e}")),
    }
}

/// What was found of the library a provider loads, or what is missing.
fn onnxruntime(provider: ExecutionProvider) -> Result<Vec<String>, String> {
    let library = platforms::onnxruntime_library(provider)?;
    if !library.is_file() {
        return Err(format!(
            "ONNX Runtime library {} does not exist (ORT_DYLIB_PATH?)",
            library.display()
        ));
    }
    let version = platforms::onnxruntime_version(&library).unwrap_or("unknown version");
    let mut lines = vec![format!("onnxruntime {version}: {}", library.display())];
    if let Some(name) = platforms::provider(provider).library() {
        let beside = library.parent().unwrap_or(Path::new(".")).join(name);
        if !beside.is_file() {
            let (venv, wheel) = platforms::provider(provider).build();
            return Err(format!(
                "{name} not found beside {} (that build has no {}): install the PyPI wheel `{wheel}` into {} or set ORT_DYLIB_PATH to a build that has it",
                library.display(),
                provider.ort_name(),
                venv.display()
            ));
        }
        lines.push(format!("{}: {}", provider.ort_name(), beside.display()));
    } else if let Some(plugin) = platforms::plugin_library(provider) {
        lines.push(format!(
            "{} (plugin, registered into that build): {}",
            provider.ort_name(),
            plugin?.display()
        ));
    } else if provider == ExecutionProvider::CoreMl && !cfg!(target_os = "macos") {
        return Err("CoreMLExecutionProvider exists only in macOS builds of ONNX Runtime".into());
    }
    Ok(lines)
}

/// What the browser engine would use: the backend's Chromium and onnxruntime-web.
/// Whether that Chromium really has a WebGPU adapter or a WebNN context is
/// for its cells to find out (they fail saying so).
fn browser(backend: BrowserBackend, device_type: Option<&str>) -> Result<Vec<String>, String> {
    let chromium = platforms::browser::browser_executable(backend)?;
    let ort = platforms::browser::onnxruntime_web_dist()?;
    let device = device_type
        .map(|d| format!(", deviceType {d}"))
        .unwrap_or_default();
    Ok(vec![
        format!(
            "Chromium {} ({}{device})",
            chromium.display(),
            backend.name()
        ),
        format!("onnxruntime-web {}", ort.display()),
    ])
}

/// What the Firefox engine would use: Firefox in its root and onnxruntime-web.
/// Whether it offers a WebGPU adapter is for its cells to find out.
fn firefox() -> Result<Vec<String>, String> {
    let (root, version) = platforms::browser::firefox()?;
    let ort = platforms::browser::onnxruntime_web_dist()?;
    Ok(vec![
        platforms::browser::describe_firefox(&version, &root),
        format!("onnxruntime-web {}", ort.display()),
    ])
}

/// What was found of libtorch (the exporter venv's torch, which the torch
/// feature links), or what is missing: a build without the GPU backend the
/// platform needs is missing, whatever the hardware. Whether the device is
/// really there is the hardware probe's, and the engine's at run time.
fn libtorch(platform: Platform, device: &str) -> Result<Vec<String>, String> {
    let (dir, version) = platforms::libtorch::find()?;
    let hip = platforms::libtorch::is_hip(&dir);
    match platform {
        Platform::Cuda if !dir.join("libtorch_cuda.so").is_file() || hip => {
            return Err(format!(
                "the venv's torch {version} is not a CUDA build (no libtorch_cuda.so in {}): cuda cells need torch built for CUDA",
                dir.display()
            ));
        }
        Platform::Rocm if !hip => {
            return Err(format!(
                "the venv's torch {version} is not a ROCm build (no libamdhip64.so in {}): rocm cells need torch built for ROCm",
                dir.display()
            ));
        }
        Platform::Mps if !cfg!(target_os = "macos") => {
            return Err(format!(
                "torch has MPS only on macOS; the venv's torch {version} is a {} build",
                std::env::consts::OS
            ));
        }
        _ => {}
    }
    Ok(vec![format!(
        "libtorch {version} (device {device}): {}",
        dir.display()
    )])
}

/// Writes the report; returns whether every diagnosed platform is usable.
pub fn report(diagnoses: &[Diagnosis], out: &mut dyn Write) -> bool {
    for d in diagnoses {
        let verdict = if d.usable() { "usable" } else { "unusable" };
        let _ = writeln!(out, "{:<9} {verdict}", d.platform.name());
        for line in &d.found {
            let _ = writeln!(out, "  found    {line}");
        }
        for line in &d.missing {
            let _ = writeln!(out, "  missing  {line}");
        }
        let _ = writeln!(out, "  run      {}", d.command);
    }
    let usable: Vec<&str> = diagnoses
        .iter()
        .filter(|d| d.usable())
        .map(|d| d.platform.name())
        .collect();
    let _ = writeln!(
        out,
        "\n{} of {} platforms usable here: {}",
        usable.len(),
        diagnoses.len(),
        if usable.is_empty() {
            "none".into()
        } else {
            usable.join(", ")
        }
    );
    usable.len() == diagnoses.len()
}
