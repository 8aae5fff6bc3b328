//! Result records: one JSON line per check of a cell, run or not. Records
//! from many machines merge by concatenation; reports are computed from them
//! only. A failed check keeps everything it measured before it failed.

use std::io::Write;
use std::sync::Mutex;

use serde::Serialize;

use crate::{Basis, EngineKind};
use crate::compare::Spread;
use crate::engine::Threads;
use crate::error::ErrorKind;
use crate::paths;
/// Who and when, shared with gen (which stamps the evidence it writes alike).
pub use hwmatrix_cell::run::{host, now_rfc3339, run_id};
use crate::placement::ProviderEvidence;
use crate::Tolerance;

pub use hwmatrix_cell::Outcome;

#[derive(Debug, Serialize)]
pub struct Record {
    pub run_id: String,
    /// UTC, RFC 3339.
    pub time: String,
    pub host: String,
    pub model: String,
    /// The component of the model this record checked (`vision`), where the
    /// model is checked as its components; a cell passes when all of them do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<&'static str>,
    pub category: String,
    pub platform: String,
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
    pub stage: Option<crate::Stage>,
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
    /// The `generates` check's steps: each step's error, and where it first diverged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<crate::generation::GenerationRecord>,
    /// The precision of the model the check ran: `float32`, or a variant's
    /// (`int8`); a quantization check's scheme (`int4_mixed`).
    pub precision: &'static str,
    /// A quantization check's measurements (webgpu cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantization: Option<QuantizationRecord>,
    /// A benchmark's measurements (`gen bench`): p90, throughput per batch, peak memory, Python's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<crate::bench::Bench>,
    pub runtime_version: &'static str,
}

#[derive(Debug, Serialize)]
pub struct DeviationRecord {
    /// float32 checks: the allclose tolerance. Where float32 is computed in a
    /// lower precision, each output's bound comes from `max_error_of_spread`
    /// (each output's `tolerance`); a precision check is judged by
    /// `agreement_bound` (its elementwise tolerance is 0: errors are evidence).
    pub tolerance: Tolerance,
    /// A precision check's bound on each float output's `agreement`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement_bound: Option<crate::AgreementBound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error_of_spread: Option<f64>,
    /// float32 checks on hardware that computes them in a lower precision: that
    /// precision and why (hardware.yaml `float32_computed_in`), hence `max_error_of_spread`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computed_in: Option<String>,
    /// The largest absolute and relative errors over all outputs.
    pub max_abs: f64,
    pub max_rel: f64,
    pub outputs: Vec<OutputDeviation>,
}

#[derive(Debug, Serialize)]
pub struct OutputDeviation {
    pub output: String,
    /// The tolerance this output was held to, where it is its own (precision checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
    pub elements: usize,
    pub violations: usize,
    pub max_abs: f64,
    pub max_rel: f64,
    /// The element furthest outside the tolerance, if any is.
    pub worst: Option<Worst>,
    /// How much the reference varies: a constant that would pass makes the check vacuous.
    pub reference: Spread,
    /// Cosine per row, relative L2 error and (for logits) top-1 agreement with the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<crate::compare::Agreement>,
    /// Where the check judged only the positions the attention mask keeps
    /// (precision variants, float32 computed in a lower precision): how many,
    /// and the padded positions' agreement, kept apart as evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged_positions: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padded_agreement: Option<crate::compare::Agreement>,
}

/// What a quantization check measured: each layer's error against float32
/// and the kernel's agreement with the CPU, and the weights' memory.
#[derive(Debug, Serialize)]
pub struct QuantizationRecord {
    pub scheme: crate::QuantScheme,
    pub group_size: u32,
    pub adapter: Option<crate::wgpu_adapter::AdapterReport>,
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
    pub measured_rating: Option<crate::Rating>,
    pub expected_rating: Option<crate::Rating>,
    /// The mean relative errors the expected rating stands for, (above, up to).
    pub expected_band: Option<(f64, f64)>,
}

#[derive(Debug, Serialize)]
pub struct LayerQuantization {
    pub name: String,
    pub role: crate::LayerRole,
    pub kind: String,
    pub bits: u32,
    pub rows: usize,
    pub in_features: usize,
    pub out_features: usize,
    /// None where the float32 product is all zeros.
    pub relative_error: Option<f64>,
    /// The kernel's largest distance from the CPU's product of the same quantized weights, and the
    /// float32 rounding bound it must stay within.
    pub kernel_max_abs_difference: f64,
    pub kernel_bound: f64,
}

#[derive(Debug, Serialize)]
pub struct Worst {
    pub index: usize,
    pub expected: f64,
    pub got: f64,
}

/// A latency and the conditions it was taken under. Test timings are
/// indications; `gen bench` is where latency is measured properly.
#[derive(Debug, Serialize)]
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
#[derive(Debug, Serialize)]
pub struct Memory {
    /// ORT's CPU arena: bytes held and peak bytes in use during the profiled run (from its profile).
    pub arena_held_bytes: Option<u64>,
    pub arena_in_use_peak_bytes: Option<u64>,
    /// Growth of the process's resident set from before the timed session was
    /// created to after its runs, with the session open (memory freed by
    /// earlier checks may be reused, so this can understate).
    pub rss_growth_kb_session_open: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct FixtureRecord {
    pub dir: String,
    pub source: String,
    pub cache_key: Option<String>,
}

/// Appends the record to `<results>/<host>.jsonl`. One `write` per line so
/// that parallel tests never interleave within a line.
pub fn append(record: &Record) -> Result<(), String> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = paths::results_dir()?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{}.jsonl", record.host));
    let mut line = serde_json::to_string(record).map_err(|e| e.to_string())?;
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The process's current resident set (VmRSS), in KiB.
pub fn rss_kb() -> Option<u64> {
    proc_status_kb("VmRSS:")
}

/// The process's peak resident set (VmHWM), in KiB.
pub fn peak_rss_kb() -> Option<u64> {
    proc_status_kb("VmHWM:")
}

fn proc_status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
