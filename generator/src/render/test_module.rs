//! The per-cell test module, rendered from templates/cell_tests.rs.tera: one
//! `runtime::cell_tests!` invocation, so the check names and their bodies
//! live in the runtime only.

use hwmatrix_cell::Planned;
use tera::{Context, Tera};

use crate::plan::CellPlan;
use crate::spec::{LoadedModel, PlatformSpec};

const TEMPLATE: &str = include_str!("../../../templates/cell_tests.rs.tera");

pub fn render(model: &LoadedModel, cell: &CellPlan, hardware: &PlatformSpec, engine_doc: &str) -> Result<String, String> {
    let platform = cell.platform.name();
    let mut ctx = Context::new();
    ctx.insert("model_type", &model.spec.model_type);
    ctx.insert("module", &model.module);
    ctx.insert("category", &model.spec.category);
    ctx.insert("platform", platform);
    ctx.insert("status", cell.planned.label());
    ctx.insert("reason", &cell.planned.reason());
    ctx.insert("reason_doc", &cell.planned.reason().map(one_line));
    ctx.insert("engine_doc", engine_doc);
    ctx.insert("cell_const", &platform.to_uppercase());
    ctx.insert("feature", &hardware.feature);
    let ignore_always = match &cell.planned {
        Planned::Run | Planned::NoEngine { .. } => None,
        Planned::Unsupported { reason, .. } => Some(format!("unsupported: {reason}")),
        Planned::KnownIssue { reason, .. } => Some(format!("known issue: {reason}")),
    };
    ctx.insert("ignore_always", &ignore_always.map(|r| rust_literal(&r)));
    ctx.insert(
        "ignore_feature_off",
        &rust_literal(&format!(
            "{platform} is off: run `cargo test -p generated --features {}` where {} is present",
            hardware.feature, hardware.requires
        )),
    );
    template()?.render("cell_tests", &ctx).map_err(|e| format!("templates/cell_tests.rs.tera: {e:?}"))
}

/// The template, parsed once for all the cells (thousands of them).
fn template() -> Result<&'static Tera, String> {
    static PARSED: std::sync::OnceLock<Result<Tera, String>> = std::sync::OnceLock::new();
    PARSED
        .get_or_init(|| {
            let mut tera = Tera::default();
            tera.autoescape_on(vec![]);
            tera.add_raw_template("cell_tests", TEMPLATE).map_err(|e| format!("templates/cell_tests.rs.tera: {e:?}"))?;
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
