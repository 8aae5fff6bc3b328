//! The static server the harness page loads from: 127.0.0.1 on an ephemeral
//! port, one per test process. It serves the harness, onnxruntime-web's files
//! from the npm install, and fixtures, with the MIME types and cross-origin
//! isolation headers onnxruntime-web needs (threads need SharedArrayBuffer,
//! which needs `crossOriginIsolated`; the harness reports it).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

const HARNESS_HTML: &str = include_str!("harness.html");
const HARNESS_MJS: &str = include_str!("harness.mjs");

/// What the server maps its URL prefixes to.
#[derive(Clone, Debug)]
pub struct Roots {
    /// onnxruntime-web's `dist/`, served under `/ort/`.
    pub ort_dist: PathBuf,
    /// The fixture root served under `/fixtures/`, looked up at each request:
    /// a process may point HWMATRIX_FIXTURES elsewhere between checks.
    pub fixtures: fn() -> PathBuf,
}

/// Starts serving on 127.0.0.1 (a port the system picks) in a thread that
/// lives as long as the process; returns the address.
pub fn start(roots: Roots) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::Builder::new()
        .name("hwmatrix-web-server".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let roots = roots.clone();
                // A thread per connection: Chromium opens a few at a time, and a
                // large model file must not hold up the harness's other requests.
                let _ = std::thread::Builder::new()
                    .name("hwmatrix-web-conn".into())
                    .spawn(move || serve(stream, &roots));
            }
        })?;
    Ok(addr)
}

fn serve(stream: TcpStream, roots: &Roots) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        // Headers are read and dropped: nothing here depends on them.
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" || header == "\n" {
                break;
            }
        }
        let mut parts = request_line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = target.split(['?', '#']).next().unwrap_or("");
        let (status, content_type, body) = if method != "GET" && method != "HEAD" {
            ("405 Method Not Allowed", "text/plain", b"only GET".to_vec())
        } else {
            match respond(path, roots) {
                Ok((content_type, body)) => ("200 OK", content_type, body),
                Err(message) => ("404 Not Found", "text/plain", message.into_bytes()),
            }
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCross-Origin-Opener-Policy: same-origin\r\n\
             Cross-Origin-Embedder-Policy: require-corp\r\nCross-Origin-Resource-Policy: same-origin\r\nCache-Control: {}\r\n\r\n",
            body.len(),
            cache_control(path),
        );
        let body: &[u8] = if method == "HEAD" { &[] } else { &body };
        if stream
            .write_all(head.as_bytes())
            .and_then(|_| stream.write_all(body))
            .is_err()
        {
            return;
        }
    }
}

fn respond(path: &str, roots: &Roots) -> Result<(&'static str, Vec<u8>), String> {
    match path {
        "/" | "/harness.html" => {
            return Ok(("text/html; charset=utf-8", HARNESS_HTML.as_bytes().to_vec()));
        }
        "/harness.mjs" => {
            return Ok((
                "text/javascript; charset=utf-8",
                HARNESS_MJS.as_bytes().to_vec(),
            ));
        }
        "/favicon.ico" => return Err("no icon".into()),
        _ => {}
    }
    let (root, rest) = if let Some(rest) = path.strip_prefix("/ort/") {
        (roots.ort_dist.clone(), rest)
    } else if let Some(rest) = path.strip_prefix("/fixtures/") {
        ((roots.fixtures)(), rest)
    } else {
        return Err(format!("{path}: not served"));
    };
    let file = inside(&root, rest)
        .ok_or_else(|| format!("{path}: not a path under {}", root.display()))?;
    let body = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((content_type(&file), body))
}

/// onnxruntime-web's files do not change while a browser lives (one npm
/// install serves the process), so the browser may keep them, and with them
/// V8's compiled WebAssembly, which it keeps only for cacheable responses:
/// without it every page compiled ORT's 27 MB of wasm again. Fixtures and the
/// harness are never kept: a fixture rebuilt mid-run must be read anew.
fn cache_control(path: &str) -> &'static str {
    if path.starts_with("/ort/") {
        "max-age=86400, immutable"
    } else {
        "no-store"
    }
}

/// `root/rest` if `rest` is a plain relative path (no `..`, no root).
fn inside(root: &Path, rest: &str) -> Option<PathBuf> {
    let rest = Path::new(rest);
    rest.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| root.join(rest))
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "mjs" | "js" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "html" => "text/html; charset=utf-8",
        "json" | "map" => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_served() {
        let root = Path::new("/srv");
        assert_eq!(
            inside(root, "bert/model.onnx"),
            Some(PathBuf::from("/srv/bert/model.onnx"))
        );
        assert_eq!(inside(root, "../etc/passwd"), None);
        assert_eq!(inside(root, "/etc/passwd"), None);
    }

    #[test]
    fn wasm_and_modules_get_the_types_browsers_require() {
        assert_eq!(
            content_type(Path::new("ort-wasm-simd-threaded.jsep.wasm")),
            "application/wasm"
        );
        assert_eq!(
            content_type(Path::new("ort.all.min.mjs")),
            "text/javascript; charset=utf-8"
        );
    }

    #[test]
    fn only_onnxruntime_web_may_be_kept_by_the_browser() {
        assert_eq!(
            cache_control("/ort/ort-wasm-simd-threaded.asyncify.wasm"),
            "max-age=86400, immutable"
        );
        for path in ["/fixtures/bert/model.onnx", "/harness.mjs", "/harness.html"] {
            assert_eq!(cache_control(path), "no-store", "{path}");
        }
    }
}
