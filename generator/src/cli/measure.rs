//! `gen measure --platform P`: a platform's cells measured into the evidence store.

use std::io::Write;
use std::path::PathBuf;

use hwmatrix_importer::measure;

use super::Context;

pub const ABOUT: &str = "\
Runs platform P's cells for real (`cargo test -p generated --features P`, the
store's entries on P included) and takes the newest run's records into the
evidence store (model-specs/evidence/) check by check: a failure becomes an
entry (who failed: the model, the engine, the environment or our harness), a
pass clears its entry and keeps its checks under `passed:`, and an unchanged
failure rewrites nothing. Run `gen` afterwards to regenerate the cells. A
status a person set for P in a spec is never measured over.

--verify re-measures and compares, writing nothing (CI's slices of the store);
--stale takes only the entries stale here; --records takes a run already made
(another machine's results folder) instead of running the cells.";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Import the records of a run already made (a results
    /// folder of *.jsonl, e.g. from another machine) instead of running the cells
    #[arg(long, value_name = "DIR")]
    records: Option<PathBuf>,
    /// With --records: the CPU flags of the machine that wrote them (a
    /// `/proc/cpuinfo` copy, or any file with its `flags :` line), for records
    /// written before they named their CPU class; a record that names one keeps it
    #[arg(long, value_name = "FILE", requires = "records")]
    cpu_flags: Option<PathBuf>,
    /// Re-measure the cells the evidence store holds entries of and
    /// compare, writing nothing; exit 1 naming each entry the run disagrees with
    /// (accepting a new status is `gen measure --platform P`, a reviewed change).
    /// On cpu, the selected models' stored export failures are exported again
    /// (into a scratch folder) and compared too
    #[arg(long)]
    verify: bool,
    /// With --verify: only the cells of the models in slice K of N (`3/8`: each model
    /// falls in one slice by its model_type, so N runs with K = 0..N-1 cover the whole
    /// store; slice K of N is inside slice K mod M of M where M divides N, as
    /// `gen list --slice` prints them)
    #[arg(long, value_name = "K/N", value_parser = hwmatrix_specs::slice::parse_slice)]
    slice: Option<(u32, u32)>,
    /// Only the cells holding an entry that is stale here (measured
    /// on other fixture content, engine or browser release, or verdict code than
    /// this checkout and its fixtures: `gen coverage` lists them), so that a stale
    /// known issue runs again; with --verify on cpu, stale export failures are exported again.
    /// With --verify, they are compared; without, they are written
    #[arg(long)]
    stale: bool,
    /// The cargo features of the test binary that runs the cells (default: the
    /// platform's and its engines'); a run that built one binary for several
    /// platforms (`qnn,openvino`) reuses it
    #[arg(long, value_name = "F,G")]
    features: Option<String>,
}

pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    if cx.select.platform.is_empty() {
        return Err("error: gen measure needs the platform whose cells it measures\n  help: add --platform P (cpu, openvino, qnn, webgpu, webnn, ...); `gen doctor` says which run here".into());
    }
    let specs = cx.specs()?;
    let cpu_class = match &args.cpu_flags {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("error: {}: {e}", path.display()))?;
            Some(hwmatrix_cell::CpuClass::from_cpuinfo(&text).ok_or_else(|| {
                format!(
                    "error: {}: no `flags :` (x86) or `Features :` (arm64) line\n  help: give a copy of /proc/cpuinfo of the machine that wrote the records",
                    path.display()
                )
            })?)
        }
    };
    let nncf_python = super::fixtures::openvino_python();
    let options = measure::Options {
        records: args.records.as_deref(),
        records_cpu_class: cpu_class.as_ref(),
        cpu_class: cpu_class
            .clone()
            .unwrap_or_else(|| hwmatrix_cell::CpuClass::here().clone()),
        verify: args.verify,
        slice: args.slice,
        stale: args.stale,
        features: args.features.clone(),
        nncf_python: Some(nncf_python.as_path()).filter(|p| p.exists()),
    };
    // `--category` selects its models (with any `--model` given beside it);
    // neither selects every model.
    let mut models = cx.select.model.clone();
    models.extend(
        specs
            .models
            .iter()
            .filter(|m| cx.select.category.contains(&m.spec.category))
            .map(|m| m.spec.model_type.clone()),
    );
    if models.is_empty() && !cx.select.category.is_empty() {
        return Err(format!(
            "error: no model of the categories {} to measure\n  help: `gen list` names each category's models",
            cx.select.category.join(", ")
        ));
    }
    let mut code = 0;
    for platform in &cx.select.platform {
        code = code.max(measure::run(
            &cx.root, &specs, *platform, &models, &options, out, err,
        )?);
    }
    Ok(code)
}
