//! The store's passes: for each cell a run measured, the checks that passed,
//! the content each read and the run's provenance (`passed:` in
//! `model-specs/evidence/<model_type>.yaml`, beside the failures' entries).
//! A run that reaches only some cells (tests/run.sh measures a quarter of
//! them a run) reports the others with the run that last measured them, a
//! pass as a failure is: never "no evidence" because this run did not reach
//! it.
//!
//! Keyed by content, as the failures are: a run that measures the same
//! fixture content with the same engine and verdict code, and passes the
//! same checks, rewrites nothing, so the store's diff shows only what
//! changed.

use std::collections::BTreeMap;

use hwmatrix_cell::{CheckId, EngineKind, Platform};
use serde::{Deserialize, Serialize};

use super::evidence::{Entry, EntryOutcome, Provenance};

/// One cell's passed checks, as one run measured them.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PassedCell {
    pub platform: Platform,
    pub engine: EngineKind,
    /// Each check that passed and the digest of the fixture content it read
    /// (hwmatrix_cell::content's check digest, without the CPU the fixture was
    /// built on: `built_on` says that once).
    pub checks: BTreeMap<CheckId, String>,
    /// The CPU (class and kernel features) the fixture was built on, which
    /// decides whether two digests can be compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_on: Option<String>,
    /// The run, host, engine, library, CPU, fixture key and verdict code of
    /// the measurement (its newest record's time); `content` and `record` are
    /// per check, so unset here.
    pub provenance: Provenance,
}

/// What separates a check digest from the CPU its fixture was built on
/// (hwmatrix_cell::content's form: `1a2b... on x86-64 avx2 (avx2 fma)`).
const BUILT_ON: &str = " on ";

impl PassedCell {
    /// An empty cell measured with `provenance` (its content and record cleared).
    pub fn new(platform: Platform, engine: EngineKind, mut provenance: Provenance) -> PassedCell {
        provenance.content = None;
        provenance.record = None;
        PassedCell {
            platform,
            engine,
            checks: BTreeMap::new(),
            built_on: None,
            provenance,
        }
    }

    /// Adds a passed check with the content digest its record names.
    pub fn add(&mut self, check: CheckId, content: Option<&str>) {
        let (digest, built_on) = match content.and_then(|c| c.split_once(BUILT_ON)) {
            Some((digest, on)) => (digest.to_string(), Some(on.to_string())),
            None => (content.unwrap_or("-").to_string(), None),
        };
        if self.built_on.is_none() {
            self.built_on = built_on;
        }
        self.checks.insert(check, digest);
    }

    /// A check's content as records and today's fixtures write it.
    pub fn content(&self, check: CheckId) -> Option<String> {
        let digest = self.checks.get(&check).filter(|d| *d != "-")?;
        Some(match &self.built_on {
            Some(on) => format!("{digest}{BUILT_ON}{on}"),
            None => digest.clone(),
        })
    }

    /// A check's pass in an entry's form, so that staleness is judged by the
    /// one rule entries follow ([`Entry::stale`]).
    fn as_entry(&self, check: CheckId) -> Entry {
        Entry {
            platform: Some(self.platform),
            engine: Some(self.engine),
            check,
            cpu_class: None,
            outcome: EntryOutcome::Failed,
            attribution: None,
            stage: None,
            error_kind: None,
            error: String::new(),
            provenance: Provenance {
                content: self.content(check),
                // The block's fixture key is the model fixture's; `generates` reads the
                // generation fixture, whose key is another: only its content compares.
                fixture_key: self
                    .provenance
                    .fixture_key
                    .clone()
                    .filter(|_| check != CheckId::Generates),
                ..self.provenance.clone()
            },
        }
    }

    /// Why the cell's passes no longer describe today's checkout, naming the
    /// first check whose content, engine or verdict code changed since.
    pub fn stale(&self, today: &super::evidence::TodaysFixtures) -> Option<String> {
        // Judged per check by the entries' rule: each check read its own parts.
        self.checks.keys().find_map(|check| {
            let entry = self.as_entry(*check);
            entry
                .stale(&today.today(&entry))
                .map(|why| format!("{check}: {why}"))
        })
    }

    /// Whether `new` measured what this one did: the same checks passed on
    /// the same content, with the same engine library and verdict code. Then
    /// the store keeps this one (its run and date) and writes nothing.
    pub fn same_measurement(&self, new: &PassedCell, fixture_key: &str) -> bool {
        self.checks.keys().eq(new.checks.keys())
            && self.checks.keys().all(|check| {
                self.as_entry(*check)
                    .fresh_against(&new.as_entry(*check), fixture_key)
            })
            && self.provenance.library == new.provenance.library
            && self.provenance.cpu == new.provenance.cpu
    }

    fn sort_key(&self) -> (&'static str, &'static str) {
        (self.platform.name(), self.engine.name())
    }
}

/// Merges a run's passes into a model's: a cell measured again replaces its
/// block unless it measured the same (`same_measurement`), a cell whose
/// checks all failed this time loses its block, and a cell the run did not
/// measure keeps its own.
pub fn merge(
    passed: &mut Vec<PassedCell>,
    measured: Vec<(Platform, EngineKind, Option<PassedCell>)>,
    fixture_key: &str,
) {
    for (platform, engine, new) in measured {
        let at = passed
            .iter()
            .position(|p| p.platform == platform && p.engine == engine);
        match (at, new) {
            (Some(i), Some(new)) if passed[i].same_measurement(&new, fixture_key) => {}
            (Some(i), Some(new)) => passed[i] = new,
            (Some(i), None) => {
                passed.remove(i);
            }
            (None, Some(new)) => passed.push(new),
            (None, None) => {}
        }
    }
    sort(passed);
}

/// The store's order: by platform, then engine.
pub fn sort(passed: &mut [PassedCell]) {
    passed.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(run: &str, digest: &str, runtime: &str) -> PassedCell {
        let mut cell = PassedCell::new(
            Platform::Cpu,
            EngineKind::Onnxruntime,
            Provenance {
                run: Some(run.into()),
                date: "2026-12-06T00:00:00Z".into(),
                host: Some("vm".into()),
                library: Some(
                    "onnxruntime (<cache>/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.1.31.1)"
                        .into(),
                ),
                fixture_key: Some("key".into()),
                runtime: Some(runtime.into()),
                ..Provenance::default()
            },
        );
        cell.add(
            CheckId::Runs,
            Some(&format!("{digest} on x86-64 avx2 (avx2)")),
        );
        cell.add(
            CheckId::MatchesReference,
            Some(&format!("{digest} on x86-64 avx2 (avx2)")),
        );
        cell
    }

    #[test]
    fn a_same_content_measurement_keeps_the_block_and_another_replaces_it() {
        let mut passed = vec![cell("run-1", "aaaa", "0.1.0 (verdict code v1)")];
        // The same content, engine and verdict code: the first run stays.
        let again = cell("run-2", "aaaa", "0.1.0 (verdict code v1)");
        merge(
            &mut passed,
            vec![(Platform::Cpu, EngineKind::Onnxruntime, Some(again))],
            "key",
        );
        assert_eq!(passed[0].provenance.run.as_deref(), Some("run-1"));
        // Other content: the new run replaces it.
        let other = cell("run-3", "bbbb", "0.1.0 (verdict code v1)");
        merge(
            &mut passed,
            vec![(Platform::Cpu, EngineKind::Onnxruntime, Some(other))],
            "key",
        );
        assert_eq!(passed[0].provenance.run.as_deref(), Some("run-3"));
        // Another verdict code: replaced too.
        let code = cell("run-4", "bbbb", "0.1.0 (verdict code v2)");
        merge(
            &mut passed,
            vec![(Platform::Cpu, EngineKind::Onnxruntime, Some(code))],
            "key",
        );
        assert_eq!(passed[0].provenance.run.as_deref(), Some("run-4"));
        // Nothing passed this time: the block goes.
        merge(
            &mut passed,
            vec![(Platform::Cpu, EngineKind::Onnxruntime, None)],
            "key",
        );
        assert!(passed.is_empty());
    }

    #[test]
    fn a_check_content_round_trips_with_the_cpu_it_was_built_on() {
        let c = cell("run-1", "aaaa", "v");
        assert_eq!(
            c.content(CheckId::Runs).as_deref(),
            Some("aaaa on x86-64 avx2 (avx2)")
        );
        assert_eq!(c.content(CheckId::Generates), None);
    }
}
