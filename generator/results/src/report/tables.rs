//! The tables built from the cells: the summary, per platform, per stage, the
//! category and architecture matrices, and the issues grouped by cause.

use super::cells::{MatrixCell, expected_support, is_kernel_engine};
use super::status::{Counts, Status};
use crate::LatestRecord;
use hwmatrix_record::Outcome;
use hwmatrix_record::Record;
use hwmatrix_specs::plan::Plan;
use hwmatrix_specs::spec::Support;
use serde::Serialize;
use std::collections::BTreeMap;

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

pub(super) fn stage_rows(cells: &[MatrixCell], platforms: &[String]) -> Vec<StageRow> {
    platforms
        .iter()
        .map(|platform| {
            let on: Vec<&MatrixCell> = cells.iter().filter(|c| &c.platform == platform).collect();
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

/// The report's headline numbers: models, platforms, and the model-run cells by status.
pub(super) fn summary(plan: &Plan, platform_names: &[String], cells: &[MatrixCell]) -> Summary {
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
pub(super) fn model_rows(plan: &Plan) -> Vec<ModelRow> {
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
pub(super) fn matrices(
    specs: &hwmatrix_specs::spec::Specs,
    cells: &[MatrixCell],
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

pub(super) fn platform_summary(
    platform: &str,
    cells: &[MatrixCell],
    evidence: &[LatestRecord],
) -> PlatformSummary {
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

pub(super) fn matrix(
    cells: &[MatrixCell],
    platforms: &[String],
    row_of: impl Fn(&MatrixCell) -> String,
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

pub(super) fn issues(cells: &[MatrixCell]) -> Vec<IssueGroup> {
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
