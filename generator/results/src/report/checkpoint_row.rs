//! One trained checkpoint's row of the matrix (`gen checkpoint`): every check its
//! cells ran on the checkpoint's weights, each format judged by what its users
//! measure against a bound fixed before the run (and where the bound comes from),
//! each format's memory, and each step's time; in Markdown and in HTML.
//!
//! What the row claims: the float32 checks say the architecture runs and agrees
//! with PyTorch on these weights, as on the tiny fixtures; a format's check on
//! these weights is an accuracy verdict, which no tiny random model can give.

use std::fmt::Write as _;

use hwmatrix_record::Record;
use serde::{Deserialize, Serialize};

use super::accuracy::{
    Bound, NO_NEXT_TOKEN, POOLED_COSINE, RowCheck, SAME_NEXT_TOKEN, WORST_ROW_COSINE, bound,
};
use super::greedy::Decoding;
use super::template::{html_escape as esc, markdown_escape as escape};

/// Judges one record by its users' metric: the lowest value over its outputs.
pub fn judge(record: &Record, record_id: &str) -> RowCheck {
    let outputs = record
        .deviation
        .as_ref()
        .map(|d| d.outputs.as_slice())
        .unwrap_or_default();
    let non_finite = outputs.iter().find(|o| !o.max_abs.is_finite());
    let measure = |b: &Bound| {
        outputs
            .iter()
            .filter_map(|o| {
                let a = o.agreement.as_ref()?;
                match b.metric.as_str() {
                    SAME_NEXT_TOKEN => a.top1,
                    POOLED_COSINE => a.pooled_cosine_min.or(a.cosine_min),
                    _ => a.cosine_min,
                }
            })
            .reduce(f64::min)
    };
    // wgpu's quantization checks judge a layer's kernels, not the model's outputs: their own verdict.
    let kernels = record.quantization.is_some()
        || hwmatrix_cell::CheckId::parse(&record.check).is_some_and(|c| c.scheme().is_some());
    let mut bound = bound(&record.category, &record.precision).filter(|_| !kernels);
    let mut value = bound.as_ref().and_then(measure);
    // A decoder whose fixture is its base model (hidden states, no logits) has no next token.
    if value.is_none() && bound.as_ref().is_some_and(|b| b.metric == SAME_NEXT_TOKEN) {
        let cosine = Bound {
            metric: WORST_ROW_COSINE.into(),
            at_least: None,
            at_most: None,
            source: NO_NEXT_TOKEN.into(),
        };
        value = measure(&cosine);
        bound = Some(cosine);
    }
    let status = format!("{:?}", record.status).to_lowercase();
    let reason = record
        .reason
        .as_deref()
        .map(|r| hwmatrix_specs::text::shorten(r, 200))
        .unwrap_or_default();
    let verdict = match (&bound, value) {
        _ if non_finite.is_some() => {
            format!(
                "non-finite values in {}",
                non_finite.map(|o| o.output.as_str()).unwrap_or_default()
            )
        }
        (None, _) if status == "passed" && record.precision == "float32" => {
            "runs and agrees with PyTorch on these weights".into()
        }
        (None, _) if status == "passed" => "passed its own check".into(),
        (None, _) => format!("failed: {reason}"),
        (Some(b), None) if status == "passed" => format!("passed; no {} recorded", b.metric),
        (Some(_), None) if record.deviation.is_none() => {
            format!("failed before any output: {reason}")
        }
        (Some(b), None) => format!("no {} recorded", b.metric),
        (Some(b), Some(v)) => b.verdict(v),
    };
    RowCheck {
        platform: record.platform.name().to_string(),
        engine: record.engine_kind.module(record.platform).to_string(),
        check: record.check.clone(),
        precision: record.precision.clone(),
        status,
        bound,
        value,
        verdict,
        median_ms: record.timing.as_ref().map(|t| t.median_ms),
        record: record_id.to_string(),
    }
}

/// A format's weights: its file here beside what its config computes to.
#[derive(Debug, Serialize, Deserialize)]
pub struct FormatMemory {
    pub format: String,
    pub file_bytes: Option<u64>,
    pub computed_bytes: Option<u64>,
}

/// The formats a checkpoint's fixture holds, float32 first (the precision tables' order).
pub const FORMATS: [&str; 12] = super::precision::FORMAT_ORDER;

/// A format's file in a fixture folder (NNCF's: the IR's weights).
pub fn format_file(format: &str) -> String {
    match format {
        "float32" => "model.onnx".into(),
        "nncf_int8" | "nncf_int4" => format!("model.{format}.bin"),
        other => format!("model.{other}.onnx"),
    }
}

/// A format's key in `gen memory`'s computed weights.
pub fn computed_key(format: &str) -> &str {
    match format {
        "float32" => "fp32",
        "int8_avx2" => "int8",
        other => other,
    }
}

/// A step of the command, timed.
#[derive(Debug, Serialize, Deserialize)]
pub struct Step {
    pub step: String,
    pub seconds: f64,
}

/// The row, as `gen checkpoint` writes it.
#[derive(Debug, Serialize, Deserialize)]
pub struct CheckpointRow {
    pub name: String,
    pub path: String,
    pub model_type: String,
    pub parameters: Option<u64>,
    pub float32_bytes: u64,
    pub run_id: String,
    pub checks: Vec<RowCheck>,
    pub formats: Vec<FormatMemory>,
    pub steps: Vec<Step>,
    /// Platforms this machine cannot run, each with what is missing.
    pub not_run: Vec<(String, String)>,
    /// Where these weights stand against float16's range (checkpoints.py ranges), or why
    /// it was not measured.
    pub range: Measured<Range>,
    /// A decoder's greedy generation and perplexity per format (checkpoints.py decoding),
    /// or why they were not measured; None for a model that does not generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<Measured<Decoding>>,
}

/// Evidence a step measured, or why it was not measured (in JSON: the evidence itself,
/// or `{"not_measured": why}`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Measured<T> {
    NotMeasured { not_measured: String },
    Measured(T),
}

impl<T> Measured<T> {
    pub fn ok(&self) -> Option<&T> {
        match self {
            Measured::Measured(t) => Some(t),
            Measured::NotMeasured { .. } => None,
        }
    }
}

impl<T> From<Result<T, String>> for Measured<T> {
    fn from(result: Result<T, String>) -> Self {
        match result {
            Ok(t) => Measured::Measured(t),
            Err(not_measured) => Measured::NotMeasured { not_measured },
        }
    }
}

/// A text checkpoint's float32 activations against float16's largest finite value
/// (65504), on the texts its fixture feeds, and where torch's own float16 forward
/// pass first goes non-finite: what an fp16 verdict of these weights rests on.
#[derive(Debug, Serialize, Deserialize)]
pub struct Range {
    pub largest_float32_outputs: Vec<RangeRow>,
    #[serde(default)]
    pub largest_float32_norm_input_squares: Vec<RangeRow>,
    pub float16_first_non_finite: Option<String>,
    pub conditions: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct RangeRow {
    pub module: String,
    pub abs_max: f64,
    pub of_float16_max: f64,
}

/// A table: its title, a sentence under it, its header and its rows.
struct Table {
    title: &'static str,
    about: String,
    /// Shown without rows (its sentence says why there are none), else left out.
    shown_empty: bool,
    header: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

fn mb(bytes: Option<u64>) -> String {
    bytes
        .map(|b| format!("{:.1}", b as f64 / 1e6))
        .unwrap_or_default()
}

impl Range {
    /// Where these weights leave float16's range, if they do: the first module torch's own
    /// float16 pass makes non-finite, else the largest float32 output beyond 65504.
    pub fn overflow(&self) -> Option<String> {
        if let Some(module) = &self.float16_first_non_finite {
            return Some(format!(
                "torch's own float16 pass goes non-finite in {module}"
            ));
        }
        let output = self
            .largest_float32_outputs
            .first()
            .filter(|r| r.of_float16_max > 1.0)
            .map(|r| {
                format!(
                    "{} reaches {:.0}, {:.0}% of float16's largest",
                    r.module,
                    r.abs_max,
                    r.of_float16_max * 100.0
                )
            });
        // Within range everywhere but in the squares a norm sums: an fp16 graph that keeps
        // the norm in float16 overflows there (transformers' own keeps it in float32).
        output.or_else(|| {
            self.largest_float32_norm_input_squares
                .first()
                .filter(|r| r.of_float16_max > 1.0)
                .map(|r| {
                    let (module, _) = r.module.split_once(':').unwrap_or((&r.module, ""));
                    format!(
                        "the squares {module} sums reach {:.2e}, {:.0} times float16's largest (a norm computed in float16 overflows there)",
                        r.abs_max, r.of_float16_max
                    )
                })
        })
    }
}

impl Range {
    /// The range evidence in one sentence: the largest output, the largest square a norm
    /// sums, and torch's own float16 pass.
    pub fn summary(&self) -> String {
        let mut said = Vec::new();
        if let Some(r) = self.largest_float32_outputs.first() {
            said.push(format!(
                "largest float32 output {:.0} in {} ({:.1}% of float16's largest)",
                r.abs_max,
                r.module,
                r.of_float16_max * 100.0
            ));
        }
        if let Some(r) = self.largest_float32_norm_input_squares.first() {
            said.push(format!(
                "largest square a norm sums {:.2e} in {} ({:.3} times float16's largest)",
                r.abs_max, r.module, r.of_float16_max
            ));
        }
        said.push(match &self.float16_first_non_finite {
            Some(m) => format!("torch's own float16 pass first non-finite in {m}"),
            None => "torch's own float16 pass finite throughout".into(),
        });
        said.join("; ")
    }
}

impl CheckpointRow {
    /// Each 16-bit format's verdict with where these weights leave float16's range.
    pub fn say_where_float16_overflows(&mut self) {
        let Some(overflow) = self.range.ok().and_then(Range::overflow) else {
            return;
        };
        for check in self
            .checks
            .iter_mut()
            .filter(|c| c.precision.contains("16"))
        {
            check.verdict = format!("{}; range: {overflow}", check.verdict);
        }
    }

    fn tables(&self) -> Vec<Table> {
        let checks = Table {
            title: "Checks on the trained weights",
            shown_empty: false,
            about: "Float32 checks say the architecture runs and agrees with PyTorch on these weights. \
                    A format's check here is an accuracy verdict: its users' metric against a bound fixed \
                    before the run (the source column says where it comes from)."
                .into(),
            header: vec![
                "platform", "engine", "check", "format", "check's verdict", "users' metric", "value",
                "bound", "the row says", "median ms", "record", "bound's source",
            ],
            rows: self
                .checks
                .iter()
                .map(|c| {
                    vec![
                        c.platform.clone(),
                        c.engine.clone(),
                        c.check.clone(),
                        c.precision.clone(),
                        c.status.clone(),
                        c.bound.as_ref().map(|b| b.metric.clone()).unwrap_or_default(),
                        c.value.map(|v| format!("{v:.4}")).unwrap_or_default(),
                        c.bound.as_ref().map(Bound::shown).unwrap_or_default(),
                        c.verdict.clone(),
                        c.median_ms.map(|v| format!("{v:.1}")).unwrap_or_default(),
                        c.record.clone(),
                        c.bound.as_ref().map(|b| b.source.clone()).unwrap_or_default(),
                    ]
                })
                .collect(),
        };
        let formats = Table {
            title: "Memory per format",
            shown_empty: false,
            about: "Each format's file, exported from these weights, beside what `gen memory` computes from the checkpoint's config.json (MB)."
                .into(),
            header: vec!["format", "file MB", "computed MB"],
            rows: self
                .formats
                .iter()
                .map(|f| vec![f.format.clone(), mb(f.file_bytes), mb(f.computed_bytes)])
                .collect(),
        };
        let steps = Table {
            title: "Time per step",
            shown_empty: false,
            about: "Wall-clock time of each step of `gen checkpoint` on this machine.".into(),
            header: vec!["step", "seconds"],
            rows: self
                .steps
                .iter()
                .map(|s| vec![s.step.clone(), format!("{:.1}", s.seconds)])
                .collect(),
        };
        let not_run = Table {
            title: "Platforms not run here",
            shown_empty: false,
            about: "What each lacks on this machine (`gen doctor`): no verdict on them.".into(),
            header: vec!["platform", "missing"],
            rows: self
                .not_run
                .iter()
                .map(|(p, why)| vec![p.clone(), why.clone()])
                .collect(),
        };
        let range = Table {
            title: "Float16 range",
            shown_empty: true,
            about: match &self.range {
                Measured::Measured(r) => format!(
                    "The largest float32 activations of these weights on the fixture's texts, against float16's largest finite value (65504); a norm's input square is what a norm computed in float16 sums. torch's own float16 forward pass: {} ({}).",
                    r.float16_first_non_finite
                        .as_deref()
                        .map(|m| format!("first non-finite in {m}"))
                        .unwrap_or_else(|| "finite throughout".into()),
                    r.conditions
                ),
                Measured::NotMeasured { not_measured } => format!("Not measured: {not_measured}."),
            },
            header: vec!["module", "largest float32 value", "of float16's largest"],
            rows: self
                .range
                .ok()
                .into_iter()
                .flat_map(|r| {
                    r.largest_float32_outputs
                        .iter()
                        .take(3)
                        .chain(r.largest_float32_norm_input_squares.iter().take(2))
                })
                .map(|row| {
                    vec![
                        row.module.clone(),
                        format!("{:.4e}", row.abs_max),
                        format!("{:.2}%", row.of_float16_max * 100.0),
                    ]
                })
                .collect(),
        };
        let generation = Table {
            title: "Greedy generation and perplexity",
            shown_empty: self.decoding.is_some(),
            about: match &self.decoding {
                Some(Measured::Measured(d)) => format!(
                    "Each format's greedy continuation of \"{}\" ({} tokens) and its perplexity on a fixed text of {} tokens, on the engine named (its Python package, the library the cells load); the checks above judge them against float32 on the same engine.",
                    d.prompt, d.new_tokens, d.text_tokens
                ),
                Some(Measured::NotMeasured { not_measured }) => {
                    format!("Not measured: {not_measured}.")
                }
                None => String::new(),
            },
            header: vec![
                "format",
                "engine",
                "continuation",
                "perplexity",
                "non-finite",
            ],
            rows: self
                .decoding
                .iter()
                .filter_map(Measured::ok)
                .flat_map(|d| &d.results)
                .map(|r| {
                    vec![
                        r.format.clone(),
                        r.engine.clone(),
                        format!("{:?}", r.continuation),
                        r.perplexity.map(|p| format!("{p:.3}")).unwrap_or_default(),
                        r.non_finite.clone().unwrap_or_default(),
                    ]
                })
                .collect(),
        };
        vec![checks, generation, range, formats, steps, not_run]
    }

    fn heading(&self) -> (String, String) {
        let parameters = self
            .parameters
            .map(|n| format!("{:.1}M parameters, ", n as f64 / 1e6))
            .unwrap_or_default();
        (
            format!("{}: its row of the matrix", self.name),
            format!(
                "{} ({}; {parameters}{:.1} MB at float32), run {}",
                self.path,
                self.model_type,
                self.float32_bytes as f64 / 1e6,
                self.run_id
            ),
        )
    }

    pub fn markdown(&self) -> String {
        let (title, about) = self.heading();
        let mut s = format!("# {title}\n\n{about}\n");
        for t in self.tables() {
            if t.rows.is_empty() {
                if t.shown_empty {
                    let _ = write!(s, "\n## {}\n\n{}\n", t.title, t.about);
                }
                continue;
            }
            let _ = write!(
                s,
                "\n## {}\n\n{}\n\n| {} |\n|{}\n",
                t.title,
                t.about,
                t.header.join(" | "),
                "---|".repeat(t.header.len())
            );
            for row in &t.rows {
                let row: Vec<String> = row.iter().map(|c| escape(c)).collect();
                let _ = writeln!(s, "| {} |", row.join(" | "));
            }
        }
        s
    }

    pub fn html(&self) -> String {
        let (title, about) = self.heading();
        let mut s = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}}</style></head><body>\n<h1>{}</h1>\n<p>{}</p>\n",
            esc(&title),
            esc(&title),
            esc(&about)
        );
        for t in self.tables() {
            if t.rows.is_empty() {
                if t.shown_empty {
                    let _ = write!(s, "<h2>{}</h2>\n<p>{}</p>\n", esc(t.title), esc(&t.about));
                }
                continue;
            }
            let _ = write!(
                s,
                "<h2>{}</h2>\n<p>{}</p>\n<table>\n<tr>",
                esc(t.title),
                esc(&t.about)
            );
            for h in &t.header {
                let _ = write!(s, "<th>{}</th>", esc(h));
            }
            s.push_str("</tr>\n");
            for row in &t.rows {
                s.push_str("<tr>");
                for c in row {
                    let _ = write!(s, "<td>{}</td>", esc(c));
                }
                s.push_str("</tr>\n");
            }
            s.push_str("</table>\n");
        }
        s.push_str("</body></html>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_says_where_float16_overflows() {
        let row = |module: &str, of: f64| RangeRow {
            module: module.into(),
            abs_max: of * 65504.0,
            of_float16_max: of,
        };
        let mut range = Range {
            largest_float32_outputs: vec![row("model.layers.14", 1.5846)],
            largest_float32_norm_input_squares: vec![],
            float16_first_non_finite: None,
            conditions: String::new(),
        };
        assert_eq!(
            range.overflow().as_deref(),
            Some("model.layers.14 reaches 103798, 158% of float16's largest")
        );
        range.float16_first_non_finite = Some("model.layers.7".into());
        assert!(
            range
                .overflow()
                .unwrap()
                .contains("non-finite in model.layers.7")
        );
        // all-MiniLM-L6-v2's largest output, 0.3% of float16's: nothing to say.
        let mut within = Range {
            largest_float32_outputs: vec![row("encoder.layer.0.output.dense", 0.003)],
            float16_first_non_finite: None,
            ..range
        };
        assert_eq!(within.overflow(), None);
        // SmolLM2-135M-Instruct's: outputs within range, the squares an RMSNorm sums not.
        within.largest_float32_norm_input_squares =
            vec![row("model.layers.12.input_layernorm:input²", 9159.2)];
        assert_eq!(
            within.overflow().as_deref(),
            Some(
                "the squares model.layers.12.input_layernorm sums reach 6.00e8, 9159 times float16's largest (a norm computed in float16 overflows there)"
            )
        );
    }

    #[test]
    fn a_range_not_measured_says_why_in_both_renderings() {
        let row = CheckpointRow {
            name: "vit".into(),
            path: "<dir>".into(),
            model_type: "vit".into(),
            parameters: None,
            float32_bytes: 0,
            run_id: "r".into(),
            checks: vec![],
            formats: vec![],
            steps: vec![],
            not_run: vec![],
            range: Err("measured for text checkpoints only".to_string()).into(),
            decoding: None,
        };
        for text in [row.markdown(), row.html()] {
            assert!(text.contains("Float16 range"), "{text}");
            assert!(
                text.contains("Not measured: measured for text checkpoints only."),
                "{text}"
            );
            // A table without rows that need not say why is left out.
            assert!(!text.contains("Memory per format"), "{text}");
        }
    }

    #[test]
    fn evidence_or_why_not_round_trips_as_json() {
        // checkpoints.py decoding's refusal, as it writes it for a base model's fixture.
        let why: Measured<Decoding> =
            serde_json::from_str(r#"{"not_measured": "no logits to generate from"}"#).unwrap();
        assert!(
            matches!(&why, Measured::NotMeasured { not_measured } if not_measured == "no logits to generate from")
        );
        let measured: Measured<Decoding> = serde_json::from_str(
            r#"{"prompt": "p", "new_tokens": 16, "text": "t", "text_tokens": 77, "results": []}"#,
        )
        .unwrap();
        assert_eq!(measured.ok().map(|d| d.text_tokens), Some(77));
        // A row writes the evidence itself, or {"not_measured": why}: never Rust's Ok/Err.
        let range: Measured<Range> = Err("measured for text checkpoints only".to_string()).into();
        assert_eq!(
            serde_json::to_string(&range).unwrap(),
            r#"{"not_measured":"measured for text checkpoints only"}"#
        );
    }

    /// A decoder's q4 record as a run writes it (SmolLM2's on 2026-12-06, trimmed).
    fn decoder_record(top1: f64, max_abs: f64) -> Record {
        serde_json::from_value(serde_json::json!({
            "run_id": "r", "time": "t", "host": "h", "model": "llama", "category": "text_decoders",
            "platform": "cpu", "engine_kind": "onnxruntime", "engine": "onnxruntime, CPUExecutionProvider",
            "check": "q4_matches_reference", "status": "failed", "basis": "measured", "precision": "q4",
            "runtime_version": "0.1.0",
            "deviation": {"tolerance": {"abs": 0.0, "rel": 0.0}, "max_abs": 13.3, "max_rel": 10487.4,
                "outputs": [{"output": "logits", "elements": 589824, "violations": 589824,
                    "max_abs": max_abs, "max_rel": 10487.4,
                    "reference": {"mean": 12.2, "max_from_mean": 28.1, "constant_would_pass": false},
                    "agreement": {"rows": 12, "cosine_min": 0.9596, "rel_l2": 0.2359, "top1": top1}}]}
        }))
        .expect("a record")
    }

    #[test]
    fn a_format_is_judged_against_its_bound_and_a_non_finite_output_fails() {
        let lost = judge(&decoder_record(0.4167, 13.3), "id");
        assert_eq!(lost.value, Some(0.4167));
        assert_eq!(lost.verdict, "loses accuracy (0.4167 < 0.8)");
        let kept = judge(&decoder_record(0.9, 13.3), "id");
        assert_eq!(kept.verdict, "keeps its accuracy (0.9000 ≥ 0.8)");
        let overflow = judge(&decoder_record(0.9, f64::INFINITY), "id");
        assert_eq!(overflow.verdict, "non-finite values in logits");
        // A base-model decoder's hidden states: no next token, their cosine shown.
        let mut hidden = decoder_record(0.9, 13.3);
        hidden.deviation.as_mut().unwrap().outputs[0]
            .agreement
            .as_mut()
            .unwrap()
            .top1 = None;
        let shown = judge(&hidden, "id");
        assert_eq!(shown.bound.unwrap().metric, WORST_ROW_COSINE);
        assert_eq!(shown.verdict, "0.9596, not judged");
    }
}

/// The report's section of trained checkpoints' rows (`gen checkpoint` wrote each
/// into results/checkpoints/<name>/report.json): every format judged by its users'
/// metric, with its bound and source, and where each checkpoint leaves float16's range.
#[derive(Debug, Default, Serialize)]
pub struct TrainedSection {
    pub rows: Vec<CheckpointRow>,
}

/// What the section says before its table.
pub const TRAINED_WHAT: &str = "Each trained checkpoint `gen checkpoint` ran (its row in results/checkpoints/<name>/): a format's check on trained weights is an accuracy verdict, its users' metric against a bound fixed before the run, with where the bound comes from; the tiny random models above only show that a graph runs at a precision";

impl TrainedSection {
    /// Every row under `dir` (results/checkpoints), by name; a folder without a
    /// readable report.json is an error naming it.
    pub fn read(dir: &std::path::Path) -> Result<TrainedSection, String> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(TrainedSection::default());
        };
        let mut files: Vec<std::path::PathBuf> = entries
            .flatten()
            .map(|e| e.path().join("report.json"))
            .filter(|f| f.is_file())
            .collect();
        files.sort();
        let rows = files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
                serde_json::from_str(&text).map_err(|e| {
                    format!(
                        "error: {}: not a row gen checkpoint wrote: {e}\n  help: run `gen checkpoint` on that checkpoint again",
                        f.display()
                    )
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(TrainedSection { rows })
    }

    /// The table both renderings show: one line per format check (float32's own checks
    /// are the matrix's), and each checkpoint's float16 range.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let head = [
            "checkpoint",
            "architecture",
            "platform",
            "engine",
            "format",
            "users' metric",
            "value",
            "bound",
            "the row says",
            "bound's source",
            "float16 range of the checkpoint",
        ];
        let mut rows = Vec::new();
        for row in &self.rows {
            let range = match &row.range {
                Measured::Measured(r) => r.summary(),
                Measured::NotMeasured { not_measured } => format!("not measured: {not_measured}"),
            };
            for (n, c) in row.checks.iter().filter(|c| c.bound.is_some()).enumerate() {
                let bound = c.bound.as_ref().expect("filtered");
                rows.push(vec![
                    row.name.clone(),
                    row.model_type.clone(),
                    c.platform.clone(),
                    c.engine.clone(),
                    c.precision.clone(),
                    bound.metric.clone(),
                    c.value.map(|v| format!("{v:.4}")).unwrap_or_default(),
                    bound.shown(),
                    c.verdict.clone(),
                    bound.source.clone(),
                    // Once per checkpoint, on its first line.
                    if n == 0 { range.clone() } else { String::new() },
                ]);
            }
        }
        (head.iter().map(|h| h.to_string()).collect(), rows)
    }
}
