//! The per-cell test module, rendered from templates/cell_tests.rs.tera.

use tera::{Context, Tera};

use crate::plan::{CellPlan, Status};
use crate::spec::{LoadedModel, PlatformSpec};

const TEMPLATE: &str = include_str!("../../../templates/cell_tests.rs.tera");

/// The checks each cell runs, in order: (name in runtime::checks, doc).
pub const CHECKS: [(&str, &str); 3] = [
    ("runs", "The export shape loads and runs; output names, dtypes and shapes as declared; all finite."),
    ("matches_reference", "Outputs within tolerance of the PyTorch float32 reference."),
    ("dynamic_shapes", "The second input shape runs and matches its reference too."),
];

pub fn render(model: &LoadedModel, cell: &CellPlan, hardware: &PlatformSpec, engine_doc: &str) -> Result<String, String> {
    let platform = cell.platform.name();
    let mut ctx = Context::new();
    ctx.insert("model_type", &model.spec.model_type);
    ctx.insert("platform", platform);
    ctx.insert("status", cell.status.label());
    ctx.insert("reason", &cell.status.reason());
    ctx.insert("reason_doc", &cell.status.reason().map(one_line));
    ctx.insert("engine_doc", engine_doc);
    ctx.insert("cell_const", &platform.to_uppercase());
    ctx.insert("feature", &hardware.feature);
    let ignore_always = match &cell.status {
        Status::Run => None,
        Status::Unsupported(reason) => Some(format!("unsupported: {reason}")),
        Status::KnownIssue(reason) => Some(format!("known issue: {reason}")),
    };
    ctx.insert("ignore_always", &ignore_always.map(|r| rust_literal(&r)));
    ctx.insert(
        "ignore_feature_off",
        &rust_literal(&format!(
            "{platform} is off: run `cargo test -p generated --features {}` where {} is present",
            hardware.feature, hardware.requires
        )),
    );
    let checks: Vec<_> = CHECKS.iter().map(|(name, doc)| serde_json::json!({"name": name, "doc": doc})).collect();
    ctx.insert("checks", &checks);
    Tera::one_off(TEMPLATE, &ctx, false).map_err(|e| format!("templates/cell_tests.rs.tera: {e:?}"))
}

/// A Rust string literal for any text (Debug escaping is valid Rust syntax).
pub fn rust_literal(text: &str) -> String {
    format!("{text:?}")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
