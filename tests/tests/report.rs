//! From real records to the report: bert's real cpu cell runs as two hosts,
//! their records merge in the results database (twice imported, one torn
//! line), `gen report` names the records behind each mark, `gen results
//! verify` finds them, `--compare` catches a known slowdown and speed-up, and
//! (with the `web` feature) the HTML renders in a real headless Chromium whose
//! DOM counts match the JSON. Needs the bert fixture (`gen fixtures`).
//!
//! One test function: the cases set HWMATRIX_RESULTS and HWMATRIX_HOST, and
//! the environment is the process's.

use std::path::{Path, PathBuf};

use hwmatrix_tests::{Scratch, run_gen};
use runtime::{Cell, Tolerance};
use serde_json::Value;

static BERT: &Cell = &generated::text_encoders::bert::cells::CPU_ONNX;

fn set(name: &str, value: &str) {
    // SAFETY: this test binary has one test, so no other thread reads the environment.
    unsafe { std::env::set_var(name, value) }
}

fn gen_ok(args: &[&str]) -> String {
    let run = run_gen(args);
    assert_eq!(
        run.code, 0,
        "gen {args:?} failed:\n{}\n{}",
        run.stdout, run.stderr
    );
    format!("{}{}", run.stdout, run.stderr)
}

/// The cell of `report` for model, platform and engine.
fn cell<'a>(report: &'a Value, model: &str, platform: &str, engine: &str) -> &'a Value {
    report["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["model"] == model && c["platform"] == platform && c["engine"] == engine)
        .unwrap_or_else(|| panic!("no cell {model} {platform} {engine} in the report"))
}

/// Copies `from`'s records into `to` as another run, each latency times `factor(check)`.
fn retimed(from: &Path, to: &Path, run: &str, factor: impl Fn(&str) -> f64) {
    let text = std::fs::read_to_string(from).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            record["run_id"] = Value::String(run.into());
            let f = factor(record["check"].as_str().unwrap());
            if let Some(ms) = record["timing"]["median_ms"].as_f64() {
                record["timing"]["median_ms"] = (ms * f).into();
            }
            record.to_string()
        })
        .collect();
    std::fs::write(to, lines.join("\n") + "\n").unwrap();
}

/// The scratch folders the cases share.
struct Folders<'a> {
    scratch: &'a Path,
    /// HWMATRIX_RESULTS: each host's records.
    results: PathBuf,
    /// The results database.
    db: String,
    /// Where `gen report` writes.
    out: PathBuf,
}

impl Folders<'_> {
    fn results(&self) -> &str {
        self.results.to_str().unwrap()
    }

    fn db(&self) -> &str {
        &self.db
    }

    fn out(&self) -> &str {
        self.out.to_str().unwrap()
    }
}

#[test]
fn real_records_of_two_hosts_make_one_report_whose_marks_name_them() {
    let scratch = Scratch::new("report");
    let folders = Folders {
        scratch: scratch.path(),
        results: scratch.path().join("results"),
        db: scratch.path().join("db.sqlite").to_str().unwrap().into(),
        out: scratch.path().join("report"),
    };
    set("HWMATRIX_RESULTS", folders.results());
    assert!(
        runtime::paths::fixtures_dir()
            .join("bert/meta.json")
            .is_file(),
        "no bert fixture: run `gen fixtures --model bert`"
    );

    two_hosts_run_bert_for_real();
    a_torn_line_is_reported_and_the_rest_imports_once(&folders);
    let (report, markdown) = the_report_names_the_records_behind_each_mark(&folders);
    int8_is_the_formats_deviation_not_the_cells_status(&report, &markdown);
    generation_is_its_own_column_not_the_cells_status(&report, &markdown);
    compare_catches_a_slowdown_and_a_speed_up(&folders);
    verify_finds_a_runs_records_and_not_a_forged_one(&folders);
    runs_alone_leave_the_cell_incomplete(&folders);

    #[cfg(feature = "web")]
    html_in_chromium(&folders.out, folders.db());
}

/// Two real runs of bert's cpu cell under two host names.
fn two_hosts_run_bert_for_real() {
    set("HWMATRIX_HOST", "host-a");
    runtime::checks::runs(BERT);
    runtime::checks::matches_reference(BERT);
    runtime::checks::dynamic_shapes(BERT);
    runtime::checks::precision(BERT, runtime::Precision::Int8);
    // llama generates on cpu (its generation fixture): the generation column, not the cell's status.
    runtime::checks::generates(&generated::text_decoders::llama::cells::CPU_ONNX);
    set("HWMATRIX_HOST", "host-b");
    runtime::checks::dynamic_shapes(BERT);
    let broken = Box::leak(Box::new(
        Cell::new(BERT.model, BERT.platform, BERT.engine, BERT.planned)
            .with_tolerance(Tolerance { abs: 0.0, rel: 0.0 }),
    ));
    assert!(
        std::panic::catch_unwind(|| runtime::checks::matches_reference(broken)).is_err(),
        "a zero tolerance passed"
    );
}

/// A writer killed mid-line: the torn line is reported, the rest imports.
fn a_torn_line_is_reported_and_the_rest_imports_once(folders: &Folders) {
    let (results_s, db_s) = (folders.results(), folders.db());
    let host_b = folders.results.join("host-b.jsonl");
    let mut text = std::fs::read_to_string(&host_b).unwrap();
    text.push_str(r#"{"run_id":"torn","time":"2026-"#);
    std::fs::write(&host_b, text).unwrap();
    let first = gen_ok(&["results", "--db", db_s, "load", results_s]);
    assert!(
        first.contains("7 records added, 0 already there, 1 lines rejected"),
        "{first}"
    );
    assert!(first.contains("host-b.jsonl:3: torn last line"), "{first}");
    let again = gen_ok(&["results", "--db", db_s, "load", results_s]);
    assert!(
        again.contains("0 records added, 7 already there"),
        "importing twice added records:\n{again}"
    );
    let runs = gen_ok(&["results", "--db", db_s, "runs"]);
    assert!(runs.contains("host-a,host-b"), "{runs}");
}

/// The report: bert's cpu cell failed (host-b's newest matches_reference), and names every record.
/// Returns the JSON report and the Markdown one.
fn the_report_names_the_records_behind_each_mark(folders: &Folders) -> (Value, String) {
    let out = &folders.out;
    gen_ok(&[
        "report",
        "--db",
        folders.db(),
        "--format",
        "json",
        "--format",
        "html",
        "--format",
        "markdown",
        "--out",
        folders.out(),
    ]);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let bert = cell(&report, "bert", "cpu", "onnxruntime");
    assert_eq!(bert["status"], "failed", "{bert}");
    assert_eq!(bert["error_kind"], "out-of-tolerance", "{bert}");
    let hosts: Vec<&str> = bert["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["host"].as_str().unwrap())
        .collect();
    assert_eq!(
        hosts,
        ["host-b", "host-b", "host-a"],
        "dynamic_shapes and matches_reference from host-b, runs from host-a: {bert}"
    );
    let cpu = report["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["platform"] == "cpu")
        .unwrap();
    assert_eq!(
        cpu["hosts"],
        serde_json::json!(["host-a", "host-b"]),
        "{cpu}"
    );
    // A cell these runs did not reach shows the store's word for it with the run that
    // measured it (t5's cpu passes), never as a pass of these runs.
    let t5 = cell(&report, "t5", "cpu", "onnxruntime");
    assert_eq!(
        (&t5["source"], t5["records"].as_array().map(Vec::len)),
        (&"earlier run".into(), Some(0)),
        "{t5}"
    );
    assert!(
        t5["evidence"]["run"]
            .as_str()
            .is_some_and(|run| run != "host-a" && run != "host-b"),
        "{t5}"
    );
    let passed_here = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "passed" && c["source"] == "this run")
        .count();
    assert_eq!(passed_here, 0, "only bert ran, and it failed");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        markdown.contains("## Matrix: model × platform")
            && markdown.contains("| bert | onnxruntime ✗"),
        "{}",
        &markdown[..2000.min(markdown.len())]
    );
    (report, markdown)
}

/// bert's int8 check: not part of the cell's status, reported as the format's deviation on
/// tiny random weights, with the agreement its record measured; no checkpoint, so no rating evidence.
fn int8_is_the_formats_deviation_not_the_cells_status(report: &Value, markdown: &str) {
    let rows = report["precision"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let int8 = &rows[0];
    assert_eq!(
        (
            &int8["platform"],
            &int8["engine"],
            &int8["precision"],
            &int8["weights"]
        ),
        (
            &Value::from("cpu"),
            &Value::from("onnxruntime"),
            &Value::from("int8"),
            &Value::from("tiny random")
        ),
        "{int8}"
    );
    assert_eq!(int8["counts"]["passed"], 1, "{int8}");
    let cosine = int8["median_worst_cosine"]
        .as_f64()
        .expect("the record's cosine");
    assert!(cosine > 0.98 && cosine <= 1.0 + 1e-9, "{int8}");
    assert_eq!(report["precision"]["checkpoints"], serde_json::json!([]));
    assert!(
        markdown.contains("## Precision")
            && markdown.contains("| cpu | onnxruntime | int8 | tiny random |"),
        "{markdown}"
    );
}

/// llama's generates check: its own column (passed on cpu), never the status of a cell with
/// no float32 evidence in these runs (that shows the store's word, from the run that measured it).
fn generation_is_its_own_column_not_the_cells_status(report: &Value, markdown: &str) {
    let llama = cell(report, "llama", "cpu", "onnxruntime");
    assert_eq!(
        (&llama["source"], llama["records"].as_array().map(Vec::len)),
        (&"earlier run".into(), Some(0)),
        "{llama}"
    );
    let generation = &report["generation"];
    assert_eq!(generation["engines"][0]["platform"], "cpu", "{generation}");
    assert_eq!(
        generation["engines"][0]["counts"]["passed"], 1,
        "{generation}"
    );
    assert_eq!(generation["models"][0]["model"], "llama", "{generation}");
    assert_eq!(
        generation["models"][0]["platforms"]["cpu"], "passed",
        "{generation}"
    );
    assert!(
        markdown.contains("## Generation with a KV cache")
            && markdown.contains("| llama | passed |"),
        "{markdown}"
    );
}

/// --compare: the same checks as another run, matches_reference 3× slower, and 3× faster.
fn compare_catches_a_slowdown_and_a_speed_up(folders: &Folders) {
    let (scratch, db_s) = (folders.scratch, folders.db());
    retimed(
        &folders.results.join("host-a.jsonl"),
        &scratch.join("slow.jsonl"),
        "slow-run",
        |check| {
            if check == "matches_reference" {
                3.0
            } else {
                1.0
            }
        },
    );
    retimed(
        &folders.results.join("host-a.jsonl"),
        &scratch.join("fast.jsonl"),
        "fast-run",
        |check| {
            if check == "matches_reference" {
                1.0 / 3.0
            } else {
                1.0
            }
        },
    );
    gen_ok(&[
        "results",
        "--db",
        db_s,
        "load",
        scratch.join("slow.jsonl").to_str().unwrap(),
        scratch.join("fast.jsonl").to_str().unwrap(),
    ]);
    let slower = run_gen(&["report", "--db", db_s, "--compare", "fast-run", "slow-run"]);
    assert_eq!(
        slower.code, 1,
        "a 9× slowdown did not fail the comparison:\n{}",
        slower.stdout
    );
    assert!(
        slower
            .stdout
            .contains("regression: bert on cpu (onnxruntime) matches_reference float32"),
        "{}",
        slower.stdout
    );
    let faster = run_gen(&["report", "--db", db_s, "--compare", "slow-run", "fast-run"]);
    assert_eq!(
        faster.code, 0,
        "a speed-up failed the comparison:\n{}",
        faster.stdout
    );
    assert!(
        faster.stdout.contains("0 regressions, 1 speed-ups")
            && faster
                .stdout
                .contains("speed-up: bert on cpu (onnxruntime) matches_reference"),
        "{}",
        faster.stdout
    );
}

/// Narrowed to fast-run (host-a's passed checks), the cell passes; verify finds each of its records, and not a forged one.
fn verify_finds_a_runs_records_and_not_a_forged_one(folders: &Folders) {
    let (out, db_s) = (&folders.out, folders.db());
    gen_ok(&[
        "report",
        "--db",
        db_s,
        "--format",
        "json",
        "--run",
        "fast-run",
        "--out",
        folders.out(),
    ]);
    let mut passed: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let verified = gen_ok(&[
        "results",
        "--db",
        db_s,
        "verify",
        out.join("report.json").to_str().unwrap(),
    ]);
    assert!(!verified.contains(" 0 records named"), "{verified}");
    let mut forged = false;
    for c in passed["cells"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter(|c| c["status"] == "passed" && c["source"] == "this run")
    {
        c["records"][0]["record"] = Value::String("0123456789abcdef".into());
        forged = true;
    }
    assert!(forged, "no passed cell to forge a record in");
    // A pass of an earlier run that names no run has nothing behind it either.
    let earlier = passed["cells"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["source"] == "earlier run")
        .expect("a cell this run did not reach, passed in an earlier one");
    earlier["evidence"] = Value::Null;
    std::fs::write(out.join("forged.json"), passed.to_string()).unwrap();
    let run = run_gen(&[
        "results",
        "--db",
        db_s,
        "verify",
        out.join("forged.json").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "a forged record passed verify: {}", run.stdout);
    assert!(
        run.stderr.contains("record 0123456789abcdef is not in")
            && run
                .stderr
                .contains("passed in an earlier run that it does not name"),
        "{}",
        run.stderr
    );
}

/// A run of `runs` alone compared nothing with a reference: the cell is incomplete, never passed.
fn runs_alone_leave_the_cell_incomplete(folders: &Folders) {
    let db_s = folders.db();
    let runs_only = folders.scratch.join("runs-only.jsonl");
    retimed(
        &folders.results.join("host-a.jsonl"),
        &runs_only,
        "runs-only",
        |_| 1.0,
    );
    let kept: Vec<String> = std::fs::read_to_string(&runs_only)
        .unwrap()
        .lines()
        .filter(|l| l.contains(r#""check":"runs""#))
        .map(str::to_string)
        .collect();
    std::fs::write(&runs_only, kept.join("\n") + "\n").unwrap();
    gen_ok(&["results", "--db", db_s, "load", runs_only.to_str().unwrap()]);
    gen_ok(&[
        "report",
        "--db",
        db_s,
        "--format",
        "json",
        "--run",
        "runs-only",
        "--out",
        folders.out(),
    ]);
    let partial: Value =
        serde_json::from_str(&std::fs::read_to_string(folders.out.join("report.json")).unwrap())
            .unwrap();
    let bert = cell(&partial, "bert", "cpu", "onnxruntime");
    assert_eq!(bert["status"], "incomplete", "{bert}");
    assert_eq!(bert["source"], "this run", "{bert}");
}

/// The HTML report in Debian's Chromium: the matrix is there, and its cells
/// by status are the JSON's counts.
#[cfg(feature = "web")]
fn html_in_chromium(out: &Path, db: &str) {
    gen_ok(&[
        "report",
        "--db",
        db,
        "--format",
        "json",
        "--format",
        "html",
        "--out",
        out.to_str().unwrap(),
    ]);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let expression = r#"(() => {
        const counts = {};
        for (const cell of document.querySelectorAll('#model-platform span.cell')) counts[cell.dataset.status] = (counts[cell.dataset.status] || 0) + 1;
        return { counts, cells: document.querySelectorAll('#model-platform span.cell').length,
                 heatmap: document.querySelectorAll('#heatmap rect').length, rows: document.querySelectorAll('#model-platform tr').length,
                 external: [...document.querySelectorAll('[src],link[href]')].length };
    })()"#;
    let (dom, png) = runtime::engine::browser::inspect_file(&out.join("report.html"), expression)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "no screenshot ({} bytes)",
        png.len()
    );
    std::fs::write(out.join("report.png"), &png).unwrap();
    assert_eq!(dom["cells"], json["summary"]["cells"], "{dom}");
    for (status, count) in json["summary"]["counts"].as_object().unwrap() {
        assert_eq!(
            dom["counts"][status].as_u64().unwrap_or(0),
            count.as_u64().unwrap(),
            "{status}: DOM {dom} vs JSON {}",
            json["summary"]
        );
    }
    assert!(dom["heatmap"].as_u64().unwrap() > 0, "no heatmap: {dom}");
    assert_eq!(dom["external"], 0, "the report loads a resource: {dom}");
}
