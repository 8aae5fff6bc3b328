//! `gen list`: models, categories and platforms, with planned cell status counts.

use std::collections::BTreeMap;
use std::fmt::Write;

use hwmatrix_specs::plan::Plan;

/// The planned statuses, in the order the counts are printed.
const LABELS: [&str; 5] = [
    "run",
    "no-engine",
    "unsupported",
    "known-issue",
    "not-tested",
];

fn slot(label: &str) -> usize {
    LABELS
        .iter()
        .position(|l| *l == label)
        .expect("every planned label is listed")
}

fn counts(c: &[usize; 5]) -> String {
    LABELS
        .iter()
        .zip(c)
        .map(|(label, n)| format!("{n:>4} {label}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    let width = plan
        .models
        .iter()
        .map(|m| m.model.spec.model_type.len())
        .max()
        .unwrap_or(5)
        .max(5);

    let _ = writeln!(
        out,
        "Models ({}), planned cell status per platform and engine ({}):",
        plan.models.len(),
        LABELS.join(" / ")
    );
    let _ = write!(out, "  {:width$}  {:16}", "model", "category");
    for p in &plan.platforms {
        for e in &p.engines {
            let _ = write!(
                out,
                " {:>14}",
                format!("{}/{}", p.platform.name(), e.kind().module(p.platform))
            );
        }
    }
    out.push('\n');
    let mut per_category: BTreeMap<&str, (usize, [usize; 5])> = BTreeMap::new();
    let mut per_engine: BTreeMap<(hwmatrix_cell::Platform, hwmatrix_cell::EngineKind), [usize; 5]> =
        BTreeMap::new();
    let mut totals = [0usize; 5];
    for m in &plan.models {
        let spec = &m.model.spec;
        let _ = write!(out, "  {:width$}  {:16}", spec.model_type, spec.category);
        let category = per_category.entry(&spec.category).or_default();
        category.0 += 1;
        for cell in m.model_cells() {
            let label = cell.planned.label();
            let _ = write!(out, " {label:>14}");
            category.1[slot(label)] += 1;
            per_engine
                .entry((cell.platform, cell.engine.kind()))
                .or_default()[slot(label)] += 1;
            totals[slot(label)] += 1;
        }
        out.push('\n');
    }

    let _ = writeln!(
        out,
        "\nCategories ({}):",
        plan.specs.categories.categories.len()
    );
    for (name, category) in &plan.specs.categories.categories {
        let (models, c) = per_category.get(name.as_str()).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "  {name:16} {:24} {models:>3} models {}",
            category.display_name,
            counts(&c)
        );
    }

    let _ = writeln!(
        out,
        "\nPlatforms ({}), a line per engine:",
        plan.platforms.len()
    );
    for p in &plan.platforms {
        let hw = &plan.specs.hardware.platforms[&p.platform];
        for e in &p.engines {
            let c = per_engine
                .get(&(p.platform, e.kind()))
                .copied()
                .unwrap_or_default();
            let engine = crate::render::cells::engine_doc(e);
            let _ = writeln!(
                out,
                "  {:9} {:9} {:7} {} | {engine}",
                p.platform.name(),
                hw.display_name,
                e.kind().module(p.platform),
                counts(&c)
            );
        }
    }
    let _ = writeln!(out, "\n{}", hwmatrix_specs::plan::stages_by_category(plan));
    let cells: usize = totals.iter().sum();
    let _ = writeln!(out, "\n{cells} cells: {}", counts(&totals).trim_start());
    out
}
