// The harness's side of the browser engine (runtime/src/engine/browser/mod.rs):
// opens a model with onnxruntime-web on one execution provider, runs it on
// inputs the engine sends, and hands back the outputs and ORT's own log.
// Every function resolves to {ok: true, ...} or {ok: false, error}; nothing
// here judges a result, the Rust checks do.
// The onnxruntime-web bundle comes from the page's URL (`?bundle=`): the
// engine picks it per backend (BrowserBackend::ort_bundle in
// runtime/cell/src/decl.rs), ort.webgpu.min.mjs for WebGPU's C++ provider.
const bundle = new URLSearchParams(location.search).get("bundle");
if (!/^ort\.[a-z.]*min\.mjs$/.test(bundle ?? "")) throw new Error(`harness.html needs ?bundle=<an onnxruntime-web bundle>, got ${bundle}`);
const ort = await import(`/ort/${bundle}`);

const TYPES = {
  float32: Float32Array,
  float16: Uint16Array, // the bits; onnxruntime-web takes and gives Uint16Array
  int64: BigInt64Array,
  int32: Int32Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
};

function decode(b64) {
  const binary = atob(b64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function encode(bytes) {
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + chunk));
  return btoa(binary);
}

function toTensor(input) {
  const Array = TYPES[input.dtype];
  if (!Array) throw new Error(`the harness cannot pass a ${input.dtype} tensor`);
  const bytes = decode(input.data);
  const data = new Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array.BYTES_PER_ELEMENT);
  return new ort.Tensor(input.dtype, data, input.shape);
}

function fromTensor(name, tensor) {
  const data = tensor.data;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return { name, dtype: tensor.type, shape: Array.from(tensor.dims), data: encode(bytes) };
}

// What this browser lacks (no WebGPU adapter, no WebNN context): the
// machine's, not the model's; the engine reports it as such.
class Missing extends Error {}

async function environment(backend, deviceType) {
  const found = { crossOriginIsolated: self.crossOriginIsolated, userAgent: navigator.userAgent, ortVersion: ort.env.versions?.web, bundle };
  if (backend === "webgpu") {
    if (!navigator.gpu) throw new Missing("this browser has no navigator.gpu (WebGPU is off: Chromium needs --enable-unsafe-webgpu on Linux, Firefox dom.webgpu.enabled)");
    let adapter;
    try {
      adapter = await navigator.gpu.requestAdapter();
    } catch (e) {
      throw new Missing(`navigator.gpu.requestAdapter() rejected: ${e?.name ?? "Error"}: ${e?.message ?? e}`);
    }
    if (!adapter) throw new Missing("no WebGPU adapter: navigator.gpu.requestAdapter() returned null (no Vulkan driver, or no software adapter in this browser)");
    const info = adapter.info ?? {};
    found.adapter = { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description, isFallbackAdapter: info.isFallbackAdapter ?? adapter.isFallbackAdapter, shaderF16: adapter.features.has("shader-f16") };
  } else if (backend === "webnn") {
    if (!navigator.ml) throw new Missing("this Chromium has no navigator.ml (WebNN): it needs a build with WebNN and --enable-features=WebMachineLearningNeuralNetwork");
    try {
      await navigator.ml.createContext({ deviceType });
    } catch (e) {
      throw new Missing(`no WebNN context for deviceType ${deviceType}: ${e.message ?? e}`);
    }
    found.webnn = { deviceType };
  }
  return found;
}

// A promise onnxruntime-web starts and never awaits can reject unhandled, and
// then the call it belongs to never settles: WebNN's graph build refusing a
// graph ("The tensor byte length is over the limit") left the session's
// creation pending until the engine's time limit, which read as a hang of
// this machine's. Each call here fails with that rejection instead.
let onUnhandled = null;
window.addEventListener("unhandledrejection", (e) => onUnhandled?.(e.reason));

async function settledOrUnhandled(promise, what) {
  const unhandled = new Promise((_, reject) => {
    onUnhandled = (reason) =>
      reject(new Error(`${what} never settled: onnxruntime-web left a promise rejected and unhandled: ${reason?.name ?? "Error"}: ${reason?.message ?? reason}`));
  });
  try {
    return await Promise.race([promise, unhandled]);
  } finally {
    onUnhandled = null;
  }
}

let session = null;

window.hwmatrix = {
  ready: true,

  // Opens the model on one provider. `overrides` fixes named dimensions
  // (WebNN builds static graphs); ORT logs where each node was placed.
  async open({ model, backend, deviceType, overrides }) {
    try {
      const found = await environment(backend, deviceType);
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.wasmPaths = "/ort/";
      ort.env.logLevel = "verbose";
      const provider = backend === "webnn" ? { name: "webnn", deviceType } : { name: backend };
      const logStart = window.hwmatrixLog.length;
      const started = performance.now();
      // The page's last session (another model's, or this one's at other
      // static shapes) goes first, and ORT's WebGPU context with it (its
      // device, compiled pipelines and buffers live while a session holds
      // them): a context shared across models gave results that depend on the
      // models run before (docs/platforms.md).
      await session?.release();
      session = null;
      session = await settledOrUnhandled(
        ort.InferenceSession.create(model, {
          executionProviders: [provider],
          freeDimensionOverrides: overrides ?? {},
          logSeverityLevel: 0,
          logVerbosityLevel: 0,
          graphOptimizationLevel: "all",
        }),
        "creating the session",
      );
      const openMs = performance.now() - started;
      return { ok: true, openMs, found, log: window.hwmatrixLog.slice(logStart), inputNames: session.inputNames, outputNames: session.outputNames };
    } catch (e) {
      return { ok: false, error: String(e?.message ?? e), missing: e instanceof Missing, log: window.hwmatrixLog.slice(-40) };
    }
  },

  // Runs the open session. With `timeOnly`, returns the time of session.run
  // alone (no transfer of outputs back to the engine).
  async run({ inputs, timeOnly }) {
    try {
      if (!session) throw new Error("no session is open in this page");
      const feeds = {};
      // Only the graph's inputs: an exporter drops an input the traced model never read.
      for (const input of inputs) if (session.inputNames.includes(input.name)) feeds[input.name] = toTensor(input);
      const started = performance.now();
      const results = await settledOrUnhandled(session.run(feeds, { logSeverityLevel: 3 }), "the run");
      const ms = performance.now() - started;
      if (timeOnly) return { ok: true, ms };
      const outputs = session.outputNames.map((name) => fromTensor(name, results[name]));
      return { ok: true, ms, outputs };
    } catch (e) {
      return { ok: false, error: String(e?.message ?? e), log: window.hwmatrixLog.slice(-40) };
    }
  },
};
