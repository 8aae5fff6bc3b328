//! The models whose fixture pipeline stopped before any platform could run them, grouped by
//! cause: read from the evidence store's `export` entries (each with its run's provenance),
//! never typed. The cause is torch.onnx's where the exporters ran and failed, our harness's
//! where it stopped before them (those models are "not tested here", not the model's issue).

use std::collections::BTreeMap;

use hwmatrix_cell::{Attribution, Stage};
use hwmatrix_specs::plan::Plan;
use hwmatrix_specs::spec::evidence::environment_cause;
use serde::Serialize;

/// One cause and the models it stopped.
#[derive(Debug, Serialize)]
pub struct ExportCause {
    /// Who failed: torch.onnx's exporters (`the exporters`) or `our harness`.
    pub who: String,
    pub cause: String,
    pub models: Vec<String>,
    /// A few-line module that fails the same way (generator/importer/exporter/repros.py).
    pub reproduction: Option<String>,
}

/// The report's causes that minimal reproductions in generator/importer/exporter/repros.py
/// (names separated by ", ") stand for (`python repros.py` prints each with its error; test_repros.py keeps them failing).
const REPRODUCTIONS: &[(&str, &str)] = &[
    (
        "torch.onnx (legacy): no translation of aten::polar",
        "polar",
    ),
    ("complex-valued tensors", "complex_dynamo"),
    (
        "torch.onnx (dynamo): no ONNX translation of aten.unsqueeze",
        "complex_dynamo",
    ),
    (
        "torch.onnx (dynamo): no ONNX translation of aten.cummax",
        "cummax",
    ),
    (
        "torch.onnx (dynamo): no ONNX translation of aten.linalg_qr",
        "linalg_qr",
    ),
    (
        "torch.export: a guard on a data-dependent value",
        "data_dependent_guard",
    ),
    (
        "the graph does not run or match on the second shape (a size baked in)",
        "split_by_counts, loop_over_sequence, list_as_long_as_the_batch",
    ),
];

#[derive(Debug, Serialize)]
pub struct ExportFailures {
    pub what: String,
    pub causes: Vec<ExportCause>,
}

const EXPORTERS: &str = "the exporters";

const WHAT: &str = "Models no platform could run, grouped by what stopped their fixture: the cause of the last exporter attempt of the recipe (generator/importer/exporter/export.py `RECIPE`: the legacy and dynamo exporters, then opset 18 with patches and with batched experts, then torch.export's draft mode) for the exporters' failures, this environment's (a library absent here, our time limit) or our harness's own stop (config, reference) otherwise; from each model's `export` entry in model-specs/evidence, with its whole error and provenance there";

/// The export entries of the plan's models, grouped by cause, largest group first.
pub fn export_failures(plan: &Plan) -> ExportFailures {
    let mut groups: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for model in plan.models.iter().map(|m| m.model) {
        let Some(entry) = model.spec.pipeline_entry(hwmatrix_cell::CheckId::Export) else {
            continue;
        };
        let harness = entry.attribution == Some(Attribution::Harness)
            || matches!(entry.stage, Some(Stage::Config | Stage::Reference));
        let (who, cause) = if entry.attribution == Some(Attribution::Environment) {
            (ENVIRONMENT, environment_cause(entry.error_kind).to_string())
        } else if harness {
            ("our harness", harness_cause(&entry.error))
        } else {
            (EXPORTERS, exporter_cause(&entry.error))
        };
        groups
            .entry((who.to_string(), cause))
            .or_default()
            .push(model.spec.model_type.clone());
    }
    let mut causes: Vec<ExportCause> = groups
        .into_iter()
        .map(|((who, cause), mut models)| ExportCause {
            reproduction: REPRODUCTIONS
                .iter()
                .find(|(c, _)| *c == cause)
                .map(|(_, name)| format!("repros.py {name}")),
            who,
            cause,
            models: {
                models.sort();
                models
            },
        })
        .collect();
    // The exporters' causes first (the models' known issues), then our harness's (not tested).
    causes.sort_by_key(|c| {
        (
            c.who != EXPORTERS,
            std::cmp::Reverse(c.models.len()),
            c.cause.clone(),
        )
    });
    ExportFailures {
        what: WHAT.into(),
        causes,
    }
}

/// The cause of an exporters' failure: that of the recipe's last attempt (the error joins the
/// attempts as `<attempt> exporter: <error>; ...`), in words shared by every model it stopped.
pub fn exporter_cause(error: &str) -> String {
    let (attempt, last) = error
        .rsplit("; ")
        .find(|part| part.contains(" exporter: "))
        .and_then(|part| part.split_once(" exporter: "))
        .unwrap_or(("", error));
    // Draft mode is tried only past a data-dependent guard: where it fails too, the guard is the cause.
    if attempt.contains("draft export") {
        return GUARD.to_string();
    }
    classify(last)
}

const GUARD: &str = "torch.export: a guard on a data-dependent value";

/// A torch.onnx or ONNX Runtime error in the words of its cause.
fn classify(error: &str) -> String {
    let between = |start: &str, end: &str| {
        error
            .split_once(start)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(found, _)| found.to_string())
    };
    if error.contains("GuardOnDataDependentSymNode") {
        GUARD.into()
    } else if error.contains("INTERNAL ASSERT") || error.contains("unordered_map::at") {
        "torch.onnx (legacy): an internal error of the TorchScript tracer".into()
    } else if error.contains("ONNX export of operator Unfold") {
        "torch.onnx (legacy): Unfold with a dynamic input size".into()
    } else if let Some(op) = between("No ONNX function found for <OpOverload(op='", "'") {
        format!("torch.onnx (dynamo): no ONNX translation of {op}")
    } else if let Some(op) = between("Exporting the operator '", "'") {
        format!("torch.onnx (legacy): no translation of {op}")
    } else if error.contains("Complex") || error.contains("complex") {
        "complex-valued tensors".into()
    } else if error.contains("onnxruntime cannot load") {
        "ONNX Runtime refuses the exported graph".into()
    } else if error.contains("fails on shape 2") || error.contains("on shape 2:") {
        "the graph does not run or match on the second shape (a size baked in)".into()
    } else if error.contains("onnxruntime fails on shape") {
        "ONNX Runtime fails to run the exported graph".into()
    } else if error.contains("differs from PyTorch") {
        "the exported graph's output differs from PyTorch's".into()
    } else if error.contains("TorchExportError") {
        "torch.export: another error".into()
    } else if error.contains("ConversionError") {
        "torch.onnx (dynamo): another conversion error".into()
    } else {
        "another error (see the model's entry)".into()
    }
}

const ENVIRONMENT: &str = "this environment";

/// Where our harness stopped, in words shared by the models it stopped.
fn harness_cause(error: &str) -> String {
    if error.contains("parameters after shrinking") || error.contains("parameters with every") {
        "the tiny model stays too large (a width the shrink does not know)".into()
    } else if error.contains("does not read its input") {
        "the tiny model ignores an input the spec declares".into()
    } else if error.contains("do not match") || error.contains("must exceed") {
        "the tiny inputs do not fit the model's image or audio tokens".into()
    } else if error.contains("constant") {
        "every output of the tiny model is constant".into()
    } else {
        "the tiny model does not run with the derived config and inputs".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reproduction_exists_in_repros_py() {
        let repros = include_str!("../../../importer/exporter/repros.py");
        for name in REPRODUCTIONS
            .iter()
            .flat_map(|(_, names)| names.split(", "))
        {
            assert!(
                repros.contains(&format!("Repro(\"{name}\"")),
                "repros.py has no reproduction {name}"
            );
        }
    }

    #[test]
    fn the_last_attempt_names_the_cause() {
        let error = "RuntimeError: legacy exporter: UnsupportedOperatorError: Exporting the operator 'aten::isin' to ONNX opset version 17 is not supported; dynamo exporter: ConversionError: Failed (cause: DispatchError: No ONNX function found for <OpOverload(op='aten.cummax', overload='default')>. x)";
        assert_eq!(
            exporter_cause(error),
            "torch.onnx (dynamo): no ONNX translation of aten.cummax"
        );
        assert_eq!(
            exporter_cause(
                "RuntimeError: legacy exporter: UnsupportedOperatorError: Exporting the operator 'aten::polar' to ONNX opset version 17 is not supported"
            ),
            "torch.onnx (legacy): no translation of aten::polar"
        );
        assert_eq!(
            exporter_cause(
                "x; dynamo, patched exporter: TorchExportError: Failed (cause: GuardOnDataDependentSymNode: Could not guard)"
            ),
            GUARD
        );
        assert_eq!(
            exporter_cause(
                "x; dynamo draft export, patched exporter: PendingUnbackedSymbolNotFound: Pending unbacked symbols {u4}"
            ),
            GUARD
        );
    }
}
