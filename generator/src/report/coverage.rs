//! `gen coverage`: which cells have evidence, which of it is stale, and the
//! gaps, by category and platform.
//!
//! A cell's evidence is stale when its newest records no longer describe the
//! cell as it is: measured on a fixture built from another spec or exporter
//! (the fixture key differs), written by another runtime version, or with a
//! status the plan no longer gives (a record of a known issue for a cell
//! planned to run, or the reverse).

use std::collections::BTreeMap;
use std::fmt::Write;

use hwmatrix_cell::Planned;
use hwmatrix_results::{Database, Evidence};

use crate::plan::Plan;

#[derive(Default)]
struct Tally {
    cells: usize,
    measured: usize,
    not_run: usize,
    /// Planned not tested: our harness never put the model on the platform.
    not_tested: usize,
    stale: usize,
    none: usize,
}

/// Why the newest records of a cell are stale, if they are.
fn stale_because(records: &[&Evidence], fixture_key: Option<&str>, planned: &str, runtime_version: &str) -> Option<String> {
    for e in records {
        if let (Some(now), Some(then)) = (fixture_key, e.fixture_key.as_deref())
            && now != then
        {
            return Some(format!("{} ran on fixture {} (now {}): the spec or exporter changed", e.check, &then[..then.len().min(12)], &now[..now.len().min(12)]));
        }
        if e.runtime_version.as_deref().is_some_and(|v| v != runtime_version) {
            return Some(format!("{} was written by runtime {} (now {runtime_version})", e.check, e.runtime_version.as_deref().unwrap_or("?")));
        }
        let recorded_run = matches!(e.status.as_str(), "passed" | "failed");
        let recorded_not_run = matches!(e.status.as_str(), "known-issue" | "unsupported" | "not-tested");
        if (planned == "run" && recorded_not_run) || (planned != "run" && planned != "no-engine" && recorded_run && e.basis.as_deref() == Some("measured")) {
            return Some(format!("{} recorded `{}`, the plan now says `{planned}`", e.check, e.status));
        }
    }
    None
}

pub fn render(plan: &Plan, db: &Database) -> Result<(String, usize), String> {
    let evidence = db.latest(&[])?;
    let mut by_cell: BTreeMap<(&str, &str, &str), Vec<&Evidence>> = BTreeMap::new();
    for e in evidence.iter().filter(|e| e.check != "bench") {
        by_cell.entry((e.model.as_str(), e.platform.as_str(), e.engine_kind.as_str())).or_default().push(e);
    }
    let runtime_version = env!("CARGO_PKG_VERSION");
    let mut tallies: BTreeMap<(String, String), Tally> = BTreeMap::new();
    let mut stale = Vec::new();
    for model in &plan.models {
        let spec = &model.model.spec;
        let key = spec.export.known_issue.is_none().then(|| model.model.fixture_key());
        let mut cells: Vec<(String, &str, &str)> = model.cells.iter().map(|c| (c.platform.name().to_string(), c.engine.kind().name(), c.planned.label())).collect();
        if let Some(q) = &model.quantization {
            let planned = if q.checks.iter().all(|c| matches!(c.planned, Planned::Run)) {
                "run"
            } else if q.checks.iter().any(|c| matches!(c.planned, Planned::NotTested { .. })) {
                "not-tested"
            } else {
                "known-issue"
            };
            cells.push((q.platform.name().to_string(), "wgpu", planned));
        }
        for (platform, engine, planned) in cells {
            let tally = tallies.entry((spec.category.clone(), platform.clone())).or_default();
            tally.cells += 1;
            if planned == "not-tested" {
                tally.not_tested += 1;
                continue;
            }
            let Some(records) = by_cell.get(&(spec.model_type.as_str(), platform.as_str(), engine)) else {
                tally.none += 1;
                continue;
            };
            // The quantization cell's plan is per scheme; its records are judged on fixture and version only.
            let judged = if engine == "wgpu" { "no-engine" } else { planned };
            if let Some(why) = stale_because(records, key.as_deref(), judged, runtime_version) {
                tally.stale += 1;
                stale.push(format!("{} on {platform} ({engine}): {why}", spec.model_type));
            } else if records.iter().any(|e| matches!(e.status.as_str(), "passed" | "failed")) {
                tally.measured += 1;
            } else {
                tally.not_run += 1;
            }
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "# Coverage of {} ({} records)\n", db.path().display(), db.record_count()?);
    let _ = writeln!(out, "A cell is measured (its newest records ran: passed or failed), recorded not run (ignored, unsupported, known issue), not tested (our harness could not build or run its tiny PyTorch model: our gap), stale, or without evidence.\n");
    let _ = writeln!(out, "{}", crate::list::stages_by_category(plan));
    let _ = writeln!(out, "| category | platform | cells | measured | not run | not tested | stale | no evidence |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let mut total = Tally::default();
    for ((category, platform), t) in &tallies {
        let _ = writeln!(out, "| {category} | {platform} | {} | {} | {} | {} | {} | {} |", t.cells, t.measured, t.not_run, t.not_tested, t.stale, t.none);
        total.cells += t.cells;
        total.measured += t.measured;
        total.not_run += t.not_run;
        total.not_tested += t.not_tested;
        total.stale += t.stale;
        total.none += t.none;
    }
    let _ = writeln!(out, "| all | all | {} | {} | {} | {} | {} | {} |", total.cells, total.measured, total.not_run, total.not_tested, total.stale, total.none);
    let _ = writeln!(out, "\n## Gaps: platforms and categories with cells and no evidence\n");
    let mut gaps: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ((category, platform), t) in &tallies {
        if t.none > 0 {
            gaps.entry(platform.as_str()).or_default().push(format!("{category} {}/{}", t.none, t.cells));
        }
    }
    for (platform, list) in &gaps {
        let _ = writeln!(out, "- {platform}: {}", list.join(", "));
    }
    let _ = writeln!(out, "\n## Stale evidence ({} cells)\n", stale.len());
    for line in stale.iter().take(200) {
        let _ = writeln!(out, "- {line}");
    }
    if stale.len() > 200 {
        let _ = writeln!(out, "- … and {} more", stale.len() - 200);
    }
    Ok((out, total.stale))
}
