//! A cell's status, counts of them, and the mark each has in the matrices.

use hwmatrix_record::Outcome;
use serde::Serialize;
use std::collections::BTreeMap;

/// A cell's status in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Failed,
    KnownIssue,
    /// Not tested here: our harness could not build or run the tiny PyTorch
    /// model, or this machine lacks what the check needs (a software adapter
    /// without shader-f16, an emulator, our time limit). Counted apart from
    /// the model's known issues.
    NotTested,
    /// Every check that ran passed, but some planned check has no record:
    /// never a pass (a run of `::runs` alone compared nothing).
    Incomplete,
    Unsupported,
    Ignored,
    NoEvidence,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Passed,
        Status::Failed,
        Status::KnownIssue,
        Status::NotTested,
        Status::Incomplete,
        Status::Unsupported,
        Status::Ignored,
        Status::NoEvidence,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::KnownIssue => "known-issue",
            Status::NotTested => "not-tested",
            Status::Incomplete => "incomplete",
            Status::Unsupported => "unsupported",
            Status::Ignored => "ignored",
            Status::NoEvidence => "no-evidence",
        }
    }

    pub(super) fn of_record(status: Outcome) -> Status {
        match status {
            Outcome::Passed => Status::Passed,
            Outcome::Failed => Status::Failed,
            Outcome::KnownIssue => Status::KnownIssue,
            Outcome::NotTested => Status::NotTested,
            Outcome::Unsupported => Status::Unsupported,
            Outcome::Ignored => Status::Ignored,
        }
    }

    /// The cell's status from its checks' (see the module's comment).
    pub(super) fn of_checks(checks: &[Status]) -> Status {
        if checks.is_empty() {
            return Status::NoEvidence;
        }
        [
            Status::Failed,
            Status::NotTested,
            Status::KnownIssue,
            Status::Unsupported,
            Status::Ignored,
        ]
        .into_iter()
        .find(|s| checks.contains(s))
        .unwrap_or(Status::Passed)
    }
}

/// Counts per status, in `Status::ALL`'s order; every status is present, zeros included.
#[derive(Clone, Debug, Serialize)]
pub struct Counts(pub BTreeMap<Status, usize>);

impl Default for Counts {
    fn default() -> Counts {
        Counts(Status::ALL.iter().map(|s| (*s, 0)).collect())
    }
}

impl Counts {
    pub(super) fn add(&mut self, status: Status) {
        *self.0.entry(status).or_default() += 1;
    }

    pub fn get(&self, status: Status) -> usize {
        self.0.get(&status).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.0.values().sum()
    }
}

/// The mark a status has in the matrices.
pub fn mark(status: Status) -> &'static str {
    match status {
        Status::Passed => "✓",
        Status::Failed => "✗",
        Status::KnownIssue => "K",
        Status::NotTested => "N",
        Status::Incomplete => "◐",
        Status::Unsupported => "–",
        Status::Ignored => "○",
        Status::NoEvidence => "·",
    }
}

pub const LEGEND: &str = "✓ passed, ✗ failed, K known issue, N not tested here (our harness's gap or this machine's: a software adapter without a feature, an emulator, our time limit; not the model's), ◐ incomplete (a planned check has no record), – unsupported, ○ ignored (its platform's feature was off), · no evidence (no record)";

/// `✓12 ✗1 K3`: the non-zero counts in a fixed order.
pub fn counts_text(counts: &Counts) -> String {
    let parts: Vec<String> = Status::ALL
        .iter()
        .filter(|s| counts.get(**s) > 0)
        .map(|s| format!("{}{}", mark(*s), counts.get(*s)))
        .collect();
    parts.join(" ")
}
