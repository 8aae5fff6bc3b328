//! The results database: the JSON-lines records of every run, from every
//! machine, kept in one SQLite file with their history.
//!
//! A record is identified by the SHA-256 of its line, so importing a file
//! twice, or the same records reaching us through two merged files, adds
//! nothing, while records of other runs and hosts (which differ at least in
//! `run_id` or `host`) all stay. Each record keeps its whole JSON body: the
//! indexed columns serve queries, the body serves everything a report shows.
//!
//! SQLite (rusqlite's bundled build) rather than DuckDB: both were built here
//! on 2 cores (docs/measurements.md, "Why SQLite"); the report reads a few
//! thousand latest rows, not analytics over millions, so DuckDB's columnar
//! engine buys nothing for its far longer C++ build.

mod import;
mod query;
pub mod report;

pub use import::{ImportSummary, Rejected};
pub use query::{LatestRecord, Run};

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// The default database: `results/hwmatrix.sqlite` in the checkout, next to the records.
pub const DEFAULT_FILE: &str = "hwmatrix.sqlite";

/// Bumped when the schema changes; an older file is refused with what to do.
/// 2: bodies are read by hwmatrix-record's types (version 1 took any JSON object).
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    time TEXT NOT NULL,
    host TEXT NOT NULL,
    model TEXT NOT NULL,
    category TEXT NOT NULL,
    platform TEXT NOT NULL,
    engine_kind TEXT NOT NULL,
    check_name TEXT NOT NULL,
    precision TEXT NOT NULL,
    status TEXT NOT NULL,
    basis TEXT,
    error_kind TEXT,
    median_ms REAL,
    fixture_key TEXT,
    runtime_version TEXT,
    body TEXT NOT NULL,
    -- Where it was first imported from.
    source TEXT NOT NULL,
    source_line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS records_cell ON records (model, platform, engine_kind, check_name, precision, time);
CREATE INDEX IF NOT EXISTS records_run ON records (run_id);
CREATE TABLE IF NOT EXISTS imports (
    id INTEGER PRIMARY KEY,
    file TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    lines INTEGER NOT NULL,
    added INTEGER NOT NULL,
    duplicates INTEGER NOT NULL,
    rejected INTEGER NOT NULL
);
";

/// An open results database.
pub struct Database {
    conn: Connection,
    path: PathBuf,
}

impl Database {
    /// Opens (creating it and its folder if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Database, String> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let db = Database {
            conn,
            path: path.to_path_buf(),
        };
        db.migrate()?;
        db.register_recency()?;
        Ok(db)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&self) -> Result<(), String> {
        self.conn
            .execute_batch(SCHEMA)
            .map_err(|e| self.error("creating the schema", e))?;
        let found: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .ok();
        match found.map(|v| v.parse::<i64>()) {
            None => {
                self.conn
                    .execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                        [SCHEMA_VERSION.to_string()],
                    )
                    .map_err(|e| self.error("writing the schema version", e))?;
                Ok(())
            }
            Some(Ok(SCHEMA_VERSION)) => Ok(()),
            Some(other) => Err(format!(
                "{}: schema version {other:?}, this gen reads {SCHEMA_VERSION}; load the records again into a new file (gen results load --db NEW.sqlite results/*.jsonl)",
                self.path.display()
            )),
        }
    }

    /// `recency(basis, time)` in SQL: the rank of a record among its check's records, as
    /// `gen measure` ranks them too ([`hwmatrix_record::recency`]).
    fn register_recency(&self) -> Result<(), String> {
        use rusqlite::functions::FunctionFlags;
        self.conn
            .create_scalar_function(
                "recency",
                2,
                FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
                |cx| {
                    let basis: String = cx.get(0)?;
                    let time: String = cx.get(1)?;
                    Ok(hwmatrix_record::recency(&basis, &time))
                },
            )
            .map_err(|e| self.error("registering the function recency", e))
    }

    fn error(&self, doing: &str, e: rusqlite::Error) -> String {
        format!("{}: {doing}: {e}", self.path.display())
    }

    /// How many records the database holds.
    pub fn record_count(&self) -> Result<u64, String> {
        self.conn
            .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
            .map_err(|e| self.error("counting records", e))
    }
}

#[cfg(test)]
mod tests;
