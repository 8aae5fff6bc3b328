//! `gen ci`: the GitHub Actions workflow, written or checked.

use std::io::Write;

use super::Context;

pub const ABOUT: &str = "\
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

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write nothing; exit 1 if the workflow or actionlint's config differs from what hardware.yaml gives
    #[arg(long = "check")]
    check_only: bool,
}

pub fn run(cx: &Context, args: &Args, out: &mut dyn Write) -> Result<i32, String> {
    cx.reads_everything("ci")?;
    let specs = cx.specs()?;
    hwmatrix_codegen::workflow::run(&specs, &cx.root, args.check_only, out)
}
