//! What the `generates` check's loop measured, step by step.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use hwmatrix_cell::Tolerance;

/// What the loop measured, step by step; kept in the record, passed or failed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GenerationRecord {
    /// Steps run: the prefill, then one per new token.
    pub steps: usize,
    pub batch: usize,
    pub prompt_lengths: Vec<usize>,
    pub tolerance: Option<Tolerance>,
    /// When another top token is excused as a near-tie.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub near_tie: Option<NearTie>,
    /// Each step's figures, in order.
    pub per_step: Vec<StepRecord>,
    /// The first step whose logits left the tolerance or chose another top token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_divergence: Option<Divergence>,
    /// How many steps' top tokens agree with PyTorch's in every row.
    pub top1_agreeing_steps: usize,
    /// How the first step's empty cache was fed, where an engine could not take it as
    /// generate() has it (length 0: WebNN builds no graph over a zero-size tensor), and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_step_cache: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepRecord {
    pub step: usize,
    /// The past length the step attended over (0 at the prefill).
    pub past_length: usize,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub max_abs: f64,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub max_rel: f64,
    pub violations: usize,
    /// Rows whose top token differs from PyTorch's where PyTorch's is not a near-tie.
    pub top1_disagreements: usize,
    /// The sizes of the step's named input axes (batch, sequence, total_sequence,
    /// past_sequence): the free-dimension overrides with which engines that build
    /// static graphs (WebNN, QNN's HTP) built this step's graph.
    pub sizes: BTreeMap<String, usize>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Divergence {
    pub step: usize,
    pub output: String,
    pub what: String,
}

/// When the reference's top two tokens are too close for another top token to
/// count as a divergence.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NearTie {
    /// Within twice the step's elementwise tolerance (float32 engines).
    WithinTolerance,
    /// Within two float16 steps of the top logit (2 × 2⁻¹⁰ × |top|): hardware
    /// that computes in float16 cannot order tokens closer than that. Fixed:
    /// a tolerance drawn from the logits' spread (10% of it) excused any
    /// top-two gap under 20% of the spread.
    Float16,
}

/// float16's machine epsilon, 2⁻¹⁰.
const FLOAT16_EPSILON: f64 = 1.0 / 1024.0;

impl NearTie {
    /// How close the reference's top two logits may be for another top token
    /// to be excused: twice the step's tolerance, or two float16 steps.
    pub fn slack(self, tolerance: Tolerance, top: f64) -> f64 {
        match self {
            NearTie::WithinTolerance => 2.0 * (tolerance.abs + tolerance.rel * top.abs()),
            NearTie::Float16 => 2.0 * FLOAT16_EPSILON * top.abs(),
        }
    }
}
