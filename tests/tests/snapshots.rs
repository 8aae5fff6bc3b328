//! Insta snapshots of everything gen renders for tests/specs/, a fixed set of
//! specs that reaches every template branch: each modality (text, vision,
//! audio, video, multimodal), each cell status (run; unsupported by override
//! and by architectures.yaml; known issue by override and by export; not tested, where our harness stopped), a model
//! checked as its components, each
//! platform, a tolerance override, and an engine list whose first engine the
//! runtime lacks. Review changes with `cargo insta review`.

use hwmatrix_tests::{Scratch, empty_crate, run_gen, tree, workspace};

fn render_test_specs() -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let scratch = Scratch::new("snapshots");
    let out = empty_crate(scratch.path());
    let specs = workspace().join("tests/specs");
    let run = run_gen(&[
        "--all",
        "--specs",
        specs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "gen failed: {}", run.stderr);
    tree(&out.join("src"))
}

/// One snapshot per model folder (its mod.rs, cells.rs and 8 test modules), one for the index files.
#[test]
fn rendered_cells() {
    let files = render_test_specs();
    let mut groups: std::collections::BTreeMap<String, String> = Default::default();
    for (path, bytes) in files {
        let parts: Vec<String> = path
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let group = if parts.len() == 3 {
            format!("model_{}", parts[1])
        } else {
            "index".to_string()
        };
        let text = String::from_utf8(bytes).expect("utf-8");
        groups
            .entry(group)
            .or_default()
            .push_str(&format!("==> {} <==\n{text}\n", path.display()));
    }
    assert_eq!(
        groups.len(),
        9,
        "8 models and the index: {:?}",
        groups.keys().collect::<Vec<_>>()
    );
    for (group, text) in groups {
        insta::assert_snapshot!(group, text);
    }
}

#[test]
fn list_output() {
    let specs = workspace().join("tests/specs");
    let run = run_gen(&["list", "--specs", specs.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("list", run.stdout);
}

/// `--model` and `--platform` narrow which files are written (the selected
/// cell's test module, its model's mod.rs and cells.rs, and the index
/// files), never what they hold: each is the file `--all` renders.
#[test]
fn selection_writes_only_the_selected_cells_files() {
    let scratch = Scratch::new("selection");
    let out = empty_crate(scratch.path());
    let specs = workspace().join("tests/specs");
    let run = run_gen(&[
        "--model",
        "textish",
        "--platform",
        "cuda",
        "--specs",
        specs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let selected = tree(&out.join("src"));
    let paths: Vec<String> = selected
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "audio/mod.rs",
            "lib.rs",
            "platforms.rs",
            "speech_text/mod.rs",
            "text_decoders/mod.rs",
            "text_encoders/mod.rs",
            "text_encoders/textish/cells.rs",
            "text_encoders/textish/cuda.rs",
            "text_encoders/textish/mod.rs",
            "video/mod.rs",
            "vision/mod.rs",
            "vision_language/mod.rs",
        ]
    );
    let all: std::collections::BTreeMap<_, _> = render_test_specs().into_iter().collect();
    for (path, bytes) in &selected {
        assert!(
            all.get(path) == Some(bytes),
            "{} differs from what --all renders",
            path.display()
        );
    }
}
