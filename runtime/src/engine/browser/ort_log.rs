//! Where onnxruntime-web placed each node, from its own verbose log: at
//! session creation ORT's `VerifyEachNodeIsAssignedToAnEp` writes either
//! "All nodes placed on [X]. Number of nodes: N" or, per provider,
//! " Node(s) placed on [X]. Number of nodes: N" followed by one
//! "  OpType (node name)" line per node.

use std::collections::{BTreeMap, HashSet};

use crate::error::{CheckError, ErrorKind};
#[cfg(test)]
use crate::placement::{CPU_PREFERRED, INTEGER_ON_CPU, OPTIMIZER_DATA_MOVEMENT};
use crate::placement::{GraphNodes, OpPlacement};

const TAG: &str = "VerifyEachNodeIsAssignedToAnEp]";

/// What a whole-graph placement is listed as when ORT gives no op types.
pub const ALL_NODES: &str = "(all nodes)";

const CANDIDATE: &str = "Candidate for fallback CPU execution: ";

const CPU: &str = "CPUExecutionProvider";

/// The placements in `log`. A node on ORT's CPU provider is exempt when the
/// evidence clears it ([`GraphNodes::cpu_exemption`], with the log's CPU
/// candidates). Every other node off the requested provider is a fallback the
/// check judges.
pub fn placements(log: &[String], nodes: &GraphNodes) -> Result<Vec<OpPlacement>, CheckError> {
    let candidates: HashSet<&str> = log
        .iter()
        .filter_map(|l| l.find(CANDIDATE).map(|at| l[at + CANDIDATE.len()..].trim()))
        .collect();
    let mut counts: BTreeMap<(String, String, Option<&'static str>), usize> = BTreeMap::new();
    let mut provider: Option<String> = None;
    for line in log {
        let Some(at) = line.find(TAG) else { continue };
        let body = &line[at + TAG.len()..];
        if let Some((name, nodes)) = placed_on(body, "All nodes placed on [") {
            return Ok(vec![OpPlacement {
                op: ALL_NODES.into(),
                provider: name,
                nodes,
                kernel_us: 0,
                exempt: None,
            }]);
        }
        if let Some((name, _)) = placed_on(body, "Node(s) placed on [") {
            provider = Some(name);
            continue;
        }
        if let (Some(provider), Some((op, node))) = (&provider, node_line(body)) {
            let exempt = if provider == CPU {
                nodes.cpu_exemption(op, node, &candidates)
            } else {
                None
            };
            *counts
                .entry((op.to_string(), provider.clone(), exempt))
                .or_default() += 1;
        }
    }
    if counts.is_empty() {
        return Err(CheckError::new(
            ErrorKind::ProviderUnverified,
            "onnxruntime-web's log has no node placements (VerifyEachNodeIsAssignedToAnEp): the session was not opened with logSeverityLevel 0, or this onnxruntime-web no longer logs them",
        ));
    }
    Ok(counts
        .into_iter()
        .map(|((op, provider, exempt), nodes)| OpPlacement {
            op,
            provider,
            nodes,
            kernel_us: 0,
            exempt,
        })
        .collect())
}

/// `  OpType (node name)`: the op type and the node's name.
fn node_line(body: &str) -> Option<(&str, &str)> {
    let (op, rest) = body.trim().split_once(" (")?;
    let name = rest.strip_suffix(')')?;
    (!op.is_empty() && op.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some((op, name))
}

/// `[Provider]. Number of nodes: N` after `prefix`.
fn placed_on(body: &str, prefix: &str) -> Option<(String, usize)> {
    let rest = &body[body.find(prefix)? + prefix.len()..];
    let (name, rest) = rest.split_once(']')?;
    let nodes = rest
        .split_once("Number of nodes:")
        .map(|(_, n)| n.trim().parse().unwrap_or(0))
        .unwrap_or(0);
    Some((name.to_string(), nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines()
            .map(|l| format!("[V:onnxruntime:, session_state.cc:1 {TAG}{l}"))
            .collect()
    }

    #[test]
    fn a_graph_wholly_on_one_provider() {
        let got = placements(
            &lines(" All nodes placed on [JsExecutionProvider]. Number of nodes: 25"),
            &GraphNodes::default(),
        )
        .unwrap();
        assert_eq!(
            got,
            vec![OpPlacement {
                op: ALL_NODES.into(),
                provider: "JsExecutionProvider".into(),
                nodes: 25,
                kernel_us: 0,
                exempt: None
            }]
        );
    }

    #[test]
    fn nodes_listed_per_provider_are_counted_by_op_and_cleared_ones_exempt_on_cpu() {
        // As onnxruntime-web 1.30 writes it for bert (the warning shares the tag).
        let log = lines(
            "  Node(s) placed on [JsExecutionProvider]. Number of nodes: 2\n   MatMul (/l/MatMul)\n   MatMul (/l2/MatMul)\n  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 3\n   Shape (/Shape)\n   Gather (/Gather)\n   Gather (/emb/Gather)\n Some nodes were not assigned to the preferred execution providers which may or may not have an negative impact on performance. e.g. ORT explicitly assigns shape related ops to CPU to improve perf.\u{1b}[m",
        );
        let nodes = GraphNodes::new(
            &["/Shape".into(), "/Gather".into()],
            &[
                "/emb/Gather".into(),
                "/l/MatMul".into(),
                "/l2/MatMul".into(),
            ],
        );
        let got = placements(&log, &nodes).unwrap();
        let js = "JsExecutionProvider".to_string();
        let cpu = CPU.to_string();
        assert_eq!(
            got,
            vec![
                OpPlacement {
                    op: "Gather".into(),
                    provider: cpu.clone(),
                    nodes: 1,
                    kernel_us: 0,
                    exempt: None
                },
                OpPlacement {
                    op: "Gather".into(),
                    provider: cpu.clone(),
                    nodes: 1,
                    kernel_us: 0,
                    exempt: Some(INTEGER_ON_CPU)
                },
                OpPlacement {
                    op: "MatMul".into(),
                    provider: js,
                    nodes: 2,
                    kernel_us: 0,
                    exempt: None
                },
                OpPlacement {
                    op: "Shape".into(),
                    provider: cpu,
                    nodes: 1,
                    kernel_us: 0,
                    exempt: Some(INTEGER_ON_CPU)
                },
            ]
        );
    }

    #[test]
    fn candidates_and_optimizer_made_data_movement_are_exempt_but_not_optimizer_made_arithmetic() {
        let mut log = vec![format!(
            "[I:onnxruntime:, fallback_cpu_capability.cc:89 operator()] {CANDIDATE}/pos/Gather"
        )];
        log.extend(lines(
            "  Node(s) placed on [JsExecutionProvider]. Number of nodes: 1\n   MatMul (/l/MatMul)\n  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 3\n   Gather (/pos/Gather)\n   Squeeze (Squeeze_token_18)\n   Abs (Abs_token_3)",
        ));
        let nodes = GraphNodes::new(&[], &["/pos/Gather".into(), "/l/MatMul".into()]);
        let got = placements(&log, &nodes).unwrap();
        let exempt = |op: &str| got.iter().find(|p| p.op == op).unwrap().exempt;
        assert_eq!(exempt("Gather"), Some(CPU_PREFERRED));
        assert_eq!(exempt("Squeeze"), Some(OPTIMIZER_DATA_MOVEMENT));
        assert_eq!(exempt("Abs"), None);
    }

    #[test]
    fn a_log_without_placements_is_unverified() {
        let err = placements(&["some other line".to_string()], &GraphNodes::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::ProviderUnverified);
    }
}
