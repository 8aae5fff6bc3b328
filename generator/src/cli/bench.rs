//! `gen bench`: one cell's latency, throughput and memory, run by hwmatrix-bench.

use std::io::Write;

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
    /// The engine of the cell: onnxruntime, libtorch or browser
    #[arg(long, default_value = "onnxruntime")]
    engine: String,
    /// Skip the Python onnxruntime comparison
    #[arg(long)]
    no_python: bool,
    /// Benchmark a precision variant's graph (fp16, int8, q4, q4f16, qdq8) instead of float32's
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
    let mut features: Vec<String> = Vec::new();
    if platform.name() != "cpu" {
        features.push(platform.name().to_string());
    }
    if args.engine == "libtorch" {
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
        platform.name(),
        "--engine",
        &args.engine,
    ]);
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
    let _ = out.write_all(&output.stdout);
    let _ = err.write_all(&output.stderr);
    Ok(output.status.code().unwrap_or(1))
}
