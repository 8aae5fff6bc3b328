//! The results database the verbs read: `--db`, else results/hwmatrix.sqlite.

use std::path::{Path, PathBuf};

use hwmatrix_results::Database;

/// The database `--db` names, else results/hwmatrix.sqlite.
pub fn path(db: Option<&Path>) -> Result<PathBuf, String> {
    match db {
        Some(path) => Ok(path.to_path_buf()),
        None => Ok(hwmatrix_cell::paths::results_dir()?.join(hwmatrix_results::DEFAULT_FILE)),
    }
}

/// The database reports read: it must exist (opening would create an empty one).
pub fn existing(db: Option<&Path>) -> Result<Database, String> {
    let path = path(db)?;
    if !path.is_file() {
        return Err(format!(
            "error: no results database at {}\n  help: `gen results load` loads the records (results/*.jsonl) first",
            path.display()
        ));
    }
    Database::open(&path)
}
