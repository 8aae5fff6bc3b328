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
}

pub fn run(cx: &Context, args: &Args, out: &mut dyn Write) -> Result<i32, String> {
    cx.reads_everything("coverage")?;
    let specs = cx.specs()?;
    let database = database::existing(args.db.as_deref())?;
    let plan = plan::plan(&specs, &Selection::default()).map_err(|e| format!("error: {e}"))?;
    let (text, _) = report::coverage::render(&plan, &database)?;
    let _ = write!(out, "{text}");
    Ok(0)
}
