//! `gen import --platform P`: a platform's cells run for real, and what they
//! measured goes into the specs. Every cell of P that can run (its model has
//! a fixture, no person set its status on P) is tested with P's cargo
//! feature, today's known issues on P included; a model whose checks all pass
//! loses its entry, one with a failed check gets `imported.platform_issues[P]`:
//! the first failed check and its error, in the cell's own words. So a
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

use hwmatrix_cell::{CHECKS, Platform, Planned};

use crate::import::{MARKER, curated_part, imported_block, imported_yaml};
use crate::plan::{self, Selection};
use crate::spec::Specs;

/// What the records of one model's cell on the platform say.
#[derive(Default)]
struct Measured {
    /// check → (passed, reason)
    checks: BTreeMap<String, (bool, Option<String>)>,
}

pub fn run(root: &Path, specs: &Specs, platform: Platform, models: &[String], out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let selection = Selection { models: models.to_vec(), categories: vec![], platforms: vec![platform] };
    let plan = plan::plan(specs, &selection).map_err(|e| format!("error: {e}"))?;
    // The cells to measure: those that run, and those a measurement made known issues.
    let mut cells = Vec::new();
    for model in &plan.models {
        let cell = &model.cells[0];
        let measured_issue = model.model.imported.as_ref().is_some_and(|i| i.platform_issues.contains_key(&platform));
        let runnable = matches!(cell.planned, Planned::Run) || (measured_issue && matches!(cell.planned, Planned::KnownIssue { .. }));
        if runnable {
            cells.push(model.model);
        }
    }
    if cells.is_empty() {
        let _ = writeln!(out, "gen import --platform {platform}: no cell to measure (every selected model is a known issue, unsupported or has no engine on {platform})");
        return Ok(0);
    }
    let feature = &specs.hardware.platforms[&platform].feature;
    let results = std::env::temp_dir().join(format!("hwmatrix-measure-{platform}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&results);
    std::fs::create_dir_all(&results).map_err(|e| format!("error: {}: {e}", results.display()))?;
    let filters: Vec<String> = cells.iter().map(|m| format!("{}::{}::{platform}::", m.spec.category, m.module)).collect();
    let _ = writeln!(err, "measuring {} models' {platform} cells: cargo test -p generated --features {feature} -- --include-ignored <{} filters>", cells.len(), filters.len());
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root)
        .args(["test", "--quiet", "-p", "generated", "--lib", "--features", feature, "--no-fail-fast", "--", "--include-ignored"])
        .args(&filters)
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

    let mut passed = 0;
    let mut failed = 0;
    let mut changed = 0;
    for model in cells {
        let model_type = &model.spec.model_type;
        let Some(measured) = records.get(model_type.as_str()) else {
            let _ = writeln!(err, "warning: no record of {model_type} on {platform}: its entry is left as it was");
            continue;
        };
        let failure = CHECKS.iter().find_map(|check| match measured.checks.get(*check) {
            Some((true, _)) => None,
            Some((false, reason)) => Some(format!("{check}: {}", reason.clone().unwrap_or_default())),
            None => Some(format!("{check}: no record (the test did not run)")),
        });
        if failure.is_some() { failed += 1 } else { passed += 1 }
        if write_issue(&model.path, platform, failure)? {
            changed += 1;
        }
    }
    let _ = writeln!(
        out,
        "gen import --platform {platform}: {} models measured, {passed} pass every check, {failed} known issues with their errors; {changed} spec files written (run `gen` to regenerate the cells)",
        passed + failed
    );
    Ok(0)
}

fn read_records(dir: &Path, platform: Platform) -> Result<BTreeMap<String, Measured>, String> {
    let mut by_model: BTreeMap<String, Measured> = BTreeMap::new();
    let files: Vec<PathBuf> = std::fs::read_dir(dir).map_err(|e| format!("error: {}: {e}", dir.display()))?.flatten().map(|e| e.path()).collect();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "jsonl")) {
        let text = std::fs::read_to_string(file).map_err(|e| format!("error: {}: {e}", file.display()))?;
        for (n, line) in text.lines().enumerate() {
            let record: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("error: {}:{}: {e}", file.display(), n + 1))?;
            if record["platform"].as_str() != Some(platform.name()) {
                continue;
            }
            let (Some(model), Some(check)) = (record["model"].as_str(), record["check"].as_str()) else { continue };
            let passed = record["status"].as_str() == Some("passed");
            let reason = record["reason"].as_str().map(str::to_string);
            by_model.entry(model.to_string()).or_default().checks.insert(check.to_string(), (passed, reason));
        }
    }
    Ok(by_model)
}

/// Sets or clears the platform's entry in the spec's imported block; true when the file changed.
fn write_issue(path: &Path, platform: Platform, issue: Option<String>) -> Result<bool, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
    let Some(mut imported) = imported_block(&text, path)? else {
        // A spec nobody imported has no imported block to record into.
        return match issue {
            None => Ok(false),
            Some(issue) => Err(format!("error: {}: has no imported block to record its {platform} failure in ({issue}); run `gen import --model <it>` first", path.display())),
        };
    };
    match issue {
        Some(issue) => imported.platform_issues.insert(platform, issue),
        None => imported.platform_issues.remove(&platform),
    };
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

        assert!(write_issue(&copy, Platform::Openvino, Some("runs: cannot load model.onnx".into())).unwrap());
        let with_issue = std::fs::read_to_string(&copy).unwrap();
        assert!(with_issue.starts_with(&curated_part(&original)), "the curated part is never touched");
        let imported = imported_block(&with_issue, &copy).unwrap().unwrap();
        assert_eq!(imported.platform_issues.get(&Platform::Openvino).map(String::as_str), Some("runs: cannot load model.onnx"));
        assert!(!write_issue(&copy, Platform::Openvino, Some("runs: cannot load model.onnx".into())).unwrap(), "the same issue writes nothing");

        assert!(write_issue(&copy, Platform::Openvino, None).unwrap());
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), original);
        std::fs::remove_file(&copy).unwrap();
    }
}
