//! Loading JSON-lines record files into the database.

use std::path::Path;

use hwmatrix_record::{ErrorKind, Record};
use rusqlite::params;
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
                let record = match Record::from_line(line) {
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

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
