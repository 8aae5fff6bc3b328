//! The planner: which models and platforms a run covers, and the status of
//! each cell (model × platform), resolved once from the specs.

use std::collections::BTreeSet;
use std::fmt;

use runtime::Platform;

use crate::spec::{EngineName, LoadedModel, OverrideStatus, Specs, Support, ToleranceSpec};

/// What the user asked for; an empty list means "all".
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub models: Vec<String>,
    pub categories: Vec<String>,
    pub platforms: Vec<Platform>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Expected to work: the tests run it for real.
    Run,
    /// The spec says the platform cannot run it, with why.
    Unsupported(String),
    /// Expected to fail today, with the real error.
    KnownIssue(String),
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Status::Run => "run",
            Status::Unsupported(_) => "unsupported",
            Status::KnownIssue(_) => "known-issue",
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            Status::Run => None,
            Status::Unsupported(r) | Status::KnownIssue(r) => Some(r),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[derive(Debug)]
pub struct CellPlan {
    pub platform: Platform,
    pub status: Status,
    /// The first engine of the platform that this version of the runtime has.
    pub engine: EngineName,
    pub tolerance: ToleranceSpec,
}

#[derive(Debug)]
pub struct ModelPlan<'a> {
    pub model: &'a LoadedModel,
    pub cells: Vec<CellPlan>,
}

#[derive(Debug)]
pub struct Plan<'a> {
    pub specs: &'a Specs,
    pub models: Vec<ModelPlan<'a>>,
    pub platforms: Vec<Platform>,
}

/// Engines the runtime has a cell engine variant for; the others listed in
/// hardware.yaml (libtorch, wgpu) are skipped when choosing a platform's
/// engine. The browser variant exists but fails with "not built yet" until
/// its engine lands, so a webnn/webgpu cell never passes without running.
const IMPLEMENTED_ENGINES: [EngineName; 2] = [EngineName::Onnxruntime, EngineName::Browser];

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
    let platforms: Vec<Platform> = if selection.platforms.is_empty() {
        Platform::ALL.to_vec()
    } else {
        let chosen: BTreeSet<Platform> = selection.platforms.iter().copied().collect();
        chosen.into_iter().collect()
    };
    let models = specs
        .models
        .iter()
        .filter(|m| selection.models.is_empty() || selection.models.contains(&m.spec.model_type))
        .filter(|m| selection.categories.is_empty() || selection.categories.contains(&m.spec.category))
        .map(|model| {
            let cells = platforms.iter().map(|&platform| plan_cell(specs, model, platform)).collect::<Result<_, _>>()?;
            Ok(ModelPlan { model, cells })
        })
        .collect::<Result<Vec<_>, String>>()?;
    if models.is_empty() {
        return Err("the selection matches no model".into());
    }
    Ok(Plan { specs, models, platforms })
}

fn plan_cell(specs: &Specs, model: &LoadedModel, platform: Platform) -> Result<CellPlan, String> {
    let spec = &model.spec;
    let hardware = &specs.hardware.platforms[&platform];
    let engine = hardware
        .engines
        .iter()
        .copied()
        .find(|e| IMPLEMENTED_ENGINES.contains(e))
        .filter(|e| *e != EngineName::Onnxruntime || crate::render::adapter::provider(platform).is_some())
        .ok_or_else(|| format!("hardware.yaml: platform {platform} lists no engine the runtime implements ({IMPLEMENTED_ENGINES:?})"))?;
    let over = spec.platforms.get(&platform);
    let expectation = &specs.architectures.architectures[&spec.architecture].platforms[&platform];
    let status = if let Some(error) = &spec.export.known_issue {
        Status::KnownIssue(format!("{} cannot be exported to ONNX yet: {error}", spec.model_type))
    } else if let Some(o) = over.filter(|o| o.status.is_some()) {
        let reason = o.reason.clone().unwrap_or_default();
        match o.status.expect("filtered") {
            OverrideStatus::Run => Status::Run,
            OverrideStatus::Unsupported => Status::Unsupported(reason),
            OverrideStatus::KnownIssue => Status::KnownIssue(reason),
        }
    } else if expectation.support == Support::No {
        Status::Unsupported(format!(
            "architectures.yaml expects no {} support on {platform}: {} ({})",
            spec.architecture, expectation.notes, expectation.source
        ))
    } else {
        Status::Run
    };
    let tolerance = over.and_then(|o| o.tolerance.clone()).unwrap_or_else(|| spec.tolerance.clone());
    Ok(CellPlan { platform, status, engine, tolerance })
}
