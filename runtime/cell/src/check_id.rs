//! Every check's identity: the one place a check's name is spelled and parsed.
//!
//! A check is what a record's `check` field, an evidence entry, a test function
//! and a report column name: the fixture pipeline's stages (no platform), a
//! cell's float32 checks, one check per precision format, a generating model's
//! `generates`, and wgpu's weight quantization schemes. Everything else holds a
//! [`CheckId`] and asks it for its name; a name read from a file (a record, an
//! evidence entry, a filter) becomes one through [`CheckId::parse`].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::decl::Precision;
use crate::quantization::QuantScheme;

/// The `check` of gen bench's records: they time a cell and are no check of it, so no
/// [`CheckId`] names them; readers of records skip them by this name.
pub const BENCH_RECORD: &str = "bench";

/// Ordered by name (not by [`CheckId::ALL`]): files that list checks (the evidence store's
/// entries and passes) keep the order they had when checks were strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckId {
    /// The fixture pipeline's float32 ONNX export (no platform).
    Export,
    /// The TorchScript trace of a model whose ONNX export failed: libtorch's own
    /// fixture (generator/importer/exporter/torchscript.py; no platform).
    TorchscriptExport,
    /// The generation exporter's decoder with its cache (no platform).
    GenerationExport,
    /// The float32 graph loads and runs on the platform.
    Runs,
    /// Its outputs match PyTorch's within the cell's tolerance.
    MatchesReference,
    /// It runs and matches at a second input shape.
    DynamicShapes,
    /// A precision format's graph agrees with the float32 reference within its bound.
    Precision(Precision),
    /// Greedy generation with the cache gives PyTorch's tokens.
    Generates,
    /// A weight quantization scheme on wgpu's kernels, rated against float32.
    Quantization(QuantScheme),
}

impl CheckId {
    /// Every check, in the order reports list them.
    pub const ALL: [CheckId; 23] = [
        CheckId::Export,
        CheckId::TorchscriptExport,
        CheckId::GenerationExport,
        CheckId::Runs,
        CheckId::MatchesReference,
        CheckId::DynamicShapes,
        CheckId::Precision(Precision::Fp16),
        CheckId::Precision(Precision::Int8),
        CheckId::Precision(Precision::Int8Avx2),
        CheckId::Precision(Precision::Q4),
        CheckId::Precision(Precision::Q4f16),
        CheckId::Precision(Precision::Qdq8),
        CheckId::Precision(Precision::NncfInt8),
        CheckId::Precision(Precision::NncfInt4),
        CheckId::Precision(Precision::Bnb4),
        CheckId::Precision(Precision::Q2),
        CheckId::Precision(Precision::Q2f16),
        CheckId::Generates,
        CheckId::Quantization(QuantScheme::Fp16),
        CheckId::Quantization(QuantScheme::Int8),
        CheckId::Quantization(QuantScheme::Int4),
        CheckId::Quantization(QuantScheme::Int4Mixed),
        CheckId::Quantization(QuantScheme::Int2),
    ];

    /// The checks every runnable cell has, in the order its tests list them.
    pub const FLOAT32: [CheckId; 3] = [
        CheckId::Runs,
        CheckId::MatchesReference,
        CheckId::DynamicShapes,
    ];

    /// The fixture pipeline's checks (no platform).
    pub const PIPELINE: [CheckId; 3] = [
        CheckId::Export,
        CheckId::TorchscriptExport,
        CheckId::GenerationExport,
    ];

    /// Its name: the test function's and the `check` field of records and evidence entries.
    pub const fn name(self) -> &'static str {
        match self {
            CheckId::Export => "export",
            CheckId::TorchscriptExport => "torchscript_export",
            CheckId::GenerationExport => "generation_export",
            CheckId::Runs => "runs",
            CheckId::MatchesReference => "matches_reference",
            CheckId::DynamicShapes => "dynamic_shapes",
            CheckId::Precision(precision) => match precision {
                Precision::Fp16 => "fp16_matches_reference",
                Precision::Int8 => "int8_matches_reference",
                Precision::Int8Avx2 => "int8_avx2_matches_reference",
                Precision::Q4 => "q4_matches_reference",
                Precision::Q4f16 => "q4f16_matches_reference",
                Precision::Qdq8 => "qdq8_matches_reference",
                Precision::NncfInt8 => "nncf_int8_matches_reference",
                Precision::NncfInt4 => "nncf_int4_matches_reference",
                Precision::Bnb4 => "bnb4_matches_reference",
                Precision::Q2 => "q2_matches_reference",
                Precision::Q2f16 => "q2f16_matches_reference",
            },
            CheckId::Generates => "generates",
            CheckId::Quantization(scheme) => match scheme {
                QuantScheme::Fp16 => "fp16_quantization",
                QuantScheme::Int8 => "int8_quantization",
                QuantScheme::Int4 => "int4_quantization",
                QuantScheme::Int4Mixed => "int4_mixed_quantization",
                QuantScheme::Int2 => "int2_quantization",
            },
        }
    }

    /// Whether `name` is its name, in a const context: `runtime::checks!` asserts it, so a
    /// generated test named otherwise than the check it runs does not build.
    pub const fn is_named(self, name: &str) -> bool {
        let (own, other) = (self.name().as_bytes(), name.as_bytes());
        if own.len() != other.len() {
            return false;
        }
        let mut i = 0;
        while i < own.len() {
            if own[i] != other[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// The check a name names; None for a name no check has.
    pub fn parse(name: &str) -> Option<CheckId> {
        CheckId::ALL.into_iter().find(|check| check.name() == name)
    }

    /// The fixture pipeline's (no platform, no engine).
    pub fn is_pipeline(self) -> bool {
        CheckId::PIPELINE.contains(&self)
    }

    /// One of the float32 checks every runnable cell has.
    pub fn is_float32(self) -> bool {
        CheckId::FLOAT32.contains(&self)
    }

    /// The precision format it checks, for a precision check.
    pub fn precision(self) -> Option<Precision> {
        match self {
            CheckId::Precision(precision) => Some(precision),
            _ => None,
        }
    }

    /// The quantization scheme it rates, for a quantization check.
    pub fn scheme(self) -> Option<QuantScheme> {
        match self {
            CheckId::Quantization(scheme) => Some(scheme),
            _ => None,
        }
    }

    /// Every check's name, for a message that lists what a name may be.
    pub fn names() -> Vec<&'static str> {
        CheckId::ALL.iter().map(|check| check.name()).collect()
    }
}

impl Ord for CheckId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for CheckId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CheckId {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        CheckId::parse(name).ok_or_else(|| {
            format!(
                "unknown check `{name}`; a check is one of {}",
                CheckId::names().join(", ")
            )
        })
    }
}

impl Serialize for CheckId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for CheckId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every check once, each name its own, and each name parses back to its check.
    #[test]
    fn every_check_is_listed_once_and_its_name_parses_back() {
        assert_eq!(
            CheckId::ALL.len(),
            CheckId::PIPELINE.len()
                + CheckId::FLOAT32.len()
                + Precision::ALL.len()
                + 1
                + QuantScheme::ALL.len(),
            "CheckId::ALL misses a check or lists one twice"
        );
        for precision in Precision::ALL {
            assert!(CheckId::ALL.contains(&CheckId::Precision(precision)));
        }
        for scheme in QuantScheme::ALL {
            assert!(CheckId::ALL.contains(&CheckId::Quantization(scheme)));
        }
        let mut names = CheckId::names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CheckId::ALL.len(), "two checks share a name");
        for check in CheckId::ALL {
            assert_eq!(CheckId::parse(check.name()), Some(check));
            let json = serde_json::to_string(&check).unwrap();
            assert_eq!(json, format!("\"{}\"", check.name()));
            assert_eq!(serde_json::from_str::<CheckId>(&json).unwrap(), check);
        }
    }

    /// The const comparison `runtime::checks!` builds on: its own name only, byte for byte.
    #[test]
    fn a_check_is_named_by_its_own_name_only() {
        for check in CheckId::ALL {
            assert!(check.is_named(check.name()), "{check}");
            for other in CheckId::ALL.into_iter().filter(|other| *other != check) {
                assert!(!check.is_named(other.name()), "{check} is named {other}");
            }
        }
        assert!(!CheckId::Runs.is_named("run"));
        assert!(!CheckId::Runs.is_named("runs "));
        const { assert!(CheckId::Precision(Precision::Int8).is_named("int8_matches_reference")) };
    }

    /// A name no check has is refused with the names a check may have.
    #[test]
    fn an_unknown_name_is_refused_with_the_known_ones() {
        assert_eq!(CheckId::parse("fp16"), None);
        assert_eq!(CheckId::parse("Runs"), None);
        let err = "int3_quantization".parse::<CheckId>().unwrap_err();
        assert!(
            err.contains("unknown check `int3_quantization`") && err.contains("int2_quantization"),
            "{err}"
        );
        let err = serde_json::from_str::<CheckId>("\"matches\"").unwrap_err();
        assert!(err.to_string().contains("unknown check `matches`"), "{err}");
    }
}
