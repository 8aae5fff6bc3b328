//! The `gen` command line. `run` takes the arguments and the two output
//! streams and returns the exit code, so tests drive it in-process exactly as
//! the binary does. Each verb is a module of its own that owns its arguments
//! and its run; rendering the cells (no verb) is [`generate`].

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hwmatrix_cell::Platform;
use hwmatrix_specs::plan::{self, Plan, Selection};
use hwmatrix_specs::spec::{self, Specs};

mod bench;
mod checkpoint;
mod ci;
mod coverage;
mod database;
mod derive;
mod doctor;
mod fixtures;
mod generate;
mod list;
mod measure;
mod memory;
mod renamed;
mod report;
mod results;
mod show;

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
  gen derive --model bert           derive bert's spec from transformers' registries
  gen measure --platform cpu        run cpu's cells and take their records into the evidence store
  gen results load                  load results/*.jsonl into the results database
  gen report --format html --out results/report   the compatibility matrix, every mark naming its records
  gen bench --model bert --platform cpu           latency, throughput, memory and the Rust/Python ratio
  gen memory --model llama                        parameters, bytes per format and device, cache per token

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

    #[command(flatten)]
    pub generate: generate::Args,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List models, categories and platforms, with cell status counts (or, with --test-paths, each model's test module)
    List(list::Args),
    /// Build fixtures (ONNX model, its formats, reference inputs/outputs) with the Python exporter, then the formats made after the export (transformers.js's bnb4, q2 and q2f16; NNCF's where OpenVINO is installed); cached
    Fixtures(fixtures::Args),
    /// Write one spec per architecture of transformers' base-model registry (see --help)
    #[command(long_about = derive::ABOUT)]
    Derive(derive::Args),
    /// Run a platform's cells for real and take their records into the evidence store (see --help)
    #[command(long_about = measure::ABOUT)]
    Measure(measure::Args),
    /// The old name of `gen derive` and `gen measure`: refused, naming the new one
    #[command(hide = true)]
    Import(renamed::Args),
    /// Say, per platform, whether its cells can run here and exactly what is missing; exit 1 if any selected platform is unusable
    #[command(long_about = doctor::ABOUT)]
    Doctor,
    /// Print a model's spec with defaults and imported fields filled in, and where each came from
    Show(show::Args),
    /// The results database: load record files, list runs, verify a report (see --help)
    #[command(long_about = results::ABOUT)]
    Results(results::Args),
    /// Benchmark one cell: latency (median, p90), throughput per batch, peak memory, and the Rust/Python ratio (see --help)
    #[command(long_about = bench::ABOUT)]
    Bench(bench::Args),
    /// Write the GitHub Actions workflow (.github/workflows/hwmatrix.yml) that runs every platform on its runner (see --help)
    #[command(long_about = ci::ABOUT)]
    Ci(ci::Args),
    /// One trained checkpoint's row of the matrix: every platform and format here, judged by its users' metric (see --help)
    #[command(long_about = checkpoint::ABOUT)]
    Checkpoint(checkpoint::Args),
    /// Which cells have evidence, which evidence is stale (older than its spec, fixture or runtime), and the gaps by category and platform
    Coverage(coverage::Args),
    /// The compatibility report (Markdown, HTML, JSON) from the results database and the specs (see --help)
    #[command(long_about = report::ABOUT)]
    Report(report::Args),
    /// What each architecture weighs at its default size, per format and device, and its cache per token (see --help)
    #[command(long_about = memory::ABOUT)]
    Memory(memory::Args),
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

pub(crate) fn parse_platform(name: &str) -> Result<Platform, String> {
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

/// What every verb may use: the checkout, the specs folder and the selection.
pub struct Context<'a> {
    pub root: PathBuf,
    pub specs_dir: PathBuf,
    pub select: &'a SelectArgs,
}

impl Context<'_> {
    /// Every spec, validated (each error with its file, line and fix).
    fn specs(&self) -> Result<Specs, String> {
        spec::load(&self.specs_dir).map_err(|e| e.to_string())
    }

    fn selection(&self) -> Selection {
        Selection {
            models: self.select.model.clone(),
            categories: self.select.category.clone(),
            platforms: self.select.platform.clone(),
        }
    }

    /// The cells the selection covers.
    fn plan<'s>(&self, specs: &'s Specs) -> Result<Plan<'s>, String> {
        plan::plan(specs, &self.selection()).map_err(|e| format!("error: {e}"))
    }

    /// A verb that reads every model and platform refuses a selection rather
    /// than ignore it.
    fn reads_everything(&self, verb: &str) -> Result<(), String> {
        if self.selection().is_empty() {
            return Ok(());
        }
        Err(format!(
            "error: gen {verb} reads every model and platform: --model, --category and --platform do not apply\n  help: drop them (the report and coverage cover the whole matrix)"
        ))
    }
}

/// Python worker processes: `--jobs`, else one per core.
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
    let cx = Context {
        root,
        specs_dir,
        select: &cli.select,
    };
    match &cli.command {
        None => generate::run(&cx, &cli.generate, out),
        Some(Command::List(args)) => list::run(&cx, args, out),
        Some(Command::Fixtures(args)) => fixtures::run(&cx, args, out, err),
        Some(Command::Derive(args)) => derive::run(&cx, args, out, err),
        Some(Command::Measure(args)) => measure::run(&cx, args, out, err),
        Some(Command::Import(args)) => renamed::import(&cx, args),
        Some(Command::Doctor) => doctor::run(&cx, out),
        Some(Command::Show(args)) => show::run(&cx, args, out),
        Some(Command::Results(args)) => results::run(&cx, args, out, err),
        Some(Command::Bench(args)) => bench::run(&cx, args, out, err),
        Some(Command::Ci(args)) => ci::run(&cx, args, out),
        Some(Command::Checkpoint(args)) => checkpoint::run(&cx, args, out, err),
        Some(Command::Coverage(args)) => coverage::run(&cx, args, out),
        Some(Command::Report(args)) => report::run(&cx, args, out, err),
        Some(Command::Memory(args)) => memory::run(&cx, args, out, err),
    }
}
