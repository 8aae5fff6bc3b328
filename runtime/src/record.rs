//! Result records: one JSON line per check of a cell, run or not. Records
//! from many machines merge by concatenation; reports are computed from them
//! only. A failed check keeps everything it measured before it failed.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::{Basis, EngineKind};
use crate::compare::Spread;
use crate::engine::Threads;
use crate::error::ErrorKind;
use crate::paths;
use crate::placement::ProviderEvidence;
use crate::Tolerance;

/// What happened to one check of one cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Passed,
    Failed,
    /// Not run: its platform's cargo feature is off.
    Ignored,
    /// Not run: the platform cannot run this model (see `basis`).
    Unsupported,
    /// Not run: expected to fail today (see `basis`).
    KnownIssue,
    /// Not run: our harness could not build or run the tiny PyTorch model
    /// (its `stage`), so no engine was ever tried. Our gap, not the model's.
    NotTested,
}

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

/// `HWMATRIX_RUN_ID`, else `<unix seconds>-<pid>` fixed for this process.
pub fn run_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| std::env::var("HWMATRIX_RUN_ID").unwrap_or_else(|_| format!("{}-{}", unix_seconds(), std::process::id())))
}

/// `HWMATRIX_HOST` (for a CI runner or container whose hostname says
/// nothing), else /etc/hostname, else `HOSTNAME`.
pub fn host() -> String {
    if let Some(host) = std::env::var("HWMATRIX_HOST").ok().filter(|h| !h.trim().is_empty()) {
        return host.trim().to_string();
    }
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
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

fn unix_seconds() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

pub fn now_rfc3339() -> String {
    rfc3339(unix_seconds())
}

/// Formats unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (Howard Hinnant's civil-from-days).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_314_896), "2026-11-22T02:34:56Z");
    }
}
