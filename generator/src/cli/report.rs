//! `gen report`: the compatibility matrix from the results database and the
//! specs, or two runs compared.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::ValueEnum;
use hwmatrix_results::report;
use hwmatrix_specs::files::write_atomically;
use hwmatrix_specs::plan::{self, Selection};

use super::{Context, database};

pub const ABOUT: &str = "\
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

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The database (default: results/hwmatrix.sqlite in the checkout, or in $HWMATRIX_RESULTS)
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Output format (repeatable; several need --out)
    #[arg(long, value_enum)]
    format: Vec<Format>,
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

pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    cx.reads_everything("report")?;
    let specs = cx.specs()?;
    let db = database::existing(args.db.as_deref())?;
    if let [before, after] = &args.compare[..] {
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
    if let [before, after] = &args.diff[..] {
        let diff = report::diff::diff(&db, before, after)?;
        let _ = write!(out, "{}", report::diff::render(&diff, before, after));
        return Ok(if diff.regressions() > 0 { 1 } else { 0 });
    }
    let started = Instant::now();
    let plan = plan::plan(&specs, &Selection::default()).map_err(|e| format!("error: {e}"))?;
    let mut built = report::build(&plan, &db, &args.run)?;
    // The memory section: the figures `gen memory` cached for these specs (no Python runs here).
    let computed = hwmatrix_importer::memory::cached(&plan, &super::memory::cache_dir())?;
    built.memory = report::memory::MemorySection::new(super::memory::rows(&plan, computed));
    // Trained checkpoints' rows, as `gen checkpoint` left them in results/checkpoints.
    built.trained = report::checkpoint_row::TrainedSection::read(
        &hwmatrix_cell::paths::results_dir()?.join("checkpoints"),
    )?;
    // Beside each real checkpoint's files, the weights computed from its config (`gen memory
    // --checkpoint` cached them; tests/checkpoint.sh runs it), where they are current: read
    // once per checkpoint.
    let mut checkpoint_weights = std::collections::BTreeMap::new();
    for row in &mut built.precision.formats {
        let Some(dir) = row.checkpoint.strip_prefix("checkpoint:") else {
            continue;
        };
        let weights = checkpoint_weights
            .entry((row.model.clone(), dir.to_string()))
            .or_insert_with(|| {
                hwmatrix_importer::memory::cached_checkpoint(
                    &plan,
                    &super::memory::cache_dir(),
                    &row.model,
                    std::path::Path::new(dir),
                )
                .and_then(|c| c.ok())
                .and_then(|c| c.get("weights").cloned())
            });
        let format = match row.precision.as_str() {
            "float32" => "fp32",
            other => other,
        };
        row.computed_bytes = weights.as_ref().and_then(|w| w.get(format)?.as_u64());
    }
    let formats = if args.format.is_empty() {
        &[Format::Markdown][..]
    } else {
        &args.format[..]
    };
    for format in formats {
        let text = match format {
            Format::Markdown => report::markdown(&built)?,
            Format::Html => report::html(&built)?,
            Format::Json => serde_json::to_string_pretty(&built).map_err(|e| e.to_string())? + "\n",
        };
        match args.out.as_deref() {
            None if formats.len() == 1 => {
                let _ = write!(out, "{text}");
            }
            None => {
                return Err("error: several --format need --out DIR (one file per format)".into());
            }
            Some(dir) => {
                let file = dir.join(format!("report.{}", format.extension()));
                write_atomically(&file, text.as_bytes())?;
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
