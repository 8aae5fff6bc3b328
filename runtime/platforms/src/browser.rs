//! The browser engine: onnxruntime-web in Chromium, with its WebGPU or WebNN
//! backend.

use std::path::{Path, PathBuf};

use hwmatrix_cell::{BrowserBackend, paths};

use crate::Availability;
use crate::files::is_file;

pub fn detect(backend: BrowserBackend) -> Availability {
    match (browser_executable(backend), onnxruntime_web_dist()) {
        (Ok(chromium), Ok(_)) => Availability::Present(format!(
            "Chromium at {} with onnxruntime-web",
            chromium.display()
        )),
        (Err(missing), _) | (_, Err(missing)) => Availability::Absent(missing),
    }
}

/// Firefox in its root with onnxruntime-web (the webgpu platform's `firefox` engine).
pub fn detect_firefox() -> Availability {
    match (firefox(), onnxruntime_web_dist()) {
        (Ok((root, version)), Ok(_)) => Availability::Present(format!(
            "Firefox {version} chrooted in {} with onnxruntime-web{}",
            root.display(),
            if crate::webgpu::software_adapter_only() {
                "; no GPU here: Vulkan is the root's lavapipe, a software adapter"
            } else {
                ""
            }
        )),
        (Err(missing), _) | (_, Err(missing)) => Availability::Absent(missing),
    }
}

/// The onnxruntime-web the browser cells load: its `dist/` folder in the
/// web platforms' npm install ([`paths::web_dir`]).
pub fn onnxruntime_web_dist() -> Result<PathBuf, String> {
    let dist = paths::web_dir().join("node_modules/onnxruntime-web/dist");
    let bundles = [
        BrowserBackend::Webgpu.ort_bundle(),
        BrowserBackend::Webnn.ort_bundle(),
    ];
    if bundles.iter().all(|bundle| dist.join(bundle).is_file()) {
        Ok(dist)
    } else {
        Err(format!(
            "no onnxruntime-web at {}: `bash tests/run.sh` installs it (npm ci from runtime/web/package.json into {}), or set HWMATRIX_WEB to a folder holding node_modules/onnxruntime-web",
            dist.display(),
            paths::web_dir().display()
        ))
    }
}

/// The Chromium a browser backend runs in. WebGPU: `HWMATRIX_CHROMIUM`, else
/// a `chromium` on PATH (Debian's package has WebGPU with
/// `--enable-unsafe-webgpu`). WebNN: Debian's build has none, so
/// `HWMATRIX_WEBNN_CHROMIUM`, else the npm package @sparticuz/chromium's
/// binary, unpacked by the set-up to `<web>/chromium-webnn/chromium`.
pub fn browser_executable(backend: BrowserBackend) -> Result<PathBuf, String> {
    match backend {
        BrowserBackend::Webgpu => find_chromium().ok_or_else(|| {
            "no Chromium for WebGPU: install Debian's `chromium` package (`bash tests/run.sh` does, as root on Debian) or set HWMATRIX_CHROMIUM to a Chromium with WebGPU".into()
        }),
        BrowserBackend::Webnn => {
            let path = std::env::var_os("HWMATRIX_WEBNN_CHROMIUM")
                .map(PathBuf::from)
                .unwrap_or_else(|| paths::web_dir().join("chromium-webnn/chromium"));
            if is_file(&path) {
                Ok(path)
            } else {
                Err(format!(
                    "no Chromium with WebNN at {}: `bash tests/run.sh` unpacks npm's @sparticuz/chromium@153.0.0 there, or set HWMATRIX_WEBNN_CHROMIUM to a Chromium with WebNN (Debian's has none)",
                    path.display()
                ))
            }
        }
    }
}

pub use hwmatrix_cell::browsers::{FIREFOX_IN_ROOT, find_chromium, firefox_root_dir};

/// Why Firefox does not come from Debian 12 itself: measured on this
/// project's machines (firefox-esr 140.10.2esr, `dom.webgpu.enabled` on,
/// headless), `navigator.gpu.requestAdapter()` rejects with this, GPU or not:
/// release and ESR builds before 141 compile WebGPU out on every platform.
pub const FIREFOX_ESR_WEBGPU: &str = "Debian 12's firefox-esr 140 has no WebGPU: navigator.gpu.requestAdapter() rejects with \"NotSupportedError: WebGPU is not yet available in Release or late Beta builds.\" (measured with dom.webgpu.enabled on)";

/// How the Firefox of `root` reads in doctor and records.
pub fn describe_firefox(version: &str, root: &Path) -> String {
    format!(
        "Firefox {version} (Debian unstable's, chrooted in {})",
        root.display()
    )
}

/// The root Firefox runs in (Debian unstable's `firefox` and Mesa's
/// lavapipe, debootstrapped: its libraries are newer than the host's, so it
/// runs chrooted) and the Firefox version in it; or what is missing.
pub fn firefox() -> Result<(PathBuf, String), String> {
    let root = firefox_root_dir();
    if !is_file(&root.join(FIREFOX_IN_ROOT)) {
        return Err(format!(
            "no Firefox root at {}: `bash tests/setup.sh firefox` debootstraps Debian unstable's firefox and Mesa's Vulkan drivers there (as root; about 1.4 GB), or set HWMATRIX_FIREFOX_ROOT to such a root. {FIREFOX_ESR_WEBGPU}",
            root.display()
        ));
    }
    let version = hwmatrix_cell::browsers::firefox_version(&root)
        .unwrap_or_else(|| "of unknown version".into());
    Ok((root, version))
}
