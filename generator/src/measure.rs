//! `gen import --platform P`: a platform's cells run for real, and what they
//! measured goes into the specs. Every cell of P that can run (its model has
//! a fixture, no person set its status on P, its engine is built) is tested
//! with the cargo features of P and its engines, today's known issues on P
//! included; a cell whose checks all pass loses its entry, one with a failed
//! check gets `imported.platform_issues[P][engine]`: the first failed check
//! and its error, in the cell's own words. So a
//! platform's known issues are measurements, never typed by hand, and they
//! come back to `run` when a new engine or library fixes them.
//!
//! The cells are the generated tests themselves (`cargo test -p generated`),
//! read back from their result records: the same checks, engine and library
//! as any test run, so `gen import --platform` and `cargo test` cannot
//! disagree about a cell.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use hwmatrix_cell::{CHECKS, EngineKind, Platform, Planned};

use crate::import::{MARKER, curated_part, imported_block, imported_yaml};
use crate::plan::{self, Selection};
use crate::spec::Specs;

/// What the records of one model's cell on the platform say.
#[derive(Default)]
struct Measured {
    /// check → (passed, reason)
    checks: BTreeMap<String, (bool, Option<String>)>,
}

/// `records`: a results folder of a run already made (here or on another
/// machine) to import instead of running the cells.
pub fn run(
    root: &Path,
    specs: &Specs,
    platform: Platform,
    models: &[String],
    records: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let selection = Selection { models: models.to_vec(), categories: vec![], platforms: vec![platform] };
    let plan = plan::plan(specs, &selection).map_err(|e| format!("error: {e}"))?;
    // The cells to measure: those that run, and those a measurement made known issues.
    let mut cells = Vec::new();
    for model in &plan.models {
        for cell in &model.cells {
            let engine = cell.engine.kind();
            let measured_issue = model.model.spec.measured_issues.get(&platform).is_some_and(|m| m.contains_key(&engine));
            let runnable = matches!(cell.planned, Planned::Run) || (measured_issue && matches!(cell.planned, Planned::KnownIssue { .. }));
            // A cell whose float32 checks are a known issue still generates with another graph.
            // (NotTested: a generation exporter failure gen import recorded, which a fixture now built clears.)
            let generates = matches!(
                cell.generation,
                Some(Planned::Run) | Some(Planned::KnownIssue { basis: hwmatrix_cell::Basis::Measured, .. }) | Some(Planned::NotTested { .. })
            );
            if runnable || generates {
                cells.push((model.model, engine));
            }
        }
    }
    // Quantization checks (wgpu kernels) that can run: those of models with a fixture.
    let quantized: Vec<&crate::spec::LoadedModel> = plan
        .models
        .iter()
        .filter(|m| m.quantization.as_ref().is_some_and(|q| q.checks.iter().any(|c| quantization_measurable(m.model, c))))
        .map(|m| m.model)
        .collect();
    if cells.is_empty() && quantized.is_empty() {
        let _ = writeln!(out, "gen import --platform {platform}: no cell to measure (every selected model is a known issue, unsupported or has no engine on {platform})");
        return Ok(0);
    }
    let mut features = vec![specs.hardware.platforms[&platform].feature.clone()];
    for (_, engine) in &cells {
        if let Some(f) = engine.cargo_feature().filter(|f| !features.iter().any(|g| g == f)) {
            features.push(f.to_string());
        }
    }
    let features = features.join(",");
    let records = match records {
        Some(dir) => {
            let records = read_records(dir, platform)?;
            if records.is_empty() {
                return Err(format!("error: {} holds no record of a {platform} check", dir.display()));
            }
            records
        }
        None => {
            let mut filters: Vec<String> = cells.iter().map(|(m, e)| format!("{}::{}::{platform}::{}::", m.spec.category, m.module, e.module(platform))).collect();
            filters.extend(quantized.iter().map(|m| format!("{}::{}::{platform}::{}::", m.spec.category, m.module, EngineKind::Wgpu.module(platform))));
            measure(root, platform, &filters, &features, err)?
        }
    };

    let mut passed = 0;
    let mut failed = 0;
    let mut changed = 0;
    let mut precision_failed = 0;
    let mut precision_only = 0;
    let mut generation_failed = 0;
    for (model, engine) in cells {
        let model_type = &model.spec.model_type;
        let Some(measured) = records.get(&(model_type.clone(), engine)) else {
            let _ = writeln!(err, "warning: no record of {model_type} on {platform} with {}: its entry is left as it was", engine.name());
            continue;
        };
        // Records of a precision check alone (a run of `*_matches_reference`
        // only) measured nothing of the float32 checks: their entry stays.
        let float32_measured = CHECKS.iter().any(|check| measured.checks.contains_key(*check));
        let failure = CHECKS.iter().filter(|_| float32_measured).find_map(|check| match measured.checks.get(*check) {
            Some((true, _)) => None,
            Some((false, reason)) => Some(format!("{check}: {}", reason.clone().unwrap_or_default())),
            None => Some(format!("{check}: no record (the test did not run)")),
        });
        // Precision variants are checks of their own: recorded apart, and only
        // for a cell whose float32 checks pass (else the cell's issue says it all).
        let cell_plan = plan.models.iter().find(|m| m.model.spec.model_type == *model_type).and_then(|m| m.cells.iter().find(|c| c.engine.kind() == engine));
        let float32_passes = if float32_measured { failure.is_none() } else { cell_plan.is_some_and(|c| c.planned == Planned::Run) };
        let mut precision_failures = BTreeMap::new();
        for p in cell_plan.map(|c| c.precision_checks.as_slice()).unwrap_or_default() {
            let outcome = match measured.checks.get(p.precision.check_name()) {
                Some((true, _)) => None,
                Some((false, reason)) => Some(reason.clone().unwrap_or_default()),
                // Not run where the float32 checks ran: the test process died.
                None if float32_measured => Some("no record (the test did not run)".to_string()),
                None => continue,
            };
            precision_failures.insert(p.precision, outcome.filter(|_| float32_passes));
        }
        if !float32_measured {
            let _ = writeln!(err, "note: no record of {model_type}'s float32 checks on {platform} with {}: their entry is left as it was", engine.name());
        }
        if !float32_measured {
            precision_only += 1;
        } else if failure.is_some() {
            failed += 1
        } else {
            passed += 1
        }
        precision_failed += precision_failures.values().filter(|issue| issue.is_some()).count();
        // The `generates` check, where it has a record: its own graph, so recorded whatever the float32 checks say.
        let generation = match (cell_plan.and_then(|c| c.generation.as_ref()), measured.checks.get(hwmatrix_cell::GENERATES)) {
            // No fixture and no exporter error beside it (a known export failure, skipped by gen fixtures): nothing measured.
            (Some(_), Some((false, Some(reason)))) if reason.starts_with("no generation fixture") && !reason.contains(hwmatrix_cell::GENERATION_EXPORT_FAILED) => None,
            (Some(_), Some((true, _))) => Some(None),
            (Some(_), Some((false, reason))) => Some(Some(reason.clone().unwrap_or_default())),
            _ => None,
        };
        // No generation fixture: the exporter's error is the model's, whatever the platform.
        let export_failure = generation.as_ref().map(|g| {
            g.as_deref().and_then(|r| r.split_once(hwmatrix_cell::GENERATION_EXPORT_FAILED)).map(|(_, error)| error.to_string())
        });
        let generation = if matches!(export_failure, Some(Some(_))) { Some(None) } else { generation };
        generation_failed += usize::from(matches!(generation, Some(Some(_))));
        let recording = failure.is_some() || precision_failures.values().any(Option::is_some) || matches!(generation, Some(Some(_))) || matches!(export_failure, Some(Some(_)));
        // One rewrite of the spec per cell: its float32 issue and its precision issues together.
        let written = rewrite_imported(&model.path, recording, |imported| {
            if float32_measured {
                set_issue(&mut imported.platform_issues, platform, engine, failure);
            }
            for (precision, issue) in precision_failures {
                set_issue(&mut imported.precision_issues, platform, precision, issue);
            }
            if let Some(issue) = generation {
                set_issue(&mut imported.generation_issues, platform, engine, issue);
            }
            if let Some(export) = export_failure {
                imported.generation_export = export;
            }
        })?;
        if written {
            changed += 1;
        }
    }
    // Quantization checks are recorded per scheme, each on its own: a rating the
    // evidence contradicts is the spec's issue, not the platform's cell's.
    let (mut quantization_measured, mut quantization_failed) = (0, 0);
    for model in &quantized {
        let model_type = &model.spec.model_type;
        let Some(measured) = records.get(&(model_type.clone(), EngineKind::Wgpu)) else {
            let _ = writeln!(err, "warning: no record of {model_type}'s quantization checks on {platform}: their entries are left as they were");
            continue;
        };
        quantization_measured += 1;
        let plan_checks = plan.models.iter().find(|m| m.model.spec.model_type == *model_type).and_then(|m| m.quantization.as_ref()).map(|q| q.checks.as_slice()).unwrap_or_default();
        // A check without a record did not run (skipped as ignored by a run made without
        // --include-ignored, or its process died): nothing was measured, so its entry stays.
        let failures: Vec<(crate::spec::QuantFormat, Option<String>)> = plan_checks
            .iter()
            .filter(|c| quantization_measurable(model, c))
            .filter_map(|c| {
                let outcome = match measured.checks.get(c.scheme.check_name()) {
                    Some((true, _)) => None,
                    Some((false, reason)) => Some(reason.clone().unwrap_or_default()),
                    None => {
                        let _ = writeln!(err, "warning: no record of {model_type}'s {} on {platform}: its entry is left as it was", c.scheme.check_name());
                        return None;
                    }
                };
                Some((c.scheme, outcome))
            })
            .collect();
        quantization_failed += failures.iter().filter(|(_, f)| f.is_some()).count();
        let recording = failures.iter().any(|(_, f)| f.is_some());
        if rewrite_imported(&model.path, recording, |imported| {
            for (scheme, issue) in failures {
                match issue {
                    Some(issue) => {
                        imported.quantization_issues.insert(scheme, issue);
                    }
                    None => {
                        imported.quantization_issues.remove(&scheme);
                    }
                }
            }
        })? {
            changed += 1;
        }
    }
    let _ = writeln!(
        out,
        "gen import --platform {platform}: {} cells measured, {passed} pass every check, {failed} known issues with their errors, {precision_only} with precision checks only; {precision_failed} precision checks failed, {generation_failed} generates checks failed; quantization checks of {quantization_measured} models measured ({} planned), {quantization_failed} failed; {changed} spec files written (run `gen` to regenerate the cells)",
        passed + failed + precision_only,
        quantized.len()
    );
    Ok(0)
}

/// Whether a quantization check runs, or is a known issue a measurement made (and may clear).
fn quantization_measurable(model: &crate::spec::LoadedModel, check: &crate::plan::QuantizationCheckPlan) -> bool {
    match &check.planned {
        Planned::Run => true,
        Planned::KnownIssue { .. } => model.spec.export.known_issue.is_none() && model.spec.quantization_issues.contains_key(&check.scheme),
        _ => false,
    }
}

/// Runs the tests under `filters` in a scratch results folder and reads their records.
fn measure(root: &Path, platform: Platform, filters: &[String], features: &str, err: &mut dyn Write) -> Result<BTreeMap<(String, EngineKind), Measured>, String> {
    let results = std::env::temp_dir().join(format!("hwmatrix-measure-{platform}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&results);
    std::fs::create_dir_all(&results).map_err(|e| format!("error: {}: {e}", results.display()))?;
    let _ = writeln!(err, "measuring on {platform}: cargo test -p generated --features {features} -- --include-ignored <{} filters>", filters.len());
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root)
        .args(["test", "--quiet", "-p", "generated", "--lib", "--features", features, "--no-fail-fast", "--", "--include-ignored"])
        .args(filters)
        .env("HWMATRIX_RESULTS", &results)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("error: cannot run cargo: {e}"))?;
    // Failed cells make cargo exit 101; that is what is being measured. No record at all is not.
    let records = read_records(&results, platform)?;
    let _ = std::fs::remove_dir_all(&results);
    if records.is_empty() {
        return Err(format!("error: the {platform} cells wrote no result record (cargo exited with {status}); see the build output above"));
    }
    Ok(records)
}

/// The records of the platform's checks, by model and engine.
fn read_records(dir: &Path, platform: Platform) -> Result<BTreeMap<(String, EngineKind), Measured>, String> {
    let mut by_cell: BTreeMap<(String, EngineKind), Measured> = BTreeMap::new();
    let files: Vec<PathBuf> = std::fs::read_dir(dir).map_err(|e| format!("error: {}: {e}", dir.display()))?.flatten().map(|e| e.path()).collect();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "jsonl")) {
        let text = std::fs::read_to_string(file).map_err(|e| format!("error: {}: {e}", file.display()))?;
        for (n, line) in text.lines().enumerate() {
            let record: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("error: {}:{}: {e}", file.display(), n + 1))?;
            if record["platform"].as_str() != Some(platform.name()) {
                continue;
            }
            let (Some(model), Some(check)) = (record["model"].as_str(), record["check"].as_str()) else { continue };
            let Ok(engine) = serde_json::from_value::<EngineKind>(record["engine_kind"].clone()) else { continue };
            let passed = record["status"].as_str() == Some("passed");
            let reason = record["reason"].as_str().map(str::to_string);
            // A model checked as its components has a record per component: a check fails when any
            // component's failed, and keeps the first failure's reason (it names the component).
            let checks = &mut by_cell.entry((model.to_string(), engine)).or_default().checks;
            match checks.get(check) {
                Some((false, _)) => {}
                _ => {
                    checks.insert(check.to_string(), (passed, reason));
                }
            }
        }
    }
    Ok(by_cell)
}

/// Sets (`Some`) or clears (`None`) one entry of a platform's issues in an
/// imported block (`platform_issues` by engine, `precision_issues` by precision).
fn set_issue<K: Ord>(issues: &mut BTreeMap<Platform, BTreeMap<K, String>>, platform: Platform, key: K, issue: Option<String>) {
    match issue {
        Some(issue) => {
            issues.entry(platform).or_default().insert(key, issue);
        }
        None => {
            if let Some(entries) = issues.get_mut(&platform) {
                entries.remove(&key);
                if entries.is_empty() {
                    issues.remove(&platform);
                }
            }
        }
    }
}

/// Applies `change` to the spec's imported block and writes the file if it
/// changed; true when it did. `recording` says whether there is a failure to
/// record (a spec without an imported block cannot hold one).
fn rewrite_imported(path: &Path, recording: bool, change: impl FnOnce(&mut crate::spec::Imported)) -> Result<bool, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
    let Some(mut imported) = imported_block(&text, path)? else {
        // A spec nobody imported has no imported block to record into.
        return if recording {
            Err(format!("error: {}: has no imported block to record a measured failure in; run `gen import --model <it>` first", path.display()))
        } else {
            Ok(false)
        };
    };
    change(&mut imported);
    let new = format!("{}{MARKER}\n{}", curated_part(&text), imported_yaml(&imported)?);
    if new == text {
        return Ok(false);
    }
    std::fs::write(path, new).map_err(|e| format!("error: {}: {e}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_is_written_into_the_imported_block_and_cleared_back_to_the_same_bytes() {
        let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../model-specs/models/text_encoders/bert.yaml");
        let original = std::fs::read_to_string(&spec).unwrap();
        let copy = std::env::temp_dir().join(format!("hwmatrix-measure-test-{}.yaml", std::process::id()));
        std::fs::write(&copy, &original).unwrap();

        let ort = EngineKind::Onnxruntime;
        let write_issue = |path: &Path, platform, engine, issue: Option<String>| {
            rewrite_imported(path, issue.is_some(), |imported| set_issue(&mut imported.platform_issues, platform, engine, issue))
        };
        assert!(write_issue(&copy, Platform::Openvino, ort, Some("runs: cannot load model.onnx".into())).unwrap());
        let with_issue = std::fs::read_to_string(&copy).unwrap();
        assert!(with_issue.starts_with(&curated_part(&original)), "the curated part is never touched");
        let imported = imported_block(&with_issue, &copy).unwrap().unwrap();
        assert_eq!(imported.platform_issues[&Platform::Openvino].get(&ort).map(String::as_str), Some("runs: cannot load model.onnx"));
        assert!(!write_issue(&copy, Platform::Openvino, ort, Some("runs: cannot load model.onnx".into())).unwrap(), "the same issue writes nothing");

        assert!(write_issue(&copy, Platform::Openvino, ort, None).unwrap());
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), original);
        std::fs::remove_file(&copy).unwrap();
    }
}
