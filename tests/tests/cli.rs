//! Every kind of bad spec, tried on a copy of model-specs/: gen exits
//! non-zero, names the file and line (and column), says how to fix it, and
//! leaves the output folder untouched. Also: model_types that are not Rust
//! identifiers (`xlm-roberta`) and the module name gen gives them.

use std::path::{Path, PathBuf};

use hwmatrix_tests::{
    Scratch, Workspace, copy_tree, copy_workspace, empty_crate, replace_line, run_gen, tree,
    workspace,
};

/// Runs gen on the broken copy and checks the error contract; returns stderr.
fn expect_spec_error(ws: &Workspace, file: &Path, line: usize, fragment: &str) -> String {
    let before = tree(&ws.out);
    let run = run_gen(&[
        "--all",
        "--specs",
        ws.specs.to_str().unwrap(),
        "--out",
        ws.out.to_str().unwrap(),
    ]);
    assert_ne!(
        run.code, 0,
        "gen accepted a bad spec; stdout: {}",
        run.stdout
    );
    let location = format!("{}:{line}:", file.display());
    assert!(
        run.stderr.contains(&location),
        "expected {location} in:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(fragment),
        "expected {fragment:?} in:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("help: "),
        "no fix suggested:\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert!(
        before == tree(&ws.out),
        "gen changed the output folder on bad input"
    );
    run.stderr
}

fn bert(ws: &Workspace) -> PathBuf {
    ws.specs.join("models/text_encoders/bert.yaml")
}

/// Appends a `platforms:` block to the file and returns the line number of its first entry.
fn append_platforms_block(file: &Path, entry: &str) -> usize {
    let text = std::fs::read_to_string(file).unwrap();
    let line = text.lines().count() + 2;
    std::fs::write(file, format!("{text}platforms:\n{entry}")).unwrap();
    line
}

#[test]
fn unknown_field() {
    let ws = copy_workspace("unknown-field");
    let line = replace_line(&bert(&ws), "task:", "tsak: feature-extraction");
    let err = expect_spec_error(&ws, &bert(&ws), line, "unknown field `tsak`");
    assert!(err.contains("expected one of"), "{err}");
}

#[test]
fn wrong_type() {
    let ws = copy_workspace("wrong-type");
    let line = replace_line(&bert(&ws), "inputs:", "inputs: 3");
    expect_spec_error(&ws, &bert(&ws), line, "invalid type");
}

#[test]
fn unknown_platform() {
    let ws = copy_workspace("unknown-platform");
    let line = append_platforms_block(
        &bert(&ws),
        "  tpu:\n    status: unsupported\n    reason: \"no TPU\"\n",
    );
    expect_spec_error(&ws, &bert(&ws), line, "unknown variant `tpu`");
}

#[test]
fn a_cache_on_a_model_that_does_not_generate() {
    let ws = copy_workspace("cache-not-generating");
    let text = std::fs::read_to_string(bert(&ws)).unwrap();
    let line = text.lines().count() + 1;
    let cache = "cache:\n  - layers: [0]\n    tensors:\n      - {name: key, dtype: float32, axes: [batch, '', past_sequence, '']}\n";
    std::fs::write(bert(&ws), format!("{text}{cache}")).unwrap();
    let err = expect_spec_error(
        &ws,
        &bert(&ws),
        line,
        "`cache` is declared, but `bert` does not generate (task `feature-extraction`)",
    );
    assert!(err.contains("only a text-generation"), "{err}");
}

#[test]
fn unknown_category() {
    let ws = copy_workspace("unknown-category");
    let line = replace_line(&bert(&ws), "category:", "category: text_encoderz");
    expect_spec_error(&ws, &bert(&ws), line, "unknown category `text_encoderz`");
}

#[test]
fn unknown_architecture_type() {
    let ws = copy_workspace("unknown-architecture");
    let line = replace_line(&bert(&ws), "architecture:", "architecture: encoder-ony");
    expect_spec_error(
        &ws,
        &bert(&ws),
        line,
        "unknown architecture type `encoder-ony`",
    );
}

#[test]
fn duplicate_model_type() {
    let ws = copy_workspace("duplicate");
    let copy = ws.specs.join("models/vision/bert.yaml");
    std::fs::copy(bert(&ws), &copy).unwrap();
    replace_line(&copy, "category:", "category: vision");
    let line = std::fs::read_to_string(&copy)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("model_type:"))
        .unwrap()
        + 1;
    expect_spec_error(&ws, &copy, line, "duplicate model_type `bert`");
}

#[test]
fn model_type_not_allowed() {
    let ws = copy_workspace("bad-model-type");
    let file = ws.specs.join("models/text_encoders/Xlm-Roberta.yaml");
    std::fs::rename(bert(&ws), &file).unwrap();
    let line = replace_line(&file, "model_type:", "model_type: Xlm-Roberta");
    expect_spec_error(&ws, &file, line, "model_type `Xlm-Roberta` is not allowed");
}

/// A copy of bert's spec under another model_type (file and field), in the same category.
fn copy_bert_as(ws: &Workspace, model_type: &str) -> PathBuf {
    let file = ws
        .specs
        .join(format!("models/text_encoders/{model_type}.yaml"));
    std::fs::copy(bert(ws), &file).unwrap();
    replace_line(&file, "model_type:", &format!("model_type: {model_type}"));
    file
}

/// transformers' model_type is kept as it is (spec file, ModelDecl, records);
/// only the Rust module is named by the rule: `-` and `.` → `_`, a keyword gets `_`.
#[test]
fn model_type_with_a_dash_renders_a_module_with_underscores() {
    let ws = copy_workspace("dash");
    copy_bert_as(&ws, "bert-dash");
    copy_bert_as(&ws, "type");
    let scratch = Scratch::new("dash-out");
    let out = empty_crate(scratch.path());
    let run = run_gen(&[
        "--all",
        "--specs",
        ws.specs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    let read =
        |rel: &str| std::fs::read_to_string(out.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let module = read("src/text_encoders/bert_dash/mod.rs");
    assert!(
        module.contains(r#"model_type: "bert-dash","#),
        "ModelDecl keeps the model_type:\n{module}"
    );
    assert!(
        module.contains("models/text_encoders/bert-dash.yaml"),
        "{module}"
    );
    let cpu = read("src/text_encoders/bert_dash/cpu.rs");
    assert!(
        cpu.contains(
            "Select this cell with `cargo test -p generated text_encoders::bert_dash::cpu::onnx::`"
        ),
        "{cpu}"
    );
    assert!(read("src/text_encoders/mod.rs").contains("pub mod bert_dash;"));
    assert!(read("src/lib.rs").contains("&text_encoders::bert_dash::cells::CPU_ONNX"));
    assert!(
        !out.join("src/text_encoders/bert-dash").exists(),
        "no folder is named with a dash"
    );

    // A keyword gets a trailing underscore.
    assert!(read("src/text_encoders/type_/mod.rs").contains(r#"model_type: "type","#));
    assert!(read("src/text_encoders/mod.rs").contains("pub mod type_;"));

    let list = run_gen(&["list", "--specs", ws.specs.to_str().unwrap()]);
    assert!(list.stdout.contains("bert-dash"), "{}", list.stdout);
    // The test paths a script filters on (tests/run.sh) are the folders gen wrote.
    let specs = ws.specs.to_str().unwrap();
    let paths = run_gen(&["list", "--test-paths", "--specs", specs]);
    assert!(
        paths
            .stdout
            .contains("bert-dash\ttext_encoders::bert_dash::\n"),
        "{}",
        paths.stdout
    );
    for line in paths.stdout.lines() {
        let (_, path) = line.split_once('\t').expect("model_type, a tab, its path");
        let folder = path.trim_end_matches("::").replace("::", "/");
        assert!(
            out.join("src").join(&folder).join("mod.rs").is_file(),
            "{line}: gen wrote no src/{folder}/mod.rs"
        );
    }
    // Slices of 4 split the models: each is in exactly one.
    let mut sliced: Vec<String> = (0..4)
        .flat_map(|k| {
            let slice = format!("{k}/4");
            run_gen(&["list", "--test-paths", "--slice", &slice, "--specs", specs])
                .stdout
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    sliced.sort();
    let mut every: Vec<String> = paths.stdout.lines().map(str::to_string).collect();
    every.sort();
    assert_eq!(
        sliced, every,
        "the slices of 4 together are every model, once"
    );
    let one = run_gen(&[
        "--model",
        "bert-dash",
        "--check",
        "--specs",
        ws.specs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        one.code, 0,
        "--model takes the exact model_type: {}{}",
        one.stdout, one.stderr
    );
}

#[test]
fn model_types_with_the_same_module_name_are_an_error() {
    let ws = copy_workspace("module-collision");
    let dash = copy_bert_as(&ws, "bert-dash");
    let underscore = copy_bert_as(&ws, "bert_dash");
    // Files are read in sorted order: `-` sorts before `_`, so the second one is reported.
    let line = std::fs::read_to_string(&underscore)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("model_type:"))
        .unwrap()
        + 1;
    let err = expect_spec_error(
        &ws,
        &underscore,
        line,
        "both become the Rust module `bert_dash`",
    );
    assert!(
        err.contains("model_type `bert_dash` and model_type `bert-dash`"),
        "{err}"
    );
    assert!(
        err.contains(&dash.display().to_string()),
        "names both files:\n{err}"
    );
}

#[test]
fn model_type_escaping_the_output_folder() {
    let ws = copy_workspace("escape");
    let line = replace_line(&bert(&ws), "model_type:", "model_type: ../../etc/evil");
    expect_spec_error(&ws, &bert(&ws), line, "could escape the output folder");
}

#[test]
fn missing_required_field() {
    let ws = copy_workspace("missing-field");
    let text = std::fs::read_to_string(bert(&ws)).unwrap();
    // Both the curated `task:` and the imported one (indented, in `imported:`).
    let without: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("task:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(bert(&ws), without).unwrap();
    // A field neither curated nor imported is reported at the spec's model_type line.
    let first_key = text
        .lines()
        .position(|l| l.starts_with("model_type:"))
        .unwrap()
        + 1;
    expect_spec_error(
        &ws,
        &bert(&ws),
        first_key,
        "`task` is set neither in the spec nor by `gen derive`",
    );
}

#[test]
fn override_status_without_reason() {
    let ws = copy_workspace("no-reason");
    let line = append_platforms_block(&bert(&ws), "  qnn:\n    status: unsupported\n");
    expect_spec_error(&ws, &bert(&ws), line, "without a reason");
}

#[test]
fn errors_in_several_files_are_all_reported() {
    let ws = copy_workspace("several");
    replace_line(&bert(&ws), "category:", "category: nope");
    let vit = ws.specs.join("models/vision/vit.yaml");
    replace_line(&vit, "architecture:", "architecture: nope");
    let run = run_gen(&[
        "--all",
        "--specs",
        ws.specs.to_str().unwrap(),
        "--out",
        ws.out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("bert.yaml:") && run.stderr.contains("vit.yaml:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("2 errors in the specs"),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_selection_is_an_error() {
    let run = run_gen(&["--model", "bertt", "--check"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("no spec for model `bertt`"),
        "{}",
        run.stderr
    );
    let run = run_gen(&["--platform", "tpu"]);
    assert_eq!(run.code, 2, "clap usage error");
    assert!(run.stderr.contains("unknown platform"), "{}", run.stderr);
}

#[test]
fn help_explains_the_commands() {
    let run = run_gen(&["--help"]);
    assert_eq!(run.code, 0);
    for word in [
        "--category",
        "--model",
        "--platform",
        "--check",
        "--specs",
        "--out",
        "list",
        "fixtures",
        "Examples:",
    ] {
        assert!(
            run.stdout.contains(word),
            "--help lacks {word}:\n{}",
            run.stdout
        );
    }
}

#[test]
fn fallback_op_without_reason() {
    let ws = copy_workspace("fallback-no-reason");
    append_platforms_block(
        &bert(&ws),
        "  cuda:\n    fallback_ops:\n      Shape: \"\"\n",
    );
    let line = std::fs::read_to_string(bert(&ws))
        .unwrap()
        .lines()
        .position(|l| l.trim_start().starts_with("Shape:"))
        .unwrap()
        + 1;
    expect_spec_error(
        &ws,
        &bert(&ws),
        line,
        "the `cuda` fallback of `Shape` has no reason",
    );
}

#[test]
fn unknown_execution_provider() {
    let ws = copy_workspace("unknown-provider");
    let hardware = ws.specs.join("hardware.yaml");
    let line = replace_line(
        &hardware,
        "      - onnxruntime: {provider: CUDAExecutionProvider",
        "      - onnxruntime: {provider: CUDAProvider}",
    );
    expect_spec_error(&ws, &hardware, line, "unknown variant `CUDAProvider`");
}

#[test]
fn all_does_not_combine_with_a_selection() {
    let run = run_gen(&["--all", "--category", "vision", "--check"]);
    assert_eq!(run.code, 2, "clap usage error: {}", run.stderr);
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}

#[test]
fn doctor_names_what_an_absent_platform_lacks_and_fails() {
    if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        return; // MPS is there on Apple Silicon: the absent case needs another machine
    }
    let run = run_gen(&["doctor", "--platform", "mps"]);
    assert_eq!(
        run.code, 1,
        "an unusable selected platform is exit 1:\n{}",
        run.stdout
    );
    assert!(run.stdout.contains("mps       unusable"), "{}", run.stdout);
    assert!(
        run.stdout.contains("MPS needs an Apple Silicon Mac"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("missing  torch: torch has MPS only on macOS"),
        "the engine's own reason too:\n{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("run      cargo test -p generated --features mps,torch ::mps::"),
        "{}",
        run.stdout
    );
}

#[test]
fn doctor_finds_the_cpu_library_the_cells_load() {
    // tests/run.sh installs the exporter venv, whose onnxruntime wheel serves the cpu cells.
    let run = run_gen(&["doctor", "--platform", "cpu"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("cpu       usable"), "{}", run.stdout);
    assert!(
        run.stdout.contains("found    onnx: onnxruntime 1."),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("found    torch: libtorch 2.13.0"),
        "the torch engine's library too:\n{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("1 of 1 platforms usable here: cpu"),
        "{}",
        run.stdout
    );
    // This machine's CPU class, and the store's evidence of it (the checkout's own store).
    let class = &runtime::CpuClass::here().class;
    assert!(
        run.stdout
            .contains(&format!("found    cpu class: {class} ("))
            && run
                .stdout
                .contains("the store's cpu evidence of this class is run "),
        "{}",
        run.stdout
    );
}

/// Runs gen on the copy's specs alone (doctor and import take no `--out`).
fn on_specs(ws: &Workspace, args: &[&str]) -> hwmatrix_tests::Run {
    let mut all = args.to_vec();
    all.extend(["--specs", ws.specs.to_str().expect("utf-8 path")]);
    run_gen(&all)
}

#[test]
fn doctor_fails_on_a_cpu_class_the_store_never_measured_and_says_how_to_record_it() {
    let ws = copy_workspace("doctor-class");
    // A store that lists no class: whatever this machine is, it was never measured.
    std::fs::remove_dir_all(ws.specs.join("evidence").join("cpu-classes")).unwrap();
    let run = on_specs(&ws, &["doctor", "--platform", "cpu"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let class = &runtime::CpuClass::here().class;
    for words in [
        format!("cpu class: {class} ("),
        "the evidence store has no cpu evidence measured on a CPU of this class".to_string(),
        "`gen measure --platform cpu`, then `gen`".to_string(),
    ] {
        assert!(run.stdout.contains(&words), "{words:?} in:\n{}", run.stdout);
    }
}

#[test]
fn records_without_a_cpu_class_are_classed_by_the_flags_of_their_machine() {
    let ws = copy_workspace("import-cpu-flags");
    let scratch = ws.specs.parent().unwrap().to_path_buf();
    // bert's int8 check failing on a machine whose records predate `cpu_class`.
    let records = scratch.join("records");
    std::fs::create_dir_all(&records).unwrap();
    let record = serde_json::json!({
        "run_id": "avx2-run", "time": "2026-12-01T21:36:19Z", "host": "vm", "model": "bert",
        "category": "text_encoders", "platform": "cpu", "engine_kind": "onnxruntime",
        "engine": "onnxruntime, CPUExecutionProvider", "check": "int8_matches_reference",
        "status": "failed", "basis": "measured", "reason": "cosine similarity 0.7087, below 0.98",
        "error_kind": "out-of-tolerance", "stage": "mismatch", "providers": null, "deviation": null,
        "timing": null, "memory": null, "fixture": null, "library": null, "precision": "int8",
        "runtime_version": "0.1.0",
    });
    std::fs::write(records.join("vm.jsonl"), format!("{record}\n")).unwrap();
    let flags = scratch.join("cpu.txt");
    std::fs::write(
        &flags,
        "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx f16c avx2\n",
    )
    .unwrap();
    // The flags need records to class.
    let run = on_specs(
        &ws,
        &[
            "measure",
            "--platform",
            "cpu",
            "--cpu-flags",
            flags.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 2, "clap usage error: {}", run.stderr);
    let import = || {
        on_specs(
            &ws,
            &[
                "measure",
                "--platform",
                "cpu",
                "--model",
                "bert",
                "--records",
                records.to_str().unwrap(),
                "--cpu-flags",
                flags.to_str().unwrap(),
            ],
        )
    };
    // Another class on record as having measured int8 (and passed bert's: no entry), so
    // AVX2's failure is AVX2's own, not a first measurement for every class.
    let classes_file = ws
        .specs
        .join("evidence")
        .join("cpu-classes")
        .join("measured.yaml");
    std::fs::write(
        &classes_file,
        "classes:\n- platform: cpu\n  class: x86-64 avx512-vnni\n  cpu: x86-64 avx512-vnni (avx512_vnni)\n  run: vnni-run\n  date: 2026-12-01T00:00:00Z\n  host: vm\n  checks:\n    int8_matches_reference: {measured: 1, passed: 1}\n",
    )
    .unwrap();
    let bert = ws.specs.join("evidence").join("bert.yaml");
    let passes = |evidence: &str| {
        evidence
            .split_once("\npassed:\n")
            .map(|(_, p)| p.to_string())
    };
    let passes_before = passes(&std::fs::read_to_string(&bert).unwrap());
    let run = import();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // Another class's int8 verdict leaves the passes this class measured as they were.
    assert!(passes_before.is_some());
    assert_eq!(
        passes(&std::fs::read_to_string(&bert).unwrap()),
        passes_before
    );
    assert!(
        run.stdout
            .contains("CPU class x86-64 avx2 recorded as measured"),
        "{}",
        run.stdout
    );
    let evidence = std::fs::read_to_string(ws.specs.join("evidence").join("bert.yaml")).unwrap();
    for words in [
        "check: int8_matches_reference\n  cpu_class: x86-64 avx2\n",
        "attribution: engine",
        "error: 'on x86-64 avx2, without VNNI",
        "cpu: x86-64 avx2 (avx2)",
    ] {
        assert!(evidence.contains(words), "{words:?} in:\n{evidence}");
    }
    let classes = std::fs::read_to_string(&classes_file).unwrap();
    assert!(
        classes.contains("class: x86-64 avx2\n  cpu: x86-64 avx2 (avx2)\n  run: avx2-run"),
        "{classes}"
    );
    // Once the class is on record, a run of some models leaves its counts as they were.
    std::fs::write(
        &classes_file,
        "classes:\n- platform: cpu\n  class: x86-64 avx2\n  cpu: x86-64 avx2 (avx2)\n  run: avx2-run\n  date: 2026-12-01T21:36:19Z\n  host: vm\n  checks:\n    int8_matches_reference: {measured: 522, passed: 314}\n",
    )
    .unwrap();
    let run = import();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "CPU class x86-64 avx2 (run avx2-run) kept as its last whole run measured it"
        ),
        "{}",
        run.stdout
    );
    let kept = std::fs::read_to_string(&classes_file).unwrap();
    assert!(kept.contains("measured: 522"), "{kept}");
    // A file without a flags line is refused, naming it.
    std::fs::write(&flags, "model name : nothing\n").unwrap();
    let run = import();
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("cpu.txt: no `flags :`"),
        "{}",
        run.stderr
    );
}

/// `gen coverage --fail-on-stale` passes on a store whose entries were measured with
/// today's engine, and exits 1 naming the entry once its engine version cannot be read
/// (stale, never fresh: nothing would tell an engine change from it).
/// The copied test specs' textish evidence as if measured by today's verdict
/// code (the store's copy names a runtime from before it), written; with its
/// path, its text, and the text without its engine versions (stale, never fresh).
fn textish_measured_today(specs: &std::path::Path) -> (std::path::PathBuf, String, String) {
    let evidence = specs.join("evidence/textish.yaml");
    let today = runtime::record::runtime_version(runtime::EngineKind::Chromium);
    let text = std::fs::read_to_string(&evidence)
        .unwrap()
        .replace("runtime: 0.1.0", &format!("runtime: {today}"));
    std::fs::write(&evidence, &text).unwrap();
    let unversioned = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("library:"))
        .map(|l| format!("{l}\n"))
        .collect();
    (evidence, text, unversioned)
}

/// `gen measure --stale` re-measures only the cells holding a stale entry: with
/// the store fresh it has nothing to run; with the entry's engine version gone
/// (stale, never fresh) it selects that cell and goes on to measure it (here from
/// an empty records folder, which it says holds no run).
#[test]
fn import_stale_measures_only_stale_entries_again() {
    let scratch = Scratch::new("import-stale");
    let specs = scratch.path().join("specs");
    copy_tree(&workspace().join("tests/specs"), &specs);
    let records = scratch.path().join("records");
    std::fs::create_dir_all(&records).unwrap();
    let import = || {
        run_gen(&[
            "measure",
            "--specs",
            specs.to_str().unwrap(),
            "--platform",
            "webnn",
            "--model",
            "textish",
            "--stale",
            "--verify",
            "--records",
            records.to_str().unwrap(),
        ])
    };
    let (evidence, text, unversioned) = textish_measured_today(&specs);
    let fresh = import();
    assert_eq!(fresh.code, 0, "{}{}", fresh.stdout, fresh.stderr);
    assert!(
        fresh
            .stdout
            .contains("no stored entry of the selected models is stale here"),
        "{}",
        fresh.stdout
    );
    assert_ne!(text, unversioned, "the entry names its engine");
    std::fs::write(&evidence, unversioned).unwrap();
    let stale = import();
    assert_ne!(stale.code, 0, "{}{}", stale.stdout, stale.stderr);
    assert!(
        stale
            .stderr
            .contains("holds no record of a webnn check that ran"),
        "the stale cell is selected and measured: {}{}",
        stale.stdout,
        stale.stderr
    );
    let without_platform = run_gen(&["measure", "--specs", specs.to_str().unwrap(), "--stale"]);
    assert!(
        without_platform.stderr.contains("add --platform P"),
        "{}",
        without_platform.stderr
    );
}

/// A platform hardware.yaml leaves out is named, with the whole list the loader wants (from
/// the platforms gen knows, so a new one is listed without another edit), and nothing is written.
#[test]
fn a_platform_missing_from_hardware_yaml_is_named_with_the_list() {
    let scratch = Scratch::new("missing-platform");
    let specs = scratch.path().join("specs");
    copy_tree(&workspace().join("tests/specs"), &specs);
    let hardware = specs.join("hardware.yaml");
    let text = std::fs::read_to_string(&hardware).unwrap();
    std::fs::write(&hardware, text.replacen("\n  qnn: {", "\n  # qnn: {", 1)).unwrap();
    let run = run_gen(&["list", "--specs", specs.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("hardware.yaml:")
            && run.stderr.contains("platform `qnn` is missing")
            && run.stderr.contains(
                "must describe all 8 platforms: cpu, cuda, rocm, mps, openvino, qnn, webnn, webgpu"
            ),
        "{}",
        run.stderr
    );
}

/// A fixture root holds one graph's fixtures: ours are never built into optimum's root
/// (its graph.json), nor optimum's into one holding ours; each refusal says where instead,
/// before the exporter is looked for, and writes nothing.
#[test]
fn fixtures_of_one_graph_are_refused_in_anothers_root() {
    let scratch = Scratch::new("graph-roots");
    let optimum_root = scratch.path().join("optimum");
    std::fs::create_dir_all(&optimum_root).unwrap();
    std::fs::write(
        optimum_root.join("graph.json"),
        "{\"graph\": \"optimum\"}\n",
    )
    .unwrap();
    let specs = workspace().join("tests/specs");
    let ours = run_gen(&[
        "fixtures",
        "--specs",
        specs.to_str().unwrap(),
        "--model",
        "textish",
        "--fixtures",
        optimum_root.to_str().unwrap(),
        "--python",
        "/nonexistent/python",
    ]);
    assert_eq!(ours.code, 1, "{}{}", ours.stdout, ours.stderr);
    assert!(
        ours.stderr
            .contains("holds fixtures of another tool's graphs")
            && ours.stderr.contains("--graph optimum"),
        "{}",
        ours.stderr
    );
    assert_eq!(
        std::fs::read_dir(&optimum_root).unwrap().count(),
        1,
        "nothing written"
    );
}

/// wgpu runs quantization.yaml's kernels, never a whole model: listed among a platform's
/// engines it is refused with the file, line and where its cells are planned instead.
#[test]
fn wgpu_among_a_platforms_engines_is_refused() {
    let scratch = Scratch::new("wgpu-engine");
    let specs = scratch.path().join("specs");
    copy_tree(&workspace().join("tests/specs"), &specs);
    let hardware = specs.join("hardware.yaml");
    let text = std::fs::read_to_string(&hardware).unwrap();
    let listed = "engines: [{browser: {backend: webgpu}}]";
    assert!(
        text.contains(listed),
        "tests/specs/hardware.yaml changed: {listed}"
    );
    let with_wgpu = "engines: [{wgpu: {}}, {browser: {backend: webgpu}}]";
    std::fs::write(&hardware, text.replacen(listed, with_wgpu, 1)).unwrap();
    let run = run_gen(&["list", "--specs", specs.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("hardware.yaml:")
            && run
                .stderr
                .contains("platform `webgpu` lists wgpu among its engines")
            && run.stderr.contains("quantization.yaml's `platform`"),
        "{}",
        run.stderr
    );
}

/// `gen import` was two verbs and `gen results import` one: each old spelling is refused,
/// naming the verb that does what was asked, and touches nothing.
#[test]
fn renamed_verbs_are_refused_with_their_new_name() {
    let scratch = Scratch::new("renamed-verbs");
    let specs = scratch.path().join("specs");
    copy_tree(&workspace().join("tests/specs"), &specs);
    let db = scratch.path().join("results.sqlite");
    let specs = specs.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["import", "--specs", specs, "--model", "textish"],
            "run `gen derive --model textish",
        ),
        (
            &["import", "--specs", specs, "--check"],
            "run `gen derive --check`",
        ),
        (
            &["import", "--specs", specs, "--platform", "cpu", "--verify"],
            "run `gen measure --platform cpu --verify`",
        ),
        (
            &["results", "--db", db.to_str().unwrap(), "import", "x.jsonl"],
            "`gen results import` is now `gen results load`",
        ),
    ];
    for (args, says) in cases {
        let run = run_gen(args);
        assert_eq!(run.code, 1, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(says),
            "{args:?} should say {says:?}: {}",
            run.stderr
        );
    }
    assert!(!db.exists(), "a refused verb opened the database");
}

#[test]
fn coverage_fails_on_a_stale_entry() {
    let scratch = Scratch::new("coverage-stale");
    let specs = scratch.path().join("specs");
    copy_tree(&workspace().join("tests/specs"), &specs);
    let db = scratch.path().join("empty.sqlite");
    std::fs::write(&db, b"").unwrap();
    let coverage = |scope: &str| {
        run_gen(&[
            "coverage",
            "--specs",
            specs.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--fail-on-stale",
            scope,
        ])
    };
    let (evidence, text, unversioned) = textish_measured_today(&specs);
    let fresh = coverage("high");
    assert_eq!(fresh.code, 0, "{}{}", fresh.stdout, fresh.stderr);
    assert_ne!(text, unversioned, "the entry names its engine");
    std::fs::write(&evidence, unversioned).unwrap();
    let stale = coverage("high");
    assert_eq!(stale.code, 1, "{}{}", stale.stdout, stale.stderr);
    assert!(
        stale.stdout.contains(
            "error: the evidence store holds 1 stale entries of the high-priority models"
        ) && stale
            .stdout
            .contains("- textish webnn/browser/dynamic_shapes: it records no engine"),
        "{}",
        stale.stdout
    );
}

/// `gen checkpoint` refuses what it cannot run before anything is exported or
/// allocated, each with its reason, and writes nothing: an empty folder, a broken
/// config.json (its line and column), a GGUF of an architecture transformers cannot
/// load, an architecture without a spec, and weights too large for this machine
/// (declared in a safetensors header, not one byte of them written).
#[test]
fn checkpoint_refuses_what_it_cannot_run_and_writes_nothing() {
    use hwmatrix_importer::checkpoint::test_files;
    let scratch = Scratch::new("checkpoint-refusals");
    let out = scratch.path().join("row");
    let folder = |name: &str, config: Option<&str>| {
        let dir = scratch.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(config) = config {
            std::fs::write(dir.join("config.json"), config).unwrap();
        }
        dir
    };
    let empty = folder("empty", None);
    let broken = folder(
        "broken",
        Some("{\n  \"model_type\": \"bert\",\n  hidden_size: 32\n}"),
    );
    test_files::safetensors(&broken.join("model.safetensors"), &[&[4, 4]]);
    let unknown = folder("unknown", Some(r#"{"model_type": "no_such_architecture"}"#));
    test_files::safetensors(&unknown.join("model.safetensors"), &[&[4, 4]]);
    let huge = folder("huge", Some(r#"{"model_type": "llama"}"#));
    // A trillion parameters: more than any machine this runs on has memory for, 4 TB at float32.
    test_files::safetensors(&huge.join("model.safetensors"), &[&[1_000_000, 1_000_000]]);
    let gguf = scratch.path().join("rwkv.gguf");
    test_files::gguf(&gguf, "rwkv6", &[64, 64]);
    let cases = [
        (&empty, "is empty: not a checkpoint"),
        (&broken, "config.json:3:3: not valid JSON"),
        (
            &unknown,
            "architecture `no_such_architecture`, which model-specs/ has no spec of",
        ),
        (&huge, "is too large for this machine"),
        (&gguf, "a GGUF of architecture `rwkv6`"),
    ];
    for (path, why) in cases {
        let run = run_gen(&[
            "checkpoint",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(
            run.code,
            1,
            "{}: {}{}",
            path.display(),
            run.stdout,
            run.stderr
        );
        assert!(
            run.stderr.contains(why),
            "{}: {}",
            path.display(),
            run.stderr
        );
        assert!(run.stderr.contains("help:"), "{}", run.stderr);
        assert!(
            !out.exists() && !scratch.path().join("row.partial").exists(),
            "{} wrote {}",
            path.display(),
            out.display()
        );
    }
    // The sizes a refusal for memory computes are in its message.
    let run = run_gen(&["checkpoint", huge.to_str().unwrap(), "--dry-run"]);
    assert!(
        run.stderr.contains("4000.00 GB of float32 weights")
            && run
                .stderr
                .contains("1000000.0M parameters in its safetensors headers"),
        "{}",
        run.stderr
    );
    // An --only naming a platform the run leaves out would run nothing of it: refused.
    let small = folder("small", Some(r#"{"model_type": "bert"}"#));
    test_files::safetensors(&small.join("model.safetensors"), &[&[4, 4]]);
    let run = run_gen(&[
        "checkpoint",
        small.to_str().unwrap(),
        "--platform",
        "cpu",
        "--only",
        "webgpu::native::fp16_matches_reference",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(
            "--only webgpu::native::fp16_matches_reference: names no platform this run uses"
        ),
        "{}",
        run.stderr
    );
    assert!(!out.exists() && !scratch.path().join("row.partial").exists());
    // A --features set without a feature the platform's cells need would compile none of
    // them: refused, naming the one it lacks; a set without `=` is refused by the parser.
    let run = run_gen(&[
        "checkpoint",
        small.to_str().unwrap(),
        "--platform",
        "cpu",
        "--features",
        "cpu=torch",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("--features cpu=torch: lacks cpu, which cpu's cells need"),
        "{}",
        run.stderr
    );
    assert!(!out.exists() && !scratch.path().join("row.partial").exists());
    let run = run_gen(&["checkpoint", small.to_str().unwrap(), "--features", "cpu"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("write it as PLATFORM=F1,F2"),
        "{}",
        run.stderr
    );
}

/// One record of albert's cpu ONNX Runtime cell: `check` (float32's, or a precision's
/// `<precision>_matches_reference`) passed in `run` on fixture content `content`, with
/// today's engine and verdict code.
fn albert_pass(run: &str, check: &str, content: &str) -> String {
    serde_json::json!({
        "run_id": run, "time": "2026-12-06T10:00:00Z", "host": "vm", "model": "albert",
        "category": "text_encoders", "platform": "cpu", "engine_kind": "onnxruntime",
        "engine": "onnxruntime, CPUExecutionProvider", "check": check, "status": "passed",
        "basis": "measured", "precision": check.strip_suffix("_matches_reference").unwrap_or("float32"),
        "runtime_version": runtime::record::runtime_version(runtime::EngineKind::Onnxruntime),
        "library": "onnxruntime (<cache>/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.1.31.1)",
        "fixture": {"dir": "<fixtures>/albert", "source": "tiny-random", "cache_key": "k1",
                    "content": format!("{content} on x86-64 avx2 (avx2 fma)")},
    })
    .to_string()
}

/// Passes are kept in the store by content: `gen measure` writes a cell's passed checks
/// with its run, a run that measured the same content writes nothing, other content
/// replaces them; and a report of a run that did not reach the cell shows it passed by
/// the run that measured it, which without the store's pass it cannot.
#[test]
fn a_cell_this_run_did_not_reach_shows_the_run_that_measured_its_passes() {
    let ws = copy_workspace("passes");
    let scratch = ws.specs.parent().unwrap().to_path_buf();
    let evidence = ws.specs.join("evidence").join("albert.yaml");
    // `gen measure --records` of albert's cpu ONNX Runtime cell: `checks` passed in `run`.
    let measure = |run: &str, content: &str, checks: &[&str]| {
        let records = scratch.join(format!("records-{run}"));
        std::fs::create_dir_all(&records).unwrap();
        let lines: Vec<String> = checks
            .iter()
            .map(|check| albert_pass(run, check, content))
            .collect();
        std::fs::write(records.join("vm.jsonl"), lines.join("\n") + "\n").unwrap();
        on_specs(
            &ws,
            &[
                "measure",
                "--platform",
                "cpu",
                "--model",
                "albert",
                "--records",
                records.to_str().unwrap(),
            ],
        )
    };
    // The whole cell: its float32 checks and cpu's precision checks (hardware.yaml).
    let import = |run: &str, content: &str| {
        let whole = [
            "runs",
            "matches_reference",
            "dynamic_shapes",
            "int8_matches_reference",
            "int8_avx2_matches_reference",
            "q4_matches_reference",
            "bnb4_matches_reference",
            "q2_matches_reference",
        ];
        let run = measure(run, content, &whole);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        std::fs::read_to_string(&evidence).unwrap()
    };
    let first = import("run-a", "aaaa1111aaaa1111");
    assert!(
        first.contains("    runs: aaaa1111aaaa1111\n  built_on: x86-64 avx2 (avx2 fma)\n")
            && first.contains("    run: run-a\n"),
        "{first}"
    );
    // The same content, engine and verdict code measured again: nothing is rewritten.
    assert_eq!(import("run-b", "aaaa1111aaaa1111"), first);
    // Other content: the new run's passes replace the block.
    let other = import("run-c", "bbbb2222bbbb2222");
    assert!(other.contains("    run: run-c\n"), "{other}");
    // A run of one of the cell's precision checks (a test filter) would replace the block and
    // drop the others' passes: refused, naming them, and nothing written.
    let partial = measure("run-d", "dddd4444dddd4444", &["q4_matches_reference"]);
    assert_eq!(partial.code, 1, "{}{}", partial.stdout, partial.stderr);
    assert!(
        partial.stderr.contains(
            "only some checks of 1 cells whose stored passes hold others, which importing it would drop (a cell's passes are one run's): albert with onnxruntime (bnb4_matches_reference, dynamic_shapes, int8_avx2_matches_reference, int8_matches_reference, matches_reference, q2_matches_reference, runs)"
        ) && partial.stderr.contains("nothing was written"),
        "{}",
        partial.stderr
    );
    assert_eq!(std::fs::read_to_string(&evidence).unwrap(), other);

    // A run that measured another cell of cpu and not albert's.
    let db = scratch.join("db.sqlite");
    let records = scratch.join("records-now");
    std::fs::create_dir_all(&records).unwrap();
    let bert = albert_pass("run-now", "runs", "cccc3333cccc3333").replace("albert", "bert");
    std::fs::write(records.join("vm.jsonl"), bert + "\n").unwrap();
    let imported = run_gen(&[
        "results",
        "--db",
        db.to_str().unwrap(),
        "load",
        records.join("vm.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let report = || {
        let out = scratch.join("report");
        let _ = std::fs::remove_dir_all(&out);
        let run = on_specs(
            &ws,
            &[
                "report",
                "--db",
                db.to_str().unwrap(),
                "--run",
                "run-now",
                "--format",
                "json",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        json["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["model"] == "albert" && c["platform"] == "cpu" && c["engine"] == "onnxruntime"
            })
            .cloned()
            .unwrap()
    };
    let cell = report();
    assert_eq!(
        (&cell["status"], &cell["source"], &cell["evidence"]["run"]),
        (&"passed".into(), &"earlier run".into(), &"run-c".into()),
        "{cell:#}"
    );
    // Without the store's pass, the report has nothing to show for it.
    let without: String = other
        .split("\npassed:\n")
        .next()
        .map(|entries| format!("{entries}\n"))
        .unwrap();
    std::fs::write(&evidence, without).unwrap();
    let cell = report();
    assert_eq!(cell["status"], "no-evidence", "{cell:#}");
}
