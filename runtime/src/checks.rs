//! The checks every cell runs, written once. A generated test is one call
//! to one of these; each really runs the model, asserts, and records.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use crate::cell::Cell;
use crate::compare::{self, Deviation};
use crate::engine::{self, Session};
use crate::fixture::{Fixture, Shape};
use crate::platform::Availability;
use crate::record::{self, Record, Status};
use crate::tensor::Tensor;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Loads and runs the export shape; names, dtypes and shapes as declared; all finite.
    Runs,
    /// The export shape matches the PyTorch float32 reference within tolerance.
    MatchesReference,
    /// The second shape runs, is shaped as declared, and matches its reference.
    DynamicShapes,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Runs => "runs",
            Check::MatchesReference => "matches_reference",
            Check::DynamicShapes => "dynamic_shapes",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Timed runs after the warm-up run, for the latency in records.
const TIMED_RUNS: usize = 5;

pub fn runs(cell: &Cell) {
    execute(cell, Check::Runs)
}

pub fn matches_reference(cell: &Cell) {
    execute(cell, Check::MatchesReference)
}

pub fn dynamic_shapes(cell: &Cell) {
    execute(cell, Check::DynamicShapes)
}

/// What a passed check measured.
#[derive(Default)]
struct Evidence {
    provider: Option<String>,
    library: Option<String>,
    deviation: Option<Deviation>,
    latency_ms: Option<f64>,
}

/// Runs one check, writes its record, and panics (fails the test) on failure.
pub fn execute(cell: &Cell, check: Check) {
    let mut evidence = Evidence::default();
    let outcome = perform(cell, check, &mut evidence);
    let record = Record {
        run_id: record::run_id().to_string(),
        time: record::now_rfc3339(),
        host: record::host(),
        model: cell.model.model_type.to_string(),
        category: cell.model.category.to_string(),
        platform: cell.platform.to_string(),
        engine: cell.engine.name().to_string(),
        provider_verified: evidence.provider,
        check: check.to_string(),
        status: if outcome.is_ok() { Status::Passed } else { Status::Failed },
        reason: outcome.as_ref().err().cloned(),
        max_abs_error: evidence.deviation.map(|d| d.max_abs),
        max_rel_error: evidence.deviation.map(|d| d.max_rel),
        latency_ms: evidence.latency_ms,
        timed_runs: evidence.latency_ms.map(|_| TIMED_RUNS),
        peak_rss_kb: record::peak_rss_kb(),
        library: evidence.library,
        runtime_version: env!("CARGO_PKG_VERSION"),
    };
    if let Err(e) = record::append(&record) {
        panic!("{}::{check}: cannot write its result record: {e}", cell.id());
    }
    if let Err(message) = outcome {
        panic!("{}::{check} failed: {message}", cell.id());
    }
}

fn perform(cell: &Cell, check: Check, evidence: &mut Evidence) -> Result<(), String> {
    if let Availability::Absent(missing) = cell.platform.detect() {
        return Err(format!(
            "platform {} is not present on this machine: {missing}. Its cargo feature is on, so this fails instead of skipping",
            cell.platform
        ));
    }
    let fixture = Fixture::open(cell.model.model_type)?;
    let mut session = engine::open(cell, &fixture)?;
    evidence.library = Some(session.library());
    let shape = match check {
        Check::Runs | Check::MatchesReference => Shape::Export,
        Check::DynamicShapes => Shape::Second,
    };
    let inputs = fixture.inputs(shape)?;
    let outputs = session.run(&inputs)?;
    check_declared(cell, &fixture, shape, &outputs)?;
    if check != Check::Runs {
        evidence.latency_ms = Some(median_latency_ms(session.as_mut(), &inputs)?);
        evidence.deviation = Some(check_reference(cell, &fixture, shape, &outputs)?);
    }
    evidence.provider = Some(session.verify_backend()?);
    Ok(())
}

/// Output names, dtypes and shapes as the spec declares them, and all finite.
fn check_declared(cell: &Cell, fixture: &Fixture, shape: Shape, outputs: &[(String, Tensor)]) -> Result<(), String> {
    let declared = cell.model.outputs;
    let got: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = declared.iter().map(|d| d.name).collect();
    if got.len() != want.len() || !want.iter().all(|w| got.contains(w)) {
        return Err(format!("the model's outputs are {got:?}, the spec declares {want:?}"));
    }
    let meta = fixture.shape(shape);
    let reference_shapes: BTreeMap<String, Vec<usize>> = meta.outputs.iter().map(|t| (t.name.clone(), t.shape.clone())).collect();
    let sizes = compare::bind_axes(&meta.axes, declared, &reference_shapes)?;
    for decl in declared {
        let (_, tensor) = outputs.iter().find(|(n, _)| n == decl.name).expect("presence checked above");
        if tensor.dtype() != decl.dtype {
            return Err(format!("output {} is {}, the spec declares {}", decl.name, tensor.dtype(), decl.dtype));
        }
        let expected = compare::expected_shape(decl, &sizes);
        if tensor.shape != expected {
            let axes: Vec<String> = decl.axes.iter().map(|a| format!("{a}={}", sizes[*a])).collect();
            return Err(format!("output {} has shape {:?}, expected {expected:?} ({})", decl.name, tensor.shape, axes.join(", ")));
        }
        if let Some(i) = tensor.first_non_finite() {
            return Err(format!("output {} has a non-finite value at flat index {i}", decl.name));
        }
    }
    Ok(())
}

/// Every declared output within tolerance of the PyTorch reference; returns the worst deviation.
fn check_reference(cell: &Cell, fixture: &Fixture, shape: Shape, outputs: &[(String, Tensor)]) -> Result<Deviation, String> {
    let references = fixture.outputs(shape)?;
    let mut worst = Deviation::default();
    let mut failures = Vec::new();
    for (name, expected) in &references {
        let (_, actual) = outputs
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| format!("the model has no output {name} that the reference has"))?;
        let dev = compare::deviation(actual, expected, cell.tolerance).map_err(|e| format!("output {name}: {e}"))?;
        worst.max_abs = worst.max_abs.max(dev.max_abs);
        worst.max_rel = worst.max_rel.max(dev.max_rel);
        if let Some(i) = dev.worst {
            failures.push(format!(
                "output {name}: {} of {} elements outside abs {} + rel {} (max abs error {:.3e}; worst at flat index {i}: got {}, expected {})",
                dev.violations,
                expected.len(),
                cell.tolerance.abs,
                cell.tolerance.rel,
                dev.max_abs,
                element(actual, i),
                element(expected, i),
            ));
        }
    }
    if failures.is_empty() { Ok(worst) } else { Err(failures.join("; ")) }
}

fn element(t: &Tensor, i: usize) -> String {
    use crate::tensor::Data;
    match &t.data {
        Data::Float32(v) => v[i].to_string(),
        Data::Int64(v) => v[i].to_string(),
        Data::Int32(v) => v[i].to_string(),
        Data::Bool(v) => v[i].to_string(),
    }
}

/// Median wall time of TIMED_RUNS runs (the run already done was the warm-up).
fn median_latency_ms(session: &mut dyn Session, inputs: &[(String, Tensor)]) -> Result<f64, String> {
    let mut times = Vec::with_capacity(TIMED_RUNS);
    for _ in 0..TIMED_RUNS {
        let start = Instant::now();
        session.run(inputs)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[TIMED_RUNS / 2])
}
