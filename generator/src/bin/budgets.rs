//! The speed and size budgets of hwmatrix at full scale, measured on this machine and
//! printed as a table (docs/measurements.md explains each row). Run from the workspace root:
//!
//!     cargo run --release -p generator --bin budgets            # the quick rows
//!     cargo run --release -p generator --bin budgets -- --slow  # also a fixture export from an empty cache
//!
//! Each row runs the real command the budget is about, with the caches of
//! `tests/run.sh` (HWMATRIX_CACHE, the checkout's target folder), and says
//! what ran: the command, and the conditions that matter (cores, jobs).
//! Nothing is simulated: a failing command is reported as failed, with its
//! exit status, and the row does not count as within budget.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Row {
    budget: &'static str,
    limit: Amount,
    measured: Result<Amount, String>,
    command: String,
}

/// What a budget limits: the wall time of a command, or the size of what it leaves on disk.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Amount {
    Time(Duration),
    Bytes(u64),
}

impl std::fmt::Display for Amount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Amount::Time(d) => write!(f, "{:.1} s", d.as_secs_f64()),
            Amount::Bytes(b) => write!(f, "{:.1} MB", *b as f64 / 1e6),
        }
    }
}

const HELP: &str = "budgets: measures hwmatrix's speed and size budgets at full scale on this machine and prints a table

Usage: cargo run --release -p generator --bin budgets [-- --slow]

Each row runs the real command its budget is about (gen --all, the generated crate's build cold and
after one spec changes, cached fixtures, the cpu cells...) with tests/run.sh's caches, then the
fixture store's sizes (its largest folder, its whole), and says whether each is within its limit. It takes minutes: it rebuilds the generated crate.

Options:
  --slow      also export every fixture into an empty folder (the cold-export budget)
  -h, --help  print this help and exit (nothing is measured)";

fn main() {
    let Some(slow) = slow_from_args() else {
        return;
    };
    let root = workspace_root();
    std::env::set_current_dir(&root).expect("workspace root");
    let gen_bin = built_gen(&root);
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    eprintln!(
        "budgets: {cores} cores, target folder {}, gen {}",
        target.display(),
        gen_bin.display()
    );

    let mut rows = gen_rows(&root, &gen_bin);
    rows.extend(generated_build_rows(&root));
    rows.extend(fixture_export_rows(&gen_bin, slow));
    rows.push(row(
        "every cpu cell test",
        3 * 60,
        "cargo test --locked -q -p generated --features cpu -- ::cpu::",
    ));
    rows.extend(fixture_size_rows());

    let over = print_table(&rows, cores);
    std::process::exit(if over == 0 { 0 } else { 1 });
}

/// Whether `--slow` was given; None once `--help` is printed. Any other argument is an
/// error (exit status 2).
fn slow_from_args() -> Option<bool> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{HELP}");
        return None;
    }
    if let Some(unknown) = args.iter().find(|a| *a != "--slow") {
        eprintln!("error: unknown argument `{unknown}`\n\n{HELP}");
        std::process::exit(2);
    }
    Some(args.iter().any(|a| a == "--slow"))
}

/// `gen --all` timed twice: the second run is a no-op re-run, and fails its row where it
/// changed generated/.
fn gen_rows(root: &Path, gen_bin: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let gen_all = format!("{} --all", gen_bin.display());
    rows.push(row("`gen --all`, every cell (release build)", 1, &gen_all));
    // Run twice: the second is a no-op re-run, and must write nothing.
    let before = tree_state(&root.join("generated"));
    rows.push(row("`gen --all` again: a no-op re-run", 1, &gen_all));
    let after = tree_state(&root.join("generated"));
    if before != after {
        rows.last_mut().unwrap().measured = Err("the no-op re-run changed generated/".into());
    }
    rows
}

/// The generated crate's build timed cold (dependencies built), then after one spec changes.
fn generated_build_rows(root: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let build = "cargo build --locked -q -p generated --tests --features cpu";
    let _ = run(build); // dependencies
    let _ = run("cargo clean -q -p generated");
    rows.push(row(
        "`cargo build -p generated --tests`, cold (dependencies built)",
        60,
        build,
    ));
    let one = root.join("generated/src/text_encoders/bert/cells.rs");
    touch(&one);
    rows.push(row(
        "the same after one spec changes (one generated file)",
        10,
        build,
    ));
    rows
}

/// `gen fixtures` timed from a warm cache, and with `--slow` first from an empty one.
fn fixture_export_rows(gen_bin: &Path, slow: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    if slow {
        let empty =
            std::env::temp_dir().join(format!("hwmatrix-budgets-fixtures-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&empty);
        rows.push(row(
            "fixture export from an empty cache",
            10 * 60,
            &format!(
                "{} fixtures --fixtures {}",
                gen_bin.display(),
                empty.display()
            ),
        ));
        let _ = std::fs::remove_dir_all(&empty);
    }
    let _ = run(&format!("{} fixtures", gen_bin.display())); // warm the default cache first
    rows.push(row(
        "fixtures, cached",
        5,
        &format!("{} fixtures", gen_bin.display()),
    ));
    rows
}

/// The fixture store's sizes against their limits: its largest folder, and its whole.
fn fixture_size_rows() -> [Row; 2] {
    // The sizes the fixtures are held to: small enough for every platform, the web ones most,
    // and for CI's artifact. One folder is one model, every variant included. The first limits,
    // 16 MB and 1.5 GB (decimal units, the stricter reading), held a folder of three graphs
    // (float32, int8, fp16) and a TorchScript trace; the web formats add three more (q4,
    // q4f16, qdq8: measured 2026-11-26, the store went from 1.42 GB to 2.24 GB and its largest
    // folder, gemma3n's, from 15.2 MB to 22.4 MB), so the limits grow by the same half: 24 MB
    // and 2.5 GB. A web platform loads one graph of a folder at a time.
    let store = hwmatrix_cell::paths::fixtures_dir();
    let folders = fixture_folders(&store);
    let command = format!("du -sb {}/*", store.display());
    let largest = folders.iter().max_by_key(|(_, bytes)| *bytes);
    [
        Row {
            budget: "the largest fixture folder",
            limit: Amount::Bytes(24_000_000),
            measured: largest
                .map(|(_, bytes)| Amount::Bytes(*bytes))
                .ok_or_else(|| format!("no fixture in {}", store.display())),
            command: match largest {
                Some((name, _)) => format!("{command} ({name})"),
                None => command.clone(),
            },
        },
        Row {
            budget: "the whole fixture store",
            limit: Amount::Bytes(2_500_000_000),
            measured: Ok(Amount::Bytes(folders.iter().map(|(_, bytes)| bytes).sum())),
            command: format!("{command} ({} fixtures)", folders.len()),
        },
    ]
}

/// Prints the rows as a Markdown table and a closing tally; returns how many are over
/// budget (or failed).
fn print_table(rows: &[Row], cores: usize) -> usize {
    println!("\n| budget | limit | measured | within | command |\n|---|---:|---:|:---:|---|");
    let mut over = 0;
    for r in rows {
        let (measured, within) = match &r.measured {
            Ok(m) if *m <= r.limit => (m.to_string(), "yes"),
            Ok(m) => (m.to_string(), "**no**"),
            Err(e) => (format!("failed: {e}"), "**no**"),
        };
        if within != "yes" {
            over += 1;
        }
        let limit = match r.limit {
            Amount::Time(d) => format!("{} s", d.as_secs()),
            Amount::Bytes(b) => format!("{} MB", b / 1_000_000),
        };
        println!(
            "| {} | {limit} | {measured} | {within} | `{}` |",
            r.budget, r.command
        );
    }
    println!(
        "\n{} of {} budgets met ({cores} cores; cargo and the Python workers use all of them)",
        rows.len() - over,
        rows.len()
    );
    over
}

fn row(budget: &'static str, limit_s: u64, command: &str) -> Row {
    eprintln!("budgets: {budget}: {command}");
    Row {
        budget,
        limit: Amount::Time(Duration::from_secs(limit_s)),
        measured: run(command).map(Amount::Time),
        command: command.to_string(),
    }
}

/// Runs a shell command, its output discarded; the wall time, or why it failed.
fn run(command: &str) -> Result<Duration, String> {
    let started = Instant::now();
    let status = Command::new("bash")
        .arg("-c")
        .arg(command)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Ok(started.elapsed()),
        Ok(s) => Err(format!("exit status {}", s.code().unwrap_or(-1))),
        Err(e) => Err(e.to_string()),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("generator/ is in the workspace")
        .to_path_buf()
}

/// The release gen next to this binary (cargo run --release builds both).
fn built_gen(root: &Path) -> PathBuf {
    let here = std::env::current_exe().expect("current exe");
    let gen_bin = here.with_file_name("gen");
    // Always built (a no-op when current): `cargo run --bin budgets` builds only this binary, and a
    // stale gen beside it would render generated/ from old templates and time the wrong crate.
    let status = Command::new("cargo")
        .args([
            "build",
            "--release",
            "--locked",
            "-q",
            "-p",
            "generator",
            "--bin",
            "gen",
        ])
        .current_dir(root)
        .status();
    assert!(matches!(status, Ok(s) if s.success()), "cannot build gen");
    gen_bin
}

/// Every file under a folder with its modification time and length: what a
/// no-op re-run must leave as it was.
fn tree_state(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.push((
                    path,
                    meta.modified().unwrap_or(std::time::UNIX_EPOCH),
                    meta.len(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// Each fixture folder of the store (one per model: a folder with its meta.json, so not the workers' `.logs` or a partial export)
/// with the bytes of every file under it.
fn fixture_folders(store: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    // Generation fixtures (`generation/<model_type>`) are fixtures of their own, each held to the same limit.
    let generation = hwmatrix_cell::paths::generation_fixtures(store);
    for (root, prefix) in [(store.to_path_buf(), ""), (generation, "generation/")] {
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // A fixture is a folder with its meta.json: not the workers' `.logs`, not a partial export.
            if entry.path().join("meta.json").is_file() {
                out.push((
                    format!("{prefix}{name}"),
                    tree_state(&entry.path())
                        .iter()
                        .map(|(_, _, len)| len)
                        .sum(),
                ));
            }
        }
    }
    out
}

/// Marks a file as changed (as an edited spec regenerates it) without changing it.
fn touch(path: &Path) {
    let text = std::fs::read(path).expect("the file to touch exists");
    std::fs::write(path, text).expect("rewrite");
}
