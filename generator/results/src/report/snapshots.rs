//! The report's Markdown and HTML templates, guarded by insta snapshots of a
//! small report built by hand: two platforms, two models, and one of each
//! thing a section shows (a stored and stale status, a disagreement, text
//! with `|`, `<` and `"` in it). Review a change with `cargo insta review`.

use std::collections::BTreeMap;

use hwmatrix_specs::spec::Support;

use super::generation::{GenerationEngine, GenerationEvidence, GenerationRow};
use super::precision::{CheckpointRecord, FormatRow, PrecisionEvidence, PrecisionRow};
use super::*;

fn counts(of: &[(Status, usize)]) -> Counts {
    let mut counts = Counts::default();
    for (status, n) in of {
        (0..*n).for_each(|_| counts.add(*status));
    }
    counts
}

fn record(check: &str, status: &str) -> RecordRef {
    RecordRef {
        record: format!("r-{check}"),
        check: check.into(),
        precision: "float32".into(),
        status: status.into(),
        run_id: "run-1".into(),
        host: "vm".into(),
        time: "2026-11-27T10:00:00Z".into(),
    }
}

fn cell(model: &str, platform: &str, engine: &str, status: Status) -> MatrixCell {
    MatrixCell {
        model: model.into(),
        category: "text_encoders".into(),
        architecture: "encoder-only".into(),
        platform: platform.into(),
        engine: engine.into(),
        status,
        expected: Some(Support::Yes),
        disagreement: None,
        reason: None,
        error_kind: None,
        stage: None,
        basis: Some("measured".into()),
        source: "this run",
        evidence: None,
        records: vec![record("runs", status.label())],
    }
}

/// A summary of one platform: one host, one library, one device.
fn platform(name: &str, tested: bool, of: &[(Status, usize)]) -> PlatformSummary {
    PlatformSummary {
        platform: name.into(),
        hosts: vec!["vm".into()],
        libraries: vec!["onnxruntime 1.31.1".into()],
        devices: vec!["cpu".into()],
        counts: counts(of),
        tested,
    }
}

/// One row of a matrix: `row` (a category or an architecture) on `platform`.
fn matrix(
    row: &str,
    platform: &str,
    of: &[(Status, usize)],
    expected: Option<Support>,
) -> MatrixRow {
    MatrixRow {
        row: row.into(),
        platform: platform.into(),
        counts: counts(of),
        expected,
    }
}

fn small_report() -> Report {
    Report {
        source: source(),
        summary: Summary {
            models: 2,
            platforms: 2,
            cells: 4,
            counts: counts(&[(Status::Passed, 3), (Status::KnownIssue, 1)]),
            disagreements: 1,
        },
        platforms: platforms(),
        stages: stages(),
        models: models(),
        matrices: matrices(),
        issues: issues(),
        kernel_checks: kernel_checks(),
        precision: precision(),
        generation: generation(),
        cpu_classes: cpu_classes(),
        export_failures: export_failures(),
        memory: memory(),
        trained: trained(),
        engine_disagreements: engine_disagreements(),
        graphs: graphs(),
        performance: performance(),
        engine_ratios: vec![EngineRatio {
            model: "bert".into(),
            check: "matches_reference".into(),
            baseline: "cpu onnxruntime".into(),
            engine: "openvino openvino".into(),
            baseline_ms: 0.0439,
            engine_ms: 0.0657,
            ratio: 0.0657 / 0.0439,
            conditions: "1 thread, no other check".into(),
            records: ["r-cpu".into(), "r-ov".into()],
        }],
        recommendations: recommendations(),
        cells: cells(),
    }
}

/// One trained decoder's row: its int8 judged by the next token it keeps (the bound's
/// source has a `|` and a `<`, which both renderings escape).
fn trained() -> super::checkpoint_row::TrainedSection {
    use super::accuracy::{Bound, RowCheck};
    use super::checkpoint_row::CheckpointRow;
    let check = |precision: &str, value: f64, verdict: &str| RowCheck {
        platform: "cpu".into(),
        engine: "onnx".into(),
        check: format!("{precision}_matches_reference"),
        precision: precision.into(),
        status: "failed".into(),
        bound: Some(Bound {
            metric: "same next token as float32".into(),
            at_least: Some(0.9),
            at_most: None,
            source: "llama.cpp's statistics | 8 bits < 100%".into(),
        }),
        value: Some(value),
        verdict: verdict.into(),
        median_ms: Some(49.3),
        record: "r-int8".into(),
    };
    super::checkpoint_row::TrainedSection {
        rows: vec![CheckpointRow {
            name: "SmolLM2-135M-Instruct".into(),
            path: "<cache>/SmolLM2-135M-Instruct.gguf".into(),
            model_type: "llama".into(),
            parameters: Some(134_515_008),
            float32_bytes: 538_060_032,
            run_id: "checkpoint-r1".into(),
            checks: vec![check("int8", 0.5833, "loses accuracy (0.5833 < 0.9)")],
            formats: vec![],
            steps: vec![],
            not_run: vec![],
            range: Err("not measured here".to_string()).into(),
            decoding: None,
        }],
    }
}

/// Two CPU classes measured (AVX2 without VNNI, AVX-512 VNNI), and bert's int8 failing on AVX2 only.
fn cpu_classes() -> cpu_classes::CpuClassesSection {
    use cpu_classes::{ClassVerdict, ClassVerdicts};
    use hwmatrix_specs::spec::cpu_classes::{CheckCount, MeasuredClass};
    let class = |class: &str, features: &str, passed: usize| MeasuredClass {
        platform: hwmatrix_cell::Platform::Cpu,
        class: class.into(),
        cpu: format!("{class} ({features})"),
        run: "run-1".into(),
        date: "2026-12-01T21:36:19Z".into(),
        host: "vm".into(),
        checks: [(
            hwmatrix_cell::CheckId::Precision(hwmatrix_cell::Precision::Int8),
            CheckCount {
                measured: 2,
                passed,
            },
        )]
        .into(),
    };
    let verdicts = |model: &str, check: &str, avx2: ClassVerdict| ClassVerdicts {
        model: model.into(),
        platform: "cpu".into(),
        engine: "onnxruntime".into(),
        check: check.into(),
        by_class: vec![
            ("x86-64 avx2".into(), avx2),
            ("x86-64 avx512-vnni".into(), ClassVerdict::Passes),
        ],
    };
    cpu_classes::CpuClassesSection {
        measured: vec![
            class("x86-64 avx2", "avx2", 1),
            class(
                "x86-64 avx512-vnni",
                "avx512_vnni avx512bw avx512f avx_vnni avx2",
                2,
            ),
        ],
        never_measured: vec!["x86-64 amx".into(), "arm64 i8mm".into()],
        verdicts: vec![
            verdicts(
                "bert",
                "int8_matches_reference",
                ClassVerdict::FailsHere {
                    attribution: "engine".into(),
                },
            ),
            verdicts(
                "bert",
                "int8_avx2_matches_reference",
                ClassVerdict::NotMeasured,
            ),
            verdicts("vit", "int8_matches_reference", ClassVerdict::Passes),
        ],
    }
}

/// One architecture with its computed figures (a cache with a sliding window), one without.
fn memory() -> memory::MemorySection {
    use memory::{CacheFigure, Computed, MemoryRow, Parameters};
    let weights = [
        ("fp32", 440_000_000),
        ("fp16", 220_000_000),
        ("int8", 111_000_000),
        ("q4", 150_000_000),
        ("q4f16", 96_000_000),
        ("qdq8", 110_000_000),
        ("nncf_int8", 110_500_000),
        ("nncf_int4", 90_800_000),
    ];
    memory::MemorySection::new(vec![
        MemoryRow {
            model: "bert".into(),
            category: "text_encoders".into(),
            computed: Some(Computed {
                source: "transformers 5.23.0 defaults (BertConfig())".into(),
                class: "BertModel".into(),
                parameters: Parameters {
                    total: 109_482_240,
                    embedding: 23_835_648,
                    matmul: 85_524_480,
                    conv: 0,
                    bias: 102_912,
                    other: 19_200,
                },
                weights: weights.iter().map(|(f, b)| (f.to_string(), *b)).collect(),
                rules: BTreeMap::new(),
                cache: Some(CacheFigure {
                    per_token_bytes: Some(73_728),
                    fixed_bytes: Some(0),
                    at_tokens: BTreeMap::from([
                        ("2048".into(), 150_994_944),
                        ("32768".into(), 301_989_888),
                    ]),
                    sliding_windows: vec![4096],
                    method: Some("measured".into()),
                    error: None,
                }),
            }),
            why_none: None,
        },
        MemoryRow {
            model: "layoutlmv2".into(),
            category: "multimodal".into(),
            computed: None,
            why_none: Some(
                "ImportError: LayoutLMv2Model requires the detectron2 library | <its> \"docs\""
                    .into(),
            ),
        },
    ])
}

/// One run on one host, six records.
fn source() -> Source {
    Source {
        database: "results/hwmatrix.sqlite".into(),
        records: 6,
        runs: vec![RunRow {
            run_id: "run-1".into(),
            hosts: vec!["vm".into()],
            first: "2026-11-27T10:00:00Z".into(),
            last: "2026-11-27T10:05:00Z".into(),
            records: 6,
        }],
    }
}

/// Three passed cells and a known issue from stored, stale evidence, with a
/// disagreement and `|`, `<` and `"` in its reason.
fn cells() -> Vec<MatrixCell> {
    let mut failing = cell("roberta", "webgpu", "browser", Status::KnownIssue);
    failing.reason = Some("runs: a <Gather> node | \"axis\" 2 is out of range".into());
    failing.disagreement = Some("known-issue where architectures.yaml expects yes".into());
    failing.source = "stored evidence";
    failing.evidence = Some(StoredEvidence {
        check: "runs".into(),
        date: "2026-11-20T08:00:00Z".into(),
        run: Some("run-0".into()),
        host: Some("vm".into()),
        attribution: Some("engine".into()),
        stale: Some("measured on another fixture key".into()),
        record: Some("0123456789abcdef".into()),
    });
    vec![
        cell("bert", "cpu", "onnxruntime", Status::Passed),
        cell("bert", "webgpu", "browser", Status::Passed),
        cell("roberta", "cpu", "onnxruntime", Status::Passed),
        failing,
    ]
}

fn platforms() -> Vec<PlatformSummary> {
    vec![
        platform("cpu", true, &[(Status::Passed, 2)]),
        platform(
            "webgpu",
            true,
            &[(Status::Passed, 1), (Status::KnownIssue, 1)],
        ),
    ]
}

/// cpu's two cells, both at the `pass` stage.
fn stages() -> Vec<StageRow> {
    vec![StageRow {
        platform: "cpu".into(),
        counts: hwmatrix_cell::Stage::ALL
            .iter()
            .map(|s| (s.name().to_string(), usize::from(s.name() == "pass") * 2))
            .chain([("-".to_string(), 0)])
            .collect(),
    }]
}

fn models() -> Vec<ModelRow> {
    vec![ModelRow {
        model: "bert".into(),
        checkpoint: Some("google-bert/bert-base-uncased".into()),
        category: "text_encoders".into(),
        modality: "text".into(),
        architecture: "encoder-only".into(),
    }]
}

fn matrices() -> Matrices {
    Matrices {
        category_platform: vec![
            matrix("text_encoders", "cpu", &[(Status::Passed, 2)], None),
            matrix(
                "text_encoders",
                "webgpu",
                &[(Status::Passed, 1), (Status::NotTested, 1)],
                None,
            ),
        ],
        architecture_platform: vec![matrix(
            "encoder-only",
            "cpu",
            &[(Status::Passed, 2)],
            Some(Support::Yes),
        )],
    }
}

fn issues() -> Vec<IssueGroup> {
    vec![IssueGroup {
        cause: "WebGPU: Gather axis".into(),
        cells: vec![IssueCell {
            model: "roberta".into(),
            platform: "webgpu".into(),
            engine: "browser".into(),
            reason: "runs: a <Gather> node | \"axis\" 2 is out of range".into(),
            record: "r-runs".into(),
        }],
    }]
}

fn kernel_checks() -> KernelChecks {
    KernelChecks {
        engine: "wgpu".into(),
        what: "our WGSL kernels".into(),
        counts: counts(&[(Status::Passed, 1)]),
        cells: vec![cell("bert", "webgpu", "wgpu", Status::Passed)],
        issues: Vec::new(),
    }
}

/// int8 on cpu, on tiny random weights and on a real checkpoint.
fn precision() -> PrecisionEvidence {
    PrecisionEvidence {
        what: "Each precision check".into(),
        rows: vec![PrecisionRow {
            platform: "cpu".into(),
            engine: "onnxruntime".into(),
            precision: "int8".into(),
            weights: "tiny random".into(),
            counts: counts(&[(Status::Passed, 2)]),
            median_worst_cosine: Some(0.9991),
            median_rel_l2: Some(0.021),
        }],
        checkpoints: vec![CheckpointRecord {
            model: "bert".into(),
            checkpoint: "google-bert/bert-base-uncased".into(),
            platform: "cpu".into(),
            engine: "onnxruntime".into(),
            precision: "int8".into(),
            status: Status::Passed,
            worst_cosine: Some(0.998),
            rel_l2: Some(0.03),
            top1: None,
            reason: None,
            rating: Some("good".into()),
            record: "r-int8".into(),
        }],
        formats: ["float32", "int8"]
            .iter()
            .enumerate()
            .map(|(i, p)| FormatRow {
                model: "bert".into(),
                checkpoint: "checkpoint:all-MiniLM-L6-v2".into(),
                precision: p.to_string(),
                file_bytes: Some(90_958_067 / (1 + 3 * i as u64)),
                computed_bytes: Some([90_852_864, 23_067_308][i]),
                median_ms: Some(1.25 - 0.5 * i as f64),
                python_ms: Some(1.2 - 0.5 * i as f64),
                worst_cosine: (i == 1).then_some(0.9838),
                rel_l2: (i == 1).then_some(0.142),
                top1: None,
                records: vec![format!("r-bench-{p}")],
            })
            .collect(),
    }
}

/// gpt2 generating on cpu.
fn export_failures() -> super::export::ExportFailures {
    super::export::ExportFailures {
        what: "Models no platform could run".into(),
        causes: vec![
            super::export::ExportCause {
                who: "the exporters".into(),
                cause: "torch.export: a guard on a data-dependent value".into(),
                models: vec!["longformer".into(), "qwen3_5".into()],
                reproduction: Some("repros.py data_dependent_guard".into()),
            },
            super::export::ExportCause {
                who: "our harness".into(),
                cause: "the tiny model stays too large (a width the shrink does not know)".into(),
                models: vec!["bark".into()],
                reproduction: None,
            },
        ],
    }
}

fn generation() -> GenerationEvidence {
    GenerationEvidence {
        what: "The generates check".into(),
        engines: vec![GenerationEngine {
            platform: "cpu".into(),
            engine: "onnxruntime".into(),
            counts: counts(&[(Status::Passed, 1)]),
            diverged_at_prefill: 0,
            diverged_decoding: 0,
        }],
        models: vec![GenerationRow {
            model: "gpt2".into(),
            platforms: BTreeMap::from([("cpu".to_string(), Status::Passed)]),
        }],
    }
}

/// optimum's graph of two models: one agreeing with ours, one its export failed.
fn graphs() -> super::graphs::GraphComparison {
    use super::graphs::{GraphComparison, GraphRow};
    GraphComparison {
        graph: "optimum".into(),
        architectures: 2,
        exported: 1,
        causes: vec![("theirs: export-failed".into(), 1)],
        rows: vec![
            GraphRow {
                model: "bert".into(),
                platform: "cpu".into(),
                engine: "onnxruntime".into(),
                ours: Status::Passed,
                theirs: Status::Passed,
                formats_passed: 3,
                formats_run: 3,
                made_by: Some("optimum-onnx 0.1.0 (feature-extraction, opset 18; without pooler_output)".into()),
                cause: None,
            },
            GraphRow {
                model: "t5".into(),
                platform: "cpu".into(),
                engine: "onnxruntime".into(),
                ours: Status::Passed,
                theirs: Status::Failed,
                formats_passed: 0,
                formats_run: 3,
                made_by: None,
                cause: Some("theirs: export-failed (optimum made ['decoder_model.onnx', 'encoder_model.onnx'] for task text2text-generation, not one model.onnx)".into()),
            },
        ],
    }
}

fn engine_disagreements() -> Vec<EngineDisagreement> {
    vec![EngineDisagreement {
        model: "roberta".into(),
        platform: "webgpu".into(),
        engines: vec![
            ("browser".into(), Status::KnownIssue, Some("a | b".into())),
            ("onnxruntime".into(), Status::Passed, None),
        ],
    }]
}

fn performance() -> Vec<Performance> {
    vec![Performance {
        model: "bert".into(),
        category: "text_encoders".into(),
        platform: "cpu".into(),
        engine: "onnxruntime".into(),
        check: "runs".into(),
        median_ms: 1.23456,
        p90_ms: Some(1.5),
        throughput: None,
        rss_growth_kb: None,
        peak_rss_kb: Some(81_920),
        rust_over_python: None,
        conditions: "1 thread, no other check".into(),
        device: None,
        stands_in: false,
        record: "r-runs".into(),
    }]
}

fn recommendations() -> Recommendations {
    Recommendations {
        fastest_verified_platform: vec![Fastest {
            category: "text_encoders".into(),
            platform: "cpu".into(),
            engine: "onnxruntime".into(),
            median_ms: 1.2,
            models: 2,
        }],
        contradicted_expectations: vec![Contradiction {
            architecture: "encoder-only".into(),
            platform: "webgpu".into(),
            expected: Support::Yes,
            measured: "known-issue".into(),
            cells: 1,
            models: vec!["roberta".into()],
        }],
    }
}

#[test]
fn the_markdown_report() {
    insta::assert_snapshot!(markdown(&small_report()).unwrap());
}

#[test]
fn the_html_report() {
    insta::assert_snapshot!(html(&small_report()).unwrap());
}
