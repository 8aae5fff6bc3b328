//! One rule for every field of a spec: what a person wrote (curated, top
//! level) wins over what `gen import` derived (`imported:`), which wins over
//! defaults.yaml, field by field (a curated `tiny_config` replaces the
//! imported one whole, so what a person tuned is never mixed with guesses).

use std::collections::BTreeMap;

use super::evidence::Entry;
use super::types::*;
use hwmatrix_cell::Stage;

/// Where a resolved field came from (for `gen show`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Curated,
    Imported,
    Default,
}

/// Per top-level field of a resolved spec, where it came from.
pub type Sources = BTreeMap<&'static str, Source>;

/// A field's resolution error: (the field, the message, the fix).
pub type FieldError = (&'static str, String, String);

/// The resolved spec and, per top-level field, where it came from. `evidence`
/// is the model's evidence store (`model-specs/evidence/<model_type>.yaml`):
/// the fixture pipeline's failure there is the export's known issue, unless a
/// person wrote one.
pub fn resolve(
    file: SpecFile,
    defaults: &DefaultsFile,
    evidence: Vec<Entry>,
) -> Result<(ModelSpec, Sources), Vec<FieldError>> {
    let mut sources = BTreeMap::new();
    let mut errors = Vec::new();
    let imported = file.imported.clone();
    let imp = imported.as_ref();

    macro_rules! pick {
        ($field:expr, $curated:expr, $imported:expr) => {{
            match ($curated, $imported) {
                (Some(v), _) => {
                    sources.insert($field, Source::Curated);
                    Some(v)
                }
                (None, Some(v)) => {
                    sources.insert($field, Source::Imported);
                    Some(v)
                }
                (None, None) => None,
            }
        }};
    }
    let missing = |field: &'static str, errors: &mut Vec<(&'static str, String, String)>| {
        let why = imp
            .and_then(|i| i.undecided.clone())
            .map(|u| format!(" (gen import: {u})"))
            .unwrap_or_default();
        errors.push((
            field,
            format!("`{field}` is set neither in the spec nor by `gen import`{why}"),
            format!("write `{field}:` at the top level of the spec"),
        ));
    };

    let category = pick!(
        "category",
        file.category,
        imp.and_then(|i| i.category.clone())
    );
    let architecture = pick!(
        "architecture",
        file.architecture,
        imp.and_then(|i| i.architecture.clone())
    );
    let modality = pick!("modality", file.modality, imp.and_then(|i| i.modality));
    let task = pick!("task", file.task, imp.and_then(|i| i.task.clone()));
    for (field, present) in [
        ("category", category.is_some()),
        ("architecture", architecture.is_some()),
        ("modality", modality.is_some()),
        ("task", task.is_some()),
    ] {
        if !present {
            missing(field, &mut errors);
        }
    }

    let priority = file.priority.unwrap_or_else(|| {
        sources.insert("priority", Source::Default);
        defaults.priority
    });
    if file.priority.is_some() {
        sources.insert("priority", Source::Curated);
    }

    let export_file = file.export.unwrap_or_default();
    let class = pick!(
        "export",
        export_file.class,
        imp.map(|i| i.export_class.clone())
    );
    let pipeline = evidence
        .iter()
        .find(|e| e.platform.is_none() && e.check == super::evidence::EXPORT);
    let (known_issue, known_issue_measured, stage) = match (export_file.known_issue, pipeline) {
        // A person's `export.known_issue` is about exporting.
        (Some(k), _) => (Some(k), false, Some(Stage::Export)),
        (None, Some(entry)) => (
            Some(entry.error.clone()),
            true,
            entry.stage.or(Some(Stage::Export)),
        ),
        (None, None) => (None, false, None),
    };
    if class.is_none() {
        errors.push((
            "export",
            "`export.class` is set neither in the spec nor by `gen import`".into(),
            "write `export: {class: <transformers class>}`".into(),
        ));
    }

    // Field by field like the rest: a curated tiny_config replaces the imported one.
    let tiny_config = if !file.tiny_config.is_empty() {
        sources.insert("tiny_config", Source::Curated);
        file.tiny_config
    } else {
        let mut imported = imp.map(|i| i.tiny_config.clone()).unwrap_or_default();
        if !imported.is_empty() {
            sources.insert("tiny_config", Source::Imported);
        }
        // The import already derived with the overrides; merging again keeps a spec whose
        // overrides changed since (not yet re-imported) consistent with what it says.
        merge_config(&mut imported, &file.tiny_config_overrides);
        if !file.tiny_config_overrides.is_empty() {
            sources.insert("tiny_config", Source::Curated);
        }
        imported
    };
    let default_io = architecture.as_ref().and_then(|a| defaults.io.get(a));
    let mut io = |field: &'static str,
                  curated: Option<Vec<TensorSpec>>,
                  imported: Option<Vec<TensorSpec>>,
                  default: Option<&Vec<TensorSpec>>| {
        match pick!(field, curated, imported) {
            Some(v) => v,
            None => match default {
                Some(d) => {
                    sources.insert(field, Source::Default);
                    d.clone()
                }
                None => Vec::new(), // empty: validation says what to write, unless a known issue stops the cells
            },
        }
    };
    let inputs = io(
        "inputs",
        file.inputs,
        imp.and_then(|i| i.inputs.clone()),
        default_io.map(|d| &d.inputs),
    );
    let outputs = io(
        "outputs",
        file.outputs,
        imp.and_then(|i| i.outputs.clone()),
        default_io.map(|d| &d.outputs),
    );
    let shapes = match pick!("shapes", file.shapes, imp.and_then(|i| i.shapes.clone())) {
        Some(v) => v,
        None => match modality.and_then(|m| defaults.shapes.get(&m)) {
            Some(d) => {
                sources.insert("shapes", Source::Default);
                d.clone()
            }
            None => Vec::new(),
        },
    };
    let tolerance = match file.tolerance {
        Some(t) => {
            sources.insert("tolerance", Source::Curated);
            t
        }
        None => {
            sources.insert("tolerance", Source::Default);
            defaults.tolerance.clone()
        }
    };
    let mut precision_tolerances = defaults.precision_tolerances.clone();
    precision_tolerances.extend(file.precision_tolerances);
    if !errors.is_empty() {
        return Err(errors);
    }
    // Components are chosen by a person and measured by gen import: the measured ones must be
    // of the chosen, or the spec changed since its import. A model that stops before export has none.
    let measured: Vec<Component> = imp.map(|i| i.components.clone()).unwrap_or_default();
    let components = if file.components.is_empty() {
        Vec::new()
    } else if measured
        .iter()
        .map(Component::choice)
        .eq(file.components.iter().cloned())
    {
        sources.insert("components", Source::Curated);
        measured
    } else {
        if known_issue.is_none() {
            errors.push((
                "components",
                "the spec's `components` are not those `gen import` measured (`imported.components`)".into(),
                format!("run `gen import --model {}` to measure each component's inputs and outputs", file.model_type),
            ));
        }
        Vec::new()
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let cache = pick!("cache", file.cache, imp.and_then(|i| i.cache.clone())).unwrap_or_default();
    let spec = ModelSpec {
        model_type: file.model_type,
        category: category.expect("checked"),
        architecture: architecture.expect("checked"),
        modality: modality.expect("checked"),
        task: task.expect("checked"),
        priority,
        checkpoints: file.checkpoints,
        export: Export {
            class: class.expect("checked"),
            exporter: export_file.exporter.unwrap_or_default(),
            known_issue,
            known_issue_measured,
            stage,
            fixed_inputs: export_file.fixed_inputs,
        },
        tiny_config,
        inputs,
        outputs,
        shapes,
        tolerance,
        platforms: file.platforms,
        evidence,
        precision_tolerances,
        web_quantization: file.web_quantization,
        components,
        cache,
    };
    Ok((spec, sources))
}

/// Merges `overrides` into `config`: a mapping merges key by key (a sub-config keeps the keys
/// the override does not name), anything else replaces.
pub fn merge_config(
    config: &mut BTreeMap<String, serde_yaml::Value>,
    overrides: &BTreeMap<String, serde_yaml::Value>,
) {
    fn merge(into: &mut serde_yaml::Value, from: &serde_yaml::Value) {
        match (into, from) {
            (serde_yaml::Value::Mapping(a), serde_yaml::Value::Mapping(b)) => {
                for (k, v) in b {
                    match a.get_mut(k) {
                        Some(existing) => merge(existing, v),
                        None => {
                            a.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (into, from) => *into = from.clone(),
        }
    }
    for (key, value) in overrides {
        match config.get_mut(key) {
            Some(existing) => merge(existing, value),
            None => {
                config.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(yaml: &str) -> BTreeMap<String, serde_yaml::Value> {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn overrides_merge_into_sub_configs_key_by_key() {
        let mut config =
            map("hidden_size: 32\ntext_config: {hidden_size: 32, vocab_size: 1024}\nlist: [1, 2]");
        merge_config(
            &mut config,
            &map("text_config: {vocab_size: 99}\nlist: [3]\npad_token_id: 1"),
        );
        assert_eq!(
            config,
            map(
                "hidden_size: 32\ntext_config: {hidden_size: 32, vocab_size: 99}\nlist: [3]\npad_token_id: 1"
            )
        );
    }
}
