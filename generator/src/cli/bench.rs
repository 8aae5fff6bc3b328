//! `gen bench`: one cell's latency, throughput and memory, run by hwmatrix-bench.

use std::io::Write;

use hwmatrix_cell::{EngineKind, Platform};

use super::Context;

pub const ABOUT: &str = "\
Benchmarks one cell (--model and --platform, exactly one of each) in a
process of its own, so the peak memory is the cell's: latency (median and p90
over --runs after --warmup), throughput at each --batch size (the fixture's
batch-1 inputs tiled), the process's peak resident memory, and for ONNX
Runtime cpu cells the same model, inputs and threads (1) through Python's
onnxruntime in the exporter venv: the Rust/Python ratio of median time per
inference. --precision benchmarks a format's graph (model.int8.onnx...) the
same way; the record keeps the file's size. Written as a `bench` record
(results/), which gen report shows under performance.

On a platform whose engines compute on this machine's CPU (hardware.yaml's
`compared_with_cpu`: openvino's two, ONNX Runtime's OpenVINO provider and
OpenVINO's own runtime), without --engine: those engines and ONNX Runtime's
CPU provider on the same fixture, each in a process of its own with the same
threads, warm-up and runs, then a table of their medians and each one's ratio
to the CPU provider's: the comparison this machine can make honestly (all of
them run on its CPU).

Builds and runs hwmatrix-bench in release mode with the platform's cargo
feature (a platform's engines are compiled in only with it):
  cargo run --release -p hwmatrix-bench [--features P] -- --model M --platform P ...";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Timed runs after the warm-up
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Warm-up runs
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Batch sizes for throughput, comma-separated
    #[arg(long, default_value = "1,2,4,8")]
    batch: String,
    /// The engine of the cell: onnxruntime (default), libtorch, browser or openvino;
    /// without it, on a platform hardware.yaml compares with the CPU: its engines and the
    /// CPU provider, compared
    #[arg(long)]
    engine: Option<String>,
    /// Skip the Python onnxruntime comparison
    #[arg(long)]
    no_python: bool,
    /// Benchmark a precision variant's graph (fp16, int8, q4, q4f16, qdq8, bnb4, q2, q2f16) instead of float32's
    #[arg(long, value_name = "FORMAT")]
    precision: Option<String>,
}

/// `gen bench`: builds hwmatrix-bench with the platform's feature and runs it.
pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let (root, select) = (&cx.root, cx.select);
    let (Some(model), Some(platform)) = (select.model.first(), select.platform.first()) else {
        return Err("error: gen bench needs --model and --platform (one cell)\n  help: gen bench --model bert --platform cpu".into());
    };
    if select.model.len() > 1 || select.platform.len() > 1 || !select.category.is_empty() {
        return Err(
            "error: gen bench measures one cell: one --model and one --platform, no --category"
                .into(),
        );
    }
    let onnxruntime = EngineKind::Onnxruntime.name();
    let compared: Vec<EngineKind> = match args.engine {
        Some(_) => Vec::new(),
        None => cx
            .specs()?
            .hardware
            .platforms
            .get(platform)
            .map(|spec| spec.compared_with_cpu.clone())
            .unwrap_or_default(),
    };
    if compared.is_empty() {
        let engine = args.engine.as_deref().unwrap_or(onnxruntime);
        return bench_one(root, model, platform.name(), engine, args, None, out, err);
    }
    // Each in a process of its own: a process loads one ONNX Runtime and one engine library.
    let cells: Vec<(&str, &str)> = std::iter::once((Platform::Cpu.name(), onnxruntime))
        .chain(compared.iter().map(|kind| (platform.name(), kind.name())))
        .collect();
    let summary = std::env::temp_dir().join(format!("hwmatrix-bench-{}.tsv", std::process::id()));
    let _ = std::fs::remove_file(&summary);
    let mut status = 0;
    for &(platform, engine) in &cells {
        let code = bench_one(
            root,
            model,
            platform,
            engine,
            args,
            Some(&summary),
            out,
            err,
        )?;
        status = status.max(code);
    }
    let lines = std::fs::read_to_string(&summary).unwrap_or_default();
    let _ = std::fs::remove_file(&summary);
    let rows: Vec<Vec<&str>> = lines.lines().map(|l| l.split('\t').collect()).collect();
    let baseline = rows
        .iter()
        .find(|r| r.get(1) == Some(&"cpu"))
        .and_then(|r| r.get(3)?.parse::<f64>().ok());
    let _ = writeln!(
        out,
        "\n{model}: the same fixture on this machine's CPU, {} timed runs after {} warm-up, medians",
        args.runs, args.warmup
    );
    let _ = writeln!(
        out,
        "{:<70} {:>10} {:>10} {:>8} {:>14}",
        "engine", "median ms", "p90 ms", "threads", "/ cpu provider"
    );
    for r in rows.iter().filter(|r| r.len() >= 6) {
        let median = r[3].parse::<f64>().unwrap_or(f64::NAN);
        let ratio = baseline.map_or("?".to_string(), |b| format!("{:.3}", median / b));
        let _ = writeln!(
            out,
            "{:<70} {:>10.4} {:>10.4} {:>8} {:>14}",
            format!("{} ({})", r[2], r[1]),
            median,
            r[4].parse::<f64>().unwrap_or(f64::NAN),
            r[5],
            ratio
        );
    }
    if rows.len() < cells.len() {
        let _ = writeln!(
            out,
            "({} of {} engines benchmarked: the others' errors are above)",
            rows.len(),
            cells.len()
        );
    }
    Ok(status)
}

/// Builds and runs hwmatrix-bench for one cell; `summary` collects its medians.
#[allow(clippy::too_many_arguments)]
fn bench_one(
    root: &std::path::Path,
    model: &str,
    platform: &str,
    engine: &str,
    args: &Args,
    summary: Option<&std::path::Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let mut features: Vec<String> = Vec::new();
    if platform != "cpu" {
        features.push(platform.to_string());
    }
    if engine == "libtorch" {
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
        platform,
        "--engine",
        engine,
    ]);
    if let Some(summary) = summary {
        command.env("HWMATRIX_BENCH_SUMMARY", summary);
    }
    command.args([
        "--runs",
        &args.runs.to_string(),
        "--warmup",
        &args.warmup.to_string(),
        "--batch",
        &args.batch,
    ]);
    if args.no_python {
        command.arg("--no-python");
    }
    if let Some(precision) = &args.precision {
        command.args(["--precision", precision]);
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
    // What it benchmarks (its stderr) before the table (its stdout).
    let _ = err.write_all(&output.stderr);
    let _ = out.write_all(&output.stdout);
    Ok(output.status.code().unwrap_or(1))
}
