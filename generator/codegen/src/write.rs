//! Writing rendered files into the output folder: atomically, only when
//! their content changed, and removing stale files that carry our banner
//! (never anything else), when every model was selected. `--check` computes
//! the same and writes nothing.

use std::path::{Path, PathBuf};

use hwmatrix_specs::files::write_atomically;

use crate::render::{BANNER_PREFIX, Files};

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Files whose content differs from what would be rendered.
    pub drifted: Vec<PathBuf>,
    /// Files that would be created.
    pub missing: Vec<PathBuf>,
    /// Generated files (with our banner) that no spec produces any more.
    pub stale: Vec<PathBuf>,
    pub unchanged: usize,
}

impl Changes {
    pub fn is_clean(&self) -> bool {
        self.drifted.is_empty() && self.missing.is_empty() && self.stale.is_empty()
    }
}

/// Compares the rendered files with the output folder. With `find_stale`
/// (`files` is then everything the specs produce), every other generated
/// file of the folder is stale; without it (a selection), none is.
pub fn diff(out: &Path, files: &Files, find_stale: bool) -> Result<Changes, String> {
    let mut changes = Changes::default();
    for (rel, content) in files {
        match std::fs::read(out.join(rel)) {
            Ok(existing) if existing == content.as_bytes() => changes.unchanged += 1,
            Ok(_) => changes.drifted.push(rel.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => changes.missing.push(rel.clone()),
            Err(e) => return Err(format!("{}: {e}", out.join(rel).display())),
        }
    }
    if find_stale {
        for rel in generated_files(out)? {
            if !files.contains_key(&rel) {
                changes.stale.push(rel);
            }
        }
    }
    Ok(changes)
}

/// Applies a diff: writes drifted and missing files, removes stale ones.
pub fn apply(out: &Path, files: &Files, changes: &Changes) -> Result<(), String> {
    for rel in changes.drifted.iter().chain(&changes.missing) {
        write_atomically(&out.join(rel), files[rel].as_bytes())?;
    }
    for rel in &changes.stale {
        let path = out.join(rel);
        std::fs::remove_file(&path)
            .map_err(|e| format!("cannot remove stale {}: {e}", path.display()))?;
        remove_empty_parents(out, &path);
    }
    Ok(())
}

fn remove_empty_parents(out: &Path, file: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == out || !d.starts_with(out) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// Every `.rs` file under `<out>/src` whose first line is our banner, relative to out, sorted.
fn generated_files(out: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut stack = vec![out.join("src")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && has_banner(&path) {
                found.push(
                    path.strip_prefix(out)
                        .expect("walked from out")
                        .to_path_buf(),
                );
            }
        }
    }
    found.sort();
    Ok(found)
}

fn has_banner(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; BANNER_PREFIX.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == BANNER_PREFIX.as_bytes()
}
