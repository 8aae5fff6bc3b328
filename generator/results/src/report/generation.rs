//! The `generates` checks' evidence: per platform, whether each generating model's decoder
//! with its cache generated as PyTorch's generate() did (the generation column), and per
//! platform and engine the counts and where loops first diverged.

use std::collections::BTreeMap;

use crate::LatestRecord;
use serde::Serialize;

use super::status::{Counts, Status};

/// A generating model's row: its `generates` status on each platform (the best over the
/// platform's engines: a platform generates where any engine users run does).
#[derive(Debug, Serialize)]
pub struct GenerationRow {
    pub model: String,
    pub platforms: BTreeMap<String, Status>,
}

/// One platform and engine's `generates` checks.
#[derive(Debug, Serialize)]
pub struct GenerationEngine {
    pub platform: String,
    pub engine: String,
    pub counts: Counts,
    /// Of the failed checks that ran: how many first diverged at the prefill, and how many at a decode step.
    pub diverged_at_prefill: usize,
    pub diverged_decoding: usize,
}

#[derive(Debug, Serialize)]
pub struct GenerationEvidence {
    pub what: String,
    pub engines: Vec<GenerationEngine>,
    pub models: Vec<GenerationRow>,
}

const WHAT: &str = "The generates check runs each text decoder's ONNX graph (a vision-language model's language component, on the token embeddings) with its cache of past keys and values on the platform's engine: a prefill of a padded batch of two prompts (a decoder's padded on the left, an encoder's source on the right), then one step per new token, feeding back the cache the engine returned and teacher-forcing the tokens PyTorch's generate() sampled; each step's last-position logits must stay within the cell's float32 tolerance and pick the same top token";

/// The `generates` records of the report's evidence, grouped.
pub fn generation_evidence(evidence: &[LatestRecord]) -> GenerationEvidence {
    let mut engines: BTreeMap<(String, String), GenerationEngine> = BTreeMap::new();
    let mut models: BTreeMap<String, BTreeMap<String, Status>> = BTreeMap::new();
    for e in evidence
        .iter()
        .filter(|e| e.check == hwmatrix_cell::GENERATES)
    {
        let status = Status::of_record(e.status);
        let row = engines
            .entry((e.platform.clone(), e.engine_kind.clone()))
            .or_insert_with(|| GenerationEngine {
                platform: e.platform.clone(),
                engine: e.engine_kind.clone(),
                counts: Counts::default(),
                diverged_at_prefill: 0,
                diverged_decoding: 0,
            });
        row.counts.add(status);
        match e
            .body
            .generation
            .as_ref()
            .and_then(|g| g.first_divergence.as_ref())
            .map(|d| d.step)
        {
            Some(0) => row.diverged_at_prefill += 1,
            Some(_) => row.diverged_decoding += 1,
            None => {}
        }
        let cell = models
            .entry(e.model.clone())
            .or_default()
            .entry(e.platform.clone())
            .or_insert(status);
        // Status orders passed first: the best engine's status stands for the platform.
        if status < *cell {
            *cell = status;
        }
    }
    GenerationEvidence {
        what: WHAT.into(),
        engines: engines.into_values().collect(),
        models: models
            .into_iter()
            .map(|(model, platforms)| GenerationRow { model, platforms })
            .collect(),
    }
}
