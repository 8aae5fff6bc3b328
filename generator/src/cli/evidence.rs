//! `gen results …` and `gen report`: from record files to the database, and
//! from the database and the specs to the report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Subcommand, ValueEnum};
use hwmatrix_results::Database;

use crate::plan::{self, Selection};
use crate::report;
use crate::spec::Specs;

pub const RESULTS_ABOUT: &str = "\
Keeps every record of every run, from every machine, in one SQLite database
(default: results/hwmatrix.sqlite in the checkout, or $HWMATRIX_RESULTS).

A record is identified by the SHA-256 of its line: importing a file twice adds
nothing, and record files of several machines merge without loss or
duplicates. A torn or corrupt line is reported with its file and line, and the
rest of the file still imports.";

/// Rejected lines shown per file.
const REJECTED_SHOWN: usize = 10;

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// Import JSON-lines record files (default: every results/*.jsonl)
    Import {
        /// Record files (*.jsonl) or folders of them
        files: Vec<PathBuf>,
    },
    /// List the runs in the database: run id, hosts, first and last record, records
    Runs,
    /// Exit 1 unless every record a passed cell of a JSON report names is in the database
    Verify {
        /// A report written by `gen report --format json`
        report: PathBuf,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Markdown,
    Html,
    Json,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Markdown => "md",
            Format::Html => "html",
            Format::Json => "json",
        }
    }
}

/// The database `--db` names, else results/hwmatrix.sqlite.
pub fn database_path(db: Option<&Path>) -> Result<PathBuf, String> {
    match db {
        Some(path) => Ok(path.to_path_buf()),
        None => Ok(hwmatrix_cell::paths::results_dir()?.join(hwmatrix_results::DEFAULT_FILE)),
    }
}

/// The database reports read: it must exist (opening would create an empty one).
fn existing_database(db: Option<&Path>) -> Result<Database, String> {
    let path = database_path(db)?;
    if !path.is_file() {
        return Err(format!(
            "error: no results database at {}\n  help: `gen results import` loads the records (results/*.jsonl) first",
            path.display()
        ));
    }
    Database::open(&path)
}

/// The *.jsonl files named, or in the folders named (sorted: imports are deterministic).
fn record_files(files: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let roots = if files.is_empty() {
        vec![hwmatrix_cell::paths::results_dir()?]
    } else {
        files.to_vec()
    };
    let mut found = Vec::new();
    for root in roots {
        if root.is_dir() {
            let entries =
                std::fs::read_dir(&root).map_err(|e| format!("{}: {e}", root.display()))?;
            let mut inside: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect();
            inside.sort();
            found.extend(inside);
        } else if root.is_file() {
            found.push(root);
        } else {
            return Err(format!(
                "error: {} does not exist\n  help: name record files (*.jsonl) or folders of them",
                root.display()
            ));
        }
    }
    Ok(found)
}

pub fn results(
    command: &ResultsCommand,
    db: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let mut database = Database::open(&database_path(db)?)?;
    match command {
        ResultsCommand::Import { files } => {
            let files = record_files(files)?;
            if files.is_empty() {
                return Err("error: no record files (*.jsonl) to import\n  help: run the cells first (cargo test -p generated), or name the files".into());
            }
            let started = Instant::now();
            let (mut added, mut duplicates, mut rejected) = (0, 0, 0);
            for (index, file) in files.iter().enumerate() {
                let summary = database.import_file(file)?;
                // The first few, then how many more: a file of bad lines must not flood the terminal.
                for bad in summary.rejected.iter().take(REJECTED_SHOWN) {
                    let _ = writeln!(
                        err,
                        "warning: {}:{}: {} (skipped; the rest of the file imports)",
                        file.display(),
                        bad.line,
                        bad.why
                    );
                }
                if summary.rejected.len() > REJECTED_SHOWN {
                    let _ = writeln!(
                        err,
                        "warning: {}: {} more lines rejected",
                        file.display(),
                        summary.rejected.len() - REJECTED_SHOWN
                    );
                }
                let _ = writeln!(
                    err,
                    "imported {}/{}: {} ({} lines: {} added, {} already there, {} rejected)",
                    index + 1,
                    files.len(),
                    file.display(),
                    summary.lines,
                    summary.added,
                    summary.duplicates,
                    summary.rejected.len()
                );
                added += summary.added;
                duplicates += summary.duplicates;
                rejected += summary.rejected.len();
            }
            let _ = writeln!(
                out,
                "{}: {added} records added, {duplicates} already there, {rejected} lines rejected; {} records in all ({:.1} s)",
                database.path().display(),
                database.record_count()?,
                started.elapsed().as_secs_f64()
            );
            Ok(0)
        }
        ResultsCommand::Runs => {
            for run in database.runs()? {
                let _ = writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{} records",
                    run.run_id,
                    run.hosts.join(","),
                    run.first,
                    run.last,
                    run.records
                );
            }
            Ok(0)
        }
        ResultsCommand::Verify { report } => {
            let text = std::fs::read_to_string(report)
                .map_err(|e| format!("{}: {e}", report.display()))?;
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not JSON: {e}", report.display()))?;
            let (checked, missing) = report::verify(&json, &database)?;
            for m in &missing {
                let _ = writeln!(err, "error: {m}");
            }
            let _ = writeln!(
                out,
                "{}: {checked} records named by passed cells, {} missing from {}",
                report.display(),
                missing.len(),
                database.path().display()
            );
            Ok(if missing.is_empty() && checked > 0 {
                0
            } else {
                1
            })
        }
    }
}

pub struct ReportArgs<'a> {
    pub db: Option<&'a Path>,
    pub formats: &'a [Format],
    pub out: Option<&'a Path>,
    pub runs: &'a [String],
    pub compare: &'a [String],
    pub diff: &'a [String],
    pub threshold: f64,
}

pub fn report(
    specs: &Specs,
    args: &ReportArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let db = existing_database(args.db)?;
    if let [before, after] = args.compare {
        let rows = report::compare::compare(&db, before, after, args.threshold)?;
        let _ = write!(
            out,
            "{}",
            report::compare::render(&rows, before, after, args.threshold)
        );
        let regressions = rows
            .iter()
            .filter(|r| r.change == Some(report::compare::Change::Regression))
            .count();
        return Ok(if regressions > 0 { 1 } else { 0 });
    }
    if let [before, after] = args.diff {
        let diff = report::diff::diff(&db, before, after)?;
        let _ = write!(out, "{}", report::diff::render(&diff, before, after));
        return Ok(if diff.regressions() > 0 { 1 } else { 0 });
    }
    let started = Instant::now();
    let plan = plan::plan(specs, &Selection::default()).map_err(|e| format!("error: {e}"))?;
    let built = report::build(&plan, &db, args.runs)?;
    let formats = if args.formats.is_empty() {
        &[Format::Markdown][..]
    } else {
        args.formats
    };
    for format in formats {
        let text = match format {
            Format::Markdown => report::markdown(&built),
            Format::Html => report::html(&built),
            Format::Json => serde_json::to_string_pretty(&built).map_err(|e| e.to_string())? + "\n",
        };
        match args.out {
            None if formats.len() == 1 => {
                let _ = write!(out, "{text}");
            }
            None => {
                return Err("error: several --format need --out DIR (one file per format)".into());
            }
            Some(dir) => {
                let file = dir.join(format!("report.{}", format.extension()));
                crate::write::write_atomically(&file, text.as_bytes())?;
                let _ = writeln!(err, "wrote {}", file.display());
            }
        }
    }
    let s = &built.summary;
    let _ = writeln!(
        err,
        "report: {} cells from {} records: {} passed, {} failed, {} known issues, {} unsupported, {} ignored, {} without evidence; {} disagreements ({:.1} s)",
        s.cells,
        built.source.records,
        s.counts.get(report::Status::Passed),
        s.counts.get(report::Status::Failed),
        s.counts.get(report::Status::KnownIssue),
        s.counts.get(report::Status::Unsupported),
        s.counts.get(report::Status::Ignored),
        s.counts.get(report::Status::NoEvidence),
        s.disagreements,
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

pub const BENCH_ABOUT: &str = "\
Benchmarks one cell (--model and --platform, exactly one of each) in a
process of its own, so the peak memory is the cell's: latency (median and p90
over --runs after --warmup), throughput at each --batch size (the fixture's
batch-1 inputs tiled), the process's peak resident memory, and for ONNX
Runtime cpu cells the same model, inputs and threads (1) through Python's
onnxruntime in the exporter venv: the Rust/Python ratio of median time per
inference. Written as a `bench` record (results/), which gen report shows
under performance.

Builds and runs hwmatrix-bench in release mode with the platform's cargo
feature (a platform's engines are compiled in only with it):
  cargo run --release -p hwmatrix-bench [--features P] -- --model M --platform P ...";

pub struct BenchArgs<'a> {
    pub runs: usize,
    pub warmup: usize,
    pub batch: &'a str,
    pub engine: &'a str,
    pub no_python: bool,
}

/// `gen bench`: builds hwmatrix-bench with the platform's feature and runs it.
pub fn bench(
    root: &Path,
    select: &crate::cli::SelectArgs,
    args: &BenchArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let (Some(model), Some(platform)) = (select.model.first(), select.platform.first()) else {
        return Err("error: gen bench needs --model and --platform (one cell)\n  help: gen bench --model bert --platform cpu".into());
    };
    if select.model.len() > 1 || select.platform.len() > 1 || !select.category.is_empty() {
        return Err(
            "error: gen bench measures one cell: one --model and one --platform, no --category"
                .into(),
        );
    }
    let mut features: Vec<String> = Vec::new();
    if platform.name() != "cpu" {
        features.push(platform.name().to_string());
    }
    if args.engine == "libtorch" {
        features.push("torch".into());
    }
    let mut command =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(root)
        .args(["run", "--quiet", "--release", "-p", "hwmatrix-bench"]);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    command.args([
        "--",
        "--model",
        model,
        "--platform",
        platform.name(),
        "--engine",
        args.engine,
    ]);
    command.args([
        "--runs",
        &args.runs.to_string(),
        "--warmup",
        &args.warmup.to_string(),
        "--batch",
        args.batch,
    ]);
    if args.no_python {
        command.arg("--no-python");
    }
    let _ = writeln!(
        err,
        "building and running hwmatrix-bench (release{})",
        if features.is_empty() {
            String::new()
        } else {
            format!(", features {}", features.join(","))
        }
    );
    let output = command.output().map_err(|e| format!("error: cannot run cargo for hwmatrix-bench: {e}\n  help: gen bench runs from a checkout with cargo on PATH"))?;
    let _ = out.write_all(&output.stdout);
    let _ = err.write_all(&output.stderr);
    Ok(output.status.code().unwrap_or(1))
}

/// `gen coverage`: the evidence table, gaps and stale cells.
pub fn coverage(specs: &Specs, db: Option<&Path>, out: &mut dyn Write) -> Result<i32, String> {
    let database = existing_database(db)?;
    let plan = plan::plan(specs, &Selection::default()).map_err(|e| format!("error: {e}"))?;
    let (text, _) = report::coverage::render(&plan, &database)?;
    let _ = write!(out, "{text}");
    Ok(0)
}
