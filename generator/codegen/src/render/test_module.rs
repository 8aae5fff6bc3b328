//! The test module of a model on a platform, rendered from
//! templates/cell_tests.rs.tera: a module per engine with one
//! `runtime::cell_tests!` invocation each, so the check names and their
//! bodies live in the runtime only.

use hwmatrix_cell::{CheckId, EngineKind, Planned, Platform};
use tera::{Context, Tera};

use hwmatrix_specs::plan::{CellPlan, QuantizationPlan};
use hwmatrix_specs::spec::{LoadedModel, PlatformSpec};

const TEMPLATE: &str = include_str!("../../../../templates/cell_tests.rs.tera");

/// The test module of one model on one platform: a module per engine cell.
pub fn render(
    model: &LoadedModel,
    platform: Platform,
    cells: &[&CellPlan],
    hardware: &PlatformSpec,
    quantization: Option<&QuantizationPlan>,
) -> Result<String, String> {
    let mut ctx = Context::new();
    ctx.insert("model_type", &model.spec.model_type);
    ctx.insert("module", &model.module);
    ctx.insert("category", &model.spec.category);
    ctx.insert("platform", platform.name());
    let cells: Vec<_> = cells
        .iter()
        .map(|cell| engine_cell(cell, hardware))
        .collect();
    ctx.insert("cells", &cells);
    ctx.insert(
        "quantization",
        &quantization.map(|q| quantization_checks(q, hardware)),
    );
    template()?
        .render("cell_tests", &ctx)
        .map_err(|e| format!("templates/cell_tests.rs.tera: {e:?}"))
}

/// What the template needs of one engine's cell.
fn engine_cell(cell: &CellPlan, hardware: &PlatformSpec) -> serde_json::Value {
    let kind = cell.engine.kind();
    let ignore_always = ignore_reason;
    let precision_checks: Vec<serde_json::Value> = cell
        .precision_checks
        .iter()
        .map(|p| {
            serde_json::json!({
                "test": CheckId::Precision(p.precision).name(),
                "variant": format!("{:?}", p.precision),
                "name": p.precision.name(),
                "ignore_always": ignore_always(&p.planned),
            })
        })
        .collect();
    serde_json::json!({
        "engine_module": kind.module(cell.platform),
        "engine_doc": crate::render::cells::engine_doc(&cell.engine),
        "status": cell.planned.label(),
        "reason": cell.planned.reason(),
        "reason_doc": cell.planned.reason().map(one_line),
        "cell_const": super::cells::cell_const(cell),
        "gate": Gate::of_engine(hardware, kind).name,
        "ignore_always": ignore_always(&cell.planned),
        // Each float32 check apart, where one is planned otherwise than the cell.
        "checks": check_tests(cell),
        "precision_checks": precision_checks,
        // The `generates` check: Some(ignore reason or null) for a generating model's ONNX cells.
        "generation": cell.generation.as_ref().map(|g| serde_json::json!({ "ignore_always": ignore_always(g) })),
    })
}

/// The float32 checks one by one (name, ignore reason or null) where any is
/// planned otherwise than its cell; empty where one `cell_tests!` says all.
fn check_tests(cell: &CellPlan) -> Vec<serde_json::Value> {
    if cell.check_plans.is_empty() {
        return Vec::new();
    }
    CheckId::FLOAT32
        .into_iter()
        .map(|check| {
            let planned = cell
                .check_plans
                .iter()
                .find(|(c, _)| *c == check)
                .map_or(&cell.planned, |(_, p)| p);
            serde_json::json!({ "name": check.name(), "ignore_always": ignore_reason(planned) })
        })
        .collect()
}

/// What the template needs of a model's quantization checks: one test per scheme.
fn quantization_checks(plan: &QuantizationPlan, hardware: &PlatformSpec) -> serde_json::Value {
    let checks: Vec<serde_json::Value> = plan
        .checks
        .iter()
        .map(|c| {
            serde_json::json!({
                "test": CheckId::Quantization(c.scheme).name(),
                "variant": format!("{:?}", c.scheme),
                "expected": c.expected.map(|r| r.name()),
                "ignore_always": ignore_reason(&c.planned),
            })
        })
        .collect();
    serde_json::json!({
        "cell_const": super::cells::quantization_const(plan.platform),
        "gate": Gate::of_quantization(hardware).name,
        "checks": checks,
    })
}

/// The cargo features a test needs, and the `#[ignore]` message of a build
/// without them: written once per platform and engine in platforms.rs, as a
/// macro the runtime's test macros wrap their tests in (an attribute takes only
/// a literal, never a constant), so thousands of tests do not repeat it.
pub struct Gate {
    /// The macro's name (`gate_cpu_torch`).
    pub name: String,
    pub features: Vec<String>,
    pub off: String,
}

impl Gate {
    /// The gate of an engine's cells on a platform: its platform's feature, and the engine's own.
    pub fn of_engine(hardware: &PlatformSpec, kind: EngineKind) -> Gate {
        let features: Vec<String> = std::iter::once(hardware.feature.clone())
            .chain(kind.cargo_feature().map(String::from))
            .collect();
        let needs = match kind.cargo_feature() {
            Some(_) => format!(
                "{} is present, with {}",
                hardware.requires,
                engine_requires(kind)
            ),
            None => format!("{} is present", hardware.requires),
        };
        Gate {
            name: format!("gate_{}", features.join("_")),
            off: format!(
                "{} off: run `cargo test -p generated --features {}` where {needs}",
                features.join(" or "),
                features.join(",")
            ),
            features,
        }
    }

    /// The gate of a platform's quantization checks (wgpu's kernels).
    pub fn of_quantization(hardware: &PlatformSpec) -> Gate {
        let feature = &hardware.feature;
        Gate {
            name: format!("gate_{feature}_wgpu"),
            off: format!(
                "{feature} off: run `cargo test -p generated --features {feature}` where a WebGPU adapter for wgpu is present (Vulkan, e.g. Mesa lavapipe: mesa-vulkan-drivers)"
            ),
            features: vec![feature.clone()],
        }
    }
}

/// The `#[ignore]` reason of a test that never runs (unsupported or known issue), as a Rust literal.
fn ignore_reason(planned: &Planned<String>) -> Option<String> {
    match planned {
        Planned::Run | Planned::NoEngine { .. } => None,
        Planned::Unsupported { reason, .. } => {
            Some(rust_literal(&format!("unsupported: {reason}")))
        }
        Planned::KnownIssue { reason, .. } => Some(rust_literal(&format!("known issue: {reason}"))),
        Planned::NotTested { reason, .. } => Some(rust_literal(reason)),
    }
}

/// What an engine behind its own cargo feature needs, in messages.
pub fn engine_requires(kind: EngineKind) -> &'static str {
    match kind {
        EngineKind::Libtorch => {
            "libtorch (torch 2.13.0, as in the exporter's venv; built with LIBTORCH_USE_PYTORCH=1)"
        }
        EngineKind::Firefox => {
            "Firefox with WebGPU (Debian unstable's, in the root `bash tests/setup.sh firefox` debootstraps, run as root)"
        }
        _ => "its engine",
    }
}

/// The template, parsed once for all the cells (thousands of them).
fn template() -> Result<&'static Tera, String> {
    static PARSED: std::sync::OnceLock<Result<Tera, String>> = std::sync::OnceLock::new();
    PARSED
        .get_or_init(|| {
            let mut tera = Tera::default();
            tera.autoescape_on(vec![]);
            tera.add_raw_template("cell_tests", TEMPLATE)
                .map_err(|e| format!("templates/cell_tests.rs.tera: {e:?}"))?;
            Ok(tera)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A Rust string literal for any text (Debug escaping is valid Rust syntax).
pub fn rust_literal(text: &str) -> String {
    format!("{text:?}")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
