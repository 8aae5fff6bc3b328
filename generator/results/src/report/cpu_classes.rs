//! The report's CPU classes: precision verdicts of the platforms that
//! compute on the host's CPU, per class of CPU (the instruction-set features
//! that pick ONNX Runtime's and OpenVINO's integer kernels). From the
//! evidence store, not from the runs read: which classes were measured (the
//! store's `cpu-classes/measured.yaml`), which never were, and per
//! architecture and format the verdict on each class measured, so a user
//! reads which int8 keeps which architecture within its bounds on their CPU.

use serde::Serialize;

use hwmatrix_cell::{Planned, cpu_class::CLASSES};
use hwmatrix_specs::plan::Plan;
use hwmatrix_specs::spec::cpu_classes;
use hwmatrix_specs::spec::evidence::Entry;

#[derive(Debug, Default, Serialize)]
pub struct CpuClassesSection {
    /// Each platform and class the store was measured on.
    pub measured: Vec<cpu_classes::MeasuredClass>,
    /// cpu's classes the store was never measured on (of those hwmatrix names).
    pub never_measured: Vec<String>,
    /// Every cell's class-scoped check, with its verdict on each class measured for its platform.
    pub verdicts: Vec<ClassVerdicts>,
}

/// One precision check of one cell, per CPU class measured.
#[derive(Debug, Serialize)]
pub struct ClassVerdicts {
    pub model: String,
    pub platform: String,
    pub engine: String,
    pub check: String,
    /// (class, verdict) for each class measured on the platform, in `measured`'s order.
    pub by_class: Vec<(String, ClassVerdict)>,
}

impl ClassVerdicts {
    /// Whether the classes measured disagree about the check.
    pub fn differs(&self) -> bool {
        self.by_class.windows(2).any(|w| w[0].1 != w[1].1)
    }
}

/// A check's verdict on one class, as the store has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClassVerdict {
    /// No entry holds on the class: it passed there (the store keeps non-passes only).
    Passes,
    /// This class's own entry: a failure on it, and who failed (`engine`, `model`).
    FailsHere { attribution: String },
    /// An entry for every class: it failed where measured and holds until a class measures otherwise.
    FailsEverywhere { attribution: String },
    /// The cell does not run the check (its float32 checks fail, a person's status).
    NotRun,
    /// The class's measurement did not include this check (a format added since).
    NotMeasured,
}

impl ClassVerdict {
    /// How a table cell says it.
    pub fn text(&self) -> String {
        match self {
            ClassVerdict::Passes => "✓".into(),
            ClassVerdict::FailsHere { attribution } => format!("✗ {attribution}, this class"),
            ClassVerdict::FailsEverywhere { attribution } => format!("✗ {attribution}"),
            ClassVerdict::NotRun => "–".into(),
            ClassVerdict::NotMeasured => "· not measured".into(),
        }
    }
}

/// A table's header and rows, every cell text.
pub type TextTable = (Vec<String>, Vec<Vec<String>>);

impl CpuClassesSection {
    /// The classes measured: platform, class, features, the run, and per
    /// class-scoped check its cells passed of those measured.
    pub fn measured_table(&self) -> TextTable {
        let checks: std::collections::BTreeSet<&hwmatrix_cell::CheckId> =
            self.measured.iter().flat_map(|m| m.checks.keys()).collect();
        let mut head: Vec<String> = ["platform", "class", "features", "measured by"]
            .map(String::from)
            .to_vec();
        head.extend(checks.iter().map(|k| format!("{k} passed")));
        let rows = self
            .measured
            .iter()
            .map(|m| {
                let mut row = vec![
                    m.platform.name().to_string(),
                    m.class.clone(),
                    m.cpu.clone(),
                    format!(
                        "run {} on {}, {}",
                        m.run,
                        m.host,
                        m.date.get(..10).unwrap_or(&m.date)
                    ),
                ];
                row.extend(checks.iter().map(|k| {
                    m.checks
                        .get(*k)
                        .map_or(String::new(), |n| format!("{} of {}", n.passed, n.measured))
                }));
                row
            })
            .collect();
        (head, rows)
    }

    /// How many checks' verdicts differ between the classes measured.
    pub fn differing_count(&self) -> usize {
        self.verdicts.iter().filter(|v| v.differs()).count()
    }

    /// The checks of every cell one of whose checks' verdicts differ by class (so
    /// each int8 variant stands beside the others): a column per class measured.
    pub fn differing_table(&self) -> TextTable {
        let cell = |v: &ClassVerdicts| (v.model.clone(), v.platform.clone(), v.engine.clone());
        let cells: std::collections::BTreeSet<(String, String, String)> = self
            .verdicts
            .iter()
            .filter(|v| v.differs())
            .map(cell)
            .collect();
        let differing: Vec<&ClassVerdicts> = self
            .verdicts
            .iter()
            .filter(|v| cells.contains(&cell(v)))
            .collect();
        let classes: std::collections::BTreeSet<&String> = differing
            .iter()
            .flat_map(|v| v.by_class.iter().map(|(c, _)| c))
            .collect();
        let mut head: Vec<String> = ["model", "platform", "engine", "check"]
            .map(String::from)
            .to_vec();
        head.extend(classes.iter().map(|c| c.to_string()));
        let rows = differing
            .iter()
            .map(|v| {
                let mut row = vec![
                    v.model.clone(),
                    v.platform.clone(),
                    v.engine.clone(),
                    v.check.clone(),
                ];
                row.extend(classes.iter().map(|class| {
                    v.by_class
                        .iter()
                        .find(|(c, _)| c == *class)
                        .map_or(String::new(), |(_, verdict)| verdict.text())
                }));
                row
            })
            .collect();
        (head, rows)
    }
}

/// The section, from the plan (its specs' evidence and the store's classes).
pub fn cpu_classes(plan: &Plan) -> Result<CpuClassesSection, String> {
    let file = cpu_classes::read(&plan.specs.root)?;
    let never_measured = CLASSES
        .iter()
        .filter(|c| file.measured(hwmatrix_cell::Platform::Cpu, c).is_none())
        .map(|c| c.to_string())
        .collect();
    let mut verdicts = Vec::new();
    for model in &plan.models {
        for cell in model.model_cells() {
            let classes: Vec<&cpu_classes::MeasuredClass> = file
                .classes
                .iter()
                .filter(|c| c.platform == cell.platform)
                .collect();
            if classes.is_empty() {
                continue;
            }
            for p in &cell.precision_checks {
                let check = hwmatrix_cell::CheckId::Precision(p.precision);
                let entries: Vec<&Entry> = model
                    .model
                    .spec
                    .evidence
                    .iter()
                    .filter(|e| e.is_for(cell.platform, cell.engine.kind()) && e.check == check)
                    .collect();
                let attribution = |e: &Entry| {
                    e.attribution
                        .map_or("does not apply", |a| a.name())
                        .to_string()
                };
                let by_class = classes
                    .iter()
                    .map(|measured| {
                        let class = measured.class.as_str();
                        let own = entries
                            .iter()
                            .find(|e| e.cpu_class.as_deref() == Some(class));
                        let every = entries.iter().find(|e| e.cpu_class.is_none());
                        let verdict = match (own, every) {
                            _ if cell.planned != Planned::Run => ClassVerdict::NotRun,
                            (None, _) if !measured.checks.contains_key(&check) => {
                                ClassVerdict::NotMeasured
                            }
                            (Some(e), _) => ClassVerdict::FailsHere {
                                attribution: attribution(e),
                            },
                            (None, Some(e)) => ClassVerdict::FailsEverywhere {
                                attribution: attribution(e),
                            },
                            (None, None) => ClassVerdict::Passes,
                        };
                        (class.to_string(), verdict)
                    })
                    .collect();
                verdicts.push(ClassVerdicts {
                    model: model.model.spec.model_type.clone(),
                    platform: cell.platform.name().to_string(),
                    engine: cell.engine.kind().name().to_string(),
                    check: check.to_string(),
                    by_class,
                });
            }
        }
    }
    Ok(CpuClassesSection {
        measured: file.classes,
        never_measured,
        verdicts,
    })
}
