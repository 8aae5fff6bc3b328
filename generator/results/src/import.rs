//! Loading JSON-lines record files into the database.

use std::path::Path;

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

/// The fields every record has; a line without one of them is rejected.
const REQUIRED: [&str; 9] = ["run_id", "time", "host", "model", "category", "platform", "engine_kind", "check", "status"];

impl Database {
    /// Imports one JSON-lines file in one transaction. Bad lines are
    /// reported in the summary and skipped; the rest still imports.
    pub fn import_file(&mut self, file: &Path) -> Result<ImportSummary, String> {
        let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let source = file.display().to_string();
        let complete = bytes.last().is_none_or(|b| *b == b'\n');
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        let mut summary = ImportSummary { lines: lines.len(), ..ImportSummary::default() };
        let tx = self.conn.transaction().map_err(|e| format!("{}: {e}", self.path.display()))?;
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
                        let why = if last && !complete { format!("torn last line (no newline at the end): {why}") } else { why };
                        summary.rejected.push(Rejected { line: number, why });
                        continue;
                    }
                };
                let text = |key: &str| record.get(key).and_then(Value::as_str).map(str::to_string);
                let fixture_key = record.pointer("/fixture/cache_key").and_then(Value::as_str);
                let median = record.pointer("/timing/median_ms").and_then(Value::as_f64);
                let digest = hex(&Sha256::digest(line.as_bytes()));
                let changed = insert
                    .execute(params![
                        digest,
                        text("run_id"),
                        text("time"),
                        text("host"),
                        text("model"),
                        text("category"),
                        text("platform"),
                        text("engine_kind"),
                        text("check"),
                        text("precision").unwrap_or_else(|| "float32".into()),
                        text("status"),
                        text("basis"),
                        text("error_kind"),
                        median,
                        fixture_key,
                        text("runtime_version"),
                        line,
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
        tx.commit().map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(summary)
    }
}

/// A line as a record: a JSON object with every required field a string.
fn parse(line: &str) -> Result<Value, String> {
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
            ["onnxruntime", "libtorch"].into_iter().find(|k| engine.split(',').next().map(str::trim) == Some(*k))
        };
        match kind {
            Some(kind) => {
                object.insert("engine_kind".into(), Value::String(kind.into()));
            }
            None if engine == "wgpu" => return Err("a record of webgpu's whole-model cell from before it had an engine (engine `wgpu`, no engine_kind)".into()),
            None => {}
        }
    }
    let missing: Vec<&str> = REQUIRED.iter().copied().filter(|k| value.get(*k).and_then(Value::as_str).is_none()).collect();
    if !missing.is_empty() {
        return Err(format!("not a record: no {}", missing.join(", ")));
    }
    Ok(value)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
