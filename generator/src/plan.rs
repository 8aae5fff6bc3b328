//! The planner: which models and platforms a run covers, and the planned
//! status of each cell (model × platform), resolved once from the specs.

use std::collections::{BTreeMap, BTreeSet};

use hwmatrix_cell::{Basis, Planned, Platform};

use crate::spec::{EngineSpec, LoadedModel, OverrideStatus, Specs, Support, ToleranceSpec};

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
    pub planned: Planned<String>,
    /// The spec's tolerance for this platform, when it overrides the model's.
    pub tolerance_override: Option<ToleranceSpec>,
    /// Operators allowed to run off the platform's provider, with why.
    pub fallback_ops: BTreeMap<String, String>,
}

#[derive(Debug)]
pub struct ModelPlan<'a> {
    pub model: &'a LoadedModel,
    pub cells: Vec<CellPlan>,
}

/// The engine a platform's cells use: the first one in hardware.yaml that the
/// runtime has built, else the first listed (its cells are then `no-engine`).
#[derive(Debug)]
pub struct PlatformPlan {
    pub platform: Platform,
    pub engine: EngineSpec,
    /// Set when none of the platform's engines is built.
    pub no_engine: Option<String>,
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
            let known: Vec<&str> = specs.models.iter().map(|m| m.spec.model_type.as_str()).collect();
            return Err(format!("no spec for model `{model}`; known models: {}", known.join(", ")));
        }
    }
    for category in &selection.categories {
        if !specs.categories.categories.contains_key(category) {
            let known: Vec<&str> = specs.categories.categories.keys().map(String::as_str).collect();
            return Err(format!("unknown category `{category}`; categories: {}", known.join(", ")));
        }
    }
    let chosen: BTreeSet<Platform> =
        if selection.platforms.is_empty() { Platform::ALL.into_iter().collect() } else { selection.platforms.iter().copied().collect() };
    let platforms: Vec<PlatformPlan> = chosen.into_iter().map(|p| plan_platform(specs, p)).collect();
    let models = specs
        .models
        .iter()
        .filter(|m| selection.models.is_empty() || selection.models.contains(&m.spec.model_type))
        .filter(|m| selection.categories.is_empty() || selection.categories.contains(&m.spec.category))
        .map(|model| ModelPlan { model, cells: platforms.iter().map(|p| plan_cell(specs, model, p)).collect() })
        .collect::<Vec<_>>();
    if models.is_empty() {
        return Err("the selection matches no model".into());
    }
    Ok(Plan { specs, models, platforms })
}

pub fn plan_platform(specs: &Specs, platform: Platform) -> PlatformPlan {
    let engines = &specs.hardware.platforms[&platform].engines;
    match engines.iter().find(|e| e.kind().is_built()) {
        Some(engine) => PlatformPlan { platform, engine: engine.clone(), no_engine: None },
        None => {
            let listed: Vec<&str> = engines.iter().map(|e| e.kind().name()).collect();
            PlatformPlan {
                platform,
                // The loader guarantees every platform lists at least one engine.
                engine: engines[0].clone(),
                no_engine: Some(format!("none of {platform}'s engines in hardware.yaml ({}) is built into the runtime yet", listed.join(", "))),
            }
        }
    }
}

fn plan_cell(specs: &Specs, model: &LoadedModel, platform: &PlatformPlan) -> CellPlan {
    let spec = &model.spec;
    let name = platform.platform;
    let over = spec.platforms.get(&name);
    let expectation = &specs.architectures.architectures[&spec.architecture].platforms[&name];
    let planned = if let Some(error) = &spec.export.known_issue {
        if spec.export.known_issue_measured {
            // Written by `gen import` from the pipeline's own failure.
            Planned::KnownIssue { reason: format!("{} fails in the fixture pipeline (recorded by gen import): {error}", spec.model_type), basis: Basis::Measured }
        } else {
            Planned::KnownIssue { reason: format!("{} cannot be exported to ONNX yet: {error}", spec.model_type), basis: Basis::Spec }
        }
    } else if let Some(o) = over.filter(|o| o.status.is_some()) {
        let reason = o.reason.clone().unwrap_or_default();
        match o.status.expect("filtered") {
            OverrideStatus::Run => run_or_no_engine(platform),
            OverrideStatus::Unsupported => Planned::Unsupported { reason, basis: Basis::Spec },
            OverrideStatus::KnownIssue if o.measured => Planned::KnownIssue {
                reason: format!("{} fails on {name} (measured by gen import --platform {name}): {reason}", spec.model_type),
                basis: Basis::Measured,
            },
            OverrideStatus::KnownIssue => Planned::KnownIssue { reason, basis: Basis::Spec },
        }
    } else if expectation.support == Support::No {
        Planned::Unsupported {
            reason: format!("architectures.yaml expects no {} support on {name}: {} ({})", spec.architecture, expectation.notes, expectation.source),
            basis: Basis::SeedExpectation,
        }
    } else {
        run_or_no_engine(platform)
    };
    CellPlan {
        platform: name,
        planned,
        tolerance_override: over.and_then(|o| o.tolerance.clone()),
        fallback_ops: over.map(|o| o.fallback_ops.clone()).unwrap_or_default(),
    }
}

fn run_or_no_engine(platform: &PlatformPlan) -> Planned<String> {
    match &platform.no_engine {
        None => Planned::Run,
        Some(reason) => Planned::NoEngine { reason: reason.clone() },
    }
}

impl Plan<'_> {
    pub fn platform(&self, platform: Platform) -> &PlatformPlan {
        self.platforms.iter().find(|p| p.platform == platform).expect("cells only have planned platforms")
    }
}
