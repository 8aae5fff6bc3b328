//! `gen report --compare RUN_A RUN_B`: latency regressions and speed-ups
//! between two runs, check by check, beyond a relative threshold.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::{Database, LatestRecord};

#[derive(Debug, PartialEq)]
pub enum Change {
    Regression,
    SpeedUp,
}

#[derive(Debug)]
pub struct Compared {
    /// model, platform, engine, check
    pub key: (String, String, String, String),
    pub before_ms: f64,
    pub after_ms: f64,
    pub change: Option<Change>,
}

/// Differences below this many milliseconds are timer noise at any ratio.
const NOISE_FLOOR_MS: f64 = 0.05;

/// Latencies a run recorded: passed checks with a timing (bench records included).
fn latencies(evidence: Vec<LatestRecord>) -> BTreeMap<(String, String, String, String), f64> {
    evidence
        .into_iter()
        .filter(|e| e.status == hwmatrix_record::Outcome::Passed)
        .filter_map(|e| {
            Some((
                (
                    e.model,
                    e.platform,
                    e.engine_kind,
                    format!("{} {}", e.check, e.precision),
                ),
                e.median_ms?,
            ))
        })
        .collect()
}

/// Every check both runs timed, each flagged where `after / before` leaves [1/(1+t), 1+t].
pub fn compare(
    db: &Database,
    before: &str,
    after: &str,
    threshold: f64,
) -> Result<Vec<Compared>, String> {
    let (a, b) = crate::query::two_runs(db, before, after)?;
    let (a, b) = (latencies(a), latencies(b));
    Ok(a.into_iter()
        .filter_map(|(key, before_ms)| {
            let after_ms = *b.get(&key)?;
            let ratio = after_ms / before_ms;
            let noticeable = (after_ms - before_ms).abs() >= NOISE_FLOOR_MS;
            let change = if noticeable && ratio > 1.0 + threshold {
                Some(Change::Regression)
            } else if noticeable && ratio < 1.0 / (1.0 + threshold) {
                Some(Change::SpeedUp)
            } else {
                None
            };
            Some(Compared {
                key,
                before_ms,
                after_ms,
                change,
            })
        })
        .collect())
}

/// The comparison as text; the caller exits non-zero when it has a regression.
pub fn render(rows: &[Compared], before: &str, after: &str, threshold: f64) -> String {
    let mut out = String::new();
    let regressions: Vec<&Compared> = rows
        .iter()
        .filter(|r| r.change == Some(Change::Regression))
        .collect();
    let speedups: Vec<&Compared> = rows
        .iter()
        .filter(|r| r.change == Some(Change::SpeedUp))
        .collect();
    let _ = writeln!(
        out,
        "{} checks timed by both {before} and {after}; threshold {:.0}% (and at least {NOISE_FLOOR_MS} ms): {} regressions, {} speed-ups",
        rows.len(),
        threshold * 100.0,
        regressions.len(),
        speedups.len()
    );
    for (label, list) in [("regression", &regressions), ("speed-up", &speedups)] {
        for r in list.iter() {
            let (model, platform, engine, check) = &r.key;
            let _ = writeln!(
                out,
                "  {label}: {model} on {platform} ({engine}) {check}: {:.3} ms -> {:.3} ms (x{:.2})",
                r.before_ms,
                r.after_ms,
                r.after_ms / r.before_ms
            );
        }
    }
    out
}
