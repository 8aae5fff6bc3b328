//! Engines compared with one another: those that run the same kernels (their verdicts
//! must agree), the kernel engine's checks apart from model runs, and engines timed
//! against ONNX Runtime's CPU provider on the same CPU (hardware.yaml says which).

use super::cells::{MatrixCell, is_kernel_engine, kernel_engines};
use super::performance::{Performance, median};
use super::status::{Counts, Status};
use super::tables::{IssueGroup, issues};
use serde::Serialize;
use std::collections::BTreeMap;

/// Engines of one platform that run the same kernels, so their verdicts must agree
/// (hardware.yaml's `same_kernels`, by name): webgpu's browser engine and its native one,
/// onnxruntime-web in Chromium and in Firefox, openvino's ONNX Runtime provider and OpenVINO's
/// own runtime. Where they disagree, one of them (the wasm build, the browser's WebGPU or
/// adapter, the plugin, the provider build) is the finding, not the model.
pub(super) fn same_kernels(
    specs: &hwmatrix_specs::spec::Specs,
) -> Vec<(&'static str, [&'static str; 2])> {
    specs
        .hardware
        .platforms
        .iter()
        .flat_map(|(platform, spec)| {
            spec.same_kernels
                .iter()
                .map(|[a, b]| (platform.name(), [a.name(), b.name()]))
        })
        .collect()
}

/// A model both same-kernel engines measured, with different verdicts.
#[derive(Debug, Serialize)]
pub struct EngineDisagreement {
    pub model: String,
    pub platform: String,
    /// Each engine's status and first failing check's reason.
    pub engines: Vec<(String, Status, Option<String>)>,
}

/// The models whose same-kernel engines both have a verdict (passed, or failed: a failure
/// now or a known issue a measurement recorded; not ignored or not run) and disagree.
pub(super) fn engine_disagreements(
    cells: &[MatrixCell],
    same_kernels: &[(&str, [&str; 2])],
) -> Vec<EngineDisagreement> {
    let measured = |s: Status| matches!(s, Status::Passed | Status::Failed | Status::KnownIssue);
    let passed = |c: &MatrixCell| c.status == Status::Passed;
    let mut found = Vec::new();
    for &(platform, engines) in same_kernels {
        let mut by_model: BTreeMap<&str, Vec<&MatrixCell>> = BTreeMap::new();
        for cell in cells.iter().filter(|c| {
            c.platform == platform && engines.contains(&c.engine.as_str()) && measured(c.status)
        }) {
            by_model.entry(&cell.model).or_default().push(cell);
        }
        for (model, pair) in by_model {
            if pair.len() == 2 && passed(pair[0]) != passed(pair[1]) {
                found.push(EngineDisagreement {
                    model: model.to_string(),
                    platform: platform.to_string(),
                    engines: pair
                        .iter()
                        .map(|c| (c.engine.clone(), c.status, c.reason.clone()))
                        .collect(),
                });
            }
        }
    }
    found
}

#[derive(Debug, Serialize)]
pub struct KernelChecks {
    pub engine: String,
    pub what: String,
    pub counts: Counts,
    pub cells: Vec<MatrixCell>,
    pub issues: Vec<IssueGroup>,
}

impl KernelChecks {
    pub(super) fn of(cells: Vec<MatrixCell>) -> KernelChecks {
        let mut counts = Counts::default();
        cells.iter().for_each(|c| counts.add(c.status));
        KernelChecks {
            engine: kernel_engines(),
            what: "our WGSL quantization kernels (wgpu) on each model's sampled matrix-product layers, one check per scheme: evidence about the kernels on that adapter (do they compute the quantized product right?), not a run of the model; the specs' web_quantization ratings are not judged here (a tiny model's random weights cannot support or contradict them: only a real checkpoint's records can)".into(),
            counts,
            issues: issues(&cells),
            cells,
        }
    }
}

/// The cells that run the model, and the kernel checks apart.
pub(super) fn split_kernel_checks(cells: Vec<MatrixCell>) -> (Vec<MatrixCell>, KernelChecks) {
    let (kernel, model_runs): (Vec<MatrixCell>, Vec<MatrixCell>) =
        cells.into_iter().partition(|c| is_kernel_engine(&c.engine));
    (model_runs, KernelChecks::of(kernel))
}

/// A platform and one of its engines, by name: `("openvino", "openvino")`.
pub type PlatformEngine = (&'static str, &'static str);

/// Engines that run on the CPU of the machine that runs the cpu cells (hardware.yaml's
/// `compared_with_cpu`), each compared with ONNX Runtime's CPU provider there: (baseline
/// platform, engine), (platform, engine). The one performance comparison a machine without
/// the other platforms' hardware makes honestly.
pub(super) fn cpu_comparisons(
    specs: &hwmatrix_specs::spec::Specs,
) -> Vec<(PlatformEngine, PlatformEngine)> {
    let baseline = (
        hwmatrix_cell::Platform::Cpu.name(),
        hwmatrix_cell::EngineKind::Onnxruntime.name(),
    );
    specs
        .hardware
        .platforms
        .iter()
        .flat_map(|(platform, spec)| {
            spec.compared_with_cpu
                .iter()
                .map(move |k| (baseline, (platform.name(), k.name())))
        })
        .collect()
}

/// One model's latency on an engine over ONNX Runtime's CPU provider's: the same check (the
/// same fixture and inputs), the same conditions (threads, checks in flight, runs).
#[derive(Debug, Serialize)]
pub struct EngineRatio {
    pub model: String,
    pub check: String,
    /// `platform engine`, e.g. `cpu onnxruntime`.
    pub baseline: String,
    pub engine: String,
    pub baseline_ms: f64,
    pub engine_ms: f64,
    /// engine_ms / baseline_ms: below 1 the engine is faster.
    pub ratio: f64,
    pub conditions: String,
    pub records: [String; 2],
}

/// Every model timed by both engines of a CPU comparison under the same conditions; a pair
/// timed under different ones (another number of checks in flight) is no comparison.
pub(super) fn engine_ratios(
    performance: &[Performance],
    comparisons: &[(PlatformEngine, PlatformEngine)],
) -> Vec<EngineRatio> {
    let mut ratios = Vec::new();
    for &((base_platform, base_engine), (platform, engine)) in comparisons {
        for p in performance
            .iter()
            .filter(|p| p.platform == platform && p.engine == engine && !p.stands_in)
        {
            let baseline = performance.iter().find(|b| {
                b.platform == base_platform
                    && b.engine == base_engine
                    && b.model == p.model
                    && b.check == p.check
                    && b.conditions == p.conditions
            });
            if let Some(b) = baseline.filter(|b| b.median_ms > 0.0) {
                ratios.push(EngineRatio {
                    model: p.model.clone(),
                    check: p.check.clone(),
                    baseline: format!("{base_platform} {base_engine}"),
                    engine: format!("{platform} {engine}"),
                    baseline_ms: b.median_ms,
                    engine_ms: p.median_ms,
                    ratio: p.median_ms / b.median_ms,
                    conditions: p.conditions.clone(),
                    records: [b.record.clone(), p.record.clone()],
                });
            }
        }
    }
    ratios.sort_by(|a, b| (&a.engine, &a.model, &a.check).cmp(&(&b.engine, &b.model, &b.check)));
    ratios
}

/// Per compared engine: how many models, and the median of their ratios.
pub fn engine_ratio_summary(ratios: &[EngineRatio]) -> Vec<(String, String, usize, f64)> {
    let mut by_engine: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for r in ratios {
        by_engine
            .entry((&r.engine, &r.baseline))
            .or_default()
            .push(r.ratio);
    }
    by_engine
        .into_iter()
        .map(|((engine, baseline), mut values)| {
            (
                engine.to_string(),
                baseline.to_string(),
                values.len(),
                median(&mut values),
            )
        })
        .collect()
}
