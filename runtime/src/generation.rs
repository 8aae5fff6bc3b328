//! The `generates` check: the model's decoder with its cache generates on the
//! cell's engine as PyTorch's `generate()` did. The generation fixture
//! (generator/importer/exporter/generation.py) holds one graph with the cache as inputs
//! and outputs, what `generate()` fed the model at each step, and the logits
//! it computed. The check runs the same loop on the engine: step 0 with an
//! empty cache, each later step with the cache the engine itself returned.
//! It teacher-forces the reference's tokens (each step feeds what generate()
//! fed), so one near-tie cannot derail the steps after it, and every step is
//! measured; the first step that diverges is the verdict.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::compare;
use crate::content::Content;
use crate::engine::onnx::StaticInputs;
use crate::error::{CheckError, ErrorKind};
use crate::fixture::TensorMeta;
use crate::paths;
use crate::tensor::{Data, Tensor};
use crate::{GenerationDecl, ModelDecl, TensorDecl, Tolerance};
pub use hwmatrix_record::{Divergence, GenerationRecord, NearTie, StepRecord};

/// Runs one graph of a generation fixture on an engine: its name and feeds in,
/// its named outputs back.
pub type RunGraph<'a> =
    dyn FnMut(&str, &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>, CheckError> + 'a;

/// Sees one step of the loop: its index, inputs and outputs.
pub type SeeStep<'a> =
    dyn FnMut(usize, &[(String, Tensor)], &[(String, Tensor)]) -> Result<(), CheckError> + 'a;

/// How a cache's past inputs are named: `past_key_values.<layer>.<name>`.
pub const CACHE_PREFIX: &str = "past_key_values.";

/// meta.json of a generation fixture (generator/importer/exporter/generation.py).
#[derive(Debug, Deserialize)]
pub struct GenerationMeta {
    pub model_type: String,
    pub source: String,
    #[serde(default)]
    pub cache_key: Option<String>,
    /// The graphs the loop runs, by name (`decoder`; `encoder`, `decoder_with_past`).
    pub graphs: BTreeMap<String, GraphMeta>,
    /// Graphs run once before the first step (an encoder), with their stored feeds.
    #[serde(default)]
    pub prologue: Vec<PrologueMeta>,
    pub steps: Vec<StepMeta>,
    /// Inputs fed from an earlier run's output: the cache (`past_key_values.*` from
    /// `present.*`), an encoder's hidden states. The latest value of the output is fed.
    pub carried: Vec<Carried>,
    /// The output whose last position is compared, `[batch, sequence, vocab]`.
    pub logits: String,
    /// The prompt (or decoder start) plus the tokens generate() produced, per row.
    pub sequences: Vec<Vec<i64>>,
    pub prompt_lengths: Vec<usize>,
    /// Where the shorter prompt is padded: `left` (decoder-only, as generate() pads) or `right` (an encoder's source).
    pub padding: String,
}

#[derive(Debug, Deserialize)]
pub struct GraphMeta {
    pub file: String,
    /// The graph's inputs with their named axes ("" for a fixed size).
    pub inputs: Vec<GraphInput>,
    /// The graph's nodes that compute on index and shape data only.
    #[serde(default)]
    pub integer_nodes: Option<crate::fixture::IntegerNodes>,
}

#[derive(Debug, Deserialize)]
pub struct GraphInput {
    pub name: String,
    pub axes: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct PrologueMeta {
    pub graph: String,
    pub feeds: Vec<TensorMeta>,
}

#[derive(Debug, Deserialize)]
pub struct Carried {
    pub input: String,
    pub output: String,
    /// Its value before any run produced the output (the prefill's empty cache), if it has one.
    #[serde(default)]
    pub empty_shape: Option<Vec<usize>>,
    /// The axis a cache grows along, one position per token.
    #[serde(default)]
    pub sequence_axis: Option<usize>,
}

#[derive(Debug, Deserialize)]
pub struct StepMeta {
    pub graph: String,
    pub feeds: Vec<TensorMeta>,
    /// The last position's logits, `[batch, vocab]`.
    pub reference: TensorMeta,
}

#[derive(Debug)]
pub struct GenerationFixture {
    pub dir: PathBuf,
    pub meta: GenerationMeta,
    /// What it holds (`content.json`), where `gen fixtures` recorded it.
    pub content: Option<Content>,
    /// How the first step's empty cache is fed.
    pub empty_cache: EmptyCache,
}

/// How the loop feeds the first step's empty cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EmptyCache {
    /// Length 0 along its sequence axis, as generate() has it.
    #[default]
    Empty,
    /// One position of zeros that every step's attention mask masks out (a 0 prepended
    /// to the mask): for engines that cannot build a graph over a zero-size tensor
    /// (WebNN's, whose session for the first step never opened: 54 models). A masked
    /// position takes no attention weight in most graphs, but not in every one
    /// (kosmos-2.5's logits change), so it is used only where the loop fed so passes
    /// on ONNX Runtime's CPU provider first (`checks::masked_position_if_neutral`).
    OneMaskedPosition,
}

impl GenerationFixture {
    /// What a record says of the fixture the loop read (every engine's loop
    /// reads the whole generation fixture).
    pub fn record(&self) -> crate::record::FixtureRecord {
        crate::fixture::fixture_record(
            &self.dir,
            &self.meta.source,
            self.meta.cache_key.as_deref(),
            self.content.as_ref(),
            crate::GENERATES,
            crate::EngineKind::Onnxruntime,
        )
    }

    /// The generation fixture of a model (`<fixtures>/generation/<model_type>`),
    /// built from this model's spec by this checkout's exporters, holding the cache
    /// its spec declares.
    pub fn open(model: &ModelDecl, decl: &GenerationDecl) -> Result<GenerationFixture, CheckError> {
        let root = paths::generation_fixtures(&paths::fixtures_dir());
        let fixture = GenerationFixture::open_dir(&root, model.model_type)?;
        crate::fixture::built_from(
            "generation fixture",
            &fixture.dir,
            &fixture.meta.source,
            fixture.meta.cache_key.as_deref(),
            fixture.content.as_ref(),
            model,
            decl.spec_digest,
        )?;
        let differences = fixture.cache_differences(decl.cache);
        if !differences.is_empty() {
            return Err(CheckError::new(
                ErrorKind::FixtureInvalid,
                format!(
                    "the generation fixture {} does not hold the cache {} declares ({} differences: {}); rebuild it with `cargo run -p generator --bin gen -- fixtures --model {}`",
                    fixture.dir.display(),
                    model.spec_path,
                    differences.len(),
                    differences
                        .iter()
                        .take(4)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; "),
                    model.model_type
                ),
            ));
        }
        Ok(fixture)
    }

    /// How the fixture's cache differs from the declared one: each declared past
    /// input must be fed back from an output (`carried`) and taken with the declared
    /// axes by the graphs that take it; every past input carried must be declared.
    pub fn cache_differences(&self, declared: &[TensorDecl]) -> Vec<String> {
        let carried: Vec<&str> = self
            .meta
            .carried
            .iter()
            .map(|c| c.input.as_str())
            .filter(|n| n.starts_with(CACHE_PREFIX))
            .collect();
        let mut differences: Vec<String> = Vec::new();
        for t in declared {
            if !carried.contains(&t.name) {
                differences.push(format!("{}: declared, not in the fixture's cache", t.name));
                continue;
            }
            for (graph, meta) in &self.meta.graphs {
                if let Some(input) = meta
                    .inputs
                    .iter()
                    .find(|i| i.name == t.name)
                    .filter(|i| i.axes.iter().map(String::as_str).ne(t.axes.iter().copied()))
                {
                    differences.push(format!(
                        "{}: declared with axes {:?}, graph {graph} takes it with {:?}",
                        t.name, t.axes, input.axes
                    ));
                }
            }
        }
        differences.extend(
            carried
                .iter()
                .filter(|n| !declared.iter().any(|t| t.name == **n))
                .map(|n| format!("{n}: in the fixture's cache, not declared")),
        );
        differences
    }

    pub fn open_dir(root: &Path, model_type: &str) -> Result<GenerationFixture, CheckError> {
        let dir = root.join(model_type);
        let meta_path = dir.join("meta.json");
        let Ok(text) = std::fs::read_to_string(&meta_path) else {
            let build = format!(
                "build it with `cargo run -p generator --bin gen -- fixtures --model {model_type}`"
            );
            return Err(
                match std::fs::read_to_string(paths::export_error_file(root, model_type)) {
                    Ok(text) => {
                        // Who failed is the stage gen kept with the error, never its words.
                        let failed = hwmatrix_cell::export_error::ExportError::read(&text);
                        CheckError::new(
                            if failed.stage == crate::Stage::Export {
                                ErrorKind::ExportFailed
                            } else {
                                ErrorKind::ExporterLimit
                            },
                            format!(
                                "no generation fixture for {model_type}: {}{}",
                                crate::GENERATION_EXPORT_FAILED,
                                failed.error
                            ),
                        )
                    }
                    Err(_) => CheckError::new(
                        ErrorKind::FixtureMissing,
                        format!(
                            "no generation fixture for {model_type}: {} does not exist; {build}",
                            meta_path.display()
                        ),
                    ),
                },
            );
        };
        let invalid = |message: String| CheckError::new(ErrorKind::FixtureInvalid, message);
        let meta: GenerationMeta = serde_json::from_str(&text)
            .map_err(|e| invalid(format!("{}: {e}", meta_path.display())))?;
        if meta.model_type != model_type || meta.steps.is_empty() {
            return Err(invalid(format!(
                "{}: model_type {:?} with {} steps, expected {model_type:?} with some",
                meta_path.display(),
                meta.model_type,
                meta.steps.len()
            )));
        }
        let unknown = meta
            .prologue
            .iter()
            .map(|p| &p.graph)
            .chain(meta.steps.iter().map(|s| &s.graph))
            .find(|g| !meta.graphs.contains_key(*g));
        if let Some(graph) = unknown {
            return Err(invalid(format!(
                "{}: a step runs graph {graph:?}, which `graphs` does not list",
                meta_path.display()
            )));
        }
        let content = Content::read(&dir);
        Ok(GenerationFixture {
            dir,
            meta,
            content,
            empty_cache: EmptyCache::default(),
        })
    }

    /// Whether the first step feeds a cache of length 0 along its sequence axis (a decoder's
    /// keys and values before the prompt; a cache of fixed-size states has none).
    pub fn starts_from_an_empty_cache(&self) -> bool {
        self.meta
            .carried
            .iter()
            .any(|c| c.empty_shape.is_some() && c.sequence_axis.is_some())
    }

    /// A graph's file, the named axes of its inputs (fixed per run where the
    /// engine builds static graphs) and its integer-only nodes.
    pub fn graph(&self, name: &str) -> (PathBuf, StaticInputs, crate::placement::GraphNodes) {
        let graph = &self.meta.graphs[name];
        let inputs = graph
            .inputs
            .iter()
            .map(|i| (i.name.clone(), i.axes.clone()))
            .collect();
        let nodes = graph
            .integer_nodes
            .as_ref()
            .map(|n| crate::placement::GraphNodes::new(&n.names, &n.float))
            .unwrap_or_default();
        (self.dir.join(&graph.file), inputs, nodes)
    }

    /// What generate() fed the model at `step`.
    pub fn feeds(&self, step: usize) -> Result<Vec<(String, Tensor)>, CheckError> {
        self.meta.steps[step]
            .feeds
            .iter()
            .map(|t| Ok((t.name.clone(), self.read(&format!("steps/{step}"), t)?)))
            .collect()
    }

    /// PyTorch's logits for the last position at `step`, `[batch, vocab]`.
    pub fn reference(&self, step: usize) -> Result<Tensor, CheckError> {
        self.read("reference", &self.meta.steps[step].reference)
    }

    fn read(&self, folder: &str, meta: &TensorMeta) -> Result<Tensor, CheckError> {
        crate::fixture::read_checked(&self.dir, folder, meta)
    }

    /// Runs the fixture's loop: the prologue's graphs, then each step's graph with
    /// its stored feeds and every carried input's latest value (the cache the engine
    /// itself returned). `run` runs one graph on the engine; `each_step` sees each
    /// step's inputs and outputs. Errors name the step.
    pub fn run_loop(
        &self,
        run: &mut RunGraph<'_>,
        each_step: &mut SeeStep<'_>,
    ) -> Result<(), CheckError> {
        let meta = &self.meta;
        let mut latest: BTreeMap<String, Tensor> = BTreeMap::new();
        let mut masked_position = false;
        for c in &meta.carried {
            if let Some(shape) = &c.empty_shape {
                let mut shape = shape.clone();
                if let (EmptyCache::OneMaskedPosition, Some(axis)) =
                    (self.empty_cache, c.sequence_axis)
                {
                    shape[axis] = 1;
                    masked_position = true;
                }
                let zeros = shape.iter().product();
                latest.insert(
                    c.output.clone(),
                    Tensor {
                        shape,
                        data: Data::Float32(vec![0.0; zeros]),
                    },
                );
            }
        }
        let mut run_graph = |graph: &str,
                             feeds: Vec<(String, Tensor)>,
                             latest: &mut BTreeMap<String, Tensor>,
                             what: &str| {
            let mut inputs = Vec::new();
            for input in &meta.graphs[graph].inputs {
                if let Some((_, t)) = feeds.iter().find(|(n, _)| *n == input.name) {
                    let carries_cache = meta.carried.iter().any(|c| {
                        c.sequence_axis.is_some()
                            && meta.graphs[graph].inputs.iter().any(|i| i.name == c.input)
                    });
                    let fed = if masked_position && input.name == "attention_mask" && carries_cache
                    {
                        masked_in_front(t).map_err(|e| {
                            CheckError::new(ErrorKind::FixtureInvalid, format!("{what}: {e}"))
                        })?
                    } else {
                        t.clone()
                    };
                    inputs.push((input.name.clone(), fed));
                    continue;
                }
                let Some(value) = meta
                    .carried
                    .iter()
                    .find(|c| c.input == input.name)
                    .and_then(|c| latest.get(&c.output))
                else {
                    return Err(CheckError::new(
                        ErrorKind::FixtureInvalid,
                        format!(
                            "{what}: graph {graph} takes {}, which no feed or earlier output gives",
                            input.name
                        ),
                    ));
                };
                inputs.push((input.name.clone(), value.clone()));
            }
            let outputs = run(graph, &inputs)
                .map_err(|e| CheckError::new(e.kind, format!("{what}: {}", e.message)))?;
            for (name, t) in &outputs {
                latest.insert(name.clone(), t.clone());
            }
            Ok((inputs, outputs))
        };
        for p in &meta.prologue {
            let feeds = p
                .feeds
                .iter()
                .map(|t| {
                    Ok((
                        t.name.clone(),
                        self.read(&format!("prologue/{}", p.graph), t)?,
                    ))
                })
                .collect::<Result<Vec<_>, CheckError>>()?;
            run_graph(
                &p.graph,
                feeds,
                &mut latest,
                &format!("the {} (before step 0)", p.graph),
            )?;
        }
        for (step, s) in meta.steps.iter().enumerate() {
            let (inputs, outputs) = run_graph(
                &s.graph,
                self.feeds(step)?,
                &mut latest,
                &format!("step {step} ({})", s.graph),
            )?;
            each_step(step, &inputs, &outputs)?;
        }
        Ok(())
    }

    /// The past length a step's inputs attend over: a growing cache input's size along its
    /// sequence axis; None where the cache only holds states of a fixed size (Mamba's).
    fn past_length(&self, inputs: &[(String, Tensor)]) -> Option<usize> {
        // A masked position in front is not past anyone attends over.
        let masked = usize::from(self.empty_cache == EmptyCache::OneMaskedPosition);
        self.meta
            .carried
            .iter()
            .filter_map(|c| {
                c.sequence_axis.and_then(|axis| {
                    inputs
                        .iter()
                        .find(|(n, _)| *n == c.input)
                        .and_then(|(_, t)| t.shape.get(axis).copied())
                })
            })
            .next()
            .map(|length| length.saturating_sub(masked))
    }
}

/// Runs the fixture's loop through `run` (one graph on the engine) and judges each
/// step's last-position logits with `tolerance`. The record keeps what every step measured.
pub fn generate(
    fixture: &GenerationFixture,
    tolerance: Tolerance,
    near_tie: NearTie,
    run: &mut RunGraph<'_>,
    record: &mut GenerationRecord,
) -> Result<(), CheckError> {
    let meta = &fixture.meta;
    record.steps = meta.steps.len();
    record.batch = meta.sequences.len();
    record.prompt_lengths = meta.prompt_lengths.clone();
    record.tolerance = Some(tolerance);
    record.near_tie = Some(near_tie);
    let static_axes: BTreeMap<String, Vec<String>> = meta
        .graphs
        .values()
        .flat_map(|g| g.inputs.iter().map(|i| (i.name.clone(), i.axes.clone())))
        .collect();
    // The tokens earlier steps fed: the past of a cache of states, which has no length to read.
    let mut tokens_fed = 0;
    fixture.run_loop(run, &mut |step, inputs, outputs| {
        let past_length = fixture.past_length(inputs).unwrap_or(tokens_fed);
        let logits = outputs.iter().find(|(n, _)| *n == meta.logits).map(|(_, t)| t).ok_or_else(|| {
            let got: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
            CheckError::new(ErrorKind::OutputMismatch, format!("step {step}: the graph has no output {}; it has {got:?}", meta.logits))
        })?;
        let logits = last_position(logits).map_err(|e| CheckError::new(ErrorKind::OutputMismatch, format!("step {step}: {e}")))?;
        let expected = fixture.reference(step)?;
        let dev = compare::deviation(&logits, &expected, tolerance).map_err(|e| CheckError::new(ErrorKind::OutputMismatch, format!("step {step}: logits {e}")))?;
        let disagreements = top1_disagreements(&logits, &expected, tolerance, near_tie);
        let sizes = inputs
            .iter()
            .filter_map(|(name, t)| static_axes.get(name).map(|axes| axes.iter().zip(&t.shape)))
            .flatten()
            .filter(|(axis, _)| !axis.is_empty())
            .map(|(axis, size)| (axis.clone(), *size))
            .collect::<BTreeMap<String, usize>>();
        tokens_fed += sizes.get("sequence").copied().unwrap_or(0);
        record.per_step.push(StepRecord { step, past_length, max_abs: dev.max_abs, max_rel: dev.max_rel, violations: dev.violations, top1_disagreements: disagreements, sizes });
        if disagreements == 0 {
            record.top1_agreeing_steps += 1;
        }
        if record.first_divergence.is_none() && (dev.violations > 0 || disagreements > 0) {
            let worst = dev.worst.map(|i| format!("; worst at flat index {i}: got {}, expected {}", logits.value(i), expected.value(i))).unwrap_or_default();
            record.first_divergence = Some(Divergence {
                step,
                output: meta.logits.clone(),
                what: format!(
                    "{} of {} logits outside abs {} + rel {}, {disagreements} of {} rows with another top token (max abs error {:.3e}{worst})",
                    dev.violations,
                    expected.len(),
                    tolerance.abs,
                    tolerance.rel,
                    record.batch,
                    dev.max_abs
                ),
            });
        }
        Ok(())
    })?;
    match &record.first_divergence {
        None => Ok(()),
        Some(d) => Err(CheckError::new(
            ErrorKind::OutOfTolerance,
            format!(
                "generation diverged from PyTorch's generate() at step {} of {} ({}: past length {}): {}: {}",
                d.step,
                record.steps,
                if d.step == 0 {
                    "the first step, without a cache"
                } else {
                    "a decode step with the cache"
                },
                record.per_step[d.step].past_length,
                d.output,
                d.what
            ),
        )),
    }
}

/// A `[batch, total_sequence]` attention mask with a masked position (0) in front of each row.
fn masked_in_front(mask: &Tensor) -> Result<Tensor, String> {
    let [batch, length] = mask.shape[..] else {
        return Err(format!(
            "attention_mask has shape {:?}, not [batch, total_sequence]",
            mask.shape
        ));
    };
    fn prepend<T: Copy + Default>(v: &[T], length: usize) -> Vec<T> {
        v.chunks(length.max(1))
            .flat_map(|row| std::iter::once(T::default()).chain(row.iter().copied()))
            .collect()
    }
    let data = match &mask.data {
        Data::Int64(v) => Data::Int64(prepend(v, length)),
        Data::Int32(v) => Data::Int32(prepend(v, length)),
        Data::Float32(v) => Data::Float32(prepend(v, length)),
        Data::Bool(v) => Data::Bool(prepend(v, length)),
        _ => {
            return Err(format!(
                "attention_mask of {:?} cannot take a masked position",
                mask.dtype()
            ));
        }
    };
    Ok(Tensor {
        shape: vec![batch, length + 1],
        data,
    })
}

/// `[batch, sequence, vocab]` logits' last position as `[batch, vocab]`.
fn last_position(logits: &Tensor) -> Result<Tensor, String> {
    let [batch, sequence, vocab] = logits.shape[..] else {
        return Err(format!(
            "logits have shape {:?}, expected [batch, sequence, vocab]",
            logits.shape
        ));
    };
    let Data::Float32(values) = &logits.data else {
        return Err(format!("logits are {}, expected float32", logits.dtype()));
    };
    let mut last = Vec::with_capacity(batch * vocab);
    for row in 0..batch {
        let start = (row * sequence + sequence - 1) * vocab;
        last.extend_from_slice(&values[start..start + vocab]);
    }
    Ok(Tensor {
        shape: vec![batch, vocab],
        data: Data::Float32(last),
    })
}

/// Rows whose top token differs from the reference's, counting only rows where
/// the reference's top two are further apart than `near_tie` allows (a near-tie
/// is within it, and the step's logits are judged by the tolerance).
fn top1_disagreements(
    actual: &Tensor,
    expected: &Tensor,
    tolerance: Tolerance,
    near_tie: NearTie,
) -> usize {
    let vocab = *expected.shape.last().unwrap_or(&1);
    let (a, e) = (actual.values(), expected.values());
    a.chunks(vocab)
        .zip(e.chunks(vocab))
        .filter(|(a_row, e_row)| {
            let (Some(top), got) = (compare::argmax(e_row), compare::argmax(a_row)) else {
                return false;
            };
            let second = e_row
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != top)
                .map(|(_, v)| *v)
                .fold(f64::NEG_INFINITY, f64::max);
            let slack = near_tie.slack(tolerance, e_row[top]);
            got != Some(top) && e_row[top] - second > slack
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: Vec<usize>, v: Vec<f32>) -> Tensor {
        Tensor {
            shape,
            data: Data::Float32(v),
        }
    }

    #[test]
    fn a_masked_position_goes_in_front_of_every_row() {
        let mask = Tensor {
            shape: vec![2, 3],
            data: Data::Int64(vec![1, 1, 1, 0, 1, 1]),
        };
        let masked = masked_in_front(&mask).unwrap();
        assert_eq!(masked.shape, vec![2, 4]);
        assert_eq!(masked.data, Data::Int64(vec![0, 1, 1, 1, 0, 0, 1, 1]));
        let flat = Tensor {
            shape: vec![6],
            data: Data::Int64(vec![1; 6]),
        };
        assert!(masked_in_front(&flat).is_err());
    }

    #[test]
    fn the_last_position_of_each_row_is_taken() {
        let logits = t(
            vec![2, 2, 3],
            vec![0., 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11.],
        );
        assert_eq!(
            last_position(&logits).unwrap(),
            t(vec![2, 3], vec![3., 4., 5., 9., 10., 11.])
        );
        assert!(last_position(&t(vec![6], vec![0.; 6])).is_err());
    }

    #[test]
    fn another_top_token_counts_unless_the_reference_is_a_near_tie() {
        let tol = Tolerance {
            abs: 1e-4,
            rel: 0.0,
        };
        let expected = t(vec![2, 3], vec![0.0, 1.0, 0.5, 0.0, 1.0, 0.99995]);
        let swapped = t(vec![2, 3], vec![0.0, 0.5, 1.0, 0.0, 0.99995, 1.0]);
        assert_eq!(
            top1_disagreements(&swapped, &expected, tol, NearTie::WithinTolerance),
            1,
            "row 0 is a clear disagreement, row 1 a near-tie"
        );
        assert_eq!(
            top1_disagreements(&expected, &expected, tol, NearTie::WithinTolerance),
            0
        );
        // Computed in float16 with a tolerance of 10% of the spread: a gap of 0.1 (of a spread of 1)
        // was a near-tie by the tolerance; float16 orders tokens 0.1 apart, so it counts.
        let spread_tol = Tolerance { abs: 0.1, rel: 0.0 };
        let apart = t(vec![1, 3], vec![0.0, 1.0, 0.9]);
        let flipped = t(vec![1, 3], vec![0.0, 0.9, 1.0]);
        assert_eq!(
            top1_disagreements(&flipped, &apart, spread_tol, NearTie::WithinTolerance),
            0
        );
        assert_eq!(
            top1_disagreements(&flipped, &apart, spread_tol, NearTie::Float16),
            1
        );
        let tied = t(vec![1, 3], vec![0.0, 1.0, 0.999]);
        assert_eq!(
            top1_disagreements(
                &t(vec![1, 3], vec![0.0, 0.999, 1.0]),
                &tied,
                spread_tol,
                NearTie::Float16
            ),
            0,
            "within two float16 steps"
        );
    }
}
