//! Another tool's graph of the same models beside ours: optimum's ONNX export (what
//! transformers.js ships), run by the same cells on fixtures that hold the same weights,
//! inputs and references (`gen fixtures --graph optimum`, whose records carry `graph:
//! optimum`). Each row sets that graph's outcome on a platform and engine beside our
//! graph's cell there, and where they differ, says why.

use std::collections::{BTreeMap, BTreeSet};

use hwmatrix_record::Outcome;
use serde::Serialize;

use super::cells::MatrixCell;
use super::status::Status;
use crate::query::LatestRecord;

/// What made the IR of optimum's fixtures that OpenVINO's `ov_pytorch` engine runs.
const OPTIMUM_INTEL: &str =
    "optimum-intel (main_export of the saved tiny model, optimum's task), OpenVINO IR";

/// The graph's rows and their tally.
#[derive(Debug, Default, Serialize)]
pub struct GraphComparison {
    /// The tool, as its records' `graph` names it (`optimum`); empty where none was run.
    pub graph: String,
    /// Architectures with a record on the graph (its export failed or it ran).
    pub architectures: usize,
    /// Of them, those whose graph the tool made (the others' checks name its export error).
    pub exported: usize,
    /// Rows whose two outcomes differ, by cause, most first.
    pub causes: Vec<(String, usize)>,
    pub rows: Vec<GraphRow>,
}

/// One model on one platform and engine, on both graphs.
#[derive(Debug, Serialize)]
pub struct GraphRow {
    pub model: String,
    pub platform: String,
    pub engine: String,
    /// Our graph's cell (this run's records, else the evidence store's).
    pub ours: Status,
    /// The other graph's float32 checks: failed if one failed, passed if all that ran passed.
    pub theirs: Status,
    /// The other graph's precision formats that passed, of those that ran.
    pub formats_passed: usize,
    pub formats_run: usize,
    /// What made the other graph (the fixture's source: tool, task, opset, outputs it lacks).
    pub made_by: Option<String>,
    /// Where the outcomes differ: why (the other graph's first failure, or ours).
    pub cause: Option<String>,
}

/// The rows of `graph`'s records (`on_graph`: their newest per check), each beside our cell.
pub(super) fn compare(
    graph: &str,
    on_graph: &[LatestRecord],
    ours: &[MatrixCell],
) -> GraphComparison {
    let mut by_cell: BTreeMap<(&str, &str, &str), Vec<&LatestRecord>> = BTreeMap::new();
    for record in on_graph
        .iter()
        .filter(|r| r.basis == hwmatrix_record::Basis::Measured)
    {
        by_cell
            .entry((&record.model, &record.platform, &record.engine_kind))
            .or_default()
            .push(record);
    }
    let ours: BTreeMap<(&str, &str, &str), &MatrixCell> = ours
        .iter()
        .map(|c| {
            (
                (c.model.as_str(), c.platform.as_str(), c.engine.as_str()),
                c,
            )
        })
        .collect();
    let mut rows = Vec::new();
    let (mut models, mut exported) = (BTreeSet::new(), BTreeSet::new());
    for ((model, platform, engine), records) in by_cell {
        let float32: Vec<&&LatestRecord> = records
            .iter()
            .filter(|r| r.precision == "float32" && r.check != "generates")
            .collect();
        let formats: Vec<&&LatestRecord> = records
            .iter()
            .filter(|r| r.precision != "float32")
            .collect();
        let export_failed = records
            .iter()
            .any(|r| r.error_kind == Some(hwmatrix_record::ErrorKind::ExportFailed));
        models.insert(model);
        if !export_failed {
            exported.insert(model);
        }
        let first_failure = float32.iter().find(|r| r.status == Outcome::Failed);
        let theirs = match first_failure {
            Some(_) => Status::Failed,
            None if float32.is_empty() => Status::NoEvidence,
            None => Status::Passed,
        };
        let cell = ours.get(&(model, platform, engine));
        let ours_status = cell.map_or(Status::NoEvidence, |c| c.status);
        let made_by = match engine {
            // The IR the `ov_pytorch` engine runs on optimum's fixtures is optimum-intel's
            // conversion of the saved tiny model (openvino_pytorch.py), not optimum's ONNX graph.
            "openvino_pytorch" if graph == "optimum" => Some(OPTIMUM_INTEL.to_string()),
            _ => records
                .iter()
                .find_map(|r| r.body.fixture.as_ref().map(|f| f.source.clone())),
        };
        let cause = (passes(ours_status) != passes(theirs)).then(|| match first_failure {
            Some(r) => format!(
                "theirs: {} ({})",
                r.error_kind.map_or("failed", |k| k.name()),
                first_line(r.body.reason.as_deref().unwrap_or(""))
            ),
            None => format!(
                "ours: {}",
                cell.and_then(|c| c.stage.clone().or(c.error_kind.clone()))
                    .unwrap_or_else(|| ours_status.label().to_string())
            ),
        });
        rows.push(GraphRow {
            model: model.to_string(),
            platform: platform.to_string(),
            engine: engine.to_string(),
            ours: ours_status,
            theirs,
            formats_passed: formats
                .iter()
                .filter(|r| r.status == Outcome::Passed)
                .count(),
            formats_run: formats.len(),
            made_by,
            cause,
        });
    }
    let mut causes: BTreeMap<String, usize> = BTreeMap::new();
    for cause in rows.iter().filter_map(|r| r.cause.as_deref()) {
        *causes.entry(cause_kind(cause)).or_default() += 1;
    }
    let mut causes: Vec<(String, usize)> = causes.into_iter().collect();
    causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    GraphComparison {
        graph: if rows.is_empty() {
            String::new()
        } else {
            graph.to_string()
        },
        architectures: models.len(),
        exported: exported.len(),
        causes,
        rows,
    }
}

impl GraphComparison {
    /// The table's columns, as both formats show them.
    pub const COLUMNS: [&'static str; 8] = [
        "model",
        "platform",
        "engine",
        "ours",
        "theirs",
        "formats passed",
        "made by",
        "why they differ",
    ];

    /// Each row as the table's text, differing rows first (the rest agree).
    pub fn table(&self) -> Vec<Vec<String>> {
        let mut rows: Vec<&GraphRow> = self.rows.iter().collect();
        rows.sort_by_key(|r| r.cause.is_none());
        rows.iter()
            .map(|r| {
                vec![
                    r.model.clone(),
                    r.platform.clone(),
                    r.engine.clone(),
                    r.ours.label().to_string(),
                    r.theirs.label().to_string(),
                    format!("{}/{}", r.formats_passed, r.formats_run),
                    r.made_by.clone().unwrap_or_default(),
                    r.cause.clone().unwrap_or_default(),
                ]
            })
            .collect()
    }

    /// The tally's line: how many architectures, exported, and the causes of differences.
    pub fn summary(&self) -> String {
        let differ: usize = self.causes.iter().map(|(_, n)| n).sum();
        let causes: Vec<String> = self
            .causes
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        format!(
            "{} architectures run on {}'s graph ({} of them exported by it); {} of {} cells differ from ours{}",
            self.architectures,
            self.graph,
            self.exported,
            differ,
            self.rows.len(),
            if causes.is_empty() {
                String::new()
            } else {
                format!(": {}", causes.join(", "))
            }
        )
    }
}

/// Whether a status counts as the model giving the right answer there.
fn passes(status: Status) -> bool {
    status == Status::Passed
}

/// A cause's kind, for the tally: which side and what kind (`theirs: export-failed`).
fn cause_kind(cause: &str) -> String {
    cause.split(" (").next().unwrap_or(cause).to_string()
}

/// A reason's first line, short enough for a table.
fn first_line(reason: &str) -> String {
    hwmatrix_specs::text::shorten(reason.lines().next().unwrap_or_default(), 160)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_tallied_by_side_and_kind() {
        assert_eq!(
            cause_kind("theirs: out-of-tolerance (output x: ...)"),
            "theirs: out-of-tolerance"
        );
        assert_eq!(cause_kind("ours: export"), "ours: export");
        assert_eq!(first_line("a\nb"), "a");
        assert!(first_line(&"x".repeat(300)).ends_with('…'));
    }
}
