//! How far a spec or a cell got, one stage at a time, in the manner of
//! ExecuTorch's backend test suite (QUANTIZE_FAIL, LOWER_FAIL, PTE_RUN_FAIL,
//! OUTPUT_MISMATCH_FAIL, SUCCESS_UNDELEGATED).
//!
//! The first two stages are our harness's: a spec that stops there was never
//! put on any platform, so its cells are *not tested*, our gap, and never a
//! known issue of the model or of a platform. `export` is a fact about the
//! model and the exporters; `load`, `run` and `mismatch` are facts about the
//! model on one engine; `fallback` and `pass` are successes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The harness could not build the tiny config (transformers or diffusers refused it).
    Config,
    /// The harness could not build or run the tiny PyTorch model on its derived inputs.
    Reference,
    /// torch.onnx (both exporters) or TorchScript failed on the model.
    Export,
    /// The engine could not load the exported model (or its provider refused it).
    Load,
    /// The engine failed while running it, or ran part of it off the platform's provider.
    Run,
    /// It ran, but its outputs differ from the PyTorch reference (or are not as declared).
    Mismatch,
    /// Passed, with operators on another provider that the spec declares, with its reason.
    Fallback,
    /// Passed, every node on the platform's provider.
    Pass,
}

impl Stage {
    pub const ALL: [Stage; 8] = [
        Stage::Config,
        Stage::Reference,
        Stage::Export,
        Stage::Load,
        Stage::Run,
        Stage::Mismatch,
        Stage::Fallback,
        Stage::Pass,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Config => "config",
            Stage::Reference => "reference",
            Stage::Export => "export",
            Stage::Load => "load",
            Stage::Run => "run",
            Stage::Mismatch => "mismatch",
            Stage::Fallback => "fallback",
            Stage::Pass => "pass",
        }
    }

    /// Whether a spec stopped in our own harness, before any engine was tried:
    /// its cells are not tested (our gap), not known issues.
    pub fn is_harness(self) -> bool {
        matches!(self, Stage::Config | Stage::Reference)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Stage {
    type Err = String;

    fn from_str(s: &str) -> Result<Stage, String> {
        Stage::ALL
            .into_iter()
            .find(|stage| stage.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown stage `{s}`; stages: {}",
                    Stage::ALL.map(Stage::name).join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_parse_by_name_and_say_whose_they_are() {
        assert!(Stage::Reference.is_harness() && !Stage::Export.is_harness());
        assert_eq!("mismatch".parse::<Stage>(), Ok(Stage::Mismatch));
        assert!(
            "lowered"
                .parse::<Stage>()
                .unwrap_err()
                .contains("config, reference, export")
        );
    }
}
