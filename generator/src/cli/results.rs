//! `gen results …`: record files into the database, its runs, and a report's
//! passed cells checked against it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Subcommand;
use hwmatrix_results::{Database, report};

use super::{Context, database};

pub const ABOUT: &str = "\
Keeps every record of every run, from every machine, in one SQLite database
(default: results/hwmatrix.sqlite in the checkout, or $HWMATRIX_RESULTS).

A record is identified by the SHA-256 of its line: importing a file twice adds
nothing, and record files of several machines merge without loss or
duplicates. A torn or corrupt line is reported with its file and line, and the
rest of the file still imports.";

/// Rejected lines shown per file.
const REJECTED_SHOWN: usize = 10;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    verb: Verb,
    /// The database (default: results/hwmatrix.sqlite in the checkout, or in $HWMATRIX_RESULTS)
    #[arg(long, value_name = "FILE", global = true)]
    db: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Load JSON-lines record files (default: every results/*.jsonl, and the records of
    /// each checkpoint's row, results/checkpoints/*/records/*.jsonl)
    Load {
        /// Record files (*.jsonl) or folders of them
        files: Vec<PathBuf>,
    },
    /// The old name of `load`: refused, naming it
    #[command(hide = true)]
    Import {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// List the runs in the database: run id, hosts, first and last record, records
    Runs,
    /// Print a record as its run wrote it, by the name reports and the evidence
    /// store give it (16 hex digits: `record` in an entry's provenance); its
    /// error's whole log is there
    Show {
        /// The record's name
        record: String,
    },
    /// Exit 1 unless every record a passed cell of a JSON report names is in the database
    Verify {
        /// A report written by `gen report --format json`
        report: PathBuf,
    },
}

pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    if let Verb::Import { .. } = &args.verb {
        return Err(super::renamed::results_import());
    }
    cx.reads_everything("results")?;
    let mut database = Database::open(&database::path(args.db.as_deref())?)?;
    match &args.verb {
        Verb::Import { .. } => unreachable!("refused before the database opens"),
        Verb::Load { files } => {
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
        Verb::Runs => {
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
        Verb::Show { record } => match database.record(record)? {
            Some(body) => {
                let _ = writeln!(out, "{body}");
                Ok(0)
            }
            None => {
                let _ = writeln!(
                    err,
                    "error: no record {record} in {}\n  help: a record is named by 16 hex digits; load its run's records first (`gen results load DIR`)",
                    database.path().display()
                );
                Ok(1)
            }
        },
        Verb::Verify { report } => {
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

/// The *.jsonl files named, or in the folders named (sorted: imports are deterministic).
fn record_files(files: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let roots = if files.is_empty() {
        let results = hwmatrix_cell::paths::results_dir()?;
        // `gen checkpoint` keeps each row's records beside its report.
        let mut rows: Vec<PathBuf> = std::fs::read_dir(results.join("checkpoints"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("records"))
            .filter(|p| p.is_dir())
            .collect();
        rows.sort();
        std::iter::once(results).chain(rows).collect()
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
