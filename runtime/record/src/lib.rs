//! The result record: one JSON line per check of a cell, run or not, and
//! every part of it. The runtime writes it, `gen results load` validates
//! it, and report, coverage, import and bench read its fields, all through
//! these types: what a record holds is defined once. Stages and error kinds
//! are enum values carried in the record, never recovered from its text.

mod bench;
mod deviation;
mod float;
mod generation;
mod newest;
mod placement;
mod quantization;

use serde::{Deserialize, Serialize};

pub use bench::{Bench, GenerationBench, GenerationPython, Latency, Python, Throughput};
pub use deviation::{Agreement, DeviationRecord, OutputDeviation, Spread, Worst};
pub use generation::{Divergence, GenerationRecord, NearTie, StepRecord};
pub use hwmatrix_cell::{Basis, CpuClass, EngineKind, ErrorKind, Outcome, Platform, Stage};
pub use newest::{deciding_component, recency};
pub use placement::{Fallback, ProviderEvidence, ProviderShare};
pub use quantization::{LayerQuantization, QuantizationRecord};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub run_id: String,
    /// UTC, RFC 3339.
    pub time: String,
    pub host: String,
    pub model: String,
    /// The component of the model this record checked (`vision`), where the
    /// model is checked as its components; a cell passes when all of them do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    pub category: String,
    pub platform: Platform,
    /// The engine (`onnxruntime`, `libtorch`...): with model and platform, the cell.
    pub engine_kind: EngineKind,
    /// The engine and its settings, e.g. `onnxruntime, CUDAExecutionProvider`.
    pub engine: String,
    pub check: String,
    pub status: Outcome,
    /// `measured` for checks that ran; otherwise where the status comes from.
    pub basis: Basis,
    pub reason: Option<String>,
    pub error_kind: Option<ErrorKind>,
    /// How far the cell got (`pass`, `fallback`, `mismatch`, `run`, `load`,
    /// `export`, or the harness's own `config` and `reference`); None where
    /// the check never reached the model (platform or feature absent).
    pub stage: Option<Stage>,
    /// Where the operators ran, from the engine's own account.
    pub providers: Option<ProviderEvidence>,
    /// The comparison with the reference, per output.
    pub deviation: Option<DeviationRecord>,
    pub timing: Option<Timing>,
    /// Why no latency was taken where the check would take one (a software
    /// adapter standing in for a GPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untimed: Option<String>,
    pub memory: Option<Memory>,
    pub fixture: Option<FixtureRecord>,
    pub library: Option<String>,
    /// The hardware the check found (presence's account): a device, or an
    /// emulator standing in for one (`QNN HTP emulator (x86_64)`), whose
    /// evidence reports keep apart from a device's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// What kind of device that is (hardware, an emulator, a software
    /// adapter); absent in records written before it was recorded, whose
    /// readers fall back on the device's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_kind: Option<hwmatrix_cell::DeviceKind>,
    /// The class of the CPU the check computed on (its kernel-deciding
    /// instruction-set features), on platforms that compute on the host's CPU
    /// (cpu, openvino); absent in records written before it was recorded, which
    /// `gen measure --cpu-flags` classes from their machine's flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_class: Option<hwmatrix_cell::CpuClass>,
    /// The `generates` check's steps: each step's error, and where it first diverged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<GenerationRecord>,
    /// The precision of the model the check ran: `float32`, or a variant's
    /// (`int8`); a quantization check's scheme (`int4_mixed`).
    pub precision: String,
    /// A quantization check's measurements (webgpu cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantization: Option<QuantizationRecord>,
    /// A benchmark's measurements (`gen bench`): p90, throughput per batch, peak memory, Python's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<Bench>,
    pub runtime_version: String,
    /// Whose graph the check ran where it is not ours: `optimum` for the fixtures `gen
    /// fixtures --graph optimum` builds (their root's graph.json says so). Such records are
    /// the graph's, not the cell's: the evidence store takes none, the report shows them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<String>,
}

impl Record {
    /// A line of a record file as a record: a JSON object that the record's own types read,
    /// so a field of the wrong type or a status no gen knows is refused with serde's account
    /// of where, never misread by a reader. The one reader of record lines (the results
    /// database's import and the evidence store's measurement both use it): records written
    /// before the engine_kind field name their engine only in `engine` ("onnxruntime,
    /// CPUExecutionProvider"), which fills it in. Those of "wgpu" were webgpu's whole-model
    /// cells before it had an engine; wgpu now runs only the quantization checks, so they
    /// describe no cell of today and are refused.
    pub fn from_line(line: &str) -> Result<Record, String> {
        use serde_json::Value;
        let mut value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
        let Some(object) = value.as_object_mut() else {
            return Err("not a JSON object".into());
        };
        if !object.contains_key("engine_kind") {
            let engine = object.get("engine").and_then(Value::as_str).unwrap_or("");
            let kind = if engine.starts_with("onnxruntime-web") {
                Some("browser")
            } else {
                ["onnxruntime", "libtorch"]
                    .into_iter()
                    .find(|k| engine.split(',').next().map(str::trim) == Some(*k))
            };
            match kind {
                Some(kind) => {
                    object.insert("engine_kind".into(), Value::String(kind.into()));
                }
                None if engine == "wgpu" => {
                    return Err("a record of webgpu's whole-model cell from before it had an engine (engine `wgpu`, no engine_kind)".into());
                }
                None => {}
            }
        }
        serde_json::from_value(value).map_err(|e| format!("not a record: {e}"))
    }

    /// What kind of device the check ran on: the record's own account, else
    /// (records written before it was recorded) read from the device's words,
    /// the one place that still reads them.
    pub fn device_kind(&self) -> Option<hwmatrix_cell::DeviceKind> {
        use hwmatrix_cell::DeviceKind;
        self.device_kind.or_else(|| {
            let device = self.device.as_deref()?.to_ascii_lowercase();
            let has = |words: &[&str]| words.iter().any(|w| device.contains(w));
            Some(if has(&["emulator"]) {
                DeviceKind::Emulator
            } else if has(&["swiftshader", "llvmpipe", "lavapipe", "fallback adapter"]) {
                DeviceKind::SoftwareAdapter
            } else {
                DeviceKind::Hardware
            })
        })
    }
}

/// A latency and the conditions it was taken under. Test timings are
/// indications; `gen bench` is where latency is measured properly.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
    pub warmup_runs: usize,
    /// Always false: timed sessions are opened without ORT's profiler.
    pub profiling: bool,
    pub threads: Threads,
    /// Other checks of this test process that were in progress during the
    /// timed runs (timed sections themselves never overlap; see `checks`).
    pub other_checks_in_flight: usize,
    /// `RUST_TEST_THREADS`, when set.
    pub test_threads: Option<String>,
    /// What else ran on the machine's cores, where the caller says so
    /// (`HWMATRIX_BESIDE`: tests/run.sh runs some test processes at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beside: Option<String>,
}

/// Memory that belongs to this check, named for what it is. The true peak of
/// one cell needs one cell per process, which is the benchmark's job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Memory {
    /// ORT's CPU arena: bytes held and peak bytes in use during the profiled run (from its profile).
    pub arena_held_bytes: Option<u64>,
    pub arena_in_use_peak_bytes: Option<u64>,
    /// Growth of the process's resident set from before the timed session was
    /// created to after its runs, with the session open (memory freed by
    /// earlier checks may be reused, so this can understate).
    pub rss_growth_kb_session_open: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FixtureRecord {
    pub dir: String,
    pub source: String,
    /// The build key (which build of the fixture it was).
    pub cache_key: Option<String>,
    /// The digest of the parts of the fixture the check read
    /// (hwmatrix_cell::content): what its evidence is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// The engine settings a timing was taken under, for records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Threads {
    pub intra_op: usize,
    pub inter_op: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record with its identity and nothing measured, its device as given.
    fn on(device: Option<&str>, kind: Option<&str>) -> Record {
        serde_json::from_value(serde_json::json!({
            "run_id": "r", "time": "t", "host": "h", "model": "bert", "category": "text_encoders",
            "platform": "qnn", "engine_kind": "onnxruntime", "engine": "e", "check": "runs",
            "status": "failed", "basis": "measured", "precision": "float32",
            "runtime_version": "0.1.0", "device": device, "device_kind": kind,
        }))
        .unwrap()
    }

    #[test]
    fn a_records_device_kind_wins_and_older_records_are_read_by_their_words() {
        use hwmatrix_cell::DeviceKind;
        // Recorded: the record's account, whatever its words say.
        assert_eq!(
            on(Some("QNN HTP emulator (x86_64)"), Some("hardware")).device_kind(),
            Some(DeviceKind::Hardware)
        );
        // Older records: an emulator, software adapters, hardware, by their words.
        assert_eq!(
            on(Some("QNN HTP emulator (x86_64)"), None).device_kind(),
            Some(DeviceKind::Emulator)
        );
        for adapter in [
            "SwiftShader Device (Subzero) (vulkan, cpu, no shader-f16)",
            "llvmpipe (LLVM 15.0.6, 256 bits)",
        ] {
            assert_eq!(
                on(Some(adapter), None).device_kind(),
                Some(DeviceKind::SoftwareAdapter)
            );
        }
        assert_eq!(
            on(Some("NVIDIA H100 80GB HBM3"), None).device_kind(),
            Some(DeviceKind::Hardware)
        );
        assert_eq!(on(None, None).device_kind(), None);
        assert!(DeviceKind::Emulator.stands_in() && !DeviceKind::Hardware.stands_in());
    }

    /// Reports and the database name statuses and kinds by `name()`; it must be
    /// what the record itself carries.
    /// What the runtime writes reads back: a non-finite error (written as
    /// null) stays non-finite, an open band stays open.
    #[test]
    fn non_finite_measurements_read_back() {
        let worst = Worst {
            index: 3,
            expected: 1.0,
            got: f64::NAN,
        };
        let back: Worst = serde_json::from_str(&serde_json::to_string(&worst).unwrap()).unwrap();
        assert!(back.got.is_nan() && back.expected == 1.0);
        let step = r#"{"step":0,"past_length":0,"max_abs":null,"max_rel":null,"violations":1,"top1_disagreements":0,"sizes":{}}"#;
        assert!(
            serde_json::from_str::<StepRecord>(step)
                .unwrap()
                .max_abs
                .is_nan()
        );
        let band = r#"{"scheme":"int4","group_size":32,"adapter":null,"layers_captured":null,"sampling":null,"layers":[],"mean_relative_error":null,"max_relative_error":null,"weight_bytes_float32":0,"weight_bytes_quantized":0,"memory_saved":null,"measured_rating":null,"expected_rating":null,"expected_band":[0.1,null]}"#;
        let quantization: QuantizationRecord = serde_json::from_str(band).unwrap();
        assert_eq!(quantization.expected_band, Some((0.1, f64::INFINITY)));
    }

    #[test]
    fn names_are_the_serialised_names() {
        for outcome in Outcome::ALL {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.name());
        }
        for kind in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }
}
