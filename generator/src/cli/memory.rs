//! `gen memory`: what each selected architecture weighs at its default size,
//! in each format, and what its cache adds while it generates (computed on
//! PyTorch's meta device, cached); with --checkpoint and --against, the
//! computed weights beside a real checkpoint's ONNX files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hwmatrix_results::report::memory::{self, Computed, FORMATS, MemoryRow};

use super::{Context, workers};

pub const ABOUT: &str = "\
Computes, for each selected architecture, its parameters and its weights' bytes in
each format the fixtures ship (fp32, fp16, int8, q4, q4f16, qdq8, and NNCF's
nncf_int8 and nncf_int4 for OpenVINO's runtime, with their scales and zero
points), the device memory they fit in, and, for a model that generates,
its cache per token and at 2k, 8k and 32k tokens. Nothing is downloaded or
allocated: the architecture is built from its library's default configuration (or a
checkpoint's config.json) on PyTorch's meta device by the exporter's Python
(generator/importer/exporter/memory.py), one worker per core. Figures are cached
under <cache>/memory/ per spec; `gen report` shows the cached ones.

  gen memory --model llama                 one architecture: a row per format and device
  gen memory --all                         every architecture (about a minute cold)
  gen memory --model bert --checkpoint DIR --against FIXTURE_DIR
                                           a real checkpoint's computed bytes against its
                                           ONNX files (exit 1 beyond 2% for fp32, 10% for
                                           the other formats)";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The exporter venv's Python (default: $HWMATRIX_PYTHON, else ~/.cache/hwmatrix/venv/bin/python)
    #[arg(long, value_name = "FILE")]
    python: Option<PathBuf>,
    /// Python worker processes (default: one per core)
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Build from this checkpoint folder's config.json instead of the library's defaults. Needs exactly one --model
    #[arg(long, value_name = "DIR")]
    checkpoint: Option<PathBuf>,
    /// A fixture folder built from the same checkpoint (`gen fixtures --checkpoint`): print each format's computed bytes beside its ONNX file's and exit 1 beyond the bounds
    #[arg(long, value_name = "FIXTURE_DIR", requires = "checkpoint")]
    against: Option<PathBuf>,
    /// Print the figures as JSON (one object per model) instead of tables
    #[arg(long)]
    json: bool,
}

/// The computed float32 bytes may differ from the file by this much (the file adds the
/// graph, names and the few constants that are not parameters).
const FP32_BOUND: f64 = 0.02;
/// The other formats' rules approximate their converters (which ops they leave alone).
const FORMAT_BOUND: f64 = 0.10;

pub fn run(
    cx: &Context,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let specs = cx.specs()?;
    let plan = cx.plan(&specs)?;
    let checkpoint = match &args.checkpoint {
        None => None,
        Some(_) if plan.models.len() != 1 => {
            return Err("error: --checkpoint computes one model's figures\n  help: add --model <model_type> (the checkpoint's architecture)".into());
        }
        Some(path) if !path.join("config.json").is_file() => {
            return Err(format!(
                "error: {} has no config.json\n  help: pass the folder of a saved pretrained model",
                path.display()
            ));
        }
        Some(path) => {
            Some(std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?)
        }
    };
    let python = args
        .python
        .clone()
        .unwrap_or_else(hwmatrix_cell::paths::python);
    let started = Instant::now();
    let computed = hwmatrix_importer::memory::compute(
        &plan,
        &cache_dir(),
        &python,
        workers(args.jobs),
        checkpoint.as_deref(),
        err,
    )?;
    let rows = rows(&plan, computed);
    if args.json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        let _ = writeln!(out, "{text}");
    } else if let [row] = &rows[..] {
        print_one(row, out);
    } else {
        let (head, body) = memory::table(&rows);
        print_table(&head, &body, out);
    }
    let without = rows.iter().filter(|r| r.computed.is_none()).count();
    let _ = writeln!(
        err,
        "memory: {} architectures, {} with figures, {} without (their reason is in the table) ({:.1} s)",
        rows.len(),
        rows.len() - without,
        without,
        started.elapsed().as_secs_f64()
    );
    match (
        &args.against,
        rows.first().and_then(|r| r.computed.as_ref()),
    ) {
        (Some(fixture), Some(computed)) => against(computed, fixture, out),
        (Some(_), None) => Err("error: no figures to compare with the fixture's files".into()),
        (None, _) => Ok(0),
    }
}

/// `<cache>/memory/`, beside the fixtures.
pub fn cache_dir() -> PathBuf {
    hwmatrix_cell::paths::cache_dir().join("memory")
}

/// The report's rows: every planned model, with its figures or why it has none.
pub fn rows(
    plan: &hwmatrix_specs::plan::Plan,
    computed: Vec<(String, hwmatrix_importer::memory::Computed)>,
) -> Vec<MemoryRow> {
    plan.models
        .iter()
        .zip(computed)
        .map(|(model_plan, (model, outcome))| {
            let (computed, why_none) = match outcome.and_then(|value| {
                serde_json::from_value::<Computed>(value)
                    .map_err(|e| format!("memory.py's answer does not parse: {e}"))
            }) {
                Ok(computed) => (Some(computed), None),
                Err(why) => (None, Some(why)),
            };
            MemoryRow {
                model,
                category: model_plan.model.spec.category.clone(),
                computed,
                why_none,
            }
        })
        .collect()
}

fn print_one(row: &MemoryRow, out: &mut dyn Write) {
    let Some(c) = &row.computed else {
        let _ = writeln!(
            out,
            "{}: no figures: {}",
            row.model,
            row.why_none.as_deref().unwrap_or_default()
        );
        return;
    };
    let p = &c.parameters;
    let _ = writeln!(
        out,
        "{} ({}, {}): {} parameters ({}): embeddings {}, matrix products {}, convolutions {}, biases {}, other {}",
        row.model,
        c.class,
        c.source,
        memory::count(p.total),
        memory::bucket(p.total),
        memory::count(p.embedding),
        memory::count(p.matmul),
        memory::count(p.conv),
        memory::count(p.bias),
        memory::count(p.other)
    );
    match &c.cache {
        None => {}
        Some(cache) if cache.error.is_some() => {
            let _ = writeln!(
                out,
                "cache: no figure: {}",
                cache.error.as_deref().unwrap_or_default()
            );
        }
        Some(cache) => {
            let at: Vec<String> = ["2048", "8192", "32768"]
                .iter()
                .filter_map(|t| {
                    cache
                        .at_tokens
                        .get(*t)
                        .map(|b| format!("{t}: {}", memory::human(*b)))
                })
                .collect();
            let _ = writeln!(
                out,
                "cache (float32): {} per token{}; at {} (tokens){} ({})",
                memory::human(cache.per_token_bytes.unwrap_or_default()),
                match cache.fixed_bytes {
                    Some(fixed) if fixed > 0 =>
                        format!(" + {} whatever the length", memory::human(fixed)),
                    _ => String::new(),
                },
                at.join(", "),
                if cache.sliding_windows.is_empty() {
                    String::new()
                } else {
                    format!("; sliding windows {:?} stop growing", cache.sliding_windows)
                },
                cache.method.as_deref().unwrap_or_default()
            );
        }
    }
    let (head, body) = memory::model_table(c);
    print_table(&head, &body, out);
    for format in FORMATS {
        if let Some(rule) = c.rules.get(format) {
            let _ = writeln!(out, "  {format}: {rule}");
        }
    }
}

fn print_table(head: &[String], rows: &[Vec<String>], out: &mut dyn Write) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let _ = writeln!(out, "{}", line(head));
    for row in rows {
        let _ = writeln!(out, "{}", line(row));
    }
}

/// Each format's computed bytes beside the fixture's file (`model.onnx`, `model.<format>.onnx`,
/// an NNCF format's `model.<format>.bin`);
/// exit 1 if one is off by more than its bound.
fn against(computed: &Computed, fixture: &Path, out: &mut dyn Write) -> Result<i32, String> {
    let _ = writeln!(
        out,
        "\ncomputed against the files of {}:",
        fixture.display()
    );
    let head = ["format", "computed", "file", "error", "bound"].map(String::from);
    let mut rows = Vec::new();
    let mut beyond = Vec::new();
    for format in FORMATS {
        // An IR's weights are its .bin (the .xml is the graph).
        let name = match format {
            "fp32" => "model.onnx".to_string(),
            nncf if nncf.starts_with("nncf_") => format!("model.{nncf}.bin"),
            other => format!("model.{other}.onnx"),
        };
        let (Ok(meta), Some(&bytes)) = (
            std::fs::metadata(fixture.join(&name)),
            computed.weights.get(format),
        ) else {
            rows.push(vec![
                format.to_string(),
                String::new(),
                format!("no {name}"),
            ]);
            continue;
        };
        let file = meta.len();
        let error = (bytes as f64 - file as f64) / file as f64;
        let bound = if format == "fp32" {
            FP32_BOUND
        } else {
            FORMAT_BOUND
        };
        rows.push(vec![
            format.to_string(),
            bytes.to_string(),
            file.to_string(),
            format!("{:+.2}%", error * 100.0),
            format!("{:.0}%", bound * 100.0),
        ]);
        if error.abs() > bound {
            beyond.push(format!("{format} ({:+.2}%)", error * 100.0));
        }
    }
    print_table(&head, &rows, out);
    if beyond.is_empty() {
        return Ok(0);
    }
    let _ = writeln!(
        out,
        "error: computed bytes beyond their bound for {}\n  help: is {} built from this checkpoint (`gen fixtures --checkpoint`)? memory.py's FORMAT_RULES say how each converter stores a parameter: compare them with the file's initializers",
        beyond.join(", "),
        fixture.display()
    );
    Ok(1)
}
