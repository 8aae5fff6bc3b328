//! ONNX Runtime through `ort`, loaded at run time from the library of a PyPI
//! wheel (`load-dynamic`: nothing is downloaded at build time).
//!
//! ORT silently falls back to its CPU provider when an execution provider
//! fails to register, and `is_available()` only means "compiled in". So every
//! provider is registered with `error_on_failure()`, and after a run the
//! session profile is read to see which provider executed the nodes.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use ort::ep;
use ort::session::Session as OrtSession;
use ort::value::{DynValue, Tensor as OrtTensor, TensorElementType, ValueType};

use crate::cell::ExecutionProvider;
use crate::paths;
use crate::tensor::{Data, Tensor};

/// The ONNX Runtime library to load: `ORT_DYLIB_PATH` (ort's own variable),
/// else the CPU library of the project venv's `onnxruntime` wheel.
pub fn library_path() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH") {
        return Ok(PathBuf::from(path));
    }
    let venv = paths::python();
    let lib_dir = venv.parent().and_then(Path::parent).map(|v| v.join("lib")).ok_or("bad HWMATRIX_PYTHON path")?;
    let found = std::fs::read_dir(&lib_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages/onnxruntime/capi"))
        .flat_map(|capi| std::fs::read_dir(capi).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so.")));
    found.ok_or_else(|| {
        format!(
            "no ONNX Runtime library: set ORT_DYLIB_PATH to a libonnxruntime.so, or install the onnxruntime wheel into the venv under {} (`bash tests/run.sh` does)",
            lib_dir.display()
        )
    })
}

/// One environment per process (`ort` can load one library per process), with the library it loaded.
fn environment() -> Result<(&'static ort::environment::Environment, &'static Path), String> {
    static ENV: OnceLock<Result<(ort::environment::Environment, PathBuf), String>> = OnceLock::new();
    let env = ENV.get_or_init(|| {
        let path = library_path()?;
        let builder = ort::init_from(&path).map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", path.display()))?;
        let env = builder.with_name("hwmatrix").build().map_err(|e| format!("ONNX Runtime environment: {e}"))?;
        Ok((env, path))
    });
    env.as_ref().map(|(env, path)| (env, path.as_path())).map_err(Clone::clone)
}

pub struct OnnxSession {
    session: OrtSession,
    provider: ExecutionProvider,
    library: String,
}

impl OnnxSession {
    pub fn open(provider: ExecutionProvider, model: &Path) -> Result<OnnxSession, String> {
        let (env, library) = environment()?;
        let library = library.display().to_string();
        let profile_dir = std::env::temp_dir().join(format!("hwmatrix-ort-profiles-{}", std::process::id()));
        std::fs::create_dir_all(&profile_dir).map_err(|e| format!("{}: {e}", profile_dir.display()))?;
        // ORT names a profile `<prefix>_<time in ms>.json`: a per-session counter
        // keeps sessions opened in the same millisecond (parallel tests) apart.
        static SESSIONS: AtomicUsize = AtomicUsize::new(0);
        let model_name = model.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or("model");
        let prefix = profile_dir.join(format!("{model_name}-{}", SESSIONS.fetch_add(1, Ordering::Relaxed)));
        let mut builder = OrtSession::builder(env)
            .map_err(|e| e.to_string())?
            .with_intra_threads(1)
            .map_err(|e| e.to_string())?
            .with_profiling(&prefix)
            .map_err(|e| e.to_string())?;
        if let Some(dispatch) = dispatch(provider) {
            let name = dispatch.name();
            builder = builder
                .with_execution_providers([dispatch.error_on_failure()])
                .map_err(|e| format!("{name} failed to register in {library} (no CPU fallback is allowed): {e}"))?;
        }
        let session = builder.commit_from_file(model).map_err(|e| format!("cannot load {}: {e}", model.display()))?;
        Ok(OnnxSession { session, provider, library })
    }
}

/// The strict registration of each provider; CPU needs none (it is always there).
fn dispatch(provider: ExecutionProvider) -> Option<ep::ExecutionProviderDispatch> {
    Some(match provider {
        ExecutionProvider::Cpu => return None,
        ExecutionProvider::Cuda => ep::CUDA::default().build(),
        ExecutionProvider::MiGraphX => ep::MIGraphX::default().build(),
        ExecutionProvider::CoreMl => ep::CoreML::default().build(),
        // Device `CPU` keeps float32; `AUTO:CPU` would lower precision.
        ExecutionProvider::OpenVino => ep::OpenVINO::default().with_device_type("CPU").build(),
        ExecutionProvider::Qnn => ep::QNN::default().build(),
    })
}

impl super::Session for OnnxSession {
    fn run(&mut self, inputs: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>, String> {
        let values: Vec<(String, DynValue)> = inputs
            .iter()
            .map(|(name, t)| to_ort(t).map(|v| (name.clone(), v)))
            .collect::<Result<_, _>>()?;
        let outputs = self.session.run(values).map_err(|e| format!("ONNX Runtime run failed: {e}"))?;
        outputs.iter().map(|(name, value)| from_ort(&value).map(|t| (name.to_string(), t))).collect()
    }

    fn verify_backend(&mut self) -> Result<String, String> {
        let profile = self.session.end_profiling().map_err(|e| format!("cannot end profiling: {e}"))?;
        let text = std::fs::read_to_string(&profile).map_err(|e| format!("cannot read ORT profile {profile}: {e}"))?;
        let _ = std::fs::remove_file(&profile);
        let counts = node_providers(&text)?;
        let expected = self.provider.ort_name();
        let total: usize = counts.iter().map(|(_, n)| n).sum();
        let on_expected = counts.iter().find(|(p, _)| p == expected).map(|(_, n)| *n).unwrap_or(0);
        let summary = counts.iter().map(|(p, n)| format!("{p}: {n}")).collect::<Vec<_>>().join(", ");
        if total == 0 {
            return Err("the ORT profile records no node executions, so the provider cannot be verified".into());
        }
        // CPU cells must run entirely on CPU; an accelerator cell must run real
        // work on its provider (ORT places shape ops on CPU by design).
        let ok = match self.provider {
            ExecutionProvider::Cpu => on_expected == total,
            _ => on_expected > 0,
        };
        if ok {
            Ok(format!("{expected} ran {on_expected} of {total} node executions ({summary})"))
        } else {
            Err(format!("{expected} ran {on_expected} of {total} node executions ({summary}): the model did not run on the requested provider"))
        }
    }

    fn library(&self) -> String {
        format!("onnxruntime ({})", self.library)
    }
}

/// (provider, node executions) from an ORT profile (Chrome trace JSON), sorted.
pub fn node_providers(profile_json: &str) -> Result<Vec<(String, usize)>, String> {
    let events: Vec<serde_json::Value> = serde_json::from_str(profile_json).map_err(|e| format!("ORT profile is not JSON: {e}"))?;
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for event in &events {
        if event.get("cat").and_then(|c| c.as_str()) != Some("Node") {
            continue;
        }
        if let Some(provider) = event.pointer("/args/provider").and_then(|p| p.as_str()) {
            *counts.entry(provider.to_string()).or_default() += 1;
        }
    }
    Ok(counts.into_iter().collect())
}

fn to_ort(tensor: &Tensor) -> Result<DynValue, String> {
    let shape: Vec<i64> = tensor.shape.iter().map(|&d| d as i64).collect();
    let value = match &tensor.data {
        Data::Float32(v) => OrtTensor::from_array((shape, v.clone())).map(|t| t.into_dyn()),
        Data::Int64(v) => OrtTensor::from_array((shape, v.clone())).map(|t| t.into_dyn()),
        Data::Int32(v) => OrtTensor::from_array((shape, v.clone())).map(|t| t.into_dyn()),
        Data::Bool(v) => OrtTensor::from_array((shape, v.clone())).map(|t| t.into_dyn()),
    };
    value.map_err(|e| format!("cannot build input tensor: {e}"))
}

fn from_ort(value: &ort::value::DynValueRef<'_>) -> Result<Tensor, String> {
    let ty = match value.dtype() {
        ValueType::Tensor { ty, .. } => *ty,
        other => return Err(format!("output is not a tensor but {other:?}")),
    };
    fn extract<T: ort::value::PrimitiveTensorElementType + Clone>(value: &ort::value::DynValueRef<'_>) -> Result<(Vec<usize>, Vec<T>), String> {
        let (shape, data) = value.try_extract_tensor::<T>().map_err(|e| e.to_string())?;
        Ok((shape.iter().map(|&d| d as usize).collect(), data.to_vec()))
    }
    let (shape, data) = match ty {
        TensorElementType::Float32 => extract::<f32>(value).map(|(s, d)| (s, Data::Float32(d)))?,
        TensorElementType::Int64 => extract::<i64>(value).map(|(s, d)| (s, Data::Int64(d)))?,
        TensorElementType::Int32 => extract::<i32>(value).map(|(s, d)| (s, Data::Int32(d)))?,
        TensorElementType::Bool => extract::<bool>(value).map(|(s, d)| (s, Data::Bool(d)))?,
        other => return Err(format!("output element type {other:?} is not one hwmatrix compares (float32, int64, int32, bool)")),
    };
    Ok(Tensor { shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_node_providers_from_a_profile() {
        let profile = r#"[
          {"cat":"Session","name":"model_run","args":{}},
          {"cat":"Node","name":"MatMul_kernel_time","args":{"provider":"CPUExecutionProvider"}},
          {"cat":"Node","name":"Add_kernel_time","args":{"provider":"CUDAExecutionProvider"}},
          {"cat":"Node","name":"Gelu_kernel_time","args":{"provider":"CUDAExecutionProvider"}}
        ]"#;
        assert_eq!(
            node_providers(profile).unwrap(),
            vec![("CPUExecutionProvider".to_string(), 1), ("CUDAExecutionProvider".to_string(), 2)]
        );
        assert!(node_providers("not json").is_err());
    }
}
