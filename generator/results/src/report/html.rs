//! The report as one self-contained HTML file: inline CSS and SVG, no
//! script and no network resource, so it opens anywhere, offline. The layout
//! is templates/report.html.tera; this builds its context (the SVG charts'
//! geometry included).
//!
//! Each cell of the model × platform matrix is a `span.cell` with
//! `data-status`, `data-model`, `data-platform` and `data-engine`, and names
//! its records in `title`: the test counts them in a real browser and
//! compares with the JSON.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::Report;
use super::cells::MatrixCell;
use super::status::{Counts, Status};
use super::status::{LEGEND, counts_text, mark};
use super::tables::MatrixRow;

fn color(status: Status) -> &'static str {
    match status {
        Status::Passed => "#2e7d32",
        Status::Failed => "#c62828",
        Status::KnownIssue => "#ef6c00",
        Status::NotTested => "#6a1b9a",
        Status::Unsupported => "#757575",
        Status::Incomplete => "#ffe082",
        Status::Ignored => "#b0bec5",
        Status::NoEvidence => "#eceff1",
    }
}

/// The share of a group's tested cells that passed, as a white-to-green fill
/// (cells not tested, our harness's gap, are not the platform's to pass).
fn heat(counts: &Counts) -> String {
    let total = (counts.total() - counts.get(Status::NotTested)).max(1) as f64;
    let share = counts.get(Status::Passed) as f64 / total;
    let (r, g, b) = (
        255.0 - share * (255.0 - 46.0),
        255.0 - share * (255.0 - 125.0),
        255.0 - share * (255.0 - 50.0),
    );
    format!("rgb({},{},{})", r as u8, g as u8, b as u8)
}

/// Category × platform as an SVG heatmap: fill is the passed share, text the counts.
fn heatmap(rows: &[MatrixRow], platforms: &[String]) -> Value {
    let mut by_row: BTreeMap<&str, BTreeMap<&str, &Counts>> = BTreeMap::new();
    for row in rows {
        by_row
            .entry(&row.row)
            .or_default()
            .insert(&row.platform, &row.counts);
    }
    let (label_w, cell_w, cell_h) = (150, 110, 34);
    let columns: Vec<Value> = platforms
        .iter()
        .enumerate()
        .map(|(i, p)| json!({ "x": label_w + i * cell_w + cell_w / 2, "platform": p }))
        .collect();
    let rows: Vec<Value> = by_row
        .iter()
        .enumerate()
        .map(|(r, (name, columns))| {
            let y = cell_h * (r + 1);
            let cells: Vec<Value> = platforms
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let counts = columns.get(p.as_str())?;
                    let x = label_w + i * cell_w;
                    // Cells our harness never put on the platform are counted apart: not a share of the platform's record.
                    let not_tested = counts.get(Status::NotTested);
                    let tested = counts.total() - not_tested;
                    let apart = if not_tested > 0 {
                        format!(" +{not_tested} N")
                    } else {
                        String::new()
                    };
                    Some(json!({
                        "x": x,
                        "text_x": x + cell_w / 2,
                        "platform": p,
                        "fill": heat(counts),
                        "counts": counts_text(counts),
                        "text": format!("{}/{tested}{apart}", counts.get(Status::Passed)),
                    }))
                })
                .collect();
            json!({ "y": y, "text_y": y + 21, "name": name, "cells": cells })
        })
        .collect();
    json!({
        "width": label_w + cell_w * platforms.len(),
        "height": cell_h * (by_row.len() + 1),
        "cell_width": cell_w - 2,
        "cell_height": cell_h - 2,
        "columns": columns,
        "rows": rows,
    })
}

/// Per platform, a horizontal bar of its cells by status.
fn status_bars(report: &Report) -> Value {
    let (label_w, bar_w, bar_h) = (90, 600.0, 22);
    let rows: Vec<Value> = report
        .platforms
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let y = 6 + i * (bar_h + 6);
            let total = p.counts.total().max(1) as f64;
            let mut x = label_w as f64;
            let mut rects = Vec::new();
            for status in Status::ALL {
                let n = p.counts.get(status);
                if n == 0 {
                    continue;
                }
                let w = bar_w * n as f64 / total;
                rects.push(json!({
                    "x": format!("{x:.1}"),
                    "width": format!("{w:.1}"),
                    "fill": color(status),
                    "label": status.label(),
                    "count": n,
                }));
                x += w;
            }
            json!({ "y": y, "text_y": y + 16, "platform": p.platform, "rects": rects })
        })
        .collect();
    json!({
        "width": label_w + bar_w as usize + 10,
        "height": (bar_h + 6) * report.platforms.len() + 6,
        "bar_height": bar_h,
        "rows": rows,
    })
}

/// A matrix as a table: per row and platform, the counts on the passed share's fill.
fn matrix(
    id: &str,
    rows: &[MatrixRow],
    platforms: &[String],
    first: &str,
    with_expected: bool,
) -> Value {
    let mut by_row: BTreeMap<&str, BTreeMap<&str, &MatrixRow>> = BTreeMap::new();
    for row in rows {
        by_row
            .entry(&row.row)
            .or_default()
            .insert(&row.platform, row);
    }
    let rows: Vec<Value> = by_row
        .iter()
        .map(|(name, columns)| {
            let cells: Vec<Value> = platforms
                .iter()
                .map(|p| {
                    columns.get(p.as_str()).map_or(Value::Null, |r| {
                        json!({
                            "fill": heat(&r.counts),
                            "counts": counts_text(&r.counts),
                            "expected": r.expected.map(|e| format!("{e:?}").to_lowercase()).unwrap_or_default(),
                        })
                    })
                })
                .collect();
            json!({ "name": name, "cells": cells })
        })
        .collect();
    json!({
        "id": id,
        "first": first,
        "platforms": platforms,
        "with_expected": with_expected,
        "rows": rows,
    })
}

/// A cell's span: its engine and mark, its records (and reason) in its title.
fn cell_span(cell: &MatrixCell) -> Value {
    let records: Vec<String> = cell
        .records
        .iter()
        .map(|r| {
            format!(
                "{} {} {} (run {}, {}, {})",
                r.check, r.status, r.record, r.run_id, r.host, r.time
            )
        })
        .collect();
    let title = if records.is_empty() {
        "no record".to_string()
    } else {
        records.join("\n")
    };
    let reason = cell
        .reason
        .as_deref()
        .map(|r| format!("\n{}", hwmatrix_specs::text::shorten(r, 400)))
        .unwrap_or_default();
    // A stored status names the entry's record, where the store's whole log is.
    let stored = cell
        .evidence
        .as_ref()
        .map(|e| {
            format!(
                "\nstored evidence: {} measured {} (run {}, record {}){}",
                e.check,
                e.date,
                e.run.as_deref().unwrap_or("?"),
                e.record.as_deref().unwrap_or("not named"),
                e.stale
                    .as_deref()
                    .map(|why| format!("; stale: {why}"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_default();
    json!({
        "status": cell.status.label(),
        "platform": cell.platform,
        "engine": cell.engine,
        "disagreement": cell.disagreement,
        "title": format!("{title}{reason}{stored}"),
        "mark": mark(cell.status),
    })
}

fn model_matrix(report: &Report, platforms: &[String]) -> Value {
    let mut by_model: BTreeMap<&str, BTreeMap<&str, Vec<&MatrixCell>>> = BTreeMap::new();
    for cell in &report.cells {
        by_model
            .entry(&cell.model)
            .or_default()
            .entry(&cell.platform)
            .or_default()
            .push(cell);
    }
    let rows: Vec<Value> = by_model
        .iter()
        .map(|(model, columns)| {
            let cells: Vec<Vec<Value>> = platforms
                .iter()
                .map(|p| {
                    columns
                        .get(p.as_str())
                        .map(|cells| cells.iter().map(|c| cell_span(c)).collect())
                        .unwrap_or_default()
                })
                .collect();
            json!({ "model": model, "cells": cells })
        })
        .collect();
    json!({ "platforms": platforms, "rows": rows })
}

/// The models no platform could run: one row per cause, with who failed.
fn export_failures(e: &super::export::ExportFailures) -> Value {
    let rows: Vec<Vec<String>> = e
        .causes
        .iter()
        .map(|c| {
            vec![
                c.who.clone(),
                c.cause.clone(),
                c.models.len().to_string(),
                c.models.join(", "),
                c.reproduction.clone().unwrap_or_default(),
            ]
        })
        .collect();
    json!({ "what": e.what, "rows": rows })
}

/// The memory section: the computed figures per architecture (empty when not computed).
fn memory(m: &super::memory::MemorySection) -> Value {
    let (head, rows) = super::memory::table(&m.rows);
    json!({ "what": m.what, "head": head, "rows": rows })
}

/// The generation checks: per platform and engine, then the generation column of each generating model.
/// The CPU classes: the tables cpu_classes.rs builds for both renderings.
fn cpu_classes(c: &super::cpu_classes::CpuClassesSection) -> Value {
    let (measured_head, measured) = c.measured_table();
    let (differing_head, differing) = c.differing_table();
    json!({
        "measured_head": measured_head,
        "measured": measured,
        "never_measured": c.never_measured.join(", "),
        "differing_head": differing_head,
        "differing": differing,
        "differing_count": c.differing_count(),
        "checks_count": c.verdicts.len(),
    })
}

/// Trained checkpoints' rows: one line per format judged on trained weights.
fn trained(t: &super::checkpoint_row::TrainedSection) -> Value {
    let (head, rows) = t.table();
    json!({ "what": super::checkpoint_row::TRAINED_WHAT, "head": head, "rows": rows })
}

fn generation(g: &super::generation::GenerationEvidence) -> Value {
    let engines: Vec<Vec<String>> = g
        .engines
        .iter()
        .map(|e| {
            vec![
                e.platform.clone(),
                e.engine.clone(),
                counts_text(&e.counts),
                e.diverged_at_prefill.to_string(),
                e.diverged_decoding.to_string(),
            ]
        })
        .collect();
    let platforms: BTreeSet<&String> = g.models.iter().flat_map(|m| m.platforms.keys()).collect();
    let models: Vec<Vec<String>> = g
        .models
        .iter()
        .map(|m| {
            let mut row = vec![m.model.clone()];
            row.extend(
                platforms
                    .iter()
                    .map(|p| m.platforms.get(*p).map_or("", |s| s.label()).to_string()),
            );
            row
        })
        .collect();
    json!({ "what": g.what, "engines": engines, "platforms": platforms, "models": models })
}

/// The precision checks: the deviation per platform, engine and format, then the real checkpoints' records.
fn precision(p: &super::precision::PrecisionEvidence) -> Value {
    use super::precision::figure;
    let rows: Vec<Vec<String>> = p
        .rows
        .iter()
        .map(|r| {
            vec![
                r.platform.clone(),
                r.engine.clone(),
                r.precision.clone(),
                r.weights.to_string(),
                counts_text(&r.counts),
                figure(r.median_worst_cosine),
                figure(r.median_rel_l2),
            ]
        })
        .collect();
    let checkpoints: Vec<String> = p
        .checkpoints
        .iter()
        .map(|c| {
            format!(
                "{} ({}) on {} ({}), {}: {}, {} [record {}]",
                c.model,
                c.checkpoint,
                c.platform,
                c.engine,
                c.precision,
                c.status.label(),
                c.measured(),
                c.record
            )
        })
        .collect();
    let (format_head, format_rows) = super::precision::format_cells(&p.formats);
    json!({ "what": p.what, "rows": rows, "checkpoints": checkpoints, "format_head": format_head, "formats": format_rows })
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #ddd;padding:3px 6px;font-size:13px;vertical-align:top}th{background:#f5f5f5;text-align:left}\
.cell{display:inline-block;margin:1px;padding:0 4px;border-radius:3px;white-space:nowrap}.s-passed{background:#c8e6c9}\
.s-failed{background:#ffcdd2}.s-known-issue{background:#ffe0b2}.s-not-tested{background:#e1bee7}.s-unsupported{background:#e0e0e0}.s-ignored{background:#eceff1;color:#607d8b}\
.s-no-evidence{background:#fff;color:#999;border:1px dashed #bbb}[data-disagreement]{outline:2px solid #c62828}small{color:#666}";

/// The report as HTML: `templates/report.html.tera` over the report's values.
pub fn render(report: &Report) -> Result<String, String> {
    let platforms: Vec<String> = report
        .platforms
        .iter()
        .map(|p| p.platform.clone())
        .collect();
    let s = &report.summary;
    let context = json!({
        "style": STYLE,
        "source": {
            "records": report.source.records,
            "database": report.source.database,
            "runs": report.source.runs.len(),
        },
        "summary": {
            "models": s.models,
            "platforms": s.platforms,
            "cells": s.cells,
            "statuses": status_counts(report),
            "disagreements": s.disagreements,
        },
        "legend": LEGEND,
        "bars": status_bars(report),
        "platforms": platform_rows(report),
        "precision": precision(&report.precision),
        "generation": generation(&report.generation),
        "trained": trained(&report.trained),
        "cpu_classes": cpu_classes(&report.cpu_classes),
        "export_failures": export_failures(&report.export_failures),
        "memory": memory(&report.memory),
        "kernel": kernel_checks(report),
        "engine_disagreements": engine_disagreement_rows(report),
        "graphs": serde_json::json!({
            "measured": !report.graphs.rows.is_empty(),
            "summary": report.graphs.summary(),
            "columns": super::graphs::GraphComparison::COLUMNS,
            "rows": report.graphs.table(),
        }),
        "stage_names": hwmatrix_cell::Stage::ALL.map(|s| s.name()),
        "stages": stage_counts(report),
        "heatmap": heatmap(&report.matrices.category_platform, &platforms),
        "category_platform": matrix("category-platform", &report.matrices.category_platform, &platforms, "category", false),
        "architecture_platform": matrix("architecture-platform", &report.matrices.architecture_platform, &platforms, "architecture", true),
        "model_platform": model_matrix(report, &platforms),
        "issues": issue_groups(report),
        "performance": performance_rows(report),
        "engine_ratios": report
            .engine_ratios
            .iter()
            .map(|r| {
                vec![
                    r.model.clone(),
                    r.check.clone(),
                    r.engine.clone(),
                    format!("{:.3}", r.engine_ms),
                    r.baseline.clone(),
                    format!("{:.3}", r.baseline_ms),
                    format!("{:.2}", r.ratio),
                    r.conditions.clone(),
                ]
            })
            .collect::<Vec<_>>(),
        "engine_ratio_summary": super::engines::engine_ratio_summary(&report.engine_ratios)
            .into_iter()
            .map(|(engine, baseline, n, median)| format!("{engine} over {baseline}: median ratio {median:.2} over {n} models"))
            .collect::<Vec<_>>(),
        "fastest": fastest_rows(report),
        "contradicted": contradicted_lines(report),
        "models": model_rows(report),
        "runs": run_rows(report),
    });
    super::template::render("report.html", TEMPLATE, &context)
}

/// The summary's count per status, in `Status::ALL`'s order, each with its mark and label.
fn status_counts(report: &Report) -> Vec<Value> {
    let s = &report.summary;
    Status::ALL
        .iter()
        .map(|st| json!({ "mark": mark(*st), "label": st.label(), "count": s.counts.get(*st) }))
        .collect()
}

/// The platforms table: one row per platform, whether it was tested and on what.
fn platform_rows(report: &Report) -> Vec<Vec<String>> {
    report
        .platforms
        .iter()
        .map(|p| {
            vec![
                p.platform.clone(),
                if p.tested { "yes" } else { "no" }.into(),
                p.hosts.join(", "),
                p.devices.join("; "),
                p.libraries.join("; "),
                counts_text(&p.counts),
            ]
        })
        .collect()
}

/// The kernel checks' section: what they are, their counts, and their issues by cause.
fn kernel_checks(report: &Report) -> Value {
    let k = &report.kernel_checks;
    let kernel_issues: Vec<Value> = k
        .issues
        .iter()
        .map(|g| {
            let models: Vec<&str> = g.cells.iter().map(|c| c.model.as_str()).collect();
            json!({ "cause": g.cause, "count": g.cells.len(), "models": models.join(", ") })
        })
        .collect();
    json!({
        "engine": k.engine,
        "what": k.what,
        "models": k.cells.len(),
        "counts": counts_text(&k.counts),
        "issues": kernel_issues,
    })
}

/// The same-kernel engines' disagreements: one row per engine of each model.
fn engine_disagreement_rows(report: &Report) -> Vec<Vec<String>> {
    report
        .engine_disagreements
        .iter()
        .flat_map(|d| {
            d.engines.iter().map(|(engine, status, reason)| {
                vec![
                    d.model.clone(),
                    d.platform.clone(),
                    engine.clone(),
                    status.label().to_string(),
                    reason.clone().unwrap_or_default(),
                ]
            })
        })
        .collect()
}

/// The stages table: per platform, its cells by the stage they reached.
fn stage_counts(report: &Report) -> Vec<Value> {
    report
        .stages
        .iter()
        .map(|r| {
            let counts: Vec<Value> = r
                .counts
                .iter()
                .map(|(stage, n)| json!({ "stage": stage, "count": n }))
                .collect();
            json!({ "platform": r.platform, "counts": counts })
        })
        .collect()
}

/// The issues by cause, each cell as one line of text with its record.
fn issue_groups(report: &Report) -> Vec<Value> {
    report
        .issues
        .iter()
        .map(|group| {
            let cells: Vec<Value> = group
                .cells
                .iter()
                .map(|c| {
                    json!({
                        "text": format!("{} on {} ({}): {}", c.model, c.platform, c.engine, hwmatrix_specs::text::shorten(&c.reason, 400)),
                        "record": c.record,
                    })
                })
                .collect();
            json!({ "cause": group.cause, "cells": cells })
        })
        .collect()
}

/// The performance table: one row per timed check, milliseconds to three decimals.
fn performance_rows(report: &Report) -> Vec<Vec<String>> {
    report
        .performance
        .iter()
        .map(|p| {
            vec![
                p.model.clone(),
                p.platform.clone(),
                p.engine.clone(),
                p.check.clone(),
                format!("{:.3}", p.median_ms),
                p.p90_ms.map(|v| format!("{v:.3}")).unwrap_or_default(),
                p.conditions.clone(),
                p.record.to_string(),
            ]
        })
        .collect()
}

/// The recommendations' fastest verified platform per category, one row each.
fn fastest_rows(report: &Report) -> Vec<Vec<String>> {
    report
        .recommendations
        .fastest_verified_platform
        .iter()
        .map(|f| {
            vec![
                f.category.clone(),
                f.platform.clone(),
                f.engine.clone(),
                format!("{:.3}", f.median_ms),
                f.models.to_string(),
            ]
        })
        .collect()
}

/// The recommendations' contradicted expectations, one line each.
fn contradicted_lines(report: &Report) -> Vec<String> {
    report
        .recommendations
        .contradicted_expectations
        .iter()
        .map(|c| {
            format!(
                "{} on {}: expected {:?}, {} in {} cells ({})",
                c.architecture,
                c.platform,
                c.expected,
                c.measured,
                c.cells,
                c.models.join(", ")
            )
        })
        .collect()
}

/// The models table: one row per model, its checkpoint empty where it has none.
fn model_rows(report: &Report) -> Vec<Vec<String>> {
    report
        .models
        .iter()
        .map(|m| {
            vec![
                m.model.clone(),
                m.checkpoint.clone().unwrap_or_default(),
                m.category.clone(),
                m.modality.clone(),
                m.architecture.clone(),
            ]
        })
        .collect()
}

/// The runs the report read, one row each.
fn run_rows(report: &Report) -> Vec<Vec<String>> {
    report
        .source
        .runs
        .iter()
        .map(|r| {
            vec![
                r.run_id.clone(),
                r.hosts.join(", "),
                r.first.clone(),
                r.last.clone(),
                r.records.to_string(),
            ]
        })
        .collect()
}

const TEMPLATE: &str = include_str!("../../../../templates/report.html.tera");
