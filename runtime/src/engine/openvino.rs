//! OpenVINO's own runtime, as optimum-intel's users run it (not ONNX Runtime's
//! OpenVINO provider): the `openvino` crate over `libopenvino_c`, loaded at run
//! time from PyPI's wheel ([`hwmatrix_platforms::openvino::runtime_library`]).
//! The fixture's ONNX graph is read by OpenVINO's ONNX frontend (what
//! `openvino.Core().read_model("model.onnx")` does) and compiled for one device;
//! where it ran is the compiled model's own account, `EXECUTION_DEVICES`.

use std::path::Path;

use openvino::{Core, DeviceType, ElementType, PropertyKey, RwPropertyKey, Shape};

use super::{Placement, Session, Threads};
use crate::error::{CheckError, ErrorKind};
use crate::placement::OpPlacement;
use crate::tensor::{Data, Tensor};

/// One inference thread and one stream, as every ONNX Runtime session here
/// runs, so that latencies compare engine to engine on the same CPU.
const THREADS: Threads = Threads {
    intra_op: 1,
    inter_op: 1,
};

/// The device properties every compile gets. float32 inference precision and
/// the accuracy execution mode: the CPU device otherwise computes in bf16 where
/// the CPU has AMX or AVX-512 BF16, and a float32 check must check float32.
const PROPERTIES: [(RwPropertyKey, &str); 4] = [
    (RwPropertyKey::InferenceNumThreads, "1"),
    (RwPropertyKey::NumStreams, "1"),
    (RwPropertyKey::HintInferencePrecision, "f32"),
    (RwPropertyKey::HintExecutionMode, "ACCURACY"),
];

/// Fields drop in order: the request, then the compiled model it belongs to, then the Core.
pub struct OpenVinoSession {
    device: &'static str,
    request: openvino::InferRequest,
    compiled: openvino::CompiledModel,
    /// Kept alive while the compiled model and its request are used.
    _core: Core,
    inputs: Vec<String>,
    outputs: Vec<String>,
    library: String,
    device_name: Option<String>,
    ran: bool,
}

fn failed(kind: ErrorKind, what: &str, e: impl std::fmt::Display) -> CheckError {
    CheckError::new(kind, format!("OpenVINO {what}: {e}"))
}

/// Opens `graph` (ONNX, or an IR's `.xml` with its `.bin` beside it) with OpenVINO's runtime on `device`.
pub fn open(device: &'static str, graph: &Path) -> Result<Box<dyn Session>, CheckError> {
    super::claim_openvino("OpenVINO's runtime (PyPI openvino)")?;
    let library = loaded_library()?;
    let mut core = Core::new().map_err(|e| failed(ErrorKind::LibraryMissing, "core", e))?;
    let target = DeviceType::from(device);
    let available = core
        .available_devices()
        .map_err(|e| failed(ErrorKind::PlatformAbsent, "device list", e))?;
    if !available.iter().any(|d| <&str>::from(d) == device) {
        let names: Vec<&str> = available.iter().map(<&str>::from).collect();
        return Err(CheckError::new(
            ErrorKind::PlatformAbsent,
            format!("OpenVINO has no {device} device here (it has {names:?})"),
        ));
    }
    for (key, value) in PROPERTIES {
        core.set_property(&target, &key, value)
            .map_err(|e| failed(ErrorKind::ModelLoad, &format!("setting {value}"), e))?;
    }
    let path = graph.to_string_lossy();
    let model = core.read_model_from_file(&path, "").map_err(|e| {
        failed(
            ErrorKind::ModelLoad,
            &format!("reading {}", graph.display()),
            e,
        )
    })?;
    // The graph's own names, read before compiling: a compiled port can carry several tensor
    // names after OpenVINO merges nodes (fun_asr_nano_encoder's input_features is also
    // `/model/Cast_output_0`), and its `any_name` may be the other one.
    let names =
        |count: usize, port: &dyn Fn(usize) -> Result<openvino::Node, openvino::InferenceError>| {
            (0..count)
                .map(|i| port(i).and_then(port_name))
                .collect::<Result<Vec<String>, openvino::InferenceError>>()
        };
    let inputs = model
        .get_inputs_len()
        .and_then(|n| names(n, &|i| model.get_input_by_index(i)))
        .map_err(|e| failed(ErrorKind::ModelLoad, "listing inputs", e))?;
    let outputs = model
        .get_outputs_len()
        .and_then(|n| names(n, &|i| model.get_output_by_index(i)))
        .map_err(|e| failed(ErrorKind::ModelLoad, "listing outputs", e))?;
    let mut compiled = core
        .compile_model(&model, target)
        .map_err(|e| failed(ErrorKind::ModelLoad, &format!("compiling for {device}"), e))?;
    let request = compiled
        .create_infer_request()
        .map_err(|e| failed(ErrorKind::ModelLoad, "creating a request", e))?;
    let device_name = core
        .get_property(&DeviceType::from(device), &PropertyKey::DeviceFullName)
        .ok();
    Ok(Box::new(OpenVinoSession {
        device,
        request,
        compiled,
        _core: core,
        inputs,
        outputs,
        library: library.clone(),
        device_name,
        ran: false,
    }))
}

/// The OpenVINO sessions run in, as records name it, without a session: for a check
/// whose model OpenVINO could not read or compile.
pub fn library_of() -> Option<String> {
    loaded_library().ok().cloned()
}

/// Loads OpenVINO's C library once per process (found by a scan of its venv) and says which
/// it is, for records: `OpenVINO 2026.4.1 (<path>)`.
fn loaded_library() -> Result<&'static String, CheckError> {
    static LOADED: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let library = hwmatrix_platforms::openvino::runtime_library()?;
            openvino_sys::library::load_from(&library)
                .map_err(|e| format!("cannot load OpenVINO from {}: {e}", library.display()))?;
            Ok(format!(
                "OpenVINO {} ({})",
                hwmatrix_platforms::openvino::runtime_version().unwrap_or_else(|| "?".into()),
                library.display()
            ))
        })
        .as_ref()
        .map_err(|m| CheckError::new(ErrorKind::LibraryMissing, m.clone()))
}

/// A port's tensor name, with the port freed. The crate's `Node` (openvino 0.11.1, pinned) has
/// no Drop, and a port holds its node: an output's holds the node computing it and so the
/// whole graph with its weights. Leaked, they kept every model a process read: 16,117 memory
/// mappings and 1.9 GB after 550 checks, and OpenVINO aborted a process near Linux's limit of
/// 65,530 ("Xbyak::Error: err munmap").
fn port_name(port: openvino::Node) -> Result<String, openvino::InferenceError> {
    type Port = *mut openvino_sys::ov_output_const_port_t;
    // `Node` is the crate's wrapper of exactly this pointer (its one field).
    const _: () = assert!(std::mem::size_of::<openvino::Node>() == std::mem::size_of::<Port>());
    let name = port.get_name();
    // SAFETY: the pointer came from ov_model_const_input/output_by_index (the crate's
    // `get_*_by_index`); it is freed once, here, and `port` is consumed.
    unsafe {
        let raw: Port = std::mem::transmute::<openvino::Node, Port>(port);
        openvino_sys::ov_output_const_port_free(raw);
    }
    name
}

fn element_type(data: &Data) -> ElementType {
    match data {
        Data::Float32(_) => ElementType::F32,
        Data::Float16(_) => ElementType::F16,
        Data::Bfloat16(_) => ElementType::Bf16,
        Data::Int64(_) => ElementType::I64,
        Data::Int32(_) => ElementType::I32,
        Data::Int8(_) => ElementType::I8,
        Data::Uint8(_) => ElementType::U8,
        Data::Bool(_) => ElementType::Boolean,
    }
}

/// The tensor's elements as bytes in this machine's order (OpenVINO's layout).
fn bytes(data: &Data) -> Vec<u8> {
    match data {
        Data::Float32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Data::Float16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Data::Bfloat16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Data::Int64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Data::Int32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Data::Int8(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Data::Uint8(v) => v.clone(),
        Data::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
    }
}

fn from_bytes(element: ElementType, raw: &[u8]) -> Result<Data, String> {
    fn chunks<const N: usize, T>(raw: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        raw.chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks of N")))
            .collect()
    }
    Ok(match element {
        ElementType::F32 => Data::Float32(chunks(raw, f32::from_ne_bytes)),
        ElementType::F16 => Data::Float16(chunks(raw, half::f16::from_ne_bytes)),
        ElementType::Bf16 => Data::Bfloat16(chunks(raw, half::bf16::from_ne_bytes)),
        ElementType::I64 => Data::Int64(chunks(raw, i64::from_ne_bytes)),
        ElementType::I32 => Data::Int32(chunks(raw, i32::from_ne_bytes)),
        ElementType::I8 => Data::Int8(chunks(raw, i8::from_ne_bytes)),
        ElementType::U8 => Data::Uint8(raw.to_vec()),
        ElementType::Boolean => Data::Bool(raw.iter().map(|&b| b != 0).collect()),
        other => return Err(format!("an output of element type {other:?}")),
    })
}

impl Session for OpenVinoSession {
    fn run(&mut self, inputs: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>, CheckError> {
        for (name, t) in inputs {
            // An input the graph dropped (an exporter removes one the model never read).
            if !self.inputs.contains(name) {
                continue;
            }
            let dims: Vec<i64> = t.shape.iter().map(|&d| d as i64).collect();
            let shape = Shape::new(&dims)
                .map_err(|e| failed(ErrorKind::RunFailed, &format!("shape of {name}"), e))?;
            let mut tensor = openvino::Tensor::new(element_type(&t.data), &shape)
                .map_err(|e| failed(ErrorKind::RunFailed, &format!("tensor {name}"), e))?;
            let raw = bytes(&t.data);
            // A zero-size tensor has no buffer: the crate's slice over it would be a null pointer.
            if !raw.is_empty() {
                tensor
                    .get_raw_data_mut()
                    .map_err(|e| failed(ErrorKind::RunFailed, &format!("tensor {name}"), e))?
                    .copy_from_slice(&raw);
            }
            self.request
                .set_tensor(name, &tensor)
                .map_err(|e| failed(ErrorKind::RunFailed, &format!("feeding {name}"), e))?;
        }
        self.request
            .infer()
            .map_err(|e| failed(ErrorKind::RunFailed, "running the model", e))?;
        self.ran = true;
        self.outputs
            .iter()
            .map(|name| {
                let fail = |e: String| failed(ErrorKind::RunFailed, &format!("output {name}"), e);
                let tensor = self
                    .request
                    .get_tensor(name)
                    .map_err(|e| fail(e.to_string()))?;
                let element = tensor.get_element_type().map_err(|e| fail(e.to_string()))?;
                let shape = tensor.get_shape().map_err(|e| fail(e.to_string()))?;
                let size = tensor.get_byte_size().map_err(|e| fail(e.to_string()))?;
                // A zero-size output has no buffer (see the inputs above).
                let raw = match size {
                    0 => &[][..],
                    _ => tensor.get_raw_data().map_err(|e| fail(e.to_string()))?,
                };
                Ok((
                    name.clone(),
                    Tensor {
                        shape: shape.get_dimensions().iter().map(|&d| d as usize).collect(),
                        data: from_bytes(element, raw).map_err(fail)?,
                    },
                ))
            })
            .collect()
    }

    /// The devices the compiled model executed on, as OpenVINO reports them
    /// (`EXECUTION_DEVICES`: `CPU`; `AUTO` would name where it put the model).
    fn placement(&mut self) -> Result<Placement, CheckError> {
        if !self.ran {
            return Err(CheckError::new(
                ErrorKind::ProviderUnverified,
                "no run yet: nothing shows where OpenVINO computed",
            ));
        }
        let devices = self
            .compiled
            .get_property(&PropertyKey::Other("EXECUTION_DEVICES".into()))
            .map_err(|e| failed(ErrorKind::ProviderUnverified, "EXECUTION_DEVICES", e))?;
        let ops = devices
            .split([',', ' '])
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| OpPlacement {
                op: "compiled model".into(),
                provider: format!("openvino:{d}"),
                nodes: 1,
                kernel_us: 0,
                exempt: None,
            })
            .collect::<Vec<_>>();
        if ops.is_empty() {
            return Err(CheckError::new(
                ErrorKind::ProviderUnverified,
                format!(
                    "OpenVINO names no execution device for a model compiled for {} ({devices:?})",
                    self.device
                ),
            ));
        }
        Ok(Placement {
            ops,
            arena_held_bytes: None,
            arena_in_use_peak_bytes: None,
        })
    }

    fn library(&self) -> String {
        self.library.clone()
    }

    fn threads(&self) -> Threads {
        THREADS
    }

    fn device(&self) -> Option<String> {
        self.device_name.clone()
    }
}
