//! The report as Markdown: what a reviewer reads in a pull request.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

use super::Report;
use super::cells::MatrixCell;
use super::status::Status;
use super::status::{LEGEND, counts_text, mark};
use super::tables::MatrixRow;
use super::template::markdown_escape as escape;

fn support(expected: Option<hwmatrix_specs::spec::Support>) -> &'static str {
    match expected {
        Some(hwmatrix_specs::spec::Support::Yes) => "yes",
        Some(hwmatrix_specs::spec::Support::Limited) => "limited",
        Some(hwmatrix_specs::spec::Support::No) => "no",
        None => "",
    }
}

/// A matrix cell's text for the model × platform matrix: each engine's mark, ⚠ where the expectation is contradicted.
pub fn engines_text(cells: &[&MatrixCell]) -> String {
    cells
        .iter()
        .map(|c| {
            // A stored status says when it was measured, and whether it still describes the checkout.
            let stored = c.evidence.as_ref().map_or(String::new(), |e| {
                format!(
                    " ({}{})",
                    e.date.get(..10).unwrap_or(&e.date),
                    if e.stale.is_some() { ", stale" } else { "" }
                )
            });
            format!(
                "{} {}{stored}{}",
                c.engine,
                mark(c.status),
                if c.disagreement.is_some() { " ⚠" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// A table as the template lays it out: a header row and rows of cells,
/// every cell already text.
#[derive(Serialize)]
struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new<S: ToString>(head: &[S]) -> Table {
        Table {
            head: head.iter().map(ToString::to_string).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// A row per matrix row, a column per platform: the row's counts (and, with
/// `with_expected`, architectures.yaml's expectation).
fn matrix_table(
    rows: &[MatrixRow],
    platforms: &[String],
    first: &str,
    with_expected: bool,
) -> Table {
    let mut table = Table::new(&[first.to_string()]);
    table.head.extend(platforms.iter().cloned());
    let mut by_row: BTreeMap<&str, BTreeMap<&str, &MatrixRow>> = BTreeMap::new();
    for row in rows {
        by_row
            .entry(&row.row)
            .or_default()
            .insert(&row.platform, row);
    }
    for (name, columns) in by_row {
        let mut cells = vec![name.to_string()];
        cells.extend(platforms.iter().map(|p| {
            columns.get(p.as_str()).map_or(String::new(), |r| {
                let counts = counts_text(&r.counts);
                if with_expected {
                    format!("{counts} (expected {})", support(r.expected))
                } else {
                    counts
                }
            })
        }));
        table.row(cells);
    }
    table
}

fn stage_table(stages: &[super::tables::StageRow]) -> Table {
    let mut table = Table::new(&["platform"]);
    table
        .head
        .extend(hwmatrix_cell::Stage::ALL.map(|s| s.name().to_string()));
    table.head.push("-".into());
    for row in stages {
        let mut cells = vec![row.platform.clone()];
        cells.extend(row.counts.iter().map(|(_, n)| n.to_string()));
        table.row(cells);
    }
    table
}

/// The model × platform matrix: each platform's engines of the model, marked.
fn model_table(report: &Report, platforms: &[String]) -> Table {
    let mut table = Table::new(&["model"]);
    table.head.extend(platforms.iter().cloned());
    let mut by_model: BTreeMap<&str, BTreeMap<&str, Vec<&MatrixCell>>> = BTreeMap::new();
    for cell in &report.cells {
        by_model
            .entry(&cell.model)
            .or_default()
            .entry(&cell.platform)
            .or_default()
            .push(cell);
    }
    for (model, columns) in &by_model {
        let mut cells = vec![model.to_string()];
        cells.extend(platforms.iter().map(|p| {
            columns
                .get(p.as_str())
                .map_or(String::new(), |c| engines_text(c))
        }));
        table.row(cells);
    }
    table
}

fn platforms_table(report: &Report) -> Table {
    let mut table = Table::new(&[
        "platform",
        "tested",
        "hosts",
        "devices",
        "libraries",
        "cells",
    ]);
    for p in &report.platforms {
        table.row(vec![
            p.platform.clone(),
            if p.tested { "yes" } else { "no" }.into(),
            p.hosts.join(", "),
            escape(&p.devices.join("; ")),
            escape(&p.libraries.join("; ")),
            counts_text(&p.counts),
        ]);
    }
    table
}

fn disagreements_table(report: &Report) -> Table {
    let mut table = Table::new(&[
        "model", "platform", "engine", "expected", "measured", "record",
    ]);
    for c in report.cells.iter().filter(|c| c.disagreement.is_some()) {
        let record = c
            .records
            .first()
            .map(|r| format!("{} ({}, {})", r.record, r.host, r.time))
            .unwrap_or_default();
        table.row(vec![
            c.model.clone(),
            c.platform.clone(),
            c.engine.clone(),
            support(c.expected).into(),
            c.disagreement.clone().unwrap_or_default(),
            record,
        ]);
    }
    table
}

/// optimum's graphs beside ours: the tally's line and the table.
fn graphs_view(graphs: &super::graphs::GraphComparison) -> serde_json::Value {
    let mut table = Table::new(&super::graphs::GraphComparison::COLUMNS);
    for row in graphs.table() {
        table.row(row.into_iter().map(|c| c.replace('|', "\\|")).collect());
    }
    serde_json::json!({"measured": !graphs.rows.is_empty(), "summary": graphs.summary(), "table": table})
}

fn engine_disagreements_table(report: &Report) -> Table {
    let mut table = Table::new(&["model", "platform", "engine", "status", "reason"]);
    for d in &report.engine_disagreements {
        for (engine, status, reason) in &d.engines {
            table.row(vec![
                d.model.clone(),
                d.platform.clone(),
                engine.clone(),
                status.label().into(),
                reason.as_deref().unwrap_or("").replace('|', "\\|"),
            ]);
        }
    }
    table
}

fn performance_table(report: &Report) -> Table {
    let mut table = Table::new(&[
        "model",
        "platform",
        "engine",
        "check",
        "median ms",
        "p90 ms",
        "memory",
        "conditions",
        "record",
    ]);
    for p in &report.performance {
        let memory = match (p.peak_rss_kb, p.rss_growth_kb) {
            (Some(peak), _) => format!("peak RSS {peak} KiB"),
            (None, Some(growth)) => format!("RSS +{growth} KiB"),
            _ => String::new(),
        };
        table.row(vec![
            p.model.clone(),
            p.platform.clone(),
            p.engine.clone(),
            p.check.clone(),
            format!("{:.3}", p.median_ms),
            p.p90_ms.map(|v| format!("{v:.3}")).unwrap_or_default(),
            memory,
            escape(&p.conditions),
            p.record.to_string(),
        ]);
    }
    table
}

fn engine_ratios_table(report: &Report) -> Table {
    let mut table = Table::new(&[
        "model",
        "check",
        "engine",
        "median ms",
        "baseline",
        "median ms",
        "ratio",
        "conditions",
        "records",
    ]);
    for r in &report.engine_ratios {
        table.row(vec![
            r.model.clone(),
            r.check.clone(),
            r.engine.clone(),
            format!("{:.3}", r.engine_ms),
            r.baseline.clone(),
            format!("{:.3}", r.baseline_ms),
            format!("{:.2}", r.ratio),
            escape(&r.conditions),
            r.records.join(", "),
        ]);
    }
    table
}

fn fastest_table(report: &Report) -> Table {
    let mut table = Table::new(&[
        "category",
        "platform",
        "engine",
        "median of model medians (ms)",
        "models",
    ]);
    for f in &report.recommendations.fastest_verified_platform {
        table.row(vec![
            f.category.clone(),
            f.platform.clone(),
            f.engine.clone(),
            format!("{:.3}", f.median_ms),
            f.models.to_string(),
        ]);
    }
    table
}

fn models_table(report: &Report) -> Table {
    let mut table = Table::new(&[
        "model",
        "checkpoint",
        "category",
        "modality",
        "architecture",
    ]);
    for m in &report.models {
        table.row(vec![
            m.model.clone(),
            m.checkpoint.clone().unwrap_or_default(),
            m.category.clone(),
            m.modality.clone(),
            m.architecture.clone(),
        ]);
    }
    table
}

fn runs_table(report: &Report) -> Table {
    let mut table = Table::new(&["run", "hosts", "first record", "last record", "records"]);
    for r in &report.source.runs {
        table.row(vec![
            r.run_id.clone(),
            r.hosts.join(", "),
            r.first.clone(),
            r.last.clone(),
            r.records.to_string(),
        ]);
    }
    table
}

/// The models no platform could run: one row per cause, with who failed.
fn export_failures_view(e: &super::export::ExportFailures) -> serde_json::Value {
    let mut table = Table::new(&["who failed", "cause", "models", "which", "reproduction"]);
    for c in &e.causes {
        table.row(vec![
            c.who.clone(),
            c.cause.clone(),
            c.models.len().to_string(),
            c.models.join(", "),
            c.reproduction.clone().unwrap_or_default(),
        ]);
    }
    serde_json::json!({ "what": e.what, "table": table })
}

/// The generation checks: per platform and engine, then the generation column of each generating model.
/// The CPU classes (cpu_classes.rs builds the tables both renderings show).
fn cpu_classes_view(c: &super::cpu_classes::CpuClassesSection) -> serde_json::Value {
    let (head, rows) = c.measured_table();
    let measured = Table { head, rows };
    let (head, rows) = c.differing_table();
    json!({
        "measured": measured,
        "never_measured": c.never_measured.join(", "),
        "differing": Table { head, rows },
        "differing_count": c.differing_count(),
        "checks_count": c.verdicts.len(),
    })
}

/// Trained checkpoints' rows: one line per format judged on trained weights.
fn trained_view(t: &super::checkpoint_row::TrainedSection) -> serde_json::Value {
    let (head, rows) = t.table();
    let rows = rows
        .iter()
        .map(|r| r.iter().map(|c| escape(c)).collect())
        .collect();
    json!({ "what": super::checkpoint_row::TRAINED_WHAT, "table": Table { head, rows } })
}

fn generation_view(g: &super::generation::GenerationEvidence) -> serde_json::Value {
    let mut table = Table::new(&[
        "platform",
        "engine",
        "checks",
        "first diverged at the prefill",
        "first diverged decoding",
    ]);
    for e in &g.engines {
        table.row(vec![
            e.platform.clone(),
            e.engine.clone(),
            counts_text(&e.counts),
            e.diverged_at_prefill.to_string(),
            e.diverged_decoding.to_string(),
        ]);
    }
    let platforms: std::collections::BTreeSet<&String> =
        g.models.iter().flat_map(|m| m.platforms.keys()).collect();
    let models = (!platforms.is_empty()).then(|| {
        let mut models = Table::new(&["model"]);
        models.head.extend(platforms.iter().map(|p| p.to_string()));
        for m in &g.models {
            let mut cells = vec![m.model.clone()];
            cells.extend(
                platforms
                    .iter()
                    .map(|p| m.platforms.get(*p).map_or("", |s| s.label()).to_string()),
            );
            models.row(cells);
        }
        models
    });
    json!({ "what": g.what, "table": table, "models": models })
}

/// The precision checks: the deviation per platform, engine and format, then the real checkpoints' records.
fn precision_view(p: &super::precision::PrecisionEvidence) -> serde_json::Value {
    use super::precision::figure;
    let mut table = Table::new(&[
        "platform",
        "engine",
        "format",
        "weights",
        "checks",
        "median worst-row cosine",
        "median relative L2",
    ]);
    for r in &p.rows {
        table.row(vec![
            r.platform.clone(),
            r.engine.clone(),
            r.precision.clone(),
            r.weights.to_string(),
            counts_text(&r.counts),
            figure(r.median_worst_cosine),
            figure(r.median_rel_l2),
        ]);
    }
    let checkpoints: Vec<String> = p
        .checkpoints
        .iter()
        .map(|c| {
            format!(
                "{} ({}) on {} ({}), {}: {}, {} [record {}]",
                c.model,
                escape(&c.checkpoint),
                c.platform,
                c.engine,
                c.precision,
                c.status.label(),
                escape(&c.measured()),
                c.record
            )
        })
        .collect();
    let (head, rows) = super::precision::format_cells(&p.formats);
    let rows = rows
        .into_iter()
        .map(|r| r.iter().map(|c| escape(c)).collect())
        .collect();
    json!({ "what": p.what, "table": table, "checkpoints": checkpoints, "formats": Table { head, rows } })
}

/// The memory section: the computed figures per architecture (no rows when not computed).
fn memory_view(m: &super::memory::MemorySection) -> serde_json::Value {
    let (head, rows) = super::memory::table(&m.rows);
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.iter().map(|c| escape(c)).collect())
        .collect();
    json!({ "what": m.what, "table": Table { head, rows } })
}

/// The report as Markdown: `templates/report.md.tera` over a context of text.
pub fn render(report: &Report) -> Result<String, String> {
    let platforms: Vec<String> = report
        .platforms
        .iter()
        .map(|p| p.platform.clone())
        .collect();
    let s = &report.summary;
    let statuses: Vec<serde_json::Value> = Status::ALL
        .iter()
        .map(|st| json!({ "mark": mark(*st), "label": st.label(), "count": s.counts.get(*st) }))
        .collect();
    let k = &report.kernel_checks;
    let kernel_issues: Vec<serde_json::Value> = k
        .issues
        .iter()
        .map(|g| {
            let models: Vec<&str> = g.cells.iter().map(|c| c.model.as_str()).collect();
            json!({ "cause": g.cause, "count": g.cells.len(), "models": models.join(", ") })
        })
        .collect();
    let issues: Vec<serde_json::Value> = report
        .issues
        .iter()
        .map(|group| {
            let cells: Vec<String> = group
                .cells
                .iter()
                .map(|cell| {
                    format!(
                        "{} on {} ({}): {} [record {}]",
                        cell.model,
                        cell.platform,
                        cell.engine,
                        escape(&hwmatrix_specs::text::shorten(&cell.reason, 300)),
                        cell.record
                    )
                })
                .collect();
            json!({ "cause": group.cause, "cells": cells })
        })
        .collect();
    let contradicted: Vec<String> = report
        .recommendations
        .contradicted_expectations
        .iter()
        .map(|c| {
            format!(
                "{} on {}: architectures.yaml says {}, {} in {} cells ({}): revisit the expectation or the cells",
                c.architecture,
                c.platform,
                support(Some(c.expected)),
                c.measured,
                c.cells,
                c.models.join(", ")
            )
        })
        .collect();
    let context = json!({
        "source": {
            "records": report.source.records,
            "database": report.source.database,
            "runs": report.source.runs.len(),
        },
        "summary": {
            "models": s.models,
            "platforms": s.platforms,
            "cells": s.cells,
            "statuses": statuses,
            "disagreements": s.disagreements,
        },
        "legend": LEGEND,
        "platforms": platforms_table(report),
        "kernel": {
            "engine": k.engine,
            "what": k.what,
            "models": k.cells.len(),
            "counts": counts_text(&k.counts),
            "issues": kernel_issues,
        },
        "precision": precision_view(&report.precision),
        "generation": generation_view(&report.generation),
        "trained": trained_view(&report.trained),
        "cpu_classes": cpu_classes_view(&report.cpu_classes),
        "export_failures": export_failures_view(&report.export_failures),
        "memory": memory_view(&report.memory),
        "stages": stage_table(&report.stages),
        "category_platform": matrix_table(&report.matrices.category_platform, &platforms, "category", false),
        "architecture_platform": matrix_table(&report.matrices.architecture_platform, &platforms, "architecture", true),
        "model_platform": model_table(report, &platforms),
        "disagreements": disagreements_table(report),
        "engine_disagreements": engine_disagreements_table(report),
        "graphs": graphs_view(&report.graphs),
        "issues": issues,
        "performance": performance_table(report),
        "engine_ratios": engine_ratios_table(report),
        "engine_ratio_summary": super::engines::engine_ratio_summary(&report.engine_ratios)
            .into_iter()
            .map(|(engine, baseline, n, median)| format!("{engine} over {baseline}: median ratio {median:.2} over {n} models"))
            .collect::<Vec<_>>(),
        "fastest": fastest_table(report),
        "contradicted": contradicted,
        "models": models_table(report),
        "runs": runs_table(report),
    });
    super::template::render("report.md", TEMPLATE, &context)
}

const TEMPLATE: &str = include_str!("../../../../templates/report.md.tera");
