//! libtorch through tch: the fixture's TorchScript export (`model.pt`, traced
//! by the exporter with the spec's outputs in order) on a torch device.
//!
//! The engine sits behind the runtime's `torch` cargo feature, since it links
//! libtorch (1 GB, from the exporter venv's torch 2.13.0, the version tch 0.26
//! requires). Without the feature it still compiles, and a cell that reaches
//! it fails saying how to build it in. Every tch call is a fallible `f_` one:
//! the others panic on device errors, and a check reports errors, never aborts.

use std::path::Path;

use crate::Platform;
use crate::error::CheckError;

use super::Session;

/// How to build the engine in, for messages.
pub const HOW_TO_ENABLE: &str = "build with the `torch` feature (`cargo test -p generated --features cpu,torch`), with torch 2.13.0's python first on PATH \
     (the exporter venv: `source ~/.cache/hwmatrix/venv/bin/activate`) and LIBTORCH_USE_PYTORCH=1, as `bash tests/run.sh` does";

/// Opens `model.pt` on `device` (hardware.yaml's `libtorch: {device}`) for `platform`.
pub fn open(
    platform: Platform,
    device: &str,
    model: &Path,
    outputs: &[&'static str],
) -> Result<Box<dyn Session>, CheckError> {
    #[cfg(feature = "torch")]
    {
        Ok(Box::new(imp::TorchSession::open(
            platform, device, model, outputs,
        )?))
    }
    #[cfg(not(feature = "torch"))]
    {
        let _ = (model, outputs);
        Err(CheckError::new(
            crate::error::ErrorKind::EngineNotBuilt,
            format!(
                "the libtorch engine (device {device}, platform {platform}) is not compiled into this runtime: {HOW_TO_ENABLE}"
            ),
        ))
    }
}

/// The libtorch this runtime is linked with: its folder, from the build.
pub fn linked_library() -> Option<&'static str> {
    option_env!("HWMATRIX_LIBTORCH_LIB")
}

/// The libtorch sessions run in, as records name it (`libtorch 2.13.0+cpu
/// (<folder>)`): read once per process (torch/version.py), not per session,
/// and known before a model opens.
pub fn library() -> String {
    static LIBRARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            let version = hwmatrix_platforms::libtorch::find()
                .map(|(_, v)| v)
                .unwrap_or_else(|_| "unknown version".into());
            format!(
                "libtorch {version} ({})",
                linked_library().unwrap_or("linked folder unknown")
            )
        })
        .clone()
}

/// What went wrong, from a libtorch message. Those carry a TorchScript
/// traceback and a C++ backtrace: the first line says where it failed ("The
/// following operation failed in the TorchScript interpreter"), and for the
/// interpreter's failures the cause is the last `SomethingError: ` line, far
/// below, after the traceback.
#[cfg(any(feature = "torch", test))]
fn root_cause(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    let is_error_line = |l: &&str| {
        l.split_once(": ")
            .is_some_and(|(head, _)| head.ends_with("Error") && !head.contains(char::is_whitespace))
    };
    match lines.rfind(is_error_line) {
        Some(cause) => format!("{first} … {cause}"),
        None => first.to_string(),
    }
}

#[cfg(feature = "torch")]
mod imp {
    use std::path::Path;

    use tch::{CModule, Device, IValue, Kind};

    use crate::Platform;
    use crate::engine::{Placement, Session, Threads};
    use crate::error::{CheckError, ErrorKind};
    use crate::placement::OpPlacement;
    use crate::tensor::{Data, Tensor, bf16, f16};

    pub struct TorchSession {
        module: CModule,
        device: Device,
        outputs: Vec<&'static str>,
        /// Devices the last run's outputs were on.
        output_devices: Vec<(String, Device)>,
    }

    fn error(kind: ErrorKind, what: &str, e: tch::TchError) -> CheckError {
        CheckError::new(
            kind,
            format!("{what}: {}", super::root_cause(&e.to_string())),
        )
    }

    /// Whether the linked libtorch is a ROCm (HIP) build, which reports AMD GPUs as `cuda`.
    fn is_hip_build() -> bool {
        super::linked_library()
            .is_some_and(|dir| hwmatrix_platforms::libtorch::is_hip(Path::new(dir)))
    }

    /// The torch device a platform's `device` names, or why this libtorch cannot give it.
    fn device_for(platform: Platform, device: &str) -> Result<Device, CheckError> {
        let unavailable = |why: String| CheckError::new(ErrorKind::PlatformAbsent, why);
        match device {
            "cpu" => Ok(Device::Cpu),
            "cuda" => {
                // A HIP build of torch calls AMD GPUs `cuda`: the platform says which vendor is meant.
                match (platform, is_hip_build()) {
                    (Platform::Rocm, false) => {
                        return Err(unavailable("the linked libtorch is a CUDA (NVIDIA) build, not a ROCm one: rocm cells need torch built for ROCm (its lib folder has libamdhip64.so)".into()));
                    }
                    (Platform::Cuda, true) => {
                        return Err(unavailable("the linked libtorch is a ROCm (HIP) build: it would run cuda cells on an AMD GPU; cuda cells need torch built for CUDA".into()));
                    }
                    _ => {}
                }
                if !tch::Cuda::is_available() {
                    return Err(unavailable(format!(
                        "libtorch sees no GPU (torch.cuda.is_available() is false: no driver or device, or torch built without {}); linked from {}",
                        if platform == Platform::Rocm { "ROCm" } else { "CUDA" },
                        super::linked_library().unwrap_or("an unknown folder")
                    )));
                }
                Ok(Device::Cuda(0))
            }
            "mps" if tch::utils::has_mps() => Ok(Device::Mps),
            "mps" => Err(unavailable("libtorch has no MPS device (needs an Apple Silicon Mac and a macOS build of torch)".into())),
            other => Err(CheckError::new(ErrorKind::ProviderRegistration, format!("hardware.yaml names libtorch device `{other}`; the engine knows cpu, cuda and mps"))),
        }
    }

    fn device_name(device: Device) -> &'static str {
        match device {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
            Device::Mps => "mps",
            Device::Vulkan => "vulkan",
        }
    }

    impl TorchSession {
        pub fn open(
            platform: Platform,
            device: &str,
            model: &Path,
            outputs: &[&'static str],
        ) -> Result<TorchSession, CheckError> {
            let device = device_for(platform, device)?;
            // One thread, as every ONNX Runtime session here: timings compare across engines and machines.
            static THREADS: std::sync::Once = std::sync::Once::new();
            THREADS.call_once(|| tch::set_num_threads(1));
            let mut module = CModule::load_on_device(model, device).map_err(|e| {
                error(
                    ErrorKind::ModelLoad,
                    &format!(
                        "libtorch cannot load {}",
                        hwmatrix_cell::paths::in_fixtures(model)
                    ),
                    e,
                )
            })?;
            module.f_set_eval().map_err(|e| {
                error(
                    ErrorKind::ModelLoad,
                    "libtorch cannot set the module to eval mode",
                    e,
                )
            })?;
            Ok(TorchSession {
                module,
                device,
                outputs: outputs.to_vec(),
                output_devices: Vec::new(),
            })
        }
    }

    fn to_torch(tensor: &Tensor, device: Device) -> Result<tch::Tensor, tch::TchError> {
        let shape: Vec<i64> = tensor.shape.iter().map(|&d| d as i64).collect();
        let flat = match &tensor.data {
            Data::Float32(v) => tch::Tensor::f_from_slice(v)?,
            Data::Float16(v) => tch::Tensor::f_from_slice(v)?,
            Data::Bfloat16(v) => tch::Tensor::f_from_slice(v)?,
            Data::Int64(v) => tch::Tensor::f_from_slice(v)?,
            Data::Int32(v) => tch::Tensor::f_from_slice(v)?,
            Data::Int8(v) => tch::Tensor::f_from_slice(v)?,
            Data::Uint8(v) => tch::Tensor::f_from_slice(v)?,
            Data::Bool(v) => tch::Tensor::f_from_slice(v)?,
        };
        flat.f_reshape(&shape)?.f_to_device(device)
    }

    fn from_torch(tensor: &tch::Tensor) -> Result<Tensor, String> {
        let host = tensor
            .f_to_device(Device::Cpu)
            .and_then(|t| t.f_contiguous())
            .map_err(|e| e.to_string())?;
        let shape: Vec<usize> = host.size().iter().map(|&d| d as usize).collect();
        let flat = host.f_reshape([-1]).map_err(|e| e.to_string())?;
        let data = match host.kind() {
            Kind::Float => Data::Float32(Vec::<f32>::try_from(&flat).map_err(|e| e.to_string())?),
            Kind::Half => Data::Float16(Vec::<f16>::try_from(&flat).map_err(|e| e.to_string())?),
            Kind::BFloat16 => {
                Data::Bfloat16(Vec::<bf16>::try_from(&flat).map_err(|e| e.to_string())?)
            }
            Kind::Int64 => Data::Int64(Vec::<i64>::try_from(&flat).map_err(|e| e.to_string())?),
            Kind::Int => Data::Int32(Vec::<i32>::try_from(&flat).map_err(|e| e.to_string())?),
            Kind::Int8 => Data::Int8(Vec::<i8>::try_from(&flat).map_err(|e| e.to_string())?),
            Kind::Uint8 => Data::Uint8(Vec::<u8>::try_from(&flat).map_err(|e| e.to_string())?),
            Kind::Bool => Data::Bool(Vec::<bool>::try_from(&flat).map_err(|e| e.to_string())?),
            other => {
                return Err(format!(
                    "element type {other:?}, which hwmatrix tensors do not hold"
                ));
            }
        };
        Ok(Tensor { shape, data })
    }

    /// The tensors of a module's result, in order: TorchScript returns the
    /// traced tuple (nested tuples and lists flatten in order).
    fn flatten(value: IValue, into: &mut Vec<tch::Tensor>) -> Result<(), String> {
        match value {
            IValue::Tensor(t) => into.push(t),
            IValue::Tuple(items) | IValue::GenericList(items) => {
                for item in items {
                    flatten(item, into)?;
                }
            }
            IValue::TensorList(items) => into.extend(items),
            other => {
                return Err(format!(
                    "the module returned a {other:?}-like value where tensors were expected"
                ));
            }
        }
        Ok(())
    }

    impl Session for TorchSession {
        fn run(
            &mut self,
            inputs: &[(String, Tensor)],
        ) -> Result<Vec<(String, Tensor)>, CheckError> {
            let args = inputs
                .iter()
                .map(|(name, t)| {
                    to_torch(t, self.device).map(IValue::Tensor).map_err(|e| {
                        error(
                            ErrorKind::RunFailed,
                            &format!("input {name} cannot go to {:?}", self.device),
                            e,
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let result = tch::no_grad(|| self.module.forward_is(&args))
                .map_err(|e| error(ErrorKind::RunFailed, "libtorch fails running model.pt", e))?;
            let mut tensors = Vec::new();
            flatten(result, &mut tensors)
                .map_err(|e| CheckError::new(ErrorKind::OutputMismatch, e))?;
            if tensors.len() != self.outputs.len() {
                return Err(CheckError::new(
                    ErrorKind::OutputMismatch,
                    format!(
                        "model.pt returns {} tensors, the spec declares {} outputs ({})",
                        tensors.len(),
                        self.outputs.len(),
                        self.outputs.join(", ")
                    ),
                ));
            }
            self.output_devices = self
                .outputs
                .iter()
                .zip(&tensors)
                .map(|(n, t)| (n.to_string(), t.device()))
                .collect();
            self.outputs
                .iter()
                .zip(&tensors)
                .map(|(name, t)| {
                    from_torch(t).map(|t| (name.to_string(), t)).map_err(|e| {
                        CheckError::new(ErrorKind::OutputMismatch, format!("output {name}: {e}"))
                    })
                })
                .collect()
        }

        /// libtorch has no per-operator account like ORT's profile; what it
        /// can show is where the weights live and where each output was
        /// computed. A module whose parameters or outputs sit on another
        /// device than the cell's did not run there.
        fn placement(&mut self) -> Result<Placement, CheckError> {
            let parameters = self.module.named_parameters().map_err(|e| {
                error(
                    ErrorKind::ProviderUnverified,
                    "libtorch cannot list the module's parameters",
                    e,
                )
            })?;
            let mut ops = Vec::new();
            let mut by_device: std::collections::BTreeMap<&'static str, usize> = Default::default();
            for (_, p) in &parameters {
                *by_device.entry(device_name(p.device())).or_default() += 1;
            }
            for (device, count) in by_device {
                ops.push(OpPlacement {
                    op: "parameter".into(),
                    provider: format!("libtorch:{device}"),
                    nodes: count,
                    kernel_us: 0,
                    exempt: None,
                });
            }
            for (name, device) in &self.output_devices {
                ops.push(OpPlacement {
                    op: format!("output {name}"),
                    provider: format!("libtorch:{}", device_name(*device)),
                    nodes: 1,
                    kernel_us: 0,
                    exempt: None,
                });
            }
            if self.output_devices.is_empty() {
                return Err(CheckError::new(
                    ErrorKind::ProviderUnverified,
                    "no run yet: nothing shows where libtorch computed",
                ));
            }
            Ok(Placement {
                ops,
                arena_held_bytes: None,
                arena_in_use_peak_bytes: None,
            })
        }

        fn library(&self) -> String {
            super::library()
        }

        fn threads(&self) -> Threads {
            Threads {
                intra_op: tch::get_num_threads().max(0) as usize,
                inter_op: tch::get_num_interop_threads().max(0) as usize,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::root_cause;

    #[test]
    fn root_cause_keeps_the_first_line_and_the_last_error_line() {
        let message = "The following operation failed in the TorchScript interpreter.\n\
            Traceback of TorchScript, serialized code (most recent call last):\n  File \"code/__torch__/export.py\", line 12, in forward\n\
            RuntimeError: inner frame\n\nTraceback of TorchScript, original code (most recent call last):\n\
            RuntimeError: The size of tensor a (8) must match the size of tensor b (13) at non-singleton dimension 1\n\
            Exception raised from infer_size_impl at aten/src/ATen/ExpandUtils.cpp:31 (most recent call first):\nframe #0: c10::Error::Error";
        assert_eq!(
            root_cause(message),
            "The following operation failed in the TorchScript interpreter. … RuntimeError: The size of tensor a (8) must match the size of tensor b (13) at non-singleton dimension 1"
        );
        assert_eq!(
            root_cause("Could not run 'aten::empty' with arguments from the 'CUDA' backend."),
            "Could not run 'aten::empty' with arguments from the 'CUDA' backend."
        );
    }
}
