//! The CPU classes the evidence store was measured on,
//! `model-specs/evidence/cpu-classes/measured.yaml`: per platform that
//! computes on the host's CPU and per class, the last run `gen measure`
//! took its records from, and how many of its class-scoped checks (the
//! precision variants) that run measured and passed. The store keeps only
//! what did not pass, so this file is what says a class was measured at all:
//! `gen doctor` fails on a class the store never measured for cpu (its
//! verdicts would be another CPU's), and the report lists the classes
//! measured and those never measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hwmatrix_cell::Platform;
use serde::{Deserialize, Serialize};

const BANNER: &str = "# The CPU classes the evidence store was measured on: per platform and class, the run\n# `gen measure --platform P` last took its records from. Written by gen measure; never edit by hand.\n";

/// The file, relative to the specs folder (a folder of its own: every
/// `evidence/*.yaml` is a model's evidence).
pub fn path(root: &Path) -> PathBuf {
    root.join("evidence")
        .join("cpu-classes")
        .join("measured.yaml")
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClassesFile {
    pub classes: Vec<MeasuredClass>,
}

/// One class's last measurement on one platform.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MeasuredClass {
    pub platform: Platform,
    /// `x86-64 avx2` (hwmatrix_cell::CpuClass).
    pub class: String,
    /// The class with its deciding features, as the records say it.
    pub cpu: String,
    pub run: String,
    /// The run's newest record's time (UTC, RFC 3339).
    pub date: String,
    pub host: String,
    /// Per class-scoped check: how many cells that run measured, and how many passed.
    pub checks: BTreeMap<hwmatrix_cell::CheckId, CheckCount>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CheckCount {
    pub measured: usize,
    pub passed: usize,
}

impl ClassesFile {
    /// The class's measurement on `platform`, if the store has one.
    pub fn measured(&self, platform: Platform, class: &str) -> Option<&MeasuredClass> {
        self.classes
            .iter()
            .find(|c| c.platform == platform && c.class == class)
    }

    /// Keeps `class` as its platform's newest measurement of that class.
    pub fn record(&mut self, class: MeasuredClass) {
        self.classes
            .retain(|c| !(c.platform == class.platform && c.class == class.class));
        self.classes.push(class);
        self.classes
            .sort_by(|a, b| (a.platform.name(), &a.class).cmp(&(b.platform.name(), &b.class)));
    }
}

/// The file as stored (empty where there is none); an error names the file.
pub fn read(root: &Path) -> Result<ClassesFile, String> {
    let path = path(root);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_yaml::from_str(&text).map_err(|e| {
            format!(
                "error: {}: {e}\n  help: gen measure --platform P writes this file; restore it from git",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ClassesFile::default()),
        Err(e) => Err(format!("error: {}: {e}", path.display())),
    }
}

/// Writes the file atomically; true when it changed.
pub fn write(root: &Path, file: &ClassesFile) -> Result<bool, String> {
    let path = path(root);
    let text = format!(
        "{BANNER}{}",
        serde_yaml::to_string(file).map_err(|e| e.to_string())?
    );
    if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
        return Ok(false);
    }
    std::fs::create_dir_all(path.parent().expect("a file in a folder"))
        .map_err(|e| format!("error: {}: {e}", path.display()))?;
    let tmp = path.with_extension("yaml.tmp");
    std::fs::write(&tmp, &text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("error: {}: {e}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(platform: Platform, class: &str, run: &str) -> MeasuredClass {
        MeasuredClass {
            platform,
            class: class.into(),
            cpu: format!("{class} (avx2)"),
            run: run.into(),
            date: "2026-12-01T21:36:19Z".into(),
            host: "vm".into(),
            checks: BTreeMap::from([(
                hwmatrix_cell::CheckId::Precision(hwmatrix_cell::Precision::Int8),
                CheckCount {
                    measured: 522,
                    passed: 314,
                },
            )]),
        }
    }

    #[test]
    fn a_class_keeps_its_newest_measurement_per_platform_and_reads_back() {
        let mut file = ClassesFile::default();
        file.record(class(Platform::Cpu, "x86-64 avx2", "run-1"));
        file.record(class(Platform::Openvino, "x86-64 avx2", "run-1"));
        file.record(class(Platform::Cpu, "x86-64 avx2", "run-2"));
        assert_eq!(file.classes.len(), 2);
        assert_eq!(
            file.measured(Platform::Cpu, "x86-64 avx2")
                .map(|c| c.run.as_str()),
            Some("run-2")
        );
        assert!(file.measured(Platform::Cpu, "x86-64 avx512-vnni").is_none());
        let root = std::env::temp_dir().join(format!("hwmatrix-classes-{}", std::process::id()));
        assert!(write(&root, &file).unwrap());
        assert!(
            !write(&root, &file).unwrap(),
            "the same file again writes nothing"
        );
        assert_eq!(read(&root).unwrap(), file);
        std::fs::write(path(&root), "classes: [nonsense").unwrap();
        let error = read(&root).unwrap_err();
        assert!(
            error.contains("measured.yaml") && error.contains("help:"),
            "{error}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
