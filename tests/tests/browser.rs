//! The browser engine's checks can fail, and fail cleanly: bert's webgpu cell
//! in the real Chromium and in the real Firefox, once with its placement
//! evidence broken, once with the browser killed under it; clap's webnn cell,
//! whose graph WebNN refuses to build, and whose page then serves no other
//! model. Needs the web set-up of `tests/run.sh` (Firefox's root included)
//! and the bert, clap and vit fixtures; built only with this crate's `web`
//! feature.
//!
//! One test function: the cases point HWMATRIX_RESULTS and HWMATRIX_FIXTURES
//! at scratch folders, and the environment is the process's.
#![cfg(feature = "web")]

use std::path::Path;
use std::time::{Duration, Instant};

use hwmatrix_tests::{Scratch, copy_tree};
use runtime::Cell;
use serde_json::Value;

/// A browser's name, bert's webgpu cell in it, and how to find its pid.
type Browser = (&'static str, &'static Cell, fn() -> Vec<u32>);

static BROWSERS: [Browser; 2] = [
    (
        "Chromium",
        &generated::text_encoders::bert::cells::WEBGPU_BROWSER,
        runtime::engine::browser::chromium_pids,
    ),
    (
        "Firefox",
        &generated::text_encoders::bert::cells::WEBGPU_FIREFOX,
        || {
            runtime::engine::browser::firefox_pid()
                .into_iter()
                .collect()
        },
    ),
];

/// Runs a check that must fail; returns its panic message, the record it wrote and how long it took.
fn failing(check: fn(&Cell), cell: &Cell, results: &Path) -> (String, Value, Duration) {
    let _ = std::fs::remove_dir_all(results);
    let started = Instant::now();
    let panic = std::panic::catch_unwind(|| check(cell)).expect_err("the broken check passed");
    let took = started.elapsed();
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    let text = std::fs::read_to_string(results.join(format!("{}.jsonl", runtime::record::host())))
        .expect("the failed check wrote a record");
    let record: Value =
        serde_json::from_str(text.lines().last().expect("one record")).expect("a JSON record");
    assert_eq!(record["status"], "failed", "{record}");
    (message, record, took)
}

fn set(name: &str, value: &Path) {
    // SAFETY: this test binary has one test, so no other thread reads the environment.
    unsafe { std::env::set_var(name, value) }
}

#[test]
fn a_fallback_a_killed_browser_and_a_refused_graph_fail_with_their_reason() {
    let scratch = Scratch::new("browser");
    let results = scratch.path().join("results");
    set("HWMATRIX_RESULTS", &results);
    // Where each page starts (read once, at the first page).
    let steps = scratch.path().join("steps.jsonl");
    set("HWMATRIX_WEB_STEPS", &steps);
    let real_fixtures = runtime::paths::fixtures_dir();
    assert!(
        real_fixtures.join("bert/meta.json").is_file(),
        "no bert fixture in {}: run `gen fixtures --model bert`",
        real_fixtures.display()
    );

    // Without the fixture's list of integer-only nodes, bert's shape arithmetic
    // on ORT's CPU provider is a fallback like any other, and fails the check.
    let fixtures = scratch.path().join("fixtures");
    copy_tree(&real_fixtures.join("bert"), &fixtures.join("bert"));
    let meta_path = fixtures.join("bert/meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta.as_object_mut().unwrap().remove("integer_nodes");
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    for (browser, cell, pids) in BROWSERS {
        set("HWMATRIX_FIXTURES", &fixtures);
        let (message, record, _) = failing(runtime::checks::runs, cell, &results);
        assert_eq!(
            record["error_kind"], "provider-fallback",
            "{browser}: {message}"
        );
        let provider = runtime::BrowserBackend::Webgpu.ort_provider();
        assert!(
            message.contains(&format!("not every node ran on {provider}"))
                && message.contains("Range"),
            "{browser}: {message}"
        );
        assert_eq!(record["providers"]["verified"], false);

        // The real fixture passes, in a page of the same browser.
        set("HWMATRIX_FIXTURES", &real_fixtures);
        runtime::checks::runs(cell);

        // The browser killed under the run: every later check fails at once, saying so.
        let pids = pids();
        assert_eq!(
            pids.len(),
            1,
            "one {browser} for the webgpu cells: {pids:?}"
        );
        let killed = std::process::Command::new("kill")
            .args(["-9", &pids[0].to_string()])
            .status()
            .expect("run kill");
        assert!(killed.success());
        std::thread::sleep(Duration::from_millis(500));
        for check in [
            runtime::checks::matches_reference,
            runtime::checks::dynamic_shapes,
        ] {
            let (message, record, took) = failing(check, cell, &results);
            assert_eq!(
                record["error_kind"], "engine-exited",
                "{browser}: {message}"
            );
            assert!(
                message.contains(&format!("{browser} ("))
                    && message.contains("was killed by signal 9"),
                "{message}"
            );
            assert!(
                took < Duration::from_secs(30),
                "{browser}: the check took {took:?} to fail"
            );
        }
    }

    // A graph WebNN refuses to build (clap's GatherElements over computed
    // indices): onnxruntime-web leaves the rejection unhandled, and its session
    // would never settle. The check fails at once with WebNN's own message, the
    // engine's, not after our time limit as if this machine were slow.
    set("HWMATRIX_FIXTURES", &real_fixtures);
    assert!(
        real_fixtures.join("clap/meta.json").is_file(),
        "no clap fixture in {}: run `gen fixtures --model clap`",
        real_fixtures.display()
    );
    let clap = &generated::audio::clap::cells::WEBNN_BROWSER;
    let (message, record, took) = failing(runtime::checks::runs, clap, &results);
    assert_eq!(record["error_kind"], "model-load", "{message}");
    assert_eq!(record["stage"], "load", "{record}");
    assert!(
        message.contains("creating the session never settled")
            && message.contains("MLGraphBuilder"),
        "{message}"
    );
    assert!(
        took < Duration::from_secs(30),
        "clap's webnn check took {took:?} to fail"
    );

    // Pages are shared by the models of an engine, but not one a model failed
    // in: bert opens a page of its own, and vit opens its model in bert's.
    let webnn_pages = || -> Vec<String> {
        let text = std::fs::read_to_string(&steps).unwrap_or_default();
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("a JSON step"))
            .filter(|step| step["step"] == "page")
            .map(|step| step["page"].as_str().unwrap_or_default().to_string())
            .filter(|page| page.split_whitespace().nth(1) == Some("webnn"))
            .collect()
    };
    assert!(
        real_fixtures.join("vit/meta.json").is_file(),
        "no vit fixture in {}: run `gen fixtures --model vit`",
        real_fixtures.display()
    );
    assert_eq!(webnn_pages().len(), 1, "{:?}", webnn_pages());
    runtime::checks::runs(&generated::text_encoders::bert::cells::WEBNN_BROWSER);
    let pages = webnn_pages();
    assert!(
        pages.len() == 2 && pages[1].contains("/fixtures/bert/"),
        "bert's webnn check did not start a page of its own after clap's failed: {pages:?}"
    );
    runtime::checks::runs(&generated::vision::vit::cells::WEBNN_BROWSER);
    assert_eq!(
        webnn_pages(),
        pages,
        "vit's webnn check started a page instead of opening its model in bert's"
    );
}
