//! The `gen` command line. `run` takes the arguments and the two output
//! streams and returns the exit code, so tests drive it in-process exactly as
//! the binary does.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use hwmatrix_cell::Platform;

use crate::plan::{self, Selection};
use crate::{fixtures, list, render, spec, write};

const ABOUT: &str =
    "Renders hwmatrix's test cells (model × platform) from model-specs/ into the generated crate.";

const LONG_ABOUT: &str = "\
Renders hwmatrix's test cells (model × platform) from model-specs/ into the
generated crate: per model a module with its adapters and one test module per
platform.

Every file is rendered from all the specs, whatever the selection: the index
files (lib.rs, platforms.rs, each category's mod.rs) are the same with or
without one. A selection (--category, --model, --platform) only narrows which
files are written or checked: the index files, and of the selected models
their mod.rs, cells.rs and test modules (with --platform, only those
platforms' test modules). Other models' files are left as they are: stale
files (generated files no spec produces any more) are removed, and reported
by --check, only with --all or no selection.

All specs are validated before anything is written; any error (with its file,
line and column) writes nothing and exits 1.";

const AFTER_HELP: &str = "\
Examples:
  gen --all                         render every model on every platform, remove stale files
  gen --category text_encoders      write only the text encoders' files (and the index files)
  gen --model bert --platform cuda  one cell
  gen --all --check                 exit 1 if generated/ differs from the specs (CI)
  gen --category vision --check     exit 1 if the vision models' files or the index files differ
  gen list                          models, categories, platforms and cell counts
  gen fixtures --model bert         build the ONNX fixture and references of bert
  gen results import                load results/*.jsonl into the results database
  gen report --format html --out results/report   the compatibility matrix, every mark naming its records
  gen bench --model bert --platform cpu           latency, throughput, memory and the Rust/Python ratio

A model's Rust module is its model_type with `-` and `.` written `_` (and `_`
appended to a Rust keyword): xlm-roberta is module xlm_roberta.

Then: cargo test -p generated [--features cuda] [bert::cpu::]";

#[derive(Debug, Parser)]
#[command(name = "gen", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub select: SelectArgs,

    /// The generated crate to write into (its src/ is gen's)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Write nothing; exit 1 listing drifted and missing files (and stale ones with --all or no selection)
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List models, categories and platforms, with cell status counts
    List,
    /// Build fixtures (ONNX model + reference inputs/outputs) with the Python exporter; cached
    Fixtures {
        /// Fixture root (default: $HWMATRIX_FIXTURES, else ~/.cache/hwmatrix/fixtures)
        #[arg(long, value_name = "DIR")]
        fixtures: Option<PathBuf>,
        /// The exporter venv's Python (default: $HWMATRIX_PYTHON, else ~/.cache/hwmatrix/venv/bin/python)
        #[arg(long, value_name = "FILE")]
        python: Option<PathBuf>,
        /// Python worker processes (default: one per core)
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Build from this local pretrained checkpoint (a folder with config.json and weights,
        /// e.g. one in the HF cache) instead of tiny random weights; inputs come from its
        /// tokenizer where it has one. Needs exactly one --model.
        #[arg(long, value_name = "DIR")]
        checkpoint: Option<PathBuf>,
        /// Also export the generation fixtures of models whose generation exporter failed
        /// before (`imported.generation_export`), after changing it; then `gen import
        /// --platform cpu` records whether their `generates` checks pass now
        #[arg(long)]
        retry_generation: bool,
    },
    /// Write one spec per architecture of transformers' base-model registry (see --help)
    #[command(long_about = IMPORT_ABOUT)]
    Import {
        /// Compare each spec's category, architecture type and task with the registries; write nothing
        #[arg(long = "check")]
        check_only: bool,
        /// Fixture root the trial exports go to (default: $HWMATRIX_FIXTURES, else ~/.cache/hwmatrix/fixtures)
        #[arg(long, value_name = "DIR")]
        fixtures: Option<PathBuf>,
        /// The exporter venv's Python (default: $HWMATRIX_PYTHON, else ~/.cache/hwmatrix/venv/bin/python)
        #[arg(long, value_name = "FILE")]
        python: Option<PathBuf>,
        /// Python worker processes (default: one per core)
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// With --platform: import the records of a run already made (a results
        /// folder of *.jsonl, e.g. from another machine) instead of running the cells
        #[arg(long, value_name = "DIR")]
        records: Option<PathBuf>,
        /// With --platform: re-measure the cells the evidence store holds entries of and
        /// compare, writing nothing; exit 1 naming each entry the run disagrees with
        /// (accepting a new status is `gen import --platform P`, a reviewed change)
        #[arg(long)]
        verify: bool,
        /// With --verify: only the cells of slice K of N (`3/8`: each cell falls in one
        /// slice by its name, so N runs with K = 0..N-1 cover the whole store)
        #[arg(long, value_name = "K/N", value_parser = crate::measure::parse_slice)]
        slice: Option<(u32, u32)>,
        /// The cargo features of the test binary that runs the cells (default: the
        /// platform's and its engines'); a run that built one binary for several
        /// platforms (`qnn,openvino`) reuses it
        #[arg(long, value_name = "F,G")]
        features: Option<String>,
    },
    /// Say, per platform, whether its cells can run here and exactly what is missing; exit 1 if any selected platform is unusable
    #[command(long_about = DOCTOR_ABOUT)]
    Doctor,
    /// Print a model's spec with defaults and imported fields filled in, and where each came from
    Show {
        /// The model_type (transformers' own, e.g. xlm-roberta)
        model_type: String,
    },
    /// The results database: import record files, list runs, verify a report (see --help)
    #[command(long_about = crate::evidence::RESULTS_ABOUT)]
    Results {
        #[command(subcommand)]
        command: crate::evidence::ResultsCommand,
        /// The database (default: results/hwmatrix.sqlite in the checkout, or in $HWMATRIX_RESULTS)
        #[arg(long, value_name = "FILE", global = true)]
        db: Option<PathBuf>,
    },
    /// Benchmark one cell: latency (median, p90), throughput per batch, peak memory, and the Rust/Python ratio (see --help)
    #[command(long_about = crate::evidence::BENCH_ABOUT)]
    Bench {
        /// Timed runs after the warm-up
        #[arg(long, default_value_t = 50)]
        runs: usize,
        /// Warm-up runs
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Batch sizes for throughput, comma-separated
        #[arg(long, default_value = "1,2,4,8")]
        batch: String,
        /// The engine of the cell: onnxruntime, libtorch or browser
        #[arg(long, default_value = "onnxruntime")]
        engine: String,
        /// Skip the Python onnxruntime comparison
        #[arg(long)]
        no_python: bool,
    },
    /// Write the GitHub Actions workflow (.github/workflows/hwmatrix.yml) that runs every platform on its runner (see --help)
    #[command(long_about = CI_ABOUT)]
    Ci {
        /// Write nothing; exit 1 if the workflow or actionlint's config differs from what hardware.yaml gives
        #[arg(long = "check")]
        check_only: bool,
    },
    /// Which cells have evidence, which evidence is stale (older than its spec, fixture or runtime), and the gaps by category and platform
    Coverage {
        /// The database (default: results/hwmatrix.sqlite in the checkout, or in $HWMATRIX_RESULTS)
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
    /// The compatibility report (Markdown, HTML, JSON) from the results database and the specs (see --help)
    #[command(long_about = REPORT_ABOUT)]
    Report {
        /// The database (default: results/hwmatrix.sqlite in the checkout, or in $HWMATRIX_RESULTS)
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
        /// Output format (repeatable; several need --out)
        #[arg(long, value_enum)]
        format: Vec<crate::evidence::Format>,
        /// Write report.<md|html|json> into this folder instead of printing
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Only records of this run (repeatable; default: the newest record of each check, whatever its run)
        #[arg(long, value_name = "RUN_ID")]
        run: Vec<String>,
        /// Compare the latencies two runs recorded; exit 1 on a regression beyond --threshold
        #[arg(long, num_args = 2, value_names = ["RUN_A", "RUN_B"])]
        compare: Vec<String>,
        /// List every check whose status changed between two runs (regressions, progressions), with both records; exit 1 on a regression. Checks are matched by model, platform, engine, check and precision, whatever host ran them
        #[arg(long, num_args = 2, value_names = ["RUN_A", "RUN_B"], conflicts_with = "compare")]
        diff: Vec<String>,
        /// With --compare: the relative change that counts (0.25 = 25%)
        #[arg(long, default_value_t = 0.25)]
        threshold: f64,
    },
}

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Every model and platform (also what no selection means); cannot be combined with a selection
    #[arg(long, global = true, conflicts_with_all = ["category", "model", "platform"])]
    pub all: bool,
    /// Only this category's models (repeatable): gen writes or checks only their files and the index files; list and fixtures only them
    #[arg(long, value_name = "NAME", global = true)]
    pub category: Vec<String>,
    /// Only this model (repeatable; transformers' exact model_type, e.g. xlm-roberta): gen writes or checks only its files and the index files
    #[arg(long, value_name = "MODEL_TYPE", global = true)]
    pub model: Vec<String>,
    /// Only this platform (repeatable): cpu, cuda, rocm, mps, openvino, qnn, webnn, webgpu; gen writes or checks only its test modules
    #[arg(long, value_name = "NAME", global = true, value_parser = parse_platform)]
    pub platform: Vec<Platform>,
    /// The specs folder (default: model-specs/ of the workspace)
    #[arg(long, value_name = "DIR", global = true)]
    pub specs: Option<PathBuf>,
}

fn parse_platform(name: &str) -> Result<Platform, String> {
    Platform::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Platform::ALL.iter().map(|p| p.name()).collect();
        format!("unknown platform; use one of {}", names.join(", "))
    })
}

/// The checkout gen runs in (the nearest ancestor of the current folder with
/// model-specs/hardware.yaml), else the one it was built in.
pub fn workspace_root() -> PathBuf {
    hwmatrix_cell::paths::checkout_root()
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")))
}

pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = e.exit_code();
            let text = e.render().ansi().to_string();
            let _ = if code == 0 {
                write!(out, "{text}")
            } else {
                write!(err, "{text}")
            };
            return code;
        }
    };
    match execute(&cli, out, err) {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "{message}");
            1
        }
    }
}

const IMPORT_ABOUT: &str = "\
Writes one spec per architecture of transformers' base-model registry into
model-specs/models/<category>/<model_type>.yaml, with a Python worker per core:

- category, architecture type, modality and task from the task registries the
  architecture appears in (causal LM and not masked LM: decoder-only, ...);
  where they cannot decide, it says so and the spec needs a hand-written field;
- a tiny config (the real config shrunk generically), inputs and two shapes
  for the modality, and the outputs the tiny model really returns;
- then each architecture goes through the fixture pipeline once (export, then
  onnxruntime against PyTorch); a failure becomes the model's `export` entry
  in the evidence store (model-specs/evidence/<model_type>.yaml), with its
  stage, who failed, the whole error and this run's provenance; a pass
  clears it.

The importer owns only the `imported:` block below the marker line of each
file; what a person wrote above it is never changed, and wins. A re-run that
finds nothing new writes nothing. Architectures left out are listed with
their reasons in model-specs/import-exclusions.yaml. Use --model to import
some only.

With --platform P, it measures instead: P's cells run for real (`cargo test
-p generated --features P`, the store's entries on P included), and the
newest run's records go into the evidence store check by check: a failure
becomes an entry (who failed: the model, the engine, the environment or our
harness), a pass clears its entry, and an unchanged failure rewrites nothing.
Run `gen` afterwards to regenerate the cells. A status a person set for P in
a spec is never measured over.";

const CI_ABOUT: &str = "\
Writes .github/workflows/hwmatrix.yml from model-specs/hardware.yaml: a job
that builds the fixtures once and hands them to the others as an artifact;
per platform, a job on its runner label (hardware.yaml `runner`) with its
cargo feature, split into cargo-nextest partitions (--partition hash:K/N),
each uploading its records under a host name of its own; and a last job that
imports every record into the results database and builds the report.
Beside it, .github/actionlint.yaml declares the self-hosted runner labels
hardware.yaml names, so actionlint checks the workflow as GitHub would.
Deterministic: `gen ci --check` (run by tests/run.sh, with actionlint) exits 1
when either checked-in file differs.";

const REPORT_ABOUT: &str = "\
Builds the compatibility report from the results database (`gen results
import` first) and the specs: summary; platforms (tested, hosts, library
versions); models; matrices category × platform, architecture type × platform
and model × platform with architectures.yaml's expectation beside the
measurement and every disagreement flagged; implementation issues grouped by
cause; performance; recommendations.

A cell (model × platform × engine) takes the status of the newest record of
each of its checks: failed if any failed, passed only if all passed. A cell
without a record is `no evidence`, never a pass. Every mark names its records
(record id, run, host, time).

  gen report                                   Markdown on stdout
  gen report --format html --format json --out report/
  gen report --compare RUN_A RUN_B             latency regressions (exit 1) and speed-ups";

const DOCTOR_ABOUT: &str = "\
Says, for each platform (all, or those given with --platform), whether its
cells can run on this machine: the hardware found (the same probe a check runs
before it opens an engine), the engine library it would load with its version
and path (for ONNX Runtime, the build with the platform's execution provider
and the provider library beside it), and otherwise exactly what is missing and
how to get it. Each platform ends with the command that runs its cells.

Nothing is loaded or run. Exit status 0 when every selected platform is
usable, 1 when one is not: `gen doctor --platform cpu --platform openvino`
checks a CI runner before its tests.";

fn workers(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

fn execute(cli: &Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let root = workspace_root();
    let specs_dir = cli
        .select
        .specs
        .clone()
        .unwrap_or_else(|| root.join("model-specs"));
    if let (
        Some(Command::Import {
            check_only: false,
            records,
            verify,
            slice,
            features,
            ..
        }),
        false,
    ) = (&cli.command, cli.select.platform.is_empty())
    {
        // Measure the platforms' cells rather than derive from transformers.
        let specs = spec::load(&specs_dir).map_err(|e| e.to_string())?;
        let options = crate::measure::Options {
            records: records.as_deref(),
            verify: *verify,
            slice: *slice,
            features: features.clone(),
        };
        let mut code = 0;
        for platform in &cli.select.platform {
            code = code.max(crate::measure::run(
                &root,
                &specs,
                *platform,
                &cli.select.model,
                &options,
                out,
                err,
            )?);
        }
        return Ok(code);
    }
    if let Some(Command::Import { verify: true, .. } | Command::Import { slice: Some(_), .. }) =
        &cli.command
    {
        return Err(
            "error: --verify and --slice re-measure a platform's stored entries: add --platform P"
                .into(),
        );
    }
    if let Some(Command::Import {
        records: Some(_), ..
    }) = &cli.command
    {
        return Err("error: --records imports a run's records for the platforms given with --platform: add --platform P".into());
    }
    if let Some(Command::Import {
        check_only,
        fixtures,
        python,
        jobs,
        ..
    }) = &cli.command
    {
        let options = crate::import::Options {
            python: python.clone().unwrap_or_else(hwmatrix_cell::paths::python),
            fixtures: fixtures
                .clone()
                .unwrap_or_else(hwmatrix_cell::paths::fixtures_dir),
            workers: workers(*jobs),
            only: cli.select.model.clone(),
            check: *check_only,
        };
        return crate::import::run(&specs_dir, &options, out, err);
    }
    if let Some(Command::Bench {
        runs,
        warmup,
        batch,
        engine,
        no_python,
    }) = &cli.command
    {
        let args = crate::evidence::BenchArgs {
            runs: *runs,
            warmup: *warmup,
            batch,
            engine,
            no_python: *no_python,
        };
        return crate::evidence::bench(&root, &cli.select, &args, out, err);
    }
    if let Some(Command::Results { command, db }) = &cli.command {
        return crate::evidence::results(command, db.as_deref(), out, err);
    }
    let specs = spec::load(&specs_dir).map_err(|e| e.to_string())?;
    if let Some(Command::Report {
        db,
        format,
        out: dir,
        run,
        compare,
        diff,
        threshold,
    }) = &cli.command
    {
        let args = crate::evidence::ReportArgs {
            db: db.as_deref(),
            formats: format,
            out: dir.as_deref(),
            runs: run,
            compare,
            diff,
            threshold: *threshold,
        };
        return crate::evidence::report(&specs, &args, out, err);
    }
    if let Some(Command::Coverage { db }) = &cli.command {
        return crate::evidence::coverage(&specs, db.as_deref(), out);
    }
    if let Some(Command::Ci { check_only }) = &cli.command {
        return crate::ci::run(&specs, &root, *check_only, out);
    }
    if let Some(Command::Doctor) = &cli.command {
        let platforms = if cli.select.platform.is_empty() {
            Platform::ALL.to_vec()
        } else {
            cli.select.platform.clone()
        };
        let diagnoses: Vec<_> = platforms
            .into_iter()
            .map(|p| crate::doctor::diagnose(&specs, p))
            .collect();
        return Ok(if crate::doctor::report(&diagnoses, out) {
            0
        } else {
            1
        });
    }
    if let Some(Command::Show { model_type }) = &cli.command {
        let model = specs.model(model_type).ok_or_else(|| {
            format!("error: no spec has model_type `{model_type}`\n  help: `gen list` lists them")
        })?;
        let _ = writeln!(
            out,
            "# {}: resolved from {}",
            model_type, model.display_path
        );
        for (field, source) in &model.sources {
            let _ = writeln!(
                out,
                "#   {field}: {}",
                serde_json::to_value(source)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            );
        }
        let _ = write!(
            out,
            "{}",
            serde_yaml::to_string(&model.spec).map_err(|e| e.to_string())?
        );
        return Ok(0);
    }
    let selection = Selection {
        models: cli.select.model.clone(),
        categories: cli.select.category.clone(),
        platforms: cli.select.platform.clone(),
    };
    // What the selection covers: what list and fixtures show and build, and which files are written or checked.
    let plan = plan::plan(&specs, &selection).map_err(|e| format!("error: {e}"))?;
    match &cli.command {
        Some(Command::List) => {
            let _ = write!(out, "{}", list::render(&plan));
            Ok(0)
        }
        Some(
            Command::Import { .. }
            | Command::Show { .. }
            | Command::Doctor
            | Command::Results { .. }
            | Command::Report { .. }
            | Command::Bench { .. }
            | Command::Ci { .. }
            | Command::Coverage { .. },
        ) => unreachable!("handled above"),
        Some(Command::Fixtures {
            fixtures: dir,
            python,
            jobs,
            checkpoint,
            retry_generation,
        }) => {
            let dir = dir
                .clone()
                .unwrap_or_else(hwmatrix_cell::paths::fixtures_dir);
            let python = python.clone().unwrap_or_else(hwmatrix_cell::paths::python);
            let started = Instant::now();
            let source = match checkpoint {
                None => fixtures::Source::TinyRandom,
                Some(_) if plan.models.len() != 1 => {
                    return Err("error: --checkpoint builds one model's fixture\n  help: add --model <model_type> (the checkpoint's architecture)".into());
                }
                Some(path) if !path.join("config.json").is_file() => {
                    return Err(format!(
                        "error: {} has no config.json\n  help: pass the folder of a saved pretrained model (config.json and weights)",
                        path.display()
                    ));
                }
                Some(path) => fixtures::Source::Checkpoint(
                    std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?,
                ),
            };
            let summary = fixtures::build(
                &plan,
                &dir,
                &python,
                workers(*jobs),
                &source,
                *retry_generation,
                err,
            )?;
            let _ = writeln!(
                out,
                "fixtures in {}: {} built, {} cached, {} known issues skipped, {} failed ({:.1} s)",
                dir.display(),
                summary.built,
                summary.cached,
                summary.skipped_known_issue,
                summary.failed.len(),
                started.elapsed().as_secs_f64()
            );
            for (model, error) in &summary.failed {
                let first = error.lines().next().unwrap_or_default();
                let _ = writeln!(err, "error: the exporter failed on {model}: {first}");
            }
            if !summary.failed.is_empty() {
                let _ = writeln!(
                    err,
                    "  help: the tracebacks are in {}/.logs/. Our harness's failure (building or feeding the tiny model) is ours to fix in the spec's tiny_config or inputs; `gen import --model <model_type>` re-derives the spec and records where the pipeline stops (stage config or reference: not tested; export: the exporters' known issue)",
                    dir.display()
                );
            }
            Ok(if summary.failed.is_empty() { 0 } else { 1 })
        }
        None => {
            // What every file is rendered from, whatever the selection.
            let full =
                plan::plan(&specs, &Selection::default()).map_err(|e| format!("error: {e}"))?;
            generate(cli, &full, &plan, selection.is_empty(), &root, out)
        }
    }
}

/// Renders every file from `full`, and writes or checks those `selected`
/// covers; stale files count only when `everything` is selected.
fn generate(
    cli: &Cli,
    full: &plan::Plan,
    selected: &plan::Plan,
    everything: bool,
    root: &Path,
    out: &mut dyn Write,
) -> Result<i32, String> {
    let out_dir = cli.out.clone().unwrap_or_else(|| root.join("generated"));
    if !out_dir.join("Cargo.toml").is_file() {
        return Err(format!(
            "error: {} is not the generated crate (it has no Cargo.toml)\n  help: pass --out with the folder of the `generated` crate",
            out_dir.display()
        ));
    }
    let mut files = render::render(full)?;
    if !everything {
        let wanted = render::selected_paths(selected);
        files.retain(|path, _| wanted.contains(path));
        debug_assert_eq!(
            files.len(),
            wanted.len(),
            "render renders every selected file"
        );
    }
    let changes = write::diff(&out_dir, &files, everything)?;
    let cells: usize = selected.models.iter().map(|m| m.cells.len()).sum();
    if cli.check {
        if changes.is_clean() {
            let _ = writeln!(
                out,
                "{}: up to date ({} files, {cells} cells)",
                out_dir.display(),
                files.len()
            );
            return Ok(0);
        }
        for (label, paths) in [
            ("drifted", &changes.drifted),
            ("missing", &changes.missing),
            ("stale", &changes.stale),
        ] {
            for p in paths {
                let _ = writeln!(out, "{label}: {}", out_dir.join(p).display());
            }
        }
        let _ = writeln!(
            out,
            "{} is out of date with the specs: {} drifted, {} missing, {} stale; run `cargo run -p generator --bin gen -- --all`",
            out_dir.display(),
            changes.drifted.len(),
            changes.missing.len(),
            changes.stale.len()
        );
        return Ok(1);
    }
    if changes.is_clean() {
        let _ = writeln!(
            out,
            "nothing to do: {} files already up to date ({cells} cells)",
            files.len()
        );
        return Ok(0);
    }
    write::apply(&out_dir, &files, &changes)?;
    let _ = writeln!(
        out,
        "{}: {} written, {} removed, {} unchanged ({} models, {cells} cells)",
        out_dir.display(),
        changes.drifted.len() + changes.missing.len(),
        changes.stale.len(),
        changes.unchanged,
        selected.models.len()
    );
    Ok(0)
}
