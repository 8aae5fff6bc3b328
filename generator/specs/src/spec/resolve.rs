//! One rule for every field of a spec: what a person wrote (curated, top
//! level) wins over what `gen derive` derived (`imported:`), which wins over
//! defaults.yaml, field by field (a curated `tiny_config` replaces the
//! imported one whole, so what a person tuned is never mixed with guesses).

use std::collections::BTreeMap;

use super::evidence::Entry;
use super::types::*;
use hwmatrix_cell::Stage;

/// The most `export.max_parameters` may allow: 5M parameters, a 55 MB fixture.
const MAX_PARAMETERS_ALLOWED: u64 = 5_000_000;

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
    let imported = file.imported.clone();
    let imp = imported.as_ref();
    let mut r = Resolver {
        imp,
        sources: BTreeMap::new(),
        errors: Vec::new(),
    };

    let category = r.pick(
        "category",
        file.category,
        imp.and_then(|i| i.category.clone()),
    );
    let architecture = r.pick(
        "architecture",
        file.architecture,
        imp.and_then(|i| i.architecture.clone()),
    );
    let modality = r.pick("modality", file.modality, imp.and_then(|i| i.modality));
    let task = r.pick("task", file.task, imp.and_then(|i| i.task.clone()));
    for (field, present) in [
        ("category", category.is_some()),
        ("architecture", architecture.is_some()),
        ("modality", modality.is_some()),
        ("task", task.is_some()),
    ] {
        if !present {
            r.missing(field);
        }
    }

    let priority = r.priority(file.priority, defaults);

    let export_file = file.export.unwrap_or_default();
    let class = r.pick(
        "export",
        export_file.class,
        imp.map(|i| i.export_class.clone()),
    );
    let (known_issue, known_issue_measured, stage) =
        export_known_issue(export_file.known_issue, &evidence);
    if class.is_none() {
        r.errors.push((
            "export",
            "`export.class` is set neither in the spec nor by `gen derive`".into(),
            "write `export: {class: <transformers class>}`".into(),
        ));
    }

    if export_file
        .max_parameters
        .is_some_and(|limit| limit > MAX_PARAMETERS_ALLOWED)
    {
        r.errors.push((
            "export",
            format!(
                "`export.max_parameters` is over {MAX_PARAMETERS_ALLOWED}: a fixture takes about 11 bytes a parameter in all its formats, and the web engines load every one"
            ),
            "shrink the width the config does reach, or lower the limit".into(),
        ));
    }

    let tiny_config = r.tiny_config(file.tiny_config, &file.tiny_config_overrides);
    let default_io = architecture.as_ref().and_then(|a| defaults.io.get(a));
    let inputs = r.io(
        "inputs",
        file.inputs,
        imp.and_then(|i| i.inputs.clone()),
        default_io.map(|d| &d.inputs),
    );
    let outputs = r.io(
        "outputs",
        file.outputs,
        imp.and_then(|i| i.outputs.clone()),
        default_io.map(|d| &d.outputs),
    );
    for input in &inputs {
        let halves = input.fill == Some(Fill::Halves);
        if halves != input.values.as_ref().is_some_and(|v| v.len() == 2) {
            r.errors.push((
                "inputs",
                format!(
                    "input `{}`: `values` (two of them) goes with `fill: halves`, and only with it",
                    input.name
                ),
                "write `fill: halves, values: [<first half>, <second half>]`, or neither".into(),
            ));
        }
    }
    let shapes = r.shapes(file.shapes, modality, defaults);
    let tolerance = r.tolerance(file.tolerance, defaults);
    let mut precision_tolerances = defaults.precision_tolerances.clone();
    precision_tolerances.extend(file.precision_tolerances);
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let components = r.components(file.components, known_issue.is_some(), &file.model_type);
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let cache = r
        .pick("cache", file.cache, imp.and_then(|i| i.cache.clone()))
        .unwrap_or_default();
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
            attempt: imp.and_then(|i| i.export_attempt.clone()),
            shape_only: imp.is_some_and(|i| i.export_attempt.is_some() && i.export_shape_only),
            known_issue,
            known_issue_measured,
            stage,
            fixed_inputs: export_file.fixed_inputs,
            drawn_weights: export_file.drawn_weights,
        },
        tiny_config,
        inputs,
        outputs,
        shapes,
        tolerance,
        platforms: file.platforms,
        evidence,
        passed: Vec::new(),
        precision_tolerances,
        web_quantization: file.web_quantization,
        components,
        cache,
    };
    Ok((spec, r.sources))
}

/// The export's known issue, whether a run measured it, and its stage: a person's wins over the
/// fixture pipeline's stored failure, so a written diagnosis is never replaced by a guess.
fn export_known_issue(
    written: Option<String>,
    evidence: &[Entry],
) -> (Option<String>, bool, Option<Stage>) {
    let pipeline = evidence
        .iter()
        .find(|e| e.platform.is_none() && e.check == hwmatrix_cell::CheckId::Export);
    match (written, pipeline) {
        // A person's `export.known_issue` is about exporting.
        (Some(k), _) => (Some(k), false, Some(Stage::Export)),
        (None, Some(entry)) => (
            Some(entry.error.clone()),
            true,
            entry.stage.or(Some(Stage::Export)),
        ),
        (None, None) => (None, false, None),
    }
}

/// A resolution in progress: where each field came from so far (for `gen show`), and the
/// fields that could not be resolved (all reported together, not one per run).
struct Resolver<'a> {
    imp: Option<&'a Imported>,
    sources: Sources,
    errors: Vec<FieldError>,
}

impl Resolver<'_> {
    /// The curated value, else the imported one, noting which was taken: a person's word wins.
    fn pick<T>(
        &mut self,
        field: &'static str,
        curated: Option<T>,
        imported: Option<T>,
    ) -> Option<T> {
        match (curated, imported) {
            (Some(v), _) => {
                self.sources.insert(field, Source::Curated);
                Some(v)
            }
            (None, Some(v)) => {
                self.sources.insert(field, Source::Imported);
                Some(v)
            }
            (None, None) => None,
        }
    }

    /// Reports a required field neither the spec nor the import sets, with the import's reason
    /// for leaving it undecided, so the fix is clear.
    fn missing(&mut self, field: &'static str) {
        let why = self
            .imp
            .and_then(|i| i.undecided.clone())
            .map(|u| format!(" (gen derive: {u})"))
            .unwrap_or_default();
        self.errors.push((
            field,
            format!("`{field}` is set neither in the spec nor by `gen derive`{why}"),
            format!("write `{field}:` at the top level of the spec"),
        ));
    }

    /// The spec's priority, else defaults.yaml's: every model has one to order runs by.
    fn priority(&mut self, curated: Option<Priority>, defaults: &DefaultsFile) -> Priority {
        let priority = curated.unwrap_or_else(|| {
            self.sources.insert("priority", Source::Default);
            defaults.priority
        });
        if curated.is_some() {
            self.sources.insert("priority", Source::Curated);
        }
        priority
    }

    /// The tiny config: a curated one whole, else the imported one with the spec's overrides
    /// merged in, so what a person tuned is never mixed with guesses.
    fn tiny_config(
        &mut self,
        curated: BTreeMap<String, serde_yaml::Value>,
        overrides: &BTreeMap<String, serde_yaml::Value>,
    ) -> BTreeMap<String, serde_yaml::Value> {
        // Field by field like the rest: a curated tiny_config replaces the imported one.
        if !curated.is_empty() {
            self.sources.insert("tiny_config", Source::Curated);
            curated
        } else {
            let mut imported = self.imp.map(|i| i.tiny_config.clone()).unwrap_or_default();
            if !imported.is_empty() {
                self.sources.insert("tiny_config", Source::Imported);
            }
            // The import already derived with the overrides; merging again keeps a spec whose
            // overrides changed since (not yet re-imported) consistent with what it says.
            merge_config(&mut imported, overrides);
            if !overrides.is_empty() {
                self.sources.insert("tiny_config", Source::Curated);
            }
            imported
        }
    }

    /// Inputs or outputs: curated, imported, else the architecture's usual ones from defaults.yaml.
    fn io(
        &mut self,
        field: &'static str,
        curated: Option<Vec<TensorSpec>>,
        imported: Option<Vec<TensorSpec>>,
        default: Option<&Vec<TensorSpec>>,
    ) -> Vec<TensorSpec> {
        match self.pick(field, curated, imported) {
            Some(v) => v,
            None => match default {
                Some(d) => {
                    self.sources.insert(field, Source::Default);
                    d.clone()
                }
                None => Vec::new(), // empty: validation says what to write, unless a known issue stops the cells
            },
        }
    }

    /// The shapes: curated, imported, else the modality's from defaults.yaml (empty where none:
    /// validation says what to write).
    fn shapes(
        &mut self,
        curated: Option<Vec<BTreeMap<String, u32>>>,
        modality: Option<Modality>,
        defaults: &DefaultsFile,
    ) -> Vec<BTreeMap<String, u32>> {
        let imported = self.imp.and_then(|i| i.shapes.clone());
        match self.pick("shapes", curated, imported) {
            Some(v) => v,
            None => match modality.and_then(|m| defaults.shapes.get(&m)) {
                Some(d) => {
                    self.sources.insert("shapes", Source::Default);
                    d.clone()
                }
                None => Vec::new(),
            },
        }
    }

    /// The spec's tolerance, else defaults.yaml's: the import never guesses one.
    fn tolerance(
        &mut self,
        curated: Option<ToleranceSpec>,
        defaults: &DefaultsFile,
    ) -> ToleranceSpec {
        match curated {
            Some(t) => {
                self.sources.insert("tolerance", Source::Curated);
                t
            }
            None => {
                self.sources.insert("tolerance", Source::Default);
                defaults.tolerance.clone()
            }
        }
    }

    /// The components `gen derive` measured, where they are those the spec chooses: measurements
    /// of other components would check a model the spec no longer describes.
    fn components(
        &mut self,
        chosen: Vec<ComponentChoice>,
        known_issue: bool,
        model_type: &str,
    ) -> Vec<Component> {
        // Components are chosen by a person and measured by gen derive: the measured ones must be
        // of the chosen, or the spec changed since its import. A model that stops before export has none.
        let measured: Vec<Component> = self.imp.map(|i| i.components.clone()).unwrap_or_default();
        if chosen.is_empty() {
            Vec::new()
        } else if measured
            .iter()
            .map(Component::choice)
            .eq(chosen.iter().cloned())
        {
            self.sources.insert("components", Source::Curated);
            measured
        } else {
            if !known_issue {
                self.errors.push((
                    "components",
                    "the spec's `components` are not those `gen derive` measured (`imported.components`)".into(),
                    format!("run `gen derive --model {model_type}` to measure each component's inputs and outputs"),
                ));
            }
            Vec::new()
        }
    }
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
