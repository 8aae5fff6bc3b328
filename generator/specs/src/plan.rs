//! The planner: which models and platforms a run covers, and the planned
//! status of each cell (model × platform × engine), resolved once from the
//! specs. A platform has a cell per engine hardware.yaml lists for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use hwmatrix_cell::{
    Basis, CHECKS, EngineKind, GENERATES, Planned, Platform, Precision, QuantScheme, Rating, Stage,
};

use crate::spec::evidence::{self, Entry, EntryOutcome};
use crate::spec::{
    EngineSpec, LoadedModel, OverrideStatus, PrecisionTolerance, Specs, ToleranceSpec,
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
    pub planned: Planned<String>,
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
}

#[derive(Debug)]
pub struct PrecisionPlan {
    pub precision: Precision,
    /// The cell's own status when it does not run; else Run, or the
    /// variant's stored outcome (the evidence store).
    pub planned: Planned<String>,
    pub tolerance: PrecisionTolerance,
}

#[derive(Debug)]
pub struct ModelPlan<'a> {
    pub model: &'a LoadedModel,
    pub cells: Vec<CellPlan>,
    /// The quantization checks on quantization.yaml's platform, where it is selected.
    pub quantization: Option<QuantizationPlan>,
}

/// A model's quantization checks (wgpu kernels on its own weights), one per scheme.
#[derive(Debug)]
pub struct QuantizationPlan {
    pub platform: Platform,
    pub checks: Vec<QuantizationCheckPlan>,
}

#[derive(Debug)]
pub struct QuantizationCheckPlan {
    pub scheme: QuantScheme,
    /// Run, unless the model has no fixture or the check was measured to fail
    /// (the evidence store). The platform's whole-model cells do not
    /// decide it: the kernels need only the fixture's weights.
    pub planned: Planned<String>,
    /// The spec's `web_quantization.webgpu` rating of the scheme.
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
                .collect(),
            quantization: platforms
                .iter()
                .any(|p| p.platform == specs.quantization.platform)
                .then(|| plan_quantization(specs, model)),
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

/// A check's planned status from its evidence entries (None: no entry, it runs):
/// a failure of the model or the engine is a known issue; of this machine or
/// our harness, not tested here; a format with nothing to act on does not
/// apply. `what` names the checks (`bert on openvino with onnxruntime`).
fn from_evidence(what: &str, entries: &[&Entry]) -> Option<Planned<String>> {
    let first = entries.first()?;
    let reason = entries
        .iter()
        .map(|e| e.reason(&format!("{what}: {}", e.check)))
        .collect::<Vec<_>>()
        .join("; ");
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
    let spec = &model.spec;
    let name = platform.platform;
    let over = spec.platforms.get(&name);
    let kind = engine.kind();
    let what = format!("{} on {name} with {}", spec.model_type, kind.name());
    let entries = |checks: &[&str]| -> Vec<&Entry> {
        spec.evidence
            .iter()
            .filter(|e| e.is_for(name, kind) && checks.contains(&e.check.as_str()))
            .collect()
    };
    let run = || match platform.no_engine(engine) {
        None => Planned::Run,
        Some(reason) => Planned::NoEngine { reason },
    };
    // architectures.yaml's `support: no` (the seeds' expectation) never keeps a
    // cell from running: the run is the evidence, and the report sets the
    // expectation beside it. Only a person's override with its reason, or a
    // stored outcome, does.
    let planned = if let Some(error) = &spec.export.known_issue {
        if let Some(not_tested) = harness_gap(spec, name) {
            // Our harness stopped before any engine: not tested, on every platform alike.
            not_tested
        } else if kind == EngineKind::Libtorch {
            // libtorch runs the TorchScript trace, which torch.onnx failing says nothing about:
            // its fixture is built without the ONNX step (torchscript.py), unless tracing failed too.
            let trace_failed = spec
                .pipeline_entry(evidence::TORCHSCRIPT_EXPORT)
                .filter(|_| spec.export.known_issue_measured);
            if spec.traced_without_onnx() {
                // Its own fixture: its checks' stored outcomes decide, as any cell's.
                from_evidence(&what, &entries(&CHECKS)).unwrap_or_else(run)
            } else if let Some(entry) = trace_failed {
                from_evidence(
                    &format!("{}'s TorchScript trace", spec.model_type),
                    &[entry],
                )
                .expect("one entry")
            } else {
                let why = if spec.export.known_issue_measured {
                    "it is checked as its components, and libtorch's own fixture (generator/importer/exporter/torchscript.py) is built for whole models only"
                } else {
                    "it is a known issue written in its spec, so no export ran, and its TorchScript trace is built only where a run measured that failure (gen import)"
                };
                Planned::NotTested {
                    reason: format!(
                        "not tested here: {}'s ONNX export failed and {why} (our harness's gap): {error}",
                        spec.model_type
                    ),
                    stage: Stage::Export,
                }
            }
        } else if spec.export.known_issue_measured {
            let entry = spec
                .evidence
                .iter()
                .find(|e| e.platform.is_none() && e.check == evidence::EXPORT)
                .expect("a measured export issue is an entry");
            from_evidence(&format!("{}'s fixture pipeline", spec.model_type), &[entry])
                .expect("one entry")
        } else {
            Planned::KnownIssue {
                reason: format!(
                    "{} cannot be exported to ONNX yet: {error}",
                    spec.model_type
                ),
                basis: Basis::Spec,
                stage: spec.export.stage,
            }
        }
    } else if let Some(o) = over.filter(|o| o.status.is_some()) {
        let reason = o.reason.clone().unwrap_or_default();
        match o.status.expect("filtered") {
            OverrideStatus::Run => run(),
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
    } else if let Some(planned) = from_evidence(&what, &entries(&CHECKS)) {
        planned
    } else {
        run()
    };
    // Every engine that runs the ONNX graph runs its variants (the browser's
    // onnxruntime-web too); libtorch runs TorchScript and wgpu runs kernels.
    let precision_checks = match engine {
        EngineSpec::Onnxruntime { .. } | EngineSpec::Browser { .. } => specs.hardware.platforms
            [&name]
            .precision_checks
            .iter()
            .map(|&precision| {
                let planned = match (
                    &planned,
                    from_evidence(&what, &entries(&[precision.check_name()])),
                ) {
                    (Planned::Run, Some(stored)) => stored,
                    (other, _) => other.clone(),
                };
                let tolerance = spec
                    .precision_tolerances
                    .get(&precision)
                    .cloned()
                    .expect("the loader checks every precision check has a tolerance");
                PrecisionPlan {
                    precision,
                    planned,
                    tolerance,
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    // Judged as that precision is: its elementwise bound and the model's agreement bound for it.
    let float32_computed_in = specs.hardware.platforms[&name]
        .float32_computed_in
        .as_ref()
        .map(|c| {
            let agreement = spec
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
        });
    let runs_onnx = matches!(
        engine,
        EngineSpec::Onnxruntime { .. } | EngineSpec::Browser { .. }
    );
    let generation = (model.generates() && runs_onnx).then(|| {
        let generation_export = spec
            .evidence
            .iter()
            .find(|e| e.platform.is_none() && e.check == evidence::GENERATION_EXPORT);
        match over.and_then(|o| o.status.map(|s| (s, o.reason.clone().unwrap_or_default()))) {
            _ if platform.no_engine(engine).is_some() => run(),
            _ if generation_export.is_some() => from_evidence(
                &format!(
                    "{}'s decoder with its cache (the generation exporter)",
                    spec.model_type
                ),
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
            _ => from_evidence(&what, &entries(&[GENERATES])).unwrap_or(Planned::Run),
        }
    });
    CellPlan {
        generation,
        platform: name,
        engine: engine.clone(),
        precision_checks,
        float32_computed_in,
        planned,
        tolerance_override: over.and_then(|o| o.tolerance.clone()).or_else(|| {
            platform_tolerance(&specs.hardware.platforms[&name].tolerance, &spec.tolerance)
        }),
        fallback_ops: over.map(|o| o.fallback_ops.clone()).unwrap_or_default(),
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
    let error = spec.export.known_issue.as_deref().unwrap_or_default();
    Some(Planned::NotTested {
        reason: format!(
            "not tested: hwmatrix's harness could not {step} for {} (stage `{stage}`, our gap, not a fact about the model or {platform}): {error}",
            spec.model_type
        ),
        stage,
    })
}

fn plan_quantization(specs: &Specs, model: &LoadedModel) -> QuantizationPlan {
    let spec = &model.spec;
    let platform = specs.quantization.platform;
    let checks = QuantScheme::ALL
        .into_iter()
        .map(|scheme| {
            let planned = if let Some(not_tested) = harness_gap(spec, platform) {
                not_tested
            } else if let Some(error) = &spec.export.known_issue {
                Planned::KnownIssue {
                    reason: format!(
                        "{} has no fixture to take weights from: {error}",
                        spec.model_type
                    ),
                    basis: if spec.export.known_issue_measured {
                        Basis::Evidence
                    } else {
                        Basis::Spec
                    },
                    stage: spec.export.stage,
                }
            } else if let Some(stored) = from_evidence(
                &format!("{} on {platform} with wgpu", spec.model_type),
                &spec
                    .evidence
                    .iter()
                    .filter(|e| {
                        e.is_for(platform, EngineKind::Wgpu) && e.check == scheme.check_name()
                    })
                    .collect::<Vec<_>>(),
            ) {
                stored
            } else {
                Planned::Run
            };
            let expected = spec
                .web_quantization
                .as_ref()
                .and_then(|w| w.webgpu.as_ref())
                .and_then(|r| r.get(&scheme).copied());
            QuantizationCheckPlan {
                scheme,
                planned,
                expected,
            }
        })
        .collect();
    QuantizationPlan { platform, checks }
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
