//! `gen report`: the compatibility matrix and everything around it, computed
//! from the results database and the specs only.
//!
//! A cell is one model on one platform through one engine (as the plan
//! defines them). Its status is that of its newest records, one per check:
//! any failed check makes it failed; otherwise a known issue, unsupported or
//! ignored check says so; it is passed only when every check of it passed.
//! A cell without a record is "no evidence", never a pass. Every cell names
//! the records behind it (run, host, time), so every mark can be traced.

pub mod accuracy;
mod cells;
pub mod checkpoint_row;
pub mod compare;
pub mod coverage;
pub mod cpu_classes;
pub mod diff;
mod engines;
pub mod export;
pub mod generation;
pub mod graphs;
pub mod greedy;
mod html;
mod markdown;
pub mod memory;
mod not_reached;
mod performance;
pub mod precision;
#[cfg(test)]
mod snapshots;
mod status;
mod tables;
mod template;

use std::collections::BTreeMap;

use crate::{Database, LatestRecord};
use hwmatrix_record::Basis;
use serde::Serialize;

use hwmatrix_specs::plan::Plan;

pub use cells::{MatrixCell, RecordRef, StoredEvidence, is_kernel_engine};
pub use engines::{
    EngineDisagreement, EngineRatio, KernelChecks, PlatformEngine, engine_ratio_summary,
};
pub use html::render as html;
pub use markdown::render as markdown;
pub use performance::{Contradiction, Fastest, Performance, Recommendations};
pub use status::{Counts, Status};
pub use tables::{
    IssueCell, IssueGroup, Matrices, MatrixRow, ModelRow, PlatformSummary, StageRow, Summary,
};

use cells::*;
use engines::*;
pub use hwmatrix_specs::text::shorten;
use performance::*;
use tables::*;

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
pub struct Report {
    pub source: Source,
    pub summary: Summary,
    pub platforms: Vec<PlatformSummary>,
    /// Per platform, its cells by the stage they reached.
    pub stages: Vec<StageRow>,
    pub models: Vec<ModelRow>,
    pub matrices: Matrices,
    /// The model × platform matrix, one entry per cell (model, platform, engine) that runs the model.
    pub cells: Vec<MatrixCell>,
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
    /// optimum's graphs of the models (what transformers.js ships) beside ours.
    pub graphs: graphs::GraphComparison,
    pub performance: Vec<Performance>,
    /// Engines timed on this machine's CPU against ONNX Runtime's CPU provider.
    pub engine_ratios: Vec<EngineRatio>,
    pub recommendations: Recommendations,
}

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
    let graphs = graphs::compare(
        "optimum",
        &db.latest_on_graph(runs, Some("optimum"))?,
        &cells,
    );
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
        graphs,
        performance,
        engine_ratios,
        recommendations,
    })
}

/// Every planned cell, the kernel checks' included, in the plan's order: each model's
/// cells, then its wgpu quantization cell where that is planned.
fn planned_cells(
    plan: &Plan,
    mut by_cell: BTreeMap<CellKey, Vec<&LatestRecord>>,
    measured_platforms: &std::collections::BTreeSet<String>,
) -> Vec<MatrixCell> {
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

/// A model's planned (platform, engine) pairs: its cells, its kernel cell last.
fn planned_engines(model_plan: &hwmatrix_specs::plan::ModelPlan) -> Vec<(String, String)> {
    model_plan
        .cells
        .iter()
        .map(|c| {
            (
                c.platform.name().to_string(),
                c.engine.kind().name().to_string(),
            )
        })
        .collect()
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
    evidence: &[LatestRecord],
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
    use hwmatrix_record::Outcome;

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

    fn cell(platform: &str, status: Status, stage: Option<&str>) -> MatrixCell {
        MatrixCell {
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
        let on = |model: &str, engine: &str, status: Status| MatrixCell {
            model: model.into(),
            engine: engine.into(),
            ..cell("webgpu", status, None)
        };
        let cells = [
            on("agree", "browser", Status::Passed),
            on("agree", "onnxruntime", Status::Passed),
            on("differ", "browser", Status::Passed),
            MatrixCell {
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
            MatrixCell {
                platform: "cpu".into(),
                ..on("cpu_only", "onnxruntime", Status::Passed)
            },
            MatrixCell {
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
