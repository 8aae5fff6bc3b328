//! `gen fixtures`: the selected models' fixtures built by the Python exporter (cached).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use hwmatrix_importer::fixtures::{self, Source};

use super::{Context, workers};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Fixture root (default: $HWMATRIX_FIXTURES, else ~/.cache/hwmatrix/fixtures)
    #[arg(long, value_name = "DIR")]
    fixtures: Option<PathBuf>,
    /// The exporter venv's Python (default: $HWMATRIX_PYTHON, else ~/.cache/hwmatrix/venv/bin/python)
    #[arg(long, value_name = "FILE")]
    python: Option<PathBuf>,
    /// Python worker processes (default: one per core)
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Build from this local pretrained checkpoint (a folder with config.json and weights,
    /// e.g. one in the HF cache) instead of tiny random weights; inputs come from its
    /// tokenizer where it has one. Needs exactly one --model.
    #[arg(long, value_name = "DIR")]
    checkpoint: Option<PathBuf>,
    /// Also export the generation fixtures of models whose generation exporter failed
    /// before (`imported.generation_export`), after changing it; then `gen measure
    /// --platform cpu` records whether their `generates` checks pass now
    #[arg(long)]
    retry_generation: bool,
    /// Whose graph the fixtures hold: `ours` (our export recipe, the default) or `optimum`
    /// (optimum's ONNX exporter as transformers.js's conversion drives it, in its own venv
    /// from `bash tests/setup.sh optimum`; the same tiny model, inputs and references, into
    /// <cache>/fixtures-optimum unless --fixtures says otherwise; the saved tiny model is kept
    /// in `hf/`, which optimum-intel converts for the `ov_pytorch` engine where `bash
    /// tests/setup.sh optimum-intel` installed it). Cells run on optimum's with
    /// HWMATRIX_FIXTURES set to that root; each record names its fixture's source
    #[arg(long, value_enum, default_value = "ours")]
    graph: Graph,
    /// Skip what OpenVINO's venv makes after the export wherever it is installed (`bash
    /// tests/setup.sh openvino`): NNCF's weight formats (OpenVINO IR with int8 and int4
    /// weights, for the openvino platform's `ov` engine) and OpenVINO's PyTorch frontend's
    /// conversion of each traced model (optimum-intel's, on optimum's graphs) with NNCF's
    /// formats of it (its `ov_pytorch` engine)
    #[arg(long)]
    no_nncf: bool,
}

/// Whose graph a fixture holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Graph {
    Ours,
    Optimum,
}

pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let specs = cx.specs()?;
    let plan = cx.plan(&specs)?;
    let dir = args.fixtures.clone().unwrap_or_else(|| match args.graph {
        Graph::Ours => hwmatrix_cell::paths::fixtures_dir(),
        Graph::Optimum => hwmatrix_cell::paths::optimum_fixtures_dir(),
    });
    let python = args
        .python
        .clone()
        .unwrap_or_else(hwmatrix_cell::paths::python);
    let started = Instant::now();
    let source = match &args.checkpoint {
        Some(_) if args.graph == Graph::Optimum => {
            return Err("error: --graph optimum builds the tiny model's fixtures, not a checkpoint's\n  help: leave out --checkpoint or --graph".into());
        }
        None if args.graph == Graph::Optimum => {
            let optimum = hwmatrix_cell::paths::optimum_python();
            if !optimum.exists() {
                return Err(format!(
                    "error: no Python with optimum's exporter at {}\n  help: run `bash tests/setup.sh optimum`",
                    optimum.display()
                ));
            }
            Source::Optimum(optimum)
        }
        None => Source::TinyRandom,
        Some(_) if plan.models.len() != 1 => {
            return Err("error: --checkpoint builds one model's fixture\n  help: add --model <model_type> (the checkpoint's architecture)".into());
        }
        Some(path) if !path.join("config.json").is_file() => {
            return Err(format!(
                "error: {} has no config.json\n  help: pass the folder of a saved pretrained model (config.json and weights)",
                path.display()
            ));
        }
        Some(path) => Source::Checkpoint(
            std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?,
        ),
    };
    let openvino_python = openvino_python();
    let summary = fixtures::build(
        &plan,
        &dir,
        &python,
        workers(args.jobs),
        &source,
        args.retry_generation,
        nncf_python(args.no_nncf, &openvino_python),
        err,
    )?;
    let _ = writeln!(
        out,
        "fixtures in {}: {} built, {} cached, {} known issues skipped, {} failed ({:.1} s)",
        dir.display(),
        summary.built,
        summary.cached,
        summary.skipped_known_issue,
        summary.failed.len(),
        started.elapsed().as_secs_f64()
    );
    if summary.content_taken > 0 {
        let _ = writeln!(
            out,
            "recorded what {} fixtures hold (content.json: the digests their checks' records carry)",
            summary.content_taken
        );
    }
    let made = &summary.transformersjs;
    if made.made + made.failed.len() > 0 {
        let _ = writeln!(
            out,
            "transformers.js formats (bnb4, q2, q2f16) of the exported fixtures: {} made, {} cached, {} failed",
            made.made,
            made.cached,
            made.failed.len()
        );
    }
    for (fixture, why) in &made.failed {
        let _ = writeln!(err, "error: transformers.js formats of {fixture}: {why}");
    }
    match &summary.nncf {
        Some(nncf) => {
            let _ = writeln!(
                out,
                "NNCF formats (int8, int4) of the exported fixtures: {} made, {} cached, {} failed",
                nncf.made,
                nncf.cached,
                nncf.failed.len()
            );
            for (fixture, why) in &nncf.failed {
                let _ = writeln!(err, "error: NNCF's formats of {fixture}: {why}");
            }
        }
        None if !args.no_nncf => {
            let _ = writeln!(
                out,
                "NNCF formats and OpenVINO's PyTorch frontend conversions: not made (no OpenVINO venv at {}: `bash tests/setup.sh openvino` installs it); the openvino platform's ov and ov_pytorch checks will say so",
                openvino_python.display()
            );
        }
        None => {}
    }
    if let Some(converted) = &summary.openvino_pytorch {
        let _ = writeln!(
            out,
            "OpenVINO conversions of the fixtures' PyTorch models (its PyTorch frontend's; optimum-intel's on optimum's graphs), float32 with NNCF's int8 and int4 of each: {} made, {} cached, {} failed (a model the converter refuses is a made record with its error)",
            converted.made,
            converted.cached,
            converted.failed.len()
        );
        for (fixture, why) in &converted.failed {
            let _ = writeln!(err, "error: OpenVINO's conversion of {fixture}: {why}");
        }
    }
    for (model, error) in &summary.failed {
        let first = error.lines().next().unwrap_or_default();
        let _ = writeln!(err, "error: the exporter failed on {model}: {first}");
    }
    if !summary.failed.is_empty() {
        let _ = writeln!(
            err,
            "  help: the tracebacks are in {}/.logs/. Our harness's failure (building or feeding the tiny model) is ours to fix in the spec's tiny_config or inputs; `gen derive --model <model_type>` re-derives the spec and records where the pipeline stops (stage config or reference: not tested; export: the exporters' known issue)",
            dir.display()
        );
    }
    let formats_failed = [&summary.nncf, &summary.openvino_pytorch]
        .into_iter()
        .flatten()
        .chain([&summary.transformersjs])
        .any(|made| !made.failed.is_empty());
    Ok(if summary.failed.is_empty() && !formats_failed {
        0
    } else {
        1
    })
}

/// OpenVINO's venv (openvino and NNCF), where `bash tests/setup.sh openvino` installs it: it
/// makes NNCF's formats and runs OpenVINO from Python (`gen fixtures`, `gen measure`, `gen
/// checkpoint`). The path is where it would be even when it is not there.
pub(super) fn openvino_python() -> std::path::PathBuf {
    hwmatrix_platforms::openvino::runtime_python()
}

/// OpenVINO's venv, which makes NNCF's formats, unless skipped or not installed.
pub(super) fn nncf_python(
    no_nncf: bool,
    openvino_python: &std::path::Path,
) -> Option<&std::path::Path> {
    (!no_nncf && openvino_python.exists()).then_some(openvino_python)
}
