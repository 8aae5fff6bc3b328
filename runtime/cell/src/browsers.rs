//! The browsers the web engines run, found as the engines find them, and
//! their versions: the browser is part of the engine a web cell measures, so
//! an entry measured in another release of it is stale
//! (hwmatrix_specs' `Entry::stale`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `HWMATRIX_CHROMIUM`, else a chromium on PATH: Debian's, for WebGPU.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HWMATRIX_CHROMIUM") {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| {
            ["chromium", "chromium-browser", "google-chrome"].map(|name| dir.join(name))
        })
        .find(|candidate| candidate.is_file())
}

/// Where Firefox's root is looked for: `HWMATRIX_FIREFOX_ROOT`, else
/// `<web>/firefox/root`, where `bash tests/setup.sh firefox` debootstraps it.
pub fn firefox_root_dir() -> PathBuf {
    std::env::var_os("HWMATRIX_FIREFOX_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::paths::web_dir().join("firefox/root"))
}

/// Firefox's executable inside its root.
pub const FIREFOX_IN_ROOT: &str = "usr/bin/firefox";

/// The version of the Firefox in `root` (its application.ini's `Version=`).
pub fn firefox_version(root: &Path) -> Option<String> {
    let ini = std::fs::read_to_string(root.join("usr/lib/firefox/application.ini")).ok()?;
    ini.lines()
        .find_map(|l| l.strip_prefix("Version="))
        .map(|v| v.trim().to_string())
}

/// The versions of the browsers here: Debian's Chromium (`chromium
/// --version`) and Firefox in its root; None for one not installed. The
/// WebNN Chromium is npm's, pinned by runtime/web/package.json.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BrowserVersions {
    pub chromium: Option<String>,
    pub firefox: Option<String>,
}

impl BrowserVersions {
    /// Found once per process (Chromium's version costs a process).
    pub fn here() -> &'static BrowserVersions {
        static HERE: OnceLock<BrowserVersions> = OnceLock::new();
        HERE.get_or_init(|| BrowserVersions {
            chromium: find_chromium().and_then(|path| {
                let out = std::process::Command::new(path)
                    .arg("--version")
                    .output()
                    .ok()?;
                // "Chromium 148.0.7778.167 built on Debian GNU/Linux 12 (bookworm)"
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
                    .map(str::to_string)
            }),
            firefox: firefox_version(&firefox_root_dir()),
        })
    }
}
