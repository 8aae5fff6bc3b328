//! The test module of a model on a platform, rendered from
//! templates/cell_tests.rs.tera: a module per engine with its checks as
//! `runtime::checks!` invocations, so the tests' bodies live in the runtime
//! only and every family of checks becomes a test the same way.

use hwmatrix_cell::{CheckId, EngineKind, Planned, Platform};
use tera::{Context, Tera};

use hwmatrix_specs::plan::CellPlan;
use hwmatrix_specs::spec::{LoadedModel, PlatformSpec};

const TEMPLATE: &str = include_str!("../../../../templates/cell_tests.rs.tera");

/// The test module of one model on one platform: a module per engine cell.
pub fn render(
    model: &LoadedModel,
    platform: Platform,
    cells: &[&CellPlan],
    hardware: &PlatformSpec,
) -> Result<String, String> {
    let mut ctx = Context::new();
    ctx.insert("model_type", &model.spec.model_type);
    ctx.insert("module", &model.module);
    ctx.insert("category", &model.spec.category);
    ctx.insert("platform", platform.name());
    let graph_cells: Vec<_> = cells
        .iter()
        .filter(|cell| !cell.is_kernel())
        .map(|cell| engine_cell(cell, hardware))
        .collect();
    ctx.insert("cells", &graph_cells);
    ctx.insert(
        "quantization",
        &cells
            .iter()
            .find(|cell| cell.is_kernel())
            .map(|cell| kernel_checks(cell, hardware)),
    );
    template()?
        .render("cell_tests", &ctx)
        .map_err(|e| format!("templates/cell_tests.rs.tera: {e:?}"))
}

/// What the template needs of one engine's cell: its checks in the order its tests list
/// them (the float32 checks, each precision format, `generates`), as `runtime::checks!`
/// invocations: one per run of neighbours planned alike (gated, or ignored for one reason).
fn engine_cell(cell: &CellPlan, hardware: &PlatformSpec) -> serde_json::Value {
    let kind = cell.engine.kind();
    let float32 = CheckId::FLOAT32.into_iter().map(|check| {
        let planned = cell
            .check_plans
            .iter()
            .find(|(c, _)| *c == check)
            .map_or(&cell.planned, |(_, p)| p);
        (check, planned)
    });
    let precision = cell
        .precision_checks
        .iter()
        .map(|p| (CheckId::Precision(p.precision), &p.planned));
    let generation = cell.generation.iter().map(|g| (CheckId::Generates, g));
    serde_json::json!({
        "engine_module": kind.module(cell.platform),
        "engine_doc": crate::render::cells::engine_doc(&cell.engine),
        "status": cell.planned.label(),
        "reason": cell.planned.reason(),
        "reason_doc": cell.planned.reason().map(one_line),
        "cell_const": super::cells::cell_const(cell),
        "gate": Gate::of_engine(hardware, kind).name,
        "invocations": invocations(float32.chain(precision).chain(generation)),
    })
}

/// What the template needs of a kernel cell: one test per scheme.
fn kernel_checks(cell: &CellPlan, hardware: &PlatformSpec) -> serde_json::Value {
    let checks = cell
        .quantization
        .iter()
        .map(|c| (CheckId::Quantization(c.scheme), &c.planned));
    serde_json::json!({
        "cell_const": super::cells::cell_const(cell),
        "gate": Gate::of_quantization(hardware).name,
        "invocations": invocations(checks),
    })
}

/// Checks in order, grouped into `runtime::checks!` invocations: neighbours with the same
/// ignore reason (or none: gated) share one. Each check is its test's name and its
/// [`CheckId`] as Rust (`int8_matches_reference = Precision(Precision::Int8)`).
fn invocations<'a>(
    checks: impl Iterator<Item = (CheckId, &'a Planned<String>)>,
) -> Vec<serde_json::Value> {
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for (check, planned) in checks {
        let ignore = ignore_reason(planned);
        let test = format!("{} = {}", check.name(), check_rust(check));
        match groups.last_mut() {
            Some((last, tests)) if *last == ignore => tests.push(test),
            _ => groups.push((ignore, vec![test])),
        }
    }
    groups
        .into_iter()
        .map(|(ignore, tests)| serde_json::json!({ "ignore": ignore, "checks": tests.join(", ") }))
        .collect()
}

/// A check as the Rust `runtime::checks!` takes: a [`CheckId`] variant, with its format
/// or scheme where it has one.
fn check_rust(check: CheckId) -> String {
    match check {
        CheckId::Precision(precision) => format!("Precision(Precision::{precision:?})"),
        CheckId::Quantization(scheme) => format!("Quantization(QuantScheme::{scheme:?})"),
        other => format!("{other:?}"),
    }
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
