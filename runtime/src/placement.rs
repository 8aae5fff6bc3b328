//! Where the operators of a run executed, and whether that is the platform
//! the cell asked for. One rule for every platform: every node runs on the
//! requested provider, except operators the spec allows to fall back (each
//! with its reason). "At least one node on the GPU" is not a verified GPU.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::AllowedFallback;
pub use hwmatrix_record::{Fallback, ProviderEvidence, ProviderShare};

/// Node executions of one operator type on one provider.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpPlacement {
    pub op: String,
    pub provider: String,
    pub nodes: usize,
    /// Profiled kernel time, summed.
    pub kernel_us: u64,
    /// Why the engine's own evidence clears these nodes to run off the
    /// requested provider (e.g. integer shape arithmetic); None for most.
    pub exempt: Option<&'static str>,
}

/// What the fixture says of the exported graph's named nodes (its
/// `integer_nodes`), for engines that report placements by node name.
#[derive(Clone, Debug, Default)]
pub struct GraphNodes {
    /// Nodes computing on index and shape data only.
    pub integer: std::collections::HashSet<String>,
    /// Nodes computing on floating-point data.
    pub float: std::collections::HashSet<String>,
}

impl GraphNodes {
    pub fn new(integer: &[String], float: &[String]) -> GraphNodes {
        GraphNodes {
            integer: integer.iter().cloned().collect(),
            float: float.iter().cloned().collect(),
        }
    }

    /// A node the fixture's graph does not have: ONNX Runtime's optimizer
    /// made it. Unknowable without the fixture's lists.
    pub fn made_by_optimizer(&self, name: &str) -> bool {
        let has_lists = !self.integer.is_empty() || !self.float.is_empty();
        has_lists && !self.integer.contains(name) && !self.float.contains(name)
    }

    /// Why a node ONNX Runtime ran on its CPU provider may run there, where a
    /// WebGPU provider (the browser's or the native plugin, the same kernels)
    /// was asked for: the fixture lists it as integer-only ([`INTEGER_ON_CPU`]),
    /// ORT's log names it a CPU candidate ([`CPU_PREFERRED`]; `candidates`,
    /// empty where the engine's log is not read), or ORT's optimizer made it
    /// and it only moves data ([`OPTIMIZER_DATA_MOVEMENT`]). None: a fallback
    /// the check judges.
    pub fn cpu_exemption(
        &self,
        op: &str,
        node: &str,
        candidates: &std::collections::HashSet<&str>,
    ) -> Option<&'static str> {
        if self.integer.contains(node) {
            Some(INTEGER_ON_CPU)
        } else if candidates.contains(node) {
            Some(CPU_PREFERRED)
        } else if self.made_by_optimizer(node) && DATA_MOVEMENT.contains(&op) {
            Some(OPTIMIZER_DATA_MOVEMENT)
        } else {
            None
        }
    }
}

/// Why an integer-only node may run on ORT's CPU provider.
pub const INTEGER_ON_CPU: &str = "index and shape arithmetic (no floating-point output or input, per the fixture's integer_nodes), which ONNX Runtime leaves to its CPU provider by design";

/// Why a node ORT itself moved to the CPU may run there.
pub const CPU_PREFERRED: &str = "ONNX Runtime chose the CPU for it though the provider supports it (its log: \"Candidate for fallback CPU execution\" in the browser, \"Force fallback to CPU execution\" natively: a small node on the way to CPU shape computations)";

/// Why a data-movement node ORT's optimizer made may run on the CPU.
pub const OPTIMIZER_DATA_MOVEMENT: &str = "a data-movement node ONNX Runtime's optimizer made (not in the fixture's graph, so of unknown type): it moves or reshapes data and computes nothing";

/// Operators that move, select or reshape data without arithmetic.
const DATA_MOVEMENT: [&str; 12] = [
    "Concat",
    "Expand",
    "Flatten",
    "Gather",
    "Identity",
    "Reshape",
    "Shape",
    "Slice",
    "Split",
    "Squeeze",
    "Transpose",
    "Unsqueeze",
];

/// Judges a run's placement against the requested provider and the allowed fallbacks.
pub fn judge(
    requested: &str,
    options: &[(&str, &str)],
    ops: &[OpPlacement],
    allowed: &[AllowedFallback],
) -> ProviderEvidence {
    let total_nodes: usize = ops.iter().map(|o| o.nodes).sum();
    let total_us: u64 = ops.iter().map(|o| o.kernel_us).sum();
    let mut by_provider: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for o in ops {
        let entry = by_provider.entry(&o.provider).or_default();
        entry.0 += o.nodes;
        entry.1 += o.kernel_us;
    }
    let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    let shares = by_provider
        .into_iter()
        .map(|(provider, (nodes, us))| ProviderShare {
            provider: provider.to_string(),
            nodes,
            node_share: share(nodes as f64, total_nodes as f64),
            kernel_us: us,
            time_share: share(us as f64, total_us as f64),
        })
        .collect();
    let fallback: Vec<Fallback> = ops
        .iter()
        .filter(|o| o.provider != requested)
        .map(|o| Fallback {
            op: o.op.clone(),
            provider: o.provider.clone(),
            nodes: o.nodes,
            allowed_because: allowed
                .iter()
                .find(|a| a.op == o.op)
                .map(|a| a.reason)
                .or(o.exempt)
                .map(str::to_string),
        })
        .collect();
    let verified = total_nodes > 0 && fallback.iter().all(|f| f.allowed_because.is_some());
    ProviderEvidence {
        requested: requested.to_string(),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        shares,
        fallback,
        verified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(op: &str, provider: &str, nodes: usize, us: u64) -> OpPlacement {
        OpPlacement {
            op: op.into(),
            provider: provider.into(),
            nodes,
            kernel_us: us,
            exempt: None,
        }
    }

    const CUDA: &str = "CUDAExecutionProvider";
    const CPU: &str = "CPUExecutionProvider";

    #[test]
    fn one_node_on_the_accelerator_is_not_enough() {
        let ops = [op("MatMul", CUDA, 1, 10), op("Add", CPU, 9, 90)];
        let evidence = judge(CUDA, &[], &ops, &[]);
        assert!(!evidence.verified);
        assert_eq!(
            evidence.disallowed(),
            vec!["Add ×9 on CPUExecutionProvider"]
        );
        let cuda = evidence.shares.iter().find(|s| s.provider == CUDA).unwrap();
        assert!((cuda.node_share - 0.1).abs() < 1e-9 && (cuda.time_share - 0.1).abs() < 1e-9);
    }

    #[test]
    fn allowed_fallback_passes_and_is_recorded() {
        let ops = [op("MatMul", CUDA, 5, 50), op("Shape", CPU, 2, 1)];
        let allowed = [AllowedFallback {
            op: "Shape",
            reason: "shape ops run on CPU by design",
        }];
        let evidence = judge(CUDA, &[("device_id", "0")], &ops, &allowed);
        assert!(evidence.verified);
        assert_eq!(
            evidence.fallback[0].allowed_because.as_deref(),
            Some("shape ops run on CPU by design")
        );
        assert_eq!(evidence.options["device_id"], "0");
    }

    #[test]
    fn no_nodes_is_not_verified() {
        assert!(!judge(CPU, &[], &[], &[]).verified);
        assert!(judge(CPU, &[], &[op("Add", CPU, 3, 3)], &[]).verified);
    }
}
