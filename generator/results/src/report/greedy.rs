//! A trained decoder's formats as their users judge them (issue 64): greedy
//! generation from a fixed prompt and the perplexity of a fixed text, each format
//! against float32 on the same engine (checkpoints.py decoding wrote decoding.json;
//! float32 itself against PyTorch's `generate()`). Each becomes a check of the
//! checkpoint's row, with its bound and the bound's source.

use serde::{Deserialize, Serialize};

use super::accuracy::{Bound, RowCheck, bits, bound};

/// The file checkpoints.py decoding writes into the row's folder.
pub const FILE: &str = "decoding.json";

/// decoding.json: the prompt, the text and each format's result on each engine.
#[derive(Debug, Serialize, Deserialize)]
pub struct Decoding {
    pub prompt: String,
    pub new_tokens: usize,
    pub text: String,
    pub text_tokens: usize,
    /// PyTorch's float32 first (the reference), then each format on each engine.
    pub results: Vec<Decoded>,
}

/// One format's greedy tokens and perplexity on one engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Decoded {
    pub format: String,
    /// Which engine ran it: `torch` (the reference), `onnxruntime` or `openvino`.
    pub kind: String,
    /// Its name and version.
    pub engine: String,
    pub tokens: Vec<i64>,
    pub perplexity: Option<f64>,
    /// Where the first non-finite logit appeared, if one did.
    pub non_finite: Option<String>,
    pub continuation: String,
}

const PERPLEXITY: &str = "perplexity over float32's on the same engine";
const GREEDY_SOURCE: &str = "the next-token bound above as a run: a format that keeps float32's next token with that probability at each step keeps the first k tokens with probability p^k; the bound is the longest run it keeps at least half the time (k = ln 0.5 / ln p: 16 for 16-bit floats, 6 for 8 bits, 3 for 4 bits)";
const PERPLEXITY_SOURCE: &str = "llama.cpp's README quantization table (LLaMA 7B, wikitext-2): F16 5.9066, Q8_0 5.9070 (+0.01%), Q4_1 6.0912 (+3.1%), Q4_0 6.1565 (+4.2%); with a margin for a model of 100M-class size, which quantizes worse: at most +1% for a 16-bit float, +5% for 8 bits, +25% for 4 bits";
const FLOAT32_SOURCE: &str = "float32 on another engine: the same arithmetic up to summation order, so every greedy token and the perplexity within 0.1%";

/// The greedy run a format must keep: the longest run of float32's tokens kept at least
/// half the time by a format that keeps each next token with probability `p`.
pub fn greedy_run(p: f64, tokens: usize) -> usize {
    ((0.5f64.ln() / p.ln()).floor() as usize).min(tokens)
}

/// The bounds a format is judged by: its greedy run's share, and its perplexity's ratio.
fn bounds(format: &str, tokens: usize) -> (Bound, Bound) {
    let greedy = |at_least, source: &str| Bound {
        metric: format!(
            "greedy tokens as float32's (share of the first {tokens} before the first difference)"
        ),
        at_least: Some(at_least),
        at_most: None,
        source: source.into(),
    };
    let perplexity = |at_most, source: &str| Bound {
        metric: PERPLEXITY.into(),
        at_least: None,
        at_most: Some(at_most),
        source: source.into(),
    };
    let Some(bits) = bits(format) else {
        return (
            greedy(1.0, FLOAT32_SOURCE),
            perplexity(1.001, FLOAT32_SOURCE),
        );
    };
    let p = bound("text_decoders", format)
        .and_then(|b| b.at_least)
        .expect("every format of a decoder has a next-token bound");
    let run = greedy_run(p, tokens) as f64 / tokens as f64;
    let ratio = match bits {
        16 => 1.01,
        8 => 1.05,
        _ => 1.25,
    };
    (
        greedy(run, GREEDY_SOURCE),
        perplexity(ratio, PERPLEXITY_SOURCE),
    )
}

/// How many of `tokens` match `reference` before the first difference.
fn kept(tokens: &[i64], reference: &[i64]) -> usize {
    tokens
        .iter()
        .zip(reference)
        .take_while(|(a, b)| a == b)
        .count()
}

/// The platform and engine a result ran on, as the row names them.
fn placed(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "openvino" => ("openvino", "openvino (Python)"),
        _ => ("cpu", "onnxruntime (Python)"),
    }
}

impl Decoding {
    /// Each format's two checks, judged against float32 on its engine (float32 against PyTorch).
    pub fn checks(&self) -> Vec<RowCheck> {
        let Some((torch, rest)) = self.results.split_first() else {
            return vec![];
        };
        let mut checks = Vec::new();
        for result in rest {
            let reference = match result.format.as_str() {
                "float32" => torch,
                _ => rest
                    .iter()
                    .find(|r| r.format == "float32" && r.kind == result.kind)
                    .unwrap_or(torch),
            };
            let (platform, engine) = placed(&result.kind);
            let (greedy, perplexity) = bounds(&result.format, self.new_tokens);
            let matched = kept(&result.tokens, &reference.tokens);
            let ratio = result
                .perplexity
                .zip(reference.perplexity)
                .map(|(p, r)| p / r);
            let measured = [
                (
                    greedy,
                    "greedy_generation",
                    Some(matched as f64 / self.new_tokens as f64),
                ),
                (perplexity, "perplexity", ratio),
            ];
            for (bound, check, value) in measured {
                let verdict = match (&result.non_finite, value) {
                    (Some(where_), _) => format!("non-finite values: {where_}"),
                    (None, Some(v)) => bound.verdict(v),
                    (None, None) => "no perplexity: a non-finite loss".into(),
                };
                let held =
                    result.non_finite.is_none() && value.and_then(|v| bound.holds(v)) == Some(true);
                checks.push(RowCheck {
                    platform: platform.into(),
                    engine: engine.into(),
                    check: check.into(),
                    precision: result.format.clone(),
                    status: if held { "passed" } else { "failed" }.into(),
                    value,
                    verdict,
                    bound: Some(bound),
                    median_ms: None,
                    record: FILE.into(),
                });
            }
        }
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(format: &str, engine: &str, tokens: &[i64], perplexity: f64) -> Decoded {
        Decoded {
            format: format.into(),
            kind: match engine.split(' ').next() {
                Some("OpenVINO") => "openvino",
                Some("PyTorch") => "torch",
                _ => "onnxruntime",
            }
            .into(),
            engine: engine.into(),
            tokens: tokens.to_vec(),
            perplexity: Some(perplexity),
            non_finite: None,
            continuation: String::new(),
        }
    }

    #[test]
    fn greedy_runs_follow_from_the_next_token_bounds() {
        assert_eq!(greedy_run(0.99, 16), 16);
        assert_eq!(greedy_run(0.90, 16), 6);
        assert_eq!(greedy_run(0.80, 16), 3);
    }

    /// SmolLM2-135M-Instruct's figures on 2026-12-06 (a 4-token prompt's continuation, trimmed).
    #[test]
    fn each_format_is_judged_against_float32_on_its_engine() {
        let ort = "ONNX Runtime 1.31.1 CPUExecutionProvider";
        let ov = "OpenVINO 2026.4.1 CPU";
        let decoding = Decoding {
            prompt: "The capital of France is".into(),
            new_tokens: 4,
            text: String::new(),
            text_tokens: 77,
            results: vec![
                decoded(
                    "float32",
                    "PyTorch 2.13.0 CPU (generate)",
                    &[7042, 30, 198, 198],
                    27.582,
                ),
                decoded("float32", ort, &[7042, 30, 198, 198], 27.583),
                decoded("int8", ort, &[7042, 28, 284, 357], 39.099),
                decoded("q4", ort, &[4723, 216, 35, 33], 28.706),
                decoded("float32", ov, &[7042, 30, 198, 198], 27.583),
                decoded("nncf_int8", ov, &[7042, 30, 198, 198], 27.992),
            ],
        };
        let checks = decoding.checks();
        let said = |format: &str, engine: &str, check: &str| {
            let c = checks
                .iter()
                .find(|c| c.precision == format && c.engine == engine && c.check == check)
                .unwrap();
            (c.status.clone(), c.verdict.clone())
        };
        let ort = "onnxruntime (Python)";
        assert_eq!(said("float32", ort, "greedy_generation").0, "passed");
        // 4 tokens: the 8-bit run is 4 (ln 0.5 / ln 0.9 = 6.6, capped), int8 keeps 1.
        assert_eq!(
            said("int8", ort, "greedy_generation").1,
            "loses accuracy (0.2500 < 1)"
        );
        assert_eq!(
            said("int8", ort, "perplexity").1,
            "loses accuracy (1.4175 > 1.05)"
        );
        assert_eq!(said("q4", ort, "perplexity").0, "passed");
        assert_eq!(
            said("nncf_int8", "openvino (Python)", "perplexity"),
            ("passed".into(), "keeps its accuracy (1.0148 ≤ 1.05)".into())
        );
        let mut broken = decoding;
        broken.results[2].non_finite = Some("3 non-finite logits at generation step 0".into());
        let checks = broken.checks();
        let int8 = checks.iter().find(|c| c.precision == "int8").unwrap();
        assert_eq!(int8.status, "failed");
        assert!(
            int8.verdict.contains("at generation step 0"),
            "{}",
            int8.verdict
        );
    }
}
