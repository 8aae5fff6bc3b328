//! Records for the cells that do not run. A `#[ignore]`d test never runs, so
//! it cannot write its own record; without one a report could not tell "not
//! tried" from "no evidence". The generated crate has one test that hands
//! every cell to [`record_cells_not_run`], which writes, for each check of
//! each cell that will not run in this build, a record with its status,
//! reason and basis (an expectation from the seeds, a person's spec, or
//! simply not tried).

use crate::checks::Check;
use crate::record::{self, Outcome, Record};
use crate::{Basis, Cell, Planned, QuantizationCell, Stage};

/// Why a check does not run in this build: its outcome, basis, reason, and the
/// stage the cell stopped at where that is known.
pub type NotRun = (Outcome, Basis, String, Option<Stage>);

/// What a planned status that never runs records (cells and quantization
/// checks alike); None for one that runs when its feature is on.
fn planned_not_run(planned: Planned) -> Option<NotRun> {
    match planned {
        Planned::NotTested { reason, stage } => Some((
            Outcome::NotTested,
            Basis::Evidence,
            reason.to_string(),
            Some(stage),
        )),
        Planned::Unsupported { reason, basis } => {
            Some((Outcome::Unsupported, basis, reason.to_string(), None))
        }
        Planned::KnownIssue {
            reason,
            basis,
            stage,
        } => Some((Outcome::KnownIssue, basis, reason.to_string(), stage)),
        Planned::Run | Planned::NoEngine { .. } => None,
    }
}

/// Why a cell does not run in this build, or None when its checks run (and record themselves).
pub fn not_run(cell: &Cell, feature_on: bool) -> Option<NotRun> {
    if let Some(never) = planned_not_run(cell.planned) {
        return Some(never);
    }
    if feature_on {
        return None;
    }
    let features: Vec<&str> = cell.features().collect();
    let mut reason = format!(
        "{} is off in this build: run `cargo test -p generated --features {}` where {} is present",
        features.join(" or "),
        features.join(","),
        cell.platform.requires
    );
    if let Planned::NoEngine { reason: engine } = cell.planned {
        reason.push_str(&format!("; and {engine}"));
    }
    Some((Outcome::Ignored, Basis::NotTried, reason, None))
}

/// Writes one record per check of every cell that will not run; returns how
/// many. `feature_on` says whether a cell's cargo features are on in the
/// calling crate (features are the caller's, not the runtime's).
pub fn record_cells_not_run(
    cells: &[&Cell],
    feature_on: impl Fn(&Cell) -> bool,
) -> Result<usize, String> {
    let mut written = 0;
    for cell in cells {
        let on = feature_on(cell);
        let mut not_running: Vec<(Check, NotRun)> = Vec::new();
        // Each float32 check as its own plan says (the cell's, unless its own
        // stored outcomes plan it otherwise).
        for check in Check::ALL {
            let planned = cell.check_planned(check.name());
            if let Some(why) = not_run(&Cell { planned, ..**cell }, on) {
                not_running.push((check, why));
            }
        }
        if let Some(why) = not_run(cell, on) {
            not_running.extend(
                cell.precision_checks
                    .iter()
                    .map(|p| (Check::Precision(p.precision), why.clone())),
            );
        } else {
            // The cell runs, but a precision variant of it may be a known issue of its own.
            for p in cell.precision_checks {
                if let Some(why) = not_run(
                    &Cell {
                        planned: p.planned,
                        ..**cell
                    },
                    on,
                ) {
                    not_running.push((Check::Precision(p.precision), why));
                }
            }
        }
        // The `generates` check has its own plan (its own graph): whatever the cell's.
        if let Some(why) = cell.generation.and_then(|g| {
            not_run(
                &Cell {
                    planned: g.planned,
                    ..**cell
                },
                on,
            )
        }) {
            not_running.push((Check::Generates, why));
        }
        for (check, (status, basis, reason, stage)) in not_running {
            let record = Record {
                status,
                basis,
                reason: Some(reason),
                stage,
                precision: check
                    .precision()
                    .map_or("float32", crate::Precision::name)
                    .to_string(),
                ..crate::record::blank(cell, check.name())
            };
            record::append(&record).map_err(|e| {
                format!(
                    "{}::{}: cannot write its record: {e}",
                    cell.id(),
                    check.name()
                )
            })?;
            written += 1;
        }
    }
    Ok(written)
}

/// The same for quantization checks (webgpu): one record per scheme that
/// will not run, because it is a known issue or its platform's feature is off.
pub fn record_quantization_not_run(
    cells: &[&QuantizationCell],
    feature_on: impl Fn(&QuantizationCell) -> bool,
) -> Result<usize, String> {
    let mut written = 0;
    for cell in cells {
        let on = feature_on(cell);
        for check in cell.checks {
            let (status, basis, reason, stage) = match planned_not_run(check.planned) {
                Some(never) => never,
                None if on => continue,
                None => (
                    Outcome::Ignored,
                    Basis::NotTried,
                    format!(
                        "{0} is off in this build: run `cargo test -p generated --features {0}` where a WebGPU adapter for wgpu is present",
                        cell.platform.feature
                    ),
                    None,
                ),
            };
            let record = Record {
                status,
                basis,
                reason: Some(reason),
                stage,
                ..crate::quant::check::blank_record(cell, check.scheme)
            };
            record::append(&record).map_err(|e| {
                format!(
                    "{}::{}: cannot write its record: {e}",
                    cell.id(),
                    check.scheme.check_name()
                )
            })?;
            written += 1;
        }
    }
    Ok(written)
}

/// Reads the records back and asserts that this run wrote at least `written`
/// records for cells that did not run: the ledger test's proof that its
/// records landed where reports will look.
pub fn assert_recorded(written: usize) {
    let dir = crate::paths::results_dir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join(format!("{}.jsonl", record::host()));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let found = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Record>(line).ok())
        .filter(|r| {
            r.run_id == record::run_id()
                && matches!(
                    r.status,
                    Outcome::Ignored
                        | Outcome::Unsupported
                        | Outcome::KnownIssue
                        | Outcome::NotTested
                )
                && r.reason.as_deref().is_some_and(|s| !s.is_empty())
        })
        .count();
    assert!(
        found >= written,
        "{} holds {found} records of cells not run for run {}, but {written} were written",
        path.display(),
        record::run_id()
    );
}

/// Every model whose cells are planned to run has a fixture: a model with
/// neither a fixture nor a recorded reason (a known issue) fails here, naming
/// the command that builds it.
pub fn assert_fixtures_or_reasons(cells: &[&Cell]) {
    let mut missing = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for cell in cells.iter().filter(|c| matches!(c.planned, Planned::Run)) {
        // One fixture per model, needed as soon as one of its cells is planned to run;
        // a model with none planned has its reasons in the ledger's records.
        if seen.insert(cell.model.model_type) {
            for part in cell.model.parts() {
                if let Err(e) = crate::fixture::Fixture::open(part) {
                    missing.push(format!("{}: {e}", part.name()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} models have neither a fixture nor a recorded reason:\n  {}\nrun `gen fixtures` (or `gen derive --model M`, which records an export failure as the known issue)",
        missing.len(),
        missing.join("\n  ")
    );
}
