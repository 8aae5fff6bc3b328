//! A cell the runs read did not reach: tests/run.sh measures a slice of the
//! cells each run (every cell within a bounded number of runs), so most cells
//! of one run's report have no record of it. Such a cell shows what the
//! evidence store says of it, with the run that measured it: its stored
//! failure, else its stored passes (`passed:` blocks), never "no evidence"
//! because this run did not reach it, and never "off in this build" when the
//! run measured other cells of its platform.

use std::cell::OnceCell;

use hwmatrix_record::Basis;
use hwmatrix_specs::plan::ModelPlan;
use hwmatrix_specs::spec::evidence::TodaysFixtures;

use super::cells::{MatrixCell, StoredEvidence, required_checks, stored_evidence};
use super::status::Status;

/// Replaces a cell's status with the store's when the runs read did not
/// reach it: no record, or only the ledger's of a build without its feature.
/// `sliced_out`: the runs measured other cells of the cell's platform.
/// `today`: the model's fixtures as this checkout has them, read on first use.
pub(super) fn from_store(
    model_plan: &ModelPlan,
    cell: &mut MatrixCell,
    sliced_out: bool,
    today: &OnceCell<TodaysFixtures>,
) {
    let ledger_only = !cell.records.is_empty()
        && cell.basis.as_deref() == Some(Basis::NotTried.name())
        && cell.status == Status::Ignored;
    if !(cell.records.is_empty() || ledger_only) {
        return;
    }
    let spec = &model_plan.model.spec;
    // A stored failure of one of its float32 checks decides, as it would have in the run.
    let failure = spec.evidence.iter().find(|e| {
        e.platform.is_some_and(|p| p.name() == cell.platform)
            && e.engine.is_none_or(|k| k.name() == cell.engine)
            && e.check.is_float32()
            && e.outcome == hwmatrix_specs::spec::evidence::EntryOutcome::Failed
    });
    if let Some(entry) = failure.filter(|_| cell.records.is_empty()) {
        cell.status = if entry.is_known_issue() {
            Status::KnownIssue
        } else {
            Status::NotTested
        };
        cell.source = "stored evidence";
        cell.basis = Some(Basis::Evidence.name().to_string());
        cell.reason = Some(entry.reason(entry.check.name(), &spec.model_type));
        cell.stage = entry.stage.map(|s| s.name().to_string());
        cell.error_kind = entry.error_kind.map(|k| k.name().to_string());
        cell.evidence = stored_evidence(model_plan.model, &cell.platform, &cell.engine);
        return;
    }
    let required = required_checks(model_plan, &cell.platform, &cell.engine);
    let passed = spec.passed.iter().find(|p| {
        p.platform.name() == cell.platform
            && p.engine.name() == cell.engine
            && !required.is_empty()
            && required.iter().all(|c| p.checks.contains_key(c))
    });
    if let Some(passed) = passed.filter(|_| failure.is_none()) {
        let today = today.get_or_init(|| {
            TodaysFixtures::of(model_plan.model, &hwmatrix_cell::paths::fixtures_dir())
        });
        let run = passed.provenance.run.clone().unwrap_or_default();
        cell.status = Status::Passed;
        cell.source = "earlier run";
        cell.basis = Some(Basis::Evidence.name().to_string());
        cell.stage = Some("pass".into());
        cell.error_kind = None;
        cell.reason = Some(format!(
            "not measured by this run: every check passed in run {run} ({}, on {}), kept in model-specs/evidence/{}.yaml",
            passed.provenance.date,
            passed
                .provenance
                .host
                .as_deref()
                .unwrap_or("an unnamed host"),
            spec.model_type
        ));
        cell.evidence = Some(StoredEvidence {
            check: "every check".into(),
            date: passed.provenance.date.clone(),
            run: passed.provenance.run.clone(),
            host: passed.provenance.host.clone(),
            attribution: None,
            stale: passed.stale(today),
            record: None,
        });
        // What the cell contradicts is judged on measurements, stored ones included.
        cell.disagreement = match cell.expected {
            Some(hwmatrix_specs::spec::Support::No) => {
                Some("expected no, measured pass".to_string())
            }
            _ => None,
        };
        return;
    }
    if ledger_only && sliced_out {
        // The ledger's record comes from a build without the feature; other lanes of the
        // run measured the platform and left this cell to another run's slice.
        cell.reason = Some(format!(
            "not measured by this run (its {platform} lanes measured other cells: a slice a run), and the store keeps no measurement of every check: `gen measure --platform {platform} --model {model}` measures it",
            platform = cell.platform,
            model = spec.model_type
        ));
        cell.source = "not reached";
    }
}
