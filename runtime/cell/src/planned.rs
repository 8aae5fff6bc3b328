//! What the planner decided about a cell before anything ran, and on what
//! grounds. A record's outcome (passed, failed...) is a different thing: it
//! is what a run measured (`runtime::record::Outcome`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::stage::Stage;

/// A cell's planned status, resolved once by gen from the specs. Generated
/// code holds `Planned<&'static str>`; gen builds it with owned strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planned<S = &'static str> {
    /// Expected to work: its checks run for real when its platform's feature is on.
    Run,
    /// The platform cannot run it; never tried.
    Unsupported { reason: S, basis: Basis },
    /// Expected to fail today; tried only with `--include-ignored`.
    /// `stage` is how far it got when that was measured or is known (`export`
    /// for an export failure); None for a person's note that does not say.
    KnownIssue {
        reason: S,
        basis: Basis,
        stage: Option<Stage>,
    },
    /// None of the platform's engines is built in this runtime yet. With the
    /// platform's feature on its checks run and fail, saying so.
    NoEngine { reason: S },
    /// Our own harness stopped before any engine was tried (`stage` is
    /// `config` or `reference`): our gap, never a known issue of the model or
    /// of the platform. Tried only with `--include-ignored`.
    NotTested { reason: S, stage: Stage },
}

impl<S: AsRef<str>> Planned<S> {
    /// The label `gen list` and records use.
    pub fn label(&self) -> &'static str {
        match self {
            Planned::Run => "run",
            Planned::Unsupported { .. } => "unsupported",
            Planned::KnownIssue { .. } => "known-issue",
            Planned::NoEngine { .. } => "no-engine",
            Planned::NotTested { .. } => "not-tested",
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            Planned::Run => None,
            Planned::Unsupported { reason, .. }
            | Planned::KnownIssue { reason, .. }
            | Planned::NoEngine { reason }
            | Planned::NotTested { reason, .. } => Some(reason.as_ref()),
        }
    }

    /// Whether the cell's checks run (and so must pass or fail) when its feature is on.
    pub fn runs_when_enabled(&self) -> bool {
        matches!(self, Planned::Run | Planned::NoEngine { .. })
    }
}

impl<S: AsRef<str>> fmt::Display for Planned<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Where a status comes from. Only `measured` is this run's; `evidence` is an
/// earlier run's, stored with its provenance; the others are claims the
/// report shows as such.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// A check of this run ran it and measured the outcome.
    Measured,
    /// Written in the model's spec by a person (a platform override with its
    /// reason, or `export.known_issue` with the exporter's error).
    Spec,
    /// Not tried in this run (the platform's cargo feature is off).
    NotTried,
    /// An entry of the evidence store (`model-specs/evidence/`): measured by an
    /// earlier run, whose run, date and host the reason and the entry give.
    Evidence,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Measured => "measured",
            Basis::Spec => "spec",
            Basis::NotTried => "not-tried",
            Basis::Evidence => "evidence",
        }
    }
}

/// What happened to one check of one cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Passed,
    Failed,
    /// Not run: its platform's cargo feature is off.
    Ignored,
    /// Not run: the platform cannot run this model (see `basis`).
    Unsupported,
    /// Not run: expected to fail today (see `basis`).
    KnownIssue,
    /// Not run: our harness could not build or run the tiny PyTorch model
    /// (its `stage`), so no engine was ever tried. Our gap, not the model's.
    NotTested,
}

impl Outcome {
    pub const ALL: [Outcome; 6] = [
        Outcome::Passed,
        Outcome::Failed,
        Outcome::Ignored,
        Outcome::Unsupported,
        Outcome::KnownIssue,
        Outcome::NotTested,
    ];

    /// The name records carry (serde's, kebab-case).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Ignored => "ignored",
            Outcome::Unsupported => "unsupported",
            Outcome::KnownIssue => "known-issue",
            Outcome::NotTested => "not-tested",
        }
    }
}
