//! `gen derive`: specs derived from transformers' registries.

use std::io::Write;
use std::path::PathBuf;

use hwmatrix_importer::derive;

use super::{Context, workers};

pub const ABOUT: &str = "\
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

The derive owns only the `imported:` block below the marker line of each
file; what a person wrote above it is never changed, and wins. A re-run that
finds nothing new writes nothing. Architectures left out are listed with
their reasons in model-specs/import-exclusions.yaml. Use --model to derive
some only; `gen measure --platform P` measures the cells instead.";

#[derive(Debug, clap::Args)]
pub struct Args {
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
}

pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    if !cx.select.platform.is_empty() {
        return Err("error: gen derive writes specs, which hold no platform: --platform does not apply\n  help: `gen measure --platform P` measures a platform's cells into the evidence store".into());
    }
    let options = derive::Options {
        python: args
            .python
            .clone()
            .unwrap_or_else(hwmatrix_cell::paths::python),
        fixtures: args
            .fixtures
            .clone()
            .unwrap_or_else(hwmatrix_cell::paths::fixtures_dir),
        workers: workers(args.jobs),
        only: cx.select.model.clone(),
        check: args.check_only,
    };
    derive::run(&cx.specs_dir, &options, out, err)
}
