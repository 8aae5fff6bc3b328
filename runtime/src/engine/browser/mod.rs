//! The browser engine: onnxruntime-web in a real headless Chromium, for the
//! webgpu and webnn platforms.
//!
//! One Chromium per test process and executable ([`chromium`]), one static
//! server ([`server`]), and pages with the harness (`harness.mjs`) that the
//! checks of an engine take turns in ([`POOL`]). Each model's session is
//! opened with ORT's verbose log on, and the log's node placements
//! ([`ort_log`]) say which execution provider really ran: a session that fell
//! back to wasm fails the placement check like any other fallback. Every
//! step has a time limit, and a browser that died makes the step fail with
//! how it died.

mod chromium;
mod firefox;
mod ort_log;
mod process;
mod server;
mod steps;

use crate::engine::onnx::StaticInputs;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chromiumoxide::Page;
use hwmatrix_cell::paths;
use hwmatrix_platforms as platforms;
use serde_json::{Value, json};

pub use self::chromium::pids as chromium_pids;
use self::chromium::{Chromium, runtime};
use self::firefox::Firefox;
pub use self::firefox::pid as firefox_pid;
use super::{Placement, Session, Threads};
use crate::error::{CheckError, ErrorKind};
use crate::placement::GraphNodes;
use crate::tensor::{Data, Tensor, f16};
use crate::{BrowserApp, BrowserBackend};

/// Time limits of each step, generous for SwiftShader on two cores (a
/// session of a large model compiles hundreds of shaders on the CPU).
const PAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// Opening: WebNN builds its graph on the CPU in seconds; a WebNN session
/// that takes a minute has hung (measured: clap never returns).
fn open_timeout(backend: BrowserBackend) -> Duration {
    match backend {
        BrowserBackend::Webgpu => Duration::from_secs(120),
        BrowserBackend::Webnn => Duration::from_secs(60),
    }
}
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The flags every Chromium gets here. Background networking off: this
/// machine's network is closed, and Chromium would retry at every start.
const COMMON_FLAGS: [&str; 8] = [
    "--headless=new",
    "--no-sandbox",
    "--enable-unsafe-webgpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// Opens `model` (a file under the fixture root) in the backend's Chromium:
/// in the page this cell's last check used, else a pooled page of the same
/// engine, else a fresh one ([`POOL`]). The
/// ORT session itself opens at the first run (its runs are never profiled:
/// the placements come from the log written when it opens), when the input shapes are
/// known: WebNN builds static graphs, so its named dimensions are fixed to
/// those shapes (`freeDimensionOverrides`). `nodes` is the fixture's account
/// of the graph's nodes, for judging what ran off the provider.
pub fn open(
    app: BrowserApp,
    backend: BrowserBackend,
    device_type: Option<&'static str>,
    model: &Path,
    inputs: StaticInputs,
    nodes: GraphNodes,
) -> Result<Box<dyn Session>, CheckError> {
    let ort_dist = platforms::browser::onnxruntime_web_dist()
        .map_err(|m| CheckError::new(ErrorKind::LibraryMissing, m))?;
    let fixtures = paths::fixtures_dir();
    let addr = server_address(&ort_dist)?;
    let relative = model.strip_prefix(&fixtures).map_err(|_| {
        CheckError::new(
            ErrorKind::FixtureInvalid,
            format!(
                "{} is not under the fixture root {}",
                model.display(),
                fixtures.display()
            ),
        )
    })?;
    let model_url = format!("/fixtures/{}", relative.display());
    let engine = format!("{} {} {device_type:?}", app.name(), backend.name());
    let steps_key = format!("{engine} {model_url}");
    let page = match take_pooled(&engine, &model_url) {
        Some(page) => page,
        None => {
            let started = Instant::now();
            let tab = Tab::harness(
                app,
                backend,
                &format!("http://{addr}/harness.html?bundle={}", backend.ort_bundle()),
            )?;
            steps::note(&steps_key, "page", started.elapsed(), None);
            PageSession {
                tab,
                engine,
                model: None,
                sessions: 0,
                failed: false,
                opened: None,
            }
        }
    };
    Ok(Box::new(BrowserSession {
        page: Some(page),
        steps_key,
        healthy: true,
        backend,
        device_type,
        model_url,
        inputs,
        nodes,
    }))
}

/// Opens a local HTML file in the webgpu platform's Chromium (Debian's),
/// evaluates `expression` in it and takes a full-page PNG screenshot: how
/// tests check hwmatrix's own HTML (the report) in a real browser.
pub fn inspect_file(file: &Path, expression: &str) -> Result<(Value, Vec<u8>), CheckError> {
    use chromiumoxide::page::ScreenshotParams;

    let executable = platforms::browser::browser_executable(BrowserBackend::Webgpu)
        .map_err(|m| CheckError::new(ErrorKind::PlatformAbsent, m))?;
    let chromium = chromium::shared(&executable, &flags(BrowserBackend::Webgpu))?;
    let file = std::fs::canonicalize(file).map_err(|e| {
        CheckError::new(
            ErrorKind::FixtureInvalid,
            format!("{}: {e}", file.display()),
        )
    })?;
    let url = format!("file://{}", file.display());
    let page = chromium.new_page(url.as_str(), "opening the page", PAGE_TIMEOUT)?;
    let value = chromium.evaluate(
        &page,
        "reading the page",
        expression.to_string(),
        PAGE_TIMEOUT,
    )?;
    let shot = runtime().block_on(async {
        tokio::time::timeout(
            PAGE_TIMEOUT,
            page.screenshot(ScreenshotParams::builder().full_page(true).build()),
        )
        .await
    });
    let png = match shot {
        Ok(Ok(png)) => png,
        Ok(Err(e)) => {
            return Err(chromium.explain(CheckError::new(
                ErrorKind::RunFailed,
                format!("screenshot of {url}: {e}"),
            )));
        }
        Err(_) => return Err(chromium.explain(timeout("taking the screenshot", PAGE_TIMEOUT))),
    };
    let _ = runtime().block_on(async { tokio::time::timeout(PAGE_TIMEOUT, page.close()).await });
    Ok((value, png))
}

/// Pages kept open between checks. A cell's three checks run one after
/// another (tests run in name order) in the page and ORT session of its
/// first, so each cell opens its model once; the next cell of the same
/// engine opens its model in that page too, which spares it the page's start
/// and onnxruntime-web's WebAssembly start. ORT's WebGPU context is still
/// one model's: harness.mjs releases the last session, and the context with
/// it, before it opens the next. Two pages per engine, one per test thread:
/// a sweep runs each model's cells of every engine one after another.
static POOL: Mutex<VecDeque<PageSession>> = Mutex::new(VecDeque::new());
const PAGES_PER_ENGINE: usize = 2;
/// Sessions one page opens before it is closed (a model, or a WebNN model's
/// shape, each): its wasm heap and log only grow.
const SESSIONS_PER_PAGE: usize = 32;

/// A pooled page of `engine`: the one that has `model_url` open, else any.
fn take_pooled(engine: &str, model_url: &str) -> Option<PageSession> {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let mine = |p: &PageSession| p.model.as_deref() == Some(model_url);
    let at = pool
        .iter()
        .position(|p| p.engine == engine && mine(p))
        .or_else(|| pool.iter().position(|p| p.engine == engine && !p.failed))?;
    pool.remove(at).filter(|p| p.tab.exited().is_none())
}

fn give_back(page: PageSession) {
    if page.sessions >= SESSIONS_PER_PAGE {
        page.close();
        return;
    }
    let evicted: Vec<PageSession> = {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let engine = page.engine.clone();
        pool.push_back(page);
        let engines: Vec<usize> = (0..pool.len())
            .filter(|&i| pool[i].engine == engine)
            .collect();
        let excess = engines.len().saturating_sub(PAGES_PER_ENGINE);
        // The engine's oldest pages, removed from the back so the indices hold.
        engines[..excess]
            .iter()
            .rev()
            .filter_map(|&i| pool.remove(i))
            .collect()
    };
    evicted.into_iter().for_each(PageSession::close);
}

/// Sessions whose opening ran out of time in this process, with the error.
static HUNG: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// A harness page and the ORT session open in it.
struct PageSession {
    tab: Tab,
    /// Browser, backend and device type: what a pooled page may be reused for.
    engine: String,
    /// The model last opened here, or tried (`opened` is its session, if it opened).
    model: Option<String>,
    /// Sessions opened in this page so far.
    sessions: usize,
    /// Whether a call failed in the page (a session that did not open, a run
    /// that failed): the page then serves its model's later checks only, so
    /// that a device a model left broken is never another model's failure.
    failed: bool,
    opened: Option<Opened>,
}

impl PageSession {
    fn close(self) {
        self.tab.close();
    }
}

/// A page in one of the two browsers.
enum Tab {
    Chromium {
        chromium: Arc<Chromium>,
        page: Page,
    },
    Firefox {
        firefox: Arc<Firefox>,
        context: String,
    },
}

impl Tab {
    /// The harness page at `url` in the app's browser, once its module has
    /// imported onnxruntime-web.
    fn harness(app: BrowserApp, backend: BrowserBackend, url: &str) -> Result<Tab, CheckError> {
        let started = Instant::now();
        let step = "opening the harness page";
        let tab = match app {
            BrowserApp::Chromium => {
                let executable = platforms::browser::browser_executable(backend)
                    .map_err(|m| CheckError::new(ErrorKind::PlatformAbsent, m))?;
                let chromium = chromium::shared(&executable, &flags(backend))?;
                let page = chromium.new_page(url, step, PAGE_TIMEOUT)?;
                Tab::Chromium { chromium, page }
            }
            BrowserApp::Firefox => {
                let firefox = firefox::for_new_page()?;
                let context = firefox.new_tab(url, step, PAGE_TIMEOUT)?;
                Tab::Firefox { firefox, context }
            }
        };
        loop {
            let ready =
                tab.evaluate(step, "window.hwmatrix?.ready === true".into(), PAGE_TIMEOUT)?;
            if ready == Value::Bool(true) {
                return Ok(tab);
            }
            if started.elapsed() > PAGE_TIMEOUT {
                let log = tab
                    .evaluate(
                        "reading the page's log",
                        "window.hwmatrixLog ?? []".into(),
                        PAGE_TIMEOUT,
                    )
                    .unwrap_or_default();
                tab.close();
                return Err(CheckError::new(
                    ErrorKind::LibraryMissing,
                    format!(
                        "the harness at {url} did not start within {} s (is onnxruntime-web served from /ort/?); page log: {log}",
                        PAGE_TIMEOUT.as_secs()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Evaluates `expression` in the page (awaiting a promise), within `limit`.
    fn evaluate(
        &self,
        step: &str,
        expression: String,
        limit: Duration,
    ) -> Result<Value, CheckError> {
        match self {
            Tab::Chromium { chromium, page } => chromium.evaluate(page, step, expression, limit),
            Tab::Firefox { firefox, context } => firefox.evaluate(context, step, expression, limit),
        }
    }

    /// How the browser ended, if it has.
    fn exited(&self) -> Option<String> {
        match self {
            Tab::Chromium { chromium, .. } => chromium.exited(),
            Tab::Firefox { firefox, .. } => firefox.process.exited(),
        }
    }

    fn close(self) {
        match self {
            Tab::Chromium { chromium, page } => chromium.close(page),
            Tab::Firefox { firefox, context } => firefox.close(&context),
        }
    }

    /// The browser, for records: its version and where it runs from.
    fn browser(&self) -> String {
        match self {
            Tab::Chromium { chromium, .. } => format!(
                "{} ({})",
                chromium.version,
                chromium.process.executable.display()
            ),
            Tab::Firefox { firefox, .. } => firefox::describe(firefox),
        }
    }
}

fn flags(backend: BrowserBackend) -> Vec<String> {
    let mut flags: Vec<String> = COMMON_FLAGS.iter().map(|f| f.to_string()).collect();
    if backend == BrowserBackend::Webnn {
        // Only the last --enable-features counts: this must be the one.
        flags.push("--enable-features=WebMachineLearningNeuralNetwork".into());
    }
    flags
}

/// The process's static server, started on first use.
fn server_address(ort_dist: &Path) -> Result<SocketAddr, CheckError> {
    static SERVER: OnceLock<Result<SocketAddr, String>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            server::start(server::Roots {
                ort_dist: ort_dist.to_path_buf(),
                fixtures: paths::fixtures_dir,
            })
            .map_err(|e| format!("cannot serve the harness on 127.0.0.1: {e}"))
        })
        .clone()
        .map_err(|m| CheckError::new(ErrorKind::EngineExited, m))
}

pub(crate) fn timeout(step: &str, limit: Duration) -> CheckError {
    CheckError::new(
        ErrorKind::Timeout,
        format!("{step} took longer than its limit of {} s", limit.as_secs()),
    )
}

/// The version of the onnxruntime-web the pages import, from its package.json: what
/// the harness's `ort.env.versions.web` reports once a model opened.
fn installed_ort_version() -> Option<String> {
    let dist = platforms::browser::onnxruntime_web_dist().ok()?;
    let text = std::fs::read_to_string(dist.parent()?.join("package.json")).ok()?;
    let package: Value = serde_json::from_str(&text).ok()?;
    package.get("version")?.as_str().map(str::to_string)
}

struct BrowserSession {
    page: Option<PageSession>,
    /// The engine and the model: this cell's steps in `HWMATRIX_WEB_STEPS`.
    steps_key: String,
    /// False after a step failed: the page may still be busy, so it is closed, not pooled.
    healthy: bool,
    backend: BrowserBackend,
    device_type: Option<&'static str>,
    model_url: String,
    /// The model's declared inputs and their named axes, for WebNN's overrides.
    inputs: StaticInputs,
    nodes: GraphNodes,
}

/// What the harness reported when it opened the ORT session.
struct Opened {
    log: Vec<String>,
    found: Value,
    overrides: serde_json::Map<String, Value>,
    /// Runs made in this session (the first one compiles WebGPU's shaders).
    runs: usize,
}

impl BrowserSession {
    fn page(&self) -> &PageSession {
        self.page
            .as_ref()
            .expect("the page lives as long as the session")
    }

    /// The page's ORT session, if it is this model's (a pooled page may hold
    /// the last model's).
    fn opened(&self) -> Option<&Opened> {
        let page = self.page();
        page.opened
            .as_ref()
            .filter(|_| page.model.as_deref() == Some(self.model_url.as_str()))
    }

    fn call(
        &mut self,
        step: &str,
        function: &str,
        argument: Value,
        limit: Duration,
    ) -> Result<Value, CheckError> {
        let reply = self.page().tab.evaluate(
            step,
            format!("window.hwmatrix.{function}({argument})"),
            limit,
        );
        let reply = reply.inspect_err(|_| self.healthy = false)?;
        if reply.get("ok") == Some(&Value::Bool(true)) {
            return Ok(reply);
        }
        self.page
            .as_mut()
            .expect("the page lives as long as the session")
            .failed = true;
        let error = reply
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("the harness gave no reply");
        // The harness says when the browser lacks what the backend needs (a
        // WebGPU adapter, a WebNN context): this machine's, not the model's.
        let kind = if reply.get("missing") == Some(&Value::Bool(true)) {
            ErrorKind::PlatformAbsent
        } else if function == "open" {
            ErrorKind::ModelLoad
        } else {
            ErrorKind::RunFailed
        }
        .or_adapter_feature(error);
        let log = last_lines(reply.get("log"), 5);
        Err(CheckError::new(
            kind,
            format!(
                "onnxruntime-web ({}) {step}: {error}{log}",
                self.backend.name()
            ),
        ))
    }

    fn ensure_open(&mut self, inputs: &[(String, Tensor)]) -> Result<(), CheckError> {
        let mut overrides = serde_json::Map::new();
        if self.backend == BrowserBackend::Webnn {
            for (name, axes) in &self.inputs {
                if let Some((_, tensor)) = inputs.iter().find(|(n, _)| n == name) {
                    for (axis, size) in axes
                        .iter()
                        .zip(&tensor.shape)
                        .filter(|(a, _)| !a.is_empty())
                    {
                        overrides.insert(axis.to_string(), json!(size));
                    }
                }
            }
        }
        // A pooled page's session of this model serves again unless WebNN needs other static shapes.
        if self.opened().is_some_and(|o| o.overrides == overrides) {
            return Ok(());
        }
        let argument = json!({
            "model": self.model_url,
            "backend": self.backend.name(),
            "deviceType": self.device_type,
            "overrides": overrides,
        });
        // A model whose session hung once in this process hangs again: later
        // checks of the cell fail at once with that measurement, not after
        // another full time limit.
        let hung_key = format!("{} {overrides:?}", self.steps_key);
        if let Some(earlier) = HUNG
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(k, _)| *k == hung_key)
        {
            return Err(CheckError::new(
                ErrorKind::Timeout,
                format!(
                    "{} (measured by an earlier check of this cell in this process; not retried)",
                    earlier.1
                ),
            ));
        }
        // The harness lets the page's last session go whatever this opening does.
        let page = self
            .page
            .as_mut()
            .expect("the page lives as long as the session");
        page.opened = None;
        page.model = Some(self.model_url.clone());
        page.sessions += 1;
        let started = Instant::now();
        let reply = self
            .call(
                "opening the model",
                "open",
                argument,
                open_timeout(self.backend),
            )
            .inspect_err(|e| {
                if e.kind == ErrorKind::Timeout {
                    HUNG.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((hung_key.clone(), e.message.clone()));
                }
            })?;
        let log: Vec<String> = reply
            .get("log")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        // For a maintainer reading why nodes were placed where they were.
        if let Some(dir) = std::env::var_os("HWMATRIX_WEB_LOG_DIR") {
            let file = Path::new(&dir).join(format!(
                "{}.{}.log",
                self.model_url
                    .trim_start_matches("/fixtures/")
                    .replace('/', "_"),
                self.backend.name()
            ));
            let _ =
                std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&file, log.join("\n")));
        }
        let found = reply.get("found").cloned().unwrap_or(Value::Null);
        steps::note(
            &self.steps_key,
            "open",
            started.elapsed(),
            reply.get("openMs").and_then(Value::as_f64),
        );
        self.page
            .as_mut()
            .expect("the page lives as long as the session")
            .opened = Some(Opened {
            log,
            found,
            overrides,
            runs: 0,
        });
        Ok(())
    }

    fn run_in_page(
        &mut self,
        inputs: &[(String, Tensor)],
        time_only: bool,
    ) -> Result<Value, CheckError> {
        self.ensure_open(inputs)?;
        let inputs: Vec<Value> = inputs
            .iter()
            .map(|(name, t)| encode(name, t))
            .collect::<Result<_, _>>()?;
        let started = Instant::now();
        let reply = self.call(
            "running the model",
            "run",
            json!({"inputs": inputs, "timeOnly": time_only}),
            RUN_TIMEOUT,
        )?;
        let page = self
            .page
            .as_mut()
            .expect("the page lives as long as the session");
        let opened = page.opened.as_mut().expect("ensure_open opened it");
        opened.runs += 1;
        let step = if opened.runs == 1 { "first run" } else { "run" };
        steps::note(
            &self.steps_key,
            step,
            started.elapsed(),
            reply.get("ms").and_then(Value::as_f64),
        );
        Ok(reply)
    }
}

impl Session for BrowserSession {
    fn run(&mut self, inputs: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>, CheckError> {
        let reply = self.run_in_page(inputs, false)?;
        let outputs = reply
            .get("outputs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        outputs.iter().map(decode).collect()
    }

    fn time_run(&mut self, inputs: &[(String, Tensor)]) -> Result<f64, CheckError> {
        let reply = self.run_in_page(inputs, true)?;
        reply
            .get("ms")
            .and_then(Value::as_f64)
            .ok_or_else(|| CheckError::new(ErrorKind::RunFailed, "the harness returned no time"))
    }

    fn placement(&mut self) -> Result<Placement, CheckError> {
        let opened = self.opened().ok_or_else(|| {
            CheckError::new(
                ErrorKind::ProviderUnverified,
                "the model was never opened in the page",
            )
        })?;
        Ok(Placement {
            ops: ort_log::placements(&opened.log, &self.nodes)?,
            ..Placement::default()
        })
    }

    fn library(&self) -> String {
        let page = self.page();
        let found = self.opened().map(|o| &o.found);
        // The page's own account once a model opened; before that (a model it could not
        // load), the version of the package it imported, so that failure names it too.
        let ort = found
            .and_then(|f| f.get("ortVersion"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(installed_ort_version)
            .unwrap_or_else(|| "?".into());
        let device = match self.backend {
            BrowserBackend::Webgpu => {
                let adapter = found
                    .and_then(|f| f.get("adapter"))
                    .cloned()
                    .unwrap_or(Value::Null);
                format!("WebGPU adapter {adapter}")
            }
            BrowserBackend::Webnn => format!(
                "WebNN deviceType {} asked",
                self.device_type.unwrap_or("default")
            ),
        };
        let bundle = self.backend.ort_bundle();
        let provider = self.backend.ort_provider();
        format!(
            "onnxruntime-web {ort} ({bundle}, {provider}) in {}; {device}",
            page.tab.browser()
        )
    }

    fn threads(&self) -> Threads {
        // The harness sets onnxruntime-web's wasm threads to 1.
        Threads {
            intra_op: 1,
            inter_op: 1,
        }
    }

    fn reusable_for_timing(&self) -> bool {
        true
    }
}

impl Drop for BrowserSession {
    fn drop(&mut self) {
        if let Some(page) = self.page.take() {
            if self.healthy && page.tab.exited().is_none() {
                give_back(page);
            } else {
                page.close();
            }
        }
    }
}

fn last_lines(log: Option<&Value>, n: usize) -> String {
    let lines: Vec<&str> = log
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        " (page log: {})",
        lines[lines.len().saturating_sub(n)..].join(" | ")
    )
}

/// A tensor as the harness takes it: dtype name, shape, little-endian bytes in base64.
fn encode(name: &str, tensor: &Tensor) -> Result<Value, CheckError> {
    let bytes: Vec<u8> = match &tensor.data {
        Data::Float32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::Float16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        Data::Int64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::Int32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::Int8(v) => v.iter().map(|x| *x as u8).collect(),
        Data::Uint8(v) => v.clone(),
        Data::Bool(v) => v.iter().map(|x| u8::from(*x)).collect(),
        Data::Bfloat16(_) => {
            return Err(CheckError::new(
                ErrorKind::RunFailed,
                format!("input {name} is bfloat16, which onnxruntime-web has no tensor type for"),
            ));
        }
    };
    Ok(
        json!({"name": name, "dtype": tensor.dtype().name(), "shape": tensor.shape, "data": BASE64.encode(bytes)}),
    )
}

fn decode(output: &Value) -> Result<(String, Tensor), CheckError> {
    let bad = |m: String| CheckError::new(ErrorKind::RunFailed, m);
    let name = output
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("an output without a name".into()))?;
    let dtype = output.get("dtype").and_then(Value::as_str).unwrap_or("");
    let shape: Vec<usize> = output
        .get("shape")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_u64)
                .map(|d| d as usize)
                .collect()
        })
        .unwrap_or_default();
    let bytes = BASE64
        .decode(output.get("data").and_then(Value::as_str).unwrap_or(""))
        .map_err(|e| bad(format!("output {name}: {e}")))?;
    let data = match dtype {
        "float32" => Data::Float32(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        "float16" => Data::Float16(
            bytes
                .chunks_exact(2)
                .map(|c| f16::from_bits(u16::from_le_bytes(c.try_into().unwrap())))
                .collect(),
        ),
        "int64" => Data::Int64(
            bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        "int32" => Data::Int32(
            bytes
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        "int8" => Data::Int8(bytes.iter().map(|b| *b as i8).collect()),
        "uint8" => Data::Uint8(bytes),
        "bool" => Data::Bool(bytes.iter().map(|b| *b != 0).collect()),
        other => {
            return Err(bad(format!(
                "output {name} has type {other:?}, which hwmatrix does not read"
            )));
        }
    };
    let tensor = Tensor { shape, data };
    let elements: usize = tensor.shape.iter().product();
    if tensor.len() != elements {
        return Err(bad(format!(
            "output {name}: {} elements for shape {:?}",
            tensor.len(),
            tensor.shape
        )));
    }
    Ok((name.to_string(), tensor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_cross_to_the_page_and_back_unchanged() {
        for tensor in [
            Tensor {
                shape: vec![2],
                data: Data::Float32(vec![1.5, -2.0]),
            },
            Tensor {
                shape: vec![1, 2],
                data: Data::Int64(vec![7, -9]),
            },
            Tensor {
                shape: vec![2],
                data: Data::Float16(vec![f16::from_f32(0.5), f16::from_f32(-3.0)]),
            },
            Tensor {
                shape: vec![3],
                data: Data::Bool(vec![true, false, true]),
            },
        ] {
            let (name, back) = decode(&encode("x", &tensor).unwrap()).unwrap();
            assert_eq!((name.as_str(), back), ("x", tensor));
        }
    }

    #[test]
    fn webnn_gets_its_feature_as_the_only_enable_features_switch() {
        let webnn = flags(BrowserBackend::Webnn);
        assert_eq!(
            webnn
                .iter()
                .filter(|f| f.starts_with("--enable-features"))
                .count(),
            1
        );
        assert!(
            !flags(BrowserBackend::Webgpu)
                .iter()
                .any(|f| f.starts_with("--enable-features"))
        );
    }
}
