//! `gen list`: models, categories and platforms, with cell status counts.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::plan::Plan;

pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    let platforms = &plan.platforms;
    let width = plan.models.iter().map(|m| m.model.spec.model_type.len()).max().unwrap_or(5).max(5);

    let _ = writeln!(out, "Models ({}), cell status per platform (run / unsupported / known-issue):", plan.models.len());
    let _ = write!(out, "  {:width$}  {:16}", "model", "category");
    for p in platforms {
        let _ = write!(out, " {:>11}", p.name());
    }
    out.push('\n');
    let mut per_category: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    let mut per_platform: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    let mut totals = [0usize; 3];
    for m in &plan.models {
        let spec = &m.model.spec;
        let _ = write!(out, "  {:width$}  {:16}", spec.model_type, spec.category);
        let category = per_category.entry(&spec.category).or_default();
        category[0] += 1;
        for cell in &m.cells {
            let _ = write!(out, " {:>11}", cell.status.label());
            let slot = match cell.status.label() {
                "run" => 0,
                "unsupported" => 1,
                _ => 2,
            };
            category[slot + 1] += 1;
            per_platform.entry(cell.platform.name()).or_default()[slot] += 1;
            totals[slot] += 1;
        }
        out.push('\n');
    }

    let _ = writeln!(out, "\nCategories ({}):", plan.specs.categories.categories.len());
    for (name, category) in &plan.specs.categories.categories {
        let [models, run, unsupported, known] = per_category.get(name.as_str()).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "  {name:16} {:24} {models:>3} models  {run:>4} run {unsupported:>4} unsupported {known:>4} known-issue",
            category.display_name
        );
    }

    let _ = writeln!(out, "\nPlatforms ({}):", platforms.len());
    for p in platforms {
        let hw = &plan.specs.hardware.platforms[p];
        let [run, unsupported, known] = per_platform.get(p.name()).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:9} {:9} feature {:9} {run:>4} run {unsupported:>4} unsupported {known:>4} known-issue",
            p.name(),
            hw.display_name,
            hw.feature
        );
    }
    let cells: usize = totals.iter().sum();
    let _ = writeln!(out, "\n{cells} cells: {} run, {} unsupported, {} known-issue", totals[0], totals[1], totals[2]);
    out
}
