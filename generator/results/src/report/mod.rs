//! `gen report`: the compatibility matrix and everything around it, computed
//! from the results database and the specs only.
//!
//! A cell is one model on one platform through one engine (as the plan
//! defines them). Its status is that of its newest records, one per check:
//! any failed check makes it failed; otherwise a known issue, unsupported or
//! ignored check says so; it is passed only when every check of it passed.
//! A cell without a record is "no evidence", never a pass. Every cell names
//! the records behind it (run, host, time), so every mark can be traced.

pub mod checkpoint_row;
pub mod compare;
pub mod coverage;
pub mod cpu_classes;
pub mod diff;
pub mod export;
pub mod generation;
pub mod greedy;
mod html;
mod markdown;
pub mod memory;
mod not_reached;
pub mod precision;
#[cfg(test)]
mod snapshots;
mod template;

use std::collections::BTreeMap;

use crate::{Database, Evidence};
use hwmatrix_record::{Basis, EngineKind, Outcome, Record, Throughput};
use serde::Serialize;

use hwmatrix_specs::plan::Plan;
use hwmatrix_specs::spec::Support;

pub use html::render as html;
pub use markdown::render as markdown;

/// A cell's status in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Failed,
    KnownIssue,
    /// Not tested here: our harness could not build or run the tiny PyTorch
    /// model, or this machine lacks what the check needs (a software adapter
    /// without shader-f16, an emulator, our time limit). Counted apart from
    /// the model's known issues.
    NotTested,
    /// Every check that ran passed, but some planned check has no record:
    /// never a pass (a run of `::runs` alone compared nothing).
    Incomplete,
    Unsupported,
    Ignored,
    NoEvidence,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Passed,
        Status::Failed,
        Status::KnownIssue,
        Status::NotTested,
        Status::Incomplete,
        Status::Unsupported,
        Status::Ignored,
        Status::NoEvidence,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::KnownIssue => "known-issue",
            Status::NotTested => "not-tested",
            Status::Incomplete => "incomplete",
            Status::Unsupported => "unsupported",
            Status::Ignored => "ignored",
            Status::NoEvidence => "no-evidence",
        }
    }

    fn of_record(status: Outcome) -> Status {
        match status {
            Outcome::Passed => Status::Passed,
            Outcome::Failed => Status::Failed,
            Outcome::KnownIssue => Status::KnownIssue,
            Outcome::NotTested => Status::NotTested,
            Outcome::Unsupported => Status::Unsupported,
            Outcome::Ignored => Status::Ignored,
        }
    }

    /// The cell's status from its checks' (see the module's comment).
    fn of_checks(checks: &[Status]) -> Status {
        if checks.is_empty() {
            return Status::NoEvidence;
        }
        [
            Status::Failed,
            Status::NotTested,
            Status::KnownIssue,
            Status::Unsupported,
            Status::Ignored,
        ]
        .into_iter()
        .find(|s| checks.contains(s))
        .unwrap_or(Status::Passed)
    }
}

/// Counts per status, in `Status::ALL`'s order; every status is present, zeros included.
#[derive(Clone, Debug, Serialize)]
pub struct Counts(pub BTreeMap<Status, usize>);

impl Default for Counts {
    fn default() -> Counts {
        Counts(Status::ALL.iter().map(|s| (*s, 0)).collect())
    }
}

impl Counts {
    fn add(&mut self, status: Status) {
        *self.0.entry(status).or_default() += 1;
    }

    pub fn get(&self, status: Status) -> usize {
        self.0.get(&status).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.0.values().sum()
    }
}

/// A record as a mark cites it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordRef {
    pub record: String,
    pub check: String,
    pub precision: String,
    pub status: String,
    pub run_id: String,
    pub host: String,
    pub time: String,
}

#[derive(Debug, Serialize)]
pub struct Cell {
    pub model: String,
    pub category: String,
    pub architecture: String,
    pub platform: String,
    pub engine: String,
    pub status: Status,
    /// architectures.yaml's expectation for the model's architecture type on the platform.
    pub expected: Option<Support>,
    /// Where the evidence contradicts the expectation.
    pub disagreement: Option<String>,
    /// The first failing or not-run check's reason.
    pub reason: Option<String>,
    pub error_kind: Option<String>,
    /// How far the cell got: its first failing or not-run check's stage, else
    /// `pass` (or `fallback` where a check passed with a declared fallback).
    pub stage: Option<String>,
    /// Where a status that is not a measurement comes from (`seed-expectation`, `spec`...).
    pub basis: Option<String>,
    /// Where the status comes from: `this run` (its checks ran in the runs
    /// read), `stored evidence` (an entry of model-specs/evidence, from an
    /// earlier run: see `evidence`), `earlier run` (a cell this run did not
    /// reach, whose passes the store keeps: see `evidence`), `spec` (a
    /// person's status), `not tried`.
    pub source: &'static str,
    /// The evidence store's entry behind a stored status: when, where, and
    /// whether it still describes today's checkout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<StoredEvidence>,
    pub records: Vec<RecordRef>,
}

/// An evidence entry as a cell cites it.
#[derive(Clone, Debug, Serialize)]
pub struct StoredEvidence {
    pub check: String,
    pub date: String,
    pub run: Option<String>,
    pub host: Option<String>,
    pub attribution: Option<String>,
    /// Why the entry no longer describes today's checkout (another fixture
    /// key, or recorded before entries carried provenance).
    pub stale: Option<String>,
    /// The record the entry's run wrote of it, with the whole error and log
    /// (`gen results show RECORD`, where that run's records are imported).
    pub record: Option<String>,
}

pub use hwmatrix_specs::text::shorten;

#[derive(Debug, Serialize)]
pub struct MatrixRow {
    pub row: String,
    pub platform: String,
    pub counts: Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Support>,
}

#[derive(Debug, Serialize)]
pub struct Matrices {
    pub category_platform: Vec<MatrixRow>,
    pub architecture_platform: Vec<MatrixRow>,
}

#[derive(Debug, Serialize)]
pub struct PlatformSummary {
    pub platform: String,
    /// Hosts with a measured record (passed or failed) on this platform.
    pub hosts: Vec<String>,
    pub libraries: Vec<String>,
    /// The hardware the measured records found: devices, or an emulator
    /// standing in for one (`QNN HTP emulator (x86_64)`), never merged.
    pub devices: Vec<String>,
    pub counts: Counts,
    /// At least one cell ran for real here.
    pub tested: bool,
}

#[derive(Debug, Serialize)]
pub struct ModelRow {
    pub model: String,
    pub checkpoint: Option<String>,
    pub category: String,
    pub modality: String,
    pub architecture: String,
}

#[derive(Debug, Serialize)]
pub struct IssueGroup {
    /// `failed: out-of-tolerance`, `known-issue (measured)`...
    pub cause: String,
    pub cells: Vec<IssueCell>,
}

#[derive(Debug, Serialize)]
pub struct IssueCell {
    pub model: String,
    pub platform: String,
    pub engine: String,
    pub reason: String,
    pub record: String,
}

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

#[derive(Debug, Serialize)]
pub struct Source {
    pub database: String,
    pub records: u64,
    /// The runs whose records the report reads (all, unless narrowed).
    pub runs: Vec<RunRow>,
}

#[derive(Debug, Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub hosts: Vec<String>,
    pub first: String,
    pub last: String,
    pub records: u64,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub models: usize,
    pub platforms: usize,
    pub cells: usize,
    pub counts: Counts,
    pub disagreements: usize,
}

/// A platform's cells by the stage they reached, in `Stage::ALL`'s order and
/// then `-` (no check reached the model).
#[derive(Debug, Serialize)]
pub struct StageRow {
    pub platform: String,
    pub counts: Vec<(String, usize)>,
}

fn stage_rows(cells: &[Cell], platforms: &[String]) -> Vec<StageRow> {
    platforms
        .iter()
        .map(|platform| {
            let on: Vec<&Cell> = cells.iter().filter(|c| &c.platform == platform).collect();
            let mut counts: Vec<(String, usize)> = hwmatrix_cell::Stage::ALL
                .iter()
                .map(|s| {
                    (
                        s.name().to_string(),
                        on.iter()
                            .filter(|c| c.stage.as_deref() == Some(s.name()))
                            .count(),
                    )
                })
                .collect();
            counts.push((
                "-".to_string(),
                on.iter().filter(|c| c.stage.is_none()).count(),
            ));
            StageRow {
                platform: platform.clone(),
                counts,
            }
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub source: Source,
    pub summary: Summary,
    pub platforms: Vec<PlatformSummary>,
    /// Per platform, its cells by the stage they reached.
    pub stages: Vec<StageRow>,
    pub models: Vec<ModelRow>,
    pub matrices: Matrices,
    /// The model × platform matrix, one entry per cell (model, platform, engine) that runs the model.
    pub cells: Vec<Cell>,
    pub issues: Vec<IssueGroup>,
    /// The wgpu quantization kernels' checks: not model runs, so apart from everything above.
    pub kernel_checks: KernelChecks,
    /// The precision variants' deviation per platform, engine and format; a real checkpoint's records apart.
    pub precision: precision::PrecisionEvidence,
    /// The `generates` checks: a generation column per platform for the generating models.
    pub generation: generation::GenerationEvidence,
    /// Precision verdicts per CPU class, from the evidence store.
    pub cpu_classes: cpu_classes::CpuClassesSection,
    /// The models no platform could run, by what stopped their fixture.
    pub export_failures: export::ExportFailures,
    /// What each architecture weighs at its default size (computed by `gen memory`, set by
    /// the caller: empty when it was not computed).
    pub memory: memory::MemorySection,
    /// Trained checkpoints' rows (`gen checkpoint`; set by the caller from results/checkpoints).
    pub trained: checkpoint_row::TrainedSection,
    /// Models whose engines that run the same kernels (webgpu's browser, native and Firefox) disagree.
    pub engine_disagreements: Vec<EngineDisagreement>,
    pub performance: Vec<Performance>,
    /// Engines timed on this machine's CPU against ONNX Runtime's CPU provider.
    pub engine_ratios: Vec<EngineRatio>,
    pub recommendations: Recommendations,
}

/// Engines of one platform that run the same kernels, so their verdicts must agree
/// (hardware.yaml's `same_kernels`, by name): webgpu's browser engine and its native one,
/// onnxruntime-web in Chromium and in Firefox, openvino's ONNX Runtime provider and OpenVINO's
/// own runtime. Where they disagree, one of them (the wasm build, the browser's WebGPU or
/// adapter, the plugin, the provider build) is the finding, not the model.
fn same_kernels(specs: &hwmatrix_specs::spec::Specs) -> Vec<(&'static str, [&'static str; 2])> {
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
fn engine_disagreements(
    cells: &[Cell],
    same_kernels: &[(&str, [&str; 2])],
) -> Vec<EngineDisagreement> {
    let measured = |s: Status| matches!(s, Status::Passed | Status::Failed | Status::KnownIssue);
    let passed = |c: &Cell| c.status == Status::Passed;
    let mut found = Vec::new();
    for &(platform, engines) in same_kernels {
        let mut by_model: BTreeMap<&str, Vec<&Cell>> = BTreeMap::new();
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

/// Whether an engine's checks are kernel checks, not model runs
/// ([`hwmatrix_cell::EngineKind::runs_whole_models`]: wgpu runs our WGSL quantization kernels on
/// a model's sampled matrix-product layers). Their evidence is about those kernels on the
/// platform's adapter; it never says the model runs there, so it stays out of the platform
/// bars, the summary, the stages, the matrices and the performance table, and is reported on
/// its own.
pub fn is_kernel_engine(engine: &str) -> bool {
    hwmatrix_cell::EngineKind::from_name(engine).is_some_and(|k| !k.runs_whole_models())
}

/// The engines whose checks are kernel checks, by name.
fn kernel_engines() -> String {
    hwmatrix_cell::EngineKind::ALL
        .into_iter()
        .filter(|k| !k.runs_whole_models())
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Serialize)]
pub struct KernelChecks {
    pub engine: String,
    pub what: String,
    pub counts: Counts,
    pub cells: Vec<Cell>,
    pub issues: Vec<IssueGroup>,
}

impl KernelChecks {
    fn of(cells: Vec<Cell>) -> KernelChecks {
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
fn split_kernel_checks(cells: Vec<Cell>) -> (Vec<Cell>, KernelChecks) {
    let (kernel, model_runs): (Vec<Cell>, Vec<Cell>) =
        cells.into_iter().partition(|c| is_kernel_engine(&c.engine));
    (model_runs, KernelChecks::of(kernel))
}

/// The newest record of each check in each of two runs, for `--compare` and `--diff`; an
/// error naming the database when either run is not in it.
fn two_runs(
    db: &Database,
    before: &str,
    after: &str,
) -> Result<(Vec<Evidence>, Vec<Evidence>), String> {
    let known: Vec<String> = db.runs()?.into_iter().map(|r| r.run_id).collect();
    if let Some(run) = [before, after]
        .into_iter()
        .find(|run| !known.iter().any(|k| k == run))
    {
        return Err(format!(
            "error: no run `{run}` in {}\n  help: `gen results runs` lists the runs",
            db.path().display()
        ));
    }
    Ok((
        db.latest(&[before.to_string()])?,
        db.latest(&[after.to_string()])?,
    ))
}

/// The checks that make a cell's status: float32 checks, and a wgpu cell's
/// quantization checks (its only ones). Precision variants, the `generates`
/// check (its own graph, its own column) and benchmarks do not.
fn counts_for_cell(evidence: &Evidence) -> bool {
    evidence.check != BENCH
        && evidence.check != hwmatrix_cell::CheckId::Generates.name()
        && (evidence.engine_kind == "wgpu" || evidence.precision == "float32")
}

/// `gen bench`'s records: performance evidence, not a check of the cell.
const BENCH: &str = hwmatrix_cell::BENCH_RECORD;

pub fn build(plan: &Plan, db: &Database, runs: &[String]) -> Result<Report, String> {
    let evidence = db.latest(runs)?;
    let by_cell = records_by_cell(&evidence);
    let specs = plan.specs;
    // The platforms this run measured a cell of: a cell of one it did not reach was left
    // out by the run's slice, not by its build.
    let measured_platforms: std::collections::BTreeSet<String> = evidence
        .iter()
        .filter(|e| e.basis == Basis::Measured)
        .map(|e| e.platform.clone())
        .collect();
    let cells = planned_cells(plan, by_cell, &measured_platforms);
    let (cells, kernel_checks) = split_kernel_checks(cells);
    let platform_names: Vec<String> = plan
        .platforms
        .iter()
        .map(|p| p.platform.name().to_string())
        .collect();
    let summary = summary(plan, &platform_names, &cells);
    let platforms = platform_names
        .iter()
        .map(|p| platform_summary(p, &cells, &evidence))
        .collect();
    let models = model_rows(plan);
    let matrices = matrices(specs, &cells, &platform_names);
    let source = source(db, runs)?;
    let performance = performance(&evidence);
    let engine_ratios = engine_ratios(&performance, &cpu_comparisons(specs));
    let recommendations = Recommendations {
        fastest_verified_platform: fastest(&cells, &performance),
        contradicted_expectations: contradictions(&cells),
    };
    let stages = stage_rows(&cells, &platform_names);
    let engine_disagreements = engine_disagreements(&cells, &same_kernels(specs));
    let precision = precision_of(plan, db, runs, &evidence)?;
    let generation = generation::generation_evidence(&evidence);
    Ok(Report {
        source,
        summary,
        platforms,
        stages,
        models,
        matrices,
        issues: issues(&cells),
        cells,
        kernel_checks,
        precision,
        generation,
        cpu_classes: cpu_classes::cpu_classes(plan)?,
        export_failures: export::export_failures(plan),
        memory: memory::MemorySection::default(),
        trained: checkpoint_row::TrainedSection::default(),
        engine_disagreements,
        performance,
        engine_ratios,
        recommendations,
    })
}

/// A cell's key: model, platform and engine.
type CellKey = (String, String, String);

/// The records that make a cell's status (`counts_for_cell`), grouped by cell, so each
/// planned cell takes its own.
fn records_by_cell(evidence: &[Evidence]) -> BTreeMap<CellKey, Vec<&Evidence>> {
    let mut by_cell: BTreeMap<CellKey, Vec<&Evidence>> = BTreeMap::new();
    for e in evidence.iter().filter(|e| counts_for_cell(e)) {
        by_cell
            .entry((e.model.clone(), e.platform.clone(), e.engine_kind.clone()))
            .or_default()
            .push(e);
    }
    by_cell
}

/// Every planned cell, the kernel checks' included, in the plan's order: each model's
/// cells, then its wgpu quantization cell where that is planned.
fn planned_cells(
    plan: &Plan,
    mut by_cell: BTreeMap<CellKey, Vec<&Evidence>>,
    measured_platforms: &std::collections::BTreeSet<String>,
) -> Vec<Cell> {
    let mut cells = Vec::new();
    for model_plan in &plan.models {
        let spec = &model_plan.model.spec;
        // Read once per model, and only where a cell needs it (a stored pass's staleness).
        let today = std::cell::OnceCell::new();
        for (platform, engine) in planned_engines(model_plan) {
            let records = by_cell
                .remove(&(spec.model_type.clone(), platform.clone(), engine.clone()))
                .unwrap_or_default();
            let sliced_out = measured_platforms.contains(&platform);
            let mut cell = planned_cell(plan.specs, model_plan, platform, engine, records);
            not_reached::from_store(model_plan, &mut cell, sliced_out, &today);
            cells.push(cell);
        }
    }
    cells
}

/// A model's planned (platform, engine) pairs: its cells, then its quantization checks'
/// platform with the wgpu engine.
fn planned_engines(model_plan: &hwmatrix_specs::plan::ModelPlan) -> Vec<(String, String)> {
    let mut engines: Vec<(String, String)> = model_plan
        .cells
        .iter()
        .map(|c| {
            (
                c.platform.name().to_string(),
                c.engine.kind().name().to_string(),
            )
        })
        .collect();
    if let Some(q) = &model_plan.quantization {
        engines.push((q.platform.name().to_string(), "wgpu".into()));
    }
    engines
}

/// One cell from its newest records: its status, what it contradicts, and where each
/// mark comes from (see the module's comment).
fn planned_cell(
    specs: &hwmatrix_specs::spec::Specs,
    model_plan: &hwmatrix_specs::plan::ModelPlan,
    platform: String,
    engine: String,
    records: Vec<&Evidence>,
) -> Cell {
    let spec = &model_plan.model.spec;
    let status = cell_status(model_plan, &platform, &engine, &records);
    let expected = expected_support(specs, &spec.architecture, &platform);
    let first_bad = records
        .iter()
        .find(|e| Status::of_record(e.status) == status && status != Status::Passed);
    // A model without a fixture was never tried on any platform: no platform evidence to disagree with.
    let no_fixture = !spec.has_fixture(if engine == EngineKind::Libtorch.name() {
        EngineKind::Libtorch
    } else {
        EngineKind::Onnxruntime
    });
    let disagreement = disagreement(expected, status, first_bad.copied(), no_fixture);
    let basis = first_bad.map(|e| e.basis);
    let stored = (basis == Some(Basis::Evidence))
        .then(|| stored_evidence(model_plan.model, &platform, &engine))
        .flatten();
    let source = cell_source(status, basis);
    Cell {
        model: spec.model_type.clone(),
        category: spec.category.clone(),
        architecture: spec.architecture.clone(),
        platform,
        engine,
        status,
        source,
        evidence: stored,
        expected,
        disagreement,
        reason: first_bad.and_then(|e| e.body.reason.clone()),
        basis: match spec.export.stage {
            Some(stage) if stage.is_harness() => Some(match spec.stopped_by_environment() {
                Some(_) => format!("this environment stopped it at `{stage}`"),
                None => format!("our harness stopped at `{stage}`"),
            }),
            _ if no_fixture => Some("no fixture (the export fails)".into()),
            _ => basis.map(|b| b.name().to_string()),
        },
        error_kind: first_bad
            .and_then(|e| e.error_kind)
            .map(|k| k.name().to_string()),
        stage: cell_stage(status, first_bad.copied(), &records),
        records: records.iter().map(|e| record_ref(e)).collect(),
    }
}

/// The cell's status from its records, incomplete where it would pass but a planned
/// check has no record.
fn cell_status(
    model_plan: &hwmatrix_specs::plan::ModelPlan,
    platform: &str,
    engine: &str,
    records: &[&Evidence],
) -> Status {
    let statuses: Vec<Status> = records
        .iter()
        .map(|e| Status::of_record(e.status))
        .collect();
    let mut status = Status::of_checks(&statuses);
    // A cell passes only when every planned check passed: a missing one leaves it incomplete.
    let required = required_checks(model_plan, platform, engine);
    if status == Status::Passed
        && required
            .iter()
            .any(|check| !records.iter().any(|e| e.check == check.name()))
    {
        status = Status::Incomplete;
    }
    // Of a model checked as components, a check passes only when each planned
    // component's record did: one without a record is missing, never passed.
    let planned: Vec<&str> = model_plan
        .model
        .spec
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    if status == Status::Passed
        && records
            .iter()
            .any(|e| lacks_a_component(&planned, &e.components))
    {
        status = Status::Incomplete;
    }
    status
}

/// Whether a check's records of a model checked as components (`recorded`:
/// each component's, empty for a whole model's record) miss a planned one.
fn lacks_a_component(planned: &[&str], recorded: &[(String, Outcome)]) -> bool {
    !recorded.is_empty()
        && planned
            .iter()
            .any(|c| !recorded.iter().any(|(name, _)| name == c))
}

/// Where the cell's status contradicts architectures.yaml's expectation; never for a
/// model without a fixture.
fn disagreement(
    expected: Option<Support>,
    status: Status,
    first_bad: Option<&Evidence>,
    no_fixture: bool,
) -> Option<String> {
    match (expected, status) {
        _ if no_fixture => None,
        (Some(Support::Yes), Status::Failed) => Some("expected yes, measured failure".to_string()),
        (Some(Support::Yes), Status::KnownIssue)
            if first_bad.is_some_and(|e| matches!(e.basis, Basis::Measured | Basis::Evidence)) =>
        {
            Some("expected yes, measured failure (known issue)".to_string())
        }
        (Some(Support::No), Status::Passed) => Some("expected no, measured pass".to_string()),
        _ => None,
    }
}

/// Where the cell's status comes from (`Cell::source`), from its first failing or
/// not-run record's basis.
fn cell_source(status: Status, basis: Option<Basis>) -> &'static str {
    match basis {
        _ if status == Status::NoEvidence => "none",
        Some(Basis::Evidence) => "stored evidence",
        Some(Basis::Spec) => "spec",
        Some(Basis::NotTried) => "not tried",
        Some(Basis::Measured) | None => "this run",
    }
}

/// The report's headline numbers: models, platforms, and the model-run cells by status.
fn summary(plan: &Plan, platform_names: &[String], cells: &[Cell]) -> Summary {
    let mut counts = Counts::default();
    cells.iter().for_each(|c| counts.add(c.status));
    Summary {
        models: plan.models.len(),
        platforms: platform_names.len(),
        cells: cells.len(),
        counts,
        disagreements: cells.iter().filter(|c| c.disagreement.is_some()).count(),
    }
}

/// One row per planned model: what it is and which checkpoint it stands for.
fn model_rows(plan: &Plan) -> Vec<ModelRow> {
    plan.models
        .iter()
        .map(|m| ModelRow {
            model: m.model.spec.model_type.clone(),
            checkpoint: m
                .model
                .spec
                .checkpoints
                .as_ref()
                .map(|c| c.reference.clone()),
            category: m.model.spec.category.clone(),
            modality: serde_json::to_value(m.model.spec.modality)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            architecture: m.model.spec.architecture.clone(),
        })
        .collect()
}

/// The category × platform and architecture × platform matrices, the latter with
/// architectures.yaml's expectation per row and platform.
fn matrices(
    specs: &hwmatrix_specs::spec::Specs,
    cells: &[Cell],
    platform_names: &[String],
) -> Matrices {
    Matrices {
        category_platform: matrix(cells, platform_names, |c| c.category.clone(), |_, _| None),
        architecture_platform: matrix(
            cells,
            platform_names,
            |c| c.architecture.clone(),
            |row, platform| expected_support(specs, row, platform),
        ),
    }
}

/// The database read and its runs (those in `runs`, or all when it is empty).
fn source(db: &Database, runs: &[String]) -> Result<Source, String> {
    Ok(Source {
        database: db.path().display().to_string(),
        records: db.record_count()?,
        runs: db
            .runs()?
            .into_iter()
            .filter(|r| runs.is_empty() || runs.contains(&r.run_id))
            .map(|r| RunRow {
                run_id: r.run_id,
                hosts: r.hosts,
                first: r.first,
                last: r.last,
                records: r.records,
            })
            .collect(),
    })
}

/// The precision evidence of the runs read, with a real checkpoint's records taken from
/// every run.
fn precision_of(
    plan: &Plan,
    db: &Database,
    runs: &[String],
    evidence: &[Evidence],
) -> Result<precision::PrecisionEvidence, String> {
    // A real checkpoint's precision records are rating evidence wherever they were made: a
    // checkpoint run has an id of its own (tests/checkpoint.sh), so they come from every run.
    let every_run = if runs.is_empty() {
        Vec::new()
    } else {
        db.latest(&[])?
    };
    Ok(precision::precision_evidence(
        plan,
        evidence,
        if runs.is_empty() {
            evidence
        } else {
            &every_run
        },
    ))
}

/// The checks a cell must have passed to pass: the float32 checks, or a wgpu
/// cell's quantization checks that are planned to run.
pub(super) fn required_checks(
    model: &hwmatrix_specs::plan::ModelPlan,
    platform: &str,
    engine: &str,
) -> Vec<hwmatrix_cell::CheckId> {
    if is_kernel_engine(engine) {
        model
            .quantization
            .iter()
            .flat_map(|q| {
                q.checks
                    .iter()
                    .filter(|c| matches!(c.planned, hwmatrix_cell::Planned::Run))
                    .map(|c| hwmatrix_cell::CheckId::Quantization(c.scheme))
            })
            .collect()
    } else if model.cells.iter().any(|c| {
        c.platform.name() == platform
            && c.engine.kind().name() == engine
            && matches!(c.planned, hwmatrix_cell::Planned::Run)
    }) {
        hwmatrix_cell::CheckId::FLOAT32.to_vec()
    } else {
        Vec::new()
    }
}

/// The evidence entry behind a cell's stored status: the cell's own first
/// failure, else the fixture pipeline's (a model without a fixture).
pub(super) fn stored_evidence(
    model: &hwmatrix_specs::spec::LoadedModel,
    platform: &str,
    engine: &str,
) -> Option<StoredEvidence> {
    use hwmatrix_cell::CheckId;
    let entries = &model.spec.evidence;
    let own = entries.iter().find(|e| {
        e.platform.is_some_and(|p| p.name() == platform)
            && e.engine.is_none_or(|k| k.name() == engine)
            && e.check.is_float32()
    });
    let entry = own.or_else(|| {
        entries
            .iter()
            .find(|e| e.platform.is_none() && e.check == CheckId::Export)
    })?;
    let today = hwmatrix_specs::spec::evidence::TodaysFixtures::of(
        model,
        &hwmatrix_cell::paths::fixtures_dir(),
    );
    Some(StoredEvidence {
        check: entry.check.name().to_string(),
        date: entry.provenance.date.clone(),
        run: entry.provenance.run.clone(),
        host: entry.provenance.host.clone(),
        attribution: entry.attribution.map(|a| a.name().to_string()),
        stale: entry.stale(&today.today(entry)),
        record: entry.provenance.record.clone(),
    })
}

/// A cell's stage: that of the record that decides its status; a passed cell
/// is at `fallback` if one of its checks passed with a declared fallback.
fn cell_stage(
    status: Status,
    first_bad: Option<&Evidence>,
    records: &[&Evidence],
) -> Option<String> {
    let stage_of = |e: &Evidence| e.body.stage.map(|s| s.name().to_string());
    match (status, first_bad) {
        (Status::Passed, _) => Some(
            if records
                .iter()
                .any(|e| stage_of(e).as_deref() == Some("fallback"))
            {
                "fallback"
            } else {
                "pass"
            }
            .to_string(),
        ),
        (_, Some(e)) => stage_of(e),
        (_, None) => None,
    }
}

/// What architectures.yaml expects of an architecture type on a platform.
fn expected_support(
    specs: &hwmatrix_specs::spec::Specs,
    architecture: &str,
    platform: &str,
) -> Option<Support> {
    let expectations = &specs
        .architectures
        .architectures
        .get(architecture)?
        .platforms;
    expectations
        .iter()
        .find(|(p, _)| p.name() == platform)
        .map(|(_, e)| e.support)
}

fn record_ref(e: &Evidence) -> RecordRef {
    RecordRef {
        record: e.record.clone(),
        check: e.check.clone(),
        precision: e.precision.clone(),
        status: e.status.name().to_string(),
        run_id: e.run_id.clone(),
        host: e.host.clone(),
        time: e.time.clone(),
    }
}

fn platform_summary(platform: &str, cells: &[Cell], evidence: &[Evidence]) -> PlatformSummary {
    let mut counts = Counts::default();
    cells
        .iter()
        .filter(|c| c.platform == platform)
        .for_each(|c| counts.add(c.status));
    let measured = evidence.iter().filter(|e| {
        e.platform == platform
            && !is_kernel_engine(&e.engine_kind)
            && matches!(e.status, Outcome::Passed | Outcome::Failed)
    });
    let mut hosts: Vec<String> = measured.clone().map(|e| e.host.clone()).collect();
    hosts.sort();
    hosts.dedup();
    let field = |of: fn(&Record) -> &Option<String>| -> Vec<String> {
        let mut values: Vec<String> = measured
            .clone()
            .filter_map(|e| of(&e.body).clone())
            .collect();
        values.sort();
        values.dedup();
        values
    };
    let (libraries, devices) = (field(|r| &r.library), field(|r| &r.device));
    PlatformSummary {
        platform: platform.to_string(),
        tested: !hosts.is_empty(),
        hosts,
        libraries,
        devices,
        counts,
    }
}

fn matrix(
    cells: &[Cell],
    platforms: &[String],
    row_of: impl Fn(&Cell) -> String,
    expected: impl Fn(&str, &str) -> Option<Support>,
) -> Vec<MatrixRow> {
    let mut grid: BTreeMap<(String, usize), Counts> = BTreeMap::new();
    for cell in cells {
        let column = platforms
            .iter()
            .position(|p| *p == cell.platform)
            .unwrap_or(platforms.len());
        grid.entry((row_of(cell), column))
            .or_default()
            .add(cell.status);
    }
    grid.into_iter()
        .map(|((row, column), counts)| {
            let platform = platforms.get(column).cloned().unwrap_or_default();
            MatrixRow {
                expected: expected(&row, &platform),
                row,
                platform,
                counts,
            }
        })
        .collect()
}

fn issues(cells: &[Cell]) -> Vec<IssueGroup> {
    let mut groups: BTreeMap<String, Vec<IssueCell>> = BTreeMap::new();
    for cell in cells.iter().filter(|c| {
        matches!(
            c.status,
            Status::Failed | Status::KnownIssue | Status::NotTested
        )
    }) {
        let record = cell
            .records
            .iter()
            .find(|r| r.status == cell.status.label())
            .map(|r| r.record.clone())
            .unwrap_or_default();
        let cause = match (&cell.error_kind, &cell.basis) {
            (Some(kind), _) => format!("{}: {kind}", cell.status.label()),
            (None, Some(basis)) => format!("{}: {basis}", cell.status.label()),
            (None, None) => cell.status.label().to_string(),
        };
        groups.entry(cause).or_default().push(IssueCell {
            model: cell.model.clone(),
            platform: cell.platform.clone(),
            engine: cell.engine.clone(),
            reason: cell.reason.clone().unwrap_or_default(),
            record,
        });
    }
    let mut groups: Vec<IssueGroup> = groups
        .into_iter()
        .map(|(cause, cells)| IssueGroup { cause, cells })
        .collect();
    groups.sort_by(|a, b| {
        b.cells
            .len()
            .cmp(&a.cells.len())
            .then(a.cause.cmp(&b.cause))
    });
    groups
}

fn performance(evidence: &[Evidence]) -> Vec<Performance> {
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

/// A platform and one of its engines, by name: `("openvino", "openvino")`.
pub type PlatformEngine = (&'static str, &'static str);

/// Engines that run on the CPU of the machine that runs the cpu cells (hardware.yaml's
/// `compared_with_cpu`), each compared with ONNX Runtime's CPU provider there: (baseline
/// platform, engine), (platform, engine). The one performance comparison a machine without
/// the other platforms' hardware makes honestly.
fn cpu_comparisons(specs: &hwmatrix_specs::spec::Specs) -> Vec<(PlatformEngine, PlatformEngine)> {
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
fn engine_ratios(
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

fn median(values: &mut [f64]) -> f64 {
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
fn fastest(cells: &[Cell], performance: &[Performance]) -> Vec<Fastest> {
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

fn contradictions(cells: &[Cell]) -> Vec<Contradiction> {
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

/// Every record a passed cell names must be in the database: what CI checks
/// of the report it just built. Returns the cells naming a missing record (a
/// pass of an earlier run must name that run instead: the store's).
pub fn verify(report: &serde_json::Value, db: &Database) -> Result<(usize, Vec<String>), String> {
    let cells = report
        .get("cells")
        .and_then(|c| c.as_array())
        .ok_or("the report has no `cells` list: is it gen report's JSON?")?;
    let kernel_cells = report
        .pointer("/kernel_checks/cells")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten();
    let mut checked = 0;
    let mut missing = Vec::new();
    for cell in cells
        .iter()
        .chain(kernel_cells)
        .filter(|c| c.get("status").and_then(|s| s.as_str()) == Some("passed"))
    {
        let name = format!(
            "{} on {} ({})",
            cell["model"].as_str().unwrap_or("?"),
            cell["platform"].as_str().unwrap_or("?"),
            cell["engine"].as_str().unwrap_or("?")
        );
        let records = cell
            .get("records")
            .and_then(|r| r.as_array())
            .cloned()
            .unwrap_or_default();
        // A pass of an earlier run (a cell this run did not reach) cites the store's run,
        // whose records this database need not hold; any other pass names its records.
        let earlier = cell.get("source").and_then(|s| s.as_str()) == Some("earlier run");
        if earlier {
            if cell
                .pointer("/evidence/run")
                .and_then(|r| r.as_str())
                .is_none()
            {
                missing.push(format!(
                    "{name}: passed in an earlier run that it does not name"
                ));
            }
        } else if records.is_empty() {
            missing.push(format!("{name}: passed with no record"));
        }
        for record in records {
            let id = record.get("record").and_then(|r| r.as_str()).unwrap_or("");
            checked += 1;
            if !db.has_record(id)? {
                missing.push(format!(
                    "{name}: record {id} is not in {}",
                    db.path().display()
                ));
            }
        }
    }
    Ok((checked, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A planned component without a record is missing: its check never
    /// passes on the others' word.
    #[test]
    fn a_planned_component_without_a_record_is_missing() {
        let planned = ["vision", "language"];
        let passed = |name: &str| (name.to_string(), Outcome::Passed);
        assert!(lacks_a_component(&planned, &[passed("vision")]));
        assert!(!lacks_a_component(
            &planned,
            &[passed("vision"), passed("language")]
        ));
        assert!(
            !lacks_a_component(&planned, &[]),
            "a whole model's record has no components to miss"
        );
    }

    #[test]
    fn a_not_tested_record_makes_a_not_tested_cell_counted_apart_from_known_issues() {
        assert_eq!(Status::of_record(Outcome::NotTested), Status::NotTested);
        assert_eq!(
            Status::of_checks(&[Status::NotTested, Status::NotTested, Status::NotTested]),
            Status::NotTested
        );
        // A failed check still says more than our gap; a known issue never absorbs it.
        assert_eq!(
            Status::of_checks(&[Status::Failed, Status::NotTested]),
            Status::Failed
        );
        assert_eq!(
            Status::of_checks(&[Status::NotTested, Status::KnownIssue]),
            Status::NotTested
        );
        let mut counts = Counts::default();
        [Status::NotTested, Status::KnownIssue, Status::Passed]
            .into_iter()
            .for_each(|s| counts.add(s));
        assert_eq!(
            (
                counts.get(Status::NotTested),
                counts.get(Status::KnownIssue)
            ),
            (1, 1)
        );
        assert_eq!(
            serde_json::to_value(Status::NotTested).unwrap(),
            "not-tested"
        );
    }

    fn cell(platform: &str, status: Status, stage: Option<&str>) -> Cell {
        Cell {
            model: "m".into(),
            category: "c".into(),
            architecture: "a".into(),
            platform: platform.into(),
            engine: "onnxruntime".into(),
            status,
            expected: None,
            disagreement: None,
            reason: None,
            error_kind: None,
            stage: stage.map(str::to_string),
            basis: None,
            source: "this run",
            evidence: None,
            records: Vec::new(),
        }
    }

    #[test]
    fn a_display_shortens_at_a_word_and_never_mid_word() {
        let reason =
            "matches_reference: output last_hidden_state: 7 of 256 elements outside abs 0.0001";
        let short = shorten(reason, 40);
        assert_eq!(short, "matches_reference: output…");
        assert!(reason.starts_with(short.trim_end_matches('…')));
        assert_eq!(shorten("short", 40), "short");
    }

    #[test]
    fn stage_rows_count_each_platforms_cells_by_stage() {
        let cells = [
            cell("cpu", Status::Passed, Some("pass")),
            cell("cpu", Status::NotTested, Some("reference")),
            cell("cpu", Status::Failed, Some("mismatch")),
            cell("cpu", Status::Ignored, None),
            cell("webnn", Status::KnownIssue, Some("run")),
        ];
        let rows = stage_rows(&cells, &["cpu".to_string(), "webnn".to_string()]);
        let cpu: BTreeMap<&str, usize> = rows[0]
            .counts
            .iter()
            .map(|(s, n)| (s.as_str(), *n))
            .collect();
        assert_eq!(
            (
                cpu["pass"],
                cpu["reference"],
                cpu["mismatch"],
                cpu["-"],
                cpu["run"]
            ),
            (1, 1, 1, 1, 0)
        );
        assert_eq!(
            rows[0].counts.iter().map(|(_, n)| n).sum::<usize>(),
            4,
            "every cpu cell in one column"
        );
        assert_eq!(
            rows[1]
                .counts
                .iter()
                .find(|(s, _)| s == "run")
                .map(|(_, n)| *n),
            Some(1)
        );
    }
    #[test]
    fn wgpu_kernel_checks_are_reported_apart_and_never_count_as_webgpu_model_runs() {
        let mut kernel = cell("webgpu", Status::Passed, Some("pass"));
        kernel.engine = "wgpu".into();
        let mut failed_kernel = cell("webgpu", Status::Failed, Some("mismatch"));
        failed_kernel.engine = "wgpu".into();
        let browser = cell("webgpu", Status::KnownIssue, Some("run"));
        let (model_runs, kernels) = split_kernel_checks(vec![kernel, browser, failed_kernel]);
        assert_eq!(model_runs.len(), 1, "only the browser cell runs the model");
        assert_eq!(
            (
                kernels.counts.get(Status::Passed),
                kernels.counts.get(Status::Failed)
            ),
            (1, 1)
        );
        assert_eq!(
            kernels.issues.len(),
            1,
            "the failed kernel check is listed with the kernel checks"
        );
        let webgpu = platform_summary("webgpu", &model_runs, &[]);
        assert_eq!(
            (
                webgpu.counts.get(Status::Passed),
                webgpu.counts.get(Status::KnownIssue)
            ),
            (0, 1),
            "a kernel pass counted on the webgpu bar"
        );
        let rows = stage_rows(&model_runs, &["webgpu".to_string()]);
        assert_eq!(rows[0].counts.iter().map(|(_, n)| n).sum::<usize>(), 1);
    }

    #[test]
    fn engines_compare_only_under_the_same_conditions() {
        let timed =
            |platform: &str, engine: &str, model: &str, ms: f64, conditions: &str| Performance {
                model: model.into(),
                category: "text_encoders".into(),
                platform: platform.into(),
                engine: engine.into(),
                check: "matches_reference".into(),
                median_ms: ms,
                p90_ms: None,
                throughput: None,
                rss_growth_kb: None,
                peak_rss_kb: None,
                rust_over_python: None,
                conditions: conditions.into(),
                device: None,
                stands_in: false,
                record: format!("{platform}-{engine}-{model}"),
            };
        let alone = "threads 1, 0 other checks in flight, 10 runs";
        let comparisons = [(("cpu", "onnxruntime"), ("openvino", "openvino"))];
        let found = engine_ratios(
            &[
                timed("cpu", "onnxruntime", "bert", 2.0, alone),
                timed("openvino", "openvino", "bert", 1.0, alone),
                timed(
                    "cpu",
                    "onnxruntime",
                    "vit",
                    2.0,
                    "threads 1, 1 other checks in flight, 10 runs",
                ),
                timed("openvino", "openvino", "vit", 1.0, alone),
            ],
            &comparisons,
        );
        assert_eq!(
            found.len(),
            1,
            "vit's pair ran under other conditions: {found:?}"
        );
        assert_eq!((found[0].model.as_str(), found[0].ratio), ("bert", 0.5));
        let summary = engine_ratio_summary(&found);
        assert_eq!(
            summary,
            vec![("openvino openvino".into(), "cpu onnxruntime".into(), 1, 0.5)]
        );
    }

    #[test]
    fn webgpu_browser_and_native_disagreeing_are_flagged_and_agreeing_or_unmeasured_are_not() {
        let on = |model: &str, engine: &str, status: Status| Cell {
            model: model.into(),
            engine: engine.into(),
            ..cell("webgpu", status, None)
        };
        let cells = [
            on("agree", "browser", Status::Passed),
            on("agree", "onnxruntime", Status::Passed),
            on("differ", "browser", Status::Passed),
            Cell {
                reason: Some("Abs on CPU".into()),
                ..on("differ", "onnxruntime", Status::Failed)
            },
            on("both_fail", "browser", Status::KnownIssue),
            on("both_fail", "onnxruntime", Status::Failed),
            on("issue_vs_pass", "browser", Status::KnownIssue),
            on("issue_vs_pass", "onnxruntime", Status::Passed),
            on("unmeasured", "browser", Status::Ignored),
            on("unmeasured", "onnxruntime", Status::Passed),
            // cpu's two engines run different kernels: never compared.
            Cell {
                platform: "cpu".into(),
                ..on("cpu_only", "onnxruntime", Status::Passed)
            },
            Cell {
                platform: "cpu".into(),
                ..on("cpu_only", "libtorch", Status::Failed)
            },
        ];
        let same_kernels = [
            ("webgpu", ["browser", "onnxruntime"]),
            ("openvino", ["onnxruntime", "openvino"]),
        ];
        let found = engine_disagreements(&cells, &same_kernels);
        let models: Vec<&str> = found.iter().map(|d| d.model.as_str()).collect();
        assert_eq!(models, ["differ", "issue_vs_pass"]);
        assert_eq!(
            found[0].engines[1],
            (
                "onnxruntime".to_string(),
                Status::Failed,
                Some("Abs on CPU".to_string())
            )
        );
    }
}
