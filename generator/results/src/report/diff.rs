//! `gen report --diff RUN_A RUN_B`: every check whose status changed between
//! two runs, with both records, as Qualcomm AI Hub's scorecard lists
//! progressions and regressions between runs. Checks are matched by model,
//! platform, engine, check and precision, never by host, so runs made on two
//! machines compare cell by cell.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::{Database, LatestRecord};

/// model, platform, engine kind, check, precision
pub type CheckKey = (String, String, String, String, String);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// It passed in the first run and failed in the second (or became a known issue).
    Regression,
    /// It did not pass in the first run and passed in the second.
    Progression,
    /// Any other change of status (a check that no longer runs, a reason that became unsupported).
    Other,
}

impl Change {
    fn label(self) -> &'static str {
        match self {
            Change::Regression => "regression",
            Change::Progression => "progression",
            Change::Other => "changed",
        }
    }
}

#[derive(Debug)]
pub struct Changed {
    pub key: CheckKey,
    pub change: Change,
    pub before: LatestRecord,
    pub after: LatestRecord,
}

/// What two runs have and how they differ.
#[derive(Debug, Default)]
pub struct Diff {
    pub in_both: usize,
    pub only_before: usize,
    pub only_after: usize,
    /// Regressions first, then progressions, then other changes; each in check order.
    pub changed: Vec<Changed>,
}

impl Diff {
    pub fn regressions(&self) -> usize {
        self.changed
            .iter()
            .filter(|c| c.change == Change::Regression)
            .count()
    }
}

/// A status that says the model does not work there: a failed check, or a known issue (a check
/// expected to fail). "ignored" and "not-tested" are the absence of evidence, never a regression.
fn is_failure(status: &str) -> bool {
    matches!(status, "failed" | "known-issue")
}

/// How a status changed from `before` to `after`, or None when it did not.
pub fn classify(before: &str, after: &str) -> Option<Change> {
    if before == after {
        None
    } else if before == "passed" && is_failure(after) || before != "failed" && after == "failed" {
        Some(Change::Regression)
    } else if after == "passed" {
        Some(Change::Progression)
    } else {
        Some(Change::Other)
    }
}

fn by_check(evidence: Vec<LatestRecord>) -> BTreeMap<CheckKey, LatestRecord> {
    evidence
        .into_iter()
        .map(|e| {
            (
                (
                    e.model.clone(),
                    e.platform.clone(),
                    e.engine_kind.clone(),
                    e.check.clone(),
                    e.precision.clone(),
                ),
                e,
            )
        })
        .collect()
}

/// The newest record of each check in each run, compared check by check.
pub fn diff(db: &Database, before: &str, after: &str) -> Result<Diff, String> {
    let (a, b) = crate::query::two_runs(db, before, after)?;
    let (mut a, b) = (by_check(a), by_check(b));
    let mut diff = Diff {
        only_after: b.keys().filter(|k| !a.contains_key(*k)).count(),
        ..Diff::default()
    };
    for (key, after) in b {
        let Some(before) = a.remove(&key) else {
            continue;
        };
        diff.in_both += 1;
        if let Some(change) = classify(before.status.name(), after.status.name()) {
            diff.changed.push(Changed {
                key,
                change,
                before,
                after,
            });
        }
    }
    diff.only_before = a.len();
    diff.changed
        .sort_by(|x, y| (x.change, &x.key).cmp(&(y.change, &y.key)));
    Ok(diff)
}

/// One record as the diff shows it: status, stage and reason, and where it was measured.
fn describe(e: &LatestRecord) -> String {
    let stage = e
        .body
        .stage
        .map(|s| format!(" at {}", s.name()))
        .unwrap_or_default();
    let reason = e
        .body
        .reason
        .as_deref()
        .map(|r| format!(": {}", one_line(r)))
        .unwrap_or_default();
    format!(
        "{}{stage} (record {}, host {}, {}){reason}",
        e.status.name(),
        e.record,
        e.host,
        e.time
    )
}

/// A reason shortened to one line a terminal can show.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    hwmatrix_specs::text::shorten(line, 300)
}

/// The diff as text; the caller exits non-zero when it has a regression.
pub fn render(diff: &Diff, before: &str, after: &str) -> String {
    let mut out = String::new();
    let count = |c: Change| diff.changed.iter().filter(|x| x.change == c).count();
    let _ = writeln!(
        out,
        "{before} -> {after}: {} checks in both runs, {} regressions, {} progressions, {} other changes; {} checks only in {before}, {} only in {after}",
        diff.in_both,
        count(Change::Regression),
        count(Change::Progression),
        count(Change::Other),
        diff.only_before,
        diff.only_after
    );
    for c in &diff.changed {
        let (model, platform, engine, check, precision) = &c.key;
        let _ = writeln!(
            out,
            "  {}: {model} on {platform} ({engine}) {check} {precision}",
            c.change.label()
        );
        let _ = writeln!(out, "    before: {}", describe(&c.before));
        let _ = writeln!(out, "    after:  {}", describe(&c.after));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_classify_as_a_scorecard_would() {
        assert_eq!(classify("passed", "passed"), None);
        assert_eq!(classify("passed", "failed"), Some(Change::Regression));
        assert_eq!(classify("passed", "known-issue"), Some(Change::Regression));
        assert_eq!(classify("known-issue", "failed"), Some(Change::Regression));
        assert_eq!(classify("ignored", "failed"), Some(Change::Regression));
        assert_eq!(classify("failed", "passed"), Some(Change::Progression));
        assert_eq!(classify("known-issue", "passed"), Some(Change::Progression));
        // No evidence in the second run is not a finding against the model.
        assert_eq!(classify("passed", "ignored"), Some(Change::Other));
        assert_eq!(classify("passed", "not-tested"), Some(Change::Other));
        assert_eq!(classify("failed", "known-issue"), Some(Change::Other));
    }
}
