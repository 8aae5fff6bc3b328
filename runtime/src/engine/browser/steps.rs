//! Where a web check's seconds go: with `HWMATRIX_WEB_STEPS=<file>`, every
//! page start, session opening and run of the browser engines appends a JSON
//! line (the page's browser, backend, device type and model; the step; the
//! wall time seen from here; the time the page measured itself, where it
//! did). A run's record keeps the timed runs only; this is for finding what to
//! cut in a sweep (`python3 tests/web_steps.py <file>` sums it per engine).
//! Nothing is written without the variable.

use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;

/// The file, opened once per process for appending (the test threads share it).
static FILE: OnceLock<Option<Mutex<File>>> = OnceLock::new();

fn file() -> Option<&'static Mutex<File>> {
    FILE.get_or_init(|| {
        let path = std::env::var_os("HWMATRIX_WEB_STEPS")?;
        match File::options().create(true).append(true).open(&path) {
            Ok(file) => Some(Mutex::new(file)),
            Err(e) => {
                eprintln!(
                    "HWMATRIX_WEB_STEPS: cannot append to {}: {e}",
                    path.to_string_lossy()
                );
                None
            }
        }
    })
    .as_ref()
}

/// Appends one step of `page` (browser, backend, device type and model) to
/// `$HWMATRIX_WEB_STEPS`.
pub(super) fn note(page: &str, step: &str, wall: Duration, in_page_ms: Option<f64>) {
    let Some(file) = file() else {
        return;
    };
    let line = json!({
        "page": page,
        "step": step,
        "wall_ms": wall.as_secs_f64() * 1e3,
        "in_page_ms": in_page_ms,
    });
    let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = writeln!(file, "{line}") {
        eprintln!("HWMATRIX_WEB_STEPS: cannot append: {e}");
    }
}
