//! A check in a process of its own, for engines that can crash the process
//! they run in. Measured: one qnn cell (edgetam, on Qualcomm's HTP emulator)
//! ended its test process with SIGSEGV, and with it every qnn check after it
//! in that process (258 of the vision category's 333 never ran). A check of
//! such an engine reruns its own test in a child process (the same test
//! binary, `--exact` its test's name) and reads the child's verdict: passed,
//! failed with the child's message, or killed by a signal, which the parent
//! records as the check's failure (`engine-exited`, with the signal and the
//! child's last lines), or still running after [`CHECK_LIMIT`], which the
//! parent kills and records as a `timeout`. The child writes its own record as
//! any check does.
//!
//! One child at a time: the children's timings then say truly that nothing
//! ran beside them, as a single process's timed sections do (`checks::TIMING`).

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::ErrorKind;
use crate::record::{self, Outcome};
use crate::{Basis, Cell};

/// Set in the child: it runs the check itself.
const CHILD: &str = "HWMATRIX_ISOLATED_CHECK";

/// Set (to anything) to run every engine's checks in a process of their own:
/// for a sweep over an engine that has crashed on a model (OpenVINO on some
/// per-channel int8 graphs), so the crash is that check's record and the
/// sweep goes on.
pub const ISOLATE_ALL: &str = "HWMATRIX_ISOLATE";

/// The cells whose checks run in a process of their own: the platform's
/// policy (hardware.yaml `checks_in_own_process`: QNN's HTP emulator), a cell
/// one of whose checks crashed its process before (the evidence store), or
/// every cell with `HWMATRIX_ISOLATE` set.
fn needs_own_process(cell: &Cell) -> bool {
    cell.own_process_reason().is_some() || std::env::var_os(ISOLATE_ALL).is_some()
}

/// The check's verdict from a child process, or None where it runs in this
/// one: an engine that never crashed a process, the child itself, or a caller
/// that is not a libtest test (its thread names no test to rerun).
pub fn run_in_own_process(cell: &Cell, check: &str) -> Option<Result<(), String>> {
    if !needs_own_process(cell) || std::env::var_os(CHILD).is_some() {
        return None;
    }
    // libtest runs each test on a thread named after the test's path.
    let test = std::thread::current()
        .name()
        .filter(|n| n.ends_with(check) && n.contains("::"))?
        .to_string();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            return Some(Err(format!(
                "{}::{}: cannot find the test binary to run the check in its own process: {e}",
                cell.id(),
                check
            )));
        }
    };
    let child = Command::new(&exe)
        .args([
            test.as_str(),
            "--exact",
            "--include-ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, "1")
        // The child's records belong to this run.
        .env("HWMATRIX_RUN_ID", record::run_id())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => {
            return Some(Err(format!(
                "{}::{}: cannot start {} for the check's own process: {e}",
                cell.id(),
                check,
                exe.display()
            )));
        }
    };
    let (status, stdout, stderr) = match wait_within(child, CHECK_LIMIT) {
        Ok(finished) => finished,
        Err(e) => {
            return Some(Err(format!(
                "{}::{}: waiting for the check's own process: {e}",
                cell.id(),
                check
            )));
        }
    };
    // The child's output, where libtest captures this test's (shown when it fails).
    print!("{stdout}");
    eprint!("{stderr}");
    let Some(status) = status else {
        let reason = format!(
            "the check's own process ran past {} s and was killed (a limit of three times one run's {} s, for the session's build, its runs and its profile), inside {}",
            CHECK_LIMIT.as_secs(),
            CHECK_LIMIT.as_secs() / 3,
            cell.engine.describe()
        );
        return Some(Err(write_failure(cell, check, ErrorKind::Timeout, reason)));
    };
    if status.success() {
        return Some(if stdout.contains("1 passed") {
            Ok(())
        } else {
            Err(format!(
                "{}::{}: its own process ran no test named {test}",
                cell.id(),
                check
            ))
        });
    }
    use std::os::unix::process::ExitStatusExt;
    Some(Err(match status.signal() {
        Some(signal) => {
            // Its own last words, not libtest's ("running 1 test", "test x ...").
            let last: Vec<&str> = stderr
                .lines()
                .chain(stdout.lines())
                .filter(|l| {
                    !l.trim().is_empty() && !l.starts_with("running ") && !l.starts_with("test ")
                })
                .collect();
            let last = if last.is_empty() {
                "none".to_string()
            } else {
                last[last.len().saturating_sub(3)..].join(" | ")
            };
            let reason = format!(
                "the check's own process was killed by signal {signal}{} during the check, inside {} (its last lines: {last})",
                signal_name(signal),
                cell.engine.describe()
            );
            write_failure(cell, check, ErrorKind::EngineExited, reason)
        }
        // The child failed the check and wrote its record; its message is in its output above.
        None => failure_message(&format!("{stdout}\n{stderr}")).unwrap_or_else(|| {
            format!(
                "{}::{} failed in its own process (exit status {status}); its output is above",
                cell.id(),
                check
            )
        }),
    }))
}

/// How long a check's own process may take: three times the run limit of the
/// engine (`engine::onnx`'s 60 s), for its session's build, its runs and its profile.
const CHECK_LIMIT: Duration = Duration::from_secs(180);

/// The child's exit status (None when it ran past `limit` and was killed) and its output.
fn wait_within(
    mut child: Child,
    limit: Duration,
) -> std::io::Result<(Option<ExitStatus>, String, String)> {
    // Read both pipes as the child writes them, so a full pipe never stalls it.
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > limit {
            child.kill()?;
            child.wait()?;
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok((
        status,
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    ))
}

/// Records a check's failure that its own process could not record (it crashed, or was
/// killed), and returns the test's failure message.
fn write_failure(cell: &Cell, check: &str, kind: ErrorKind, reason: String) -> String {
    // The device the child ran on, as its own record would have said: an
    // emulator's crash is this machine's, not the engine's (who failed).
    let device = match hwmatrix_platforms::detect_engine(cell.platform.platform, cell.engine) {
        hwmatrix_platforms::Availability::Present(device) => Some(device),
        _ => None,
    };
    let failed = record::Record {
        status: Outcome::Failed,
        basis: Basis::Measured,
        reason: Some(reason.clone()),
        error_kind: Some(kind),
        stage: kind.stage(),
        device_kind: device
            .is_some()
            .then(|| hwmatrix_platforms::device_kind(cell.platform.platform, cell.engine)),
        device,
        ..record::blank(cell, check)
    };
    let kind_name = kind.name();
    match record::append(&failed) {
        Ok(()) => format!("{}::{} failed ({kind_name}): {reason}", cell.id(), check),
        Err(e) => format!(
            "{}::{} failed ({kind_name}): {reason}; and its record could not be written: {e}",
            cell.id(),
            check
        ),
    }
}

/// The panic message of the child's failed test, from libtest's output.
fn failure_message(stdout: &str) -> Option<String> {
    let mut lines = stdout.lines().skip_while(|l| !l.contains("panicked at"));
    lines.next()?;
    let message: Vec<&str> = lines
        .take_while(|l| {
            !l.starts_with("stack backtrace:") && !l.starts_with("note: ") && !l.trim().is_empty()
        })
        .collect();
    (!message.is_empty()).then(|| message.join("\n"))
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_childs_panic_message() {
        let stdout = "running 1 test\n\nthread 'a::b::qnn::onnx::runs' (12) panicked at runtime/src/checks.rs:123:9:\nb::qnn::onnx::runs failed (model-load): cannot load\nsecond line\nstack backtrace:\n   0: x\n";
        assert_eq!(
            failure_message(stdout).as_deref(),
            Some("b::qnn::onnx::runs failed (model-load): cannot load\nsecond line")
        );
        assert_eq!(failure_message("running 1 test\ntest x ... ok\n"), None);
    }
}
