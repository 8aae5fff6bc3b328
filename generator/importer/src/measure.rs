//! `gen measure --platform P`: a platform's cells run for real, and what they
//! measured goes into the evidence store (`model-specs/evidence/`). Every
//! cell of P that can run (its model has a fixture, no person set its status
//! on P, its engine is built) is tested with the cargo features of P and its
//! engines, today's stored failures on P included. Each check keeps its own
//! outcome: a pass clears its entry, a failure is written with who failed and
//! the record's provenance (run, date, host, device, engine, library, fixture
//! key), kept as it was when a later run measures the same failure again. So
//! a platform's known issues are measurements, never typed by hand, and they
//! come back to `run` when a new engine or library fixes them.
//!
//! The cells are the generated tests themselves (`cargo test -p generated`),
//! read back from their result records: the same checks, engine and library
//! as any test run, so `gen measure --platform` and `cargo test` cannot
//! disagree about a cell. Only one run's records are taken (the newest run in
//! the folder), the newest record per check, and only checks that ran
//! (`basis: measured`, passed or failed): never the records the ledger writes
//! for cells that did not run.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::Digest;

use hwmatrix_cell::{
    Attribution, Basis, CheckId, EngineKind, ErrorKind, GENERATION_EXPORT_FAILED, Outcome, Planned,
    Platform, Stage,
};
use hwmatrix_record::Record;

use hwmatrix_specs::plan::{self, CellPlan, Plan, Selection};
use hwmatrix_specs::slice;
use hwmatrix_specs::spec::evidence::{self, Entry, EntryKey, EntryOutcome, Provenance};
use hwmatrix_specs::spec::passed::{self, PassedCell};
use hwmatrix_specs::spec::{LoadedModel, Specs};

/// A record as gen measure reads it: what an evidence entry keeps of it.
trait AsEntry {
    fn measured(&self) -> bool;
    fn entry(&self) -> Option<Entry>;
}

impl AsEntry for Record {
    /// Whether a check of this run ran it (never the ledger's records of cells not run, nor a
    /// check that found no current fixture: a fixture rebuilt under another key while the run
    /// went on is our harness's state, not the model's on the platform).
    fn measured(&self) -> bool {
        // A known issue measured again (a CPU class's stored failure, which its test runs and
        // must see fail) is a failure that ran.
        self.basis == Basis::Measured
            && matches!(
                self.status,
                Outcome::Passed | Outcome::Failed | Outcome::KnownIssue
            )
            && !matches!(
                self.error_kind,
                Some(ErrorKind::FixtureStale | ErrorKind::FixtureMissing)
            )
    }

    /// The record as an evidence entry; None for a pass.
    fn entry(&self) -> Option<Entry> {
        if self.status == Outcome::Passed {
            return None;
        }
        let error =
            evidence::stored_error(self.reason.as_deref().unwrap_or("failed without a reason"));
        let emulated = self.device_kind() == Some(hwmatrix_cell::DeviceKind::Emulator);
        let (outcome, attribution) = if self.error_kind == Some(ErrorKind::DoesNotApply) {
            (EntryOutcome::DoesNotApply, None)
        } else {
            (
                EntryOutcome::Failed,
                Some(Attribution::of_failure(
                    self.error_kind,
                    self.platform,
                    emulated,
                )),
            )
        };
        Some(Entry {
            platform: Some(self.platform),
            engine: Some(self.engine_kind),
            // Every record read_records keeps names a check (it refuses any other name).
            check: CheckId::parse(&self.check)?,
            cpu_class: None,
            outcome,
            attribution,
            stage: self.stage,
            error_kind: self.error_kind,
            error,
            provenance: provenance(self),
        })
    }
}

/// Where and with what a record was measured, as the store keeps it.
fn provenance(record: &Record) -> Provenance {
    Provenance {
        run: Some(record.run_id.clone()),
        date: record.time.clone(),
        host: Some(record.host.clone()),
        device: record.device.as_deref().map(evidence::relative_paths),
        engine: Some(evidence::relative_paths(&record.engine)),
        library: record.library.as_deref().map(evidence::relative_paths),
        cpu: record
            .cpu_class
            .as_ref()
            .filter(|_| record.platform.computes_on_host_cpu())
            .map(hwmatrix_cell::CpuClass::describe),
        fixture_key: record.fixture.as_ref().and_then(|f| f.cache_key.clone()),
        content: record.fixture.as_ref().and_then(|f| f.content.clone()),
        runtime: Some(record.runtime_version.clone()),
        record: None,
        legacy: None,
    }
}

/// The records of one model's cell on the platform: per check, the record
/// that decides it (of a model checked as components, the first failed one).
#[derive(Default)]
struct Measured {
    checks: BTreeMap<CheckId, Record>,
    /// Each check's record by name (16 hex digits of its line's sha256, as
    /// the results database names it): its entry cites it.
    record_ids: BTreeMap<CheckId, String>,
    /// Checks the run did not run by its plan (the ledger's records: a known
    /// issue, a feature off): their entries are left as they were, never taken
    /// for checks whose process died.
    not_run: std::collections::BTreeSet<CheckId>,
}

impl Measured {
    /// The entry of `check`'s record (None: it passed), citing the record.
    fn entry(&self, check: CheckId, record: &Record) -> Option<Entry> {
        let mut entry = record.entry()?;
        entry.provenance.record = self.record_ids.get(&check).cloned();
        Some(entry)
    }

    /// The cell's passed checks as the store keeps them, with the provenance
    /// of the newest of them; None where none passed.
    fn passes(&self, platform: Platform, engine: EngineKind) -> Option<PassedCell> {
        let passes: Vec<(&CheckId, &Record)> = self
            .checks
            .iter()
            .filter(|(_, r)| r.status == Outcome::Passed)
            .collect();
        let newest = passes.iter().max_by_key(|(_, r)| r.time.as_str())?.1;
        let mut cell = PassedCell::new(platform, engine, provenance(newest));
        for (&check, record) in passes {
            cell.add(
                check,
                record.fixture.as_ref().and_then(|f| f.content.as_deref()),
            );
        }
        Some(cell)
    }

    fn passed(&self, check: CheckId) -> Option<bool> {
        self.checks.get(&check).map(|r| r.status == Outcome::Passed)
    }

    /// The CPU class the cell's checks ran on, where its records name one.
    fn cpu_class(&self) -> Option<String> {
        self.checks
            .values()
            .find_map(|r| r.cpu_class.as_ref())
            .filter(|_| {
                self.checks
                    .values()
                    .any(|r| r.platform.computes_on_host_cpu())
            })
            .map(|c| c.class.clone())
    }
}

/// An entry for a check that should have a record and has none (its test
/// process died first): our harness's gap, with the provenance of the
/// cell's other records.
fn no_record(platform: Platform, engine: EngineKind, check: CheckId, beside: &Record) -> Entry {
    let mut entry = Record {
        check: check.name().to_string(),
        status: Outcome::Failed,
        error_kind: Some(ErrorKind::NoRecord),
        stage: Some(Stage::Run),
        reason: Some(
            "no record (the test did not run: its process ended before it could write one)".into(),
        ),
        ..beside.clone()
    }
    .entry()
    .expect("a failure");
    entry.platform = Some(platform);
    entry.engine = Some(engine);
    entry
}

fn key(platform: Platform, engine: EngineKind, check: CheckId) -> EntryKey {
    EntryKey {
        platform: Some(platform),
        engine: Some(engine),
        check,
        cpu_class: None,
    }
}

/// The key of a record of `check`: a class-scoped one (a precision check on a
/// platform that computes on the host's CPU) is its CPU class's.
fn key_of(check: CheckId, record: &Record) -> EntryKey {
    let mut key = key(record.platform, record.engine_kind, check);
    if evidence::class_scoped(Some(record.platform), check) {
        key.cpu_class = record.cpu_class.as_ref().map(|c| c.class.clone());
    }
    key
}

/// How `gen measure --platform` runs.
pub struct Options<'a> {
    /// A results folder of a run already made (here or on another machine) to
    /// import instead of running the cells.
    pub records: Option<&'a Path>,
    /// The CPU class of the machine that wrote `records`, for records that name none.
    pub records_cpu_class: Option<&'a hwmatrix_cell::CpuClass>,
    /// The CPU class the cells run on (this machine's): verifying, only entries that hold
    /// on it are re-measured.
    pub cpu_class: hwmatrix_cell::CpuClass,
    /// Re-measure the cells the store has entries of and compare; write nothing.
    pub verify: bool,
    /// Only the cells of slice K of N.
    pub slice: Option<(u32, u32)>,
    /// Only the cells holding an entry that is stale here (measured on other
    /// fixture content, engine, browser release or verdict code than this
    /// checkout and its fixtures have): a stale known issue runs again rather
    /// than stay an ignored test; verifying cpu, stale export failures are exported again.
    pub stale: bool,
    /// The test binary's cargo features, where not the platform's and its engines'.
    pub features: Option<String>,
    /// OpenVINO's venv Python, which makes NNCF's weight formats: before openvino's
    /// OpenVINO-runtime cells run, the formats their nncf checks read are made for the
    /// models selected where missing (`gen fixtures --no-nncf` leaves them out).
    pub nncf_python: Option<&'a Path>,
}

/// What a verifying run found: an entry its records disagree with, by
/// outcome (passed, failed, does not apply), by who failed, or by the error's
/// kind. A check that could not run here ([`could_not_run`]: an absent
/// platform, a missing library, a process gone before its record) never
/// agrees with a stored failure of the model or the engine, which it did not
/// measure. Who failed and the kind are not compared with an entry moved from
/// the specs (`provenance.legacy`): they were inferred from its message.
fn disagreement(
    model_type: &str,
    key: &EntryKey,
    stored: Option<&Entry>,
    measured: Option<&Entry>,
) -> Option<String> {
    let status = |e: Option<&Entry>| match e {
        None => "passed".to_string(),
        Some(e) if e.outcome == EntryOutcome::DoesNotApply => "does not apply".to_string(),
        Some(e) => format!(
            "failed: {} ({})",
            e.attribution.map_or("nobody named", |a| a.phrase()),
            e.error_kind.map_or("no error kind", ErrorKind::name)
        ),
    };
    let outcome = |e: Option<&Entry>| e.map(|e| e.outcome);
    let place = format!(
        "{model_type} {}{}{}",
        key.platform.map(|p| format!("{p}/")).unwrap_or_default(),
        key.engine
            .map(|e| format!("{}/", e.name()))
            .unwrap_or_default(),
        key.check
    );
    let differs = match (stored, measured) {
        (Some(s), Some(m)) if s.outcome == m.outcome => {
            let unmeasured = m.error_kind.is_some_and(could_not_run) && s.is_known_issue();
            // An entry moved from the specs, or one whose check could not run (its process
            // gone before a record), named who failed without measuring it: outcome only.
            let unnamed = s.provenance.legacy.is_some() || s.error_kind.is_some_and(could_not_run);
            unmeasured
                || (!unnamed
                    && (s.attribution != m.attribution || !same_kind(s.error_kind, m.error_kind)))
        }
        _ => outcome(stored) != outcome(measured),
    };
    differs.then(|| {
        let error = measured
            .map(|e| format!(": {}", hwmatrix_specs::text::shorten(&e.error, 300)))
            .unwrap_or_default();
        let unmeasured = if measured.is_some_and(|m| m.error_kind.is_some_and(could_not_run)) {
            " (it could not run the check here, so it measured nothing of the model)"
        } else {
            ""
        };
        format!(
            "{place}: the store says {}{}, this run measured {}{unmeasured}{error}",
            status(stored),
            stored
                .map(|e| format!(" (since {})", e.provenance.date))
                .unwrap_or_default(),
            status(measured)
        )
    })
}

/// Whether two failures' kinds say the same thing. Wrong values are one
/// failure whether they read as NaN or as finite numbers: a graph that reads
/// memory it never wrote gives either, run to run (siglip2's TorchScript trace
/// at batch 2, on one fixture within the hour: non-finite, then
/// out-of-tolerance). Every other kind agrees only with itself.
fn same_kind(stored: Option<ErrorKind>, measured: Option<ErrorKind>) -> bool {
    let wrong_values =
        |k: Option<ErrorKind>| matches!(k, Some(ErrorKind::NonFinite | ErrorKind::OutOfTolerance));
    stored == measured || (wrong_values(stored) && wrong_values(measured))
}

/// Whether a failure of this kind means the check could not run here: it
/// measured this machine or our harness, nothing of the model or the engine.
fn could_not_run(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::PlatformAbsent
            | ErrorKind::EngineNotBuilt
            | ErrorKind::LibraryMissing
            | ErrorKind::ProviderRegistration
            | ErrorKind::FixtureMissing
            | ErrorKind::FixtureStale
            | ErrorKind::FixtureInvalid
            | ErrorKind::RecordWrite
            | ErrorKind::NoRecord
    )
}

/// The cells a measurement runs: (model, engine) pairs, and the models whose
/// quantization checks (wgpu kernels) run.
struct Selected<'a> {
    cells: Vec<(&'a LoadedModel, EngineKind)>,
    /// How many of them are kernel cells (the quantization checks on wgpu).
    kernels: usize,
    /// Verifying: cells whose stored checks all ran past our time limit, not
    /// re-measured (that would spend the limit again and measure nothing).
    at_our_limit: usize,
}

/// What `--stale` compares a model's entries with: this checkout and the
/// fixtures built here, read once per model (None without --stale).
fn today_if_stale(model: &LoadedModel, options: &Options) -> Option<evidence::TodaysFixtures> {
    options
        .stale
        .then(|| evidence::TodaysFixtures::of(model, &hwmatrix_cell::paths::fixtures_dir()))
}

/// Whether `entries` are selected by `--stale` (`today`, from [`today_if_stale`]):
/// any of them stale ([`Entry::stale`]); without --stale, all are.
fn selected_by_staleness<'e>(
    today: Option<&evidence::TodaysFixtures>,
    entries: impl IntoIterator<Item = &'e Entry>,
) -> bool {
    let Some(today) = today else {
        return true;
    };
    entries
        .into_iter()
        .any(|entry| entry.stale(&today.today(entry)).is_some())
}

/// Whether an entry is our own time limit's: it measured nothing of the
/// model, and how fast a machine is decides it (not tested here).
fn at_our_limit(entry: &Entry) -> bool {
    entry.error_kind == Some(ErrorKind::Timeout)
}

/// A check that ran past our time limit, in the store or in this run, is not
/// compared: neither side measured the model.
fn either_at_our_limit(stored: Option<&Entry>, now: Option<&Entry>) -> bool {
    stored.is_some_and(at_our_limit) || now.is_some_and(at_our_limit)
}

/// The evidence changes a run makes, per model: each check's entry, or None
/// where it passed (its entry is cleared).
type Changes<'a> = BTreeMap<&'a str, Vec<(EntryKey, Option<Entry>)>>;

/// Each measured cell's passes by model (None: the cell measured, nothing passed).
type Passes<'a> = BTreeMap<&'a str, Vec<(Platform, EngineKind, Option<PassedCell>)>>;

/// What the run measured, counted for its summary line.
#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    precision_only: usize,
    precision_failed: usize,
    generation_failed: usize,
    quantization_measured: usize,
    quantization_failed: usize,
}

/// Whether a planned status comes from the evidence store (what a
/// measurement re-measures), not from a person's spec.
fn from_store(planned: &Planned<String>) -> bool {
    matches!(
        planned,
        Planned::KnownIssue {
            basis: Basis::Evidence,
            ..
        } | Planned::NotTested { .. }
            | Planned::Unsupported {
                basis: Basis::Evidence,
                ..
            }
    )
}

/// The stages: select the cells, run them (or read a run's records), turn
/// each check's record into its entry, then write the store or, verifying,
/// compare with it.
pub fn run(
    root: &Path,
    specs: &Specs,
    platform: Platform,
    models: &[String],
    options: &Options,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let selection = Selection {
        models: models.to_vec(),
        categories: vec![],
        platforms: vec![platform],
    };
    let plan = plan::plan(specs, &selection).map_err(|e| format!("error: {e}"))?;
    let selected = select(&plan, platform, options);
    // Re-verifying cpu exports the slice's stored export failures again first.
    let mut changes: Changes = BTreeMap::new();
    if options.verify && platform == Platform::Cpu && options.records.is_none() {
        reexport(specs, models, options, &mut changes, out, err)?;
    }
    let nothing_to_run = selected.cells.is_empty();
    if nothing_to_run && !changes.is_empty() {
        return verify(
            specs,
            platform,
            hwmatrix_cell::run::run_id(),
            &changes,
            out,
            err,
        );
    }
    if nothing_to_run && options.stale {
        let _ = writeln!(
            out,
            "gen measure --platform {platform} --stale: no stored entry of the selected models is stale here, nothing to measure again"
        );
        return Ok(0);
    }
    if nothing_to_run {
        let _ = writeln!(
            out,
            "gen measure --platform {platform}: no cell to measure (every selected model is a known issue, unsupported or has no engine on {platform})"
        );
        return Ok(0);
    }
    let (run_id, records) = match options.records {
        Some(dir) => {
            let (run, mut records) = read_records(dir, platform, err)?;
            if let Some(class) = options.records_cpu_class {
                for record in records.values_mut().flat_map(|m| m.checks.values_mut()) {
                    if record.cpu_class.is_none() && record.platform.computes_on_host_cpu() {
                        record.cpu_class = Some(class.clone());
                    }
                }
            }
            (run, records)
        }
        None => run_cells(root, specs, platform, &selected, options, err)?,
    };
    let mut tally = Tally::default();
    let mut passes: Passes = BTreeMap::new();
    let mut unrecorded = Vec::new();
    // Cells whose stored passes hold checks this run did not record (see `passes_left_out`),
    // and the evidence files read for them, which `write_store` merges into.
    let mut partial = Vec::new();
    let mut files: BTreeMap<&str, evidence::EvidenceFile> = BTreeMap::new();
    for (model, engine) in &selected.cells {
        let Some(measured) = records.get(&(model.spec.model_type.clone(), *engine)) else {
            unrecorded.push(format!("{} with {}", model.spec.model_type, engine.name()));
            continue;
        };
        let cell_plan = plan
            .models
            .iter()
            .find(|m| m.model.spec.model_type == model.spec.model_type)
            .and_then(|m| m.cells.iter().find(|c| c.engine.kind() == *engine));
        let cell = MeasuredCell {
            model,
            platform,
            engine: *engine,
            measured,
            plan: cell_plan,
        };
        let cell_changes = cell.changes(options.verify, &mut tally, err);
        // A cell with only the ledger's records was not measured: its passes stay.
        let mut keeps_its_passes = measured.checks.is_empty();
        if !keeps_its_passes && !options.verify {
            let file = match files.entry(model.spec.model_type.as_str()) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(evidence::read(&specs.root, &model.spec.model_type)?)
                }
            };
            let block = file
                .passed
                .iter()
                .find(|p| p.platform == platform && p.engine == *engine);
            // Another CPU class's verdicts of class-scoped checks (another machine's int8
            // records) say nothing of the passes this class measured: they stay.
            keeps_its_passes = block.is_some_and(|block| {
                measured.checks.iter().all(|(check, record)| {
                    evidence::class_scoped(Some(platform), *check)
                        && record.cpu_class.as_ref().is_some_and(|class| {
                            Some(class.class.as_str()) != block.provenance.cpu_class()
                        })
                })
            });
            let left = block
                .filter(|_| !keeps_its_passes)
                .map(|p| passes_left_out(p, measured, cell_plan, &cell_changes))
                .unwrap_or_default();
            if !left.is_empty() {
                partial.push(format!(
                    "{} with {} ({})",
                    model.spec.model_type,
                    engine.name(),
                    left.iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        let entries = changes.entry(model.spec.model_type.as_str()).or_default();
        entries.extend(cell_changes);
        if !keeps_its_passes {
            passes
                .entry(model.spec.model_type.as_str())
                .or_default()
                .push((platform, *engine, measured.passes(platform, *engine)));
        }
    }
    warn_unrecorded(&unrecorded, platform, err);
    if !partial.is_empty() {
        const NAMED: usize = 8;
        return Err(format!(
            "the run measured only some checks of {} cells whose stored passes hold others, which importing it would drop (a cell's passes are one run's): {}{}; nothing was written. Import a run of whole cells (a test filter of `<model>::{platform}::<engine>::`, without `--skip`), or measure them with `gen measure --platform {platform} --model M`",
            partial.len(),
            partial[..partial.len().min(NAMED)].join("; "),
            if partial.len() > NAMED {
                format!("; and {} more", partial.len() - NAMED)
            } else {
                String::new()
            }
        ));
    }
    if options.verify {
        if selected.at_our_limit > 0 {
            let _ = writeln!(
                out,
                "gen measure --platform {platform} --verify: {} cells whose stored checks all ran past our time limit are not re-measured (`gen measure --platform {platform} --model M` measures them again)",
                selected.at_our_limit
            );
        }
        return verify(specs, platform, &run_id, &changes, out, err);
    }
    let written = write_store(specs, changes, passes, files)?;
    // A --stale run measures the cells it chose for their stale entries (mostly
    // failures): no count of a CPU class's passes.
    let classes = if options.stale {
        "; no CPU class recorded (a --stale run measures only the cells it chose)".to_string()
    } else {
        record_classes(
            specs,
            &plan,
            platform,
            &run_id,
            &records,
            !models.is_empty(),
        )?
    };
    let _ = writeln!(
        out,
        "gen measure --platform {platform} (run {run_id}): {} cells measured, {} pass every float32 check, {} with a failed float32 check, {} with precision checks only; {} precision checks did not pass, {} generates checks failed; quantization checks of {} models measured ({} planned), {} failed; {written} evidence files written (run `gen` to regenerate the cells){classes}",
        tally.passed + tally.failed + tally.precision_only,
        tally.passed,
        tally.failed,
        tally.precision_only,
        tally.precision_failed,
        tally.generation_failed,
        tally.quantization_measured,
        selected.kernels,
        tally.quantization_failed,
    );
    Ok(0)
}

/// The checks a cell's stored passes hold that this run neither recorded nor changed the
/// entry of, and that the cell's plan still runs: a run of some of its checks (a test filter,
/// `--skip`). The store keeps a cell's passes as one run's, with its provenance, so importing
/// the run would replace the block and drop them; the check the plan no longer runs, or one
/// whose entry the run changed (a dead process's "no record"), is no pass to keep.
fn passes_left_out(
    stored: &PassedCell,
    measured: &Measured,
    plan: Option<&CellPlan>,
    changes: &[(EntryKey, Option<Entry>)],
) -> Vec<CheckId> {
    stored
        .checks
        .keys()
        .filter(|check| {
            !measured.checks.contains_key(check)
                && !measured.not_run.contains(check)
                && !changes.iter().any(|(key, _)| key.check == **check)
                && plan.is_some_and(|p| p.has_check(**check))
        })
        .copied()
        .collect()
}

/// The selected cells the run has no record of (a run of other models, or one whose process
/// died): one warning, naming the first few, not a line per cell (a `--records` import of a
/// few models' run selects every model of the platform).
fn warn_unrecorded(unrecorded: &[String], platform: Platform, err: &mut dyn Write) {
    const NAMED: usize = 8;
    if unrecorded.is_empty() {
        return;
    }
    let more = unrecorded.len().saturating_sub(NAMED);
    let _ = writeln!(
        err,
        "warning: no record of {} selected cells on {platform}, their entries left as they were: {}{}",
        unrecorded.len(),
        unrecorded[..unrecorded.len().min(NAMED)].join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
}

/// Re-verifying cpu re-measures the fixture pipeline too: the models of the
/// slice whose store holds an export failure (`gen fixtures` skips them, their
/// export a known issue) are exported again from the tiny model into a
/// scratch folder, and what that gives is compared with the stored entry as a
/// cell's check is. Failures before the export (deriving the spec) are the
/// spec importer's to re-measure (`gen derive`), not this.
fn reexport<'a>(
    specs: &'a Specs,
    models: &[String],
    options: &Options,
    changes: &mut Changes<'a>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), String> {
    let slice = slice::Slice::new(
        specs.models.iter().map(|m| m.spec.model_type.as_str()),
        options.slice,
    );
    let failed_at_export: Vec<&LoadedModel> = specs
        .models
        .iter()
        .filter(|m| models.is_empty() || models.contains(&m.spec.model_type))
        .filter(|m| slice.contains(&m.spec.model_type))
        .filter(|m| {
            m.spec.pipeline_entry(CheckId::Export).is_some_and(|e| {
                e.stage == Some(Stage::Export)
                    && selected_by_staleness(today_if_stale(m, options).as_ref(), [e])
            })
        })
        .collect();
    if failed_at_export.is_empty() {
        return Ok(());
    }
    let scratch = std::env::temp_dir().join(format!("hwmatrix-reexport-{}", std::process::id()));
    let jobs = failed_at_export
        .iter()
        .map(|m| {
            let dir = scratch.join(&m.spec.model_type);
            let job = crate::fixtures::export_job(
                m,
                &dir,
                &m.fixture_key(),
                &crate::fixtures::Source::TinyRandom,
            )?;
            Ok((m.spec.model_type.clone(), job))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let pool = crate::workers::Pool {
        python: hwmatrix_cell::paths::python(),
        workers: 2,
        timeout: crate::fixtures::EXPORT_TIMEOUT,
        log_dir: scratch.join(".logs"),
    };
    let _ = writeln!(
        out,
        "gen measure --platform cpu --verify: exporting again the {} selected models whose store holds an export failure: {}",
        jobs.len(),
        failed_at_export
            .iter()
            .map(|m| m.spec.model_type.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let tty = crate::workers::Progress::stderr_is_terminal();
    let mut progress = crate::workers::Progress::new("exported", jobs.len(), err, tty);
    let outcomes = pool.run(jobs, &mut progress);
    let _ = std::fs::remove_dir_all(&scratch);
    for (model, (_, outcome)) in failed_at_export.into_iter().zip(outcomes?) {
        let measured = outcome.err().map(|e| {
            let failure = evidence::PipelineFailure {
                error: format!("exporting: {e}"),
                ..e.failure_at(Stage::Export)
            };
            evidence::pipeline_failure(CheckId::Export, &failure, &model.fixture_key())
        });
        let key = EntryKey {
            platform: None,
            engine: None,
            check: CheckId::Export,
            cpu_class: None,
        };
        changes
            .entry(model.spec.model_type.as_str())
            .or_default()
            .push((key, measured));
    }
    Ok(())
}

/// The cells to measure: those that run, and those the evidence store keeps
/// from running; verifying, only those with an entry, in the slice asked for.
fn select<'a>(plan: &Plan<'a>, platform: Platform, options: &Options) -> Selected<'a> {
    let slice = slice::Slice::new(
        plan.specs.models.iter().map(|m| m.spec.model_type.as_str()),
        options.slice,
    );
    let in_slice = |model_type: &str| slice.contains(model_type);
    let mut cells = Vec::new();
    let (mut at_limit, mut kernels) = (0, 0);
    for model in &plan.models {
        let today = today_if_stale(model.model, options);
        for cell in &model.cells {
            let kind = cell.engine.kind();
            // Entries another CPU class measured are that class's to re-verify.
            let entries: Vec<&Entry> = model
                .model
                .spec
                .evidence
                .iter()
                .filter(|e| e.is_for(platform, kind) && e.holds_on(&options.cpu_class.class))
                .collect();
            if !selected_by_staleness(today.as_ref(), entries.iter().copied()) {
                continue;
            }
            if options.verify
                && !entries.is_empty()
                && entries.iter().all(|e| at_our_limit(e))
                && in_slice(&model.model.spec.model_type)
            {
                at_limit += 1;
                continue;
            }
            let exported = model.model.spec.has_fixture(kind);
            let runs_or_stored =
                |p: &Planned<String>| matches!(p, Planned::Run) || (exported && from_store(p));
            // A kernel cell runs where any of its schemes does (they need only the weights).
            let runnable = if cell.is_kernel() {
                exported && cell.quantization.iter().any(|c| runs_or_stored(&c.planned))
            } else {
                runs_or_stored(&cell.planned)
            };
            // A cell whose float32 checks are a known issue still generates with another graph.
            let generates = cell
                .generation
                .as_ref()
                .is_some_and(|g| matches!(g, Planned::Run) || from_store(g));
            let stored = !entries.is_empty();
            if (runnable || generates)
                && in_slice(&model.model.spec.model_type)
                && (stored || !options.verify)
            {
                cells.push((model.model, kind));
                kernels += usize::from(cell.is_kernel());
            }
        }
    }
    Selected {
        cells,
        kernels,
        at_our_limit: at_limit,
    }
}

/// Runs the selected cells' tests with the platform's and engines' cargo
/// features (or `--features`), and reads the run's records.
fn run_cells(
    root: &Path,
    specs: &Specs,
    platform: Platform,
    selected: &Selected,
    options: &Options,
    err: &mut dyn Write,
) -> Result<(String, Records), String> {
    let features = options.features.clone().unwrap_or_else(|| {
        let mut features = vec![specs.hardware.platforms[&platform].feature.clone()];
        for (_, engine) in &selected.cells {
            if let Some(f) = engine
                .cargo_feature()
                .filter(|f| !features.iter().any(|g| g == f))
            {
                features.push(f.to_string());
            }
        }
        features.join(",")
    });
    make_fixtures(specs, platform, selected, options.nncf_python, err)?;
    let filter = |m: &LoadedModel, e: EngineKind| {
        format!("{}{platform}::{}::", m.test_path(), e.module(platform))
    };
    let filters: Vec<(EngineKind, String)> = selected
        .cells
        .iter()
        .map(|(m, e)| (*e, filter(m, *e)))
        .collect();
    // Verifying, a check whose stored entry ran past our time limit is not run again: it
    // would spend the limit again, and neither side would be compared (`either_at_our_limit`);
    // its cell's other checks run. (A cell whose stored checks all did is not selected.)
    let skips: Vec<String> = selected
        .cells
        .iter()
        .filter(|_| options.verify)
        .flat_map(|(m, e)| {
            m.spec
                .evidence
                .iter()
                .filter(|entry| {
                    entry.is_for(platform, *e)
                        && entry.holds_on(&options.cpu_class.class)
                        && at_our_limit(entry)
                })
                .flat_map(move |entry| ["--skip".to_string(), filter(m, *e) + entry.check.name()])
        })
        .collect();
    // A platform whose engines load libraries that cannot share a process (hardware.yaml's
    // `engines_in_own_processes`): a test process per engine.
    let own_processes = specs
        .hardware
        .platforms
        .get(&platform)
        .is_some_and(|spec| spec.engines_in_own_processes.is_some());
    let groups: Vec<Vec<String>> = if own_processes {
        let mut by_engine: BTreeMap<EngineKind, Vec<String>> = BTreeMap::new();
        for (engine, f) in filters {
            by_engine.entry(engine).or_default().push(f);
        }
        by_engine.into_values().collect()
    } else {
        vec![filters.into_iter().map(|(_, f)| f).collect()]
    };
    let mut measured = (String::new(), Records::new());
    for group in groups {
        let (run, records) = measure(
            root,
            platform,
            &group,
            &skips,
            &features,
            !options.verify,
            err,
        )?;
        if measured.0.is_empty() {
            measured.0 = run;
        }
        measured.1.extend(records);
    }
    Ok(measured)
}

/// The fixtures of the selected models, exported where missing (cached: a
/// run whose export made them already finds them, and they are not made
/// again), so that a run which exported only what its own lanes read
/// (tests/run.sh) measures the store's slice, not a missing file; and, for
/// the models whose OpenVINO-runtime cells are selected, NNCF's formats
/// (`gen fixtures --no-nncf` leaves them out). A model whose fixture or
/// formats cannot be made is left to its checks, which say so.
fn make_fixtures(
    specs: &Specs,
    platform: Platform,
    selected: &Selected,
    nncf_python: Option<&Path>,
    err: &mut dyn Write,
) -> Result<(), String> {
    let mut models: Vec<String> = selected
        .cells
        .iter()
        .map(|(m, _)| m.spec.model_type.clone())
        .collect();
    models.sort();
    models.dedup();
    if models.is_empty() {
        return Ok(());
    }
    let nncf = nncf_python.filter(|_| {
        selected
            .cells
            .iter()
            .any(|(_, engine)| matches!(engine, EngineKind::Openvino | EngineKind::OpenvinoPytorch))
    });
    let selection = Selection {
        models,
        categories: vec![],
        platforms: vec![platform],
    };
    let plan = plan::plan(specs, &selection).map_err(|e| format!("error: {e}"))?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let summary = crate::fixtures::build(
        &plan,
        &hwmatrix_cell::paths::fixtures_dir(),
        &hwmatrix_cell::paths::python(),
        workers,
        &crate::fixtures::Source::TinyRandom,
        false,
        nncf,
        err,
    )?;
    let failed = summary
        .failed
        .iter()
        .chain(summary.nncf.iter().flat_map(|n| &n.failed));
    for (fixture, why) in failed {
        let first = why.lines().next().unwrap_or_default();
        let _ = writeln!(err, "warning: {fixture}'s fixture or NNCF formats: {first}");
    }
    Ok(())
}

/// One cell's records, with its plan: what it means for the store's entries.
struct MeasuredCell<'a> {
    model: &'a LoadedModel,
    platform: Platform,
    engine: EngineKind,
    measured: &'a Measured,
    plan: Option<&'a CellPlan>,
}

impl MeasuredCell<'_> {
    /// A kernel cell's checks, recorded per scheme, each on its own.
    fn kernel_changes(
        &self,
        kernel: &CellPlan,
        tally: &mut Tally,
        err: &mut dyn Write,
    ) -> Vec<(EntryKey, Option<Entry>)> {
        let (platform, engine, measured) = (self.platform, self.engine, self.measured);
        let model_type = &self.model.spec.model_type;
        tally.quantization_measured += 1;
        let mut changes = Vec::new();
        for check in &kernel.quantization {
            // A check without a record did not run (skipped, or its process died): its entry stays.
            let id = CheckId::Quantization(check.scheme);
            let Some(record) = measured.checks.get(&id) else {
                let _ = writeln!(
                    err,
                    "warning: no record of {model_type}'s {id} on {platform}: its entry is left as it was"
                );
                continue;
            };
            let entry = measured.entry(id, record);
            tally.quantization_failed += usize::from(
                entry
                    .as_ref()
                    .is_some_and(|e| e.outcome == EntryOutcome::Failed),
            );
            changes.push((key(platform, engine, id), entry));
        }
        changes
    }

    /// Each check's entry (None: cleared): the float32 checks, the precision
    /// variants and `generates`, each its own outcome.
    fn changes(
        &self,
        verify: bool,
        tally: &mut Tally,
        err: &mut dyn Write,
    ) -> Vec<(EntryKey, Option<Entry>)> {
        let (platform, engine, measured) = (self.platform, self.engine, self.measured);
        if let Some(kernel) = self.plan.filter(|c| c.is_kernel()) {
            return self.kernel_changes(kernel, tally, err);
        }
        let mut changes = Vec::new();
        // Each float32 check keeps its own outcome; a check without a record where the
        // cell's others have one did not run (its process died): our harness's gap.
        // A model without a fixture (its export failed) ran its float32 checks only to fail on
        // the missing fixture: the pipeline's entry says it all, so they are neither imported
        // nor compared (its cell is measured for its `generates` check only). Its libtorch
        // cells have a fixture of their own where the ONNX export's failure was measured and
        // the TorchScript trace passed (fixtures.rs, `torchscript_job`).
        let exported = self.model.spec.has_fixture(engine);
        let float32_beside = CheckId::FLOAT32
            .iter()
            .filter(|_| exported)
            .find_map(|c| measured.checks.get(c));
        if let Some(beside) = float32_beside {
            for check in CheckId::FLOAT32 {
                let entry = match measured.checks.get(&check) {
                    Some(record) => measured
                        .entry(check, record)
                        .map(|e| export_shape_baked(self.model, e)),
                    None if measured.not_run.contains(&check) => continue,
                    None => Some(no_record(platform, engine, check, beside)),
                };
                changes.push((key(platform, engine, check), entry));
            }
        } else {
            let _ = writeln!(
                err,
                "note: no record of {}'s float32 checks on {platform} with {}: their entries are left as they were",
                self.model.spec.model_type,
                engine.name()
            );
        }
        let float32_passes = match float32_beside {
            Some(_) => CheckId::FLOAT32
                .iter()
                .all(|&c| measured.passed(c) == Some(true)),
            None => self.plan.is_some_and(|c| c.planned == Planned::Run),
        };
        match (float32_beside, float32_passes) {
            (None, _) => tally.precision_only += 1,
            (Some(_), true) => tally.passed += 1,
            (Some(_), false) => tally.failed += 1,
        }
        // Precision variants are checks of their own, planned only where the float32 checks
        // pass (else the cell's entries say it all, and theirs are cleared).
        let precision_checks = self
            .plan
            .map(|c| c.precision_checks.as_slice())
            .unwrap_or_default();
        // A run that left every precision check of the cell out (`--skip`), as a run without its
        // float32 checks leaves those: their entries stay as they were. One that ran some
        // and lacks others lost them (its process died): our harness's gap, as above.
        let precision_ran = precision_checks.iter().any(|p| {
            measured
                .checks
                .contains_key(&CheckId::Precision(p.precision))
        });
        if !precision_checks.is_empty() && !precision_ran && float32_passes {
            let _ = writeln!(
                err,
                "note: no record of {}'s precision checks on {platform} with {}: their entries are left as they were",
                self.model.spec.model_type,
                engine.name()
            );
        }
        for p in precision_checks {
            let check = CheckId::Precision(p.precision);
            // The class it was measured on: the record's, else (a check without one) the cell's others'.
            let mut check_key = key(platform, engine, check);
            check_key.cpu_class = measured
                .checks
                .get(&check)
                .map(|record| key_of(check, record))
                .and_then(|k| k.cpu_class)
                .or_else(|| measured.cpu_class());
            let entry = match (measured.checks.get(&check), float32_beside) {
                // Not run where the float32 checks fail: an import clears them, a verification compares nothing.
                _ if !float32_passes && verify => continue,
                _ if !float32_passes => None,
                (Some(record), _) => measured.entry(check, record),
                (None, _) if !precision_ran || measured.not_run.contains(&check) => continue,
                (None, Some(beside)) => Some(no_record(platform, engine, check, beside)),
                (None, None) => continue,
            };
            tally.precision_failed += usize::from(entry.is_some());
            changes.push((check_key, entry));
        }
        if self.plan.and_then(|c| c.generation.as_ref()).is_some()
            && let Some(record) = measured.checks.get(&CheckId::Generates)
        {
            changes.extend(self.generation_changes(record, tally));
        }
        changes
    }

    /// The `generates` check, where it has a record: its own graph, so
    /// recorded whatever the float32 checks say.
    fn generation_changes(
        &self,
        record: &Record,
        tally: &mut Tally,
    ) -> Vec<(EntryKey, Option<Entry>)> {
        let pipeline = || EntryKey {
            platform: None,
            engine: None,
            check: CheckId::GenerationExport,
            cpu_class: None,
        };
        let reason = record.reason.as_deref().unwrap_or_default();
        // No generation fixture because the generation exporter failed: the exporter's error,
        // the same on every platform, is the pipeline's entry; the check itself measured nothing.
        // Who failed is the record's error kind (the stage gen kept with the exporter's error):
        // torch.onnx's exporters, or our exporter's own limit before them (a cache it cannot
        // flatten).
        let exporter_failed = matches!(
            record.error_kind,
            Some(ErrorKind::ExportFailed | ErrorKind::ExporterLimit)
        );
        if exporter_failed {
            let error = reason
                .split_once(GENERATION_EXPORT_FAILED)
                .map_or(reason, |(_, error)| error);
            let fixture_key = self.model.generation_fixture_key();
            let torch_onnx = record.error_kind == Some(ErrorKind::ExportFailed);
            let failure = evidence::PipelineFailure {
                stage: if torch_onnx {
                    Stage::Export
                } else {
                    Stage::Reference
                },
                timed_out: false,
                harness_limit: !torch_onnx,
                missing_libraries: Vec::new(),
                error: error.to_string(),
            };
            let entry =
                evidence::pipeline_failure(CheckId::GenerationExport, &failure, &fixture_key);
            return vec![(pipeline(), Some(entry))];
        }
        // No generation fixture built yet: nothing measured, the entry stays.
        if record.error_kind == Some(ErrorKind::FixtureMissing) {
            return Vec::new();
        }
        let entry = self.measured.entry(CheckId::Generates, record);
        tally.generation_failed += usize::from(entry.is_some());
        let mut changes = vec![(key(self.platform, self.engine, CheckId::Generates), entry)];
        if record.status == Outcome::Passed {
            changes.push((pipeline(), None));
        }
        changes
    }
}

/// A failed `dynamic_shapes` check of a graph that runs at the export shape
/// only (`export.shape_only`: no torch.onnx exporter kept the second shape)
/// is the model's with the standard tool on every engine, as on the reference
/// one; an error kind with an attribution of its own (an emulator's crash, an
/// adapter without a feature) keeps it.
fn export_shape_baked(model: &LoadedModel, mut entry: Entry) -> Entry {
    if model.spec.export.shape_only
        && entry.check == CheckId::DynamicShapes
        && entry.attribution == Some(Attribution::Engine)
    {
        entry.attribution = Some(Attribution::Model);
    }
    entry
}

/// The CPU classes the run's class-scoped checks ran on, into the store's
/// list of classes measured (cpu_classes): per class, its checks measured and
/// passed. Returns the summary line's words for them (empty where none).
/// A `partial` run (some models) records a class only where none is on record
/// for its platform: its counts would otherwise replace a whole sweep's, which
/// doctor and the report read as the class's.
fn record_classes(
    specs: &Specs,
    plan: &Plan,
    platform: Platform,
    run_id: &str,
    records: &Records,
    partial: bool,
) -> Result<String, String> {
    use hwmatrix_specs::spec::cpu_classes::{self, CheckCount, MeasuredClass};
    // Only cells whose float32 checks are planned to run plan their precision checks: a
    // variant of a cell that fails at float32 (run anyway with --include-ignored) says
    // nothing of its format on this class.
    let planned_to_run = |(model, engine): &(String, EngineKind)| {
        plan.models
            .iter()
            .find(|m| &m.model.spec.model_type == model)
            .and_then(|m| m.cells.iter().find(|c| c.engine.kind() == *engine))
            .is_some_and(|c| c.planned == Planned::Run)
    };
    let mut by_class: BTreeMap<String, MeasuredClass> = BTreeMap::new();
    for (check, record) in records
        .iter()
        .filter(|(cell, _)| planned_to_run(cell))
        .flat_map(|(_, m)| m.checks.iter())
    {
        let Some(cpu) = record
            .cpu_class
            .as_ref()
            .filter(|_| evidence::class_scoped(Some(record.platform), *check))
        else {
            continue;
        };
        let class = by_class
            .entry(cpu.class.clone())
            .or_insert_with(|| MeasuredClass {
                platform,
                class: cpu.class.clone(),
                cpu: cpu.describe(),
                run: run_id.to_string(),
                date: record.time.clone(),
                host: record.host.clone(),
                checks: BTreeMap::new(),
            });
        if record.time > class.date {
            class.date = record.time.clone();
        }
        let count: &mut CheckCount = class.checks.entry(*check).or_default();
        count.measured += 1;
        count.passed += usize::from(record.status == Outcome::Passed);
    }
    if by_class.is_empty() {
        return Ok(String::new());
    }
    let mut file = cpu_classes::read(&specs.root)?;
    let (mut recorded, mut kept) = (Vec::new(), Vec::new());
    for class in by_class.into_values() {
        match file.measured(platform, &class.class) {
            Some(earlier) if partial => kept.push(format!("{} (run {})", class.class, earlier.run)),
            _ => {
                recorded.push(class.class.clone());
                file.record(class);
            }
        }
    }
    cpu_classes::write(&specs.root, &file)?;
    let mut words = String::new();
    if !recorded.is_empty() {
        words += &format!("; CPU class {} recorded as measured", recorded.join(", "));
    }
    if !kept.is_empty() {
        words += &format!(
            "; CPU class {} kept as its last whole run measured it (this run measured some models)",
            kept.join(", ")
        );
    }
    Ok(words)
}

/// One write per model's evidence file (`read`: those already read, as they are on disk):
/// every check measured, merged into its entries. Returns how many files changed.
fn write_store(
    specs: &Specs,
    mut changes: Changes,
    mut passes: Passes,
    mut read: BTreeMap<&str, evidence::EvidenceFile>,
) -> Result<usize, String> {
    let classes = hwmatrix_specs::spec::cpu_classes::read(&specs.root)?;
    let mut changed = 0;
    let models: std::collections::BTreeSet<&str> =
        changes.keys().chain(passes.keys()).copied().collect();
    for model_type in models {
        let mut checks = changes.remove(model_type).unwrap_or_default();
        let model = specs.model(model_type).expect("a planned model");
        let mut file = match read.remove(model_type) {
            Some(file) => file,
            None => evidence::read(&specs.root, model_type)?,
        };
        for (key, _) in &mut checks {
            if first_of_its_kind(&classes, &file.entries, key) {
                key.cpu_class = None;
            }
        }
        let fixture_key = model.fixture_key();
        evidence::merge(&mut file.entries, checks, &fixture_key);
        passed::merge(
            &mut file.passed,
            passes.remove(model_type).unwrap_or_default(),
            &fixture_key,
        );
        changed += usize::from(evidence::write(&specs.root, file)?);
    }
    Ok(changed)
}

/// Whether a class-scoped check measured on one CPU class is the first
/// measurement of it the store has: no entry of it on any class, and no
/// other class on record as having measured it (cpu_classes: a class that
/// did and has no entry passed it). Then what this class measured holds for
/// every class until another measures otherwise: a class that never ran the
/// check (a new format, a class with no record of it) inherits it rather
/// than take another CPU's first failure for its own pass.
fn first_of_its_kind(
    classes: &hwmatrix_specs::spec::cpu_classes::ClassesFile,
    entries: &[Entry],
    key: &EntryKey,
) -> bool {
    let (Some(class), Some(platform)) = (key.cpu_class.as_deref(), key.platform) else {
        return false;
    };
    let stored = entries.iter().any(|e| {
        e.platform == key.platform
            && e.check == key.check
            && e.engine.is_none_or(|k| Some(k) == key.engine)
    });
    let measured_elsewhere = classes
        .classes
        .iter()
        .any(|c| c.platform == platform && c.class != class && c.checks.contains_key(&key.check));
    !stored && !measured_elsewhere
}

/// Compares a run's measured checks with the store's entries: 0 when every
/// one agrees (status and who failed), else 1, naming each disagreement.
fn verify(
    specs: &Specs,
    platform: Platform,
    run_id: &str,
    measured: &BTreeMap<&str, Vec<(EntryKey, Option<Entry>)>>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let (mut compared, mut entries) = (0, 0);
    let (mut uncomparable, mut at_limit) = (Vec::new(), Vec::new());
    let mut disagreements = Vec::new();
    for (model_type, checks) in measured {
        let model = specs.model(model_type).expect("a planned model");
        for (key, now) in checks {
            // A class-scoped check is compared with its own class's entry, else the one for
            // every class; never with another class's (it measured other kernels).
            let of_check = |e: &&Entry| {
                e.platform == key.platform
                    && e.check == key.check
                    && (e.engine == key.engine || e.engine.is_none())
            };
            let stored = match &key.cpu_class {
                Some(class) => model
                    .spec
                    .evidence
                    .iter()
                    .filter(of_check)
                    .find(|e| e.cpu_class.as_deref() == Some(class))
                    .or_else(|| {
                        model
                            .spec
                            .evidence
                            .iter()
                            .filter(of_check)
                            .find(|e| e.cpu_class.is_none())
                    }),
                None => model
                    .spec
                    .evidence
                    .iter()
                    .filter(of_check)
                    .find(|e| e.cpu_class.is_none()),
            };
            // An entry moved from the specs held a cell's first failed check only: the cell's
            // other checks have no entry, which says nothing of them.
            let legacy_cell = model.spec.evidence.iter().any(|e| {
                e.platform == key.platform
                    && e.engine.is_none_or(|k| Some(k) == key.engine)
                    && e.provenance.legacy.is_some()
            });
            let name = || format!("{model_type} {}", key.check);
            if stored.is_none() && legacy_cell {
                uncomparable.push(name());
                continue;
            }
            // Our time limit, in the store or in this run, measured nothing of the model: a
            // faster or busier machine decides it, so it is no disagreement.
            if either_at_our_limit(stored, now.as_ref()) {
                at_limit.push(name());
                continue;
            }
            compared += 1;
            entries += usize::from(stored.is_some());
            disagreements.extend(disagreement(model_type, key, stored, now.as_ref()));
        }
    }
    let _ = writeln!(
        out,
        "gen measure --platform {platform} --verify (run {run_id}): {compared} checks re-measured and compared (outcome, who failed, error kind), {entries} of them with a stored entry; {} disagree with the store ({} more re-measured without an entry in a cell whose entry predates per-check evidence, and {} stopped by our time limit in the store or this run: not compared)",
        disagreements.len(),
        uncomparable.len(),
        at_limit.len()
    );
    for (why, skipped) in [
        (
            "its cell's entry predates per-check evidence",
            &uncomparable,
        ),
        ("our time limit, in the store or this run", &at_limit),
    ] {
        if !skipped.is_empty() {
            let _ = writeln!(out, "  not compared ({why}): {}", skipped.join(", "));
        }
    }
    for line in &disagreements {
        let _ = writeln!(err, "error: {line}");
    }
    if compared == 0 {
        let _ = writeln!(
            err,
            "error: gen measure --platform {platform} --verify compared nothing: no re-measured check had a comparable entry, so nothing was verified\n  help: check the slice (--slice K/N) and that the run's records are this platform's"
        );
        return Ok(1);
    }
    if !disagreements.is_empty() {
        let _ = writeln!(
            err,
            "  help: a change the run confirms is accepted with `gen measure --platform {platform} --model M` and reviewed as a diff of model-specs/evidence/"
        );
    }
    Ok(i32::from(!disagreements.is_empty()))
}

/// Runs the tests under `filters` but `skips` (libtest's `--skip` arguments) in a scratch
/// results folder and reads their records.
fn measure(
    root: &Path,
    platform: Platform,
    filters: &[String],
    skips: &[String],
    features: &str,
    keep: bool,
    err: &mut dyn Write,
) -> Result<(String, Records), String> {
    let results = std::env::temp_dir().join(format!(
        "hwmatrix-measure-{platform}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&results);
    std::fs::create_dir_all(&results).map_err(|e| format!("error: {}: {e}", results.display()))?;
    let skipped = match skips.len() / 2 {
        0 => String::new(),
        n => format!(" (skipping {n} checks our time limit stopped in the store)"),
    };
    let _ = writeln!(
        err,
        "measuring on {platform}: cargo test -p generated --features {features} -- --include-ignored <{} filters>{skipped}",
        filters.len()
    );
    let args: Vec<String> = filters.iter().chain(skips).cloned().collect();
    let status = cargo_test_cells(
        root,
        features,
        &args,
        &[("HWMATRIX_RESULTS", &results)],
        |c| {
            c.stdout(std::process::Stdio::null());
        },
    )?;
    // Failed cells make cargo exit 101; that is what is being measured. No record at all is not.
    let records = read_records(&results, platform, err);
    if keep && let Ok((run, _)) = &records {
        keep_records(&results, platform, run, err);
    }
    let _ = std::fs::remove_dir_all(&results);
    records.map_err(|e| format!("{e} (cargo exited with {status}; see the build output above)"))
}

/// Runs the generated cells these filters select, ignored ones included (a known
/// issue is measured again), with `env` set: `cargo test -p generated --lib
/// --features F -- --include-ignored FILTERS`. Failed cells make cargo exit 101:
/// that is what is being measured, so the status is returned, not judged.
pub fn cargo_test_cells(
    root: &Path,
    features: &str,
    filters: &[String],
    env: &[(&str, &Path)],
    adjust: impl FnOnce(&mut Command),
) -> Result<std::process::ExitStatus, String> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(root)
        .args([
            "test",
            "--quiet",
            "-p",
            "generated",
            "--lib",
            "--features",
            features,
            "--no-fail-fast",
            "--",
            "--include-ignored",
        ])
        .args(filters);
    for (name, value) in env {
        command.env(name, value);
    }
    adjust(&mut command);
    command
        .status()
        .map_err(|e| format!("error: cannot run cargo: {e}"))
}

/// A measurement's records, kept in the checkout's results folder
/// (`results/gen-measure-<platform>-<run>.jsonl`, which `gen results load`
/// reads): the entries written from them cite each by its name, and the
/// store keeps an error's cause only, so the whole error and page log stay
/// there. A verification writes no entry and keeps none.
fn keep_records(scratch: &Path, platform: Platform, run: &str, err: &mut dyn Write) {
    let kept = hwmatrix_cell::paths::results_dir().and_then(|dir| {
        let mut files: Vec<PathBuf> = std::fs::read_dir(scratch)
            .map_err(|e| format!("{}: {e}", scratch.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        let mut text = String::new();
        for file in &files {
            text.push_str(
                &std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?,
            );
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(format!("gen-measure-{platform}-{run}.jsonl"));
        hwmatrix_specs::files::write_atomically(&path, text.as_bytes())?;
        Ok(path)
    });
    let _ = match kept {
        Ok(path) => writeln!(
            err,
            "the run's records: {} (`gen results load` reads them; `gen results show RECORD` prints the one an entry cites)",
            path.display()
        ),
        Err(why) => writeln!(
            err,
            "warning: the run's records are not kept ({why}): its entries cite records no database will hold"
        ),
    };
}

/// Every record in the folder's `*.jsonl` files, in file and line order, each with
/// its name (the first 16 hex digits of its line's SHA-256, as the store and the
/// reports cite it); a line that is not a record is an error naming its file and line.
pub fn records_in(dir: &Path) -> Result<Vec<(Record, String)>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("error: {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut records = Vec::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).map_err(|e| format!("error: {}: {e}", file.display()))?;
        for (n, line) in text.lines().enumerate() {
            let record = Record::from_line(line)
                .map_err(|e| format!("error: {}:{}: {e}", file.display(), n + 1))?;
            let id = hwmatrix_cell::content::hex(&sha2::Sha256::digest(line.as_bytes()));
            records.push((record, id[..16].to_string()));
        }
    }
    Ok(records)
}

type Records = BTreeMap<(String, EngineKind), Measured>;

/// The records of the platform's checks, by model and engine: one run's (the
/// newest in the folder), the newest record per check and component, and
/// only checks that ran.
fn read_records(
    dir: &Path,
    platform: Platform,
    err: &mut dyn Write,
) -> Result<(String, Records), String> {
    let mut all: Vec<(Record, CheckId, String)> = Vec::new();
    // The ledger's records of checks the run's plan did not run (a known issue, a feature off).
    let mut planned_not_run: Vec<(Record, CheckId)> = Vec::new();
    let mut other_graphs = 0;
    for (record, id) in records_in(dir)? {
        // gen bench's records time a cell; they are no check of it.
        if record.platform != platform || record.check == hwmatrix_cell::BENCH_RECORD {
            continue;
        }
        // A check on another tool's graph (optimum's) is that graph's evidence, not the cell's.
        if record.graph.is_some() {
            other_graphs += 1;
            continue;
        }
        let check = record.check.parse::<CheckId>().map_err(|e| {
            format!(
                "error: {}: record {id} ({} on {platform}): {e}\n  help: records of an older hwmatrix go into the database with `gen results load`",
                dir.display(),
                record.model
            )
        })?;
        if record.measured() {
            all.push((record, check, id));
        } else if record.basis != Basis::Measured {
            planned_not_run.push((record, check));
        }
    }
    if other_graphs > 0 {
        let _ = writeln!(
            err,
            "note: {other_graphs} records in {} are of checks on another tool's graph (their `graph`): the store takes none",
            dir.display()
        );
    }
    // One run: the one whose newest record is newest.
    let mut runs: BTreeMap<&str, &str> = BTreeMap::new();
    for (record, _, _) in &all {
        let newest = runs.entry(&record.run_id).or_insert(&record.time);
        if record.time.as_str() > *newest {
            *newest = &record.time;
        }
    }
    let Some(run_id) = runs
        .iter()
        .max_by_key(|(run, time)| (**time, **run))
        .map(|(run, _)| run.to_string())
    else {
        return Err(format!(
            "error: {} holds no record of a {platform} check that ran",
            dir.display()
        ));
    };
    if runs.len() > 1 {
        let _ = writeln!(
            err,
            "note: {} holds records of {} runs; taking the newest, {run_id} (the others are left out)",
            dir.display(),
            runs.len()
        );
    }
    all.retain(|(r, _, _)| r.run_id == run_id);
    // The record that speaks for each check and component, ranked as the database ranks them.
    // (model, engine, check) → component → the record and its name.
    type CheckOf = (String, EngineKind, CheckId);
    let mut newest: BTreeMap<CheckOf, BTreeMap<Option<String>, (Record, String)>> = BTreeMap::new();
    for (record, check, id) in all {
        let components = newest
            .entry((record.model.clone(), record.engine_kind, check))
            .or_default();
        let rank = |r: &Record| hwmatrix_record::recency(r.basis.name(), &r.time);
        match components.get(&record.component) {
            Some((kept, _)) if rank(kept) > rank(&record) => {}
            _ => {
                components.insert(record.component.clone(), (record, id));
            }
        }
    }
    let mut by_cell: Records = BTreeMap::new();
    for (record, check) in planned_not_run
        .into_iter()
        .filter(|(r, _)| r.run_id == run_id)
    {
        by_cell
            .entry((record.model, record.engine_kind))
            .or_default()
            .not_run
            .insert(check);
    }
    for ((model, engine, check), components) in newest {
        let mut components: Vec<(Record, String)> = components.into_values().collect();
        let Some(deciding) =
            hwmatrix_record::deciding_component(components.iter().map(|(r, _)| r.status))
        else {
            continue;
        };
        let (record, id) = components.swap_remove(deciding);
        let cell = by_cell.entry((model, engine)).or_default();
        cell.record_ids.insert(check, id);
        cell.checks.insert(check, record);
    }
    Ok((run_id, by_cell))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        platform: Platform,
        status: Outcome,
        kind: Option<ErrorKind>,
        device: &str,
    ) -> Record {
        Record {
            run_id: "run-1".into(),
            time: "2026-11-27T03:00:00Z".into(),
            host: "h".into(),
            model: "bert".into(),
            component: None,
            category: "text_encoders".into(),
            platform,
            engine_kind: EngineKind::Onnxruntime,
            engine: "onnxruntime".into(),
            check: "runs".into(),
            status,
            basis: Basis::Measured,
            reason: Some("runs: failed".into()),
            error_kind: kind,
            stage: kind.and_then(ErrorKind::stage),
            device: Some(device.into()),
            device_kind: None,
            cpu_class: None,
            library: None,
            fixture: Some(hwmatrix_record::FixtureRecord {
                dir: "<fixtures>/bert".into(),
                source: "tiny-random".into(),
                cache_key: Some("k".into()),
                content: None,
            }),
            runtime_version: "0.1.0".into(),
            graph: None,
            providers: None,
            deviation: None,
            timing: None,
            untimed: None,
            memory: None,
            generation: None,
            precision: "float32".into(),
            quantization: None,
            bench: None,
        }
    }

    #[test]
    fn a_record_becomes_an_entry_that_names_who_failed() {
        assert!(
            record(
                Platform::Qnn,
                Outcome::Passed,
                None,
                "QNN HTP emulator (x86_64)"
            )
            .entry()
            .is_none(),
            "a pass has no entry"
        );
        let engine = record(
            Platform::Openvino,
            Outcome::Failed,
            Some(ErrorKind::ModelLoad),
            "cpu",
        )
        .entry()
        .unwrap();
        assert_eq!(engine.attribution, Some(Attribution::Engine));
        assert_eq!(
            (
                engine.provenance.run.as_deref(),
                engine.provenance.fixture_key.as_deref()
            ),
            (Some("run-1"), Some("k"))
        );
        let cpu = record(
            Platform::Cpu,
            Outcome::Failed,
            Some(ErrorKind::OutOfTolerance),
            "cpu",
        )
        .entry()
        .unwrap();
        assert_eq!(
            cpu.attribution,
            Some(Attribution::Model),
            "the reference engine failing torch.onnx's graph"
        );
        let crash = record(
            Platform::Qnn,
            Outcome::Failed,
            Some(ErrorKind::EngineExited),
            "QNN HTP emulator (x86_64)",
        )
        .entry()
        .unwrap();
        assert_eq!(
            crash.attribution,
            Some(Attribution::Environment),
            "an emulator's crash"
        );
        let f16 = record(
            Platform::Webgpu,
            Outcome::Failed,
            Some(ErrorKind::AdapterFeatureMissing),
            "SwiftShader",
        )
        .entry()
        .unwrap();
        assert_eq!(
            (f16.attribution, f16.is_known_issue()),
            (Some(Attribution::Environment), false)
        );
        let none = record(
            Platform::Cpu,
            Outcome::Failed,
            Some(ErrorKind::DoesNotApply),
            "cpu",
        )
        .entry()
        .unwrap();
        assert_eq!(
            (none.outcome, none.attribution),
            (EntryOutcome::DoesNotApply, None)
        );
        // The ledger's own records (cells that did not run) are never measurements.
        let ledger = Record {
            basis: Basis::Evidence,
            status: Outcome::KnownIssue,
            ..record(Platform::Cpu, Outcome::Failed, None, "cpu")
        };
        assert!(!ledger.measured());
        // Nor is a check that found its fixture rebuilt under another key.
        let stale = record(
            Platform::Webnn,
            Outcome::Failed,
            Some(ErrorKind::FixtureStale),
            "browser",
        );
        assert!(!stale.measured());
        assert!(record(Platform::Webnn, Outcome::Failed, None, "browser").measured());
    }

    #[test]
    fn a_graph_with_the_export_shape_baked_in_fails_dynamic_shapes_for_the_model() {
        let specs = hwmatrix_specs::spec::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/specs"),
        )
        .expect("the test specs load");
        let mut model = specs.models.into_iter().next().expect("a test spec");
        let failed = |check: &str, platform, kind| {
            let mut record = record(platform, Outcome::Failed, Some(kind), "d");
            record.check = check.into();
            record.entry().expect("a failure")
        };
        let attribution = |model: &LoadedModel, entry| export_shape_baked(model, entry).attribution;
        let dynamic = || failed("dynamic_shapes", Platform::Openvino, ErrorKind::RunFailed);
        assert_eq!(attribution(&model, dynamic()), Some(Attribution::Engine));
        model.spec.export.shape_only = true;
        assert_eq!(attribution(&model, dynamic()), Some(Attribution::Model));
        let runs = failed("runs", Platform::Openvino, ErrorKind::RunFailed);
        assert_eq!(attribution(&model, runs), Some(Attribution::Engine));
        let crash = failed("dynamic_shapes", Platform::Qnn, ErrorKind::EngineExited);
        let crash = Entry {
            attribution: Some(Attribution::Environment),
            ..crash
        };
        assert_eq!(attribution(&model, crash), Some(Attribution::Environment));
    }

    /// The store reads record files as the results database does (Record::from_line): a
    /// record from before `engine_kind` gets it from its `engine`, and a line no record
    /// reads is refused with its file and line.
    #[test]
    fn records_are_read_as_the_database_reads_them() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut old =
            serde_json::to_value(record(Platform::Cpu, Outcome::Passed, None, "CPU")).unwrap();
        old.as_object_mut().unwrap().remove("engine_kind");
        old["engine"] = "onnxruntime, CPUExecutionProvider".into();
        std::fs::write(dir.join("old.jsonl"), format!("{old}\n")).unwrap();
        let read = records_in(&dir).unwrap();
        assert_eq!(read[0].0.engine_kind, EngineKind::Onnxruntime);
        std::fs::write(dir.join("torn.jsonl"), "{\"run_id\": \n").unwrap();
        let err = records_in(&dir).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(err.contains("torn.jsonl:1: not JSON"), "{err}");
    }

    #[test]
    fn a_verification_names_the_entries_it_disagrees_with() {
        let key = EntryKey {
            platform: Some(Platform::Qnn),
            engine: Some(EngineKind::Onnxruntime),
            check: CheckId::Runs,
            cpu_class: None,
        };
        let stored = record(
            Platform::Qnn,
            Outcome::Failed,
            Some(ErrorKind::RunFailed),
            "QNN HTP emulator",
        )
        .entry();
        let why = disagreement("bert", &key, stored.as_ref(), None)
            .expect("the store says failed, the run passed");
        assert!(
            why.contains("bert qnn/onnxruntime/runs: the store says failed")
                && why.contains("measured passed"),
            "{why}"
        );
        assert_eq!(
            disagreement("bert", &key, stored.as_ref(), stored.as_ref()),
            None
        );
        assert_eq!(disagreement("bert", &key, None, None), None);
    }

    #[test]
    fn a_verification_compares_who_failed_and_the_kind() {
        let key = EntryKey {
            platform: Some(Platform::Qnn),
            engine: Some(EngineKind::Onnxruntime),
            check: CheckId::Runs,
            cpu_class: None,
        };
        let engine = record(
            Platform::Qnn,
            Outcome::Failed,
            Some(ErrorKind::RunFailed),
            "QNN HTP emulator",
        )
        .entry()
        .expect("a failure is an entry");
        // The store tampered with: the engine's failure relabelled the environment's.
        let relabelled = Entry {
            attribution: Some(Attribution::Environment),
            ..engine.clone()
        };
        let why = disagreement("bert", &key, Some(&relabelled), Some(&engine))
            .expect("who failed differs");
        assert!(
            why.contains("the store says failed: the environment here")
                && why
                    .contains("this run measured failed: the engine or its provider (run-failed)"),
            "{why}"
        );
        let another_kind = Entry {
            error_kind: Some(ErrorKind::ModelLoad),
            ..engine.clone()
        };
        assert!(disagreement("bert", &key, Some(&another_kind), Some(&engine)).is_some());
        // Wrong values agree whether they were NaN or finite; never with a failure to load.
        let kinded = |kind| Entry {
            error_kind: Some(kind),
            ..engine.clone()
        };
        let (nan, off) = (
            kinded(ErrorKind::NonFinite),
            kinded(ErrorKind::OutOfTolerance),
        );
        assert_eq!(disagreement("bert", &key, Some(&nan), Some(&off)), None);
        assert_eq!(disagreement("bert", &key, Some(&off), Some(&nan)), None);
        assert!(disagreement("bert", &key, Some(&nan), Some(&another_kind)).is_some());
        // A check that could not run measured nothing: it never agrees with the engine's failure.
        let absent = Entry {
            error_kind: Some(ErrorKind::PlatformAbsent),
            attribution: Some(Attribution::Engine),
            ..engine.clone()
        };
        let why = disagreement("bert", &key, Some(&absent), Some(&absent))
            .expect("an absent platform confirms no known issue");
        assert!(why.contains("could not run the check here"), "{why}");
        // An entry moved from the specs had who failed inferred: only its outcome is compared.
        let mut legacy = relabelled.clone();
        legacy.provenance.legacy = Some("moved".into());
        assert_eq!(
            disagreement("bert", &key, Some(&legacy), Some(&engine)),
            None
        );
        // Nor with a stored check that left no record: it named no one it measured.
        let no_record = Entry {
            error_kind: Some(ErrorKind::NoRecord),
            attribution: Some(Attribution::Harness),
            ..engine.clone()
        };
        assert_eq!(
            disagreement("bert", &key, Some(&no_record), Some(&engine)),
            None
        );
    }

    #[test]
    fn our_time_limit_is_not_compared_whichever_side_hit_it() {
        let entry = |kind| {
            record(
                Platform::Qnn,
                Outcome::Failed,
                Some(kind),
                "QNN HTP emulator",
            )
            .entry()
            .expect("a failure is an entry")
        };
        let (limit, crash) = (entry(ErrorKind::Timeout), entry(ErrorKind::RunFailed));
        // Stored at our limit, passed (or failed otherwise) now: a faster machine; not compared.
        assert!(either_at_our_limit(Some(&limit), None));
        assert!(either_at_our_limit(Some(&limit), Some(&crash)));
        // Passed in the store, our limit now: a busier machine; not compared.
        assert!(either_at_our_limit(None, Some(&limit)));
        // Anything else is compared.
        assert!(!either_at_our_limit(Some(&crash), None));
        assert!(!either_at_our_limit(None, None));
    }
}
