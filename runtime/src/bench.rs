//! The benchmark of one cell: latency (median and p90 over N runs after a
//! warm-up), throughput at several batch sizes, the process's peak memory,
//! and the same fixture through Python's onnxruntime with the same threads
//! for the Rust/Python ratio. One cell per process (`gen bench` starts one),
//! so the peak resident set is this cell's. Written as a `bench` record.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::engine::{self, Mode, Threads};
use crate::error::{CheckError, ErrorKind};
use crate::fixture::{Fixture, Shape};
use crate::record::{self, Outcome, Timing};
use crate::tensor::{Data, Tensor};
use crate::{Cell, Engine, ExecutionProvider, Precision};
pub use hwmatrix_record::{Bench, GenerationBench, GenerationPython, Latency, Python, Throughput};

#[derive(Clone, Debug)]
pub struct Options {
    pub warmup: usize,
    pub runs: usize,
    /// Batch sizes for throughput (each input tiled along its first axis).
    pub batches: Vec<usize>,
    /// Python with onnxruntime, for the comparison (ONNX Runtime cpu cells); None skips it.
    pub python: Option<PathBuf>,
    /// A precision variant's graph (`model.int8.onnx`...) instead of float32's; the
    /// generation loop (float32 only) is then not timed.
    pub precision: Option<Precision>,
}

fn latency(mut times: Vec<f64>) -> Latency {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    Latency {
        median_ms: times[times.len() / 2],
        p90_ms: at(0.9),
        min_ms: times[0],
        max_ms: times[times.len() - 1],
        runs: times.len(),
    }
}

/// `batch` copies of a batch-1 tensor along its first axis.
fn tile(tensor: &Tensor, batch: usize) -> Tensor {
    fn repeat<T: Clone>(v: &[T], n: usize) -> Vec<T> {
        (0..n).flat_map(|_| v.iter().cloned()).collect()
    }
    let data = match &tensor.data {
        Data::Float32(v) => Data::Float32(repeat(v, batch)),
        Data::Float16(v) => Data::Float16(repeat(v, batch)),
        Data::Bfloat16(v) => Data::Bfloat16(repeat(v, batch)),
        Data::Int64(v) => Data::Int64(repeat(v, batch)),
        Data::Int32(v) => Data::Int32(repeat(v, batch)),
        Data::Int8(v) => Data::Int8(repeat(v, batch)),
        Data::Uint8(v) => Data::Uint8(repeat(v, batch)),
        Data::Bool(v) => Data::Bool(repeat(v, batch)),
    };
    let mut shape = tensor.shape.clone();
    if let Some(first) = shape.first_mut() {
        *first *= batch;
    }
    Tensor { shape, data }
}

/// Benchmarks the cell and appends its `bench` record (failed, with what it
/// measured, if a step fails).
pub fn run(cell: &Cell, options: &Options) -> Result<Bench, CheckError> {
    let mut rec = crate::record::blank(cell, crate::BENCH_RECORD);
    if let Some(precision) = options.precision {
        rec.precision = precision.name().into();
    }
    let result = measure(cell, options, &mut rec);
    match &result {
        Ok(bench) => {
            rec.status = Outcome::Passed;
            rec.timing = Some(Timing {
                median_ms: bench.latency.median_ms,
                min_ms: bench.latency.min_ms,
                max_ms: bench.latency.max_ms,
                runs: bench.latency.runs,
                warmup_runs: bench.warmup_runs,
                profiling: false,
                threads: bench.threads,
                other_checks_in_flight: 0,
                test_threads: None,
                beside: std::env::var("HWMATRIX_BESIDE")
                    .ok()
                    .filter(|b| !b.trim().is_empty()),
            });
            rec.bench = Some(bench.clone());
        }
        Err(e) => {
            rec.reason = Some(e.message.clone());
            rec.error_kind = Some(e.kind);
        }
    }
    record::append(&rec).map_err(|e| {
        CheckError::new(
            ErrorKind::RunFailed,
            format!("cannot write the bench record: {e}"),
        )
    })?;
    result
}

fn measure(cell: &Cell, options: &Options, rec: &mut record::Record) -> Result<Bench, CheckError> {
    let fixture = Fixture::open(cell.model)?;
    rec.fixture = Some(fixture.record(&rec.check, cell.engine.kind()));
    let inputs = fixture.inputs(Shape::Export)?;
    let graph = match options.precision {
        Some(precision) => fixture.model_precision(precision)?,
        None => fixture.model_onnx(),
    };
    let mut session = engine::open(cell, &fixture, options.precision, Mode::Timed)?;
    rec.library = Some(session.library());
    let threads = session.threads();
    let timed = |session: &mut Box<dyn engine::Session>,
                 inputs: &[(String, Tensor)]|
     -> Result<Latency, CheckError> {
        for _ in 0..options.warmup {
            session.time_run(inputs)?;
        }
        let times = (0..options.runs.max(1))
            .map(|_| session.time_run(inputs))
            .collect::<Result<Vec<f64>, _>>()?;
        Ok(latency(times))
    };
    let latency = timed(&mut session, &inputs)?;
    let batch_one = inputs.iter().all(|(_, t)| t.shape.first() == Some(&1));
    let throughput = options
        .batches
        .iter()
        .map(|&batch| {
            if !batch_one {
                return Throughput {
                    batch,
                    per_second: None,
                    median_ms: None,
                    error: Some("the fixture's inputs are not batch 1".into()),
                };
            }
            let tiled: Vec<(String, Tensor)> = inputs
                .iter()
                .map(|(n, t)| (n.clone(), tile(t, batch)))
                .collect();
            match timed(&mut session, &tiled) {
                Ok(l) => Throughput {
                    batch,
                    per_second: Some(batch as f64 * 1e3 / l.median_ms),
                    median_ms: Some(l.median_ms),
                    error: None,
                },
                Err(e) => Throughput {
                    batch,
                    per_second: None,
                    median_ms: None,
                    error: Some(e.message),
                },
            }
        })
        .collect();
    drop(session);
    let generation = match cell.generation {
        Some(_) if options.precision.is_none() => Some(generation(cell, options, threads)?),
        _ => None,
    };
    let python = match (&options.python, cell.engine) {
        (
            Some(python),
            Engine::OnnxRuntime {
                provider: ExecutionProvider::Cpu,
                ..
            },
        ) => {
            let py = python_onnxruntime(
                python,
                &graph,
                &fixture.dir.join("inputs"),
                options,
                threads,
            )?;
            let rust_over_python = latency.median_ms / py.1.median_ms;
            Some(Python {
                onnxruntime: py.0,
                latency: py.1,
                rust_over_python,
            })
        }
        _ => None,
    };
    Ok(Bench {
        latency,
        throughput,
        peak_rss_kb: record::peak_rss_kb(),
        model_bytes: std::fs::metadata(&graph).ok().map(|m| m.len()),
        python,
        warmup_runs: options.warmup,
        threads,
        generation,
    })
}

/// Times the generation fixture's loop on the cell's engine, and the same loop
/// through Python's onnxruntime where the cell is ONNX Runtime's CPU provider.
fn generation(
    cell: &Cell,
    options: &Options,
    threads: Threads,
) -> Result<GenerationBench, CheckError> {
    use crate::generation::GenerationFixture;
    let fixture = GenerationFixture::open(cell.model, crate::checks::generation_decl(cell)?)?;
    let mut sessions: std::collections::BTreeMap<String, Box<dyn engine::Session>> =
        std::collections::BTreeMap::new();
    for name in fixture.meta.graphs.keys() {
        let (file, axes, nodes) = fixture.graph(name);
        sessions.insert(
            name.clone(),
            engine::open_graph(cell, &file, axes, nodes, Mode::Timed)?,
        );
    }
    // Each run's times: the prologue (an encoder) with the first step, as a prefill is; then each decode step.
    let (mut prefill, mut decode) = (Vec::new(), Vec::new());
    for run in 0..options.warmup + options.runs.max(1) {
        let elapsed = std::cell::Cell::new(0.0);
        fixture.run_loop(
            &mut |graph, inputs| {
                let start = Instant::now();
                let outputs = sessions
                    .get_mut(graph)
                    .expect("every graph is opened")
                    .run(inputs);
                elapsed.set(elapsed.get() + start.elapsed().as_secs_f64() * 1e3);
                outputs
            },
            &mut |step, _, _| {
                if run >= options.warmup {
                    if step == 0 {
                        prefill.push(elapsed.get())
                    } else {
                        decode.push(elapsed.get())
                    }
                }
                elapsed.set(0.0);
                Ok(())
            },
        )?;
    }
    let batch = fixture.meta.sequences.len();
    let (prefill, decode_step) = (latency(prefill), latency(decode));
    let per_second = |l: &Latency| batch as f64 * 1e3 / l.median_ms;
    let python = match (&options.python, cell.engine) {
        (
            Some(python),
            Engine::OnnxRuntime {
                provider: ExecutionProvider::Cpu,
                ..
            },
        ) => {
            let reply = python_script(
                python,
                "bench_generation.py",
                &[("--fixture", fixture.dir.display().to_string())],
                options,
                threads,
            )?;
            let times = |key: &str| {
                reply[key]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_f64()).collect::<Vec<f64>>())
                    .filter(|t| !t.is_empty())
            };
            let (Some(py_prefill), Some(py_decode)) =
                (times("prefill_ms"), times("decode_step_ms"))
            else {
                return Err(CheckError::new(
                    ErrorKind::RunFailed,
                    format!("bench_generation.py returned no times: {reply}"),
                ));
            };
            let (py_prefill, py_decode) = (latency(py_prefill), latency(py_decode));
            Some(GenerationPython {
                onnxruntime: reply["onnxruntime"].as_str().unwrap_or("?").to_string(),
                decode_tokens_per_second: per_second(&py_decode),
                rust_over_python_decode: decode_step.median_ms / py_decode.median_ms,
                rust_over_python_prefill: prefill.median_ms / py_prefill.median_ms,
                prefill: py_prefill,
                decode_step: py_decode,
            })
        }
        _ => None,
    };
    Ok(GenerationBench {
        batch,
        prompt_lengths: fixture.meta.prompt_lengths.clone(),
        padding: fixture.meta.padding.clone(),
        decode_steps: fixture.meta.steps.len() - 1,
        decode_tokens_per_second: per_second(&decode_step),
        prefill,
        decode_step,
        python,
    })
}

/// The same model and inputs through Python's onnxruntime, same threads, same runs.
fn python_onnxruntime(
    python: &Path,
    model: &Path,
    inputs: &Path,
    options: &Options,
    threads: Threads,
) -> Result<(String, Latency), CheckError> {
    let args = [
        ("--model", model.display().to_string()),
        ("--inputs", inputs.display().to_string()),
    ];
    let reply = python_script(python, "bench_ort.py", &args, options, threads)?;
    let times: Vec<f64> = reply["times_ms"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
        .unwrap_or_default();
    if times.is_empty() {
        return Err(CheckError::new(
            ErrorKind::RunFailed,
            format!("bench_ort.py returned no times: {reply}"),
        ));
    }
    Ok((
        reply["onnxruntime"].as_str().unwrap_or("?").to_string(),
        latency(times),
    ))
}

/// Runs one of the exporter folder's timing scripts with the run counts and threads; its JSON reply.
fn python_script(
    python: &Path,
    name: &str,
    args: &[(&str, String)],
    options: &Options,
    threads: Threads,
) -> Result<serde_json::Value, CheckError> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../generator/importer/exporter")
        .join(name);
    let started = Instant::now();
    let output = Command::new(python)
        .arg(&script)
        .args(args.iter().flat_map(|(k, v)| [k.to_string(), v.clone()]))
        .args([
            "--warmup",
            &options.warmup.to_string(),
            "--runs",
            &options.runs.max(1).to_string(),
        ])
        .args([
            "--intra-threads",
            &threads.intra_op.to_string(),
            "--inter-threads",
            &threads.inter_op.to_string(),
        ])
        .output()
        .map_err(|e| {
            CheckError::new(
                ErrorKind::LibraryMissing,
                format!(
                    "cannot run {} for the Python comparison: {e}",
                    python.display()
                ),
            )
        })?;
    if !output.status.success() {
        return Err(CheckError::new(
            ErrorKind::RunFailed,
            format!(
                "{} {} failed after {:.1} s: {}",
                python.display(),
                script.display(),
                started.elapsed().as_secs_f64(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| {
        CheckError::new(
            ErrorKind::RunFailed,
            format!(
                "{}: not JSON ({e}): {}",
                script.display(),
                String::from_utf8_lossy(&output.stdout)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p90_and_median_of_known_times() {
        let l = latency((1..=10).map(f64::from).collect());
        assert_eq!(
            (l.median_ms, l.p90_ms, l.min_ms, l.runs),
            (6.0, 9.0, 1.0, 10)
        );
    }

    #[test]
    fn tiling_repeats_along_the_first_axis() {
        let t = Tensor {
            shape: vec![1, 3],
            data: Data::Int64(vec![1, 2, 3]),
        };
        let tiled = tile(&t, 2);
        assert_eq!(tiled.shape, [2, 3]);
        assert!(matches!(tiled.data, Data::Int64(ref v) if v == &[1, 2, 3, 1, 2, 3]));
    }
}
