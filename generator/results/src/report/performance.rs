//! Latencies the runs measured, the fastest verified platform per category, and the
//! expectations the measurements contradict.

use super::cells::{MatrixCell, is_kernel_engine};
use super::status::Status;
use crate::LatestRecord;
use hwmatrix_record::Outcome;
use hwmatrix_record::Throughput;
use hwmatrix_specs::spec::Support;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub struct Performance {
    pub model: String,
    pub category: String,
    pub platform: String,
    pub engine: String,
    pub check: String,
    pub median_ms: f64,
    pub p90_ms: Option<f64>,
    /// Inferences per second at each batch size (bench records).
    pub throughput: Option<Vec<Throughput>>,
    pub rss_growth_kb: Option<i64>,
    pub peak_rss_kb: Option<u64>,
    /// Bench records: Rust's median over Python onnxruntime's on the same fixture and threads.
    pub rust_over_python: Option<f64>,
    /// What was running: threads, other checks in flight, test threads.
    pub conditions: String,
    /// The device or adapter it ran on, as the record found it.
    pub device: Option<String>,
    /// Whether that device stands in for hardware (an emulator, a software
    /// adapter): its timings are facts about the run, never a platform's speed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stands_in: bool,
    pub record: String,
}

#[derive(Debug, Serialize)]
pub struct Fastest {
    pub category: String,
    pub platform: String,
    pub engine: String,
    /// Median over the models of each model's median latency.
    pub median_ms: f64,
    pub models: usize,
}

#[derive(Debug, Serialize)]
pub struct Contradiction {
    pub architecture: String,
    pub platform: String,
    pub expected: Support,
    pub measured: String,
    pub cells: usize,
    pub models: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Recommendations {
    pub fastest_verified_platform: Vec<Fastest>,
    pub contradicted_expectations: Vec<Contradiction>,
}

pub(super) fn performance(evidence: &[LatestRecord]) -> Vec<Performance> {
    evidence
        .iter()
        .filter(|e| {
            e.status == Outcome::Passed
                && e.precision == "float32"
                && !is_kernel_engine(&e.engine_kind)
        })
        .filter_map(|e| {
            let timing = e.body.timing.as_ref()?;
            let bench = e.body.bench.as_ref();
            let threads = serde_json::to_string(&timing.threads).unwrap_or_default();
            Some(Performance {
                model: e.model.clone(),
                category: e.category.clone(),
                platform: e.platform.clone(),
                engine: e.engine_kind.clone(),
                check: e.check.clone(),
                median_ms: timing.median_ms,
                p90_ms: bench.map(|b| b.latency.p90_ms),
                throughput: bench.map(|b| b.throughput.clone()),
                rss_growth_kb: e
                    .body
                    .memory
                    .as_ref()
                    .and_then(|m| m.rss_growth_kb_session_open),
                peak_rss_kb: bench.and_then(|b| b.peak_rss_kb),
                rust_over_python: bench
                    .and_then(|b| b.python.as_ref())
                    .map(|p| p.rust_over_python),
                conditions: format!(
                    "threads {threads}, {} other checks in flight, {} runs",
                    timing.other_checks_in_flight, timing.runs
                ),
                device: e.body.device.clone(),
                stands_in: e.body.device_kind().is_some_and(|k| k.stands_in()),
                record: e.record.clone(),
            })
        })
        .collect()
}

pub(super) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Per category, the platform and engine with the lowest median latency over
/// the models that passed there (a latency counts only where the cell passed,
/// and never one taken on an emulator or a software adapter).
pub(super) fn fastest(cells: &[MatrixCell], performance: &[Performance]) -> Vec<Fastest> {
    let passed: std::collections::BTreeSet<(&str, &str, &str)> = cells
        .iter()
        .filter(|c| c.status == Status::Passed)
        .map(|c| (c.model.as_str(), c.platform.as_str(), c.engine.as_str()))
        .collect();
    let mut latencies: BTreeMap<(String, String, String), BTreeMap<String, f64>> = BTreeMap::new();
    let on_hardware = |p: &&Performance| !p.stands_in;
    for p in performance
        .iter()
        .filter(|p| passed.contains(&(p.model.as_str(), p.platform.as_str(), p.engine.as_str())))
        .filter(on_hardware)
    {
        let per_model = latencies
            .entry((p.category.clone(), p.platform.clone(), p.engine.clone()))
            .or_default();
        // A model's cell has several timed checks; its fastest is what the platform can do.
        let entry = per_model.entry(p.model.clone()).or_insert(f64::INFINITY);
        *entry = entry.min(p.median_ms);
    }
    let mut best: BTreeMap<String, Fastest> = BTreeMap::new();
    for ((category, platform, engine), per_model) in latencies {
        let mut values: Vec<f64> = per_model.values().copied().collect();
        let candidate = Fastest {
            category: category.clone(),
            platform,
            engine,
            median_ms: median(&mut values),
            models: values.len(),
        };
        if best
            .get(&category)
            .is_none_or(|b| candidate.median_ms < b.median_ms)
        {
            best.insert(category, candidate);
        }
    }
    best.into_values().collect()
}

pub(super) fn contradictions(cells: &[MatrixCell]) -> Vec<Contradiction> {
    let mut grouped: BTreeMap<(String, String, String), (Support, Vec<String>)> = BTreeMap::new();
    for cell in cells {
        if let (Some(what), Some(expected)) = (&cell.disagreement, cell.expected) {
            let entry = grouped
                .entry((
                    cell.architecture.clone(),
                    cell.platform.clone(),
                    what.clone(),
                ))
                .or_insert((expected, Vec::new()));
            entry.1.push(cell.model.clone());
        }
    }
    grouped
        .into_iter()
        .map(
            |((architecture, platform, measured), (expected, mut models))| {
                let cells = models.len();
                models.dedup();
                Contradiction {
                    architecture,
                    platform,
                    expected,
                    measured,
                    cells,
                    models,
                }
            },
        )
        .collect()
}
