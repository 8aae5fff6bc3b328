//! Result records: one JSON line per executed check. Records from many
//! machines merge by concatenation; reports are computed from them only.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::paths;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Failed,
    Ignored,
    Unsupported,
    KnownIssue,
}

#[derive(Debug, Serialize)]
pub struct Record {
    pub run_id: String,
    /// UTC, RFC 3339.
    pub time: String,
    pub host: String,
    pub model: String,
    pub category: String,
    pub platform: String,
    pub engine: String,
    /// What the engine itself reported about where the nodes ran (None when it never got that far).
    pub provider_verified: Option<String>,
    pub check: String,
    pub status: Status,
    pub reason: Option<String>,
    pub max_abs_error: Option<f64>,
    pub max_rel_error: Option<f64>,
    /// Median of the timed runs, after a warm-up run.
    pub latency_ms: Option<f64>,
    pub timed_runs: Option<usize>,
    /// The test process's peak resident set (VmHWM), shared by tests running in it.
    pub peak_rss_kb: Option<u64>,
    pub library: Option<String>,
    pub runtime_version: &'static str,
}

/// `HWMATRIX_RUN_ID`, else `<unix seconds>-<pid>` fixed for this process.
pub fn run_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        std::env::var("HWMATRIX_RUN_ID").unwrap_or_else(|_| format!("{}-{}", unix_seconds(), std::process::id()))
    })
}

pub fn host() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Appends the record to `<results>/<host>.jsonl`. One `write` per line so
/// that parallel tests never interleave within a line.
pub fn append(record: &Record) -> Result<(), String> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = paths::results_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{}.jsonl", record.host));
    let mut line = serde_json::to_string(record).map_err(|e| e.to_string())?;
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn unix_seconds() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

pub fn now_rfc3339() -> String {
    rfc3339(unix_seconds())
}

/// Formats unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (Howard Hinnant's civil-from-days).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_314_896), "2026-11-22T02:34:56Z");
    }
}
