//! `gen checkpoint`: one trained checkpoint's row of the matrix, in one command.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use hwmatrix_cell::Platform;
use hwmatrix_importer::checkpoint::{self, Checkpoint, Weights};
use hwmatrix_importer::fixtures::{self, Source};
use hwmatrix_record::Record;
use hwmatrix_results::report::checkpoint_row::{self, CheckpointRow, FormatMemory, Measured, Step};
use hwmatrix_results::report::greedy;
use hwmatrix_specs::plan::{self, Selection};
use hwmatrix_specs::spec::{LoadedModel, Specs};

use super::{Context, doctor, workers};

pub const ABOUT: &str = "\
Runs one trained checkpoint through every platform, engine and format this
machine runs, and writes its row of the matrix: report.md and report.html,
with the run's records, in results/checkpoints/<name>/ (or --out).

PATH is a checkpoint folder as save_pretrained writes it (config.json with
model.safetensors or pytorch_model.bin) or a GGUF file (llama.cpp's format,
which transformers dequantizes to float32; `bash tests/setup.sh checkpoints`
installs its loader). Before anything is exported or allocated, gen refuses
a folder that is not a checkpoint, a config.json it cannot read (file, line
and column), an architecture model-specs/ has no spec of, a GGUF of an
architecture transformers cannot load, and weights too large for this
machine's memory (their size counted from the files' headers); a refusal
writes nothing.

Then, with a line of progress per step: the fixtures are exported from the
checkpoint by the same recipe as the tiny ones (every format: fp16, int8, q4,
q4f16, qdq8, transformers.js's bnb4, q2 and q2f16, and NNCF's int8 and int4 where
OpenVINO is installed), each
format's memory is computed from the config, and the architecture's cells run
on every usable platform (`gen doctor`), ignored ones included: on trained
weights a known issue is measured again. Each format is judged by what its
users measure, against a bound fixed before the run and shown with its
source: decoders by how often their next token is float32's, and by each
format's greedy generation from a fixed prompt and perplexity of a fixed text
against float32's (ONNX Runtime's formats on its CPU provider, NNCF's on
OpenVINO's runtime where openvino is selected), sentence encoders by the
mean-pooled embedding's cosine, the others by the worst row's cosine (shown,
not judged, where no source fixes a bound). The folder is written whole at
the end: an interrupted run leaves only a .partial folder.

  gen checkpoint ~/.cache/hwmatrix/checkpoints/all-MiniLM-L6-v2
  gen checkpoint model.Q4_1.gguf --platform cpu --platform openvino
  gen checkpoint DIR --dry-run          what would run, and whether it fits
  gen checkpoint DIR --platform cpu --platform webgpu --only webgpu::firefox::fp16_matches_reference";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A checkpoint folder (config.json with model.safetensors or pytorch_model.bin) or a .gguf file
    path: PathBuf,
    /// Where the row goes (default: results/checkpoints/<name>)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The exporter venv's Python (default: $HWMATRIX_PYTHON, else ~/.cache/hwmatrix/venv/bin/python)
    #[arg(long, value_name = "FILE")]
    python: Option<PathBuf>,
    /// Python worker processes for the export (default: one per core)
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Skip NNCF's weight formats (OpenVINO's int8 and int4)
    #[arg(long)]
    no_nncf: bool,
    /// Inspect the checkpoint and say what would run; export and run nothing
    #[arg(long)]
    dry_run: bool,
    /// Run only this check of a platform's cells, as PLATFORM::ENGINE::CHECK (e.g.
    /// webgpu::firefox::fp16_matches_reference); repeatable; a platform no --only
    /// names runs all its checks
    #[arg(long, value_name = "CHECK")]
    only: Vec<String>,
    /// The generated crate's features for one platform's cells, as PLATFORM=F1,F2 (e.g.
    /// openvino=qnn,openvino); repeatable. Default: the fewest its engines need, as gen
    /// doctor prints. A script that has built a test binary with more names its set, so that
    /// cargo runs that binary instead of compiling the crate once more.
    #[arg(long = "features", value_name = "PLATFORM=FEATURES", value_parser = parse_features)]
    features: Vec<(Platform, Vec<String>)>,
}

/// `--features PLATFORM=F1,F2`: a platform and the features it names.
fn parse_features(text: &str) -> Result<(Platform, Vec<String>), String> {
    let (platform, features) = text
        .split_once('=')
        .ok_or("write it as PLATFORM=F1,F2, e.g. openvino=qnn,openvino")?;
    let platform = super::parse_platform(platform)?;
    let features: Vec<String> = features
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    if features.is_empty() {
        return Err(format!(
            "names no feature for {platform}; write PLATFORM=F1,F2"
        ));
    }
    Ok((platform, features))
}

/// The features a platform's cells run with: --features' set for it (which must hold every
/// feature its engines need), else the fewest they need (gen doctor's).
fn cell_features(args: &Args, d: &doctor::Diagnosis) -> Result<Vec<String>, String> {
    let Some((_, features)) = args.features.iter().rev().find(|(p, _)| *p == d.platform) else {
        return Ok(d.features.clone());
    };
    match d.features.iter().find(|f| !features.contains(f)) {
        Some(lacking) => Err(format!(
            "error: --features {}={}: lacks {lacking}, which {}'s cells need\n  help: name at least {} (gen doctor --platform {})",
            d.platform,
            features.join(","),
            d.platform,
            d.features.join(","),
            d.platform
        )),
        None => Ok(features.clone()),
    }
}

pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let started = Instant::now();
    let specs = cx.specs()?;
    // Every refusal comes before anything is written.
    let (found, model, tools) = accepted(cx, &specs, &args.path)?;
    let platforms = if cx.select.platform.is_empty() {
        Platform::ALL.to_vec()
    } else {
        cx.select.platform.clone()
    };
    let diagnoses: Vec<doctor::Diagnosis> = platforms
        .into_iter()
        .map(|p| doctor::diagnose(&specs, p))
        .collect();
    let _ = writeln!(
        out,
        "{}: {} ({}, {:.1} MB at float32, counted from {}); exporting it needs about {:.1} GB here",
        found.path.display(),
        found.name,
        found.model_type,
        found.float32_bytes as f64 / 1e6,
        found.counted(),
        checkpoint::export_needs(&found) as f64 / 1e9
    );
    for d in &diagnoses {
        let _ = match d.usable() {
            true => writeln!(out, "  {}: runs here", d.platform),
            false => writeln!(out, "  {}: not here ({})", d.platform, d.missing.join("; ")),
        };
    }
    // An --only naming a platform this run leaves out would silently run nothing of it.
    if let Some(stray) = args.only.iter().find(|o| {
        !diagnoses
            .iter()
            .any(|d| d.usable() && only_filters(&[o.to_string()], d.platform, "").is_some())
    }) {
        return Err(format!(
            "error: --only {stray}: names no platform this run uses\n  help: write it as PLATFORM::ENGINE::CHECK with a platform given by --platform that runs here (gen doctor)"
        ));
    }
    for d in &diagnoses {
        cell_features(args, d)?;
    }
    if args.dry_run {
        return Ok(0);
    }

    let dir = match &args.out {
        Some(dir) => dir.clone(),
        None => hwmatrix_cell::paths::results_dir()?
            .join("checkpoints")
            .join(&found.name),
    };
    let partial = PathBuf::from(format!("{}.partial", dir.display()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).map_err(|e| format!("error: {}: {e}", partial.display()))?;
    // A run that stops on an error leaves nothing half-written (moved into place, it is gone already).
    let _unfinished = RemovedOnDrop(partial.clone());
    let python = args
        .python
        .clone()
        .unwrap_or_else(hwmatrix_cell::paths::python);
    let run_id = format!("checkpoint-{}-{}", found.name, hwmatrix_cell::run::run_id());
    let mut steps = Vec::new();
    let mut step = |name: String, since: Instant, out: &mut dyn Write| {
        let seconds = since.elapsed().as_secs_f64();
        let _ = writeln!(out, "  done: {name} ({seconds:.1} s)");
        steps.push(Step {
            step: name,
            seconds,
        });
    };

    // 1. A GGUF becomes a float32 checkpoint folder (transformers' own loader), kept in
    //    the cache beside the fixtures: a second run converts nothing.
    let cache = hwmatrix_cell::paths::cache_dir()
        .join("checkpoint-rows")
        .join(&found.name);
    let folder = match &found.weights {
        Weights::Gguf(file) => {
            let since = Instant::now();
            let _ = writeln!(
                out,
                "[1/4] the GGUF dequantized to a float32 checkpoint folder"
            );
            let folder = gguf_folder(file, &cache, &python, &tools)?;
            step("GGUF to a float32 folder".into(), since, out);
            folder
        }
        _ => std::fs::canonicalize(&found.path)
            .map_err(|e| format!("error: {}: {e}", found.path.display()))?,
    };

    // 2. Fixtures from the checkpoint, every format, by the tiny fixtures' recipe.
    let selection = Selection {
        models: vec![found.model_type.clone()],
        categories: vec![],
        platforms: vec![],
    };
    let model_plan = plan::plan(&specs, &selection).map_err(|e| format!("error: {e}"))?;
    // In the cache, by the fixtures' own key: a second run of the same checkpoint exports nothing.
    let fixtures_dir = cache.join("fixtures");
    let since = Instant::now();
    let _ = writeln!(
        out,
        "[2/4] fixtures of {} from the checkpoint",
        found.model_type
    );
    let openvino_python = super::fixtures::openvino_python();
    let built = fixtures::build(
        &model_plan,
        &fixtures_dir,
        &python,
        workers(args.jobs),
        &Source::Checkpoint(folder.clone()),
        false,
        super::fixtures::nncf_python(args.no_nncf, &openvino_python),
        err,
    )?;
    if let Some((_, why)) = built.failed.first() {
        return Err(format!(
            "error: the exporter failed on {}: {}\n  help: its traceback is in {}/.logs/",
            found.model_type,
            why.lines().next().unwrap_or_default(),
            fixtures_dir.display()
        ));
    }
    step("fixtures (every format)".into(), since, out);
    let since = Instant::now();
    let computed = hwmatrix_importer::memory::compute(
        &model_plan,
        &super::memory::cache_dir(),
        &python,
        1,
        Some(&folder),
        err,
    )?;
    step(
        "memory per format, computed from config.json".into(),
        since,
        out,
    );

    // Range evidence for the float16 verdicts, where the checkpoint takes text.
    let range = if matches!(
        model.spec.category.as_str(),
        "text_encoders" | "text_decoders"
    ) {
        let since = Instant::now();
        let range = range_evidence(&python, &folder, &partial.join("ranges.json"))?;
        step(
            "float32 activations against float16's range".into(),
            since,
            out,
        );
        range
    } else {
        Err(format!(
            "measured for text checkpoints only (the fixture's texts); {} is {}",
            found.model_type, model.spec.category
        ))
    };

    // A decoder's formats as their users judge them: greedy generation and perplexity,
    // each format on ONNX Runtime (and NNCF's on OpenVINO's runtime where openvino runs here).
    let decoding = (model.spec.category == "text_decoders").then(|| {
        let since = Instant::now();
        let openvino = diagnoses
            .iter()
            .any(|d| d.platform == Platform::Openvino && d.usable())
            .then_some(openvino_python.as_path());
        let decoding = greedy_and_perplexity(
            &python,
            &folder,
            &fixtures_dir.join(&found.model_type),
            &partial.join(greedy::FILE),
            openvino,
        );
        step(
            "greedy generation and perplexity per format".into(),
            since,
            out,
        );
        decoding
    });

    // 3. The architecture's cells on each platform that runs here.
    let records_dir = partial.join("records");
    std::fs::create_dir_all(&records_dir)
        .map_err(|e| format!("error: {}: {e}", records_dir.display()))?;
    let module = model.test_path();
    let usable: Vec<&doctor::Diagnosis> = diagnoses.iter().filter(|d| d.usable()).collect();
    // The run's records so far, read again after each platform (its counts are the progress).
    let mut records = Vec::new();
    for (n, d) in usable.iter().enumerate() {
        let since = Instant::now();
        let only = only_filters(&args.only, d.platform, &module);
        let features = cell_features(args, d)?;
        let _ = writeln!(
            out,
            "[3/4] {}'s cells on {} ({} of {}): {}",
            found.model_type,
            d.platform,
            n + 1,
            usable.len(),
            match &only {
                Some(only) => format!(
                    "cargo test -p generated --features {} {} (--only)",
                    features.join(","),
                    only.join(" ")
                ),
                None => d.command.replace(
                    &format!("--features {}", d.features.join(",")),
                    &format!("--features {}", features.join(",")),
                ),
            }
        );
        let filters = only.unwrap_or_else(|| d.filters(&module));
        for filter in filters {
            // Generation needs a generation fixture, which a checkpoint's export does not
            // build yet: skipped, not failed.
            checkpoint_cells(cx, &features, &filter, &fixtures_dir, &records_dir, &run_id)?;
        }
        records = read_records(&records_dir, &run_id)?;
        let on = |status| {
            records
                .iter()
                .filter(|(r, _)| r.platform == d.platform && r.status == status)
                .count()
        };
        let _ = writeln!(
            out,
            "  {}: {} checks passed, {} failed",
            d.platform,
            on(hwmatrix_cell::Outcome::Passed),
            on(hwmatrix_cell::Outcome::Failed)
        );
        step(format!("cells on {}", d.platform), since, out);
    }

    // 4. The row: each record judged, each format's memory, each step's time.
    let _ = writeln!(out, "[4/4] the row's report");
    if records.is_empty() {
        return Err(format!(
            "error: no cell of {} left a record in {}\n  help: the test output above says why",
            found.model_type,
            records_dir.display()
        ));
    }
    let formats = format_memory(&fixtures_dir.join(&found.model_type), computed);
    let mut row = CheckpointRow {
        name: found.name.clone(),
        path: found.path.display().to_string(),
        model_type: found.model_type.clone(),
        parameters: found.parameters,
        float32_bytes: found.float32_bytes,
        run_id: run_id.clone(),
        checks: records
            .iter()
            .map(|(record, id)| checkpoint_row::judge(record, id))
            .chain(
                decoding
                    .iter()
                    .filter_map(Measured::ok)
                    .flat_map(greedy::Decoding::checks),
            )
            .collect(),
        formats,
        steps: {
            let mut steps = steps;
            steps.push(Step {
                step: "in all".into(),
                seconds: started.elapsed().as_secs_f64(),
            });
            steps
        },
        not_run: diagnoses
            .iter()
            .filter(|d| !d.usable())
            .map(|d| (d.platform.to_string(), d.missing.join("; ")))
            .collect(),
        range: range.into(),
        decoding,
    };
    row.say_where_float16_overflows();
    write(&partial.join("report.md"), row.markdown())?;
    write(&partial.join("report.html"), row.html())?;
    let json = serde_json::to_string_pretty(&row).map_err(|e| e.to_string())? + "\n";
    write(&partial.join("report.json"), json)?;
    // The whole folder at once: the previous row stays until this one is complete.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&partial, &dir).map_err(|e| {
        format!(
            "error: cannot move {} to {}: {e}",
            partial.display(),
            dir.display()
        )
    })?;
    let judged = row
        .checks
        .iter()
        .filter(|c| {
            c.bound
                .as_ref()
                .is_some_and(hwmatrix_results::report::accuracy::Bound::fixed)
        })
        .count();
    let lost = row
        .checks
        .iter()
        .filter(|c| c.verdict.starts_with("loses"))
        .count();
    // The cells' own verdicts (their tolerance, as on the tiny fixtures), apart from the users' metrics.
    let failed = records
        .iter()
        .filter(|(r, _)| r.status == hwmatrix_cell::Outcome::Failed)
        .count();
    let _ = writeln!(
        out,
        "{}: {} checks on {} platforms, {failed} of the cells' checks failed their own tolerance; {judged} judged by their users' metric, {lost} lose accuracy; report in {}/report.md and report.html ({:.0} s)",
        found.name,
        row.checks.len(),
        usable.len(),
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// The checkpoint at `path` with its spec and the GGUF loader's folder, or why it
/// cannot run here: every refusal, before anything is written.
fn accepted<'s>(
    cx: &Context,
    specs: &'s Specs,
    path: &Path,
) -> Result<(Checkpoint, &'s LoadedModel, PathBuf), String> {
    let found = checkpoint::inspect(path)?;
    let Some(model) = specs.model(&found.model_type) else {
        return Err(format!(
            "error: {}: architecture `{}`, which model-specs/ has no spec of\n  help: `gen list` names the {} architectures it has; `gen derive --model {}` derives a spec from transformers' registries",
            path.display(),
            found.model_type,
            specs.models.len(),
            found.model_type
        ));
    };
    if let [wanted] = &cx.select.model[..]
        && *wanted != found.model_type
    {
        return Err(format!(
            "error: {} is a `{}` checkpoint, not `{wanted}`\n  help: drop --model: the checkpoint's config names its architecture",
            path.display(),
            found.model_type
        ));
    }
    checkpoint::fits(&found, checkpoint::available_memory())?;
    let tools = hwmatrix_cell::paths::cache_dir().join("checkpoints/.tools");
    if matches!(found.weights, Weights::Gguf(_)) && !tools.join("gguf").is_dir() {
        return Err(format!(
            "error: {} is a GGUF: transformers reads it with the gguf package, not installed at {}\n  help: `bash tests/setup.sh checkpoints` installs it",
            path.display(),
            tools.display()
        ));
    }
    Ok((found, model, tools))
}

/// A GGUF as a float32 checkpoint folder (transformers' own loader, checkpoints.py
/// from-gguf), kept in `cache`: a second run converts nothing, and a conversion
/// that fails leaves nothing.
fn gguf_folder(file: &Path, cache: &Path, python: &Path, tools: &Path) -> Result<PathBuf, String> {
    let target = cache.join("checkpoint");
    if target.join("config.json").is_file() {
        return Ok(target);
    }
    let converting = cache.join("checkpoint.partial");
    let _ = std::fs::remove_dir_all(&converting);
    let status = Command::new(python)
        .arg(hwmatrix_importer::workers::exporter_dir().join("checkpoints.py"))
        .arg("from-gguf")
        .arg(file)
        .arg(&converting)
        .env("PYTHONPATH", tools)
        .status()
        .map_err(|e| format!("error: cannot run {}: {e}", python.display()))?;
    if !status.success() {
        let _ = std::fs::remove_dir_all(&converting);
        return Err(format!(
            "error: transformers could not load {} as a checkpoint ({status}; its error is above)",
            file.display()
        ));
    }
    std::fs::rename(&converting, &target)
        .map_err(|e| format!("error: {}: {e}", target.display()))?;
    Ok(target)
}

/// Where a text checkpoint's float32 activations stand against float16's range
/// (checkpoints.py ranges, into `file`); Err(why) where it could not be measured.
fn range_evidence(
    python: &Path,
    folder: &Path,
    file: &Path,
) -> Result<Result<checkpoint_row::Range, String>, String> {
    let status = Command::new(python)
        .arg(hwmatrix_importer::workers::exporter_dir().join("checkpoints.py"))
        .args(["ranges".as_ref(), folder.as_os_str(), file.as_os_str()])
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("error: cannot run {}: {e}", python.display()))?;
    if !status.success() {
        return Ok(Err(format!(
            "checkpoints.py ranges failed ({status}; its error is above)"
        )));
    }
    Ok(std::fs::read_to_string(file)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: {e}", file.display())))
}

/// The cell filters `--only` gives `platform` (the module's checks it names), or None
/// where it names none of the platform's: all its checks run.
fn only_filters(only: &[String], platform: Platform, module: &str) -> Option<Vec<String>> {
    let prefix = format!("{platform}::");
    let chosen: Vec<String> = only
        .iter()
        .filter(|o| o.starts_with(&prefix))
        .map(|o| format!("{module}{o}"))
        .collect();
    (!chosen.is_empty()).then_some(chosen)
}

/// A decoder's greedy generation and perplexity in each format of its fixture
/// (checkpoints.py decoding, into `file`), or why they were not measured.
fn greedy_and_perplexity(
    python: &Path,
    folder: &Path,
    fixture: &Path,
    file: &Path,
    openvino_python: Option<&Path>,
) -> Measured<greedy::Decoding> {
    let ran = Command::new(python)
        .arg(hwmatrix_importer::workers::exporter_dir().join("checkpoints.py"))
        .args([
            "decoding".as_ref(),
            folder.as_os_str(),
            fixture.as_os_str(),
            file.as_os_str(),
        ])
        .args(openvino_python)
        .status();
    let measured = match ran {
        Err(e) => Err(format!("cannot run {}: {e}", python.display())),
        Ok(status) if !status.success() => Err(format!(
            "checkpoints.py decoding failed ({status}; its error is above)"
        )),
        // The evidence, or checkpoints.py's reason for none (a base model's fixture).
        Ok(_) => std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            .map_err(|e| format!("{}: {e}", file.display())),
    };
    measured.unwrap_or_else(|not_measured| Measured::NotMeasured { not_measured })
}

/// Each format's file in the fixture beside the bytes `gen memory` computed for it.
fn format_memory(
    fixture: &Path,
    computed: Vec<(String, hwmatrix_importer::memory::Computed)>,
) -> Vec<FormatMemory> {
    let weights = computed
        .into_iter()
        .next()
        .and_then(|(_, c)| c.ok())
        .and_then(|c| c.get("weights").cloned());
    checkpoint_row::FORMATS
        .iter()
        .map(|format| FormatMemory {
            format: format.to_string(),
            file_bytes: std::fs::metadata(fixture.join(checkpoint_row::format_file(format)))
                .ok()
                .map(|m| m.len()),
            computed_bytes: weights
                .as_ref()
                .and_then(|w| w.get(checkpoint_row::computed_key(format))?.as_u64()),
        })
        .filter(|f| f.file_bytes.is_some())
        .collect()
}

/// Runs one filter's cells on the checkpoint's fixtures, into the row's records.
fn checkpoint_cells(
    cx: &Context,
    features: &[String],
    filter: &str,
    fixtures: &Path,
    records: &Path,
    run_id: &str,
) -> Result<(), String> {
    let run_id = std::ffi::OsString::from(run_id);
    hwmatrix_importer::measure::cargo_test_cells(
        &cx.root,
        &features.join(","),
        &[
            filter.to_string(),
            "--skip".into(),
            hwmatrix_cell::CheckId::Generates.name().into(),
        ],
        &[
            ("HWMATRIX_FIXTURES", fixtures),
            ("HWMATRIX_RESULTS", records),
        ],
        |c| {
            // The report holds each check's verdict; the tests' own output would bury the progress.
            // One check at a time: a trained checkpoint's sessions (two browsers at once
            // held 20 of 24 GB for a 270M model) and time limits are sized for one.
            c.env("HWMATRIX_RUN_ID", &run_id)
                .env("RUST_TEST_THREADS", "1")
                .env("RUST_BACKTRACE", "0")
                .stdout(std::process::Stdio::null());
        },
    )
    .map(drop)
}

/// The run's measured records (passed or failed), each with its name, by platform, engine and check.
fn read_records(dir: &Path, run_id: &str) -> Result<Vec<(Record, String)>, String> {
    let mut records: Vec<(Record, String)> = hwmatrix_importer::measure::records_in(dir)?
        .into_iter()
        .filter(|(record, _)| {
            record.run_id == run_id
                && matches!(
                    record.status,
                    hwmatrix_cell::Outcome::Passed | hwmatrix_cell::Outcome::Failed
                )
        })
        .collect();
    records.sort_by(|(a, _), (b, _)| {
        (a.platform.name(), &a.engine, &a.check).cmp(&(b.platform.name(), &b.engine, &b.check))
    });
    Ok(records)
}

fn write(path: &Path, text: String) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("error: {}: {e}", path.display()))
}

/// A folder removed when it goes out of scope: the unfinished row of a run that stopped.
struct RemovedOnDrop(PathBuf);

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runs_the_checks_it_names_of_their_platform() {
        let only = [
            "webgpu::native::fp16_matches_reference".to_string(),
            "webgpu::firefox::q4f16_matches_reference".to_string(),
        ];
        assert_eq!(
            only_filters(&only, Platform::Webgpu, "text_decoders::llama::"),
            Some(vec![
                "text_decoders::llama::webgpu::native::fp16_matches_reference".to_string(),
                "text_decoders::llama::webgpu::firefox::q4f16_matches_reference".to_string(),
            ])
        );
        // A platform no --only names runs whole; a name is a platform, not a prefix of one.
        assert_eq!(only_filters(&only, Platform::Cpu, "m::"), None);
        assert_eq!(
            only_filters(&["webgpux::a".to_string()], Platform::Webgpu, "m::"),
            None
        );
    }
}
