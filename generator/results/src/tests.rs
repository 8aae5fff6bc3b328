use std::path::{Path, PathBuf};

use super::*;

fn record(host: &str, run: &str, time: &str, model: &str, check: &str, status: &str) -> String {
    serde_json::json!({
        "run_id": run, "time": time, "host": host, "model": model, "category": "text_encoders",
        "platform": "cpu", "engine_kind": "onnxruntime", "engine": "onnxruntime, CPUExecutionProvider",
        "check": check, "status": status, "basis": "measured", "precision": "float32", "runtime_version": "0.1.0",
        "timing": {"median_ms": 1.5, "min_ms": 1.4, "max_ms": 1.6, "runs": 5, "warmup_runs": 1, "profiling": false,
                   "threads": {"intra_op": 1, "inter_op": 1}, "other_checks_in_flight": 0, "test_threads": null},
        "fixture": {"dir": "<fixtures>/bert", "source": "tiny-random", "cache_key": "k1"}
    })
    .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hwmatrix-results-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, lines: &[String], newline_at_end: bool) {
    let mut text = lines.join("\n");
    if newline_at_end {
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn importing_the_same_file_twice_adds_nothing() {
    let dir = scratch("twice");
    let file = dir.join("a.jsonl");
    write(
        &file,
        &[
            record("a", "r1", "2026-01-01T00:00:00Z", "bert", "runs", "passed"),
            record(
                "a",
                "r1",
                "2026-01-01T00:00:01Z",
                "bert",
                "matches_reference",
                "passed",
            ),
        ],
        true,
    );
    let mut db = Database::open(&dir.join("db.sqlite")).unwrap();
    let first = db.import_file(&file).unwrap();
    assert_eq!((first.lines, first.added, first.duplicates), (2, 2, 0));
    let again = db.import_file(&file).unwrap();
    assert_eq!((again.added, again.duplicates), (0, 2));
    assert_eq!(db.record_count().unwrap(), 2);
}

#[test]
fn records_of_two_hosts_merge_without_loss_or_duplicates() {
    let dir = scratch("merge");
    let a = record(
        "host-a",
        "r1",
        "2026-01-01T00:00:00Z",
        "bert",
        "runs",
        "passed",
    );
    let b = record(
        "host-b",
        "r2",
        "2026-01-01T00:00:00Z",
        "bert",
        "runs",
        "failed",
    );
    write(&dir.join("a.jsonl"), std::slice::from_ref(&a), true);
    // A file that already merged both (e.g. concatenated by hand) repeats host-a's record.
    write(&dir.join("b.jsonl"), &[b.clone(), a.clone()], true);
    let mut db = Database::open(&dir.join("db.sqlite")).unwrap();
    db.import_file(&dir.join("a.jsonl")).unwrap();
    let summary = db.import_file(&dir.join("b.jsonl")).unwrap();
    assert_eq!((summary.added, summary.duplicates), (1, 1));
    let runs = db.runs().unwrap();
    assert_eq!(
        runs.iter()
            .map(|r| (r.run_id.as_str(), r.hosts.join(",")))
            .collect::<Vec<_>>(),
        [("r1", "host-a".into()), ("r2", "host-b".into())]
    );
}

#[test]
fn a_torn_or_corrupt_line_is_reported_with_its_line_and_the_rest_imports() {
    let dir = scratch("torn");
    let file = dir.join("torn.jsonl");
    let good = record("a", "r1", "2026-01-01T00:00:00Z", "bert", "runs", "passed");
    let torn = record(
        "a",
        "r1",
        "2026-01-01T00:00:02Z",
        "bert",
        "dynamic_shapes",
        "passed",
    );
    let torn = &torn[..torn.len() / 2];
    // A status no gen knows: read by the record's own types, it is rejected, never taken for `ignored`.
    let unknown = record(
        "a",
        "r1",
        "2026-01-01T00:00:01Z",
        "bert",
        "runs",
        "sort-of-passed",
    );
    write(
        &file,
        &[
            good,
            "{\"not\": \"a record\"}".into(),
            unknown,
            "garbage".into(),
            torn.to_string(),
        ],
        false,
    );
    let mut db = Database::open(&dir.join("db.sqlite")).unwrap();
    let summary = db.import_file(&file).unwrap();
    assert_eq!(summary.added, 1);
    let lines: Vec<usize> = summary.rejected.iter().map(|r| r.line).collect();
    assert_eq!(lines, [2, 3, 4, 5]);
    assert!(
        summary.rejected[0].why.contains("missing field `run_id`"),
        "{:?}",
        summary.rejected[0]
    );
    assert!(
        summary.rejected[1]
            .why
            .contains("unknown variant `sort-of-passed`"),
        "{:?}",
        summary.rejected[1]
    );
    assert!(
        summary.rejected[2].why.starts_with("not JSON"),
        "{:?}",
        summary.rejected[2]
    );
    assert!(
        summary.rejected[3].why.starts_with("torn last line"),
        "{:?}",
        summary.rejected[3]
    );
}

#[test]
fn the_latest_record_of_each_check_wins_and_runs_narrow_it() {
    let dir = scratch("latest");
    let file = dir.join("a.jsonl");
    write(
        &file,
        &[
            record("a", "old", "2026-01-01T00:00:00Z", "bert", "runs", "failed"),
            record("a", "new", "2026-01-02T00:00:00Z", "bert", "runs", "passed"),
            record("a", "old", "2026-01-01T00:00:00Z", "t5", "runs", "passed"),
        ],
        true,
    );
    let mut db = Database::open(&dir.join("db.sqlite")).unwrap();
    db.import_file(&file).unwrap();
    let latest = db.latest(&[]).unwrap();
    let statuses: Vec<(&str, &str)> = latest
        .iter()
        .map(|e| (e.model.as_str(), e.status.name()))
        .collect();
    assert_eq!(statuses, [("bert", "passed"), ("t5", "passed")]);
    assert!(db.has_record(&latest[0].record).unwrap());
    assert!(!db.has_record("0000000000000000").unwrap());
    let old: Vec<String> = db
        .latest(&["old".into()])
        .unwrap()
        .iter()
        .map(|e| e.status.name().to_string())
        .collect();
    assert_eq!(old, ["failed", "passed"]);
}

#[test]
fn records_from_before_engine_kind_get_it_from_their_engine() {
    let dir = scratch("legacy");
    let file = dir.join("old.jsonl");
    let legacy = |engine: &str| {
        let mut r: serde_json::Value = serde_json::from_str(&record(
            "a",
            "r0",
            "2025-01-01T00:00:00Z",
            "bert",
            "runs",
            "passed",
        ))
        .unwrap();
        r.as_object_mut().unwrap().remove("engine_kind");
        r["engine"] = engine.into();
        r.to_string()
    };
    write(
        &file,
        &[
            legacy("onnxruntime, CPUExecutionProvider"),
            legacy("onnxruntime-web in headless Chromium, webnn"),
            legacy("wgpu"),
        ],
        true,
    );
    let mut db = Database::open(&dir.join("db.sqlite")).unwrap();
    let summary = db.import_file(&file).unwrap();
    assert_eq!(summary.added, 2);
    assert_eq!(summary.rejected.len(), 1);
    assert!(
        summary.rejected[0].why.contains("before it had an engine"),
        "{:?}",
        summary.rejected
    );
    let kinds: Vec<String> = db
        .latest(&[])
        .unwrap()
        .into_iter()
        .map(|e| e.engine_kind)
        .collect();
    assert_eq!(kinds, ["browser", "onnxruntime"]);
}

#[test]
fn a_check_of_a_model_checked_as_components_fails_when_one_component_fails() {
    let dir = scratch("components");
    let file = dir.join("a.jsonl");
    let part = |time: &str, component: &str, status: &str| {
        let mut value: serde_json::Value =
            serde_json::from_str(&record("a", "r1", time, "qwen2_vl", "runs", status)).unwrap();
        value["component"] = component.into();
        value.to_string()
    };
    write(
        &file,
        &[
            // Before the split: the whole model's ledger record, older than the components'.
            record(
                "a",
                "r0",
                "2026-01-01T00:00:00Z",
                "qwen2_vl",
                "runs",
                "known-issue",
            ),
            part("2026-01-02T00:00:00Z", "embed", "passed"),
            part("2026-01-02T00:00:01Z", "language", "failed"),
            part("2026-01-02T00:00:02Z", "vision", "passed"),
            record("a", "r1", "2026-01-02T00:00:00Z", "bert", "runs", "passed"),
        ],
        true,
    );
    let mut db = Database::open(&dir.join("db.sqlite")).unwrap();
    db.import_file(&file).unwrap();
    let latest = db.latest(&[]).unwrap();
    let statuses: Vec<(&str, &str)> = latest
        .iter()
        .map(|e| (e.model.as_str(), e.status.name()))
        .collect();
    assert_eq!(statuses, [("bert", "passed"), ("qwen2_vl", "failed")]);
    let cell = &latest[1];
    assert_eq!(
        cell.body.component.as_deref(),
        Some("language"),
        "the failed component's record is cited"
    );
    assert_eq!(cell.components.len(), 3);
    assert_eq!(
        cell.median_ms,
        Some(4.5),
        "a pipeline's latency is the sum of its components'"
    );

    // Every component passed: the cell's check passed.
    let file = dir.join("b.jsonl");
    write(
        &file,
        &[part("2026-01-03T00:00:00Z", "language", "passed")],
        true,
    );
    db.import_file(&file).unwrap();
    let latest = db.latest(&[]).unwrap();
    assert_eq!(latest[1].status, hwmatrix_record::Outcome::Passed);
}
