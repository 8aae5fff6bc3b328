//! Helpers shared by the generator's test suites: scratch folders, tree
//! copies and fingerprints, copies of the workspace's specs and generated
//! crate, and running `gen` in-process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The workspace root (this crate lives in `<root>/tests`).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A fresh, empty folder under the target dir, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("hwmatrix-test-{}-{label}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create copy target");
    for entry in std::fs::read_dir(from).expect("read copy source").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// Every file under `root` with its bytes, sorted: equal fingerprints mean equal trees.
pub fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read file");
                files.push((
                    path.strip_prefix(root).expect("under root").to_path_buf(),
                    bytes,
                ));
            }
        }
    }
    files.sort();
    files
}

/// What one in-process `gen` run printed and returned.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run_gen(args: &[&str]) -> Run {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = generator::cli::run(
        std::iter::once("gen").chain(args.iter().copied()),
        &mut out,
        &mut err,
    );
    Run {
        code,
        stdout: String::from_utf8(out).expect("utf-8"),
        stderr: String::from_utf8(err).expect("utf-8"),
    }
}

/// An empty generated crate (just its Cargo.toml) to render into.
pub fn empty_crate(dir: &Path) -> PathBuf {
    let out = dir.join("generated");
    std::fs::create_dir_all(&out).expect("create crate dir");
    std::fs::write(out.join("Cargo.toml"), "[package]\nname = \"generated\"\n")
        .expect("write Cargo.toml");
    out
}

/// A copy of model-specs/ and of the checked-in generated/, to change and to protect.
pub struct Workspace {
    _scratch: Scratch,
    pub specs: PathBuf,
    pub out: PathBuf,
}

pub fn copy_workspace(label: &str) -> Workspace {
    let scratch = Scratch::new(label);
    let specs = scratch.path().join("model-specs");
    let out = scratch.path().join("generated");
    copy_tree(&workspace().join("model-specs"), &specs);
    copy_tree(&workspace().join("generated"), &out);
    Workspace {
        _scratch: scratch,
        specs,
        out,
    }
}

impl Workspace {
    /// Runs gen with these arguments on this copy (`--specs` and `--out` added).
    pub fn run(&self, args: &[&str]) -> Run {
        let mut all = args.to_vec();
        all.extend([
            "--specs",
            self.specs.to_str().expect("utf-8 path"),
            "--out",
            self.out.to_str().expect("utf-8 path"),
        ]);
        run_gen(&all)
    }
}

/// Replaces the first line starting with `prefix` and returns its 1-based number.
pub fn replace_line(file: &Path, prefix: &str, with: &str) -> usize {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let index = lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in {}", file.display()));
    lines[index] = with.to_string();
    std::fs::write(file, lines.join("\n") + "\n").unwrap();
    index + 1
}
