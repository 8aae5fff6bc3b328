//! One headless Chromium per test process and executable, driven over CDP
//! (chromiumoxide). hwmatrix starts the process itself so that:
//! - it dies with the test process (`PR_SET_PDEATHSIG`), never left behind;
//! - the flags are exactly ours (only the last `--enable-features` counts, so
//!   no library may add its own);
//! - a keeper thread waits on it, so a browser that exits or is killed during
//!   a run is known at once and every later step fails with that, not a hang.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chromiumoxide::Browser;
use chromiumoxide::handler::HandlerConfig;
use futures_util::StreamExt;

use crate::error::{CheckError, ErrorKind};

/// How long Chromium may take to start and print its DevTools address.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of Chromium's stderr kept for messages when it dies.
const STDERR_LINES: usize = 20;

/// The runtime every CDP future runs on: one per process, two workers (the
/// CDP handler and the checks' requests).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hwmatrix-cdp")
            .enable_all()
            .build()
            .expect("cannot start the tokio runtime for CDP")
    })
}

/// A running Chromium and the CDP connection to it.
pub struct Chromium {
    pub browser: Browser,
    pub executable: PathBuf,
    pub pid: u32,
    pub version: String,
    state: Arc<Mutex<ProcessState>>,
}

#[derive(Default)]
struct ProcessState {
    /// Set by the keeper thread when the process ends: how it ended.
    exited: Option<String>,
    stderr: VecDeque<String>,
}

impl Chromium {
    /// If the process has ended: how, with the last lines it wrote.
    pub fn exited(&self) -> Option<String> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.exited.as_ref().map(|how| {
            let tail: Vec<&str> = state.stderr.iter().map(String::as_str).collect();
            format!(
                "Chromium ({}, pid {}) {how} during this test run; every later web check of this process fails. Its last stderr lines: {}",
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
}

/// The process's Chromium for `executable`, launched on first use with
/// `flags` (one browser per executable: webgpu and webnn cells use different
/// builds). A failed launch is remembered and reported to every later check.
pub fn shared(executable: &Path, flags: &[String]) -> Result<Arc<Chromium>, CheckError> {
    let mut browsers = BROWSERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, found)) = browsers.iter().find(|(path, _)| path == executable) {
        return found.clone();
    }
    let launched = launch(executable, flags, browsers.len()).map(Arc::new);
    browsers.push((executable.to_path_buf(), launched.clone()));
    launched
}

/// A launch's outcome, kept so a browser that failed to start is not retried per check.
type Launched = Result<Arc<Chromium>, CheckError>;

static BROWSERS: Mutex<Vec<(PathBuf, Launched)>> = Mutex::new(Vec::new());

/// The pids of the Chromium processes this test process started (for tests
/// that kill one to prove the checks fail cleanly).
pub fn pids() -> Vec<u32> {
    let browsers = BROWSERS.lock().unwrap_or_else(|e| e.into_inner());
    browsers
        .iter()
        .filter_map(|(_, b)| b.as_ref().ok().map(|c| c.pid))
        .collect()
}

const PROFILE_PREFIX: &str = "hwmatrix-chromium-";

/// A fresh profile folder for the `n`th browser of this process. Profiles of
/// test processes that have ended are removed first: their browser died
/// with them, and nothing else would ever remove the folder.
fn fresh_profile(n: usize) -> PathBuf {
    let temp = std::env::temp_dir();
    for entry in std::fs::read_dir(&temp).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name
            .strip_prefix(PROFILE_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let profile = temp.join(format!("{PROFILE_PREFIX}{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    profile
}

fn launch(executable: &Path, flags: &[String], n: usize) -> Result<Chromium, CheckError> {
    let profile = fresh_profile(n);
    let mut command = Command::new(executable);
    command
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--remote-debugging-port=0")
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    die_with_parent(&mut command);
    let (tx, rx) = mpsc::channel();
    let state = Arc::new(Mutex::new(ProcessState::default()));
    let keeper_state = state.clone();
    let exe = executable.to_path_buf();
    // The keeper thread owns the process for the life of the test process:
    // PR_SET_PDEATHSIG follows the thread that forked, so it must not be a
    // test thread, which ends with its test.
    std::thread::Builder::new()
        .name("hwmatrix-chromium".into())
        .spawn(move || keep(command, exe, tx, keeper_state))
        .map_err(|e| {
            CheckError::new(
                ErrorKind::EngineExited,
                format!("cannot start a thread for Chromium: {e}"),
            )
        })?;
    let (pid, ws_url) = match rx.recv_timeout(LAUNCH_TIMEOUT) {
        Ok(Ok(started)) => started,
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(CheckError::new(
                ErrorKind::Timeout,
                format!(
                    "Chromium ({}) printed no DevTools address within {} s",
                    executable.display(),
                    LAUNCH_TIMEOUT.as_secs()
                ),
            ));
        }
    };
    let config = HandlerConfig {
        request_timeout: Duration::from_secs(600),
        ..HandlerConfig::default()
    };
    let connected = runtime().block_on(async {
        tokio::time::timeout(
            LAUNCH_TIMEOUT,
            Browser::connect_with_config(ws_url.clone(), config),
        )
        .await
    });
    let (browser, mut handler) = match connected {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => {
            return Err(CheckError::new(
                ErrorKind::EngineExited,
                format!("cannot connect to Chromium's DevTools at {ws_url}: {e}"),
            ));
        }
        Err(_) => {
            return Err(CheckError::new(
                ErrorKind::Timeout,
                format!(
                    "no CDP connection to {ws_url} within {} s",
                    LAUNCH_TIMEOUT.as_secs()
                ),
            ));
        }
    };
    // The handler drives the connection; it ends when the browser goes away.
    runtime().spawn(async move { while handler.next().await.is_some() {} });
    let version = runtime()
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), browser.version()).await })
        .ok()
        .and_then(Result::ok)
        .map(|v| v.product)
        .unwrap_or_else(|| "unknown version".into());
    Ok(Chromium {
        browser,
        executable: executable.to_path_buf(),
        pid,
        version,
        state,
    })
}

type Started = Result<(u32, String), CheckError>;

/// Starts Chromium, sends back its pid and DevTools address, keeps its stderr
/// (a full pipe would block it) and records how it ended. The wait is not on
/// stderr's end: Chromium's child processes share the pipe and may outlive it.
fn keep(
    mut command: Command,
    executable: PathBuf,
    started: mpsc::Sender<Started>,
    state: Arc<Mutex<ProcessState>>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = started.send(Err(CheckError::new(
                ErrorKind::LibraryMissing,
                format!("cannot start Chromium {}: {e}", executable.display()),
            )));
            return;
        }
    };
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr is piped");
    let reader_state = state.clone();
    let announce = started.clone();
    let _ = std::thread::Builder::new()
        .name("hwmatrix-chromium-stderr".into())
        .spawn(move || {
            let mut announced = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !announced && let Some(url) = line.strip_prefix("DevTools listening on ") {
                    announced = true;
                    let _ = announce.send(Ok((pid, url.trim().to_string())));
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
    // If it never announced DevTools, the launch is waiting for this (a later send is ignored).
    let tail: Vec<String> = state.stderr.iter().cloned().collect();
    let _ = started.send(Err(CheckError::new(
        ErrorKind::EngineExited,
        format!(
            "Chromium ({}) {how} before it opened DevTools: {}",
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

/// Chromium gets SIGKILL when the thread that started it ends, so a test
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
