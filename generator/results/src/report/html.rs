//! The report as one self-contained HTML file: inline CSS and SVG, no
//! script and no network resource, so it opens anywhere, offline.
//!
//! Each cell of the model × platform matrix is a `span.cell` with
//! `data-status`, `data-model`, `data-platform` and `data-engine`, and names
//! its records in `title`: the test counts them in a real browser and
//! compares with the JSON.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::markdown::{LEGEND, counts_text, mark};
use super::{Cell, Counts, MatrixRow, Report, Status};

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

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
fn heatmap(rows: &[MatrixRow], platforms: &[String]) -> String {
    let mut by_row: BTreeMap<&str, BTreeMap<&str, &Counts>> = BTreeMap::new();
    for row in rows {
        by_row
            .entry(&row.row)
            .or_default()
            .insert(&row.platform, &row.counts);
    }
    let (label_w, cell_w, cell_h) = (150, 110, 34);
    let width = label_w + cell_w * platforms.len();
    let height = cell_h * (by_row.len() + 1);
    let mut svg = format!(
        "<svg id=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"passed share per category and platform\">"
    );
    for (i, p) in platforms.iter().enumerate() {
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">{}</text>",
            label_w + i * cell_w + cell_w / 2,
            esc(p)
        );
    }
    for (r, (name, columns)) in by_row.iter().enumerate() {
        let y = cell_h * (r + 1);
        let _ = write!(
            svg,
            "<text x=\"4\" y=\"{}\" font-size=\"13\">{}</text>",
            y + 21,
            esc(name)
        );
        for (i, p) in platforms.iter().enumerate() {
            let Some(counts) = columns.get(p.as_str()) else {
                continue;
            };
            let x = label_w + i * cell_w;
            let passed = counts.get(Status::Passed);
            // Cells our harness never put on the platform are counted apart: not a share of the platform's record.
            let not_tested = counts.get(Status::NotTested);
            let tested = counts.total() - not_tested;
            let apart = if not_tested > 0 {
                format!(" +{not_tested} N")
            } else {
                String::new()
            };
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\"><title>{} on {}: {}</title></rect><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">{passed}/{tested}{apart}</text>",
                cell_w - 2,
                cell_h - 2,
                heat(counts),
                esc(name),
                esc(p),
                esc(&counts_text(counts)),
                x + cell_w / 2,
                y + 21,
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Per platform, a horizontal bar of its cells by status.
fn status_bars(report: &Report) -> String {
    let (label_w, bar_w, bar_h) = (90, 600.0, 22);
    let height = (bar_h + 6) * report.platforms.len() + 6;
    let mut svg = format!(
        "<svg id=\"status-bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"cells per platform by status\">",
        label_w + bar_w as usize + 10
    );
    for (i, p) in report.platforms.iter().enumerate() {
        let y = 6 + i * (bar_h + 6);
        let _ = write!(
            svg,
            "<text x=\"4\" y=\"{}\" font-size=\"13\">{}</text>",
            y + 16,
            esc(&p.platform)
        );
        let total = p.counts.total().max(1) as f64;
        let mut x = label_w as f64;
        for status in Status::ALL {
            let n = p.counts.get(status);
            if n == 0 {
                continue;
            }
            let w = bar_w * n as f64 / total;
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bar_h}\" fill=\"{}\"><title>{}: {} {n}</title></rect>",
                color(status),
                esc(&p.platform),
                status.label()
            );
            x += w;
        }
    }
    svg.push_str("</svg>");
    svg
}

fn table_matrix(
    out: &mut String,
    id: &str,
    rows: &[MatrixRow],
    platforms: &[String],
    first: &str,
    with_expected: bool,
) {
    let _ = write!(out, "<table id=\"{id}\"><tr><th>{first}</th>");
    for p in platforms {
        let _ = write!(out, "<th>{}</th>", esc(p));
    }
    out.push_str("</tr>");
    let mut by_row: BTreeMap<&str, BTreeMap<&str, &MatrixRow>> = BTreeMap::new();
    for row in rows {
        by_row
            .entry(&row.row)
            .or_default()
            .insert(&row.platform, row);
    }
    for (name, columns) in by_row {
        let _ = write!(out, "<tr><th>{}</th>", esc(name));
        for p in platforms {
            match columns.get(p.as_str()) {
                Some(r) => {
                    let expected = if with_expected {
                        format!(
                            "<br><small>expected {}</small>",
                            r.expected
                                .map(|e| format!("{e:?}").to_lowercase())
                                .unwrap_or_default()
                        )
                    } else {
                        String::new()
                    };
                    let _ = write!(
                        out,
                        "<td style=\"background:{}\">{}{expected}</td>",
                        heat(&r.counts),
                        esc(&counts_text(&r.counts))
                    );
                }
                None => out.push_str("<td></td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn cell_span(cell: &Cell) -> String {
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
        .map(|r| format!("\n{}", super::shorten(r, 400)))
        .unwrap_or_default();
    let flag = cell
        .disagreement
        .as_deref()
        .map(|d| format!(" data-disagreement=\"{}\"", esc(d)))
        .unwrap_or_default();
    format!(
        "<span class=\"cell s-{}\" data-status=\"{}\" data-model=\"{}\" data-platform=\"{}\" data-engine=\"{}\"{flag} title=\"{}\">{} {}{}</span>",
        cell.status.label(),
        cell.status.label(),
        esc(&cell.model),
        esc(&cell.platform),
        esc(&cell.engine),
        esc(&format!("{title}{reason}")),
        esc(&cell.engine),
        mark(cell.status),
        if cell.disagreement.is_some() {
            "⚠"
        } else {
            ""
        }
    )
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #ddd;padding:3px 6px;font-size:13px;vertical-align:top}th{background:#f5f5f5;text-align:left}\
.cell{display:inline-block;margin:1px;padding:0 4px;border-radius:3px;white-space:nowrap}.s-passed{background:#c8e6c9}\
.s-failed{background:#ffcdd2}.s-known-issue{background:#ffe0b2}.s-not-tested{background:#e1bee7}.s-unsupported{background:#e0e0e0}.s-ignored{background:#eceff1;color:#607d8b}\
.s-no-evidence{background:#fff;color:#999;border:1px dashed #bbb}[data-disagreement]{outline:2px solid #c62828}small{color:#666}";

pub fn render(report: &Report) -> String {
    let platforms: Vec<String> = report
        .platforms
        .iter()
        .map(|p| p.platform.clone())
        .collect();
    let s = &report.summary;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>hwmatrix compatibility report</title><style>{STYLE}</style></head><body>"
    );
    let _ = write!(
        out,
        "<h1>hwmatrix compatibility report</h1><p>Computed by <code>gen report</code> from {} records in <code>{}</code> ({} runs) and the specs. Hover a cell for its records.</p>",
        report.source.records,
        esc(&report.source.database),
        report.source.runs.len()
    );
    let _ = write!(
        out,
        "<h2>Summary</h2><ul id=\"summary\"><li>{} models on {} platforms: <b id=\"cell-count\">{}</b> cells (model × platform × engine)</li>",
        s.models, s.platforms, s.cells
    );
    for status in Status::ALL {
        let _ = write!(
            out,
            "<li>{} {}: <b data-count=\"{}\">{}</b></li>",
            mark(status),
            status.label(),
            status.label(),
            s.counts.get(status)
        );
    }
    let _ = write!(
        out,
        "<li>disagreements with architectures.yaml: {}</li></ul><p><small>{}</small></p>",
        s.disagreements,
        esc(LEGEND)
    );
    let _ = write!(
        out,
        "<h2>Platforms</h2>{}<table id=\"platforms\"><tr><th>platform</th><th>tested</th><th>hosts</th><th>devices</th><th>libraries</th><th>cells</th></tr>",
        status_bars(report)
    );
    for p in &report.platforms {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.platform),
            if p.tested { "yes" } else { "no" },
            esc(&p.hosts.join(", ")),
            esc(&p.devices.join("; ")),
            esc(&p.libraries.join("; ")),
            esc(&counts_text(&p.counts))
        );
    }
    out.push_str("</table>");
    precision_section(&mut out, &report.precision);
    generation_section(&mut out, &report.generation);
    let k = &report.kernel_checks;
    let _ = write!(
        out,
        "<h2>Kernel checks (not model runs)</h2><p id=\"kernel-checks\"><code>{}</code>: {}. Not counted above, nor in the matrices. {} models: {}</p><ul>",
        esc(&k.engine),
        esc(&k.what),
        k.cells.len(),
        esc(&counts_text(&k.counts))
    );
    for group in &k.issues {
        let models: Vec<&str> = group.cells.iter().map(|c| c.model.as_str()).collect();
        let _ = write!(
            out,
            "<li>{} ({}): {}</li>",
            esc(&group.cause),
            group.cells.len(),
            esc(&models.join(", "))
        );
    }
    out.push_str("</ul>");
    out.push_str("<h2>Engines that run the same kernels and disagree</h2><p><small>webgpu's browser and native engines run the same C++ WebGPU provider: where one passes and the other fails, an engine is the finding, not the model.</small></p>");
    if report.engine_disagreements.is_empty() {
        out.push_str("<p id=\"engine-disagreements\">None.</p>");
    } else {
        out.push_str("<table id=\"engine-disagreements\"><tr><th>model</th><th>platform</th><th>engine</th><th>status</th><th>reason</th></tr>");
        for d in &report.engine_disagreements {
            for (engine, status, reason) in &d.engines {
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&d.model),
                    esc(&d.platform),
                    esc(engine),
                    status.label(),
                    esc(reason.as_deref().unwrap_or(""))
                );
            }
        }
        out.push_str("</table>");
    }
    out.push_str("<h2>Stages</h2><p><small>How far each cell got: <code>config</code> and <code>reference</code> are our harness's (not tested), <code>export</code> the exporters', <code>load</code>, <code>run</code> and <code>mismatch</code> the engine's; <code>-</code>: no check reached the model.</small></p><table id=\"stages\"><tr><th>platform</th>");
    for stage in hwmatrix_cell::Stage::ALL {
        let _ = write!(out, "<th>{}</th>", stage.name());
    }
    out.push_str("<th>-</th></tr>");
    for row in &report.stages {
        let _ = write!(out, "<tr><td>{}</td>", esc(&row.platform));
        for (stage, n) in &row.counts {
            let _ = write!(out, "<td data-stage=\"{}\">{n}</td>", esc(stage));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    let _ = write!(
        out,
        "<h2>Matrix: category × platform</h2>{}",
        heatmap(&report.matrices.category_platform, &platforms)
    );
    table_matrix(
        &mut out,
        "category-platform",
        &report.matrices.category_platform,
        &platforms,
        "category",
        false,
    );
    out.push_str("<h2>Matrix: architecture type × platform</h2>");
    table_matrix(
        &mut out,
        "architecture-platform",
        &report.matrices.architecture_platform,
        &platforms,
        "architecture",
        true,
    );

    out.push_str("<h2>Matrix: model × platform</h2><p><small>⚠ (outlined): the measurement contradicts architectures.yaml.</small></p><table id=\"model-platform\"><tr><th>model</th>");
    for p in &platforms {
        let _ = write!(out, "<th>{}</th>", esc(p));
    }
    out.push_str("</tr>");
    let mut by_model: BTreeMap<&str, BTreeMap<&str, Vec<&Cell>>> = BTreeMap::new();
    for cell in &report.cells {
        by_model
            .entry(&cell.model)
            .or_default()
            .entry(&cell.platform)
            .or_default()
            .push(cell);
    }
    for (model, columns) in &by_model {
        let _ = write!(out, "<tr><th>{}</th>", esc(model));
        for p in &platforms {
            let spans: String = columns
                .get(p.as_str())
                .map(|cells| cells.iter().map(|c| cell_span(c)).collect())
                .unwrap_or_default();
            let _ = write!(out, "<td>{spans}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table><h2>Implementation issues</h2>");
    for group in &report.issues {
        let _ = write!(
            out,
            "<details><summary>{} ({} cells)</summary><ul>",
            esc(&group.cause),
            group.cells.len()
        );
        for c in &group.cells {
            let _ = write!(
                out,
                "<li>{} on {} ({}): {} <small>record {}</small></li>",
                esc(&c.model),
                esc(&c.platform),
                esc(&c.engine),
                esc(&super::shorten(&c.reason, 400)),
                esc(&c.record)
            );
        }
        out.push_str("</ul></details>");
    }
    out.push_str("<h2>Performance</h2><p><small>Latency of passed checks as recorded, with what was running; <code>gen bench</code> records carry p90 and throughput.</small></p>");
    out.push_str("<table id=\"performance\"><tr><th>model</th><th>platform</th><th>engine</th><th>check</th><th>median ms</th><th>p90 ms</th><th>conditions</th><th>record</th></tr>");
    for p in &report.performance {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.model),
            esc(&p.platform),
            esc(&p.engine),
            esc(&p.check),
            p.median_ms,
            p.p90_ms.map(|v| format!("{v:.3}")).unwrap_or_default(),
            esc(&p.conditions),
            esc(&p.record)
        );
    }
    out.push_str("</table><h2>Recommendations</h2><table id=\"fastest\"><tr><th>category</th><th>fastest verified platform</th><th>engine</th><th>median ms</th><th>models</th></tr>");
    for f in &report.recommendations.fastest_verified_platform {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td></tr>",
            esc(&f.category),
            esc(&f.platform),
            esc(&f.engine),
            f.median_ms,
            f.models
        );
    }
    out.push_str("</table><ul id=\"contradictions\">");
    for c in &report.recommendations.contradicted_expectations {
        let _ = write!(
            out,
            "<li>{} on {}: expected {:?}, {} in {} cells ({})</li>",
            esc(&c.architecture),
            esc(&c.platform),
            c.expected,
            esc(&c.measured),
            c.cells,
            esc(&c.models.join(", "))
        );
    }
    out.push_str("</ul><h2>Models tested</h2><table id=\"models\"><tr><th>model</th><th>checkpoint</th><th>category</th><th>modality</th><th>architecture</th></tr>");
    for m in &report.models {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&m.model),
            esc(m.checkpoint.as_deref().unwrap_or("")),
            esc(&m.category),
            esc(&m.modality),
            esc(&m.architecture)
        );
    }
    out.push_str("</table><h2>Evidence</h2><table id=\"runs\"><tr><th>run</th><th>hosts</th><th>first</th><th>last</th><th>records</th></tr>");
    for r in &report.source.runs {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.run_id),
            esc(&r.hosts.join(", ")),
            esc(&r.first),
            esc(&r.last),
            r.records
        );
    }
    out.push_str("</table></body></html>\n");
    out
}

/// The generation checks: per platform and engine, then the generation column of each generating model.
fn generation_section(out: &mut String, g: &super::generation::GenerationEvidence) {
    let _ = write!(
        out,
        "<h2>Generation with a KV cache</h2><p id=\"generation\">{}.</p><table><tr><th>platform</th><th>engine</th><th>checks</th><th>first diverged at the prefill</th><th>first diverged decoding</th></tr>",
        esc(&g.what)
    );
    for e in &g.engines {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&e.platform),
            esc(&e.engine),
            esc(&counts_text(&e.counts)),
            e.diverged_at_prefill,
            e.diverged_decoding
        );
    }
    out.push_str("</table>");
    let platforms: std::collections::BTreeSet<&String> =
        g.models.iter().flat_map(|m| m.platforms.keys()).collect();
    if platforms.is_empty() {
        return;
    }
    out.push_str("<table><tr><th>model</th>");
    for p in &platforms {
        let _ = write!(out, "<th>{}</th>", esc(p));
    }
    out.push_str("</tr>");
    for m in &g.models {
        let _ = write!(out, "<tr><td>{}</td>", esc(&m.model));
        for p in &platforms {
            let _ = write!(
                out,
                "<td>{}</td>",
                m.platforms.get(*p).map_or("", |s| s.label())
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

/// The precision checks: the deviation per platform, engine and format, then the real checkpoints' records.
fn precision_section(out: &mut String, p: &super::precision::PrecisionEvidence) {
    use super::precision::figure;
    let _ = write!(
        out,
        "<h2>Precision</h2><p id=\"precision\">{}.</p><table><tr><th>platform</th><th>engine</th><th>format</th><th>weights</th><th>checks</th><th>median worst-row cosine</th><th>median relative L2</th></tr>",
        esc(&p.what)
    );
    for r in &p.rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.platform),
            esc(&r.engine),
            esc(&r.precision),
            esc(&r.weights),
            esc(&counts_text(&r.counts)),
            figure(r.median_worst_cosine),
            figure(r.median_rel_l2)
        );
    }
    out.push_str("</table><p>On real checkpoints (rating evidence):</p><ul>");
    if p.checkpoints.is_empty() {
        out.push_str("<li>none recorded: no spec's web_quantization rating is judged</li>");
    }
    for c in &p.checkpoints {
        let _ = write!(
            out,
            "<li>{} ({}) on {} ({}), {}: {}, {} [record {}]</li>",
            esc(&c.model),
            esc(&c.checkpoint),
            esc(&c.platform),
            esc(&c.engine),
            esc(&c.precision),
            c.status.label(),
            esc(&c.measured()),
            esc(&c.record)
        );
    }
    out.push_str("</ul>");
}
