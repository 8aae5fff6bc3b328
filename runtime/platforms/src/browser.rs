//! The browser engine: onnxruntime-web in Chromium, with its WebGPU or WebNN
//! backend.

use std::path::PathBuf;

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

/// `HWMATRIX_CHROMIUM`, else a chromium on PATH.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HWMATRIX_CHROMIUM") {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| {
            ["chromium", "chromium-browser", "google-chrome"].map(|name| dir.join(name))
        })
        .find(|candidate| is_file(candidate))
}
