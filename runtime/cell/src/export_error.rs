//! What `gen fixtures` keeps of a generation export that failed, for the
//! cells' `generates` checks to report: the exporter's whole error and the
//! stage it stopped at, as values (`<fixtures>/generation/<model>.error.txt`,
//! JSON). Who failed follows from the stage: torch.onnx's exporters (the
//! model with the standard tool) or our exporter's own limit before them.

use serde::{Deserialize, Serialize};

use crate::Stage;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportError {
    /// `export`: every torch.onnx exporter tried failed; `reference`: our
    /// exporter stopped before torch.onnx ran.
    pub stage: Stage,
    pub error: String,
}

impl ExportError {
    /// Reads an error file. One written before the stage was kept is plain
    /// text, read by its words (the one place that reads them): torch.onnx's
    /// exporters name themselves in it.
    pub fn read(text: &str) -> ExportError {
        serde_json::from_str(text).unwrap_or_else(|_| {
            let error = text.trim().to_string();
            let torch_onnx =
                error.contains("legacy exporter: ") || error.contains("dynamo exporter: ");
            ExportError {
                stage: if torch_onnx {
                    Stage::Export
                } else {
                    Stage::Reference
                },
                error,
            }
        })
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an ExportError serialises") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stage_is_a_value_and_older_files_are_read_by_their_words() {
        let typed = ExportError {
            stage: Stage::Reference,
            error: "a legacy exporter: message that only quotes words".into(),
        };
        assert_eq!(ExportError::read(&typed.to_json()), typed);
        assert_eq!(
            ExportError::read("RuntimeError: legacy exporter: x; dynamo exporter: y\n").stage,
            Stage::Export
        );
        assert_eq!(
            ExportError::read("RuntimeError: the model's cache is a HybridCache\n").stage,
            Stage::Reference
        );
    }
}
