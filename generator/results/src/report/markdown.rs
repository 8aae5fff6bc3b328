//! The report as Markdown: what a reviewer reads in a pull request.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{Cell, Counts, MatrixRow, Report, Status};

/// The mark a status has in the matrices.
pub fn mark(status: Status) -> &'static str {
    match status {
        Status::Passed => "✓",
        Status::Failed => "✗",
        Status::KnownIssue => "K",
        Status::NotTested => "N",
        Status::Incomplete => "◐",
        Status::Unsupported => "–",
        Status::Ignored => "○",
        Status::NoEvidence => "·",
    }
}

pub const LEGEND: &str = "✓ passed, ✗ failed, K known issue, N not tested here (our harness's gap or this machine's: a software adapter without a feature, an emulator, our time limit; not the model's), ◐ incomplete (a planned check has no record), – unsupported, ○ ignored (its platform's feature was off), · no evidence (no record)";

/// `✓12 ✗1 K3`: the non-zero counts in a fixed order.
pub fn counts_text(counts: &Counts) -> String {
    let parts: Vec<String> = Status::ALL
        .iter()
        .filter(|s| counts.get(**s) > 0)
        .map(|s| format!("{}{}", mark(*s), counts.get(*s)))
        .collect();
    parts.join(" ")
}

fn support(expected: Option<hwmatrix_specs::spec::Support>) -> &'static str {
    match expected {
        Some(hwmatrix_specs::spec::Support::Yes) => "yes",
        Some(hwmatrix_specs::spec::Support::Limited) => "limited",
        Some(hwmatrix_specs::spec::Support::No) => "no",
        None => "",
    }
}

/// Cell text for the model × platform matrix: each engine's mark, ⚠ where the expectation is contradicted.
pub fn engines_text(cells: &[&Cell]) -> String {
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

fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn matrix_table(
    out: &mut String,
    rows: &[MatrixRow],
    platforms: &[String],
    first: &str,
    with_expected: bool,
) {
    let _ = writeln!(out, "| {first} | {} |", platforms.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(platforms.len()));
    let mut by_row: BTreeMap<&str, BTreeMap<&str, &MatrixRow>> = BTreeMap::new();
    for row in rows {
        by_row
            .entry(&row.row)
            .or_default()
            .insert(&row.platform, row);
    }
    for (name, columns) in by_row {
        let values: Vec<String> = platforms
            .iter()
            .map(|p| {
                columns.get(p.as_str()).map_or(String::new(), |r| {
                    let counts = counts_text(&r.counts);
                    if with_expected {
                        format!("{counts} (expected {})", support(r.expected))
                    } else {
                        counts
                    }
                })
            })
            .collect();
        let _ = writeln!(out, "| {name} | {} |", values.join(" | "));
    }
}

fn stage_table(out: &mut String, stages: &[super::StageRow]) {
    let _ = writeln!(
        out,
        "| platform | {} | - |",
        hwmatrix_cell::Stage::ALL.map(|s| s.name()).join(" | ")
    );
    let _ = writeln!(
        out,
        "|---|{}---|",
        "---|".repeat(hwmatrix_cell::Stage::ALL.len())
    );
    for row in stages {
        let counts: Vec<String> = row.counts.iter().map(|(_, n)| n.to_string()).collect();
        let _ = writeln!(out, "| {} | {} |", row.platform, counts.join(" | "));
    }
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let s = &report.summary;
    let platforms: Vec<String> = report
        .platforms
        .iter()
        .map(|p| p.platform.clone())
        .collect();
    let _ = writeln!(out, "# hwmatrix compatibility report\n");
    let _ = writeln!(
        out,
        "Computed by `gen report` from {} records in `{}` ({} runs) and the specs; every mark names its records in the JSON and HTML reports.\n",
        report.source.records,
        report.source.database,
        report.source.runs.len()
    );
    let _ = writeln!(out, "## Summary\n");
    let _ = writeln!(
        out,
        "- {} models on {} platforms: {} cells (model × platform × engine)",
        s.models, s.platforms, s.cells
    );
    for status in Status::ALL {
        let _ = writeln!(
            out,
            "- {} {}: {}",
            mark(status),
            status.label(),
            s.counts.get(status)
        );
    }
    let _ = writeln!(
        out,
        "- disagreements with architectures.yaml: {}\n",
        s.disagreements
    );
    let _ = writeln!(out, "Legend: {LEGEND}.\n");

    let _ = writeln!(out, "## Platforms\n");
    let _ = writeln!(
        out,
        "| platform | tested | hosts | devices | libraries | cells |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for p in &report.platforms {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            p.platform,
            if p.tested { "yes" } else { "no" },
            p.hosts.join(", "),
            escape(&p.devices.join("; ")),
            escape(&p.libraries.join("; ")),
            counts_text(&p.counts)
        );
    }

    let k = &report.kernel_checks;
    let _ = writeln!(out, "\n## Kernel checks (not model runs)\n");
    let _ = writeln!(
        out,
        "`{}`: {}. Not counted above, nor in the matrices.\n",
        k.engine, k.what
    );
    let _ = writeln!(
        out,
        "- {} models: {}",
        k.cells.len(),
        counts_text(&k.counts)
    );
    for group in &k.issues {
        let models: Vec<&str> = group.cells.iter().map(|c| c.model.as_str()).collect();
        let _ = writeln!(
            out,
            "- {} ({}): {}",
            group.cause,
            group.cells.len(),
            models.join(", ")
        );
    }

    precision_section(&mut out, &report.precision);
    generation_section(&mut out, &report.generation);

    let _ = writeln!(out, "\n## Stages\n");
    let _ = writeln!(
        out,
        "How far each cell got, per platform: `config` and `reference` are our harness's (not tested), `export` the exporters', `load`, `run` and `mismatch` the engine's, `fallback` and `pass` successes; `-` where no check reached the model (the platform's feature was off or it is absent).\n"
    );
    stage_table(&mut out, &report.stages);

    let _ = writeln!(out, "\n## Matrix: category × platform\n");
    matrix_table(
        &mut out,
        &report.matrices.category_platform,
        &platforms,
        "category",
        false,
    );
    let _ = writeln!(out, "\n## Matrix: architecture type × platform\n");
    let _ = writeln!(
        out,
        "Counts of cells, and what architectures.yaml expects.\n"
    );
    matrix_table(
        &mut out,
        &report.matrices.architecture_platform,
        &platforms,
        "architecture",
        true,
    );

    let _ = writeln!(out, "\n## Matrix: model × platform\n");
    let _ = writeln!(
        out,
        "⚠: the measurement contradicts architectures.yaml's expectation. A date in parentheses: the status is stored evidence (model-specs/evidence) measured that day, not this run's; `stale`: measured on another fixture key, or before entries carried provenance.\n"
    );
    let _ = writeln!(out, "| model | {} |", platforms.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(platforms.len()));
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
        let values: Vec<String> = platforms
            .iter()
            .map(|p| {
                columns
                    .get(p.as_str())
                    .map_or(String::new(), |c| engines_text(c))
            })
            .collect();
        let _ = writeln!(out, "| {model} | {} |", values.join(" | "));
    }

    let _ = writeln!(out, "\n## Disagreements with the expectations\n");
    let disagreeing: Vec<&Cell> = report
        .cells
        .iter()
        .filter(|c| c.disagreement.is_some())
        .collect();
    if disagreeing.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(
            out,
            "| model | platform | engine | expected | measured | record |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for c in disagreeing {
            let record = c
                .records
                .first()
                .map(|r| format!("{} ({}, {})", r.record, r.host, r.time))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {record} |",
                c.model,
                c.platform,
                c.engine,
                support(c.expected),
                c.disagreement.as_deref().unwrap_or("")
            );
        }
    }

    let _ = writeln!(out, "\n## Engines that run the same kernels and disagree\n");
    let _ = writeln!(
        out,
        "webgpu's browser engine and its native engine run the same C++ WebGPU provider (wasm in Chromium, and ONNX Runtime's plugin with Dawn): a model one passes and the other fails points at an engine, not at the model.\n"
    );
    if report.engine_disagreements.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(out, "| model | platform | engine | status | reason |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for d in &report.engine_disagreements {
            for (engine, status, reason) in &d.engines {
                let _ = writeln!(
                    out,
                    "| {} | {} | {engine} | {} | {} |",
                    d.model,
                    d.platform,
                    status.label(),
                    reason.as_deref().unwrap_or("").replace('|', "\\|")
                );
            }
        }
    }

    let _ = writeln!(out, "\n## Implementation issues\n");
    for group in &report.issues {
        let _ = writeln!(out, "### {} ({} cells)\n", group.cause, group.cells.len());
        for cell in &group.cells {
            let reason = super::shorten(&cell.reason, 300);
            let _ = writeln!(
                out,
                "- {} on {} ({}): {} [record {}]",
                cell.model,
                cell.platform,
                cell.engine,
                escape(&reason),
                cell.record
            );
        }
        let _ = writeln!(out);
    }

    let _ = writeln!(out, "## Performance\n");
    let _ = writeln!(
        out,
        "Latency of passed checks as recorded, with what was running. Test timings are indications; `gen bench` records are the measurements (p90 and throughput).\n"
    );
    let _ = writeln!(
        out,
        "| model | platform | engine | check | median ms | p90 ms | memory | conditions | record |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for p in &report.performance {
        let memory = match (p.peak_rss_kb, p.rss_growth_kb) {
            (Some(peak), _) => format!("peak RSS {peak} KiB"),
            (None, Some(growth)) => format!("RSS +{growth} KiB"),
            _ => String::new(),
        };
        let p90 = p.p90_ms.map(|v| format!("{v:.3}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.3} | {p90} | {memory} | {} | {} |",
            p.model,
            p.platform,
            p.engine,
            p.check,
            p.median_ms,
            escape(&p.conditions),
            p.record
        );
    }

    let _ = writeln!(out, "\n## Recommendations\n");
    let _ = writeln!(out, "### Fastest verified platform per category\n");
    let _ = writeln!(
        out,
        "| category | platform | engine | median of model medians (ms) | models |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for f in &report.recommendations.fastest_verified_platform {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} | {} |",
            f.category, f.platform, f.engine, f.median_ms, f.models
        );
    }
    let _ = writeln!(out, "\n### Expectations the evidence contradicts\n");
    if report.recommendations.contradicted_expectations.is_empty() {
        let _ = writeln!(out, "None.");
    }
    for c in &report.recommendations.contradicted_expectations {
        let _ = writeln!(
            out,
            "- {} on {}: architectures.yaml says {}, {} in {} cells ({}): revisit the expectation or the cells",
            c.architecture,
            c.platform,
            support(Some(c.expected)),
            c.measured,
            c.cells,
            c.models.join(", ")
        );
    }

    let _ = writeln!(out, "\n## Models tested\n");
    let _ = writeln!(
        out,
        "| model | checkpoint | category | modality | architecture |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for m in &report.models {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            m.model,
            m.checkpoint.as_deref().unwrap_or(""),
            m.category,
            m.modality,
            m.architecture
        );
    }

    let _ = writeln!(out, "\n## Evidence\n");
    let _ = writeln!(
        out,
        "| run | hosts | first record | last record | records |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for r in &report.source.runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            r.run_id,
            r.hosts.join(", "),
            r.first,
            r.last,
            r.records
        );
    }
    out
}

/// The generation checks: per platform and engine, then the generation column of each generating model.
fn generation_section(out: &mut String, g: &super::generation::GenerationEvidence) {
    let _ = writeln!(out, "\n## Generation with a KV cache\n");
    let _ = writeln!(out, "{}.\n", g.what);
    let _ = writeln!(
        out,
        "| platform | engine | checks | first diverged at the prefill | first diverged decoding |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for e in &g.engines {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            e.platform,
            e.engine,
            counts_text(&e.counts),
            e.diverged_at_prefill,
            e.diverged_decoding
        );
    }
    let platforms: std::collections::BTreeSet<&String> =
        g.models.iter().flat_map(|m| m.platforms.keys()).collect();
    if platforms.is_empty() {
        return;
    }
    let names: Vec<&str> = platforms.iter().map(|p| p.as_str()).collect();
    let _ = writeln!(out, "\n| model | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(names.len()));
    for m in &g.models {
        let cells: Vec<&str> = platforms
            .iter()
            .map(|p| m.platforms.get(*p).map_or("", |s| s.label()))
            .collect();
        let _ = writeln!(out, "| {} | {} |", m.model, cells.join(" | "));
    }
}

/// The precision checks: the deviation per platform, engine and format, then the real checkpoints' records.
fn precision_section(out: &mut String, p: &super::precision::PrecisionEvidence) {
    use super::precision::figure;
    let _ = writeln!(out, "\n## Precision\n");
    let _ = writeln!(out, "{}.\n", p.what);
    let _ = writeln!(
        out,
        "| platform | engine | format | weights | checks | median worst-row cosine | median relative L2 |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for r in &p.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.platform,
            r.engine,
            r.precision,
            r.weights,
            counts_text(&r.counts),
            figure(r.median_worst_cosine),
            figure(r.median_rel_l2)
        );
    }
    let _ = writeln!(out, "\nOn real checkpoints (rating evidence):\n");
    if p.checkpoints.is_empty() {
        let _ = writeln!(
            out,
            "- none recorded: no spec's web_quantization rating is judged"
        );
    }
    for c in &p.checkpoints {
        let _ = writeln!(
            out,
            "- {} ({}) on {} ({}), {}: {}, {} [record {}]",
            c.model,
            escape(&c.checkpoint),
            c.platform,
            c.engine,
            c.precision,
            c.status.label(),
            escape(&c.measured()),
            c.record
        );
    }
}
