// The code that decides a check's verdict on each engine, and its digest.
// Included as is by the runtime's build script (which bakes each engine's
// digest into the records its checks write) and by hwmatrix-cell (with which
// gen computes today's digest from the checkout to compare a stored entry
// with): one list, one digest, std only.
//
// An entry measured by other verdict code than today's is stale: a change to
// the comparison, the check's flow, who-failed's rules or the engine's adapter
// may change the outcome it recorded. Comments and blank lines are left out,
// so editing a comment stales nothing.

/// The files every engine's verdict goes through, relative to runtime/.
const VERDICT_CODE_COMMON: &[&str] = &[
    "src/checks.rs",
    "src/compare.rs",
    "src/engine/mod.rs",
    "src/error.rs",
    "src/fixture.rs",
    "src/generation.rs",
    "src/isolation.rs",
    "src/npy.rs",
    "src/placement.rs",
    "src/tensor.rs",
    "cell/src/error_kind.rs",
];

const BROWSER_CODE: &[&str] = &[
    "src/engine/browser/chromium.rs",
    "src/engine/browser/harness.html",
    "src/engine/browser/harness.mjs",
    "src/engine/browser/mod.rs",
    "src/engine/browser/ort_log.rs",
    "src/engine/browser/process.rs",
    "src/engine/browser/server.rs",
    "src/engine/browser/steps.rs",
];

/// Each engine (its `EngineKind` name) with the files of its own adapter.
const VERDICT_CODE_ENGINES: &[(&str, &[&str])] = &[
    ("onnxruntime", &["src/engine/onnx.rs"]),
    ("libtorch", &["src/engine/torch.rs"]),
    ("openvino", &["src/engine/openvino.rs"]),
    ("openvino_pytorch", &["src/engine/openvino.rs"]),
    (
        "wgpu",
        &[
            "src/engine/wgpu/mod.rs",
            "src/engine/wgpu/quantized_linear.wgsl",
            "src/quant/check.rs",
            "src/quant/mod.rs",
        ],
    ),
    ("browser", BROWSER_CODE),
    ("firefox", BROWSER_CODE),
];

/// The files that decide a verdict on `engine`, relative to runtime/; None
/// for an engine the list does not name.
fn verdict_code_files(engine: &str) -> Option<Vec<&'static str>> {
    let (name, own) = VERDICT_CODE_ENGINES.iter().find(|(name, _)| *name == engine)?;
    let mut files: Vec<&'static str> = VERDICT_CODE_COMMON.to_vec();
    files.extend(own.iter());
    if *name == "firefox" {
        files.push("src/engine/browser/firefox.rs");
    }
    files.sort_unstable();
    Some(files)
}

/// The digest (16 hex digits of 64-bit FNV-1a: it tells versions of our code
/// apart, it guards nothing) of the code lines of `engine`'s verdict files
/// under `runtime_dir`: each file's name, then its lines trimmed, without
/// blank lines and `//` comments.
fn verdict_code_digest(runtime_dir: &std::path::Path, engine: &str) -> std::io::Result<String> {
    let files = verdict_code_files(engine).ok_or_else(|| {
        std::io::Error::other(format!("no verdict code is listed for the engine {engine}"))
    })?;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in files {
        let text = std::fs::read_to_string(runtime_dir.join(file))?;
        feed(file.as_bytes());
        feed(b"\n");
        for line in text.lines().map(str::trim) {
            if !line.is_empty() && !line.starts_with("//") {
                feed(line.as_bytes());
                feed(b"\n");
            }
        }
    }
    Ok(format!("{hash:016x}"))
}
