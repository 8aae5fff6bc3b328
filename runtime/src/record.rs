//! Result records: one JSON line per check of a cell, run or not. Records
//! from many machines merge by concatenation; reports are computed from them
//! only. A failed check keeps everything it measured before it failed.

use std::io::Write;
use std::sync::Mutex;

use crate::paths;
use crate::{Basis, Cell};
use hwmatrix_cell::EngineKind;
/// Who and when, shared with gen (which stamps the evidence it writes alike).
pub use hwmatrix_cell::run::{host, now_rfc3339, run_id};
/// The record and its parts, defined once for writer and readers (runtime/record).
pub use hwmatrix_record::{
    DeviationRecord, FixtureRecord, LayerQuantization, Memory, Outcome, OutputDeviation,
    QuantizationRecord, Record, Timing, Worst,
};

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

/// A record of `cell`'s `check` with the identifying fields filled and nothing measured.
pub(crate) fn blank(cell: &Cell, check: &str) -> Record {
    Record {
        run_id: run_id().to_string(),
        time: now_rfc3339(),
        host: host(),
        model: cell.model.model_type.to_string(),
        component: cell.model.component.map(str::to_string),
        category: cell.model.category.to_string(),
        platform: cell.platform.platform,
        engine_kind: cell.engine.kind(),
        engine: cell.engine.describe(),
        check: check.to_string(),
        status: Outcome::Failed,
        basis: Basis::Measured,
        reason: None,
        error_kind: None,
        stage: None,
        providers: None,
        deviation: None,
        timing: None,
        untimed: None,
        memory: None,
        fixture: None,
        library: None,
        device: None,
        device_kind: None,
        cpu_class: cell
            .platform
            .platform
            .computes_on_host_cpu()
            .then(|| hwmatrix_cell::CpuClass::here().clone()),
        precision: "float32".into(),
        quantization: None,
        bench: None,
        generation: None,
        runtime_version: runtime_version(cell.engine.kind()),
        graph: paths::fixtures_graph(),
    }
}

/// A record of `cell`'s `check` with the identifying fields filled and nothing
/// measured, its precision the check's own (a format's or a quantization
/// scheme's, else float32).
pub(crate) fn blank_check(cell: &Cell, check: hwmatrix_cell::CheckId) -> Record {
    let precision = match (check.precision(), check.scheme()) {
        (Some(precision), _) => precision.name(),
        (None, Some(scheme)) => scheme.name(),
        (None, None) => "float32",
    };
    Record {
        precision: precision.into(),
        ..blank(cell, check.name())
    }
}

/// The runtime's version and the digest of the code that decided the
/// record's verdict on `engine` (runtime/verdict_code.rs, baked in by the
/// build script): `0.1.0 (verdict code 8c3f...)`. The evidence store keeps it;
/// an entry measured by other verdict code than today's is stale.
pub fn runtime_version(engine: EngineKind) -> String {
    let digest = match engine {
        EngineKind::Onnxruntime => env!("HWMATRIX_VERDICT_CODE_ONNXRUNTIME"),
        EngineKind::Libtorch => env!("HWMATRIX_VERDICT_CODE_LIBTORCH"),
        EngineKind::Openvino => env!("HWMATRIX_VERDICT_CODE_OPENVINO"),
        EngineKind::Wgpu => env!("HWMATRIX_VERDICT_CODE_WGPU"),
        EngineKind::Chromium => env!("HWMATRIX_VERDICT_CODE_BROWSER"),
        EngineKind::Firefox => env!("HWMATRIX_VERDICT_CODE_FIREFOX"),
        EngineKind::OpenvinoPytorch => env!("HWMATRIX_VERDICT_CODE_OPENVINO_PYTORCH"),
    };
    hwmatrix_cell::verdict_code::describe(env!("CARGO_PKG_VERSION"), digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the build script baked into records is what gen reads from the
    /// checkout as today's: an entry measured by this build is fresh.
    #[test]
    fn records_name_the_verdict_code_gen_reads_as_todays() {
        for engine in [
            EngineKind::Onnxruntime,
            EngineKind::Libtorch,
            EngineKind::Wgpu,
            EngineKind::Chromium,
            EngineKind::Openvino,
            EngineKind::Firefox,
            EngineKind::OpenvinoPytorch,
        ] {
            assert_eq!(
                Some(runtime_version(engine)),
                hwmatrix_cell::verdict_code::today(engine),
                "{engine:?}"
            );
        }
        assert_ne!(
            runtime_version(EngineKind::Onnxruntime),
            runtime_version(EngineKind::Libtorch),
            "each engine's adapter is its own"
        );
    }
}
