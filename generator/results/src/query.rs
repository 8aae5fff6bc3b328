//! What reports read: the latest record of each check, and the runs.

use hwmatrix_record::{Basis, ErrorKind, Outcome, Record};
use rusqlite::{Row, params};

use crate::Database;

/// The newest record of a check (of the runs read), as a report cites it.
#[derive(Clone, Debug)]
pub struct LatestRecord {
    /// The first 16 hex digits of the record's SHA-256: how reports name it.
    pub record: String,
    pub run_id: String,
    pub time: String,
    pub host: String,
    pub model: String,
    pub category: String,
    pub platform: String,
    pub engine_kind: String,
    pub check: String,
    pub precision: String,
    pub status: Outcome,
    pub basis: Basis,
    pub error_kind: Option<ErrorKind>,
    pub median_ms: Option<f64>,
    pub fixture_key: Option<String>,
    pub runtime_version: Option<String>,
    /// The whole record, read by its own types.
    pub body: Box<Record>,
    /// A model checked as its components: this check's record of each
    /// component, (component, status), the cited record among them.
    pub components: Vec<(String, Outcome)>,
}

/// One run: the records of one test process (or of `HWMATRIX_RUN_ID`).
#[derive(Clone, Debug)]
pub struct Run {
    pub run_id: String,
    pub hosts: Vec<String>,
    pub first: String,
    pub last: String,
    pub records: u64,
}

const COLUMNS: &str = "substr(digest, 1, 16), body";

fn evidence(row: &Row) -> rusqlite::Result<LatestRecord> {
    let text: String = row.get(1)?;
    // Every body was read by the same types when it was imported; one that no
    // longer reads is a database from another gen (see SCHEMA_VERSION).
    let body: Record = serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(LatestRecord::of(row.get(0)?, body))
}

impl LatestRecord {
    /// A record as reports cite it, named `record` (16 hex digits of its digest).
    pub fn of(record: String, body: Record) -> LatestRecord {
        LatestRecord {
            record,
            run_id: body.run_id.clone(),
            time: body.time.clone(),
            host: body.host.clone(),
            model: body.model.clone(),
            category: body.category.clone(),
            platform: body.platform.name().to_string(),
            engine_kind: body.engine_kind.name().to_string(),
            check: body.check.clone(),
            precision: body.precision.clone(),
            status: body.status,
            basis: body.basis,
            error_kind: body.error_kind,
            median_ms: body.timing.as_ref().map(|t| t.median_ms),
            fixture_key: body.fixture.as_ref().and_then(|f| f.cache_key.clone()),
            runtime_version: Some(body.runtime_version.clone()),
            body: Box::new(body),
            components: Vec::new(),
        }
    }
}

/// One check of a model checked as its components has a record per
/// component; the cell's check is what they say together: failed when one
/// failed (citing the first that failed), else the first's status, with a
/// latency that is the sum of the components' (a pipeline runs each once).
/// Where the same check also has a whole-model record (a ledger's "known
/// issue" from before the model was split), the newer side wins.
fn fold_components(latest: Vec<LatestRecord>) -> Vec<LatestRecord> {
    let key = |e: &LatestRecord| {
        (
            e.model.clone(),
            e.platform.clone(),
            e.engine_kind.clone(),
            e.check.clone(),
            e.precision.clone(),
        )
    };
    let mut folded: Vec<LatestRecord> = Vec::with_capacity(latest.len());
    let mut rows = latest.into_iter().peekable();
    while let Some(first) = rows.next() {
        let mut group = vec![first];
        while rows.peek().is_some_and(|next| key(next) == key(&group[0])) {
            group.extend(rows.next());
        }
        let component_of = |e: &LatestRecord| e.body.component.clone();
        let (parts, whole): (Vec<LatestRecord>, Vec<LatestRecord>) =
            group.into_iter().partition(|e| component_of(e).is_some());
        let newest_part = parts.iter().map(|e| e.time.clone()).max();
        match whole.into_iter().next() {
            Some(whole) if newest_part.as_ref().is_none_or(|t| whole.time > *t) => {
                folded.push(whole)
            }
            _ => {
                let components: Vec<(String, Outcome)> = parts
                    .iter()
                    .map(|e| (component_of(e).unwrap_or_default(), e.status))
                    .collect();
                let median_ms = parts.iter().map(|e| e.median_ms).sum::<Option<f64>>();
                let Some(cited) =
                    hwmatrix_record::deciding_component(parts.iter().map(|e| e.status))
                else {
                    continue;
                };
                let Some(cited) = parts.into_iter().nth(cited) else {
                    continue;
                };
                folded.push(LatestRecord {
                    components,
                    median_ms,
                    ..cited
                });
            }
        }
    }
    folded
}

impl Database {
    /// The record that speaks for every (model, platform, engine, check, precision)
    /// and component (folded into one per check): what the cell's status is today, by
    /// [`hwmatrix_record::recency`], ties going to the later import. With `runs`, only
    /// records of those runs count.
    pub fn latest(&self, runs: &[String]) -> Result<Vec<LatestRecord>, String> {
        self.latest_on_graph(runs, None)
    }

    /// [`Database::latest`] of the checks on another tool's graph (`graph`: `optimum`), or
    /// with None on ours: the two never shadow each other.
    pub fn latest_on_graph(
        &self,
        runs: &[String],
        graph: Option<&str>,
    ) -> Result<Vec<LatestRecord>, String> {
        let mut conditions = vec![match graph {
            None => "json_extract(body, '$.graph') IS NULL".to_string(),
            Some(graph) => format!("json_extract(body, '$.graph') = {}", quote(graph)),
        }];
        if !runs.is_empty() {
            conditions.push(format!(
                "run_id IN ({})",
                runs.iter().map(|r| quote(r)).collect::<Vec<_>>().join(", ")
            ));
        }
        let filter = format!("WHERE {}", conditions.join(" AND "));
        let sql = format!(
            "SELECT {COLUMNS} FROM (
                SELECT *, json_extract(body, '$.component') AS component,
                    ROW_NUMBER() OVER (PARTITION BY model, platform, engine_kind, check_name, precision, json_extract(body, '$.component')
                                       ORDER BY recency(basis, time) DESC, id DESC) AS rank
                FROM records {filter}
             ) WHERE rank = 1 ORDER BY model, platform, engine_kind, check_name, precision, component"
        );
        let mut statement = self
            .conn
            .prepare(&sql)
            .map_err(|e| self.error("reading the latest records", e))?;
        let rows = statement
            .query_map([], evidence)
            .map_err(|e| self.error("reading the latest records", e))?;
        let latest = rows
            .collect::<Result<_, _>>()
            .map_err(|e| self.error("reading the latest records", e))?;
        Ok(fold_components(latest))
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<Run>, String> {
        let mut statement = self
            .conn
            .prepare(
                "SELECT run_id, group_concat(DISTINCT host), min(time), max(time), count(*) FROM records
                 GROUP BY run_id ORDER BY min(time), run_id",
            )
            .map_err(|e| self.error("listing runs", e))?;
        let rows = statement
            .query_map([], |row| {
                let hosts: String = row.get(1)?;
                let mut hosts: Vec<String> = hosts.split(',').map(str::to_string).collect();
                hosts.sort();
                Ok(Run {
                    run_id: row.get(0)?,
                    hosts,
                    first: row.get(2)?,
                    last: row.get(3)?,
                    records: row.get(4)?,
                })
            })
            .map_err(|e| self.error("listing runs", e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| self.error("listing runs", e))
    }

    /// Whether a record with this name (16 hex digits of its digest) is in the database.
    pub fn has_record(&self, record: &str) -> Result<bool, String> {
        if record.len() != 16 || !record.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(false);
        }
        // A prefix as a range, so the unique index on digest serves it (LIKE would scan every record).
        let record = record.to_ascii_lowercase();
        let end = format!("{record}g");
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM records WHERE digest >= ?1 AND digest < ?2)",
                params![record, end],
                |r| r.get(0),
            )
            .map_err(|e| self.error("looking a record up", e))
    }

    /// The record with this name (16 hex digits of its digest), as its line was imported.
    pub fn record(&self, record: &str) -> Result<Option<String>, String> {
        if record.len() != 16 || !record.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let record = record.to_ascii_lowercase();
        let end = format!("{record}g");
        let mut statement = self
            .conn
            .prepare("SELECT body FROM records WHERE digest >= ?1 AND digest < ?2")
            .map_err(|e| self.error("looking a record up", e))?;
        let mut rows = statement
            .query_map(params![record, end], |r| r.get::<_, String>(0))
            .map_err(|e| self.error("looking a record up", e))?;
        rows.next()
            .transpose()
            .map_err(|e| self.error("looking a record up", e))
    }
}

/// An SQL string literal (run ids come from the command line).
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The newest record of each check in each of two runs, for `--compare` and `--diff`; an
/// error naming the database when either run is not in it.
pub fn two_runs(
    db: &Database,
    before: &str,
    after: &str,
) -> Result<(Vec<LatestRecord>, Vec<LatestRecord>), String> {
    let known: Vec<String> = db.runs()?.into_iter().map(|r| r.run_id).collect();
    if let Some(run) = [before, after]
        .into_iter()
        .find(|run| !known.iter().any(|k| k == run))
    {
        return Err(format!(
            "error: no run `{run}` in {}\n  help: `gen results runs` lists the runs",
            db.path().display()
        ));
    }
    Ok((
        db.latest(&[before.to_string()])?,
        db.latest(&[after.to_string()])?,
    ))
}
