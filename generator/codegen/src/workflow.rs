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
//!
//! Beside it, `.github/actionlint.yaml` declares the self-hosted runner labels
//! hardware.yaml names, so actionlint (run by tests/run.sh) checks the
//! workflow as GitHub would, labels included.

use std::fmt::Write;
use std::path::Path;

use hwmatrix_platforms as platforms;

use hwmatrix_specs::spec::{EngineSpec, PlatformSpec, Specs};

/// Where the workflow lives in the checkout.
pub const WORKFLOW: &str = ".github/workflows/hwmatrix.yml";

/// actionlint's config: the self-hosted runner labels the workflow uses.
pub const ACTIONLINT_CONFIG: &str = ".github/actionlint.yaml";

/// Partitions per platform: two runners' worth of cells each.
const PARTITIONS: usize = 2;

/// The actions every job uses, each at the first major version that runs on node24: GitHub
/// removes the node20 runtime on 2026-09-23, and actionlint rejects the v4s that need it
/// (upload-artifact's v5 and download-artifact's v5 and v6 still declare node20).
const CHECKOUT: &str = "actions/checkout@v5";
const CACHE: &str = "actions/cache@v5";
const UPLOAD_ARTIFACT: &str = "actions/upload-artifact@v6";
const DOWNLOAD_ARTIFACT: &str = "actions/download-artifact@v7";

/// What a platform's job sets for its cells besides the venv, on a hosted runner (no GPU):
/// what each of its ONNX Runtime providers asks for (`NAME=value `).
fn platform_env(spec: &PlatformSpec) -> String {
    spec.engines
        .iter()
        .filter_map(|engine| match engine {
            EngineSpec::Onnxruntime { provider, .. } => Some(*provider),
            _ => None,
        })
        .flat_map(|provider| platforms::provider(provider).hosted_runner_env())
        .map(|(name, value)| format!("{name}={value} "))
        .collect()
}

pub fn render(specs: &Specs) -> String {
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# Written by `gen ci` from model-specs/hardware.yaml: do not edit; CI runs `gen ci --check`."
    );
    let _ = writeln!(y, "name: hwmatrix");
    let _ = writeln!(y, "on:\n  push:\n  pull_request:\n  workflow_dispatch:");
    let _ = writeln!(
        y,
        "env:\n  CARGO_TERM_COLOR: never\n  HWMATRIX_RUN_ID: gh-${{{{ github.run_id }}}}-${{{{ github.run_attempt }}}}"
    );
    let _ = writeln!(y, "jobs:");
    // Fixtures, once.
    let _ = writeln!(y, "  fixtures:\n    runs-on: ubuntu-latest\n    steps:");
    let _ = writeln!(y, "      - uses: {CHECKOUT}");
    let _ = writeln!(
        y,
        "      - uses: {CACHE}\n        with:\n          path: ~/.cache/hwmatrix/fixtures\n          key: fixtures-${{{{ hashFiles('model-specs/**', 'generator/importer/exporter/**') }}}}"
    );
    let _ = writeln!(y, "      - run: bash tests/setup.sh exporter");
    let _ = writeln!(
        y,
        "      - run: cargo run --locked --release -p generator --bin gen -- fixtures"
    );
    let _ = writeln!(
        y,
        "      - run: tar -C ~/.cache/hwmatrix -czf fixtures.tar.gz fixtures"
    );
    let _ = writeln!(
        y,
        "      - uses: {UPLOAD_ARTIFACT}\n        with:\n          name: fixtures\n          path: fixtures.tar.gz\n          retention-days: 7"
    );
    // One job per platform, partitioned.
    let mut needs = Vec::new();
    for (platform, spec) in &specs.hardware.platforms {
        let name = platform.name();
        let mut features = vec![spec.feature.clone()];
        if spec
            .engines
            .iter()
            .any(|e| matches!(e, EngineSpec::Libtorch { .. }))
        {
            features.push("torch".into());
        }
        let job = format!("cells-{name}");
        needs.push(job.clone());
        let _ = writeln!(
            y,
            "  {job}:\n    needs: fixtures\n    runs-on: {}",
            spec.runner
        );
        let _ = writeln!(
            y,
            "    strategy:\n      fail-fast: false\n      matrix:\n        partition: [{}]",
            (1..=PARTITIONS)
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(y, "    steps:\n      - uses: {CHECKOUT}");
        let _ = writeln!(
            y,
            "      - uses: {DOWNLOAD_ARTIFACT}\n        with:\n          name: fixtures"
        );
        let _ = writeln!(
            y,
            "      - run: mkdir -p ~/.cache/hwmatrix && tar -C ~/.cache/hwmatrix -xzf fixtures.tar.gz"
        );
        let _ = writeln!(
            y,
            "      - run: bash tests/setup.sh {}",
            spec.ci_setup
                .iter()
                .map(|part| part.name())
                .collect::<Vec<_>>()
                .join(" ")
        );
        // The host name carries the runner's own name, which only a step's `env` may read (the
        // `runner` context is not available to a job's `env`: GitHub rejects the workflow).
        let _ = writeln!(
            y,
            "      - env:\n          HWMATRIX_HOST: {name}-${{{{ matrix.partition }}}}-of-{PARTITIONS}-${{{{ runner.name }}}}\n        run: PATH=\"$HOME/.cache/hwmatrix/tools/bin:$HOME/.cache/hwmatrix/venv/bin:$PATH\" LIBTORCH_USE_PYTORCH=1 VIRTUAL_ENV=$HOME/.cache/hwmatrix/venv {}\
cargo nextest run --locked -p generated --features {} --partition hash:${{{{ matrix.partition }}}}/{PARTITIONS} --no-fail-fast -E 'test(/::{name}::/)'",
            platform_env(spec),
            features.join(",")
        );
        let _ = writeln!(
            y,
            "      - if: always()\n        uses: {UPLOAD_ARTIFACT}\n        with:\n          name: records-{name}-${{{{ matrix.partition }}}}\n          path: results/*.jsonl\n          if-no-files-found: error"
        );
    }
    // The report of everything.
    let _ = writeln!(
        y,
        "  report:\n    if: always()\n    needs: [{}]\n    runs-on: ubuntu-latest\n    steps:",
        needs.join(", ")
    );
    let _ = writeln!(y, "      - uses: {CHECKOUT}");
    let _ = writeln!(
        y,
        "      - uses: {DOWNLOAD_ARTIFACT}\n        with:\n          pattern: records-*\n          path: records"
    );
    let _ = writeln!(
        y,
        "      - run: cargo run --locked --release -p generator --bin gen -- results load records"
    );
    let _ = writeln!(
        y,
        "      - run: cargo run --locked --release -p generator --bin gen -- report --run \"$HWMATRIX_RUN_ID\" --format markdown --format html --format json --out results/report"
    );
    let _ = writeln!(
        y,
        "      - run: cargo run --locked --release -p generator --bin gen -- results verify results/report/report.json"
    );
    let _ = writeln!(
        y,
        "      - uses: {UPLOAD_ARTIFACT}\n        with:\n          name: report\n          path: |\n            results/report\n            results/hwmatrix.sqlite"
    );
    y
}

/// `.github/actionlint.yaml`: the runner labels of hardware.yaml that are not GitHub-hosted
/// runners (`ubuntu-*`, `macos-*`, `windows-*`) are self-hosted runners' labels. Without it
/// actionlint rejects every `runs-on: self-hosted-...` as an unknown label.
pub fn render_actionlint(specs: &Specs) -> String {
    let hosted = |label: &str| {
        ["ubuntu-", "macos-", "windows-"]
            .iter()
            .any(|prefix| label.starts_with(prefix))
    };
    let mut labels: Vec<&str> = specs
        .hardware
        .platforms
        .values()
        .map(|spec| spec.runner.as_str())
        .filter(|l| !hosted(l))
        .collect();
    labels.sort_unstable();
    labels.dedup();
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# Written by `gen ci` from model-specs/hardware.yaml: do not edit; CI runs `gen ci --check` and actionlint."
    );
    let _ = writeln!(y, "self-hosted-runner:\n  labels:");
    for label in labels {
        let _ = writeln!(y, "    - {label}");
    }
    y
}

/// Writes the workflow and actionlint's config, or with `check` compares them; returns the exit code.
pub fn run(
    specs: &Specs,
    root: &Path,
    check: bool,
    out: &mut dyn std::io::Write,
) -> Result<i32, String> {
    let files = [
        (root.join(WORKFLOW), render(specs)),
        (root.join(ACTIONLINT_CONFIG), render_actionlint(specs)),
    ];
    let mut code = 0;
    for (path, text) in &files {
        let current = std::fs::read_to_string(path).ok();
        let up_to_date = current.as_deref() == Some(text.as_str());
        if check {
            if up_to_date {
                let _ = writeln!(out, "{}: up to date", path.display());
            } else {
                let _ = writeln!(
                    out,
                    "{}: {} hardware.yaml; run `gen ci`",
                    path.display(),
                    if current.is_some() {
                        "differs from what gen ci writes from"
                    } else {
                        "is missing; it is written from"
                    }
                );
                code = 1;
            }
        } else if up_to_date {
            let _ = writeln!(out, "{}: already up to date", path.display());
        } else {
            hwmatrix_specs::files::write_atomically(path, text.as_bytes())?;
            let _ = writeln!(out, "{}: written", path.display());
        }
    }
    if !check {
        let _ = writeln!(
            out,
            "{} platform jobs, {PARTITIONS} partitions each",
            specs.hardware.platforms.len()
        );
    }
    Ok(code)
}
