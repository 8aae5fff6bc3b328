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

use crate::{Database, LatestRecord};
use hwmatrix_cell::Planned;
use hwmatrix_record::{Basis, Outcome};

use hwmatrix_specs::plan::Plan;
use hwmatrix_specs::spec::evidence::TodaysFixtures;

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

/// The fixture keys a cell's checks ran on today: the float32 fixture's, and
/// the generation fixture's for the `generates` check (its own graph).
struct Keys {
    fixture: Option<String>,
    generation: Option<String>,
    /// What today's fixtures hold, where they are built here.
    today: Option<TodaysFixtures>,
}

impl Keys {
    /// The digests today's fixtures give for the record's check (none where
    /// they are not built here).
    fn content(&self, e: &LatestRecord) -> Vec<String> {
        self.today
            .as_ref()
            .zip(hwmatrix_cell::CheckId::parse(&e.check))
            .map_or_else(Vec::new, |(t, check)| t.digests(check, e.body.engine_kind))
    }

    fn of(&self, check: &str) -> Option<&str> {
        if check == hwmatrix_cell::GENERATES {
            self.generation.as_deref()
        } else {
            self.fixture.as_deref()
        }
    }
}

/// Why the newest records of a cell are stale, if they are.
/// `planned` gives each check's planned status: a precision check has its own
/// (the evidence store's), the cell's float32 checks the cell's.
fn stale_because(
    records: &[&LatestRecord],
    keys: &Keys,
    planned: &dyn Fn(&str) -> &'static str,
    runtime_today: &dyn Fn(hwmatrix_cell::EngineKind) -> String,
) -> Option<String> {
    for e in records {
        let planned = planned(&e.check);
        let read = e.body.fixture.as_ref().and_then(|f| f.content.as_deref());
        let content = keys.content(e);
        // Only builds of one CPU class compare by content; else the key decides.
        let same: Vec<bool> = read.map_or_else(Vec::new, |then| {
            content
                .iter()
                .filter_map(|now| hwmatrix_cell::content::comparable(then, now))
                .collect()
        });
        if let Some(then) = read.filter(|_| !same.is_empty()) {
            if !same.contains(&true) {
                return Some(format!(
                    "{} read fixture content {then} (now {}): what it reads changed",
                    e.check,
                    content.join(" or ")
                ));
            }
        } else if let (Some(now), Some(then)) = (keys.of(&e.check), e.fixture_key.as_deref())
            && now != then
        {
            return Some(format!(
                "{} ran on fixture {} (now {}): the spec or exporter changed",
                e.check,
                &then[..then.len().min(12)],
                &now[..now.len().min(12)]
            ));
        }
        // The runtime and the code that decided the verdict (hwmatrix_cell::verdict_code).
        let runtime_version = runtime_today(e.body.engine_kind);
        if e.runtime_version
            .as_deref()
            .is_some_and(|v| v != runtime_version)
        {
            return Some(format!(
                "{} was written by runtime {} (now {runtime_version})",
                e.check,
                e.runtime_version.as_deref().unwrap_or("?")
            ));
        }
        let recorded_run = matches!(e.status, Outcome::Passed | Outcome::Failed);
        let recorded_not_run = matches!(
            e.status,
            Outcome::KnownIssue | Outcome::Unsupported | Outcome::NotTested
        );
        if (planned == "run" && recorded_not_run)
            || (planned != "run"
                && planned != "no-engine"
                && recorded_run
                && e.basis == Basis::Measured)
        {
            return Some(format!(
                "{} recorded `{}`, the plan now says `{planned}`",
                e.check,
                e.status.name()
            ));
        }
    }
    None
}

pub fn render(plan: &Plan, db: &Database) -> Result<(String, usize), String> {
    let evidence = db.latest(&[])?;
    let by_cell = newest_by_cell(&evidence);
    let (tallies, stale) = tally_cells(plan, &by_cell);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Coverage of {} ({} records)\n",
        db.path().display(),
        db.record_count()?
    );
    let _ = writeln!(
        out,
        "A cell is measured (its newest records ran: passed or failed), recorded not run (ignored, unsupported, known issue), not tested (our harness could not build or run its tiny PyTorch model: our gap), stale, or without evidence. Every cell here is measured on a tiny random model: a precision check that passed says the format runs there (its kernels and operators), not that it keeps a trained model's accuracy; `gen checkpoint PATH` measures that on a checkpoint, and the report shows its row.\n"
    );
    let _ = writeln!(out, "{}", hwmatrix_specs::plan::stages_by_category(plan));
    let total = write_tallies(&mut out, &tallies);
    write_gaps(&mut out, &tallies);
    write_stale(&mut out, &stale);
    out.push_str(&evidence_store(plan));
    Ok((out, total.stale))
}

/// A cell's key: model, platform and engine.
type CellKey<'a> = (&'a str, &'a str, &'a str);

/// The tallies by category and platform, in that order.
type Tallies = BTreeMap<(String, String), Tally>;

/// A cell's planned status, and its precision checks' own: (check, planned).
type Checks = Vec<(&'static str, &'static str)>;

/// The newest records of each cell, benchmarks left out (they are no check of the cell).
fn newest_by_cell(evidence: &[LatestRecord]) -> BTreeMap<CellKey<'_>, Vec<&LatestRecord>> {
    let mut by_cell: BTreeMap<CellKey, Vec<&LatestRecord>> = BTreeMap::new();
    for e in evidence
        .iter()
        .filter(|e| e.check != hwmatrix_cell::BENCH_RECORD)
    {
        by_cell
            .entry((
                e.model.as_str(),
                e.platform.as_str(),
                e.engine_kind.as_str(),
            ))
            .or_default()
            .push(e);
    }
    by_cell
}

/// Every planned cell tallied by category and platform as measured, not run, not tested,
/// stale or without evidence, and one line per stale cell saying why.
fn tally_cells(
    plan: &Plan,
    by_cell: &BTreeMap<CellKey, Vec<&LatestRecord>>,
) -> (Tallies, Vec<String>) {
    let runtime_version = |engine| {
        hwmatrix_cell::verdict_code::today(engine)
            .unwrap_or_else(|| "unknown (no checkout to read runtime/ from)".into())
    };
    let mut tallies: Tallies = BTreeMap::new();
    let mut stale = Vec::new();
    for model in &plan.models {
        let spec = &model.model.spec;
        let keys = fixture_keys(model);
        for (platform, engine, planned, precision) in planned_cells(model) {
            let tally = tallies
                .entry((spec.category.clone(), platform.clone()))
                .or_default();
            tally.cells += 1;
            if planned == "not-tested" {
                tally.not_tested += 1;
                continue;
            }
            let Some(records) = by_cell.get(&(spec.model_type.as_str(), platform.as_str(), engine))
            else {
                tally.none += 1;
                continue;
            };
            // The quantization cell's plan is per scheme; its records are judged on fixture and version only.
            let judged = if engine == "wgpu" {
                "no-engine"
            } else {
                planned
            };
            let planned_for = |check: &str| {
                precision
                    .iter()
                    .find(|(name, _)| *name == check)
                    .map_or(judged, |(_, label)| *label)
            };
            if let Some(why) = stale_because(records, &keys, &planned_for, &runtime_version) {
                tally.stale += 1;
                stale.push(format!(
                    "{} on {platform} ({engine}): {why}",
                    spec.model_type
                ));
            } else if records
                .iter()
                .any(|e| matches!(e.status, Outcome::Passed | Outcome::Failed))
            {
                tally.measured += 1;
            } else {
                tally.not_run += 1;
            }
        }
    }
    (tallies, stale)
}

/// The fixture keys the model's checks run on today; none for the float32 fixture where
/// the export is a known issue.
fn fixture_keys(model: &hwmatrix_specs::plan::ModelPlan) -> Keys {
    let exported = model.model.spec.export.known_issue.is_none();
    Keys {
        fixture: exported.then(|| model.model.fixture_key()),
        generation: model
            .model
            .generates()
            .then(|| model.model.generation_fixture_key()),
        today: Some(TodaysFixtures::of(
            model.model,
            &hwmatrix_cell::paths::fixtures_dir(),
        )),
    }
}

/// The model's planned cells as (platform, engine, planned, precision checks), its
/// quantization cell last where it has one.
fn planned_cells(
    model: &hwmatrix_specs::plan::ModelPlan,
) -> Vec<(String, &'static str, &'static str, Checks)> {
    let mut cells: Vec<(String, &str, &str, Checks)> = model
        .model_cells()
        .map(|c| {
            let precision: Checks = c
                .precision_checks
                .iter()
                .map(|p| (p.precision.check_name(), p.planned.label()))
                .collect();
            (
                c.platform.name().to_string(),
                c.engine.kind().name(),
                c.planned.label(),
                precision,
            )
        })
        .collect();
    if let Some(k) = model.kernel_cell() {
        // A scheme stored as failing makes the kernel cell a known issue here, though it runs.
        let planned = if k
            .quantization
            .iter()
            .all(|c| matches!(c.planned, Planned::Run))
        {
            "run"
        } else if k
            .quantization
            .iter()
            .any(|c| matches!(c.planned, Planned::NotTested { .. }))
        {
            "not-tested"
        } else {
            "known-issue"
        };
        cells.push((
            k.platform.name().to_string(),
            k.engine.kind().name(),
            planned,
            Vec::new(),
        ));
    }
    cells
}

/// The category × platform table of tallies with its `all` row; returns that total.
fn write_tallies(out: &mut String, tallies: &Tallies) -> Tally {
    let _ = writeln!(
        out,
        "| category | platform | cells | measured | not run | not tested | stale | no evidence |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let mut total = Tally::default();
    for ((category, platform), t) in tallies {
        let _ = writeln!(
            out,
            "| {category} | {platform} | {} | {} | {} | {} | {} | {} |",
            t.cells, t.measured, t.not_run, t.not_tested, t.stale, t.none
        );
        total.cells += t.cells;
        total.measured += t.measured;
        total.not_run += t.not_run;
        total.not_tested += t.not_tested;
        total.stale += t.stale;
        total.none += t.none;
    }
    let _ = writeln!(
        out,
        "| all | all | {} | {} | {} | {} | {} | {} |",
        total.cells, total.measured, total.not_run, total.not_tested, total.stale, total.none
    );
    total
}

/// The gaps section: per platform, the categories with cells and no evidence.
fn write_gaps(out: &mut String, tallies: &Tallies) {
    let _ = writeln!(
        out,
        "\n## Gaps: platforms and categories with cells and no evidence\n"
    );
    let mut gaps: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ((category, platform), t) in tallies {
        if t.none > 0 {
            gaps.entry(platform.as_str())
                .or_default()
                .push(format!("{category} {}/{}", t.none, t.cells));
        }
    }
    for (platform, list) in &gaps {
        let _ = writeln!(out, "- {platform}: {}", list.join(", "));
    }
}

/// The stale records section: the first 200 stale cells and how many more.
fn write_stale(out: &mut String, stale: &[String]) {
    let _ = writeln!(out, "\n## Stale records ({} cells)\n", stale.len());
    for line in stale.iter().take(200) {
        let _ = writeln!(out, "- {line}");
    }
    if stale.len() > 200 {
        let _ = writeln!(out, "- … and {} more", stale.len() - 200);
    }
}

/// The store's stale entries (`bert openvino/onnxruntime/runs: why`) of the
/// plan's models, or of its high-priority ones only: what `gen coverage
/// --fail-on-stale` fails on. Apart, those of one CPU class (int8 on a CPU
/// without VNNI): only a machine of that class measures them, and every run
/// on one does (its tests run the check and must see it fail as stored), so
/// they are not failed on.
pub struct StaleEntries {
    pub stale: Vec<String>,
    pub of_a_cpu_class: Vec<String>,
}

pub fn stale_entries(plan: &Plan, high_priority_only: bool) -> StaleEntries {
    let (mut stale, mut of_a_cpu_class) = (Vec::new(), Vec::new());
    for model in &plan.models {
        let spec = &model.model.spec;
        if high_priority_only && spec.priority != hwmatrix_specs::spec::Priority::High {
            continue;
        }
        let today = TodaysFixtures::of(model.model, &hwmatrix_cell::paths::fixtures_dir());
        for entry in &spec.evidence {
            if let Some(why) = entry.stale(&today.today(entry)) {
                let list = if entry.cpu_class.is_some() {
                    &mut of_a_cpu_class
                } else {
                    &mut stale
                };
                list.push(format!(
                    "{} {}{}{}: {why}",
                    spec.model_type,
                    entry.platform.map(|p| format!("{p}/")).unwrap_or_default(),
                    entry
                        .engine
                        .map(|e| format!("{}/", e.name()))
                        .unwrap_or_default(),
                    entry.check
                ));
            }
        }
    }
    StaleEntries {
        stale,
        of_a_cpu_class,
    }
}

/// The evidence store's entries per platform (`-` for the fixture pipeline):
/// by who failed, and how many are stale (made with another fixture key, or
/// moved from the specs before entries carried provenance).
fn evidence_store(plan: &Plan) -> String {
    use hwmatrix_cell::Attribution;
    use hwmatrix_specs::spec::evidence::EntryOutcome;
    // platform → [model, engine, environment, harness, does not apply, stale, legacy]
    let mut rows: BTreeMap<&str, [usize; 7]> = BTreeMap::new();
    for model in &plan.models {
        let today = TodaysFixtures::of(model.model, &hwmatrix_cell::paths::fixtures_dir());
        for entry in &model.model.spec.evidence {
            let row = rows
                .entry(entry.platform.map_or("-", |p| p.name()))
                .or_default();
            match (entry.outcome, entry.attribution) {
                (EntryOutcome::DoesNotApply, _) | (_, None) => row[4] += 1,
                (_, Some(a)) => {
                    row[Attribution::ALL
                        .iter()
                        .position(|x| *x == a)
                        .expect("one of ALL")] += 1
                }
            }
            row[5] += usize::from(entry.stale(&today.today(entry)).is_some());
            row[6] += usize::from(entry.provenance.legacy.is_some());
        }
    }
    let mut out = String::from(
        "\n## The evidence store (model-specs/evidence)\n\nWho failed decides the plan: the model's and the engine's failures are known issues; the environment's (a software adapter without a feature, an emulator, our time limit) and our harness's are not tested here.\n\n| platform | model | engine | environment | harness | does not apply | stale | of which legacy |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (platform, r) in rows {
        let _ = writeln!(
            out,
            "| {platform} | {} | {} | {} | {} | {} | {} | {} |",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6]
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(check: &str, status: &str) -> LatestRecord {
        let record = serde_json::json!({
            "run_id": "run", "time": "t", "host": "h", "model": "dac", "category": "audio", "platform": "cpu",
            "engine_kind": "onnxruntime", "engine": "onnxruntime, CPUExecutionProvider", "check": check, "status": status,
            "basis": "measured", "precision": "float32", "runtime_version": env!("CARGO_PKG_VERSION"),
        });
        LatestRecord::of("r".into(), serde_json::from_value(record).unwrap())
    }

    #[test]
    fn a_precision_check_is_judged_by_its_own_plan() {
        // dac's cell runs; its int8 check is a known issue (precision_issues), and the run recorded it so.
        let records = [
            evidence("matches_reference", "passed"),
            evidence("int8_matches_reference", "known-issue"),
        ];
        let records: Vec<&LatestRecord> = records.iter().collect();
        let own = |check: &str| {
            if check == "int8_matches_reference" {
                "known-issue"
            } else {
                "run"
            }
        };
        let keys = Keys {
            fixture: None,
            generation: None,
            today: None,
        };
        assert_eq!(
            stale_because(&records, &keys, &own, &|_| env!("CARGO_PKG_VERSION")
                .to_string()),
            None
        );
        // Judged by the cell's plan instead, the same records would look stale.
        let cell_only = |_: &str| "run";
        let why = stale_because(&records, &keys, &cell_only, &|_| {
            env!("CARGO_PKG_VERSION").to_string()
        })
        .expect("stale by the cell's plan");
        assert!(
            why.contains("int8_matches_reference recorded `known-issue`"),
            "{why}"
        );
    }

    #[test]
    fn a_generates_record_is_judged_by_the_generation_fixture_key() {
        let mut record = evidence("generates", "passed");
        record.fixture_key = Some("generation-key".into());
        let run = |_: &str| "run";
        let fresh = Keys {
            fixture: Some("float32-key".into()),
            generation: Some("generation-key".into()),
            today: None,
        };
        assert_eq!(
            stale_because(&[&record], &fresh, &run, &|_| env!("CARGO_PKG_VERSION")
                .to_string()),
            None,
            "its own fixture's key, not the float32 one's"
        );
        let rebuilt = Keys {
            fixture: Some("float32-key".into()),
            generation: Some("another-key".into()),
            today: None,
        };
        let why = stale_because(&[&record], &rebuilt, &run, &|_| {
            env!("CARGO_PKG_VERSION").to_string()
        })
        .expect("the generation fixture changed");
        assert!(
            why.contains("generates ran on fixture generation-k"),
            "{why}"
        );
    }
}
