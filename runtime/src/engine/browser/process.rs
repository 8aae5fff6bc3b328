//! A browser process as the browser engine keeps it, whichever the browser
//! (Chromium over CDP, Firefox over WebDriver BiDi): started so that it dies
//! with the test process (`PR_SET_PDEATHSIG`), never left behind, and waited
//! on by a keeper thread, so a browser that exits or is killed during a run
//! is known at once and every later step fails with that, not a hang.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{CheckError, ErrorKind};

/// How long a browser may take to start and print where to connect.
pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of the browser's stderr kept for messages when it dies.
const STDERR_LINES: usize = 20;

/// A running browser process: which browser, its pid, and how it ended once it has.
pub struct BrowserProcess {
    /// "Chromium" or "Firefox", for messages.
    pub name: &'static str,
    /// What was started (for Firefox, the root its executable runs in).
    pub executable: PathBuf,
    pub pid: u32,
    state: Arc<Mutex<ProcessState>>,
}

#[derive(Default)]
struct ProcessState {
    /// Set by the keeper thread when the process ends: how it ended.
    exited: Option<String>,
    stderr: VecDeque<String>,
}

impl BrowserProcess {
    /// Starts `command` (its stderr piped) and waits until a line of its
    /// stderr gives `announced` an address to connect to; returns the process
    /// and that address.
    pub fn start(
        name: &'static str,
        executable: &Path,
        mut command: Command,
        announced: fn(&str) -> Option<String>,
    ) -> Result<(BrowserProcess, String), CheckError> {
        die_with_parent(&mut command);
        let (tx, rx) = mpsc::channel();
        let state = Arc::new(Mutex::new(ProcessState::default()));
        let keeper_state = state.clone();
        let exe = executable.to_path_buf();
        // The keeper thread owns the process for the life of the test process:
        // PR_SET_PDEATHSIG follows the thread that forked, so it must not be a
        // test thread, which ends with its test.
        std::thread::Builder::new()
            .name(format!("hwmatrix-{}", name.to_lowercase()))
            .spawn(move || keep(name, command, exe, announced, tx, keeper_state))
            .map_err(|e| {
                CheckError::new(
                    ErrorKind::EngineExited,
                    format!("cannot start a thread for {name}: {e}"),
                )
            })?;
        let (pid, address) = match rx.recv_timeout(LAUNCH_TIMEOUT) {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(CheckError::new(
                    ErrorKind::Timeout,
                    format!(
                        "{name} ({}) printed no address to connect to within {} s",
                        executable.display(),
                        LAUNCH_TIMEOUT.as_secs()
                    ),
                ));
            }
        };
        let process = BrowserProcess {
            name,
            executable: executable.to_path_buf(),
            pid,
            state,
        };
        Ok((process, address))
    }

    /// If the process has ended: how, with the last lines it wrote.
    pub fn exited(&self) -> Option<String> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.exited.as_ref().map(|how| {
            let tail: Vec<&str> = state.stderr.iter().map(String::as_str).collect();
            format!(
                "{} ({}, pid {}) {how} during this test run; every later web check of this process fails. Its last stderr lines: {}",
                self.name,
                self.executable.display(),
                self.pid,
                if tail.is_empty() { "(none)".to_string() } else { tail.join(" | ") }
            )
        })
    }

    /// The error for a step that failed or ran out of time: the browser's
    /// death if that is what happened, else the step's own error.
    pub fn explain(&self, error: CheckError) -> CheckError {
        match self.exited() {
            Some(how) => CheckError::new(ErrorKind::EngineExited, how),
            None => error,
        }
    }

    /// Ends the browser (SIGKILL); its keeper thread records how it ended.
    pub fn kill(&self) {
        // SAFETY: kill(2) on the pid this process started, which its keeper waits on.
        unsafe {
            libc::kill(self.pid as libc::pid_t, libc::SIGKILL);
        }
    }

    /// The browser's death as the error of a step about to start, if it died.
    pub fn check_alive(&self) -> Result<(), CheckError> {
        match self.exited() {
            Some(how) => Err(CheckError::new(ErrorKind::EngineExited, how)),
            None => Ok(()),
        }
    }
}

type Started = Result<(u32, String), CheckError>;

/// Starts the browser, sends back its pid and address, keeps its stderr (a
/// full pipe would block it) and records how it ended. The wait is not on
/// stderr's end: the browser's child processes share the pipe and may outlive it.
fn keep(
    name: &'static str,
    mut command: Command,
    executable: PathBuf,
    announced: fn(&str) -> Option<String>,
    started: mpsc::Sender<Started>,
    state: Arc<Mutex<ProcessState>>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = started.send(Err(CheckError::new(
                ErrorKind::LibraryMissing,
                format!("cannot start {name} {}: {e}", executable.display()),
            )));
            return;
        }
    };
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr is piped");
    let reader_state = state.clone();
    let announce = started.clone();
    let _ = std::thread::Builder::new()
        .name(format!("hwmatrix-{}-stderr", name.to_lowercase()))
        .spawn(move || {
            let mut done = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !done && let Some(address) = announced(&line) {
                    done = true;
                    let _ = announce.send(Ok((pid, address)));
                    continue;
                }
                let mut state = reader_state.lock().unwrap_or_else(|e| e.into_inner());
                state.stderr.push_back(line);
                if state.stderr.len() > STDERR_LINES {
                    state.stderr.pop_front();
                }
            }
        });
    let how = match child.wait() {
        Ok(status) => describe_exit(status),
        Err(e) => format!("could not be waited on ({e})"),
    };
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    // If it never announced its address, the launch is waiting for this (a later send is ignored).
    let tail: Vec<String> = state.stderr.iter().cloned().collect();
    let _ = started.send(Err(CheckError::new(
        ErrorKind::EngineExited,
        format!(
            "{name} ({}) {how} before it could be connected to: {}",
            executable.display(),
            tail.join(" | ")
        ),
    )));
    state.exited = Some(how);
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "ended".into(),
    }
}

/// The browser gets SIGKILL when the thread that started it ends, so a test
/// process that exits or crashes never leaves a browser behind.
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A fresh profile folder `<dir>/<prefix><pid>-<n>` for the `n`th browser of
/// this process. Profiles of test processes that have ended are removed
/// first: their browser died with them, and nothing else would ever remove
/// the folder.
pub fn fresh_profile(dir: &Path, prefix: &str, n: usize) -> PathBuf {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let profile = dir.join(format!("{prefix}{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    profile
}
