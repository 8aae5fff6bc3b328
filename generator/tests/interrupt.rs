//! An interrupted `gen fixtures` leaves nothing behind that lies: SIGTERM or
//! SIGKILL to gen alone (what `timeout`, `kill` or a cancelled CI job send)
//! ends its Python workers too, and an immediate rerun builds every fixture
//! (no leftover partial export is mistaken for the model's failure).
//!
//! Needs the exporter venv (tests/setup.sh makes it), like every fixture build.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn scratch(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("hwmatrix-interrupt-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn gen_fixtures(fixtures: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gen"));
    command
        .args(["fixtures", "--model", "bert", "--model", "t5", "--fixtures"])
        .arg(fixtures)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The pids of the processes whose parent is `parent` (from /proc).
fn children(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        if after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok())
            == Some(parent)
        {
            found.push(pid);
        }
    }
    found
}

/// Whether a process still runs (a zombie waiting to be reaped does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat[stat.rfind(')').map_or(0, |i| i + 1)..]
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Starts gen, waits until its workers write a partial export, signals gen
/// alone, and returns the workers it had.
fn interrupt(fixtures: &Path, signal: &str) -> Vec<u32> {
    let mut process: Child = gen_fixtures(fixtures).spawn().expect("start gen");
    let started = Instant::now();
    let partial = || {
        std::fs::read_dir(fixtures)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().contains(".partial"))
            })
            .unwrap_or(false)
    };
    while !partial() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "gen's workers wrote no partial export in 120 s"
        );
        assert!(
            process.try_wait().expect("gen").is_none(),
            "gen ended before it was interrupted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let workers = children(process.id());
    assert!(
        !workers.is_empty(),
        "gen is exporting, yet has no worker process"
    );
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(process.id().to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    process.wait().expect("gen ends");
    workers
}

fn check_workers_end_and_rerun_builds(signal: &str) {
    let fixtures = scratch(signal);
    let workers = interrupt(&fixtures, signal);
    std::thread::sleep(Duration::from_secs(5));
    let alive: Vec<u32> = workers
        .iter()
        .copied()
        .filter(|pid| running(*pid))
        .collect();
    assert!(
        alive.is_empty(),
        "after SIG{signal} to gen alone, its workers {alive:?} still run 5 s later (of {workers:?})"
    );
    let rerun = gen_fixtures(&fixtures).status().expect("rerun gen");
    assert!(rerun.success(), "the rerun after SIG{signal} failed");
    for model in ["bert", "t5"] {
        assert!(
            fixtures.join(model).join("meta.json").is_file(),
            "the rerun did not build {model}"
        );
        assert!(
            !fixtures.join(format!("{model}.error.txt")).exists(),
            "the rerun recorded a failure for {model}"
        );
    }
    let leftovers: Vec<String> = std::fs::read_dir(&fixtures)
        .expect("fixtures")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "partial exports left behind: {leftovers:?}"
    );
    let _ = std::fs::remove_dir_all(&fixtures);
}

#[test]
fn sigterm_to_gen_alone_ends_its_workers_and_a_rerun_builds_every_fixture() {
    check_workers_end_and_rerun_builds("TERM");
}

#[test]
fn sigkill_to_gen_alone_ends_its_workers_and_a_rerun_builds_every_fixture() {
    check_workers_end_and_rerun_builds("KILL");
}

/// The mechanism alone, where nothing else would end the worker: its parent
/// (a shell) exits while the worker's stdin stays open (this test holds it),
/// so the worker idles on stdin forever unless the kernel's parent-death
/// signal ends it.
#[test]
fn a_worker_ends_when_its_parent_does_even_with_its_stdin_open() {
    let script = hwmatrix_importer::workers::worker_script();
    let mut shell = Command::new("sh")
        .arg("-c")
        // A background job's stdin is /dev/null unless redirected: fd 3 keeps the test's pipe for it.
        .arg(r#"exec 3<&0; HWMATRIX_PARENT_PID=$$ "$1" "$2" --serve 0<&3 2>/dev/null & echo $!; sleep 3"#)
        .arg("sh")
        .arg(hwmatrix_cell::paths::python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start a shell");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(shell.stdout.take().expect("piped")),
        &mut line,
    )
    .expect("the worker's pid");
    let worker: u32 = line.trim().parse().expect("a pid");
    assert!(running(worker), "the worker did not start");
    // Held open across the wait (Child::wait would close it): the worker never reads EOF.
    let stdin = shell.stdin.take().expect("piped");
    shell.wait().expect("the shell ends");
    let ended = Instant::now();
    while running(worker) && ended.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive = running(worker);
    if alive {
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(worker.to_string())
            .status();
    }
    assert!(
        !alive,
        "worker {worker} outlived its parent by 5 s with its stdin open: it does not end with the process that started it"
    );
    drop(stdin);
}
