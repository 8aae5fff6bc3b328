//! Each planned cell's status from its newest records (see the report's module comment),
//! with where it comes from and the records behind it.

use super::status::Status;
use crate::LatestRecord;
use hwmatrix_record::Basis;
use hwmatrix_record::EngineKind;
use hwmatrix_record::Outcome;
use hwmatrix_specs::spec::Support;
use serde::Serialize;
use std::collections::BTreeMap;

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
pub struct MatrixCell {
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

/// The checks that make a cell's status: float32 checks, and a wgpu cell's
/// quantization checks (its only ones). Precision variants, the `generates`
/// check (its own graph, its own column) and benchmarks do not.
pub(super) fn counts_for_cell(evidence: &LatestRecord) -> bool {
    evidence.check != BENCH
        && evidence.check != hwmatrix_cell::CheckId::Generates.name()
        && (evidence.engine_kind == "wgpu" || evidence.precision == "float32")
}

/// `gen bench`'s records: performance evidence, not a check of the cell.
pub(super) const BENCH: &str = hwmatrix_cell::BENCH_RECORD;

/// A cell's key: model, platform and engine.
pub(super) type CellKey = (String, String, String);

/// The records that make a cell's status (`counts_for_cell`), grouped by cell, so each
/// planned cell takes its own.
pub(super) fn records_by_cell(evidence: &[LatestRecord]) -> BTreeMap<CellKey, Vec<&LatestRecord>> {
    let mut by_cell: BTreeMap<CellKey, Vec<&LatestRecord>> = BTreeMap::new();
    for e in evidence.iter().filter(|e| counts_for_cell(e)) {
        by_cell
            .entry((e.model.clone(), e.platform.clone(), e.engine_kind.clone()))
            .or_default()
            .push(e);
    }
    by_cell
}

/// One cell from its newest records: its status, what it contradicts, and where each
/// mark comes from (see the module's comment).
pub(super) fn planned_cell(
    specs: &hwmatrix_specs::spec::Specs,
    model_plan: &hwmatrix_specs::plan::ModelPlan,
    platform: String,
    engine: String,
    records: Vec<&LatestRecord>,
) -> MatrixCell {
    let spec = &model_plan.model.spec;
    let status = cell_status(model_plan, &platform, &engine, &records);
    let expected = expected_support(specs, &spec.architecture, &platform);
    let first_bad = records
        .iter()
        .find(|e| Status::of_record(e.status) == status && status != Status::Passed);
    // A model without a fixture was never tried on any platform: no platform evidence to disagree with.
    let no_fixture =
        !spec.has_fixture(EngineKind::from_name(&engine).unwrap_or(EngineKind::Onnxruntime));
    let disagreement = disagreement(expected, status, first_bad.copied(), no_fixture);
    let basis = first_bad.map(|e| e.basis);
    let stored = (basis == Some(Basis::Evidence))
        .then(|| stored_evidence(model_plan.model, &platform, &engine))
        .flatten();
    let source = cell_source(status, basis);
    MatrixCell {
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
pub(super) fn cell_status(
    model_plan: &hwmatrix_specs::plan::ModelPlan,
    platform: &str,
    engine: &str,
    records: &[&LatestRecord],
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
pub(super) fn lacks_a_component(planned: &[&str], recorded: &[(String, Outcome)]) -> bool {
    !recorded.is_empty()
        && planned
            .iter()
            .any(|c| !recorded.iter().any(|(name, _)| name == c))
}

/// Where the cell's status contradicts architectures.yaml's expectation; never for a
/// model without a fixture.
pub(super) fn disagreement(
    expected: Option<Support>,
    status: Status,
    first_bad: Option<&LatestRecord>,
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

/// Where the cell's status comes from (`MatrixCell::source`), from its first failing or
/// not-run record's basis.
pub(super) fn cell_source(status: Status, basis: Option<Basis>) -> &'static str {
    match basis {
        _ if status == Status::NoEvidence => "none",
        Some(Basis::Evidence) => "stored evidence",
        Some(Basis::Spec) => "spec",
        Some(Basis::NotTried) => "not tried",
        Some(Basis::Measured) | None => "this run",
    }
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
            .kernel_cell()
            .iter()
            .flat_map(|k| {
                k.quantization
                    .iter()
                    .filter(|c| matches!(c.planned, hwmatrix_cell::Planned::Run))
                    .map(|c| hwmatrix_cell::CheckId::Quantization(c.scheme))
            })
            .collect()
    } else if model.model_cells().any(|c| {
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
pub(super) fn cell_stage(
    status: Status,
    first_bad: Option<&LatestRecord>,
    records: &[&LatestRecord],
) -> Option<String> {
    let stage_of = |e: &LatestRecord| e.body.stage.map(|s| s.name().to_string());
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
pub(super) fn expected_support(
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

pub(super) fn record_ref(e: &LatestRecord) -> RecordRef {
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
pub(super) fn kernel_engines() -> String {
    hwmatrix_cell::EngineKind::ALL
        .into_iter()
        .filter(|k| !k.runs_whole_models())
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}
