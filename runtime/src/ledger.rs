//! Records for the cells that do not run. A `#[ignore]`d test never runs, so
//! it cannot write its own record; without one a report could not tell "not
//! tried" from "no evidence". The generated crate has one test that hands
//! every cell to [`record_cells_not_run`], which writes, for each check of
//! each cell that will not run in this build, a record with its status,
//! reason and basis (an expectation from the seeds, a person's spec, or
//! simply not tried).

use crate::record::{self, Outcome, Record};
use crate::{Basis, Cell, CheckId, Planned, Stage};

/// Why a check does not run in this build: its outcome, basis, reason, and the
/// stage the cell stopped at where that is known.
pub type NotRun = (Outcome, Basis, String, Option<Stage>);

/// What a planned status that never runs records; None for one that runs
/// when its feature is on.
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

/// Each check of `cell` with the plan that decides whether it runs in this
/// build (its features `on` or not): a kernel cell's quantization schemes as
/// each is planned; a whole-model cell's float32 checks as their own plans
/// say (the cell's, unless its stored outcomes plan one otherwise), its
/// precision formats as the cell's plan where the cell does not run and
/// their own where it does, and `generates` by its own (its own graph).
fn plans(cell: &Cell, on: bool) -> Vec<(CheckId, Planned)> {
    if let Some(quantization) = cell.quantization {
        return quantization
            .checks
            .iter()
            .map(|c| (CheckId::Quantization(c.scheme), c.planned))
            .collect();
    }
    let mut plans: Vec<(CheckId, Planned)> = CheckId::FLOAT32
        .into_iter()
        .map(|check| (check, cell.check_planned(check.name())))
        .collect();
    let cell_runs = not_run(cell, on).is_none();
    plans.extend(cell.precision_checks.iter().map(|p| {
        let planned = if cell_runs { p.planned } else { cell.planned };
        (CheckId::Precision(p.precision), planned)
    }));
    plans.extend(cell.generation.map(|g| (CheckId::Generates, g.planned)));
    plans
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
        for (check, planned) in plans(cell, on) {
            let Some((status, basis, reason, stage)) = not_run(&Cell { planned, ..**cell }, on)
            else {
                continue;
            };
            let record = Record {
                status,
                basis,
                reason: Some(reason),
                stage,
                ..record::blank_check(cell, check)
            };
            record::append(&record)
                .map_err(|e| format!("{}::{check}: cannot write its record: {e}", cell.id()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        AgreementBound, Engine, ModelDecl, PlatformDecl, Precision, PrecisionCheck, QuantScheme,
        QuantizationCheck, QuantizationDecl, Tolerance,
    };

    static MODEL: ModelDecl = ModelDecl {
        model_type: "bert",
        category: "text_encoders",
        spec_path: "model-specs/models/text_encoders/bert.yaml",
        spec_digest: "d",
        inputs: &[],
        outputs: &[],
        tolerance: Tolerance {
            abs: 1e-4,
            rel: 1e-3,
        },
        component: None,
        components: &[],
    };
    static WEBGPU: PlatformDecl = PlatformDecl {
        platform: hwmatrix_cell::Platform::Webgpu,
        feature: "webgpu",
        requires: "a WebGPU adapter",
        checks_in_own_process: None,
    };
    static SETTINGS: QuantizationDecl = QuantizationDecl {
        group_size: 32,
        mixed: crate::MixedWidths {
            attention: 8,
            embedding: 8,
            output: 8,
            feed_forward: 4,
        },
        ratings: &[],
    };
    const NO_FIXTURE: Planned = Planned::NotTested {
        reason: "bert has no fixture",
        stage: Stage::Export,
    };
    static KERNELS: Cell = Cell::new(&MODEL, &WEBGPU, &Engine::Wgpu, Planned::Run)
        .with_quantization(
            &SETTINGS,
            &[
                QuantizationCheck {
                    scheme: QuantScheme::Int8,
                    planned: Planned::Run,
                    expected: None,
                },
                QuantizationCheck {
                    scheme: QuantScheme::Int2,
                    planned: NO_FIXTURE,
                    expected: None,
                },
            ],
        );
    static NATIVE: Engine = Engine::OnnxRuntime {
        provider: crate::ExecutionProvider::WebGpu,
        options: &[],
    };
    static WHOLE: Cell = Cell::new(&MODEL, &WEBGPU, &NATIVE, NO_FIXTURE).with_precision_checks(&[
        PrecisionCheck::run(Precision::Fp16, AgreementBound::new(0.99, 0.05, 0.95)),
    ]);

    #[test]
    fn a_kernel_cell_plans_its_schemes_and_no_whole_model_check() {
        let plans = plans(&KERNELS, true);
        assert_eq!(
            plans.iter().map(|(check, _)| *check).collect::<Vec<_>>(),
            [
                CheckId::Quantization(QuantScheme::Int8),
                CheckId::Quantization(QuantScheme::Int2)
            ]
        );
        // Feature on: only the scheme planned not to run leaves a record.
        let not_running: Vec<_> = plans
            .into_iter()
            .filter(|(_, planned)| {
                not_run(
                    &Cell {
                        planned: *planned,
                        ..KERNELS
                    },
                    true,
                )
                .is_some()
            })
            .collect();
        assert_eq!(not_running.len(), 1, "{not_running:?}");
        // Feature off: both, the one that would run as ignored with the feature to turn on.
        let (status, _, reason, _) = not_run(&KERNELS, false).expect("feature off");
        assert_eq!(status, Outcome::Ignored);
        assert!(reason.contains("--features webgpu"), "{reason}");
    }

    #[test]
    fn a_cell_that_does_not_run_gives_its_reason_to_its_precision_checks() {
        let plans = plans(&WHOLE, true);
        let fp16 = plans
            .iter()
            .find(|(check, _)| *check == CheckId::Precision(Precision::Fp16))
            .expect("fp16 planned");
        assert_eq!(
            fp16.1, NO_FIXTURE,
            "the cell's plan, not the format's own `run`"
        );
        assert!(plans.iter().all(|(check, _)| check.scheme().is_none()));
    }

    // The one run path refuses a check the cell does not have, naming the fix.
    #[test]
    #[should_panic(
        expected = "runs is not a check of bert::webgpu::wgpu (wgpu's quantization schemes on the model's weights): generated/ is out of date, run gen"
    )]
    fn a_whole_model_check_on_a_kernel_cell_is_refused() {
        crate::RunCheck::run_check(&KERNELS, CheckId::Runs);
    }

    #[test]
    #[should_panic(
        expected = "int8_quantization is not a check of bert::webgpu::native (a cell that runs the model's graph)"
    )]
    fn a_quantization_check_on_a_whole_model_cell_is_refused() {
        crate::RunCheck::run_check(&WHOLE, CheckId::Quantization(QuantScheme::Int8));
    }
}
