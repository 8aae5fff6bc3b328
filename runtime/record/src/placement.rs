//! Where a check's operators ran, from the engine's own account.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A provider's share of a run, by node count and by profiled kernel time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderShare {
    pub provider: String,
    pub nodes: usize,
    pub node_share: f64,
    pub kernel_us: u64,
    pub time_share: f64,
}

/// Operators that ran off the requested provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fallback {
    pub op: String,
    pub provider: String,
    pub nodes: usize,
    /// The spec's reason when it allows this fallback; None means not allowed.
    pub allowed_because: Option<String>,
}

/// The placement evidence of one check, as its record keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderEvidence {
    pub requested: String,
    /// Provider options asked for (e.g. CoreML's MLComputeUnits), from hardware.yaml.
    pub options: BTreeMap<String, String>,
    pub shares: Vec<ProviderShare>,
    pub fallback: Vec<Fallback>,
    /// Every node on the requested provider, or off it only where allowed.
    pub verified: bool,
}

impl ProviderEvidence {
    pub fn summary(&self) -> String {
        let shares: Vec<String> = self
            .shares
            .iter()
            .map(|s| {
                format!(
                    "{}: {} nodes ({:.0}%), {} µs ({:.0}%)",
                    s.provider,
                    s.nodes,
                    s.node_share * 100.0,
                    s.kernel_us,
                    s.time_share * 100.0
                )
            })
            .collect();
        shares.join("; ")
    }

    /// The operators that fell back without the spec allowing it, for messages.
    pub fn disallowed(&self) -> Vec<String> {
        self.fallback
            .iter()
            .filter(|f| f.allowed_because.is_none())
            .map(|f| format!("{} ×{} on {}", f.op, f.nodes, f.provider))
            .collect()
    }
}
