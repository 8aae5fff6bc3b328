//! `gen ci`: the GitHub Actions workflow that runs the matrix across many
//! machines, written from hardware.yaml (each platform's runner label and
//! cargo feature). Deterministic; `gen ci --check` fails when the checked-in
//! workflow differs.
//!
//! One job builds the fixtures once and hands them to the others as an
//! artifact (rather than every runner exporting 300+ models); each platform
//! runs its cells on its runner, split into cargo-nextest partitions
//! (`--partition hash:K/N`), each uploading its records under its own host
//! name; the last job imports every record into the results database and
//! builds the report.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::spec::{EngineSpec, Specs};

/// Where the workflow lives in the checkout.
pub const WORKFLOW: &str = ".github/workflows/hwmatrix.yml";

/// Partitions per platform: two runners' worth of cells each.
const PARTITIONS: usize = 2;

/// The set-up parts (tests/setup.sh) a platform's job needs.
fn setup_parts(platform: &str) -> &'static str {
    match platform {
        "openvino" => "exporter openvino tools",
        "webgpu" | "webnn" => "exporter web tools",
        _ => "exporter tools",
    }
}

pub fn render(specs: &Specs) -> String {
    let mut y = String::new();
    let _ = writeln!(y, "# Written by `gen ci` from model-specs/hardware.yaml: do not edit; CI runs `gen ci --check`.");
    let _ = writeln!(y, "name: hwmatrix");
    let _ = writeln!(y, "on:\n  push:\n  pull_request:\n  workflow_dispatch:");
    let _ = writeln!(y, "env:\n  CARGO_TERM_COLOR: never\n  HWMATRIX_RUN_ID: gh-${{{{ github.run_id }}}}-${{{{ github.run_attempt }}}}");
    let _ = writeln!(y, "jobs:");
    // Fixtures, once.
    let _ = writeln!(y, "  fixtures:\n    runs-on: ubuntu-latest\n    steps:");
    let _ = writeln!(y, "      - uses: actions/checkout@v4");
    let _ = writeln!(y, "      - uses: actions/cache@v4\n        with:\n          path: ~/.cache/hwmatrix/fixtures\n          key: fixtures-${{{{ hashFiles('model-specs/**', 'runtime/exporter/**') }}}}");
    let _ = writeln!(y, "      - run: bash tests/setup.sh exporter");
    let _ = writeln!(y, "      - run: cargo run --locked --release -p generator --bin gen -- fixtures");
    let _ = writeln!(y, "      - run: tar -C ~/.cache/hwmatrix -czf fixtures.tar.gz fixtures");
    let _ = writeln!(y, "      - uses: actions/upload-artifact@v4\n        with:\n          name: fixtures\n          path: fixtures.tar.gz\n          retention-days: 7");
    // One job per platform, partitioned.
    let mut needs = Vec::new();
    for (platform, spec) in &specs.hardware.platforms {
        let name = platform.name();
        let mut features = vec![spec.feature.clone()];
        if spec.engines.iter().any(|e| matches!(e, EngineSpec::Libtorch { .. })) {
            features.push("torch".into());
        }
        let job = format!("cells-{name}");
        needs.push(job.clone());
        let _ = writeln!(y, "  {job}:\n    needs: fixtures\n    runs-on: {}", spec.runner);
        let _ = writeln!(y, "    strategy:\n      fail-fast: false\n      matrix:\n        partition: [{}]", (1..=PARTITIONS).map(|k| k.to_string()).collect::<Vec<_>>().join(", "));
        let _ = writeln!(y, "    env:\n      HWMATRIX_HOST: {name}-${{{{ matrix.partition }}}}-of-{PARTITIONS}-${{{{ runner.name }}}}");
        let _ = writeln!(y, "    steps:\n      - uses: actions/checkout@v4");
        let _ = writeln!(y, "      - uses: actions/download-artifact@v4\n        with:\n          name: fixtures");
        let _ = writeln!(y, "      - run: mkdir -p ~/.cache/hwmatrix && tar -C ~/.cache/hwmatrix -xzf fixtures.tar.gz");
        let _ = writeln!(y, "      - run: bash tests/setup.sh {}", setup_parts(name));
        let _ = writeln!(
            y,
            "      - run: PATH=\"$HOME/.cache/hwmatrix/tools/bin:$HOME/.cache/hwmatrix/venv/bin:$PATH\" LIBTORCH_USE_PYTORCH=1 VIRTUAL_ENV=$HOME/.cache/hwmatrix/venv \
cargo nextest run --locked -p generated --features {} --partition hash:${{{{ matrix.partition }}}}/{PARTITIONS} --no-fail-fast -E 'test(/::{name}::/)'",
            features.join(",")
        );
        let _ = writeln!(
            y,
            "      - if: always()\n        uses: actions/upload-artifact@v4\n        with:\n          name: records-{name}-${{{{ matrix.partition }}}}\n          path: results/*.jsonl\n          if-no-files-found: error"
        );
    }
    // The report of everything.
    let _ = writeln!(y, "  report:\n    if: always()\n    needs: [{}]\n    runs-on: ubuntu-latest\n    steps:", needs.join(", "));
    let _ = writeln!(y, "      - uses: actions/checkout@v4");
    let _ = writeln!(y, "      - uses: actions/download-artifact@v4\n        with:\n          pattern: records-*\n          path: records");
    let _ = writeln!(y, "      - run: cargo run --locked --release -p generator --bin gen -- results import records");
    let _ = writeln!(
        y,
        "      - run: cargo run --locked --release -p generator --bin gen -- report --run \"$HWMATRIX_RUN_ID\" --format markdown --format html --format json --out results/report"
    );
    let _ = writeln!(y, "      - run: cargo run --locked --release -p generator --bin gen -- results verify results/report/report.json");
    let _ = writeln!(y, "      - uses: actions/upload-artifact@v4\n        with:\n          name: report\n          path: |\n            results/report\n            results/hwmatrix.sqlite");
    y
}

/// Writes the workflow, or with `check` compares it; returns the exit code.
pub fn run(specs: &Specs, root: &Path, check: bool, out: &mut dyn std::io::Write) -> Result<i32, String> {
    let path: PathBuf = root.join(WORKFLOW);
    let text = render(specs);
    let current = std::fs::read_to_string(&path).ok();
    if check {
        return Ok(if current.as_deref() == Some(text.as_str()) {
            let _ = writeln!(out, "{}: up to date", path.display());
            0
        } else {
            let _ = writeln!(out, "{}: {} hardware.yaml; run `gen ci`", path.display(), if current.is_some() { "differs from what gen ci writes from" } else { "is missing; it is written from" });
            1
        });
    }
    if current.as_deref() == Some(text.as_str()) {
        let _ = writeln!(out, "{}: already up to date", path.display());
        return Ok(0);
    }
    crate::write::write_atomically(&path, text.as_bytes())?;
    let _ = writeln!(out, "{}: written ({} platform jobs, {PARTITIONS} partitions each)", path.display(), specs.hardware.platforms.len());
    Ok(0)
}
