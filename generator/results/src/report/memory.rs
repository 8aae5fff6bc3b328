//! The memory section: what each architecture weighs at its default size, in
//! each format the fixtures ship, and what its cache adds while it generates;
//! computed by `gen memory` (exporter/memory.py on PyTorch's meta device), not
//! measured. Where a real checkpoint's files were measured, `gen memory
//! --checkpoint` prints both.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The formats, in the order the tables show them (export.py's VARIANTS and float32, then
/// NNCF's IR formats for OpenVINO's runtime).
pub const FORMATS: [&str; 8] = [
    "fp32",
    "fp16",
    "int8",
    "q4",
    "q4f16",
    "qdq8",
    "nncf_int8",
    "nncf_int4",
];

/// Device memory a maintainer picks between, in bytes. The phone NPU's is an
/// assumption, not a measurement: Snapdragon's Hexagon NPU addresses 32 bits (4 GiB),
/// which its weights, cache and activations share.
pub const BUDGETS: [(&str, u64); 6] = [
    ("phone NPU", 4 << 30),
    ("4 GB", 4 << 30),
    ("8 GB", 8 << 30),
    ("16 GB", 16 << 30),
    ("24 GB", 24 << 30),
    ("80 GB", 80 << 30),
];

/// The cache length the "fits" columns add to the weights (tokens).
pub const FIT_TOKENS: &str = "2048";

/// Seed 003's size buckets, by parameter count.
pub fn bucket(parameters: u64) -> &'static str {
    match parameters {
        p if p < 100_000_000 => "Tiny",
        p if p < 500_000_000 => "Small",
        p if p < 1_000_000_000 => "Base",
        p if p < 7_000_000_000 => "Large",
        p if p <= 13_000_000_000 => "XL",
        _ => "XXL",
    }
}

/// memory.py's answer for one architecture.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Computed {
    /// Where the config came from (the library's defaults, or a checkpoint's config.json).
    pub source: String,
    pub class: String,
    pub parameters: Parameters,
    /// Weight bytes per format (FORMATS).
    pub weights: BTreeMap<String, u64>,
    /// How each format stores each kind of parameter.
    #[serde(default)]
    pub rules: BTreeMap<String, String>,
    #[serde(default)]
    pub cache: Option<CacheFigure>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Parameters {
    pub total: u64,
    pub embedding: u64,
    pub matmul: u64,
    pub conv: u64,
    pub bias: u64,
    pub other: u64,
}

/// A generating model's cache (float32, as the fixtures keep it), or why it has no figure.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CacheFigure {
    #[serde(default)]
    pub per_token_bytes: Option<u64>,
    #[serde(default)]
    pub fixed_bytes: Option<u64>,
    #[serde(default)]
    pub at_tokens: BTreeMap<String, u64>,
    #[serde(default)]
    pub sliding_windows: Vec<u64>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// One architecture's row: its figures, or why it has none.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryRow {
    pub model: String,
    pub category: String,
    pub computed: Option<Computed>,
    pub why_none: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct MemorySection {
    pub what: String,
    pub rows: Vec<MemoryRow>,
}

impl MemorySection {
    pub fn new(rows: Vec<MemoryRow>) -> MemorySection {
        MemorySection {
            what: WHAT.into(),
            rows,
        }
    }
}

pub const WHAT: &str = "Computed by `gen memory` (not measured): each architecture built at its library's default size on PyTorch's meta device (no weights downloaded or allocated); weight bytes per format by the rules its converter follows (`gen memory --model M` prints them), the smallest device memory the weights and a 2k-token float32 cache fit in (the phone NPU's 4 GiB is an assumption: Hexagon's 32-bit address space), and the cache per generated token";

/// Bytes as a reader compares them: 1.2 GB, 340 MB, 12 kB (powers of 1000).
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.0} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.0} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

/// Parameters as a reader says them: 6.7B, 110M, 23k.
pub fn count(n: u64) -> String {
    let f = n as f64;
    if f >= 1e9 {
        format!("{:.1}B", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.0}M", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.0}k", f / 1e3)
    } else {
        n.to_string()
    }
}

/// The cache a format's deployment keeps at `tokens`: float32 beside float32 or
/// integer weights, float16 beside float16 ones.
pub fn cache_at(computed: &Computed, format: &str, tokens: &str) -> u64 {
    let float32 = computed
        .cache
        .as_ref()
        .and_then(|c| c.at_tokens.get(tokens).copied())
        .unwrap_or(0);
    if format.ends_with("16") {
        float32 / 2
    } else {
        float32
    }
}

/// The smallest budget (BUDGETS, the phone NPU aside) that holds `bytes`, else "over 80 GB".
pub fn smallest_device(bytes: u64) -> String {
    BUDGETS[1..]
        .iter()
        .find(|(_, budget)| bytes <= *budget)
        .map(|(name, _)| format!("≤ {name}"))
        .unwrap_or_else(|| "over 80 GB".into())
}

/// The report's table: a row per architecture (or its reason), a column per format
/// (the weights, and the smallest device they fit in with a 2k-token cache).
pub fn table(rows: &[MemoryRow]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head: Vec<String> = ["model", "parameters", "size"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend(FORMATS.iter().map(|f| f.to_string()));
    head.extend(["phone NPU (qdq8)", "cache per token", "cache at 32k"].map(String::from));
    let body = rows
        .iter()
        .map(|row| {
            let Some(c) = &row.computed else {
                // The whole reason is in the JSON report and `gen memory --model M`.
                let mut cells = vec![
                    row.model.clone(),
                    "-".into(),
                    hwmatrix_specs::text::shorten(row.why_none.as_deref().unwrap_or_default(), 90),
                ];
                cells.resize(head.len(), String::new());
                return cells;
            };
            let mut cells = vec![
                row.model.clone(),
                format!(
                    "{} ({}% embeddings)",
                    count(c.parameters.total),
                    percent(c.parameters.embedding, c.parameters.total)
                ),
                bucket(c.parameters.total).to_string(),
            ];
            for format in FORMATS {
                cells.push(match c.weights.get(format) {
                    Some(&bytes) => format!(
                        "{} ({})",
                        human(bytes),
                        smallest_device(bytes + cache_at(c, format, FIT_TOKENS))
                    ),
                    None => "-".into(),
                });
            }
            // A phone NPU runs the static QDQ graph (qdq8): does it fit its budget with its cache?
            cells.push(match c.weights.get("qdq8") {
                Some(&bytes) if bytes + cache_at(c, "qdq8", FIT_TOKENS) <= BUDGETS[0].1 => {
                    "fits".into()
                }
                Some(_) => "over".into(),
                None => "-".into(),
            });
            let (per_token, at_32k) = match &c.cache {
                None => ("-".to_string(), "-".to_string()),
                Some(CacheFigure {
                    error: Some(error), ..
                }) => (format!("no figure: {error}"), String::new()),
                Some(cache) => (
                    cache.per_token_bytes.map(human).unwrap_or_default(),
                    cache
                        .at_tokens
                        .get("32768")
                        .map(|b| human(*b))
                        .unwrap_or_default(),
                ),
            };
            cells.push(per_token);
            cells.push(at_32k);
            cells
        })
        .collect();
    (head, body)
}

fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        0
    } else {
        (part as f64 * 100.0 / whole as f64).round() as u64
    }
}

/// `gen memory --model M`'s table: a row per format, with whether weights and the cache at
/// 2k tokens fit each budget.
pub fn model_table(c: &Computed) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head: Vec<String> = ["format", "weights", "+ cache at 2k"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend(BUDGETS.iter().map(|(name, _)| name.to_string()));
    let rows = FORMATS
        .iter()
        .filter_map(|format| {
            let bytes = *c.weights.get(*format)?;
            let total = bytes + cache_at(c, format, FIT_TOKENS);
            let mut cells = vec![format.to_string(), human(bytes), human(total)];
            cells.extend(
                BUDGETS
                    .iter()
                    .map(|(_, budget)| if total <= *budget { "fits" } else { "-" }.to_string()),
            );
            Some(cells)
        })
        .collect();
    (head, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn computed(total: u64, fp16: u64, per_2k: Option<u64>) -> Computed {
        Computed {
            source: "defaults".into(),
            class: "M".into(),
            parameters: Parameters {
                total,
                embedding: total / 4,
                matmul: total / 2,
                conv: 0,
                bias: 0,
                other: total / 4,
            },
            weights: BTreeMap::from([("fp32".into(), 2 * fp16), ("fp16".into(), fp16)]),
            rules: BTreeMap::new(),
            cache: per_2k.map(|b| CacheFigure {
                per_token_bytes: Some(b / 2048),
                fixed_bytes: Some(0),
                at_tokens: BTreeMap::from([(FIT_TOKENS.into(), b)]),
                sliding_windows: vec![],
                method: None,
                error: None,
            }),
        }
    }

    #[test]
    fn buckets_follow_the_seeds_bounds() {
        assert_eq!(bucket(22_700_000), "Tiny");
        assert_eq!(bucket(110_000_000), "Small");
        assert_eq!(bucket(6_738_415_616), "Large");
        assert_eq!(bucket(13_000_000_000), "XL");
        assert_eq!(bucket(46_571_720_704), "XXL");
    }

    #[test]
    fn a_format_fits_a_device_only_with_its_cache() {
        // 7 GB of float16 weights fit 8 GB alone; with a 2k cache of 4 GB in float32
        // (2 GB in float16) they need 16 GB.
        let c = computed(3_500_000_000, 7_000_000_000, Some(4_000_000_000));
        let (_, rows) = model_table(&c);
        let fp16 = rows.iter().find(|r| r[0] == "fp16").unwrap();
        assert_eq!(fp16[2], "9.0 GB");
        assert_eq!(&fp16[3..], ["-", "-", "-", "fits", "fits", "fits"]);
        let fp32 = rows.iter().find(|r| r[0] == "fp32").unwrap();
        assert_eq!(fp32[2], "18.0 GB");
        assert_eq!(&fp32[3..], ["-", "-", "-", "-", "fits", "fits"]);
    }

    #[test]
    fn a_row_without_figures_says_why() {
        let rows = [MemoryRow {
            model: "m".into(),
            category: "vision".into(),
            computed: None,
            why_none: Some("cannot build on the meta device: x".into()),
        }];
        let (head, body) = table(&rows);
        assert_eq!(body[0].len(), head.len());
        assert_eq!(body[0][2], "cannot build on the meta device: x");
        let c = computed(110_000_000, 220_000_000, None);
        let (_, body) = table(&[MemoryRow {
            model: "bert".into(),
            category: "text_encoders".into(),
            computed: Some(c),
            why_none: None,
        }]);
        assert_eq!(body[0][1], "110M (25% embeddings)");
        assert_eq!(body[0][3], "440 MB (≤ 4 GB)");
        assert_eq!(body[0][4], "220 MB (≤ 4 GB)");
    }
}
