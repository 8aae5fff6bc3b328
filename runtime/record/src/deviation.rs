//! The comparison with the reference: per output, its errors, the
//! reference's spread and, for precision checks, the agreement.

use serde::{Deserialize, Serialize};

use hwmatrix_cell::{AgreementBound, Tolerance};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviationRecord {
    /// float32 checks: the allclose tolerance. Where float32 is computed in a
    /// lower precision, each output's bound comes from `max_error_of_spread`
    /// (each output's `tolerance`); a precision check is judged by
    /// `agreement_bound` (its elementwise tolerance is 0: errors are evidence).
    pub tolerance: Tolerance,
    /// A precision check's bound on each float output's `agreement`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement_bound: Option<AgreementBound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error_of_spread: Option<f64>,
    /// float32 checks on hardware that computes them in a lower precision: that
    /// precision and why (hardware.yaml `float32_computed_in`), hence `max_error_of_spread`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computed_in: Option<String>,
    /// The largest absolute and relative errors over all outputs.
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub max_abs: f64,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub max_rel: f64,
    pub outputs: Vec<OutputDeviation>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutputDeviation {
    pub output: String,
    /// The tolerance this output was held to, where it is its own (precision checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
    pub elements: usize,
    pub violations: usize,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub max_abs: f64,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub max_rel: f64,
    /// The element furthest outside the tolerance, if any is.
    pub worst: Option<Worst>,
    /// How much the reference varies: a constant that would pass makes the check vacuous.
    pub reference: Spread,
    /// Cosine per row, relative L2 error and (for logits) top-1 agreement with the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<Agreement>,
    /// Where the check judged only the positions the attention mask keeps
    /// (precision variants, float32 computed in a lower precision): how many,
    /// and the padded positions' agreement, kept apart as evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged_positions: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padded_agreement: Option<Agreement>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Worst {
    pub index: usize,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub expected: f64,
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub got: f64,
}

/// How much a reference varies, measured against the check's own rule: if
/// the constant tensor holding the reference's mean would pass, the reference
/// cannot tell a working model from a broken one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub mean: f64,
    /// The largest |e - mean| over the reference's elements.
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub max_from_mean: f64,
    /// Whether the constant `mean` would pass within the tolerance.
    pub constant_would_pass: bool,
}

/// How a quantized (or any) output agrees with its reference, the way users
/// accept a quantized model: the direction of each row (see
/// [`feature_axis_last`]), the error's energy against the reference's, and for
/// logits whether the top class (the next token) is kept. Max elementwise
/// error stays in [`Deviation`] as evidence.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Rows with a nonzero reference (the others have no direction).
    pub rows: usize,
    /// The worst and the mean row's cosine similarity with the reference's
    /// row; None where a row has fewer than 2 elements (a cosine of one
    /// element is only its sign).
    pub cosine_min: Option<f64>,
    pub cosine_mean: Option<f64>,
    /// ||actual - expected|| / ||expected|| over the whole output.
    #[serde(deserialize_with = "crate::float::nan_if_null")]
    pub rel_l2: f64,
    /// For logits (an output named `*logits*`): the fraction of rows whose argmax is the reference's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top1: Option<f64>,
    /// For an output laid out [batch, sequence, hidden]: the worst batch item's cosine
    /// between its mean-pooled features and the reference's, pooled over the positions the
    /// attention mask keeps (the sentence embedding sentence encoders' users compare).
    /// Recorded, not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled_cosine_min: Option<f64>,
}
