//! Spec errors: every one names the file, line and column, and says how to fix it.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
    pub message: String,
    pub help: String,
}

impl SpecError {
    pub fn new(
        file: &Path,
        (line, column): (usize, usize),
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> SpecError {
        SpecError {
            file: file.to_path_buf(),
            line,
            column,
            message: message.into(),
            help: help.into(),
        }
    }

    /// From a serde_yaml error, which knows where it happened but not how to fix it.
    pub fn from_yaml(file: &Path, error: &serde_yaml::Error) -> SpecError {
        let (line, column) = error
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        // serde_yaml appends " at line L column C"; the location is printed separately.
        let text = error.to_string();
        let message = text.split(" at line ").next().unwrap_or(&text).to_string();
        let help = yaml_help(&message);
        SpecError {
            file: file.to_path_buf(),
            line,
            column,
            message,
            help,
        }
    }
}

/// Advice for the serde_yaml messages a spec author meets.
fn yaml_help(message: &str) -> String {
    if message.contains("unknown field") {
        "remove or rename the field; the accepted fields are listed above (see model-specs/README.md)".into()
    } else if message.contains("missing field") {
        "add the field; model-specs/README.md shows a complete spec".into()
    } else if message.contains("unknown variant") {
        "use one of the listed values".into()
    } else if message.contains("invalid type") {
        "give the value the type the message names (quote free text, use a list for [..] fields)"
            .into()
    } else {
        "fix the YAML at that position (model-specs/README.md shows a complete spec)".into()
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error: {}:{}:{}: {}\n  help: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message,
            self.help
        )
    }
}

/// All errors of one load, so an author fixes them in one pass.
#[derive(Debug)]
pub struct SpecErrors(pub Vec<SpecError>);

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.0 {
            writeln!(f, "{e}")?;
        }
        write!(
            f,
            "{} error{} in the specs; nothing was written",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for SpecErrors {}

/// Where a key sits in a YAML source: the first line `<indent><key>:` at
/// the given indentation (0 = top level), and the column of its value.
/// serde_yaml has no spans for values that deserialize fine but fail a
/// later semantic check, so those errors find their position here.
pub fn locate_key(source: &str, key: &str, indent: usize) -> Option<(usize, usize)> {
    source.lines().enumerate().find_map(|(i, line)| {
        let rest = line.strip_prefix(&" ".repeat(indent))?;
        let rest = rest.strip_prefix("- ").unwrap_or(rest);
        let after = rest.strip_prefix(key)?.strip_prefix(':')?;
        let value_offset = after.len() - after.trim_start().len();
        Some((i + 1, line.len() - after.len() + value_offset + 1))
    })
}

/// Like [`locate_key`] but for `key: value` with that exact value, at any indentation.
pub fn locate_value(source: &str, key: &str, value: &str) -> Option<(usize, usize)> {
    source.lines().enumerate().find_map(|(i, line)| {
        let trimmed = line.trim_start().trim_start_matches("- ");
        let after = trimmed.strip_prefix(key)?.strip_prefix(':')?;
        let found = after.trim().trim_matches(|c| c == '"' || c == '\'');
        (found == value).then(|| (i + 1, line.find(after.trim()).unwrap_or(0) + 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_keys_and_values() {
        let src = "model_type: bert\ncategory: text_encoders\nplatforms:\n  qnn:\n    status: unsupported\n";
        assert_eq!(locate_key(src, "category", 0), Some((2, 11)));
        assert_eq!(locate_key(src, "qnn", 2), Some((4, 7)));
        assert_eq!(locate_value(src, "status", "unsupported"), Some((5, 13)));
        assert_eq!(locate_key(src, "missing", 0), None);
    }
}
