//! What `gen bench` measured of one cell: latency, throughput per batch,
//! peak memory, Python's figures and a generating model's loop.

use serde::{Deserialize, Serialize};

use crate::Threads;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Latency {
    pub median_ms: f64,
    pub p90_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Throughput {
    pub batch: usize,
    /// Inferences per second (batch / median batch latency), or why this batch did not run.
    pub per_second: Option<f64>,
    pub median_ms: Option<f64>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Python {
    pub onnxruntime: String,
    pub latency: Latency,
    /// Rust's median over Python's: below 1 is faster than Python.
    pub rust_over_python: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Bench {
    pub latency: Latency,
    pub throughput: Vec<Throughput>,
    /// VmHWM of this process: the model's session, its runs and the runtime itself.
    pub peak_rss_kb: Option<u64>,
    /// The size of the ONNX file benchmarked (the record's precision: float32's or a variant's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_bytes: Option<u64>,
    pub python: Option<Python>,
    pub warmup_runs: usize,
    pub threads: Threads,
    /// A generating model's loop: the prefill (with an encoder-decoder's encoder) and decode steps with the cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<GenerationBench>,
}

/// The generation fixture's loop timed (teacher-forced, the cache the engine returned fed back):
/// the prefill of the padded batch, then each decode step of one token per row.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GenerationBench {
    pub batch: usize,
    pub prompt_lengths: Vec<usize>,
    pub padding: String,
    /// Decode steps per timed run (the new tokens after the first).
    pub decode_steps: usize,
    pub prefill: Latency,
    pub decode_step: Latency,
    /// Tokens the batch decodes per second: batch / median decode step.
    pub decode_tokens_per_second: f64,
    pub python: Option<GenerationPython>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GenerationPython {
    pub onnxruntime: String,
    pub prefill: Latency,
    pub decode_step: Latency,
    pub decode_tokens_per_second: f64,
    /// Rust's median decode step over Python's (same graph, feeds, cache and threads).
    pub rust_over_python_decode: f64,
    pub rust_over_python_prefill: f64,
}
