//! One headless Firefox per test process, driven over WebDriver BiDi (the
//! protocol Firefox speaks to automation since it dropped CDP), for the
//! webgpu platform's `firefox` engine.
//!
//! Debian 12's firefox-esr 140 has no WebGPU at all (release builds before
//! 141 compile it out), so Firefox is Debian unstable's, with Mesa's lavapipe,
//! in a root of its own (`tests/setup.sh firefox`): its libraries are newer
//! than the host's, so it runs chrooted, in a mount namespace of its own that
//! binds the host's /proc and /dev and vanishes with it. It reaches the
//! harness on the host's loopback like Chromium does.
//!
//! BiDi is one WebSocket for the whole browser: commands carry ids, and a
//! thread waiting for its reply reads the socket in short turns, keeping the
//! replies of other threads' commands for them.

use std::collections::HashMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hwmatrix_platforms as platforms;
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use super::process::{BrowserProcess, fresh_profile};
use super::timeout;
use crate::error::{CheckError, ErrorKind};

/// How long one read of the socket blocks before another thread gets a turn.
const READ_TURN: Duration = Duration::from_millis(20);
/// How long a check whose connection broke waits to learn whether Firefox died.
const LOST_GRACE: Duration = Duration::from_secs(2);

/// The preferences every profile gets. WebGPU is behind `dom.webgpu.enabled`
/// on Linux, and the blocklist refuses software adapters such as lavapipe.
const PREFERENCES: &str = r#"user_pref("dom.webgpu.enabled", true);
user_pref("gfx.webgpu.ignore-blocklist", true);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("app.update.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
"#;

/// A running Firefox and the BiDi session with it.
pub struct Firefox {
    pub process: BrowserProcess,
    /// "159.0", from the session's capabilities.
    pub version: String,
    bidi: Bidi,
    /// Harness pages opened in it ([`PAGES_PER_FIREFOX`]).
    pages: AtomicUsize,
    /// Its profile folder, removed when it ends.
    profile: PathBuf,
}

impl Firefox {
    /// Opens `url` in a new tab, within `limit`; returns the tab's context id.
    pub fn new_tab(&self, url: &str, step: &str, limit: Duration) -> Result<String, CheckError> {
        self.process.check_alive()?;
        let created = self.command(
            step,
            "browsingContext.create",
            json!({"type": "tab"}),
            limit,
        )?;
        let context = created
            .get("context")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                CheckError::new(
                    ErrorKind::EngineExited,
                    format!("Firefox created a tab without a context: {created}"),
                )
            })?
            .to_string();
        self.command(
            step,
            "browsingContext.navigate",
            json!({"context": context, "url": url, "wait": "complete"}),
            limit,
        )?;
        Ok(context)
    }

    /// Evaluates `expression` in the tab (awaiting a promise), within
    /// `limit`; the value comes back through JSON, as CDP's by-value results.
    pub fn evaluate(
        &self,
        context: &str,
        step: &str,
        expression: String,
        limit: Duration,
    ) -> Result<Value, CheckError> {
        self.process.check_alive()?;
        let wrapped = format!("(async () => JSON.stringify(await ({expression})))()");
        let reply = self.command(
            step,
            "script.evaluate",
            json!({
                "expression": wrapped,
                "target": {"context": context},
                "awaitPromise": true,
                "resultOwnership": "none",
            }),
            limit,
        )?;
        if reply.get("type").and_then(Value::as_str) == Some("exception") {
            let details = reply.get("exceptionDetails").cloned().unwrap_or_default();
            let text = details
                .get("text")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| details.to_string());
            return Err(CheckError::new(
                ErrorKind::RunFailed,
                format!("{step}: {text}"),
            ));
        }
        match reply.pointer("/result/value").and_then(Value::as_str) {
            Some(json) => serde_json::from_str(json).map_err(|e| {
                CheckError::new(
                    ErrorKind::RunFailed,
                    format!("{step}: the page's JSON: {e}"),
                )
            }),
            // JSON.stringify(undefined) is undefined.
            None => Ok(Value::Null),
        }
    }

    /// Closes a tab, unless the browser is gone.
    pub fn close(&self, context: &str) {
        if self.process.exited().is_none() {
            let _ = self.command(
                "closing the tab",
                "browsingContext.close",
                json!({"context": context}),
                Duration::from_secs(10),
            );
        }
    }

    fn command(
        &self,
        step: &str,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, CheckError> {
        self.bidi.command(method, params, limit).map_err(|failure| {
            if let Failure::Lost(_) = failure {
                // A socket that broke is most often a Firefox that died: give the
                // keeper thread a moment to record how, so the check says so.
                let since = Instant::now();
                while self.process.exited().is_none() && since.elapsed() < LOST_GRACE {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            self.process.explain(match failure {
                Failure::Timeout => timeout(step, limit),
                Failure::Error(message) | Failure::Lost(message) => CheckError::new(
                    ErrorKind::RunFailed,
                    format!("{step}: Firefox's {method}: {message}"),
                ),
            })
        })
    }
}

/// How many harness pages one Firefox serves before the next page gets a
/// fresh one. Each page compiles onnxruntime-web's WebAssembly again, and
/// SpiderMonkey frees that code only when it collects the closed pages, which
/// it had not done by the 27th model's page: from there every page failed to
/// compile it ("wasm streaming compile failed: InternalError: out of
/// memory"). Relaunching costs one Firefox start every 8 models.
const PAGES_PER_FIREFOX: usize = 8;

/// The Firefox the next harness page opens in: this process's current one,
/// or a fresh one when it has served its pages. The one it replaces ends
/// when its last page is closed. One that died is not replaced: every later
/// check fails with how it ended. A failed launch is remembered and
/// reported to every later check.
pub fn for_new_page() -> Result<Arc<Firefox>, CheckError> {
    let mut slot = FIREFOX.lock().unwrap_or_else(|e| e.into_inner());
    let launches = slot.as_ref().map_or(0, |current| current.launches);
    match slot.as_mut().map(|current| &mut current.firefox) {
        Some(Err(failed)) => return Err(failed.clone()),
        // A Firefox that died stays: every later check fails saying how, as with Chromium.
        Some(Ok(firefox))
            if firefox.pages.load(Ordering::Relaxed) < PAGES_PER_FIREFOX
                || firefox.process.exited().is_some() =>
        {
            firefox.pages.fetch_add(1, Ordering::Relaxed);
            return Ok(firefox.clone());
        }
        _ => {}
    }
    let launched = launch(launches).map(Arc::new);
    if let Ok(firefox) = &launched {
        firefox.pages.fetch_add(1, Ordering::Relaxed);
    }
    *slot = Some(Current {
        firefox: launched.clone(),
        launches: launches + 1,
    });
    launched
}

/// This process's current Firefox, and how many it has started.
struct Current {
    firefox: Result<Arc<Firefox>, CheckError>,
    launches: usize,
}

static FIREFOX: Mutex<Option<Current>> = Mutex::new(None);

/// The pid of the Firefox this test process last started, if it started one
/// (for tests that kill it to prove the checks fail cleanly).
pub fn pid() -> Option<u32> {
    let slot = FIREFOX.lock().unwrap_or_else(|e| e.into_inner());
    slot.as_ref()?.firefox.as_ref().ok().map(|f| f.process.pid)
}

impl Drop for Firefox {
    /// A Firefox replaced by a fresh one ends with its last page.
    fn drop(&mut self) {
        self.process.kill();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

const PROFILE_PREFIX: &str = "hwmatrix-firefox-";

fn launch(n: usize) -> Result<Firefox, CheckError> {
    let (root, _) =
        platforms::browser::firefox().map_err(|m| CheckError::new(ErrorKind::PlatformAbsent, m))?;
    // The profile lives in the root's /tmp, where the chrooted Firefox sees it.
    let tmp = root.join("tmp");
    let profile = fresh_profile(&tmp, PROFILE_PREFIX, n);
    std::fs::create_dir_all(&profile)
        .and_then(|_| std::fs::write(profile.join("user.js"), PREFERENCES))
        .map_err(|e| {
            CheckError::new(
                ErrorKind::PlatformAbsent,
                format!("cannot write Firefox's profile {}: {e}", profile.display()),
            )
        })?;
    let in_root = Path::new("/").join(profile.strip_prefix(&root).unwrap_or(&profile));
    let (process, address) =
        BrowserProcess::start("Firefox", &root, command(&root, &in_root), |line| {
            line.strip_prefix("WebDriver BiDi listening on ")
                .map(|url| url.trim().to_string())
        })?;
    // A Firefox that cannot be driven is ended at once, not left until the test process ends.
    let bidi = Bidi::connect(&format!("{address}/session")).map_err(|e| {
        process.kill();
        process.explain(CheckError::new(
            ErrorKind::EngineExited,
            format!("cannot connect to Firefox's WebDriver BiDi at {address}: {e}"),
        ))
    })?;
    let session = bidi
        .command(
            "session.new",
            json!({"capabilities": {}}),
            Duration::from_secs(30),
        )
        .map_err(|failure| {
            process.kill();
            process.explain(CheckError::new(
                ErrorKind::EngineExited,
                format!("Firefox refused a BiDi session: {failure:?}"),
            ))
        })?;
    let version = session
        .pointer("/capabilities/browserVersion")
        .and_then(Value::as_str)
        .unwrap_or("of unknown version");
    Ok(Firefox {
        version: version.to_string(),
        process,
        bidi,
        pages: AtomicUsize::new(0),
        profile,
    })
}

/// Firefox in its root: a private mount namespace (`unshare`), the host's
/// /proc and /dev bound into the root, then `chroot`. Without a GPU, Vulkan
/// gets lavapipe alone (the root's other Mesa drivers would only fail).
fn command(root: &Path, profile: &Path) -> Command {
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind /proc "$0/proc" && mount --rbind /dev "$0/dev" && exec chroot "$0" "$@""#)
        .arg(root)
        .args(["env", "-i", "HOME=/root", "PATH=/usr/bin:/bin", "MOZ_HEADLESS=1"]);
    if platforms::webgpu::software_adapter_only() {
        command.arg("VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.json");
    }
    command
        .arg(Path::new("/").join(platforms::browser::FIREFOX_IN_ROOT))
        .args(["--headless", "--no-remote", "--remote-debugging-port", "0"])
        .arg("--profile")
        .arg(profile)
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

#[derive(Debug)]
enum Failure {
    Timeout,
    /// Firefox's error reply, or one that could not be read.
    Error(String),
    /// The connection itself broke.
    Lost(String),
}

/// A WebDriver BiDi connection shared by the test threads.
struct Bidi {
    socket: Mutex<WebSocket<TcpStream>>,
    next_id: AtomicU64,
    /// Replies read by one thread for another's command, by id.
    replies: Mutex<HashMap<u64, Value>>,
}

impl Bidi {
    fn connect(url: &str) -> Result<Bidi, String> {
        let address = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| format!("not a ws:// address: {url}"))?;
        let stream = TcpStream::connect(address).map_err(|e| e.to_string())?;
        let (socket, _) = tungstenite::client::client(url, stream).map_err(|e| e.to_string())?;
        socket
            .get_ref()
            .set_read_timeout(Some(READ_TURN))
            .map_err(|e| e.to_string())?;
        Ok(Bidi {
            socket: Mutex::new(socket),
            next_id: AtomicU64::new(1),
            replies: Mutex::new(HashMap::new()),
        })
    }

    fn command(&self, method: &str, params: Value, limit: Duration) -> Result<Value, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        let deadline = Instant::now() + limit;
        self.lock()
            .send(Message::text(message))
            .map_err(|e| Failure::Lost(format!("sending: {e}")))?;
        loop {
            let reply = self
                .replies
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            if let Some(reply) = reply {
                return match reply.get("type").and_then(Value::as_str) {
                    Some("success") => Ok(reply.get("result").cloned().unwrap_or_default()),
                    _ => Err(Failure::Error(format!(
                        "{}: {}",
                        reply
                            .get("error")
                            .and_then(Value::as_str)
                            .unwrap_or("error"),
                        reply.get("message").and_then(Value::as_str).unwrap_or("")
                    ))),
                };
            }
            if Instant::now() > deadline {
                return Err(Failure::Timeout);
            }
            let read = self.lock().read();
            match read {
                Ok(Message::Text(text)) => {
                    let value: Value = serde_json::from_str(&text)
                        .map_err(|e| Failure::Error(format!("a reply that is not JSON: {e}")))?;
                    // Events carry no id; nothing here subscribes to them.
                    if let Some(reply_id) = value.get("id").and_then(Value::as_u64) {
                        self.replies
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(reply_id, value);
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(Failure::Lost(format!("the connection failed: {e}"))),
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WebSocket<TcpStream>> {
        self.socket.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where the process's Firefox runs from, for records.
pub fn describe(firefox: &Firefox) -> String {
    platforms::browser::describe_firefox(&firefox.version, &firefox.process.executable)
}
