//! Verbs that were renamed: refused with the new spelling, so an old script
//! or habit learns it rather than doing something else.

use super::Context;

/// `gen import` was two verbs: deriving specs and measuring a platform's cells.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Whatever followed the old verb
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// The options only a measurement takes.
const MEASURE_OPTIONS: [&str; 6] = [
    "--platform",
    "--verify",
    "--stale",
    "--slice",
    "--records",
    "--cpu-flags",
];

pub fn import(cx: &Context, args: &Args) -> Result<i32, String> {
    let measures = !cx.select.platform.is_empty()
        || args
            .rest
            .iter()
            .any(|a| MEASURE_OPTIONS.contains(&a.split('=').next().unwrap_or(a)));
    let (new, what) = if measures {
        (
            "gen measure",
            "measures a platform's cells into the evidence store",
        )
    } else {
        ("gen derive", "derives specs from transformers' registries")
    };
    let given: Vec<String> = cx
        .select
        .platform
        .iter()
        .map(|p| format!("--platform {}", p.name()))
        .chain(cx.select.model.iter().map(|m| format!("--model {m}")))
        .chain(args.rest.iter().cloned())
        .collect();
    Err(format!(
        "error: `gen import` is now two verbs: `gen derive` (specs from transformers' registries) and `gen measure` (a platform's cells into the evidence store)\n  help: `{new}` {what}: run `{}`",
        [new.to_string()]
            .into_iter()
            .chain(given)
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// `gen results import` loads record files into the database.
pub fn results_import() -> String {
    "error: `gen results import` is now `gen results load` (record files into the results database)\n  help: run `gen results load` with the same files".into()
}
