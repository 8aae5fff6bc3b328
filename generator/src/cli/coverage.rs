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
    let stale = report::coverage::stale_entries(&plan, matches!(scope, StaleScope::High));
    if stale.is_empty() {
        return Ok(0);
    }
    let whose = match scope {
        StaleScope::All => "models",
        StaleScope::High => "high-priority models",
    };
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
        "  help: measure them again (`gen import --platform P --model M`), then `gen` and commit model-specs/evidence/"
    );
    Ok(1)
}
