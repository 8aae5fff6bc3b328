//! The planner: which models and platforms a run covers, and the planned
//! status of each cell (model × platform × engine), resolved once from the
//! specs. A platform has a cell per engine hardware.yaml lists for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use hwmatrix_cell::{
    Basis, CheckId, EngineKind, OpenVinoFrontend, Planned, Platform, Precision, QuantScheme,
    Rating, Stage,
};

use crate::spec::evidence::{self, Entry, EntryOutcome};
use crate::spec::{
    EngineSpec, LoadedModel, ModelSpec, OverrideStatus, PlatformOverride, PrecisionTolerance,
    Specs, ToleranceSpec,
};

/// What the user asked for; an empty list means "all".
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub models: Vec<String>,
    pub categories: Vec<String>,
    pub platforms: Vec<Platform>,
}

impl Selection {
    /// No --category, --model or --platform: every model on every platform (what --all says).
    pub fn is_empty(&self) -> bool {
        self.models.is_empty() && self.categories.is_empty() && self.platforms.is_empty()
    }
}

#[derive(Debug)]
pub struct CellPlan {
    pub platform: Platform,
    pub engine: EngineSpec,
    /// The cell's status: that of its checks at the export shape (`runs`,
    /// `matches_reference`). Its precision checks inherit any float32
    /// check's stored failure (they were never measured beside one).
    pub planned: Planned<String>,
    /// The float32 checks whose own stored outcomes plan them otherwise than
    /// the cell (`hwmatrix_cell::CHECKS` order): a cell whose only stored
    /// failure is `dynamic_shapes` runs `runs` and `matches_reference`, and
    /// plans `dynamic_shapes` as its known issue.
    pub check_plans: Vec<(CheckId, Planned<String>)>,
    /// The spec's tolerance for this platform, when it overrides the model's.
    pub tolerance_override: Option<ToleranceSpec>,
    /// Operators allowed to run off the platform's provider, with why.
    pub fallback_ops: BTreeMap<String, String>,
    /// The precision checks besides float32 (ONNX Runtime cells of platforms
    /// whose hardware.yaml lists `precision_checks`).
    pub precision_checks: Vec<PrecisionPlan>,
    /// Where the platform computes float32 graphs in a lower precision
    /// (hardware.yaml `float32_computed_in`): that precision, the spec's bound
    /// for it, and why; the float32 checks are judged by that bound.
    pub float32_computed_in: Option<(Precision, f64, String, PrecisionTolerance)>,
    /// The `generates` check, for a generating model's cells on engines that run
    /// ONNX graphs: Run, the engine's absence, a person's status for the
    /// platform, or its stored outcome (the evidence store).
    /// The float32 cell's measured issue does not decide it: the generation
    /// graph is another export, with its own evidence.
    pub generation: Option<Planned<String>>,
    /// Why the cell's checks run each in a process of its own: one of them
    /// crashed its process (a stored `engine-exited`), so the others keep
    /// their records when it crashes again.
    pub in_own_process: Option<String>,
    /// A kernel cell's checks (wgpu's quantized-linear kernels on the model's
    /// own weights), one per scheme of quantization.yaml; empty for a cell
    /// that runs the model's graph.
    pub quantization: Vec<QuantizationCheckPlan>,
}

impl CellPlan {
    /// Whether the cell runs quantization kernels on the model's weights, not its graph:
    /// it has no float32, precision or `generates` checks, and no model-level verdict.
    pub fn is_kernel(&self) -> bool {
        !self.quantization.is_empty()
    }

    /// Whether `check` is one of the cell's checks: a float32 check, one of its precision
    /// checks or quantization schemes, or `generates` where it plans one.
    pub fn has_check(&self, check: CheckId) -> bool {
        match check {
            CheckId::Precision(precision) => self
                .precision_checks
                .iter()
                .any(|c| c.precision == precision),
            CheckId::Generates => self.generation.is_some(),
            CheckId::Quantization(scheme) => self.quantization.iter().any(|q| q.scheme == scheme),
            check => CheckId::FLOAT32.contains(&check),
        }
    }
}

#[derive(Debug)]
pub struct PrecisionPlan {
    pub precision: Precision,
    /// The cell's own status when it does not run; else Run, or the
    /// variant's stored outcome (the evidence store).
    pub planned: Planned<String>,
    /// A CPU class's own status where its entries say otherwise (a precision
    /// check on a platform that computes on the host's CPU: an int8 graph that
    /// saturates without VNNI): on a machine of that class the check runs and
    /// must fail as stored (the runtime's `checks::precision`).
    pub by_class: Vec<(String, Planned<String>)>,
    pub tolerance: PrecisionTolerance,
}

#[derive(Debug)]
pub struct ModelPlan<'a> {
    pub model: &'a LoadedModel,
    /// Its cells: each selected platform's engines in hardware.yaml's order,
    /// then its kernel cell (wgpu on quantization.yaml's platform) where that
    /// platform is selected.
    pub cells: Vec<CellPlan>,
}

impl ModelPlan<'_> {
    /// The cells that run the model's graph (every cell but the kernel cell).
    pub fn model_cells(&self) -> impl Iterator<Item = &CellPlan> {
        self.cells.iter().filter(|c| !c.is_kernel())
    }

    /// Its kernel cell, where quantization.yaml's platform is selected.
    pub fn kernel_cell(&self) -> Option<&CellPlan> {
        self.cells.iter().find(|c| c.is_kernel())
    }
}

#[derive(Debug)]
pub struct QuantizationCheckPlan {
    pub scheme: QuantScheme,
    /// Run, unless the model has no fixture or the check was measured to fail
    /// (the evidence store). The platform's whole-model cells do not
    /// decide it: the kernels need only the fixture's weights.
    pub planned: Planned<String>,
    /// The spec's `web_quantization` rating of the scheme on the platform.
    pub expected: Option<Rating>,
}

/// The platform's least tolerance where it is wider than the model's own in
/// either part (each part the larger of the two); None where the model's serves.
fn platform_tolerance(
    platform: &Option<ToleranceSpec>,
    model: &ToleranceSpec,
) -> Option<ToleranceSpec> {
    let least = platform.as_ref()?;
    (least.abs > model.abs || least.rel > model.rel).then(|| ToleranceSpec {
        abs: least.abs.max(model.abs),
        rel: least.rel.max(model.rel),
        reason: least.reason.clone(),
    })
}

/// A platform's engines, in hardware.yaml's order; each serves a cell of every model.
#[derive(Debug)]
pub struct PlatformPlan {
    pub platform: Platform,
    pub engines: Vec<EngineSpec>,
}

impl PlatformPlan {
    /// Why an engine's cells cannot run in this runtime, if they cannot.
    pub fn no_engine(&self, engine: &EngineSpec) -> Option<String> {
        (!engine.kind().is_built()).then(|| {
            format!(
                "{}'s {} engine (hardware.yaml) is not built into the runtime yet",
                self.platform,
                engine.kind().name()
            )
        })
    }
}

#[derive(Debug)]
pub struct Plan<'a> {
    pub specs: &'a Specs,
    pub models: Vec<ModelPlan<'a>>,
    pub platforms: Vec<PlatformPlan>,
}

pub fn plan<'a>(specs: &'a Specs, selection: &Selection) -> Result<Plan<'a>, String> {
    for model in &selection.models {
        if specs.model(model).is_none() {
            let known: Vec<&str> = specs
                .models
                .iter()
                .map(|m| m.spec.model_type.as_str())
                .collect();
            return Err(format!(
                "no spec for model `{model}`; known models: {}",
                known.join(", ")
            ));
        }
    }
    for category in &selection.categories {
        if !specs.categories.categories.contains_key(category) {
            let known: Vec<&str> = specs
                .categories
                .categories
                .keys()
                .map(String::as_str)
                .collect();
            return Err(format!(
                "unknown category `{category}`; categories: {}",
                known.join(", ")
            ));
        }
    }
    let chosen: BTreeSet<Platform> = if selection.platforms.is_empty() {
        Platform::ALL.into_iter().collect()
    } else {
        selection.platforms.iter().copied().collect()
    };
    let platforms: Vec<PlatformPlan> = chosen
        .into_iter()
        .map(|p| plan_platform(specs, p))
        .collect();
    let models = specs
        .models
        .iter()
        .filter(|m| selection.models.is_empty() || selection.models.contains(&m.spec.model_type))
        .filter(|m| {
            selection.categories.is_empty() || selection.categories.contains(&m.spec.category)
        })
        .map(|model| ModelPlan {
            model,
            cells: platforms
                .iter()
                .flat_map(|p| p.engines.iter().map(move |e| plan_cell(specs, model, p, e)))
                .chain(
                    platforms
                        .iter()
                        .filter(|p| p.platform == specs.quantization.platform)
                        .map(|p| plan_cell(specs, model, p, &EngineSpec::Wgpu {})),
                )
                .collect(),
        })
        .collect::<Vec<_>>();
    if models.is_empty() {
        return Err("the selection matches no model".into());
    }
    Ok(Plan {
        specs,
        models,
        platforms,
    })
}

pub fn plan_platform(specs: &Specs, platform: Platform) -> PlatformPlan {
    // The loader guarantees every platform lists at least one engine.
    PlatformPlan {
        platform,
        engines: specs.hardware.platforms[&platform].engines.clone(),
    }
}

/// The float32 checks at the export shape: the cell's status is theirs (its
/// precision checks run at that shape too); `dynamic_shapes` is planned on its own.
const FIXED_SHAPE_CHECKS: [CheckId; 2] = [CheckId::Runs, CheckId::MatchesReference];

/// A check's planned status from its evidence entries (None: no entry, it runs):
/// a failure of the model or the engine is a known issue; of this machine or
/// our harness, not tested here; a format with nothing to act on does not
/// apply. `what` names the checks (`bert on openvino with onnxruntime`).
fn from_evidence(what: &str, model_type: &str, entries: &[&Entry]) -> Option<Planned<String>> {
    let first = entries.first()?;
    // The deciding entry's reason (a known issue's, else a gap's, else the
    // first), and how many more there are: the store holds each in full.
    let deciding = entries
        .iter()
        .find(|e| e.is_known_issue())
        .or_else(|| entries.iter().find(|e| e.outcome == EntryOutcome::Failed))
        .unwrap_or(first);
    let mut reason = deciding.reason(&format!("{what}: {}", deciding.check), model_type);
    if entries.len() > 1 {
        let others: Vec<&str> = entries
            .iter()
            .filter(|e| !std::ptr::eq(**e, *deciding))
            .map(|e| e.check.name())
            .collect();
        reason.push_str(&format!(" (the store also holds {})", others.join(", ")));
    }
    Some(
        if let Some(issue) = entries.iter().find(|e| e.is_known_issue()) {
            Planned::KnownIssue {
                reason,
                basis: Basis::Evidence,
                stage: issue.stage.or(first.stage),
            }
        } else if let Some(gap) = entries.iter().find(|e| e.outcome == EntryOutcome::Failed) {
            Planned::NotTested {
                reason: format!("not tested here: {reason}"),
                stage: gap.stage.unwrap_or(Stage::Run),
            }
        } else {
            Planned::Unsupported {
                reason,
                basis: Basis::Evidence,
            }
        },
    )
}

fn plan_cell(
    specs: &Specs,
    model: &LoadedModel,
    platform: &PlatformPlan,
    engine: &EngineSpec,
) -> CellPlan {
    let cell = CellPlanner::new(specs, model, platform, engine);
    if cell.kind == EngineKind::Wgpu {
        return cell.kernel_cell();
    }
    let planned = cell.planned();
    let check_plans = cell.check_plans(&planned);
    // A cell with any stored float32 failure keeps its precision checks as
    // that known issue, as before checks were planned apart: they never ran
    // beside it, so no entry says what they do (measuring them is the next
    // step; CI found 16 of them failing on cpu when they ran unmeasured).
    let inherited = if check_plans.is_empty() {
        planned.clone()
    } else {
        cell.stored_plan(&CheckId::FLOAT32)
    };
    let precision_checks = cell.precision_checks(&inherited);
    let float32_computed_in = cell.float32_computed_in();
    let generation = cell.generation();
    let in_own_process = cell.in_own_process();
    let (spec, name, over) = (cell.spec, cell.name, cell.over);
    CellPlan {
        generation,
        in_own_process,
        platform: name,
        engine: engine.clone(),
        precision_checks,
        float32_computed_in,
        planned,
        check_plans,
        tolerance_override: over.and_then(|o| o.tolerance.clone()).or_else(|| {
            platform_tolerance(&specs.hardware.platforms[&name].tolerance, &spec.tolerance)
        }),
        fallback_ops: over.map(|o| o.fallback_ops.clone()).unwrap_or_default(),
        quantization: Vec::new(),
    }
}

/// One cell being planned (a model on a platform with an engine), with what each of its
/// checks' statuses is decided from: the spec's override for the platform and the evidence.
struct CellPlanner<'a> {
    specs: &'a Specs,
    model: &'a LoadedModel,
    spec: &'a ModelSpec,
    platform: &'a PlatformPlan,
    engine: &'a EngineSpec,
    name: Platform,
    kind: EngineKind,
    over: Option<&'a PlatformOverride>,
    /// What its evidence's reasons name the checks (`bert on openvino with onnxruntime`).
    what: String,
}

impl<'a> CellPlanner<'a> {
    /// Gathers what every check of the cell is decided from, once for all of them.
    fn new(
        specs: &'a Specs,
        model: &'a LoadedModel,
        platform: &'a PlatformPlan,
        engine: &'a EngineSpec,
    ) -> Self {
        let spec = &model.spec;
        let name = platform.platform;
        let kind = engine.kind();
        CellPlanner {
            specs,
            model,
            spec,
            platform,
            engine,
            name,
            kind,
            over: spec.platforms.get(&name),
            what: format!("{} on {name} with {}", spec.model_type, kind.name()),
        }
    }

    /// The cell's stored outcomes of `checks`: what decides a check no person's status does.
    fn entries(&self, checks: &[CheckId]) -> Vec<&'a Entry> {
        self.spec
            .evidence
            .iter()
            .filter(|e| e.is_for(self.name, self.kind) && checks.contains(&e.check))
            .collect()
    }

    /// A kernel cell (wgpu on quantization.yaml's platform): a check per scheme, each
    /// decided by the harness's gap for the platform, then the export's known issue (no
    /// fixture, no weights), then its stored outcome. A person's status for the platform
    /// and its whole-model cells do not decide them: the kernels need only the weights.
    /// The cell runs when any scheme does; otherwise its first scheme's reason stands for it.
    fn kernel_cell(&self) -> CellPlan {
        let spec = self.spec;
        let quantization: Vec<QuantizationCheckPlan> = QuantScheme::ALL
            .into_iter()
            .map(|scheme| {
                let planned = if let Some(not_tested) = harness_gap(spec, self.name) {
                    not_tested
                } else if let Some(error) = &spec.export.known_issue {
                    Planned::KnownIssue {
                        reason: format!(
                            "{} has no fixture to take weights from: {}",
                            spec.model_type,
                            crate::text::cause(error)
                        ),
                        basis: if spec.export.known_issue_measured {
                            Basis::Evidence
                        } else {
                            Basis::Spec
                        },
                        stage: spec.export.stage,
                    }
                } else if let Some(stored) = from_evidence(
                    &self.what,
                    &spec.model_type,
                    &self.entries(&[CheckId::Quantization(scheme)]),
                ) {
                    stored
                } else {
                    Planned::Run
                };
                let expected = spec
                    .web_quantization
                    .as_ref()
                    .and_then(|w| w.rating(self.name, scheme));
                QuantizationCheckPlan {
                    scheme,
                    planned,
                    expected,
                }
            })
            .collect();
        let planned = quantization
            .iter()
            .find(|c| matches!(c.planned, Planned::Run))
            .or(quantization.first())
            .map_or(Planned::Run, |c| c.planned.clone());
        CellPlan {
            platform: self.name,
            engine: self.engine.clone(),
            planned,
            check_plans: Vec::new(),
            tolerance_override: None,
            fallback_ops: BTreeMap::new(),
            precision_checks: Vec::new(),
            float32_computed_in: None,
            generation: None,
            in_own_process: None,
            quantization,
        }
    }

    /// Why the cell's checks need processes of their own: the first stored
    /// check whose process died (error kind `engine-exited`).
    fn in_own_process(&self) -> Option<String> {
        self.spec
            .evidence
            .iter()
            .filter(|e| e.is_for(self.name, self.kind))
            .find(|e| e.error_kind == Some(hwmatrix_cell::ErrorKind::EngineExited))
            .map(|e| {
                // No run id or date: they change with every re-measurement
                // (the store holds them), and this line is in generated code.
                format!(
                    "its {} check crashed the process [model-specs/evidence/{}.yaml]",
                    e.check, self.spec.model_type
                )
            })
    }

    /// Run, unless the runtime lacks the engine: then its cells say so instead of failing.
    fn run(&self) -> Planned<String> {
        match self.platform.no_engine(self.engine) {
            None => Planned::Run,
            Some(reason) => Planned::NoEngine { reason },
        }
    }

    /// The float32 cell's status: the export's known issue first (nothing runs without a
    /// fixture), then a person's status for the platform, then the stored outcomes.
    fn planned(&self) -> Planned<String> {
        // architectures.yaml's `support: no` (the seeds' expectation) never keeps a
        // cell from running: the run is the evidence, and the report sets the
        // expectation beside it. Only a person's override with its reason, or a
        // stored outcome, does.
        if self.decided_by_store() {
            self.stored_plan(&FIXED_SHAPE_CHECKS)
        } else if let Some(error) = &self.spec.export.known_issue {
            self.planned_with_export_issue(error)
        } else {
            let o = self
                .over
                .expect("a person's status, else the store decides");
            let reason = o.reason.clone().unwrap_or_default();
            match o.status.expect("a person's status, else the store decides") {
                OverrideStatus::Run => self.run(),
                OverrideStatus::Unsupported => Planned::Unsupported {
                    reason,
                    basis: Basis::Spec,
                },
                OverrideStatus::KnownIssue => Planned::KnownIssue {
                    reason,
                    basis: Basis::Spec,
                    stage: None,
                },
            }
        }
    }

    /// Whether the float32 checks' stored outcomes decide them: no person's
    /// status for the platform, and a fixture to run (no export issue, or
    /// the TorchScript trace of its own where our harness got that far, for the engines that
    /// run it).
    fn decided_by_store(&self) -> bool {
        if self.spec.export.known_issue.is_some() {
            self.kind.runs_the_trace()
                && self.spec.traced_without_onnx()
                && harness_gap(self.spec, self.name).is_none()
        } else {
            self.over.is_none_or(|o| o.status.is_none())
        }
    }

    /// The status of `checks` from their stored outcomes (Run without any).
    fn stored_plan(&self, checks: &[CheckId]) -> Planned<String> {
        from_evidence(&self.what, &self.spec.model_type, &self.entries(checks))
            .unwrap_or_else(|| self.run())
    }

    /// Each float32 check planned from its own stored outcomes, where they
    /// decide the cell (no person's status, no export issue) and differ from
    /// the cell's status `planned`: one failing check never silences a
    /// sibling its own evidence lets run.
    fn check_plans(&self, planned: &Planned<String>) -> Vec<(CheckId, Planned<String>)> {
        if !self.decided_by_store() {
            return Vec::new();
        }
        CheckId::FLOAT32
            .into_iter()
            .map(|check| (check, self.stored_plan(&[check])))
            .filter(|(_, own)| own != planned)
            .collect()
    }

    /// The status of a cell whose ONNX export failed (`error`): who failed decides whether it
    /// is the model's known issue or a gap of our harness, which must not read as the model's.
    fn planned_with_export_issue(&self, error: &str) -> Planned<String> {
        let spec = self.spec;
        if let Some(not_tested) = harness_gap(spec, self.name) {
            // Our harness stopped before any engine: not tested, on every platform alike.
            not_tested
        } else if self.kind.runs_the_trace() {
            self.planned_on_the_trace_without_onnx(error)
        } else if spec.export.known_issue_measured {
            let entry = spec
                .evidence
                .iter()
                .find(|e| e.platform.is_none() && e.check == CheckId::Export)
                .expect("a measured export issue is an entry");
            from_evidence(
                &format!("{}'s fixture pipeline", spec.model_type),
                &spec.model_type,
                &[entry],
            )
            .expect("one entry")
        } else {
            Planned::KnownIssue {
                reason: format!(
                    "{} cannot be exported to ONNX yet: {} [{}]",
                    spec.model_type,
                    crate::text::cause(error),
                    self.model.display_path
                ),
                basis: Basis::Spec,
                stage: spec.export.stage,
            }
        }
    }

    /// The status of a cell that runs the trace (libtorch, OpenVINO's PyTorch frontend) where
    /// the ONNX export failed (`error`): its own fixture's outcomes, the trace's measured
    /// failure, or our harness's gap, never the ONNX failure itself.
    fn planned_on_the_trace_without_onnx(&self, error: &str) -> Planned<String> {
        let spec = self.spec;
        // libtorch runs the TorchScript trace and OpenVINO's PyTorch frontend converts it, which
        // torch.onnx failing says nothing about: their fixture is built without the ONNX step
        // (torchscript.py), unless tracing failed too.
        let trace_failed = spec
            .pipeline_entry(CheckId::TorchscriptExport)
            .filter(|_| spec.export.known_issue_measured);
        // A trace of its own (`traced_without_onnx`) is decided by the store
        // before this ([`Cell::decided_by_store`]).
        if let Some(entry) = trace_failed {
            from_evidence(
                &format!("{}'s TorchScript trace", spec.model_type),
                &spec.model_type,
                &[entry],
            )
            .expect("one entry")
        } else {
            let why = if spec.export.known_issue_measured {
                "it is checked as its components, and the trace's own fixture (generator/importer/exporter/torchscript.py) is built for whole models only"
            } else {
                "it is a known issue written in its spec, so no export ran, and its TorchScript trace is built only where a run measured that failure (gen derive)"
            };
            Planned::NotTested {
                reason: format!(
                    "not tested here: {}'s ONNX export failed and {why} (our harness's gap): {}",
                    spec.model_type,
                    crate::text::cause(error)
                ),
                stage: Stage::Export,
            }
        }
    }

    /// The precision checks of the cell's engine (the platform's on engines that run the ONNX
    /// graph's variants unless the engine lists its own, the engine's own on OpenVINO's
    /// runtime): each inherits the float32 cell's status (`planned`) unless it runs, then its
    /// own outcome decides.
    fn precision_checks(&self, planned: &Planned<String>) -> Vec<PrecisionPlan> {
        // Every engine that runs the ONNX graph runs its variants (the browser's
        // onnxruntime-web too); libtorch runs TorchScript and wgpu runs kernels.
        let formats = match self.engine {
            EngineSpec::Onnxruntime {
                precision_checks: Some(own),
                ..
            } => own,
            EngineSpec::Onnxruntime { .. } | EngineSpec::Browser { .. } => {
                &self.specs.hardware.platforms[&self.name].precision_checks
            }
            // OpenVINO's runtime checks OpenVINO's own formats (NNCF's IR variants).
            EngineSpec::Openvino {
                precision_checks, ..
            } => precision_checks,
            _ => return Vec::new(),
        };
        formats
            .iter()
            .map(|&precision| {
                let entries = self.entries(&[CheckId::Precision(precision)]);
                // Entries for every CPU class decide the check; a class's own entries decide
                // it on that class (its kernels differ), where the cell runs at all.
                let every: Vec<&Entry> = entries
                    .iter()
                    .copied()
                    .filter(|e| e.cpu_class.is_none())
                    .collect();
                let planned_here = match (
                    planned,
                    from_evidence(&self.what, &self.spec.model_type, &every),
                ) {
                    (Planned::Run, Some(stored)) => stored,
                    (other, _) => other.clone(),
                };
                let classes: BTreeSet<&str> = entries
                    .iter()
                    .filter_map(|e| e.cpu_class.as_deref())
                    .collect();
                let by_class = classes
                    .into_iter()
                    .filter(|_| *planned == Planned::Run)
                    .filter_map(|class| {
                        let own: Vec<&Entry> = entries
                            .iter()
                            .copied()
                            .filter(|e| e.cpu_class.as_deref() == Some(class))
                            .collect();
                        let what = format!("{} ({class})", self.what);
                        Some((
                            class.to_string(),
                            from_evidence(&what, &self.spec.model_type, &own)?,
                        ))
                    })
                    .collect();
                let planned = planned_here;
                let tolerance = self
                    .spec
                    .precision_tolerances
                    .get(&precision)
                    .cloned()
                    .expect("the loader checks every precision check has a tolerance");
                PrecisionPlan {
                    precision,
                    planned,
                    by_class,
                    tolerance,
                }
            })
            .collect()
    }

    /// Where the platform computes float32 graphs in a lower precision, the bounds its float32
    /// checks are judged by: that precision's elementwise bound and the model's agreement bound for it.
    fn float32_computed_in(&self) -> Option<(Precision, f64, String, PrecisionTolerance)> {
        self.specs.hardware.platforms[&self.name]
            .float32_computed_in
            .as_ref()
            .map(|c| {
                let agreement = self
                    .spec
                    .precision_tolerances
                    .get(&c.precision)
                    .cloned()
                    .expect("the loader checks every precision has a tolerance");
                (
                    c.precision,
                    c.max_error_of_spread,
                    c.reason.clone(),
                    agreement,
                )
            })
    }

    /// The `generates` check of a generating model on an engine that runs ONNX graphs: the
    /// generation graph is its own export, so the float32 cell's issue does not decide it.
    fn generation(&self) -> Option<Planned<String>> {
        let spec = self.spec;
        // Not OpenVINO's PyTorch frontend: the generation fixture is an ONNX decoder with its
        // cache, and no PyTorch module of it is converted yet.
        let runs_onnx = matches!(
            self.engine,
            EngineSpec::Onnxruntime { .. }
                | EngineSpec::Browser { .. }
                | EngineSpec::Openvino {
                    frontend: OpenVinoFrontend::Onnx,
                    ..
                }
        );
        (self.model.generates() && runs_onnx).then(|| {
            let generation_export = spec
                .evidence
                .iter()
                .find(|e| e.platform.is_none() && e.check == CheckId::GenerationExport);
            match self
                .over
                .and_then(|o| o.status.map(|s| (s, o.reason.clone().unwrap_or_default())))
            {
                _ if self.platform.no_engine(self.engine).is_some() => self.run(),
                _ if generation_export.is_some() => from_evidence(
                    &format!(
                        "{}'s decoder with its cache (the generation exporter)",
                        spec.model_type
                    ),
                    &spec.model_type,
                    &[generation_export.expect("checked")],
                )
                .expect("one entry"),
                Some((OverrideStatus::Unsupported, reason)) => Planned::Unsupported {
                    reason,
                    basis: Basis::Spec,
                },
                Some((OverrideStatus::KnownIssue, reason)) => Planned::KnownIssue {
                    reason,
                    basis: Basis::Spec,
                    stage: None,
                },
                _ => from_evidence(
                    &self.what,
                    &self.spec.model_type,
                    &self.entries(&[CheckId::Generates]),
                )
                .unwrap_or(Planned::Run),
            }
        })
    }
}

/// A spec our harness stopped on (stage `config` or `reference`): not tested on
/// `platform`, with the harness's error; None when the pipeline got further.
fn harness_gap(spec: &crate::spec::ModelSpec, platform: Platform) -> Option<Planned<String>> {
    let stage = spec.export.stage.filter(|s| s.is_harness())?;
    let step = if stage == Stage::Config {
        "build the tiny config"
    } else {
        "build and run the tiny PyTorch model"
    };
    let error = crate::text::cause(spec.export.known_issue.as_deref().unwrap_or_default());
    let reason = if let Some(entry) = spec.stopped_by_environment() {
        format!(
            "not tested: this environment could not {step} for {} (stage `{stage}`: {}, not a fact about the model or {platform}): {error}",
            spec.model_type,
            evidence::environment_cause(entry.error_kind)
        )
    } else {
        format!(
            "not tested: hwmatrix's harness could not {step} for {} (stage `{stage}`, our gap, not a fact about the model or {platform}): {error}",
            spec.model_type
        )
    };
    Some(Planned::NotTested { reason, stage })
}

/// Specs by the stage the fixture pipeline stopped at, per category:
/// `config` and `reference` are our harness's (their cells are not tested),
/// `export` the exporters'; `fixture` means a fixture is built and the cells
/// go on to the engines (whose stages the records and the report give).
pub fn stages_by_category(plan: &Plan) -> String {
    use hwmatrix_cell::Stage;
    const COLUMNS: [&str; 5] = ["specs", "config", "reference", "export", "fixture"];
    let mut rows: BTreeMap<&str, [usize; 5]> = BTreeMap::new();
    for m in &plan.models {
        let spec = &m.model.spec;
        let row = rows.entry(&spec.category).or_default();
        row[0] += 1;
        row[match spec.export.stage {
            Some(Stage::Config) => 1,
            Some(Stage::Reference) => 2,
            Some(_) => 3,
            None => 4,
        }] += 1;
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Specs by the stage the fixture pipeline reached (config and reference: our harness, the cells are not tested):\n"
    );
    let _ = writeln!(out, "| category | {} |", COLUMNS.join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|".repeat(COLUMNS.len()));
    let mut total = [0usize; 5];
    for (category, row) in &rows {
        let _ = writeln!(
            out,
            "| {category} | {} |",
            row.map(|n| n.to_string()).join(" | ")
        );
        total.iter_mut().zip(row).for_each(|(t, n)| *t += n);
    }
    let _ = writeln!(
        out,
        "| all | {} |",
        total.map(|n| n.to_string()).join(" | ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tolerance(abs: f64, rel: f64) -> ToleranceSpec {
        ToleranceSpec {
            abs,
            rel,
            reason: Some("measured".into()),
        }
    }

    #[test]
    fn a_platform_tolerance_widens_only_what_is_tighter_than_it() {
        let platform = Some(tolerance(1e-3, 1e-3));
        let widened = platform_tolerance(&platform, &tolerance(1e-4, 1e-2))
            .expect("abs is tighter than the platform's");
        assert_eq!(
            (widened.abs, widened.rel, widened.reason.as_deref()),
            (1e-3, 1e-2, Some("measured"))
        );
        assert!(
            platform_tolerance(&platform, &tolerance(1e-2, 1e-2)).is_none(),
            "the model's own is wider in both parts"
        );
        assert!(platform_tolerance(&None, &tolerance(1e-4, 1e-3)).is_none());
    }
}
