//! hwmatrix-bench: benchmarks one cell in this process (so its peak memory is
//! the cell's) and prints a table. `gen bench` builds and runs it with the
//! platform's feature; run it directly as
//! `cargo run --release -p hwmatrix-bench -- --model bert --platform cpu`.

use std::path::PathBuf;
use std::process::ExitCode;

use runtime::bench::{self, Options};

const USAGE: &str = "usage: hwmatrix-bench --model MODEL_TYPE --platform PLATFORM [--engine onnxruntime|libtorch|browser|openvino] \
[--precision fp16|int8|int8_avx2|q4|q4f16|qdq8] [--runs N (50)] [--warmup N (5)] [--batch 1,2,4,8] [--python PATH | --no-python]";

struct Args {
    model: String,
    platform: String,
    engine: String,
    options: Options,
}

fn parse() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut model, mut platform, mut engine) = (None, None, "onnxruntime".to_string());
    let mut options = Options {
        warmup: 5,
        runs: 50,
        batches: vec![1, 2, 4, 8],
        python: Some(runtime::paths::python()),
        precision: None,
    };
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--model" => model = Some(value()?),
            "--platform" => platform = Some(value()?),
            "--engine" => engine = value()?,
            "--runs" => options.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--warmup" => {
                options.warmup = value()?.parse().map_err(|e| format!("--warmup: {e}"))?
            }
            "--batch" => {
                options.batches = value()?
                    .split(',')
                    .map(|b| {
                        b.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--batch {b}: {e}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--python" => options.python = Some(PathBuf::from(value()?)),
            "--no-python" => options.python = None,
            "--precision" => {
                let name = value()?;
                options.precision = Some(
                    // The ONNX formats (the bench compares with Python's onnxruntime on the same graph).
                    runtime::Precision::ALL
                        .into_iter()
                        .filter(|p| !p.is_openvino_ir())
                        .find(|p| p.name() == name)
                        .ok_or_else(|| {
                            format!(
                                "--precision {name}: one of fp16, int8, int8_avx2, q4, q4f16, qdq8"
                            )
                        })?,
                )
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(Args {
        model: model.ok_or(USAGE)?,
        platform: platform.ok_or(USAGE)?,
        engine,
        options,
    })
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let Some(cell) = generated::CELLS.iter().find(|c| {
        c.model.model_type == args.model
            && c.platform.platform.name() == args.platform
            && c.engine.kind().name() == args.engine
    }) else {
        eprintln!(
            "error: no cell {} on {} with {} in the generated crate\n  help: `gen list` lists models; engines are onnxruntime, libtorch, browser",
            args.model, args.platform, args.engine
        );
        return ExitCode::from(2);
    };
    // A model checked as its components is benchmarked component by component.
    let mut failed = false;
    for part in cell.model.parts() {
        failed |= !bench_one(&cell.for_part(part), &args.options);
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// One tab-separated line per benchmarked cell (model, platform, engine, median and p90 ms,
/// threads) appended to the file HWMATRIX_BENCH_SUMMARY names: how `gen bench` compares the
/// engines it ran in processes of their own.
fn summarize(cell: &runtime::Cell, result: &bench::Bench) {
    let Some(path) = std::env::var_os("HWMATRIX_BENCH_SUMMARY") else {
        return;
    };
    let line = format!(
        "{}\t{}\t{}\t{}\t{}\t{}\n",
        cell.id(),
        cell.platform.platform.name(),
        cell.engine.describe(),
        result.latency.median_ms,
        result.latency.p90_ms,
        result.threads.intra_op
    );
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = written {
        eprintln!("warning: cannot append to {}: {e}", path.to_string_lossy());
    }
}

/// Benchmarks one cell (or component) and prints its table; false when it failed.
fn bench_one(cell: &runtime::Cell, options: &Options) -> bool {
    eprintln!(
        "benchmarking {} ({}): {} warm-up and {} timed runs, batches {:?}",
        cell.id(),
        cell.engine.describe(),
        options.warmup,
        options.runs,
        options.batches
    );
    match bench::run(cell, options) {
        Ok(result) => {
            let l = &result.latency;
            println!(
                "{:<28} {:>10} {:>10} {:>10}",
                cell.id(),
                "median ms",
                "p90 ms",
                "runs"
            );
            println!(
                "{:<28} {:>10.4} {:>10.4} {:>10}",
                "rust (this runtime)", l.median_ms, l.p90_ms, l.runs
            );
            if let Some(py) = &result.python {
                println!(
                    "{:<28} {:>10.4} {:>10.4} {:>10}",
                    format!("python onnxruntime {}", py.onnxruntime),
                    py.latency.median_ms,
                    py.latency.p90_ms,
                    py.latency.runs
                );
                println!(
                    "rust / python: {:.3} (median per inference, same model, inputs and threads)",
                    py.rust_over_python
                );
            }
            if let Some(g) = &result.generation {
                println!(
                    "generation: batch {} (prompts of {:?} tokens, padded on the {}), prefill then {} decode steps with the cache, teacher-forced",
                    g.batch, g.prompt_lengths, g.padding, g.decode_steps
                );
                println!(
                    "{:<28} {:>12} {:>14} {:>16}",
                    "", "prefill ms", "decode step ms", "decode tokens/s"
                );
                println!(
                    "{:<28} {:>12.4} {:>14.4} {:>16.1}",
                    "rust (this runtime)",
                    g.prefill.median_ms,
                    g.decode_step.median_ms,
                    g.decode_tokens_per_second
                );
                if let Some(py) = &g.python {
                    println!(
                        "{:<28} {:>12.4} {:>14.4} {:>16.1}",
                        format!("python onnxruntime {}", py.onnxruntime),
                        py.prefill.median_ms,
                        py.decode_step.median_ms,
                        py.decode_tokens_per_second
                    );
                    println!(
                        "rust / python per decode step: {:.3} (prefill {:.3}; medians, same graph, feeds, cache and threads)",
                        py.rust_over_python_decode, py.rust_over_python_prefill
                    );
                }
            }
            for t in &result.throughput {
                match (t.per_second, &t.error) {
                    (Some(per_second), _) => println!(
                        "batch {:>3}: {:>10.1} inferences/s ({:.4} ms a batch)",
                        t.batch,
                        per_second,
                        t.median_ms.unwrap_or_default()
                    ),
                    (None, error) => println!(
                        "batch {:>3}: did not run: {}",
                        t.batch,
                        error.as_deref().unwrap_or("?")
                    ),
                }
            }
            if let Some(peak) = result.peak_rss_kb {
                println!("peak resident memory of this process: {peak} KiB");
            }
            summarize(cell, &result);
            true
        }
        Err(e) => {
            eprintln!("error: {}: {e}", cell.id());
            false
        }
    }
}
