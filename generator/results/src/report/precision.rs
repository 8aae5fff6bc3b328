//! The precision checks' evidence: how far each format (int8, q4, qdq8...) strays from
//! float32 on each engine, from the records' agreement metrics.
//!
//! Two kinds of weights, never merged. On the tiny random models of our fixtures a
//! record is the deviation of that format on that engine, nothing more: random weights
//! cannot support or contradict a rating that trained weights earned. A record made on a
//! real checkpoint (`gen fixtures --checkpoint`, the fixture's `source` says which) is
//! rating evidence, shown beside what the spec's `web_quantization` rates the format.

use std::collections::BTreeMap;

use crate::LatestRecord;
use hwmatrix_record::Agreement;
use serde::Serialize;

use super::cells::is_kernel_engine;
use super::performance::median;
use super::status::{Counts, Status};
use hwmatrix_specs::plan::Plan;

/// One format on one engine of one platform, over the models of one kind of weights.
#[derive(Debug, Serialize)]
pub struct PrecisionRow {
    pub platform: String,
    pub engine: String,
    pub precision: String,
    /// `tiny random` or `checkpoint`.
    pub weights: String,
    pub counts: Counts,
    /// Over the records that measured (passed or failed with metrics): the median of each
    /// record's worst row cosine (the lowest over its outputs) and of its worst relative L2.
    pub median_worst_cosine: Option<f64>,
    pub median_rel_l2: Option<f64>,
}

/// A precision record made on a real checkpoint: evidence a rating can rest on.
#[derive(Debug, Serialize)]
pub struct CheckpointRecord {
    pub model: String,
    /// The fixture's source (`checkpoint:<folder or reference>`).
    pub checkpoint: String,
    pub platform: String,
    pub engine: String,
    pub precision: String,
    pub status: Status,
    pub worst_cosine: Option<f64>,
    pub rel_l2: Option<f64>,
    pub top1: Option<f64>,
    /// The check's error where it failed before any output (the engine refused the format).
    pub reason: Option<String>,
    /// What the spec's `web_quantization` rates this format on this platform, where it rates it.
    pub rating: Option<String>,
    pub record: String,
}

/// A figure as the report prints it: four decimals, or nothing where none was measured.
pub fn figure(value: Option<f64>) -> String {
    value.map(|v| format!("{v:.4}")).unwrap_or_default()
}

impl CheckpointRecord {
    /// What it measured (or the engine's error where the format was refused) and the spec's
    /// rating, as one phrase for both renderings of the report.
    pub fn measured(&self) -> String {
        let measured = match &self.reason {
            Some(reason) => hwmatrix_specs::text::shorten(reason, 200),
            None => format!(
                "worst-row cosine {}, relative L2 {}{}",
                figure(self.worst_cosine),
                figure(self.rel_l2),
                self.top1
                    .map(|t| format!(", top-1 {t:.3}"))
                    .unwrap_or_default()
            ),
        };
        let rating = self
            .rating
            .as_deref()
            .map(|r| format!("; the spec rates {r}"))
            .unwrap_or_default();
        format!("{measured}{rating}")
    }
}

/// One format of a real checkpoint on ONNX Runtime's CPU provider: what it saves (its
/// file) and costs (`gen bench --precision`), and what it keeps (its precision check),
/// from the records of the same fixture.
#[derive(Debug, Serialize)]
pub struct FormatRow {
    pub model: String,
    pub checkpoint: String,
    pub precision: String,
    pub file_bytes: Option<u64>,
    /// The weights `gen memory --checkpoint` computed for this format from the checkpoint's
    /// config (set by `gen report` from its cache), beside the file measured.
    pub computed_bytes: Option<u64>,
    /// Median latency here and through Python's onnxruntime (same graph, inputs, threads).
    pub median_ms: Option<f64>,
    pub python_ms: Option<f64>,
    pub worst_cosine: Option<f64>,
    pub rel_l2: Option<f64>,
    pub top1: Option<f64>,
    pub records: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct PrecisionEvidence {
    pub what: String,
    pub rows: Vec<PrecisionRow>,
    pub checkpoints: Vec<CheckpointRecord>,
    /// The formats of each real checkpoint side by side (the seeds' typed savings, measured).
    pub formats: Vec<FormatRow>,
}

/// The formats table: every cpu ONNX Runtime bench or precision record of a real
/// checkpoint's fixture, and the records of OpenVINO's own formats (NNCF's IR, which only
/// OpenVINO's runtime reads; `gen checkpoint` runs them on the same CPU), one row per
/// (model, checkpoint, format), float32 first.
fn formats(checkpoint_evidence: &[LatestRecord]) -> Vec<FormatRow> {
    let mut rows: BTreeMap<(String, String, usize, String), FormatRow> = BTreeMap::new();
    let openvino_ir = |name: &str| {
        hwmatrix_cell::Precision::ALL
            .into_iter()
            .any(|p| p.name() == name && p.is_openvino_ir())
    };
    for e in checkpoint_evidence.iter().filter(|e| {
        (e.platform == "cpu" && e.engine_kind == "onnxruntime") || openvino_ir(&e.precision)
    }) {
        let Some(checkpoint) = checkpoint_of(e) else {
            continue;
        };
        let is_bench = e.check == super::cells::BENCH;
        if !is_bench && e.precision == "float32" {
            continue;
        }
        let order = FORMAT_ORDER
            .iter()
            .position(|p| *p == e.precision)
            .unwrap_or(FORMAT_ORDER.len());
        let row = rows
            .entry((
                e.model.clone(),
                checkpoint.clone(),
                order,
                e.precision.clone(),
            ))
            .or_insert_with(|| FormatRow {
                model: e.model.clone(),
                checkpoint,
                precision: e.precision.clone(),
                file_bytes: None,
                computed_bytes: None,
                median_ms: None,
                python_ms: None,
                worst_cosine: None,
                rel_l2: None,
                top1: None,
                records: Vec::new(),
            });
        if let Some(bench) = e.body.bench.as_ref().filter(|_| is_bench) {
            row.file_bytes = bench.model_bytes;
            row.median_ms = Some(bench.latency.median_ms);
            row.python_ms = bench.python.as_ref().map(|p| p.latency.median_ms);
        } else {
            (row.worst_cosine, row.rel_l2, row.top1) = worst_agreement(e);
        }
        row.records.push(e.record.clone());
    }
    rows.into_values().collect()
}

/// The formats in the order the tables show them.
pub(super) const FORMAT_ORDER: [&str; 12] = [
    "float32",
    "fp16",
    "int8",
    "int8_avx2",
    "q4",
    "q4f16",
    "bnb4",
    "q2",
    "q2f16",
    "qdq8",
    "nncf_int8",
    "nncf_int4",
];

/// The formats table's cells, shared by both renderings: sizes in MB and against float32's file.
pub fn format_cells(rows: &[FormatRow]) -> (Vec<String>, Vec<Vec<String>>) {
    let head = [
        "model",
        "checkpoint",
        "format",
        "file",
        "computed weights",
        "vs float32",
        "cpu median ms",
        "Python ms",
        "worst-row cosine",
        "relative L2",
        "top-1",
    ]
    .map(String::from)
    .to_vec();
    let float32 = |row: &FormatRow| {
        rows.iter()
            .find(|r| {
                r.model == row.model && r.checkpoint == row.checkpoint && r.precision == "float32"
            })
            .and_then(|r| r.file_bytes)
    };
    let ms = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    let body = rows
        .iter()
        .map(|row| {
            vec![
                row.model.clone(),
                row.checkpoint.clone(),
                row.precision.clone(),
                row.file_bytes
                    .map(|b| format!("{:.1} MB", b as f64 / 1e6))
                    .unwrap_or_default(),
                match (row.computed_bytes, row.file_bytes) {
                    (Some(c), Some(f)) if f > 0 => format!(
                        "{:.1} MB ({:+.1}%)",
                        c as f64 / 1e6,
                        (c as f64 - f as f64) * 100.0 / f as f64
                    ),
                    (Some(c), _) => format!("{:.1} MB", c as f64 / 1e6),
                    _ => String::new(),
                },
                match (row.file_bytes, float32(row)) {
                    (Some(b), Some(f)) if f > 0 => format!("{:.0}%", b as f64 * 100.0 / f as f64),
                    _ => String::new(),
                },
                ms(row.median_ms),
                ms(row.python_ms),
                figure(row.worst_cosine),
                figure(row.rel_l2),
                row.top1.map(|t| format!("{t:.3}")).unwrap_or_default(),
            ]
        })
        .collect();
    (head, body)
}

const WHAT: &str = "Each precision check runs the fixture's variant in that format (made by the standard tool with its users' settings) on the platform's engine and compares it with the float32 reference: worst row cosine and relative L2 per output, top-1 for logits. On tiny random weights this is the deviation of the format on the engine, never a verdict on a spec's web_quantization rating; only records on a real checkpoint are rating evidence";

/// The fixture source of a record made on a real checkpoint.
fn checkpoint_of(e: &LatestRecord) -> Option<String> {
    e.body
        .fixture
        .as_ref()
        .map(|f| f.source.clone())
        .filter(|s| s.starts_with("checkpoint:"))
}

/// A record's worst figures over its outputs: (lowest worst-row cosine, highest relative L2, lowest top-1).
fn worst_agreement(e: &LatestRecord) -> (Option<f64>, Option<f64>, Option<f64>) {
    let agreements: Vec<Agreement> = e
        .body
        .deviation
        .iter()
        .flat_map(|d| &d.outputs)
        .filter_map(|o| o.agreement)
        .collect();
    let figure =
        |of: fn(&Agreement) -> Option<f64>| agreements.iter().filter_map(of).collect::<Vec<f64>>();
    let lowest = |v: Vec<f64>| v.into_iter().reduce(f64::min);
    (
        lowest(figure(|a| a.cosine_min)),
        figure(|a| Some(a.rel_l2)).into_iter().reduce(f64::max),
        lowest(figure(|a| a.top1)),
    )
}

/// The spec's `web_quantization` rating of the scheme a format is an instance of, on the platform.
fn rating(plan: &Plan, model: &str, platform: &str, precision: &str) -> Option<String> {
    use hwmatrix_cell::QuantScheme;
    let scheme = match precision {
        "fp16" => QuantScheme::Fp16,
        "int8" | "int8_avx2" | "qdq8" => QuantScheme::Int8,
        "q4" => QuantScheme::Int4,
        _ => return None,
    };
    let spec = &plan
        .models
        .iter()
        .find(|m| m.model.spec.model_type == model)?
        .model
        .spec;
    let platform = hwmatrix_cell::Platform::from_name(platform)?;
    spec.web_quantization
        .as_ref()?
        .rating(platform, scheme)
        .map(|q| {
            format!(
                "{} {}",
                scheme.name(),
                serde_json::to_value(q)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            )
        })
}

/// The precision rows of the report's records (`evidence`), and the real checkpoints' records
/// among `checkpoint_evidence` (every run's, where the report is of some runs only).
pub fn precision_evidence(
    plan: &Plan,
    evidence: &[LatestRecord],
    checkpoint_evidence: &[LatestRecord],
) -> PrecisionEvidence {
    let is_precision_check = |e: &&LatestRecord| {
        e.precision != "float32"
            && !is_kernel_engine(&e.engine_kind)
            && e.check != super::cells::BENCH
    };
    type Key = (String, String, String, String);
    let mut groups: BTreeMap<Key, (Counts, Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut checkpoints = Vec::new();
    for e in evidence.iter().filter(is_precision_check) {
        let weights = if checkpoint_of(e).is_some() {
            "checkpoint"
        } else {
            "tiny random"
        };
        let status = Status::of_record(e.status);
        let (cosine, rel_l2, _) = worst_agreement(e);
        let group = groups
            .entry((
                e.platform.clone(),
                e.engine_kind.clone(),
                e.precision.clone(),
                weights.to_string(),
            ))
            .or_default();
        group.0.add(status);
        if matches!(status, Status::Passed | Status::Failed) {
            group.1.extend(cosine);
            group.2.extend(rel_l2);
        }
    }
    for e in checkpoint_evidence.iter().filter(is_precision_check) {
        let status = Status::of_record(e.status);
        let (cosine, rel_l2, top1) = worst_agreement(e);
        if let Some(checkpoint) = checkpoint_of(e) {
            checkpoints.push(CheckpointRecord {
                model: e.model.clone(),
                checkpoint,
                platform: e.platform.clone(),
                engine: e.engine_kind.clone(),
                precision: e.precision.clone(),
                status,
                worst_cosine: cosine,
                rel_l2,
                top1,
                reason: e.body.reason.clone().filter(|_| cosine.is_none()),
                rating: rating(plan, &e.model, &e.platform, &e.precision),
                record: e.record.clone(),
            });
        }
    }
    let rows = groups
        .into_iter()
        .map(
            |((platform, engine, precision, weights), (counts, mut cosines, mut rel_l2s))| {
                PrecisionRow {
                    platform,
                    engine,
                    precision,
                    weights,
                    counts,
                    median_worst_cosine: (!cosines.is_empty()).then(|| median(&mut cosines)),
                    median_rel_l2: (!rel_l2s.is_empty()).then(|| median(&mut rel_l2s)),
                }
            },
        )
        .collect();
    PrecisionEvidence {
        what: WHAT.into(),
        rows,
        checkpoints,
        formats: formats(checkpoint_evidence),
    }
}
