//! The checks every cell runs, written once. A generated test is one call to
//! one of these; each really runs the model, asserts, and records what it
//! measured, also when it fails.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::compare::{self, Deviation};
use crate::engine::{self, Mode};
use crate::error::{CheckError, ErrorKind};
use crate::fixture::{Fixture, Shape};
use crate::placement;
use crate::record::{
    self, DeviationRecord, FixtureRecord, Memory, Outcome, OutputDeviation, Record, Timing, Worst,
};
use crate::tensor::Tensor;
use crate::{
    AgreementBound, Basis, BrowserBackend, Cell, Engine, ExecutionProvider, Precision, Stage,
    Tolerance,
};
use hwmatrix_platforms::{self as platforms, Availability};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Loads and runs the export shape; names, dtypes and shapes as declared; all finite.
    Runs,
    /// The export shape matches the PyTorch float32 reference within tolerance.
    MatchesReference,
    /// The second shape runs, is shaped as declared, and matches its reference.
    DynamicShapes,
    /// The model at another precision (int8: the fixture's quantized export)
    /// matches the float32 reference within that precision's tolerance.
    Precision(Precision),
    /// The decoder with its cache generates as PyTorch's generate() did, step by step.
    Generates,
}

impl Check {
    pub const ALL: [Check; 3] = [Check::Runs, Check::MatchesReference, Check::DynamicShapes];

    pub fn name(self) -> &'static str {
        match self {
            Check::Runs => crate::CHECKS[0],
            Check::MatchesReference => crate::CHECKS[1],
            Check::DynamicShapes => crate::CHECKS[2],
            Check::Precision(p) => p.check_name(),
            Check::Generates => crate::GENERATES,
        }
    }

    /// The precision of the model the check runs.
    pub fn precision(self) -> Option<Precision> {
        match self {
            Check::Precision(p) => Some(p),
            _ => None,
        }
    }
}

/// Runs after the warm-up run, for the latency in records: up to TIMED_RUNS,
/// but no more once TIMED_BUDGET has passed and MIN_TIMED_RUNS are done, so
/// a model that takes seconds per run (SAM at 1024x1024) does not hold the
/// test run for a minute; and one run only where that run alone took
/// SLOW_RUN or more (a video UNet on a software WebGPU adapter: 15 s a run).
/// The record says how many runs its median is over.
const TIMED_RUNS: usize = 10;
const MIN_TIMED_RUNS: usize = 3;
const TIMED_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);
const SLOW_RUN: std::time::Duration = std::time::Duration::from_secs(5);
const WARMUP_RUNS: usize = 1;

pub fn runs(cell: &Cell) {
    execute(cell, Check::Runs)
}

pub fn matches_reference(cell: &Cell) {
    execute(cell, Check::MatchesReference)
}

pub fn dynamic_shapes(cell: &Cell) {
    execute(cell, Check::DynamicShapes)
}

/// A precision variant's check (`int8_matches_reference`). On a CPU class
/// whose stored outcome of it is a failure (its own kernels: int8 without
/// VNNI), the check runs all the same and must fail as stored: its record is
/// that class's known issue, measured again, and a pass fails the test as an
/// entry out of date. Other classes' outcomes are never compared with it.
pub fn precision(cell: &Cell, precision: Precision) {
    let check = Check::Precision(precision);
    let class = &hwmatrix_cell::CpuClass::here().class;
    let stored = cell
        .class_plan(precision, class)
        .and_then(|p| p.planned.reason().map(|reason| (p.class, reason)));
    run_check(cell, check, stored)
}

/// The generation check (`generates`).
pub fn generates(cell: &Cell) {
    execute(cell, Check::Generates)
}

/// What a check measured, whether it passed or not.
#[derive(Default)]
struct Evidence {
    generation: Option<crate::generation::GenerationRecord>,
    providers: Option<placement::ProviderEvidence>,
    deviation: Option<DeviationRecord>,
    timing: Option<Timing>,
    untimed: Option<String>,
    memory: Option<Memory>,
    fixture: Option<FixtureRecord>,
    library: Option<String>,
    device: Option<String>,
    device_kind: Option<hwmatrix_cell::DeviceKind>,
}

/// Checks of this process in progress, so a timing can say what ran beside it.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

struct InFlight;

impl InFlight {
    fn enter() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Timed sections never overlap within a process: with tests running in
/// parallel, two timings would otherwise share the cores they measure.
static TIMING: Mutex<()> = Mutex::new(());

/// Runs one check on each part of the cell's model (its components, or the
/// whole model), writes a record per part, and panics (fails the test) when
/// any part failed: a cell passes only when all of its components pass.
pub fn execute(cell: &Cell, check: Check) {
    run_check(cell, check, None)
}

/// A CPU class's stored failure of a check: the class and the stored reason.
type StoredFailure = (&'static str, &'static str);

/// [`execute`], or with `stored`, a check that must fail as its CPU class's entry says.
fn run_check(cell: &Cell, check: Check, stored: Option<StoredFailure>) {
    // An engine that can crash its process runs the check in a process of its own.
    if let Some(verdict) = crate::isolation::run_in_own_process(cell, check.name()) {
        if let Err(failure) = verdict {
            panic!("{failure}");
        }
        return;
    }
    // The generation fixture is the whole model's (a vision-language model's language
    // component generates for it), so generates runs once, whatever the cell's parts.
    let parts = if check == Check::Generates {
        std::slice::from_ref(cell.model)
    } else {
        cell.model.parts()
    };
    let failures: Vec<String> = parts
        .iter()
        .filter_map(|part| execute_part(&cell.for_part(part), check, stored).err())
        .collect();
    if !failures.is_empty() {
        panic!("{}", failures.join("\n"));
    }
}

/// One part's check and its record; the failure message when it failed.
fn execute_part(cell: &Cell, check: Check, stored: Option<StoredFailure>) -> Result<(), String> {
    let _in_flight = InFlight::enter();
    let mut evidence = Evidence::default();
    let outcome = perform(cell, check, &mut evidence);
    // A known issue of this CPU class measured again: a failure that ran, as stored.
    let known_issue = stored.is_some() && outcome.is_err();
    let (kind, reason) = match &outcome {
        Ok(()) => (None, None),
        // A component's failure says which component: the spec's known issue is written from it.
        Err(e) => (Some(e.kind), Some(cell.model.qualify(&e.message))),
    };
    let stage = match kind {
        Some(kind) => kind.stage(),
        // Passed: with operators off the provider that the spec allows, or wholly on it.
        None if evidence
            .providers
            .as_ref()
            .is_some_and(|p| p.fallback.iter().any(|f| f.allowed_because.is_some())) =>
        {
            Some(Stage::Fallback)
        }
        None => Some(Stage::Pass),
    };
    let record = Record {
        status: if outcome.is_ok() {
            Outcome::Passed
        } else if known_issue {
            Outcome::KnownIssue
        } else {
            Outcome::Failed
        },
        basis: Basis::Measured,
        reason,
        error_kind: kind,
        stage,
        providers: evidence.providers,
        deviation: evidence.deviation,
        timing: evidence.timing,
        untimed: evidence.untimed,
        memory: evidence.memory,
        fixture: evidence.fixture,
        library: evidence.library,
        device: evidence.device,
        device_kind: evidence.device_kind,
        generation: evidence.generation,
        precision: check
            .precision()
            .map_or("float32", Precision::name)
            .to_string(),
        ..record::blank(cell, check.name())
    };
    if let Err(e) = record::append(&record) {
        panic!(
            "{}::{}: cannot write its result record ({:?}): {e}",
            cell.id(),
            check.name(),
            ErrorKind::RecordWrite
        );
    }
    against_stored(cell, check.name(), outcome, stored)
}

/// A check's test verdict: its own outcome, or with a CPU class's stored
/// failure (`stored`), that it failed again as stored (green, and said so on
/// the test's output) or passed where the store says it fails (red: the entry
/// is out of date).
fn against_stored(
    cell: &Cell,
    check: &str,
    outcome: Result<(), CheckError>,
    stored: Option<StoredFailure>,
) -> Result<(), String> {
    match (outcome, stored) {
        (Err(e), Some((class, _))) => {
            eprintln!(
                "{}::{check}: a known issue on {class} (the store's entry for this CPU class), measured again: {}",
                cell.id(),
                e.message
            );
            Ok(())
        }
        (Ok(()), Some((class, reason))) => Err(format!(
            "{}::{check} passed on {class}, where the evidence store says it fails on this CPU class: {reason}. The entry is out of date: `gen import --platform {} --model {}` on this machine measures it again (review the diff of model-specs/evidence/)",
            cell.id(),
            cell.platform.platform,
            cell.model.model_type
        )),
        (outcome, None) => outcome.map_err(|e| {
            format!(
                "{}::{check} failed ({}): {}",
                cell.id(),
                e.kind.name(),
                e.message
            )
        }),
    }
}

fn perform(cell: &Cell, check: Check, evidence: &mut Evidence) -> Result<(), CheckError> {
    let found = platforms::detect_engine(cell.platform.platform, cell.engine);
    if let Availability::Present(device) = &found {
        evidence.device = Some(device.clone());
        evidence.device_kind = Some(platforms::device_kind(cell.platform.platform, cell.engine));
    }
    if let Availability::Absent(missing) = found {
        return Err(CheckError::new(
            ErrorKind::PlatformAbsent,
            format!(
                "platform {} is not present on this machine: {missing}. Its cargo feature `{}` is on, so this fails instead of skipping (it needs {})",
                cell.platform.platform, cell.platform.feature, cell.platform.requires
            ),
        ));
    }
    if check == Check::Generates {
        return generation_loop(cell, evidence);
    }
    let fixture = Fixture::open(cell.model)?;
    evidence.fixture = Some(fixture.record(check.name(), cell.engine.kind()));
    let shape = match check {
        Check::Runs | Check::MatchesReference | Check::Precision(_) | Check::Generates => {
            Shape::Export
        }
        Check::DynamicShapes => Shape::Second,
    };
    let bound = match check {
        Check::Precision(p) => cell
            .precision_check(p)
            .map(|c| Bound::Agreement(p, c.bound))
            .ok_or_else(|| {
                CheckError::new(
                    ErrorKind::FixtureInvalid,
                    format!("{} declares no {} check", cell.id(), p.name()),
                )
            })?,
        // Hardware that computes float32 graphs in a lower precision is judged by that precision's bound.
        _ => match cell.float32_computed_in {
            Some(c) => Bound::OfSpread(c),
            None => Bound::Allclose(cell.effective_tolerance()),
        },
    };
    let model = check.precision();
    let inputs = fixture.inputs(shape)?;

    // One profiled run: its outputs are compared, its profile says where it ran.
    let mut session = engine::open(cell, &fixture, model, Mode::Profiled).inspect_err(|_| {
        // The engine that refused the model, named as a session would name it.
        evidence.library = engine::library_of(cell);
    })?;
    let outputs = session.run(&inputs);
    // After the run: an engine may open its model lazily and only then know its library.
    evidence.library = Some(session.library());
    if let Some(device) = session.device() {
        evidence.device = Some(format!(
            "{}; {device}",
            evidence.device.take().unwrap_or_default()
        ));
    }
    let outputs = outputs?;
    let placement = session.placement();
    // Engines whose profiled sessions time true are timed as they are, not opened twice.
    let untimed = session.untimed();
    let reusable = session.reusable_for_timing().then_some(session);

    // Every verdict is measured before the first failure is reported, so a
    // failed record keeps all the evidence there is.
    let mut verdicts = vec![
        verify_placement(cell, placement, evidence),
        check_declared(cell, &fixture, shape, &outputs),
    ];
    if check != Check::Runs {
        // The attention mask says which positions users read: padded ones carry values nobody consumes.
        let mask = inputs
            .iter()
            .find(|(name, _)| name == "attention_mask")
            .map(|(_, t)| t);
        verdicts.push(check_reference(
            cell, &fixture, shape, &outputs, bound, mask, evidence,
        ));
    }
    // Latency is taken at the export shape, once per model and precision.
    if matches!(check, Check::MatchesReference | Check::Precision(_)) {
        match untimed {
            Some(why) => evidence.untimed = Some(why),
            None => verdicts.push(time(cell, &fixture, model, &inputs, reusable, evidence)),
        }
    }
    let mut failures = verdicts.into_iter().filter_map(Result::err);
    match failures.next() {
        None => Ok(()),
        Some(first) => {
            let more: Vec<String> = failures
                .map(|e| format!("{}: {}", e.kind.name(), e.message))
                .collect();
            let message = if more.is_empty() {
                first.message
            } else {
                format!("{}; also {}", first.message, more.join("; also "))
            };
            Err(CheckError::new(first.kind, message))
        }
    }
}

/// The cell's generation declaration: only a generating model's cells have one.
pub(crate) fn generation_decl(cell: &Cell) -> Result<&'static crate::GenerationDecl, CheckError> {
    cell.generation.map(|g| g.decl).ok_or_else(|| {
        CheckError::new(
            ErrorKind::FixtureInvalid,
            format!(
                "{} does not generate: its cells have no `generates` check ({})",
                cell.model.model_type, cell.model.spec_path
            ),
        )
    })
}

/// The `generates` check: the generation fixture's loop on the cell's engine,
/// judged by the cell's float32 bound (each step's logits are float32 outputs),
/// its placements verified like every check's.
fn generation_loop(cell: &Cell, evidence: &mut Evidence) -> Result<(), CheckError> {
    use crate::generation::{GenerationFixture, GenerationRecord};
    let mut fixture = GenerationFixture::open(cell.model, generation_decl(cell)?)?;
    let mut record = GenerationRecord::default();
    // WebNN builds no graph over a zero-size tensor: its first step's session never opened
    // (cohere2's not in 14 minutes). It gets one masked position instead where that is
    // neutral for this model's graph, which ONNX Runtime's CPU provider shows first.
    let webnn = matches!(
        cell.engine,
        Engine::Browser {
            backend: BrowserBackend::Webnn,
            ..
        }
    );
    if webnn && fixture.starts_from_an_empty_cache() {
        record.first_step_cache = Some(masked_position_if_neutral(cell, &mut fixture));
    }
    evidence.fixture = Some(fixture.record());
    let tolerance = match cell.float32_computed_in {
        // Hardware computing float32 in a lower precision: the fraction of the logits' spread at the first step.
        Some(c) => Tolerance {
            abs: c.max_error_of_spread
                * compare::spread(&fixture.reference(0)?, Tolerance { abs: 0.0, rel: 0.0 })
                    .max_from_mean,
            rel: 0.0,
        },
        None => cell.effective_tolerance(),
    };
    // One session per graph (an encoder-decoder has three), opened when the loop first runs it.
    let mut sessions: BTreeMap<String, Box<dyn engine::Session>> = BTreeMap::new();
    // Hardware computing float32 in float16 orders tokens only as float16 can; else the tolerance decides.
    let near_tie = if cell.float32_computed_in.is_some() {
        crate::generation::NearTie::Float16
    } else {
        crate::generation::NearTie::WithinTolerance
    };
    let verdict = crate::generation::generate(
        &fixture,
        tolerance,
        near_tie,
        &mut |graph, inputs| {
            if !sessions.contains_key(graph) {
                let (file, axes, nodes) = fixture.graph(graph);
                sessions.insert(
                    graph.to_string(),
                    engine::open_graph(cell, &file, axes, nodes, Mode::Profiled)?,
                );
            }
            sessions.get_mut(graph).expect("opened above").run(inputs)
        },
        &mut record,
    );
    evidence.generation = Some(record);
    if sessions.is_empty() {
        // No graph opened: the engine that refused the first, named without a session.
        evidence.library = engine::library_of(cell);
        return verdict;
    }
    evidence.library = sessions.values().next().map(|s| s.library());
    // Every graph's placements, also when a step failed: each node of each graph on the provider.
    let mut placement = engine::Placement::default();
    for session in sessions.values_mut() {
        match session.placement() {
            Ok(p) => placement.ops.extend(p.ops),
            Err(e) => return verdict.and(Err(e)),
        }
    }
    let placed = verify_placement(cell, Ok(placement), evidence);
    verdict.and(placed)
}

/// Feeds the first step's empty cache as one masked position (`EmptyCache::OneMaskedPosition`)
/// if the whole loop fed that way passes on ONNX Runtime's CPU provider against the same
/// references, with the model's float32 tolerance: the position is then neutral for this
/// graph, and a divergence on the cell's engine is the engine's. Where it is not (kosmos-2.5's
/// logits change on every engine), the cache stays empty as generate() feeds it. Returns what
/// the record says about the feed.
fn masked_position_if_neutral(
    cell: &Cell,
    fixture: &mut crate::generation::GenerationFixture,
) -> String {
    use crate::generation::{EmptyCache, GenerationRecord, NearTie};
    fixture.empty_cache = EmptyCache::OneMaskedPosition;
    let mut sessions: BTreeMap<String, engine::onnx::OnnxSession> = BTreeMap::new();
    let probe = crate::generation::generate(
        fixture,
        cell.model.tolerance,
        NearTie::WithinTolerance,
        &mut |graph, inputs| {
            if !sessions.contains_key(graph) {
                let (file, _, nodes) = fixture.graph(graph);
                let session = engine::onnx::OnnxSession::open(
                    ExecutionProvider::Cpu,
                    &[],
                    &file,
                    Mode::Timed,
                    None,
                    nodes,
                )?;
                sessions.insert(graph.to_string(), session);
            }
            engine::Session::run(sessions.get_mut(graph).expect("opened above"), inputs)
        },
        &mut GenerationRecord::default(),
    );
    match probe {
        Ok(()) => "one masked position (zeros, a 0 in front of every step's attention mask): \
            neutral here, the loop fed so passed on ONNX Runtime's CPU provider in this check"
            .to_string(),
        Err(e) => {
            fixture.empty_cache = EmptyCache::Empty;
            format!(
                "empty, as generate() feeds it: one masked position is not neutral for this graph (the loop fed so failed on ONNX Runtime's CPU provider: {})",
                e.message
            )
        }
    }
}

/// Every node on the requested provider, or off it only where the spec allows.
fn verify_placement(
    cell: &Cell,
    placement: Result<engine::Placement, CheckError>,
    evidence: &mut Evidence,
) -> Result<(), CheckError> {
    let placement = placement?;
    let (requested, options) = match *cell.engine {
        Engine::OnnxRuntime { provider, options } => (provider.ort_name().to_string(), options),
        // The torch engine places by device: `libtorch:cuda` (parameters and outputs).
        Engine::Libtorch { device } => (format!("libtorch:{device}"), &[][..]),
        // OpenVINO's runtime names the devices its compiled model executes on.
        Engine::OpenVino { device, .. } => (format!("openvino:{device}"), &[][..]),
        Engine::Browser { backend, .. } => (backend.ort_provider().to_string(), &[][..]),
        other => (other.kind().name().to_string(), &[][..]),
    };
    let requested = requested.as_str();
    let judged = placement::judge(requested, options, &placement.ops, cell.allowed_fallback);
    evidence.memory = Some(Memory {
        arena_held_bytes: placement.arena_held_bytes,
        arena_in_use_peak_bytes: placement.arena_in_use_peak_bytes,
        rss_growth_kb_session_open: None,
    });
    let result = if judged.verified {
        Ok(())
    } else {
        Err(CheckError::new(
            ErrorKind::ProviderFallback,
            format!(
                "not every node ran on {requested}: {} ran elsewhere ({}); list an operator under `platforms.{}.fallback_ops` in {} only if it may run off {requested}, with the reason",
                judged.disallowed().join(", "),
                judged.summary(),
                cell.platform.platform,
                cell.model.spec_path
            ),
        ))
    };
    evidence.providers = Some(judged);
    result
}

/// Output names, dtypes and shapes as the spec declares them, and all finite.
fn check_declared(
    cell: &Cell,
    fixture: &Fixture,
    shape: Shape,
    outputs: &[(String, Tensor)],
) -> Result<(), CheckError> {
    let mismatch = |message: String| CheckError::new(ErrorKind::OutputMismatch, message);
    // Another tool's graph is judged on the spec's outputs it has, and may give more (its
    // cache, say); ours must give exactly the spec's.
    let declared = fixture.judged_outputs(cell.model.outputs);
    let got: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = declared.iter().map(|d| d.name).collect();
    let extra = got.len() != want.len() && !fixture.is_another_tools_graph();
    if extra || !want.iter().all(|w| got.contains(w)) {
        return Err(mismatch(format!(
            "the model's outputs are {got:?}, the spec declares {want:?}"
        )));
    }
    let meta = fixture.shape(shape);
    let reference_shapes: BTreeMap<String, Vec<usize>> = meta
        .outputs
        .iter()
        .map(|t| (t.name.clone(), t.shape.clone()))
        .collect();
    let sizes = compare::bind_axes(&meta.axes, &declared, &reference_shapes)
        .map_err(|e| CheckError::new(ErrorKind::FixtureInvalid, e))?;
    for decl in declared {
        let (_, tensor) = outputs
            .iter()
            .find(|(n, _)| n == decl.name)
            .expect("presence checked above");
        if tensor.dtype() != decl.dtype {
            return Err(mismatch(format!(
                "output {} is {}, the spec declares {}",
                decl.name,
                tensor.dtype(),
                decl.dtype
            )));
        }
        let expected = compare::expected_shape(decl, &sizes);
        if tensor.shape != expected {
            let axes: Vec<String> = decl
                .axes
                .iter()
                .map(|a| format!("{a}={}", sizes[*a]))
                .collect();
            return Err(mismatch(format!(
                "output {} has shape {:?}, expected {expected:?} ({})",
                decl.name,
                tensor.shape,
                axes.join(", ")
            )));
        }
        if let Some(i) = tensor.first_non_finite() {
            return Err(CheckError::new(
                ErrorKind::NonFinite,
                format!(
                    "output {} has a non-finite value at flat index {i}",
                    decl.name
                ),
            ));
        }
    }
    Ok(())
}

/// How close to the reference a check's outputs must be.
#[derive(Clone, Copy, Debug)]
enum Bound {
    /// float32: numpy's allclose rule, element by element.
    Allclose(Tolerance),
    /// float32 on hardware that computes it in a lower precision (which, and
    /// why): every element within a fraction of its output's spread.
    OfSpread(hwmatrix_cell::ComputedIn),
    /// A precision variant: each float output's rows, energy and top class
    /// agree with the float32 reference (`compare::agreement`).
    Agreement(Precision, AgreementBound),
}

/// Every reference output within its bound, and informative: a reference
/// that a constant would match cannot catch a wrong model. Precision variants
/// and float32 computed in a lower precision are judged on the positions the
/// attention mask keeps (low-precision arithmetic scatters padded positions
/// most, and nobody reads them; the record keeps their agreement apart);
/// float32 checks compare every position.
fn check_reference(
    cell: &Cell,
    fixture: &Fixture,
    shape: Shape,
    outputs: &[(String, Tensor)],
    bound: Bound,
    mask: Option<&Tensor>,
    evidence: &mut Evidence,
) -> Result<(), CheckError> {
    let references = fixture.outputs(shape)?;
    let mut record = deviation_record(bound);
    let mut out_of_tolerance = Vec::new();
    let mut not_informative = Vec::new();
    for (name, expected) in &references {
        let actual = outputs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
            .ok_or_else(|| {
                CheckError::new(
                    ErrorKind::OutputMismatch,
                    format!("the model has no output {name} that the reference has"),
                )
            })?;
        let judged = judge_output(cell, name, actual, expected, bound, mask)?;
        out_of_tolerance.extend(judged.missed);
        not_informative.extend(judged.not_informative);
        record.max_abs = record.max_abs.max(judged.deviation.max_abs);
        record.max_rel = record.max_rel.max(judged.deviation.max_rel);
        record.outputs.push(judged.deviation);
    }
    let record_tolerance = record.tolerance;
    evidence.deviation = Some(record);
    let uninformative = (!not_informative.is_empty()).then(|| {
        format!(
            "reference is not informative: {} (tolerance abs {} + rel {}); fix the fixture in {} (more batch, a better init, other inputs) and rebuild it",
            not_informative.join("; "),
            record_tolerance.abs,
            record_tolerance.rel,
            cell.model.spec_path
        )
    });
    match (out_of_tolerance.is_empty(), uninformative) {
        (true, None) => Ok(()),
        (true, Some(message)) => Err(CheckError::new(ErrorKind::ReferenceNotInformative, message)),
        (false, also) => {
            let also = also.map(|m| format!("; also {m}")).unwrap_or_default();
            Err(CheckError::new(
                ErrorKind::OutOfTolerance,
                format!("{}{also}", out_of_tolerance.join("; ")),
            ))
        }
    }
}

const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };

/// The deviation record of a comparison under `bound`, before any output.
fn deviation_record(bound: Bound) -> DeviationRecord {
    DeviationRecord {
        tolerance: match bound {
            Bound::Allclose(t) => t,
            _ => EXACT,
        },
        max_error_of_spread: match bound {
            Bound::OfSpread(c) => Some(c.max_error_of_spread),
            _ => None,
        },
        computed_in: match bound {
            Bound::OfSpread(c) => Some(format!("{}: {}", c.precision.name(), c.reason)),
            _ => None,
        },
        agreement_bound: match bound {
            Bound::Agreement(_, b) => Some(b),
            _ => None,
        },
        max_abs: 0.0,
        max_rel: 0.0,
        outputs: Vec::new(),
    }
}

/// One output judged: what it measured, and why it failed, if it did.
struct JudgedOutput {
    deviation: OutputDeviation,
    /// What it misses of its bound.
    missed: Option<String>,
    /// Why its reference cannot catch a wrong model (a constant would pass).
    not_informative: Option<String>,
}

/// Judges one output against its reference: on the positions the mask keeps
/// where the bound is a precision's, else on every one.
fn judge_output(
    cell: &Cell,
    name: &str,
    actual: &Tensor,
    expected: &Tensor,
    bound: Bound,
    mask: Option<&Tensor>,
) -> Result<JudgedOutput, CheckError> {
    let axes = cell
        .model
        .outputs
        .iter()
        .find(|d| d.name == name)
        .map_or(&[][..], |d| d.axes);
    let kept = match (bound, mask) {
        (Bound::Allclose(_), _) | (_, None) => None,
        (_, Some(mask)) if actual.shape == expected.shape => {
            compare::kept_positions(axes, expected, mask)
        }
        _ => None,
    };
    // The positions judged: those the mask keeps (as [positions, features]), else every one.
    let selected = kept.as_ref().and_then(|k| {
        Some((
            compare::select_positions(actual, k, true)?,
            compare::select_positions(expected, k, true)?,
        ))
    });
    let (judged_actual, judged_expected, feature_rows) = match &selected {
        Some((a, e)) => (a, e, true),
        None => (actual, expected, compare::feature_axis_last(name, axes)),
    };
    let padded = kept.as_ref().and_then(|k| {
        let (a, e) = (
            compare::select_positions(actual, k, false)?,
            compare::select_positions(expected, k, false)?,
        );
        compare::agreement(name, true, &a, &e)
    });
    // The elementwise rule: float32's allclose; a fraction of this output's
    // own spread where float32 is computed in a lower precision; exact for a
    // precision variant, whose elementwise error is evidence only.
    let tolerance = match bound {
        Bound::Allclose(t) => t,
        Bound::OfSpread(c) => Tolerance {
            abs: c.max_error_of_spread * compare::spread(judged_expected, EXACT).max_from_mean,
            rel: 0.0,
        },
        Bound::Agreement(..) => EXACT,
    };
    let dev: Deviation = compare::deviation(judged_actual, judged_expected, tolerance)
        .map_err(|e| CheckError::new(ErrorKind::OutputMismatch, format!("output {name}: {e}")))?;
    let spread = compare::spread(judged_expected, tolerance);
    let agreement =
        compare::agreement(name, feature_rows, judged_actual, judged_expected).map(|mut a| {
            a.pooled_cosine_min = compare::pooled_cosine_min(axes, actual, expected, mask);
            a
        });
    let positions = selected.as_ref().map(|(_, e)| {
        format!(
            " (the {} positions the attention mask keeps, of {})",
            e.shape[0],
            kept.as_ref().map_or(0, Vec::len)
        )
    });
    let (actual, expected) = (judged_actual, judged_expected);
    let worst = dev.worst.map(|i| Worst {
        index: i,
        expected: expected.value(i),
        got: actual.value(i),
    });
    let missed = missed_bound(
        cell,
        name,
        bound,
        &OutputMeasure {
            dev: &dev,
            worst: worst.as_ref(),
            agreement: agreement.as_ref(),
            elements: expected.len(),
            tolerance,
            positions: positions.as_deref().unwrap_or(""),
        },
    );
    // The float32 checks prove a reference informative (a spread bound below 1 already fails a constant).
    let not_informative = (spread.constant_would_pass && matches!(bound, Bound::Allclose(_)))
        .then(|| {
            format!(
                "output {name} ({} elements) varies by at most {:.3e} around its mean {:.6}, so that constant would pass",
                expected.len(),
                spread.max_from_mean,
                spread.mean
            )
        });
    let deviation = OutputDeviation {
        output: name.to_string(),
        tolerance: (!matches!(bound, Bound::Allclose(_))).then_some(tolerance),
        elements: expected.len(),
        violations: dev.violations,
        max_abs: dev.max_abs,
        max_rel: dev.max_rel,
        worst,
        reference: spread,
        agreement,
        judged_positions: selected.as_ref().map(|(_, e)| e.shape[0]),
        padded_agreement: padded,
    };
    Ok(JudgedOutput {
        deviation,
        missed,
        not_informative,
    })
}

/// What one output measured, as its bound judges it.
struct OutputMeasure<'a> {
    dev: &'a Deviation,
    worst: Option<&'a Worst>,
    agreement: Option<&'a compare::Agreement>,
    elements: usize,
    /// The elementwise tolerance applied.
    tolerance: Tolerance,
    /// ` (the N positions the attention mask keeps, of M)`, or empty.
    positions: &'a str,
}

/// What an output misses of its bound, in words that name the bound's source.
fn missed_bound(cell: &Cell, name: &str, bound: Bound, m: &OutputMeasure) -> Option<String> {
    let worst_text = |w: &Worst| {
        format!(
            "max abs error {:.3e}; worst at flat index {}: got {}, expected {}",
            m.dev.max_abs, w.index, w.got, w.expected
        )
    };
    match (bound, m.worst) {
        (Bound::Agreement(precision, b), _) => {
            let missed = missed_agreement(m.agreement, m.dev, b)?;
            let evidence = m
                .worst
                .map(|w| format!(" ({})", worst_text(w)))
                .unwrap_or_default();
            Some(format!(
                "output {name}{}: {missed} ({}'s bounds, chosen from measurements: precision_tolerances in defaults.yaml or {}){evidence}",
                m.positions,
                precision.name(),
                cell.model.spec_path
            ))
        }
        (Bound::Allclose(t), Some(w)) => Some(format!(
            "output {name}: {} of {} elements outside abs {} + rel {} ({})",
            m.dev.violations,
            m.elements,
            t.abs,
            t.rel,
            worst_text(w)
        )),
        (Bound::OfSpread(c), _) => {
            let mut missed = Vec::new();
            if let Some(w) = m.worst {
                missed.push(format!(
                    "{} of {} elements outside {} of the output's spread ({:.3e} abs) ({})",
                    m.dev.violations,
                    m.elements,
                    c.max_error_of_spread,
                    m.tolerance.abs,
                    worst_text(w)
                ));
            }
            // Judged as the precision it is computed in is judged: its agreement bound too.
            missed.extend(missed_agreement(m.agreement, m.dev, c.agreement));
            (!missed.is_empty()).then(|| {
                format!(
                    "output {name}{}: {} ({}'s bounds, because {}: float32_computed_in in model-specs/hardware.yaml, precision_tolerances in defaults.yaml or {})",
                    m.positions,
                    missed.join("; "),
                    c.precision.name(),
                    c.reason,
                    cell.model.spec_path
                )
            })
        }
        (_, None) => None,
    }
}

/// What an output of a precision variant misses of its bound, if anything:
/// each metric past its bound, with the bound (NaN misses every bound).
/// Integer outputs have no agreement and must match exactly.
// `!(x >= bound)` is meant: a NaN measure misses the bound.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn missed_agreement(
    agreement: Option<&compare::Agreement>,
    dev: &Deviation,
    bound: AgreementBound,
) -> Option<String> {
    let Some(a) = agreement else {
        return (dev.violations > 0).then(|| {
            format!(
                "{} integer elements differ from the reference",
                dev.violations
            )
        });
    };
    let mut missed = Vec::new();
    if let Some(cosine) = a.cosine_min.filter(|c| !(*c >= bound.min_cosine)) {
        let mean = a.cosine_mean.unwrap_or(f64::NAN);
        missed.push(format!(
            "cosine similarity {cosine:.4} in its worst row (of {}; mean {mean:.4}), below {}",
            a.rows, bound.min_cosine
        ));
    }
    if !(a.rel_l2 <= bound.max_rel_l2) {
        missed.push(format!(
            "relative L2 error {:.4}, above {}",
            a.rel_l2, bound.max_rel_l2
        ));
    }
    if let Some(top1) = a.top1.filter(|t| !(*t >= bound.min_top1)) {
        missed.push(format!(
            "top-1 agreement {top1:.4}, below {}",
            bound.min_top1
        ));
    }
    (!missed.is_empty()).then(|| missed.join("; "))
}

/// Latency on a session opened without profiling, one timed section at a
/// time per process, with the conditions it was taken under.
fn time(
    cell: &Cell,
    fixture: &Fixture,
    model: Option<Precision>,
    inputs: &[(String, Tensor)],
    opened: Option<Box<dyn engine::Session>>,
    evidence: &mut Evidence,
) -> Result<(), CheckError> {
    let _exclusive = TIMING.lock().unwrap_or_else(|e| e.into_inner());
    // The memory a session takes to open is measured only where this check opens it.
    let rss_before = if opened.is_none() {
        record::rss_kb()
    } else {
        None
    };
    // A reused session's warm-up was the check's own run.
    let warmups = if opened.is_some() {
        WARMUP_RUNS - 1
    } else {
        WARMUP_RUNS
    };
    let mut session = match opened {
        Some(session) => session,
        None => engine::open(cell, fixture, model, Mode::Timed)?,
    };
    let others_before = IN_FLIGHT.load(Ordering::SeqCst).saturating_sub(1);
    for _ in 0..warmups {
        session.time_run(inputs)?;
    }
    let mut times = Vec::with_capacity(TIMED_RUNS);
    let timed = Instant::now();
    let slow = || timed.elapsed() >= SLOW_RUN;
    while times.len() < TIMED_RUNS
        && (times.len() < MIN_TIMED_RUNS || timed.elapsed() < TIMED_BUDGET)
        && !(times.len() == 1 && slow())
    {
        times.push(session.time_run(inputs)?);
    }
    let others_after = IN_FLIGHT.load(Ordering::SeqCst).saturating_sub(1);
    let rss_after = record::rss_kb();
    times.sort_by(f64::total_cmp);
    evidence.timing = Some(Timing {
        median_ms: times[times.len() / 2],
        min_ms: times[0],
        max_ms: times[times.len() - 1],
        runs: times.len(),
        warmup_runs: WARMUP_RUNS,
        profiling: false,
        threads: session.threads(),
        other_checks_in_flight: others_before.max(others_after),
        test_threads: std::env::var("RUST_TEST_THREADS").ok(),
        beside: std::env::var("HWMATRIX_BESIDE")
            .ok()
            .filter(|b| !b.trim().is_empty()),
    });
    if let (Some(before), Some(after)) = (rss_before, rss_after) {
        let memory = evidence.memory.get_or_insert(Memory {
            arena_held_bytes: None,
            arena_in_use_peak_bytes: None,
            rss_growth_kb_session_open: None,
        });
        memory.rss_growth_kb_session_open = Some(after as i64 - before as i64);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClassPlan, ModelDecl, Planned, PlatformDecl, Tolerance};

    static MODEL: ModelDecl = ModelDecl {
        model_type: "clap",
        category: "audio",
        spec_path: "model-specs/models/audio/clap.yaml",
        spec_digest: "d",
        inputs: &[],
        outputs: &[],
        tolerance: Tolerance {
            abs: 1e-4,
            rel: 1e-3,
        },
        component: None,
        components: &[],
    };
    static CPU: PlatformDecl = PlatformDecl {
        platform: hwmatrix_cell::Platform::Cpu,
        feature: "cpu",
        requires: "the onnxruntime CPU library",
        checks_in_own_process: None,
    };
    static ONNX: crate::Engine = crate::Engine::OnnxRuntime {
        provider: crate::ExecutionProvider::Cpu,
        options: &[],
    };
    const ON_AVX2: Planned = Planned::KnownIssue {
        reason: "int8 saturates on x86-64 avx2",
        basis: crate::Basis::Evidence,
        stage: Some(Stage::Mismatch),
    };
    static CELL: Cell =
        Cell::new(&MODEL, &CPU, &ONNX, Planned::Run).with_class_plans(&[ClassPlan {
            precision: Precision::Int8,
            class: "x86-64 avx2",
            planned: ON_AVX2,
        }]);

    #[test]
    fn a_class_with_its_own_entry_plans_its_own_status_and_no_other_class_does() {
        assert_eq!(
            CELL.class_plan(Precision::Int8, "x86-64 avx2")
                .map(|p| p.planned),
            Some(ON_AVX2)
        );
        assert!(
            CELL.class_plan(Precision::Int8, "x86-64 avx512-vnni")
                .is_none()
        );
    }

    #[test]
    fn a_stored_class_failure_must_fail_again_and_a_pass_fails_the_test() {
        let stored = Some(("x86-64 avx2", "int8 saturates on x86-64 avx2"));
        let failed = || {
            Err(CheckError::new(
                ErrorKind::OutOfTolerance,
                "cosine similarity 0.7087, below 0.98",
            ))
        };
        // Failing as stored: green.
        assert_eq!(
            against_stored(&CELL, "int8_matches_reference", failed(), stored),
            Ok(())
        );
        // Passing where the store says it fails: red, naming the class, the entry and the fix.
        let out_of_date =
            against_stored(&CELL, "int8_matches_reference", Ok(()), stored).unwrap_err();
        for words in [
            "passed on x86-64 avx2",
            "int8 saturates on x86-64 avx2",
            "gen import --platform cpu --model clap",
        ] {
            assert!(out_of_date.contains(words), "{out_of_date}");
        }
        // Without a stored failure, a check's own outcome decides.
        let own = against_stored(&CELL, "int8_matches_reference", failed(), None).unwrap_err();
        assert!(own.contains("failed (out-of-tolerance)"), "{own}");
        assert_eq!(
            against_stored(&CELL, "int8_matches_reference", Ok(()), None),
            Ok(())
        );
    }
}
