//! Every check can fail, and a failed check keeps its evidence. Each case
//! takes the real bert cpu cell, breaks one input (the tolerance, the
//! reference, the fixture's key), runs the check for real and reads the
//! record it wrote. Needs the bert fixture (`gen fixtures`, which
//! `tests/run.sh` runs first).
//!
//! The cases point HWMATRIX_RESULTS and HWMATRIX_FIXTURES at scratch folders,
//! and the environment is the process's: the tests take turns
//! ([`ENVIRONMENT`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hwmatrix_tests::{Scratch, copy_tree};
use runtime::{Cell, Tolerance};
use serde_json::Value;

static BERT: &Cell = &generated::text_encoders::bert::cells::CPU_ONNX;
static BERT_TORCH: &Cell = &generated::text_encoders::bert::cells::CPU_TORCH;
static LLAMA: &Cell = &generated::text_decoders::llama::cells::CPU_ONNX;

/// The bert cpu cell with another tolerance.
fn with_tolerance(abs: f64, rel: f64) -> &'static Cell {
    Box::leak(Box::new(
        Cell::new(BERT.model, BERT.platform, BERT.engine, BERT.planned)
            .with_tolerance(Tolerance { abs, rel }),
    ))
}

/// The bert cpu cell with one precision check, held to `bound`.
/// The formats that are ONNX graphs. NNCF's are OpenVINO IR, which the CPU provider cannot
/// read (this binary has no OpenVINO engine); OpenVINO's runtime cells judge them by the
/// same comparison.
fn onnx_formats() -> impl Iterator<Item = runtime::Precision> {
    runtime::Precision::ALL
        .into_iter()
        .filter(|p| !p.is_openvino_ir())
}

fn with_precision_bound(
    precision: runtime::Precision,
    bound: runtime::AgreementBound,
) -> &'static Cell {
    let checks = Box::leak(Box::new([runtime::PrecisionCheck {
        precision,
        planned: runtime::Planned::Run,
        bound,
    }]));
    Box::leak(Box::new(
        Cell::new(BERT.model, BERT.platform, BERT.engine, BERT.planned)
            .with_precision_checks(checks),
    ))
}

/// The bound gen wrote for bert's `precision` check (int8 and q4 on cpu, qdq8 on qnn, q4f16 on webgpu...).
fn planned_bound(precision: runtime::Precision) -> runtime::AgreementBound {
    use generated::text_encoders::bert::cells::{CUDA_ONNX, QNN_ONNX, WEBGPU_NATIVE};
    let cells = [BERT, &CUDA_ONNX, &QNN_ONNX, &WEBGPU_NATIVE];
    cells
        .iter()
        .find_map(|c| c.precision_check(precision))
        .map(|c| c.bound)
        .expect("bert plans the precision check somewhere")
}

/// Runs a check that must fail; returns its panic message and the record it wrote.
fn failing(
    check: impl Fn(&Cell) + std::panic::RefUnwindSafe,
    cell: &'static Cell,
    results: &Path,
) -> (String, Value) {
    let _ = std::fs::remove_dir_all(results);
    let panic = std::panic::catch_unwind(|| check(cell)).expect_err("the broken check passed");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    let text = std::fs::read_to_string(results.join(format!("{}.jsonl", runtime::record::host())))
        .expect("the failed check wrote a record");
    let record: Value =
        serde_json::from_str(text.lines().last().expect("one record")).expect("a JSON record");
    assert_eq!(record["status"], "failed", "{record}");
    assert_eq!(record["basis"], "measured");
    (message, record)
}

/// The environment is the process's: each test holds this while it runs.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

fn set(name: &str, value: impl AsRef<std::ffi::OsStr>) {
    // SAFETY: the tests of this binary take turns (ENVIRONMENT), so no other thread reads the environment.
    unsafe { std::env::set_var(name, value) }
}

/// A check whose own process crashes (engines that have crashed theirs, QNN's
/// emulator among them, run each check in a child): the parent records the
/// crash as the check's failure, `engine-exited` with the signal. The child
/// is this very test, rerun by name, and it aborts.
mod isolated {
    #[test]
    fn runs() {
        if std::env::var_os("HWMATRIX_ISOLATED_CHECK").is_some() {
            std::process::abort();
        }
        let _turn = super::ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
        let scratch = hwmatrix_tests::Scratch::new("isolated");
        let results = scratch.path().join("results");
        super::set("HWMATRIX_RESULTS", &results);
        super::set(runtime::isolation::ISOLATE_ALL, "1");
        let (message, record) = super::failing(runtime::checks::runs, super::BERT, &results);
        // SAFETY: as `set`.
        unsafe { std::env::remove_var(runtime::isolation::ISOLATE_ALL) };
        assert!(
            message.contains("killed by signal 6 (SIGABRT)"),
            "{message}"
        );
        assert_eq!(record["error_kind"], "engine-exited", "{record}");
        assert_eq!(record["stage"], "run");
        assert!(
            record["reason"]
                .as_str()
                .unwrap()
                .contains("the check's own process was killed"),
            "{record}"
        );
    }
}

/// Where the cases read and write: the records, the real fixtures, and the
/// scratch folder their broken copies go in.
struct Folders<'a> {
    /// HWMATRIX_RESULTS: where each check writes its record.
    results: PathBuf,
    /// The fixtures `gen fixtures` built, never changed.
    real: PathBuf,
    scratch: &'a Path,
    /// A copy of bert's fixture whose reference is made constant, later made
    /// stale, then removed.
    constant: PathBuf,
}

#[test]
fn broken_inputs_fail_and_keep_their_evidence() {
    let _turn = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
    let scratch = Scratch::new("evidence");
    let results = scratch.path().join("results");
    set("HWMATRIX_RESULTS", &results);
    let real_fixtures = runtime::paths::fixtures_dir();
    assert!(
        real_fixtures.join("bert/meta.json").is_file(),
        "no bert fixture in {}: run `gen fixtures --model bert`",
        real_fixtures.display()
    );
    let folders = Folders {
        results,
        real: real_fixtures,
        scratch: scratch.path(),
        constant: scratch.path().join("fixtures"),
    };

    a_tolerance_of_zero_fails_out_of_tolerance(&folders);
    a_tolerance_a_constant_would_pass_finds_the_reference_not_informative(&folders);
    a_constant_reference_is_not_informative(&folders);
    a_constant_reference_fails_through_libtorch_too(&folders);
    every_precision_fails_a_bound_no_lower_precision_meets(&folders);
    float32_computed_in_float16_is_held_to_float16s_bound(&folders);
    int8_with_a_wrong_scale_fails_the_int8_check(&folders);
    another_models_variants_fail_each_precision_check_on_the_cosine(&folders);
    let generation = llama_generation(&folders);
    generation_with_broken_cache_handling_diverges_at_step_1(&folders, &generation);
    let meta = a_cache_other_than_the_declared_one_is_an_invalid_fixture(&folders, &generation);
    a_stale_generation_fixture_says_how_to_rebuild_it(&folders, &generation, meta);
    a_stale_fixture_says_how_to_rebuild_it(&folders);
    no_fixture_at_all_is_missing(&folders);
}

/// A tolerance of 0: out of tolerance, with the error, where it is worst, and the provider counts.
fn a_tolerance_of_zero_fails_out_of_tolerance(folders: &Folders) {
    let (message, record) = failing(
        runtime::checks::matches_reference,
        with_tolerance(0.0, 0.0),
        &folders.results,
    );
    assert!(
        message.contains("out-of-tolerance") && message.contains("worst at flat index"),
        "{message}"
    );
    assert_eq!(record["error_kind"], "out-of-tolerance");
    assert_eq!(
        record["stage"], "mismatch",
        "it ran and its outputs differ: the stage it stopped at"
    );
    let deviation = &record["deviation"];
    assert!(deviation["max_abs"].as_f64().unwrap() > 0.0, "{deviation}");
    let worst = deviation["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| !o["worst"].is_null())
        .expect("a worst element");
    assert!(
        worst["worst"]["index"].is_u64()
            && worst["worst"]["expected"].is_f64()
            && worst["worst"]["got"].is_f64(),
        "{worst}"
    );
    assert_eq!(record["providers"]["verified"], true);
    assert!(
        record["providers"]["shares"][0]["nodes"].as_u64().unwrap() > 0,
        "{}",
        record["providers"]
    );
    assert!(
        record["timing"]["median_ms"].as_f64().unwrap() > 0.0
            && record["timing"]["profiling"] == false
    );
}

/// A tolerance so wide that the reference's mean would pass: the reference is not informative.
fn a_tolerance_a_constant_would_pass_finds_the_reference_not_informative(folders: &Folders) {
    let (message, record) = failing(
        runtime::checks::matches_reference,
        with_tolerance(10.0, 0.0),
        &folders.results,
    );
    assert!(
        message.contains("reference is not informative"),
        "{message}"
    );
    assert_eq!(record["error_kind"], "reference-not-informative");
    assert_eq!(
        record["deviation"]["outputs"][0]["reference"]["constant_would_pass"],
        true
    );
}

/// A reference made constant (its mean): the real model no longer matches it, and it would not inform.
fn a_constant_reference_is_not_informative(folders: &Folders) {
    let fixtures = &folders.constant;
    copy_tree(&folders.real.join("bert"), &fixtures.join("bert"));
    let pooler = fixtures.join("bert/outputs/pooler_output.npy");
    let reference = runtime::npy::read(&pooler).unwrap();
    let mean = reference.values().iter().sum::<f64>() / reference.len() as f64;
    write_constant_f32(&pooler, &reference.shape, mean as f32);
    set("HWMATRIX_FIXTURES", fixtures);
    let (message, record) = failing(runtime::checks::matches_reference, BERT, &folders.results);
    assert!(
        message.contains("pooler_output") && message.contains("reference is not informative"),
        "{message}"
    );
    let pooler_record = record["deviation"]["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["output"] == "pooler_output")
        .unwrap()
        .clone();
    assert_eq!(
        pooler_record["reference"]["constant_would_pass"], true,
        "{pooler_record}"
    );
    // The record says what it read: the digest of the parts content.json
    // recorded, which the broken reference (written after it) does not change.
    let content = runtime::content::Content::read(&fixtures.join("bert")).unwrap();
    assert_eq!(
        record["fixture"]["content"],
        content.check_digest("matches_reference", runtime::EngineKind::Onnxruntime),
        "{}",
        record["fixture"]
    );
}

/// The same broken reference through libtorch (the TorchScript export): the
/// torch engine fails it too, and its record names its engine. Built
/// without the `torch` feature, the engine fails saying how to build it in.
fn a_constant_reference_fails_through_libtorch_too(folders: &Folders) {
    let (message, record) = failing(
        runtime::checks::matches_reference,
        BERT_TORCH,
        &folders.results,
    );
    assert_eq!(record["engine_kind"], "libtorch");
    if runtime::engine::torch::linked_library().is_some() {
        assert!(
            message.contains("pooler_output") && message.contains("reference is not informative"),
            "{message}"
        );
        assert_eq!(record["providers"]["requested"], "libtorch:cpu");
        assert_eq!(
            record["providers"]["verified"], true,
            "{}",
            record["providers"]
        );
    } else {
        assert_eq!(record["error_kind"], "engine-not-built");
        assert!(message.contains("--features cpu,torch"), "{message}");
    }
}

/// Every format held to a bound no lower-precision model meets: each fails
/// with the measured agreement, per output, and the record keeps every
/// metric and says which precision ran. (Only int8 and q4 are planned on
/// cpu; here the CPU provider runs every variant of bert to prove each
/// check can fail.)
fn every_precision_fails_a_bound_no_lower_precision_meets(folders: &Folders) {
    set("HWMATRIX_FIXTURES", &folders.real);
    let strict = runtime::AgreementBound {
        min_cosine: 1.0,
        max_rel_l2: 1e-9,
        min_top1: 1.0,
    };
    for precision in onnx_formats() {
        let (message, record) = failing(
            |cell| runtime::checks::precision(cell, precision),
            with_precision_bound(precision, strict),
            &folders.results,
        );
        assert!(
            message.contains("relative L2 error") && message.contains("max abs error"),
            "{message}"
        );
        assert_eq!(record["check"], precision.check_name());
        assert_eq!(record["precision"], precision.name());
        assert_eq!(record["deviation"]["agreement_bound"]["max_rel_l2"], 1e-9);
        for output in record["deviation"]["outputs"].as_array().unwrap() {
            let agreement = &output["agreement"];
            assert!(
                agreement["cosine_min"].is_f64()
                    && agreement["cosine_mean"].is_f64()
                    && agreement["rel_l2"].is_f64(),
                "{output}"
            );
        }
        assert!(
            record["deviation"]["max_abs"].as_f64().unwrap() > 1e-5,
            "{} really differs from float32: {}",
            precision.name(),
            record["deviation"]
        );
    }
}

/// Hardware that computes float32 in float16 (QNN's HTP), judged as float16
/// is: an output scaled by 0.95 stays within 10% of each output's spread
/// (the elementwise bound alone passed it), but its relative L2 error of
/// 0.053 is past fp16's bound. The verdict is the runtime's, whatever the
/// engine: here the CPU provider runs bert against a reference scaled by 0.95.
fn float32_computed_in_float16_is_held_to_float16s_bound(folders: &Folders) {
    let scaled = folders.scratch.join("scaled");
    copy_tree(&folders.real.join("bert"), &scaled.join("bert"));
    for output in ["last_hidden_state", "pooler_output"] {
        let path = scaled.join(format!("bert/outputs/{output}.npy"));
        let reference = runtime::npy::read(&path).unwrap();
        let values: Vec<u8> = reference
            .values()
            .iter()
            .flat_map(|v| ((*v * 0.95) as f32).to_le_bytes())
            .collect();
        write_npy(&path, "<f4", &reference.shape, &values);
    }
    set("HWMATRIX_FIXTURES", &scaled);
    let fp16 = planned_bound(runtime::Precision::Fp16);
    let in_float16 = Box::leak(Box::new(
        Cell::new(BERT.model, BERT.platform, BERT.engine, BERT.planned).computing_float32_in(
            runtime::Precision::Fp16,
            0.1,
            "test: float32 computed in float16",
            fp16,
        ),
    ));
    let (message, record) = failing(
        runtime::checks::matches_reference,
        in_float16,
        &folders.results,
    );
    assert!(
        message.contains("relative L2 error 0.05") && message.contains("above 0.05"),
        "{message}"
    );
    assert!(
        record["deviation"]["computed_in"]
            .as_str()
            .unwrap()
            .starts_with("fp16"),
        "{record}"
    );
    for output in record["deviation"]["outputs"].as_array().unwrap() {
        assert_eq!(
            output["violations"], 0,
            "within 10% of the spread, element by element: {output}"
        );
    }
}

/// int8 with a wrong scale on one layer: bert's last feed-forward output
/// dequantized with the scale of a 4-bit grid (max 7) on 8-bit codes (max
/// 127), 127/7 times too large. The int8 check, with the bound the specs
/// use, fails on that variant (onnx edits the scale in the exporter's venv).
fn int8_with_a_wrong_scale_fails_the_int8_check(folders: &Folders) {
    let wrong_scale = folders.scratch.join("wrong-scale");
    copy_tree(&folders.real.join("bert"), &wrong_scale.join("bert"));
    let variant = wrong_scale.join("bert/model.int8.onnx");
    let edit = std::process::Command::new(runtime::paths::python())
        .args([
            "-c",
            WRONG_SCALE,
            &variant.display().to_string(),
            "onnx::MatMul_341_scale",
            &(127.0 / 7.0).to_string(),
        ])
        .output()
        .expect("the exporter venv's python (tests/setup.sh)");
    assert!(
        edit.status.success(),
        "{}",
        String::from_utf8_lossy(&edit.stderr)
    );
    set("HWMATRIX_FIXTURES", &wrong_scale);
    let int8 = runtime::Precision::Int8;
    let (message, record) = failing(
        |cell| runtime::checks::precision(cell, int8),
        with_precision_bound(int8, planned_bound(int8)),
        &folders.results,
    );
    assert!(
        message.contains("relative L2 error") && message.contains("int8's bounds"),
        "{message}"
    );
    assert_eq!(record["check"], "int8_matches_reference");
    assert_eq!(record["error_kind"], "out-of-tolerance");
    set("HWMATRIX_FIXTURES", &folders.real);
}

/// bert's variants swapped for another model's (megatron-bert's: the same
/// inputs, outputs and sizes, other weights): with the bounds the specs
/// really use (defaults.yaml's), each precision check fails on the cosine.
fn another_models_variants_fail_each_precision_check_on_the_cosine(folders: &Folders) {
    let swapped = folders.scratch.join("swapped");
    copy_tree(&folders.real.join("bert"), &swapped.join("bert"));
    for precision in onnx_formats() {
        let variant = format!("model.{}.onnx", precision.name());
        std::fs::copy(
            folders.real.join("megatron-bert").join(&variant),
            swapped.join("bert").join(&variant),
        )
        .expect("megatron-bert's variant (gen fixtures --model megatron-bert)");
    }
    set("HWMATRIX_FIXTURES", &swapped);
    for precision in onnx_formats() {
        let real_bound = planned_bound(precision);
        let (message, record) = failing(
            |cell| runtime::checks::precision(cell, precision),
            with_precision_bound(precision, real_bound),
            &folders.results,
        );
        assert!(
            message.contains("cosine similarity") && message.contains("below"),
            "{message}"
        );
        assert_eq!(record["error_kind"], "out-of-tolerance");
        let worst = record["deviation"]["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| o["agreement"]["cosine_min"].as_f64())
            .fold(1.0, f64::min);
        assert!(
            worst < real_bound.min_cosine,
            "a wrong model's {} outputs kept cosine {worst}",
            precision.name()
        );
    }
}

/// llama's real generation fixture, and the scratch fixtures folder the
/// generation cases break a copy of it in.
struct Generation {
    real: PathBuf,
    broken: PathBuf,
}

impl Generation {
    /// Puts back, in the broken folder, a fresh copy of the real fixture.
    fn restore(&self) {
        copy_tree(
            &self.real,
            &runtime::paths::generation_fixtures(&self.broken).join("llama"),
        );
    }

    fn meta_path(&self) -> PathBuf {
        self.broken.join("generation/llama/meta.json")
    }
}

/// Back on the real fixtures: llama's generation fixture, copied into a scratch folder to break.
fn llama_generation(folders: &Folders) -> Generation {
    set("HWMATRIX_FIXTURES", &folders.real);
    let real = runtime::paths::generation_fixtures(&folders.real).join("llama");
    assert!(
        real.join("meta.json").is_file(),
        "no llama generation fixture in {}: run `gen fixtures --model llama`",
        real.display()
    );
    let generation = Generation {
        real,
        broken: folders.scratch.join("broken-generation"),
    };
    generation.restore();
    generation
}

/// Generation with its cache handling broken on purpose, on llama's real
/// generation fixture: (1) positions not offset by the past length (every
/// decode step feeds position 0, as a loop that forgets the cache's length
/// does); (2) each layer fed the other layer's cache. Both pass the prefill
/// (no cache yet) and must diverge at the first step that reads the cache.
fn generation_with_broken_cache_handling_diverges_at_step_1(
    folders: &Folders,
    generation: &Generation,
) {
    let broken = &generation.broken;
    let steps = std::fs::read_dir(broken.join("generation/llama/steps"))
        .unwrap()
        .count();
    for step in 1..steps {
        let path = broken.join(format!("generation/llama/steps/{step}/position_ids.npy"));
        let shape = runtime::npy::read(&path)
            .expect("llama's steps feed position_ids")
            .shape;
        write_zeros_i64(&path, &shape);
    }
    set("HWMATRIX_FIXTURES", broken);
    let (message, record) = failing(runtime::checks::generates, LLAMA, &folders.results);
    assert!(
        message.contains("generation diverged from PyTorch's generate() at step 1"),
        "{message}"
    );
    assert_eq!(record["check"], "generates");
    assert_eq!(record["error_kind"], "out-of-tolerance");
    assert_eq!(
        record["generation"]["first_divergence"]["step"], 1,
        "{}",
        record["generation"]
    );
    assert_eq!(
        record["generation"]["per_step"][0]["violations"], 0,
        "the prefill has no cache to get wrong: {}",
        record["generation"]
    );
    assert!(
        record["generation"]["per_step"][1]["max_abs"]
            .as_f64()
            .unwrap()
            > 1e-3,
        "{}",
        record["generation"]
    );
    assert_eq!(record["generation"]["steps"], steps);

    generation.restore();
    let meta_path = generation.meta_path();
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    let carried = meta["carried"].as_array_mut().unwrap();
    let outputs: Vec<Value> = carried.iter().map(|p| p["output"].clone()).collect();
    let layer = outputs.len() / 2;
    for (i, p) in carried.iter_mut().enumerate() {
        p["output"] = outputs[(i + layer) % outputs.len()].clone(); // layer 0 reads layer 1's cache and back
    }
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let (message, record) = failing(runtime::checks::generates, LLAMA, &folders.results);
    assert!(message.contains("at step 1"), "{message}");
    assert_eq!(
        record["generation"]["first_divergence"]["step"], 1,
        "{}",
        record["generation"]
    );
}

/// A fixture whose cache is not the one the spec declares (`cache:`, in the generated
/// GENERATION static): one layer's key taken with its sequence on another axis.
/// Returns the meta.json it wrote, which the next case makes stale.
fn a_cache_other_than_the_declared_one_is_an_invalid_fixture(
    folders: &Folders,
    generation: &Generation,
) -> Value {
    let declared = &generated::text_decoders::llama::GENERATION;
    assert!(
        declared
            .cache
            .iter()
            .any(|t| t.name == "past_key_values.0.key"),
        "llama declares its cache: {:?}",
        declared.cache
    );
    generation.restore();
    let meta_path = generation.meta_path();
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    let inputs = meta["graphs"]["decoder"]["inputs"].as_array_mut().unwrap();
    let key = inputs
        .iter_mut()
        .find(|i| i["name"] == "past_key_values.0.key")
        .expect("llama's decoder takes its cache");
    key["axes"] = serde_json::json!(["batch", "past_sequence", "", ""]);
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let (message, record) = failing(runtime::checks::generates, LLAMA, &folders.results);
    assert_eq!(record["error_kind"], "fixture-invalid", "{message}");
    assert!(
        message.contains("does not hold the cache")
            && message.contains("past_key_values.0.key: declared with axes"),
        "{message}"
    );
    meta
}

/// Rewrites the spec digest a fixture's content.json says it was built from.
fn built_from_an_older_spec(dir: &Path) {
    let path = dir.join(runtime::content::CONTENT_RECORD);
    let mut content: Value = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (`gen fixtures` records it)", path.display())),
    )
    .unwrap();
    content["spec_digest"] = Value::from("0000-built-from-an-older-spec");
    std::fs::write(&path, content.to_string()).unwrap();
}

/// A generation fixture built from another spec is stale, and says how to
/// rebuild it; so is one whose content.json was taken of another build, and
/// one without content.json.
fn a_stale_generation_fixture_says_how_to_rebuild_it(
    folders: &Folders,
    generation: &Generation,
    mut meta: Value,
) {
    let original = meta.to_string();
    meta["cache_key"] = Value::from("0000-another-build");
    std::fs::write(generation.meta_path(), meta.to_string()).unwrap();
    let (message, record) = failing(runtime::checks::generates, LLAMA, &folders.results);
    assert_eq!(record["error_kind"], "fixture-stale");
    assert!(message.contains("taken of another build"), "{message}");
    std::fs::write(generation.meta_path(), original).unwrap();
    let generation_dir = generation.meta_path().parent().unwrap().to_path_buf();
    built_from_an_older_spec(&generation_dir);
    let (message, record) = failing(runtime::checks::generates, LLAMA, &folders.results);
    assert_eq!(record["error_kind"], "fixture-stale");
    assert!(
        message.contains("gen -- fixtures --model llama")
            && message.contains("digest 0000-built-f"),
        "{message}"
    );
    std::fs::remove_file(generation_dir.join(runtime::content::CONTENT_RECORD)).unwrap();
    let (message, record) = failing(runtime::checks::generates, LLAMA, &folders.results);
    assert_eq!(record["error_kind"], "fixture-stale");
    assert!(message.contains("has no content.json"), "{message}");
}

/// A fixture built from another spec is stale, and says how to rebuild it;
/// so is one whose content.json was taken of another build of it.
fn a_stale_fixture_says_how_to_rebuild_it(folders: &Folders) {
    set("HWMATRIX_FIXTURES", &folders.constant);
    let meta_path = folders.constant.join("bert/meta.json");
    let original = std::fs::read_to_string(&meta_path).unwrap();
    let mut meta: Value = serde_json::from_str(&original).unwrap();
    meta["cache_key"] = Value::from("0000-another-build");
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let (message, record) = failing(runtime::checks::runs, BERT, &folders.results);
    assert_eq!(record["error_kind"], "fixture-stale");
    assert!(message.contains("taken of another build"), "{message}");
    std::fs::write(&meta_path, original).unwrap();
    built_from_an_older_spec(&folders.constant.join("bert"));
    let (message, record) = failing(runtime::checks::runs, BERT, &folders.results);
    assert_eq!(record["error_kind"], "fixture-stale");
    assert!(
        record["stage"].is_null(),
        "a stale fixture never reached the model: no stage of the model's"
    );
    assert!(
        message.contains("gen -- fixtures --model bert"),
        "{message}"
    );
}

/// No fixture at all.
fn no_fixture_at_all_is_missing(folders: &Folders) {
    std::fs::remove_dir_all(folders.constant.join("bert")).unwrap();
    let (_, record) = failing(runtime::checks::runs, BERT, &folders.results);
    assert_eq!(record["error_kind"], "fixture-missing");
}

/// Multiplies one initializer of an ONNX file by a factor: argv[1] the file, [2] the name, [3] the factor.
const WRONG_SCALE: &str = "
import sys, numpy, onnx
from onnx import numpy_helper
path, name, factor = sys.argv[1], sys.argv[2], float(sys.argv[3])
model = onnx.load(path)
found = [i for i in model.graph.initializer if i.name == name]
assert found, f'{path} has no initializer {name}'
found[0].CopyFrom(numpy_helper.from_array((numpy_helper.to_array(found[0]) * factor).astype(numpy.float32), name))
onnx.save(model, path)
";

/// An int64 .npy of zeros.
fn write_zeros_i64(path: &Path, shape: &[usize]) {
    let count: usize = shape.iter().product();
    write_npy(path, "<i8", shape, &vec![0u8; count * 8]);
}

/// A float32 .npy of one value.
fn write_constant_f32(path: &Path, shape: &[usize], value: f32) {
    let count: usize = shape.iter().product();
    write_npy(path, "<f4", shape, &value.to_le_bytes().repeat(count));
}

/// An .npy file (format 1.0, little-endian, C order) of `data`, elements of numpy's `descr`.
fn write_npy(path: &Path, descr: &str, shape: &[usize], data: &[u8]) {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}
