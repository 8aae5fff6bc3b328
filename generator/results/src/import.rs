//! Loading JSON-lines record files into the database.

use std::path::Path;

use hwmatrix_record::{ErrorKind, Record};
use rusqlite::params;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Database;

/// What one file's import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ImportSummary {
    pub lines: usize,
    pub added: usize,
    /// Records the database already had (same line, from this file or another).
    pub duplicates: usize,
    pub rejected: Vec<Rejected>,
}

/// A line that is not a record, with where it is and why.
#[derive(Debug, PartialEq, Eq)]
pub struct Rejected {
    pub line: usize,
    pub why: String,
}

impl Database {
    /// Imports one JSON-lines file in one transaction. Bad lines are
    /// reported in the summary and skipped; the rest still imports.
    pub fn import_file(&mut self, file: &Path) -> Result<ImportSummary, String> {
        let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let source = file.display().to_string();
        let complete = bytes.last().is_none_or(|b| *b == b'\n');
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        let mut summary = ImportSummary {
            lines: lines.len(),
            ..ImportSummary::default()
        };
        let tx = self
            .conn
            .transaction()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT OR IGNORE INTO records (digest, run_id, time, host, model, category, platform, engine_kind,
                     check_name, precision, status, basis, error_kind, median_ms, fixture_key, runtime_version, body, source, source_line)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                )
                .map_err(|e| e.to_string())?;
            for (index, line) in lines.iter().enumerate() {
                let number = index + 1;
                let last = number == lines.len();
                let line = line.trim_end_matches('\r');
                if line.trim().is_empty() {
                    continue;
                }
                let record = match parse(line) {
                    Ok(record) => record,
                    Err(why) => {
                        // A writer killed mid-line leaves the last line without its newline.
                        let why = if last && !complete {
                            format!("torn last line (no newline at the end): {why}")
                        } else {
                            why
                        };
                        summary.rejected.push(Rejected { line: number, why });
                        continue;
                    }
                };
                let fixture_key = record.fixture.as_ref().and_then(|f| f.cache_key.as_deref());
                let median = record.timing.as_ref().map(|t| t.median_ms);
                let digest = hex(&Sha256::digest(line.as_bytes()));
                // The body as the types read it (a legacy record's engine_kind filled in); the digest is the line's.
                let body = serde_json::to_string(&record)
                    .map_err(|e| format!("{source}:{number}: {e}"))?;
                let changed = insert
                    .execute(params![
                        digest,
                        record.run_id,
                        record.time,
                        record.host,
                        record.model,
                        record.category,
                        record.platform.name(),
                        record.engine_kind.name(),
                        record.check,
                        record.precision,
                        record.status.name(),
                        record.basis.name(),
                        record.error_kind.map(ErrorKind::name),
                        median,
                        fixture_key,
                        record.runtime_version,
                        body,
                        source,
                        number as i64,
                    ])
                    .map_err(|e| format!("{source}:{number}: {e}"))?;
                if changed == 1 {
                    summary.added += 1;
                } else {
                    summary.duplicates += 1;
                }
            }
        }
        tx.execute(
            "INSERT INTO imports (file, imported_at, lines, added, duplicates, rejected) VALUES (?1, datetime('now'), ?2, ?3, ?4, ?5)",
            params![source, summary.lines as i64, summary.added as i64, summary.duplicates as i64, summary.rejected.len() as i64],
        )
        .map_err(|e| e.to_string())?;
        tx.commit()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(summary)
    }
}

/// A line as a record: a JSON object that the record's own types read
/// (hwmatrix-record), so a field of the wrong type or a status no gen knows is
/// rejected here, with serde's account of where, not misread by a report.
fn parse(line: &str) -> Result<Record, String> {
    let mut value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let Some(object) = value.as_object_mut() else {
        return Err("not a JSON object".into());
    };
    // Records written before the engine_kind field name their engine only in
    // `engine` ("onnxruntime, CPUExecutionProvider"). Those of "wgpu" were
    // webgpu's whole-model cells before it had an engine; wgpu now runs only
    // the quantization checks, so they describe no cell of today.
    if !object.contains_key("engine_kind") {
        let engine = object.get("engine").and_then(Value::as_str).unwrap_or("");
        let kind = if engine.starts_with("onnxruntime-web") {
            Some("browser")
        } else {
            ["onnxruntime", "libtorch"]
                .into_iter()
                .find(|k| engine.split(',').next().map(str::trim) == Some(*k))
        };
        match kind {
            Some(kind) => {
                object.insert("engine_kind".into(), Value::String(kind.into()));
            }
            None if engine == "wgpu" => return Err("a record of webgpu's whole-model cell from before it had an engine (engine `wgpu`, no engine_kind)".into()),
            None => {}
        }
    }
    serde_json::from_value(value).map_err(|e| format!("not a record: {e}"))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
