//! ONNX Runtime through `ort`, loaded at run time from the library of a PyPI
//! wheel (`load-dynamic`: nothing is downloaded at build time).
//!
//! ORT silently falls back to its CPU provider when an execution provider
//! fails to register, and `is_available()` only means "compiled in". So every
//! provider is registered with `error_on_failure()`, and a profiled session's
//! profile says which provider executed each node.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use ort::ep::{self, ArbitrarilyConfigurableExecutionProvider};
use ort::session::{Session as OrtSession, SessionInputValue};
use ort::value::{TensorElementType, TensorRef, ValueType};

use super::{Mode, Placement, Threads};
use crate::ExecutionProvider;
use crate::error::{CheckError, ErrorKind, Kind};
use crate::placement::{GraphNodes, OpPlacement};
use crate::tensor::{Data, Tensor};
use hwmatrix_platforms as platforms;

/// Every session runs on one thread, so timings compare across machines and
/// with Python's onnxruntime under the same setting.
const THREADS: Threads = Threads {
    intra_op: 1,
    inter_op: 1,
};

/// The longest one run may take: a longer one fails its check with a time-out
/// (a video UNet on a software WebGPU adapter takes minutes a run).
const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Models whose run passed RUN_LIMIT in this process, with the message: their
/// later checks fail at once with that measurement, not after another long run.
static TIMED_OUT: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

/// One environment per process: `ort` loads one ONNX Runtime library per
/// process, and each provider's build is a library of its own
/// ([`platforms::onnxruntime_library`]). The first session loads its
/// provider's; a later one whose provider needs another library is refused,
/// never run on the wrong build: each platform's cells run in their own process.
fn environment(
    provider: ExecutionProvider,
) -> Result<(&'static ort::environment::Environment, &'static Path), CheckError> {
    static ENV: OnceLock<Result<(ort::environment::Environment, PathBuf), CheckError>> =
        OnceLock::new();
    if provider == ExecutionProvider::OpenVino {
        super::claim_openvino("ONNX Runtime's OpenVINO provider (onnxruntime-openvino)")?;
    }
    let wanted = library(provider)?;
    let env = ENV.get_or_init(|| {
        let builder = ort::init_from(&wanted).map_err(|e| {
            CheckError::new(
                ErrorKind::LibraryMissing,
                format!("cannot load ONNX Runtime from {}: {e}", wanted.display()),
            )
        })?;
        let env = builder
            .with_name("hwmatrix")
            .build()
            .kind(ErrorKind::LibraryMissing)?;
        Ok((env, wanted.clone()))
    });
    let (env, loaded) = env.as_ref().map_err(Clone::clone)?;
    if *loaded != wanted {
        return Err(CheckError::new(
            ErrorKind::LibraryMissing,
            format!(
                "{} needs ONNX Runtime from {}, but this process already loaded {} for another platform (one library per process): run each platform's cells in a process of its own, e.g. `cargo test -p generated --features <platform> ::<platform>::`",
                provider.ort_name(),
                wanted.display(),
                loaded.display()
            ),
        ));
    }
    Ok((env, loaded.as_path()))
}

/// The library a provider's sessions load, looked up (a scan of its venv) once
/// per provider and process, not at every session a check opens.
fn library(provider: ExecutionProvider) -> Result<PathBuf, CheckError> {
    static FOUND: Mutex<Vec<(ExecutionProvider, Result<PathBuf, String>)>> = Mutex::new(Vec::new());
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    let entry = match found.iter().find(|(p, _)| *p == provider) {
        Some((_, entry)) => entry.clone(),
        None => {
            let entry = platforms::onnxruntime_library(provider);
            found.push((provider, entry.clone()));
            entry
        }
    };
    entry.map_err(|m| CheckError::new(ErrorKind::LibraryMissing, m))
}

/// Named inputs and their axes: the model's, for a provider that builds
/// static graphs (its named dimensions are fixed to each run's sizes).
/// An empty axis name is a fixed size (a cache's head count): nothing to override.
pub type StaticInputs = Vec<(String, Vec<String>)>;

pub struct OnnxSession {
    provider: ExecutionProvider,
    options: &'static [(&'static str, &'static str)],
    model: PathBuf,
    static_inputs: Option<StaticInputs>,
    /// The open session and the dimension sizes it was built for (none for a dynamic one).
    session: Option<(Vec<(String, i64)>, OrtSession)>,
    /// Placements of the static-shape sessions this one replaced (each shape's own graph).
    earlier: Vec<OpPlacement>,
    library: String,
    /// The plugin's device, for records (the adapter a WebGPU session ran on).
    device: Option<String>,
    /// The fixture's account of its graph's nodes, for judging CPU placements.
    nodes: GraphNodes,
    /// Nodes ORT's log says it moved to the CPU on purpose (a WebGPU session's).
    cpu_preferred: Arc<Mutex<HashSet<String>>>,
    mode: Mode,
    /// The profile folders of the sessions this one opened: reading a profile removes its
    /// folder, and dropping this session removes those of profiles never read (a check that
    /// failed before reading where its nodes ran).
    profile_folders: Mutex<Vec<PathBuf>>,
}

impl OnnxSession {
    /// Opens `model` on `provider`. With `static_inputs` (a provider that builds static
    /// graphs: QNN's HTP), a session opens at each run whose input sizes differ from the
    /// last, with the model's named axes fixed to them (`AddFreeDimensionOverrideByName`),
    /// as WebNN's browser sessions do.
    pub fn open(
        provider: ExecutionProvider,
        options: &'static [(&'static str, &'static str)],
        model: &Path,
        mode: Mode,
        static_inputs: Option<StaticInputs>,
        nodes: GraphNodes,
    ) -> Result<OnnxSession, CheckError> {
        let library = described_library(provider)?;
        let device = match plugin(provider)? {
            Some(_) => Some(plugin_devices(provider)?.join("; ")),
            None => None,
        };
        if provider == ExecutionProvider::WebGpu {
            // Left in `Drop`, which runs for this session from here on, even if its build fails.
            claim_context(&fixture_of(model));
        }
        let mut session = OnnxSession {
            provider,
            options,
            model: model.to_path_buf(),
            static_inputs,
            session: None,
            earlier: Vec::new(),
            library,
            device,
            nodes,
            cpu_preferred: Arc::default(),
            mode,
            profile_folders: Mutex::default(),
        };
        if session.static_inputs.is_none() {
            session.session = Some((Vec::new(), session.build(&[])?));
        }
        Ok(session)
    }

    fn build(&self, overrides: &[(String, i64)]) -> Result<OrtSession, CheckError> {
        let (env, library) = environment(self.provider)?;
        let _turn = turn(self.provider);
        if self.provider == ExecutionProvider::WebGpu {
            release_kept_unless(&fixture_of(&self.model));
        }
        let library = library.display();
        fn setup(e: impl std::fmt::Display) -> CheckError {
            CheckError::new(
                ErrorKind::ModelLoad,
                format!("ONNX Runtime session options: {e}"),
            )
        }
        let mut builder = OrtSession::builder(env)
            .map_err(setup)?
            .with_intra_threads(THREADS.intra_op)
            .map_err(setup)?
            .with_inter_threads(THREADS.inter_op)
            .map_err(setup)?;
        for (axis, size) in overrides {
            builder = builder
                .with_dimension_override(axis, *size)
                .map_err(setup)?;
        }
        // A session that fails to open never writes its profile: its folder goes with it.
        let mut unused_profile = UnusedProfileFolder(None);
        if self.mode == Mode::Profiled {
            let prefix = profile_prefix(&self.model)?;
            unused_profile.0 = prefix.parent().map(Path::to_path_buf);
            builder = builder.with_profiling(prefix).map_err(setup)?;
        }
        if self.provider == ExecutionProvider::WebGpu {
            // The session's own log (a logger per session, so parallel tests do
            // not mix): the nodes ORT chose to run on the CPU, as the browser
            // engine reads them from onnxruntime-web's log.
            let found = Arc::clone(&self.cpu_preferred);
            builder = builder
                .with_logger(Arc::new(
                    move |_level, _category, _id, _location, message: &str| {
                        if let Some(node) = cpu_preferred_node(message) {
                            found
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert(node.to_string());
                        }
                    },
                ))
                .map_err(setup)?;
        }
        let name = self.provider.ort_name();
        if plugin(self.provider)?.is_some() {
            // A plugin provider registers through its devices; ORT adds no provider
            // of its own choosing, and the profile still says where each node ran.
            let devices: Vec<_> = env
                .devices()
                .filter(|d| d.ep().ok() == Some(name))
                .collect();
            if devices.is_empty() {
                let found: Vec<String> = env
                    .devices()
                    .filter_map(|d| d.ep().ok().map(str::to_string))
                    .collect();
                return Err(CheckError::new(
                    ErrorKind::ProviderRegistration,
                    format!(
                        "the {name} plugin registered in {library} but offers no device (devices: {found:?})"
                    ),
                ));
            }
            // Option keys carry the provider's prefix; ort drops keys without it silently.
            let options: Vec<(String, String)> = self
                .options
                .iter()
                .map(|(k, v)| (format!("{name}.{k}"), v.to_string()))
                .collect();
            builder = builder.with_devices(devices, Some(&options)).map_err(|e| {
                CheckError::new(
                    ErrorKind::ProviderRegistration,
                    format!(
                        "{name} failed to register in {library} (no CPU fallback is allowed): {e}"
                    ),
                )
            })?;
        } else if let Some(dispatch) = dispatch(self.provider, self.options)? {
            builder = builder.with_execution_providers([dispatch.error_on_failure()]).map_err(|e| {
                CheckError::new(ErrorKind::ProviderRegistration, format!("{name} failed to register in {library} (no CPU fallback is allowed): {e}"))
            })?;
        }
        let session = builder.commit_from_file(&self.model).map_err(|e| {
            let message = format!(
                "cannot load {}: {e}",
                hwmatrix_cell::paths::in_fixtures(&self.model)
            );
            CheckError::new(ErrorKind::ModelLoad.or_adapter_feature(&message), message)
        })?;
        if let Some(folder) = unused_profile.0.take() {
            self.profile_folders
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(folder);
        }
        Ok(session)
    }

    /// The open session for these inputs: a static-shape provider's is rebuilt when
    /// the sizes change (the replaced one's placements are kept for `placement`).
    fn session_for(&mut self, inputs: &[(String, Tensor)]) -> Result<&mut OrtSession, CheckError> {
        if let Some(declared) = &self.static_inputs {
            let mut overrides: Vec<(String, i64)> = Vec::new();
            for (name, axes) in declared {
                if let Some((_, tensor)) = inputs.iter().find(|(n, _)| n == name) {
                    for (axis, size) in axes
                        .iter()
                        .zip(&tensor.shape)
                        .filter(|(a, _)| !a.is_empty())
                    {
                        if !overrides.iter().any(|(a, _)| a == axis) {
                            overrides.push((axis.to_string(), *size as i64));
                        }
                    }
                }
            }
            if self
                .session
                .as_ref()
                .is_none_or(|(open, _)| *open != overrides)
            {
                if let Some((_, mut old)) = self.session.take()
                    && self.mode == Mode::Profiled
                {
                    self.earlier.extend(
                        read_profile(&mut old, self.provider, &self.nodes, &self.cpu_preferred)?
                            .ops,
                    );
                }
                let session = self.build(&overrides)?;
                self.session = Some((overrides, session));
            }
        }
        Ok(&mut self
            .session
            .as_mut()
            .expect("a dynamic session opens with the OnnxSession")
            .1)
    }
}

/// A turn on a provider whose sessions must not be built or run from several
/// threads at once. The WebGPU plugin's Dawn device is one per process:
/// measured, three bert checks in parallel ended the test process with
/// SIGSEGV, while one at a time they pass. Other providers need no turn.
fn turn(provider: ExecutionProvider) -> Option<std::sync::MutexGuard<'static, ()>> {
    static WEBGPU: Mutex<()> = Mutex::new(());
    (provider == ExecutionProvider::WebGpu)
        .then(|| WEBGPU.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The library `provider`'s sessions run in, as records name it (`onnxruntime
/// (<library>)`): ONNX Runtime's, with its plugin and the plugin's wheel where the
/// provider is one (what staleness compares). Known before any session opens, so a
/// check whose model fails to open names the engine that refused it ([`library_of`]).
fn described_library(provider: ExecutionProvider) -> Result<String, CheckError> {
    let (_, library) = environment(provider)?;
    let library = library.display();
    Ok(match plugin(provider)? {
        Some(plugin) => format!(
            "onnxruntime ({library} with the {} plugin {} ({}))",
            provider.ort_name(),
            plugin_wheel(plugin),
            plugin.display()
        ),
        None => format!("onnxruntime ({library})"),
    })
}

/// [`Session::library`] of `provider`'s sessions, without one: for a check that
/// stopped before its session opened (a model the engine cannot load).
pub fn library_of(provider: ExecutionProvider) -> Option<String> {
    described_library(provider).ok()
}

/// The plugin library a provider registers from, registered into the process's
/// environment once (a failed registration is every later session's error too).
/// The wheel a plugin library came with, as `<package> <version>`
/// (`onnxruntime-qnn 2.7.0`, read from its `.dist-info` beside the package
/// folder), or `unknown version` where none is there: what its evidence's
/// staleness compares with the pin (requirements-plugins.txt).
fn plugin_wheel(plugin: &Path) -> String {
    let wheel = (|| {
        let package = plugin.parent()?;
        let name = package.file_name()?.to_str()?;
        let prefix = format!("{name}-");
        let version = std::fs::read_dir(package.parent()?)
            .ok()?
            .flatten()
            .find_map(|entry| {
                let file = entry.file_name().to_string_lossy().into_owned();
                Some(
                    file.strip_prefix(&prefix)?
                        .strip_suffix(".dist-info")?
                        .to_string(),
                )
            })?;
        Some(format!("{} {version}", name.replace('_', "-")))
    })();
    wheel.unwrap_or_else(|| "of unknown version".into())
}

fn plugin(provider: ExecutionProvider) -> Result<Option<&'static Path>, CheckError> {
    static REGISTERED: Mutex<Vec<(ExecutionProvider, Result<&'static Path, CheckError>)>> =
        Mutex::new(Vec::new());
    let Some(path) = platforms::plugin_library(provider) else {
        return Ok(None);
    };
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, outcome)) = registered.iter().find(|(p, _)| *p == provider) {
        return outcome.clone().map(Some);
    }
    let outcome = (|| {
        let path = path.map_err(|m| CheckError::new(ErrorKind::LibraryMissing, m))?;
        let (env, library) = environment(provider)?;
        env.register_ep_library(provider.ort_name(), &path)
            .map_err(|e| {
                CheckError::new(
                    ErrorKind::ProviderRegistration,
                    format!(
                        "cannot register the {} plugin {} into {}: {e}",
                        provider.ort_name(),
                        path.display(),
                        library.display()
                    ),
                )
            })?;
        Ok(&*Box::leak(path.into_boxed_path()))
    })();
    registered.push((provider, outcome.clone()));
    outcome.map(Some)
}

/// The devices a plugin provider offers, as records name them: type, vendor
/// and id of each (a WebGPU adapter's vendor is the GPU's, or the software
/// rasterizer's), and whether the user allowed a software adapter.
fn plugin_devices(provider: ExecutionProvider) -> Result<Vec<String>, CheckError> {
    let (env, _) = environment(provider)?;
    let name = provider.ort_name();
    let mut devices: Vec<String> = env
        .devices()
        .filter(|d| d.ep().ok() == Some(name))
        .map(|d| {
            let hw = d.hardware_device();
            format!(
                "{name} device: {:?}, vendor {}, id {:#x}",
                hw.ty(),
                hw.vendor().unwrap_or("?"),
                hw.id()
            )
        })
        .collect();
    if provider == ExecutionProvider::WebGpu
        && std::env::var_os(platforms::webgpu::ALLOW_SOFTWARE_ADAPTER).is_some_and(|v| v == "1")
    {
        devices.push(format!(
            "software adapter allowed ({}=1)",
            platforms::webgpu::ALLOW_SOFTWARE_ADAPTER
        ));
    }
    Ok(devices)
}

/// The node of ORT's "EP optimization: Force fallback to CPU execution for node
/// X because the CPU execution path is deemed faster ..." (its warning when it
/// moves a small node to the CPU on purpose).
pub fn cpu_preferred_node(message: &str) -> Option<&str> {
    const MARK: &str = "Force fallback to CPU execution for node ";
    let rest = &message[message.find(MARK)? + MARK.len()..];
    rest.split(" because ")
        .next()
        .map(str::trim)
        .filter(|n| !n.is_empty())
}

/// The placements of a session's runs so far. WebGPU's provider (the native
/// plugin) leaves nodes to the CPU provider by design, as in the browser; they
/// are judged by the browser engine's rule ([`GraphNodes::cpu_exemption`]),
/// with the nodes the session's log says ORT preferred on the CPU. Every
/// other provider must run every node.
fn read_profile(
    session: &mut OrtSession,
    provider: ExecutionProvider,
    nodes: &GraphNodes,
    cpu_preferred: &Mutex<HashSet<String>>,
) -> Result<Placement, CheckError> {
    let unverified = |message: String| CheckError::new(ErrorKind::ProviderUnverified, message);
    let turn = turn(provider);
    let profile = session
        .end_profiling()
        .map_err(|e| unverified(format!("cannot end profiling: {e}")))?;
    let text = std::fs::read_to_string(&profile)
        .map_err(|e| unverified(format!("cannot read ORT profile {profile}: {e}")))?;
    drop(turn);
    let _ = std::fs::remove_file(&profile);
    // The session's own profile folder ([`profile_prefix`]) goes with it.
    if let Some(folder) = Path::new(&profile).parent() {
        let _ = std::fs::remove_dir(folder);
    }
    let preferred = cpu_preferred.lock().unwrap_or_else(|e| e.into_inner());
    let candidates: HashSet<&str> = preferred.iter().map(String::as_str).collect();
    let exempt = |op: &str, node: &str, ran_on: &str| match provider {
        ExecutionProvider::WebGpu if ran_on == ExecutionProvider::Cpu.ort_name() => {
            nodes.cpu_exemption(op, node, &candidates)
        }
        _ => None,
    };
    parse_profile(&text, &exempt).map_err(unverified)
}

/// The profile folder of a session being opened, removed unless the session
/// opened (then reading its profile, or dropping the [`OnnxSession`], removes
/// it): a session that failed to open, at its provider or its model, left an
/// empty folder in the temporary directory on every failure.
struct UnusedProfileFolder(Option<PathBuf>);

impl Drop for UnusedProfileFolder {
    fn drop(&mut self) {
        if let Some(folder) = &self.0 {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

/// ORT names a profile `<prefix>_<time in ms>.json`. Each session gets a
/// folder of its own (a per-process counter), which reading its profile
/// removes: a folder shared by the process's sessions could not be removed
/// while another session's profile is yet to be written into it.
fn profile_prefix(model: &Path) -> Result<PathBuf, CheckError> {
    static SESSIONS: AtomicUsize = AtomicUsize::new(0);
    let session = SESSIONS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "hwmatrix-ort-profile-{}-{session}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| {
        CheckError::new(
            ErrorKind::ProviderUnverified,
            format!("{}: {e}", dir.display()),
        )
    })?;
    let model_name = model
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("model");
    Ok(dir.join(model_name))
}

/// The strict registration of each provider, with hardware.yaml's options;
/// CPU needs none (it is always there).
fn dispatch(
    provider: ExecutionProvider,
    options: &[(&str, &str)],
) -> Result<Option<ep::ExecutionProviderDispatch>, CheckError> {
    fn configured<E: ArbitrarilyConfigurableExecutionProvider>(
        mut ep: E,
        options: &[(&str, &str)],
    ) -> E {
        for (key, value) in options {
            ep = ep.with_arbitrary_config(key, value);
        }
        ep
    }
    let no_options = |name: &str| {
        if options.is_empty() {
            Ok(())
        } else {
            Err(CheckError::new(
                ErrorKind::ProviderRegistration,
                format!(
                    "hardware.yaml gives {name} options {options:?}, but ort cannot pass free-form options to it; remove them"
                ),
            ))
        }
    };
    Ok(Some(match provider {
        ExecutionProvider::Cpu => {
            no_options("CPUExecutionProvider")?;
            return Ok(None);
        }
        ExecutionProvider::Cuda => configured(ep::CUDA::default(), options).build(),
        ExecutionProvider::TensorRt => configured(ep::TensorRT::default(), options).build(),
        ExecutionProvider::MiGraphX => {
            no_options("MIGraphXExecutionProvider")?;
            ep::MIGraphX::default().build()
        }
        ExecutionProvider::CoreMl => configured(ep::CoreML::default(), options).build(),
        ExecutionProvider::OpenVino => configured(ep::OpenVINO::default(), options).build(),
        ExecutionProvider::Qnn => configured(ep::QNN::default(), options).build(),
        ExecutionProvider::WebGpu => {
            return Err(CheckError::new(
                ErrorKind::ProviderRegistration,
                "WebGpuExecutionProvider registers as a plugin (onnxruntime-ep-webgpu), not compiled into an ONNX Runtime build",
            ));
        }
    }))
}

impl Drop for OnnxSession {
    /// Sessions are released in turn too, where the provider needs turns; a
    /// WebGPU session is kept for the next check of its model ([`keep`]).
    fn drop(&mut self) {
        let turn = turn(self.provider);
        if let Some((_, session)) = self.session.take() {
            if self.provider == ExecutionProvider::WebGpu {
                keep(fixture_of(&self.model), session);
            } else {
                // Released before its folder goes: ORT may write an unread profile as it ends.
                drop(session);
                let folders = self.profile_folders.get_mut();
                for folder in folders.unwrap_or_else(|e| e.into_inner()).drain(..) {
                    let _ = std::fs::remove_dir_all(folder);
                }
            }
        }
        drop(turn);
        if self.provider == ExecutionProvider::WebGpu {
            leave_context();
        }
    }
}

/// Which model's WebGPU sessions hold the plugin's context, and how many of
/// them are open. A context shared across models gave results that depend on
/// the models run before (see [`KEPT`]), so a session of another model waits
/// until every open session of the current one is dropped, whatever the
/// number of test threads: with several, one model's checks still run side by
/// side (in turn) while the other models' wait.
struct Context {
    fixture: Option<PathBuf>,
    open: usize,
}

static CONTEXT: Mutex<Context> = Mutex::new(Context {
    fixture: None,
    open: 0,
});
static CONTEXT_FREED: Condvar = Condvar::new();

/// Claims the WebGPU context for a session of `fixture`'s model: waits while
/// sessions of another model are open. Every claim is left in `Drop`.
fn claim_context(fixture: &Path) {
    let mut context = CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    while context.open > 0 && context.fixture.as_deref() != Some(fixture) {
        context = CONTEXT_FREED
            .wait(context)
            .unwrap_or_else(|e| e.into_inner());
    }
    context.fixture = Some(fixture.to_path_buf());
    context.open += 1;
}

/// Leaves a claim: the last open session of a model lets the waiting ones in.
fn leave_context() {
    let mut context = CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    context.open -= 1;
    if context.open == 0 {
        CONTEXT_FREED.notify_all();
    }
}

/// The WebGPU session kept after its check, and the fixture it is of. The
/// plugin's context (its compiled pipelines, its buffer caches) lives while a
/// session uses it. Kept across a model's checks, the model compiles once
/// (bert and roberta's three checks each: 15.6 s when every session compiled
/// its own, 3.7 s when kept). Never across models: kept for a whole run, later
/// models' results depended on what ran before (aya_vision's last_hidden_state
/// off by 1.47 after 400 models in one process, 1.7e-6 alone, in our harness
/// and in Python), so a session of another model releases it first, once no
/// session of this model is open ([`claim_context`]), and the context starts afresh.
static KEPT: Mutex<Option<(PathBuf, OrtSession)>> = Mutex::new(None);

fn keep(fixture: PathBuf, session: OrtSession) {
    *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = Some((fixture, session));
}

/// Releases the kept session unless it is of `fixture`. Called in turn.
fn release_kept_unless(fixture: &Path) {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if kept.as_ref().is_some_and(|(of, _)| of != fixture) {
        kept.take();
    }
}

/// The fixture folder of a model file (its variants share it).
fn fixture_of(model: &Path) -> PathBuf {
    model.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl super::Session for OnnxSession {
    fn run(&mut self, inputs: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>, CheckError> {
        let model = self.model.clone();
        if let Some(earlier) = TIMED_OUT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(m, _)| *m == model)
        {
            return Err(CheckError::new(
                ErrorKind::Timeout,
                format!(
                    "{} (measured by an earlier check in this process; not run again)",
                    earlier.1
                ),
            ));
        }
        let provider = self.provider;
        let session = self.session_for(inputs)?;
        // Only the graph's inputs: an exporter drops an input the traced model never read
        // (the legacy exporter does), and the reference does not depend on it.
        let values: Vec<(&str, SessionInputValue<'_>)> = inputs
            .iter()
            .filter(|(name, _)| session.inputs().iter().any(|i| i.name() == name))
            .map(|(name, t)| to_ort(t).map(|v| (name.as_str(), v)))
            .collect::<Result<_, _>>()?;
        let _turn = turn(provider);
        let started = std::time::Instant::now();
        let outputs = session.run(values).map_err(|e| {
            let message = format!("ONNX Runtime run failed: {e}");
            // WebGPU compiles a node's shader at its first run: an adapter without
            // shader-f16 (SwiftShader) refuses a float16 graph here, not at load.
            CheckError::new(ErrorKind::RunFailed.or_adapter_feature(&message), message)
        })?;
        let took = started.elapsed();
        if took > RUN_LIMIT {
            let message = format!(
                "a run took {:.0} s, over the limit of {} s for one run ({}; the run was measured to its end: ORT's terminate flag crashes the WebGPU plugin)",
                took.as_secs_f64(),
                RUN_LIMIT.as_secs(),
                provider.ort_name()
            );
            TIMED_OUT
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((model, message.clone()));
            return Err(CheckError::new(ErrorKind::Timeout, message));
        }
        outputs
            .iter()
            .map(|(name, value)| from_ort(&value).map(|t| (name.to_string(), t)))
            .collect()
    }

    fn placement(&mut self) -> Result<Placement, CheckError> {
        if self.mode != Mode::Profiled {
            return Err(CheckError::new(
                ErrorKind::ProviderUnverified,
                "placement asked of a session opened without profiling",
            ));
        }
        let Some((_, session)) = self.session.as_mut() else {
            return Err(CheckError::new(
                ErrorKind::ProviderUnverified,
                "placement asked before any run (a static-shape session opens at its first run)",
            ));
        };
        let mut placement = read_profile(session, self.provider, &self.nodes, &self.cpu_preferred)?;
        placement.ops.splice(0..0, self.earlier.drain(..));
        Ok(placement)
    }

    fn library(&self) -> String {
        self.library.clone()
    }

    fn device(&self) -> Option<String> {
        self.device.clone()
    }

    fn untimed(&self) -> Option<String> {
        let software =
            self.provider == ExecutionProvider::WebGpu && plugin_on_cpu_only(self.provider);
        software.then(|| {
            "not timed: the WebGPU plugin's only adapter is a software one (a CPU device: SwiftShader where no GPU is), whose times say nothing of a GPU's".to_string()
        })
    }

    fn threads(&self) -> Threads {
        THREADS
    }
}

/// Whether every device a plugin provider offers is a CPU: the WebGPU
/// plugin reports a software adapter (SwiftShader) as one.
fn plugin_on_cpu_only(provider: ExecutionProvider) -> bool {
    let Ok((env, _)) = environment(provider) else {
        return false;
    };
    let name = provider.ort_name();
    let mut devices = env
        .devices()
        .filter(|d| d.ep().ok() == Some(name))
        .peekable();
    devices.peek().is_some()
        && devices.all(|d| d.hardware_device().ty() == ort::memory::DeviceType::CPU)
}

/// Per-operator placement and arena figures from an ORT profile (Chrome trace
/// JSON). Each node's `*_kernel_time` event names its provider and op; the
/// fence events around it carry neither and are skipped.
/// `exempt` may clear a node that ran off the requested provider (by op, node
/// name and provider), as the engine's own evidence allows.
pub fn parse_profile(
    profile_json: &str,
    exempt: &dyn Fn(&str, &str, &str) -> Option<&'static str>,
) -> Result<Placement, String> {
    let events: Vec<serde_json::Value> =
        serde_json::from_str(profile_json).map_err(|e| format!("ORT profile is not JSON: {e}"))?;
    let mut ops: BTreeMap<(String, String, Option<&'static str>), (usize, u64)> = BTreeMap::new();
    let mut placement = Placement::default();
    for event in events
        .iter()
        .filter(|e| e.get("cat").and_then(|c| c.as_str()) == Some("Node"))
    {
        let args = |key: &str| {
            event
                .pointer(&format!("/args/{key}"))
                .and_then(|v| v.as_str())
        };
        let Some(provider) = args("provider") else {
            continue;
        };
        let op = args("op_name").unwrap_or("?");
        let name = event.get("name").and_then(|n| n.as_str()).unwrap_or("");
        let node = name.strip_suffix("_kernel_time").unwrap_or(name);
        let entry = ops
            .entry((
                op.to_string(),
                provider.to_string(),
                exempt(op, node, provider),
            ))
            .or_default();
        entry.0 += 1;
        entry.1 += event.get("dur").and_then(|d| d.as_u64()).unwrap_or(0);
        let number = |key: &str| args(key).and_then(|v| v.parse::<u64>().ok());
        if let Some(held) = number("mem_arena_held") {
            placement.arena_held_bytes = Some(placement.arena_held_bytes.unwrap_or(0).max(held));
        }
        if let Some(peak) = number("mem_in_use_peak") {
            placement.arena_in_use_peak_bytes =
                Some(placement.arena_in_use_peak_bytes.unwrap_or(0).max(peak));
        }
    }
    if ops.is_empty() {
        return Err(
            "the ORT profile records no node executions, so the provider cannot be verified".into(),
        );
    }
    placement.ops = ops
        .into_iter()
        .map(|((op, provider, exempt), (nodes, kernel_us))| OpPlacement {
            op,
            provider,
            nodes,
            kernel_us,
            exempt,
        })
        .collect();
    Ok(placement)
}

/// A view of the tensor's own buffer: ORT reads the inputs in place, as
/// Python's onnxruntime reads numpy arrays, with no copy per run.
fn to_ort(tensor: &Tensor) -> Result<SessionInputValue<'_>, CheckError> {
    let shape: Vec<i64> = tensor.shape.iter().map(|&d| d as i64).collect();
    fn view<T: ort::value::PrimitiveTensorElementType + Clone + std::fmt::Debug + 'static>(
        shape: Vec<i64>,
        data: &[T],
    ) -> ort::Result<SessionInputValue<'_>> {
        TensorRef::from_array_view((shape, data)).map(SessionInputValue::from)
    }
    let value = match &tensor.data {
        Data::Float32(v) => view(shape, v),
        Data::Float16(v) => view(shape, v),
        Data::Bfloat16(v) => view(shape, v),
        Data::Int64(v) => view(shape, v),
        Data::Int32(v) => view(shape, v),
        Data::Int8(v) => view(shape, v),
        Data::Uint8(v) => view(shape, v),
        Data::Bool(v) => view(shape, v),
    };
    value.map_err(|e| {
        CheckError::new(
            ErrorKind::RunFailed,
            format!("cannot build input tensor: {e}"),
        )
    })
}

fn from_ort(value: &ort::value::DynValueRef<'_>) -> Result<Tensor, CheckError> {
    let mismatch = |message: String| CheckError::new(ErrorKind::OutputMismatch, message);
    let ty = match value.dtype() {
        ValueType::Tensor { ty, .. } => *ty,
        other => return Err(mismatch(format!("output is not a tensor but {other:?}"))),
    };
    fn extract<T: ort::value::PrimitiveTensorElementType + Clone>(
        value: &ort::value::DynValueRef<'_>,
    ) -> Result<(Vec<usize>, Vec<T>), CheckError> {
        let (shape, data) = value.try_extract_tensor::<T>().kind(ErrorKind::RunFailed)?;
        Ok((shape.iter().map(|&d| d as usize).collect(), data.to_vec()))
    }
    let (shape, data) = match ty {
        TensorElementType::Float32 => extract::<f32>(value).map(|(s, d)| (s, Data::Float32(d)))?,
        TensorElementType::Float16 => {
            extract::<crate::tensor::f16>(value).map(|(s, d)| (s, Data::Float16(d)))?
        }
        TensorElementType::Bfloat16 => {
            extract::<crate::tensor::bf16>(value).map(|(s, d)| (s, Data::Bfloat16(d)))?
        }
        TensorElementType::Int64 => extract::<i64>(value).map(|(s, d)| (s, Data::Int64(d)))?,
        TensorElementType::Int32 => extract::<i32>(value).map(|(s, d)| (s, Data::Int32(d)))?,
        TensorElementType::Int8 => extract::<i8>(value).map(|(s, d)| (s, Data::Int8(d)))?,
        TensorElementType::Uint8 => extract::<u8>(value).map(|(s, d)| (s, Data::Uint8(d)))?,
        TensorElementType::Bool => extract::<bool>(value).map(|(s, d)| (s, Data::Bool(d)))?,
        other => {
            return Err(mismatch(format!(
                "output element type {other:?} is not one hwmatrix compares (float32, float16, bfloat16, int64, int32, int8, uint8, bool)"
            )));
        }
    };
    Ok(Tensor { shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WebGPU context is one model's at a time, whatever the test threads:
    /// another model's session waits until this model's open sessions are gone,
    /// while this model's own join at once.
    #[test]
    fn a_webgpu_session_of_another_model_waits_until_this_models_are_gone() {
        let (a, b) = (
            Path::new("/fixtures/claims/a"),
            Path::new("/fixtures/claims/b"),
        );
        claim_context(a);
        let (entered, waited) = std::sync::mpsc::channel();
        let other = std::thread::spawn(move || {
            claim_context(b);
            entered.send(()).unwrap();
            leave_context();
        });
        let wait = std::time::Duration::from_millis(300);
        assert!(
            waited.recv_timeout(wait).is_err(),
            "a session of model b was built while one of model a was open"
        );
        claim_context(a);
        leave_context();
        assert!(
            waited.recv_timeout(wait).is_err(),
            "model b entered while model a still had a session open"
        );
        leave_context();
        waited
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("model b never entered after model a's sessions were gone");
        other.join().unwrap();
    }

    #[test]
    fn reads_placement_and_arena_from_a_profile() {
        let profile = r#"[
          {"cat":"Session","name":"model_run","args":{}},
          {"cat":"Node","name":"MatMul_fence_before","dur":0,"args":{"op_name":"MatMul"}},
          {"cat":"Node","name":"MatMul_kernel_time","dur":40,"args":{"provider":"CPUExecutionProvider","op_name":"MatMul","mem_arena_held":"2048","mem_in_use_peak":"700"}},
          {"cat":"Node","name":"Add_kernel_time","dur":5,"args":{"provider":"CUDAExecutionProvider","op_name":"Add","mem_arena_held":"1024","mem_in_use_peak":"900"}},
          {"cat":"Node","name":"Add2_kernel_time","dur":6,"args":{"provider":"CUDAExecutionProvider","op_name":"Add"}}
        ]"#;
        let placement = parse_profile(profile, &|_, _, _| None).unwrap();
        assert_eq!(
            placement.ops,
            vec![
                OpPlacement {
                    op: "Add".into(),
                    provider: "CUDAExecutionProvider".into(),
                    nodes: 2,
                    kernel_us: 11,
                    exempt: None
                },
                OpPlacement {
                    op: "MatMul".into(),
                    provider: "CPUExecutionProvider".into(),
                    nodes: 1,
                    kernel_us: 40,
                    exempt: None
                },
            ]
        );
        assert_eq!(
            (
                placement.arena_held_bytes,
                placement.arena_in_use_peak_bytes
            ),
            (Some(2048), Some(900))
        );
        assert!(parse_profile("not json", &|_, _, _| None).is_err());
        assert_eq!(
            cpu_preferred_node(
                "EP optimization: Force fallback to CPU execution for node /model/And because the CPU execution path is deemed faster than overhead"
            ),
            Some("/model/And")
        );
        assert_eq!(
            cpu_preferred_node("Some nodes were not assigned to the preferred execution providers"),
            None
        );
        assert!(parse_profile(r#"[{"cat":"Session","args":{}}]"#, &|_, _, _| None).is_err());
    }
}
