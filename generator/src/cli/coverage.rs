//! `gen coverage`: the evidence table, gaps and stale cells.

use std::io::Write;
use std::path::PathBuf;

use hwmatrix_results::report;
use hwmatrix_specs::plan::{self, Selection};

use super::{Context, database};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The database (default: results/hwmatrix.sqlite in the checkout, or in $HWMATRIX_RESULTS)
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Exit 1, naming each one, when the evidence store holds a stale entry (measured
    /// with another fixture, engine version or spec, or with a version that cannot be
    /// read) of every model (`all`) or of the high-priority ones (`high`)
    #[arg(long, value_name = "MODELS", value_enum)]
    fail_on_stale: Option<StaleScope>,
}

/// Whose stale entries `--fail-on-stale` fails on.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum StaleScope {
    All,
    High,
}

pub fn run(cx: &Context, args: &Args, out: &mut dyn Write) -> Result<i32, String> {
    cx.reads_everything("coverage")?;
    let specs = cx.specs()?;
    let database = database::existing(args.db.as_deref())?;
    let plan = plan::plan(&specs, &Selection::default()).map_err(|e| format!("error: {e}"))?;
    let (text, _) = report::coverage::render(&plan, &database)?;
    let _ = write!(out, "{text}");
    let Some(scope) = args.fail_on_stale else {
        return Ok(0);
    };
    let report::coverage::StaleEntries {
        stale,
        of_a_cpu_class,
    } = report::coverage::stale_entries(&plan, matches!(scope, StaleScope::High));
    let whose = match scope {
        StaleScope::All => "models",
        StaleScope::High => "high-priority models",
    };
    if !of_a_cpu_class.is_empty() {
        let _ = writeln!(
            out,
            "\n{} stale entries of the {whose} hold on one CPU class only: not failed on, since only a machine of that class measures them again, and every run on one does (its tests run each and must see it fail as stored):",
            of_a_cpu_class.len()
        );
        for line in &of_a_cpu_class {
            let _ = writeln!(out, "- {line}");
        }
    }
    if stale.is_empty() {
        return Ok(0);
    }
    let _ = writeln!(
        out,
        "\nerror: the evidence store holds {} stale entries of the {whose}:",
        stale.len()
    );
    for line in &stale {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(
        out,
        "  help: measure them again (`gen measure --platform P --stale --model M` runs only the cells holding one), then `gen` and commit model-specs/evidence/"
    );
    Ok(1)
}
