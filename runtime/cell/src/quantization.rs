//! The vocabulary of the webgpu cells' quantization checks: the five weight
//! quantization schemes of seed 002, the ratings its tables use, and what a
//! generated cell declares about them. The numbers (group size, mixed
//! widths, each rating's error bound) are data, written once in
//! `model-specs/quantization.yaml`; gen emits them into `generated/`.

use serde::{Deserialize, Serialize};

use crate::planned::Planned;

/// A weight quantization scheme, as seed 002's tables name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuantScheme {
    /// float16 weights.
    Fp16,
    /// 8-bit integers with a float16 scale and minimum per group.
    Int8,
    /// 4-bit integers, grouped the same way.
    Int4,
    /// 4 bits for feed-forward layers, 8 for attention, embedding and output
    /// projections (seed 002's "4-bit mixed precision").
    Int4Mixed,
    /// 2-bit integers, grouped the same way.
    Int2,
}

impl QuantScheme {
    pub const ALL: [QuantScheme; 5] = [
        QuantScheme::Fp16,
        QuantScheme::Int8,
        QuantScheme::Int4,
        QuantScheme::Int4Mixed,
        QuantScheme::Int2,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QuantScheme::Fp16 => "fp16",
            QuantScheme::Int8 => "int8",
            QuantScheme::Int4 => "int4",
            QuantScheme::Int4Mixed => "int4_mixed",
            QuantScheme::Int2 => "int2",
        }
    }

    /// The test function and the `check` of its records ([`crate::CheckId`]'s name).
    pub const fn check_name(self) -> &'static str {
        crate::CheckId::Quantization(self).name()
    }

    /// The width of a layer's weights under this scheme.
    pub fn bits(self, role: LayerRole, mixed: &MixedWidths) -> u32 {
        match self {
            QuantScheme::Fp16 => 16,
            QuantScheme::Int8 => 8,
            QuantScheme::Int4 => 4,
            QuantScheme::Int2 => 2,
            QuantScheme::Int4Mixed => match role {
                LayerRole::Attention => mixed.attention,
                LayerRole::Embedding => mixed.embedding,
                LayerRole::Output => mixed.output,
                LayerRole::FeedForward => mixed.feed_forward,
            },
        }
    }
}

/// What a weight matrix does in its model, as the exporter classifies it by
/// module name (generator/importer/exporter/export.py `linear_role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerRole {
    Attention,
    Embedding,
    Output,
    FeedForward,
}

/// The widths of 4-bit mixed precision by layer role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MixedWidths {
    pub attention: u32,
    pub embedding: u32,
    pub output: u32,
    pub feed_forward: u32,
}

/// The ratings of seed 002's quantization tables, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rating {
    Excellent,
    VeryGood,
    Good,
    Limited,
    NotRecommended,
    /// The seed's "not supported": every width runs here, so what is left of
    /// it is "too inaccurate to use", the same band as not-recommended.
    NotSupported,
}

impl Rating {
    pub fn name(self) -> &'static str {
        match self {
            Rating::Excellent => "excellent",
            Rating::VeryGood => "very-good",
            Rating::Good => "good",
            Rating::Limited => "limited",
            Rating::NotRecommended => "not-recommended",
            Rating::NotSupported => "not-supported",
        }
    }
}

/// How the quantization checks quantize and rate (model-specs/quantization.yaml).
#[derive(Debug)]
pub struct QuantizationDecl {
    /// Consecutive input weights sharing one scale and minimum.
    pub group_size: u32,
    pub mixed: MixedWidths,
    /// Each rating with the largest mean relative error it allows, best first.
    pub ratings: &'static [(Rating, f64)],
}

impl QuantizationDecl {
    /// The best rating whose bound the error is within.
    pub fn rating_of(&self, error: f64) -> Option<Rating> {
        self.ratings
            .iter()
            .find(|(_, bound)| error <= *bound)
            .map(|(rating, _)| *rating)
    }

    /// The errors a rating stands for: above the next better bound, up to its own.
    pub fn band(&self, rating: Rating) -> Option<(f64, f64)> {
        let upper = self.ratings.iter().find(|(r, _)| *r == rating)?.1;
        let lower = self
            .ratings
            .iter()
            .map(|(_, b)| *b)
            .filter(|b| *b < upper)
            .fold(0.0_f64, f64::max);
        Some((lower, upper))
    }
}

/// One scheme's check: its planned status and the rating the spec expects.
#[derive(Debug)]
pub struct QuantizationCheck {
    pub scheme: QuantScheme,
    pub planned: Planned,
    /// The spec's `web_quantization` rating of this scheme on the platform, where it rates it.
    pub expected: Option<Rating>,
}

/// A kernel cell's quantization checks (a [`crate::Cell`] on wgpu): how they
/// quantize (model-specs/quantization.yaml) and each scheme's planned status
/// and expected rating.
#[derive(Clone, Copy, Debug)]
pub struct QuantizationChecks {
    pub settings: &'static QuantizationDecl,
    pub checks: &'static [QuantizationCheck],
}

impl QuantizationChecks {
    pub fn check(&self, scheme: QuantScheme) -> Option<&'static QuantizationCheck> {
        self.checks.iter().find(|c| c.scheme == scheme)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: QuantizationDecl = QuantizationDecl {
        group_size: 32,
        mixed: MixedWidths {
            attention: 8,
            embedding: 8,
            output: 8,
            feed_forward: 4,
        },
        ratings: &[
            (Rating::Excellent, 0.01),
            (Rating::VeryGood, 0.02),
            (Rating::Good, 0.05),
            (Rating::Limited, 0.15),
            (Rating::NotRecommended, f64::INFINITY),
            (Rating::NotSupported, f64::INFINITY),
        ],
    };

    #[test]
    fn an_error_gets_the_best_rating_whose_bound_it_is_within() {
        assert_eq!(SETTINGS.rating_of(0.004), Some(Rating::Excellent));
        assert_eq!(SETTINGS.rating_of(0.05), Some(Rating::Good));
        assert_eq!(SETTINGS.rating_of(0.08), Some(Rating::Limited));
        assert_eq!(SETTINGS.rating_of(0.4), Some(Rating::NotRecommended));
    }

    #[test]
    fn mixed_precision_keeps_attention_at_8_bits_and_feed_forward_at_4() {
        assert_eq!(
            QuantScheme::Int4Mixed.bits(LayerRole::Attention, &SETTINGS.mixed),
            8
        );
        assert_eq!(
            QuantScheme::Int4Mixed.bits(LayerRole::FeedForward, &SETTINGS.mixed),
            4
        );
        assert_eq!(
            QuantScheme::Int2.bits(LayerRole::Attention, &SETTINGS.mixed),
            2
        );
    }
}
