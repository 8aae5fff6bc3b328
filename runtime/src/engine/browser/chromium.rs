//! One headless Chromium per test process and executable, driven over CDP
//! (chromiumoxide). hwmatrix starts the process itself ([`BrowserProcess`])
//! so that the flags are exactly ours (only the last `--enable-features`
//! counts, so no library may add its own), it dies with the test process,
//! and a browser that exits or is killed during a run is known at once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::{Browser, Page};
use futures_util::StreamExt;
use serde_json::Value;

use super::process::{BrowserProcess, LAUNCH_TIMEOUT, fresh_profile};
use super::timeout;
use crate::error::{CheckError, ErrorKind};

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
    pub process: BrowserProcess,
    pub version: String,
}

impl Chromium {
    /// If the process has ended: how, with the last lines it wrote.
    pub fn exited(&self) -> Option<String> {
        self.process.exited()
    }

    /// The error for a step that failed or ran out of time: the browser's
    /// death if that is what happened, else the step's own error.
    pub fn explain(&self, error: CheckError) -> CheckError {
        self.process.explain(error)
    }

    /// Opens `url` in a new page, within `limit`.
    pub fn new_page(&self, url: &str, step: &str, limit: Duration) -> Result<Page, CheckError> {
        self.process.check_alive()?;
        match runtime()
            .block_on(async { tokio::time::timeout(limit, self.browser.new_page(url)).await })
        {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(e)) => Err(self.explain(CheckError::new(
                ErrorKind::ModelLoad,
                format!("cannot open {url}: {e}"),
            ))),
            Err(_) => Err(self.explain(timeout(step, limit))),
        }
    }

    /// Evaluates `expression` in the page (awaiting a promise), within `limit`.
    pub fn evaluate(
        &self,
        page: &Page,
        step: &str,
        expression: String,
        limit: Duration,
    ) -> Result<Value, CheckError> {
        self.process.check_alive()?;
        let params = EvaluateParams::builder()
            .expression(expression)
            .await_promise(true)
            .return_by_value(true)
            .build()
            .map_err(|e| CheckError::new(ErrorKind::RunFailed, format!("{step}: {e}")))?;
        match runtime()
            .block_on(async { tokio::time::timeout(limit, page.evaluate_expression(params)).await })
        {
            Ok(Ok(result)) => Ok(result.value().cloned().unwrap_or(Value::Null)),
            Ok(Err(e)) => Err(self.explain(CheckError::new(
                ErrorKind::RunFailed,
                format!("{step}: {e}"),
            ))),
            Err(_) => Err(self.explain(timeout(step, limit))),
        }
    }

    /// Closes a page, unless the browser is gone.
    pub fn close(&self, page: Page) {
        if self.exited().is_none() {
            let _ = runtime().block_on(async {
                tokio::time::timeout(Duration::from_secs(10), page.close()).await
            });
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
        .filter_map(|(_, b)| b.as_ref().ok().map(|c| c.process.pid))
        .collect()
}

const PROFILE_PREFIX: &str = "hwmatrix-chromium-";

fn launch(executable: &Path, flags: &[String], n: usize) -> Result<Chromium, CheckError> {
    let profile = fresh_profile(&std::env::temp_dir(), PROFILE_PREFIX, n);
    let mut command = Command::new(executable);
    command
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--remote-debugging-port=0")
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let (process, ws_url) = BrowserProcess::start("Chromium", executable, command, |line| {
        line.strip_prefix("DevTools listening on ")
            .map(|url| url.trim().to_string())
    })?;
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
        process,
        version,
    })
}
