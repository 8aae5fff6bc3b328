//! The evidence store, `model-specs/evidence/<model_type>.yaml`: what runs
//! measured of a model that was not a pass, each outcome with who failed and
//! its provenance. Specs say what a model is; this says what happened. `gen
//! import` writes it from one run's records, reviewers read its diffs as they
//! read snapshots, and the planner plans cells from it: a failure of the model
//! or the engine is a known issue, one of this machine or of our harness is
//! not tested here, a format with nothing to act on does not apply.
//!
//! Deterministic and quiet: entries sorted by platform, engine and check, and
//! an entry is rewritten only when what it says changed (status, stage, error)
//! or it went stale, so a run that measures the same failure again writes
//! nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hwmatrix_cell::browsers::BrowserVersions;
use hwmatrix_cell::{Attribution, CheckId, EngineKind, ErrorKind, Platform, Stage};
use serde::{Deserialize, Serialize};

use super::{ModelSpec, SpecError, locate_key};

/// The banner every evidence file starts with.
pub const BANNER: &str = "# Evidence: what runs measured, each failure with who failed, each cell's passes, with provenance.\n# Written by `gen measure`; review a change like a snapshot, never edit it by hand.\n";

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EvidenceFile {
    pub model_type: String,
    #[serde(default)]
    pub entries: Vec<Entry>,
    /// Each measured cell's passed checks (super::passed): what a run that
    /// did not reach the cell reports of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passed: Vec<super::passed::PassedCell>,
}

/// One check's stored outcome.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// None for the fixture pipeline's checks ([`CheckId::PIPELINE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// None for the pipeline, and for a precision check measured before entries
    /// named their engine (it stands for every ONNX engine of the platform).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineKind>,
    /// The record's check (`runs`, `int8_matches_reference`, `generates`,
    /// `int4_quantization`) or a pipeline check; a name no check has is refused.
    pub check: CheckId,
    /// The CPU class the entry holds for (`x86-64 avx2`), where it is one
    /// class's: a precision check on a platform that computes on the host's
    /// CPU ([`class_scoped`]), whose integer kernels differ by class. None:
    /// every class (every other check; and a precision entry measured on one
    /// class that no other class has measured otherwise yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_class: Option<String>,
    pub outcome: EntryOutcome,
    /// Who failed; every failure names one, a format that does not apply none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// The error's cause, never shortened here (displays may), without what
    /// changes run to run ([`stored_error`]: no page log, ANSI escape or
    /// machine path); paths relative to the fixture root
    /// (`<fixtures>/bert/model.onnx`). The run's records keep the whole error.
    pub error: String,
    pub provenance: Provenance,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryOutcome {
    /// The check failed (a known issue or not tested here: see the attribution).
    Failed,
    /// The check has nothing to act on (q4 on a graph with no MatMul weight).
    DoesNotApply,
}

/// Where and with what an entry was measured.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The run id (`HWMATRIX_RUN_ID`) of the records it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// UTC, RFC 3339 (the record's time), or the day a legacy entry was written.
    pub date: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The device or adapter the check found (`QNN HTP emulator (x86_64)`, `SwiftShader ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The engine and its settings (`onnxruntime, OpenVINOExecutionProvider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The engine library and its version, as the check loaded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// The class of the CPU it computed on, with its deciding features
    /// (`x86-64 avx2 (avx2)`), on platforms that compute on the host's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The fixture key the check ran (or the export tried) with: which
    /// build it was. It decides staleness only where `content` cannot: an
    /// export (no fixture to read), an entry measured before records carried
    /// content, a fixture not built here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture_key: Option<String>,
    /// The digest of the fixture's parts the check read
    /// (hwmatrix_cell::content): another digest today makes it stale, an
    /// exporter edit that changed none of those bytes does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The runtime (and so the harness) version that measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The record the run wrote of it (16 hex digits of its line's digest,
    /// as the results database and reports name records): the whole error,
    /// page log included, is there (`gen results show`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// Set on an entry moved from a spec's `imported:` block, written before
    /// entries carried their run, host and versions: where it came from. Such
    /// an entry is stale until a run measures the check again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy: Option<String>,
}

/// What today's checkout and fixture store say of one entry's check: the
/// build key of the fixture it reads, and the digests of what it reads there
/// (hwmatrix_cell::content): one, or one per component of a model checked as
/// components; none where the fixture is not built here.
#[derive(Clone, Debug)]
pub struct Today<'a> {
    pub fixture_key: &'a str,
    pub content: Vec<String>,
    /// The browsers' versions here, for the web engines' entries.
    pub browsers: &'a BrowserVersions,
    /// Today's runtime version and verdict code digest for the entry's
    /// engine (hwmatrix_cell::verdict_code); None where there is nothing to
    /// compare with (a bare build key, as unit tests give).
    pub runtime: Option<String>,
}

/// No browser known: a web entry's browser cannot be compared.
static NO_BROWSERS: BrowserVersions = BrowserVersions {
    chromium: None,
    firefox: None,
};

impl<'a> Today<'a> {
    /// Only a build key to compare with (no fixture built here).
    pub fn key(fixture_key: &'a str) -> Today<'a> {
        Today {
            fixture_key,
            content: Vec::new(),
            browsers: &NO_BROWSERS,
            runtime: None,
        }
    }
}

/// A model's fixtures as today's checkout and fixture store have them: the
/// build keys, and what `gen fixtures` recorded each holds.
pub struct TodaysFixtures {
    pub fixture_key: String,
    pub generation_key: String,
    /// The fixture's content, or its components' (a model checked as components).
    pub content: Vec<hwmatrix_cell::content::Content>,
    pub generation: Option<hwmatrix_cell::content::Content>,
    pub browsers: &'static BrowserVersions,
}

impl TodaysFixtures {
    /// Reads the model's content records under the fixture root `root`.
    pub fn of(model: &super::LoadedModel, root: &std::path::Path) -> TodaysFixtures {
        use hwmatrix_cell::content::Content;
        let dir = root.join(&model.spec.model_type);
        let content = if model.spec.components.is_empty() {
            Content::read(&dir).into_iter().collect()
        } else {
            let mut components: Vec<_> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| Content::read(&e.path()))
                .collect();
            components.sort_by(|a, b| a.parts.cmp(&b.parts));
            components
        };
        let generation = Content::read(
            &hwmatrix_cell::paths::generation_fixtures(root).join(&model.spec.model_type),
        );
        // A fixture here built by another exporter is not today's: what today's
        // would hold is unknown until `gen fixtures` rebuilds it, and the key decides.
        fn built_today(key: &str) -> impl Fn(&Content) -> bool + '_ {
            move |c| c.cache_key.as_deref().is_some_and(|k| k.ends_with(key))
        }
        let (fixture_key, generation_key) = (model.fixture_key(), model.generation_fixture_key());
        TodaysFixtures {
            content: content
                .into_iter()
                .filter(built_today(&fixture_key))
                .collect(),
            generation: generation.filter(built_today(&generation_key)),
            fixture_key,
            generation_key,
            browsers: BrowserVersions::here(),
        }
    }

    /// The digests today's fixtures give for `check` on `engine`: a
    /// generation check reads the generation fixture, every other the
    /// model's (one per component of a model checked as components).
    pub fn digests(&self, check: CheckId, engine: EngineKind) -> Vec<String> {
        let fixtures: Vec<&hwmatrix_cell::content::Content> = if check == CheckId::Generates {
            self.generation.iter().collect()
        } else {
            self.content.iter().collect()
        };
        fixtures
            .into_iter()
            .map(|c| c.check_digest(check.name(), engine))
            .collect()
    }

    /// What today gives for the entry's check. The pipeline's entries (an
    /// export) read no fixture: their key decides.
    pub fn today(&self, entry: &Entry) -> Today<'_> {
        let generation = matches!(entry.check, CheckId::Generates | CheckId::GenerationExport);
        Today {
            fixture_key: if generation {
                &self.generation_key
            } else {
                &self.fixture_key
            },
            content: match entry.platform {
                Some(_) => {
                    self.digests(entry.check, entry.engine.unwrap_or(EngineKind::Onnxruntime))
                }
                None => Vec::new(),
            },
            browsers: self.browsers,
            // Outside a checkout nothing tells today's code: stale, never fresh.
            runtime: entry.platform.map(|_| {
                hwmatrix_cell::verdict_code::today(entry.engine.unwrap_or(EngineKind::Onnxruntime))
                    .unwrap_or_else(|| "unknown (no checkout to read runtime/ from)".into())
            }),
        }
    }
}

impl Entry {
    /// What the planner makes of it: a known issue of the model (its failure
    /// or its engine's), or not tested here (this machine's or our harness's).
    pub fn is_known_issue(&self) -> bool {
        self.outcome == EntryOutcome::Failed
            && self.attribution.is_some_and(Attribution::is_known_issue)
    }

    /// Whether the entry is about `platform` with `engine` (an entry without an
    /// engine stands for every engine of its platform).
    pub fn is_for(&self, platform: Platform, engine: EngineKind) -> bool {
        self.platform == Some(platform) && self.engine.is_none_or(|e| e == engine)
    }

    /// Why the entry no longer describes today's checkout, if it does not:
    /// measured before provenance; on other content than today's fixture
    /// holds for its check (or, where content cannot be compared, with
    /// another fixture key: another spec, exporter or requirements); or
    /// with another version of the engine library than this checkout pins.
    pub fn stale(&self, today: &Today) -> Option<String> {
        if self.provenance.legacy.is_some() {
            return Some("recorded before evidence carried its run, host and versions".into());
        }
        // Only builds of one CPU class compare by content (hwmatrix_cell::content::comparable).
        let comparable: Vec<bool> = match self.provenance.content.as_deref() {
            Some(then) => today
                .content
                .iter()
                .filter_map(|now| hwmatrix_cell::content::comparable(then, now))
                .collect(),
            None => Vec::new(),
        };
        match (self.provenance.content.as_deref(), comparable.as_slice()) {
            (Some(then), same) if !same.is_empty() && !same.contains(&true) => {
                return Some(format!(
                    "it read fixture content {then}, today's fixture holds {} for this check",
                    today.content.join(" or ")
                ));
            }
            (Some(_), same) if !same.is_empty() => {}
            _ => {
                if let Some(key) = self
                    .provenance
                    .fixture_key
                    .as_deref()
                    .filter(|key| *key != today.fixture_key)
                {
                    let unknown = if self.provenance.content.is_some() {
                        " (today's fixture is not built here, or was built on another CPU class, to compare content)"
                    } else {
                        ""
                    };
                    return Some(format!(
                        "measured with fixture key {}, today's is {}{unknown}",
                        short(key),
                        short(today.fixture_key)
                    ));
                }
            }
        }
        // A check the exporter stopped (no such variant, no trace) never reached
        // an engine: what it read, meta.json's error included, is all its
        // verdict depends on, and its content was compared above.
        if self.provenance.library.is_none()
            && self.provenance.content.is_some()
            && (self.stage == Some(Stage::Export) || self.outcome == EntryOutcome::DoesNotApply)
        {
            return None;
        }
        // The code that decided the verdict: another digest than today's, or
        // none (measured before records carried it), is stale.
        if let (Some(now), Some(_)) = (today.runtime.as_deref(), self.platform) {
            let then = self
                .provenance
                .runtime
                .as_deref()
                .unwrap_or("of no recorded version");
            if then != now {
                let before = if hwmatrix_cell::verdict_code::named_in(then).is_none() {
                    ", before records carried the digest of the code that decides a verdict"
                } else {
                    ""
                };
                return Some(format!(
                    "measured by runtime {then}{before}; today's is {now}"
                ));
            }
        }
        // A version that cannot be read is stale, never fresh: nothing would
        // tell an engine change from it.
        let Some(library) = self.provenance.library.as_deref() else {
            return Some("it records no engine or exporter version to compare with today's".into());
        };
        if self.platform.is_none() {
            let today = exporter_libraries();
            return (library != today)
                .then(|| format!("exported with {library}, today's exporter pins {today}"));
        }
        let Some((package, then)) = library_version(library) else {
            return Some(format!(
                "its engine version cannot be read from `{}`",
                crate::text::shorten(library, 80)
            ));
        };
        let Some(now) = pinned_version(package) else {
            return Some(format!(
                "this checkout pins no {package} to compare {then} with"
            ));
        };
        // A version recorded shorter than the pin (`wgpu 30`) is its prefix.
        let same = then == now || now.starts_with(&format!("{then}."));
        if !same {
            return Some(format!(
                "measured with {package} {then}, this checkout pins {now}"
            ));
        }
        // The browser is part of a web engine.
        if package == "onnxruntime-web" {
            return browser_stale(library, today.browsers);
        }
        // A provider plugin (QNN's, native WebGPU's) is an engine of its own.
        let (_, plugin) = library.split_once(" plugin ")?;
        let Some((package, then)) = plugin
            .split_once(" (")
            .and_then(|(wheel, _)| wheel.split_once(' '))
            .filter(|(package, _)| !package.starts_with(['<', '/']))
        else {
            return Some(
                "its provider plugin's version cannot be read (recorded before entries named it)"
                    .into(),
            );
        };
        match pinned_version(package) {
            Some(now) if now == then => None,
            Some(now) => Some(format!(
                "measured with {package} {then}, this checkout pins {now}"
            )),
            None => Some(format!(
                "this checkout pins no {package} to compare {then} with"
            )),
        }
    }

    /// The entry as a planned status's reason, in one stable line that
    /// generated code carries: who failed, the error's kind, its cause in a
    /// sentence ([`crate::text::cause`]) and the store file it comes from.
    /// Never its run, date or log: a re-measurement that fails the same way
    /// changes no generated file; the store keeps the whole error and its
    /// provenance.
    pub fn reason(&self, what: &str, model_type: &str) -> String {
        let who = match (self.outcome, self.attribution) {
            (EntryOutcome::DoesNotApply, _) => "does not apply".to_string(),
            (_, Some(attribution)) => format!("failed: {}", attribution.phrase()),
            (_, None) => "failed".to_string(),
        };
        let kind = self
            .error_kind
            .map(|k| format!(" ({})", k.name()))
            .unwrap_or_default();
        let legacy = if self.provenance.legacy.is_some() {
            ", recorded before evidence carried provenance: stale"
        } else {
            ""
        };
        format!(
            "{what} {who}{kind}: {} [model-specs/evidence/{model_type}.yaml{legacy}]",
            crate::text::cause(&self.error)
        )
    }

    /// The order entries are kept in: by name (a pipeline check first), an
    /// entry for every CPU class before each class's own.
    fn sort_key(&self) -> (&'static str, &'static str, &'static str, &str) {
        (
            self.platform.map_or("", Platform::name),
            self.engine.map_or("", EngineKind::name),
            self.check.name(),
            self.cpu_class.as_deref().unwrap_or(""),
        )
    }

    /// Whether the entry still describes what `new`, a measurement of the same
    /// check, read: judged by [`Entry::stale`] against `new`'s content, browser
    /// and verdict code (the store's rule for keeping an entry, and a pass).
    pub(super) fn fresh_against(&self, new: &Entry, fixture_key: &str) -> bool {
        self.stale(&Today {
            fixture_key,
            content: new.provenance.content.iter().cloned().collect(),
            browsers: &browsers_named_in(new.provenance.library.as_deref()),
            runtime: new.provenance.runtime.clone(),
        })
        .is_none()
    }

    /// Whether the entry holds on a machine of CPU class `class` (an entry
    /// for every class holds on all of them).
    pub fn holds_on(&self, class: &str) -> bool {
        self.cpu_class.as_deref().is_none_or(|c| c == class)
    }

    /// Whether `other` says the same as this one (all but provenance): the
    /// same outcome, who failed, stage and kind, and the same error but for
    /// what a run measures of itself ([`crate::text::without_measured_figures`]).
    pub fn same_outcome(&self, other: &Entry) -> bool {
        (self.outcome, self.attribution, self.stage, self.error_kind)
            == (
                other.outcome,
                other.attribution,
                other.stage,
                other.error_kind,
            )
            && (self.error == other.error
                || crate::text::without_measured_figures(&self.error)
                    == crate::text::without_measured_figures(&other.error))
    }
}

fn short(key: &str) -> &str {
    &key[..key.len().min(12)]
}

/// Replaces this machine's absolute paths in an error: the fixture root by
/// `<fixtures>`, the cache by `<cache>`, the home folder by `~`.
pub fn relative_paths(error: &str) -> String {
    let mut text = error.to_string();
    let cache = hwmatrix_cell::paths::cache_dir();
    let fixtures = hwmatrix_cell::paths::fixtures_dir();
    let home = std::env::var("HOME").ok().filter(|h| h.len() > 1);
    for (path, name) in [
        (Some(fixtures), "<fixtures>"),
        (Some(cache), "<cache>"),
        (home.map(PathBuf::from), "~"),
    ] {
        if let Some(path) = path
            .and_then(|p| p.to_str().map(str::to_string))
            .filter(|p| !p.is_empty())
        {
            text = text.replace(&path, name);
        }
    }
    without_scratch_pids(&text)
}

/// An error as the store keeps it: its cause, without what changes from run
/// to run or machine to machine. This machine's paths become `<fixtures>`,
/// `<cache>`, `~` ([`relative_paths`]) and a scratch folder of /tmp
/// `<tmp>`; a browser's page log (` (page log: ...)`, wall-clock stamps and
/// terminal colours in every line) and any ANSI escape are dropped. The
/// whole error, log included, stays in the run's records.
pub fn stored_error(error: &str) -> String {
    let text = without_page_logs(&relative_paths(error));
    hwmatrix_cell::paths::without_tmp_paths(&without_ansi(&text))
}

/// Whether a stored error still holds what [`stored_error`] removes.
pub fn untidy(error: &str) -> Option<&'static str> {
    if error.contains(PAGE_LOG) {
        Some("a browser's page log")
    } else if error.contains('\u{1b}') {
        Some("a terminal escape")
    } else if error.contains("/root/") || error.contains("/home/") || error.contains("/tmp/") {
        Some("a path of the machine that measured it")
    } else {
        None
    }
}

const PAGE_LOG: &str = " (page log: ";

/// `text` without its ` (page log: ...)` parts (to the parenthesis that closes
/// each, or the end).
fn without_page_logs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PAGE_LOG) {
        out.push_str(&rest[..at]);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest[at + 1..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + 1 + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `text` without ANSI escape sequences (`ESC [ ... m`).
fn without_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// The exporter's scratch folder is `<model>.partial-<pid>` (export.py): the
/// process id differs from run to run, so stored errors say `.partial-<pid>`
/// and the same failure measured again rewrites nothing.
fn without_scratch_pids(text: &str) -> String {
    const MARK: &str = ".partial-";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..at + MARK.len()]);
        out.push_str(if digits > 0 { "<pid>" } else { "" });
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Every evidence file under `<root>/evidence`, by model type.
pub fn load_all(
    root: &Path,
    errors: &mut Vec<SpecError>,
) -> BTreeMap<String, (PathBuf, EvidenceFile)> {
    let dir = root.join("evidence");
    let mut found = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return found;
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    for path in paths {
        let Some((file, source)) = super::parse_file::<EvidenceFile>(&path, errors) else {
            continue;
        };
        validate(&path, &source, &file, errors);
        if path.file_stem().and_then(|s| s.to_str()) != Some(file.model_type.as_str()) {
            errors.push(SpecError::new(
                &path,
                locate_key(&source, "model_type", 0).unwrap_or((1, 1)),
                format!(
                    "evidence for `{}` in a file named otherwise",
                    file.model_type
                ),
                format!(
                    "an evidence file is named after its model: {}.yaml",
                    file.model_type
                ),
            ));
            continue;
        }
        found.insert(file.model_type.clone(), (path, file));
    }
    found
}

fn validate(path: &Path, source: &str, file: &EvidenceFile, errors: &mut Vec<SpecError>) {
    let at = locate_key(source, "entries", 0).unwrap_or((1, 1));
    let mut seen = std::collections::BTreeSet::new();
    for entry in &file.entries {
        let name = format!(
            "{}{}{}",
            entry.platform.map(|p| format!("{p}/")).unwrap_or_default(),
            entry
                .engine
                .map(|e| format!("{}/", e.name()))
                .unwrap_or_default(),
            entry.check
        );
        let pipeline = entry.check.is_pipeline();
        let problem = if pipeline == entry.platform.is_some() {
            Some((
                format!("entry {name}: a pipeline check has no platform, and any other has one"),
                "give `platform:` to a cell's check, none to `export`, `torchscript_export` or `generation_export`",
            ))
        } else if entry.outcome == EntryOutcome::Failed && entry.attribution.is_none() {
            Some((
                format!("entry {name} failed but names no attribution"),
                "say who failed: model, engine, environment or harness",
            ))
        } else if entry.error.trim().is_empty() {
            Some((
                format!("entry {name} has no error"),
                "keep the check's whole error",
            ))
        } else if let Some(what) = untidy(&entry.error) {
            Some((
                format!("entry {name}'s error holds {what}"),
                "keep the cause only, with paths relative to the fixture root (`<fixtures>/...`); the run's records keep the rest: gen measure writes it so",
            ))
        } else if entry.provenance.legacy.is_none()
            && (entry.provenance.run.is_none() || entry.provenance.host.is_none())
        {
            Some((
                format!("entry {name} has no run or host"),
                "evidence comes from a run's records: gen measure writes their run id, host, device and versions",
            ))
        } else if !seen.insert(entry.sort_key()) {
            Some((
                format!("entry {name} is there twice"),
                "keep one entry per check",
            ))
        } else {
            None
        };
        if let Some((message, help)) = problem {
            errors.push(SpecError::new(path, at, message, help));
        }
    }
    let at_passed = locate_key(source, "passed", 0).unwrap_or(at);
    for pair in file.passed.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if (a.platform.name(), a.engine.name()) >= (b.platform.name(), b.engine.name()) {
            errors.push(SpecError::new(
                path,
                at_passed,
                format!(
                    "passed cells {}/{} and {}/{} are out of order or twice",
                    a.platform,
                    a.engine.name(),
                    b.platform,
                    b.engine.name()
                ),
                "let gen measure write the file: one block per cell, by platform and engine",
            ));
        }
    }
    if let Some(cell) = file
        .passed
        .iter()
        .find(|p| p.provenance.run.is_none() || p.provenance.host.is_none() || p.checks.is_empty())
    {
        errors.push(SpecError::new(
            path,
            at_passed,
            format!(
                "passed cell {}/{} names no run, host or check",
                cell.platform,
                cell.engine.name()
            ),
            "passes come from a run's records: gen measure writes their run id, host and checks",
        ));
    }
    if !file
        .entries
        .windows(2)
        .all(|w| w[0].sort_key() <= w[1].sort_key())
    {
        errors.push(SpecError::new(
            path,
            at,
            "entries are not sorted by platform, engine and check",
            "let gen measure write the file",
        ));
    }
}

/// Writes a model's evidence (or removes the file when it has no entry and no pass);
/// true when the file changed.
pub fn write(root: &Path, mut file: EvidenceFile) -> Result<bool, String> {
    let path = root
        .join("evidence")
        .join(format!("{}.yaml", file.model_type));
    file.entries.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    super::passed::sort(&mut file.passed);
    for entry in &mut file.entries {
        entry.error = stored_error(&entry.error);
    }
    let old = std::fs::read_to_string(&path).ok();
    if file.entries.is_empty() && file.passed.is_empty() {
        if old.is_some() {
            std::fs::remove_file(&path).map_err(|e| format!("error: {}: {e}", path.display()))?;
            return Ok(true);
        }
        return Ok(false);
    }
    let text = format!(
        "{BANNER}{}",
        serde_yaml::to_string(&file).map_err(|e| e.to_string())?
    );
    if old.as_deref() == Some(text.as_str()) {
        return Ok(false);
    }
    std::fs::create_dir_all(path.parent().expect("a file in a folder"))
        .map_err(|e| format!("error: {e}"))?;
    let tmp = path.with_extension("yaml.tmp");
    std::fs::write(&tmp, &text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("error: {}: {e}", path.display()))?;
    Ok(true)
}

/// Merges a run's measured outcomes into a model's entries: each measured
/// check replaces its entry when what it says changed or the old one is stale
/// (a pass removes it); an entry the run did not measure stays as it was. A
/// check measured on a CPU class (`key.cpu_class`) merges as [`merge_on_class`] says.
pub fn merge(
    entries: &mut Vec<Entry>,
    measured: Vec<(EntryKey, Option<Entry>)>,
    fixture_key: &str,
) {
    for (key, new) in measured {
        if let Some(class) = key.cpu_class.clone() {
            merge_on_class(entries, &key, &class, new, fixture_key);
            continue;
        }
        let at = entries.iter().position(|e| {
            e.platform == key.platform
                && e.check == key.check
                && e.cpu_class.is_none()
                && (e.engine == key.engine || (e.engine.is_none() && e.provenance.legacy.is_some()))
        });
        replace(entries, at, new, fixture_key);
    }
    entries.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
}

/// Entry `at` (if any) replaced by what was measured: kept where it says the
/// same and is fresh (judged by what the new measurement read, today's
/// fixture), its provenance alone replaced where it says the same and is
/// stale, removed by a pass, added where there was none. A kept entry
/// measured before records carried content takes the new one's: only that
/// line of its provenance changes.
fn replace(entries: &mut Vec<Entry>, at: Option<usize>, new: Option<Entry>, fixture_key: &str) {
    match (at, new) {
        (Some(i), Some(new))
            if entries[i].same_outcome(&new) && entries[i].fresh_against(&new, fixture_key) =>
        {
            if entries[i].provenance.content.is_none() && new.provenance.content.is_some() {
                // Measured on this build before records carried content: now it does.
                entries[i].provenance.content = new.provenance.content;
                entries[i].provenance.fixture_key = new.provenance.fixture_key;
            }
        }
        // Stale, or saying something else. Where it says the same, only its
        // provenance changes: the store keeps its wording of the error (the new
        // record, which the provenance cites, has this run's figures).
        (Some(i), Some(mut new)) => {
            if entries[i].same_outcome(&new) {
                new.error = std::mem::take(&mut entries[i].error);
            }
            entries[i] = new;
        }
        (Some(i), None) => {
            entries.remove(i);
        }
        (None, Some(new)) => entries.push(new),
        (None, None) => {}
    }
}

/// A class-scoped check measured on CPU class `class`: never compared with
/// another class's verdict, and never taken away from a class that measured
/// otherwise.
/// - The class's own entry, where it has one, is replaced (or a pass removes it).
/// - Else an entry for every class: a failure here keeps it for every class
///   (refreshed; classes that never measured the check keep it); a pass here
///   narrows it to the class that measured it (its provenance's), or removes
///   it where that class is this one or unknown.
/// - Else a failure is this class's own entry; a pass writes nothing.
fn merge_on_class(
    entries: &mut Vec<Entry>,
    key: &EntryKey,
    class: &str,
    new: Option<Entry>,
    fixture_key: &str,
) {
    let same_check = |e: &Entry| {
        e.platform == key.platform
            && e.check == key.check
            && (e.engine == key.engine || (e.engine.is_none() && e.provenance.legacy.is_some()))
    };
    let own = entries
        .iter()
        .position(|e| same_check(e) && e.cpu_class.as_deref() == Some(class));
    let every = entries
        .iter()
        .position(|e| same_check(e) && e.cpu_class.is_none());
    match (own, every, new) {
        (Some(i), _, new) => {
            let new = new.map(|n| on_class(n, class));
            replace(entries, Some(i), new, fixture_key);
        }
        (None, Some(i), Some(new)) => replace(entries, Some(i), Some(new), fixture_key),
        (None, Some(i), None) => match entries[i].provenance.cpu_class().map(str::to_string) {
            Some(there) if there != class => entries[i] = on_class(entries[i].clone(), &there),
            _ => {
                entries.remove(i);
            }
        },
        (None, None, Some(new)) => entries.push(on_class(new, class)),
        (None, None, None) => {}
    }
}

/// An entry narrowed to CPU class `class`. An int8 failure of a model on a
/// class whose integer kernels can saturate (no VNNI) is the engine's on that
/// hardware: the same graph keeps its bounds where VNNI computes it exactly.
fn on_class(mut entry: Entry, class: &str) -> Entry {
    let int8 = entry.check == CheckId::Precision(hwmatrix_cell::Precision::Int8);
    if int8
        && hwmatrix_cell::cpu_class::int8_may_saturate(class)
        && entry.attribution == Some(Attribution::Model)
    {
        entry.attribution = Some(Attribution::Engine);
        entry.error = format!(
            "on {class}, without VNNI (ONNX Runtime's u8 x s8 kernels can saturate there: its quantization guide's reduce_range): {}",
            entry.error
        );
    }
    entry.cpu_class = Some(class.to_string());
    entry
}

/// Which check an entry is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryKey {
    pub platform: Option<Platform>,
    pub engine: Option<EngineKind>,
    pub check: CheckId,
    /// The CPU class a [`class_scoped`] check was measured on; None for every other.
    pub cpu_class: Option<String>,
}

/// Whether a check's verdict is one CPU class's: a precision variant on a
/// platform that computes on the host's CPU (cpu; openvino's CPU device),
/// whose integer kernels the CPU's instruction set decides (an int8 graph that
/// passes with VNNI saturates without it). Float32 checks run the same
/// float kernels' results on every class and keep one entry for all.
pub fn class_scoped(platform: Option<Platform>, check: CheckId) -> bool {
    platform.is_some_and(Platform::computes_on_host_cpu) && check.precision().is_some()
}

impl Provenance {
    /// The CPU class it was measured on (`x86-64 avx2`), where it names one.
    pub fn cpu_class(&self) -> Option<&str> {
        let cpu = self.cpu.as_deref()?;
        Some(cpu.split_once(" (").map_or(cpu, |(class, _)| class))
    }
}

impl Provenance {
    /// This process's run on this host, now: the provenance of what gen itself
    /// measures (the fixture pipeline), with the exporter's pinned libraries.
    pub fn of_pipeline(fixture_key: &str) -> Provenance {
        Provenance {
            run: Some(hwmatrix_cell::run::run_id().to_string()),
            date: hwmatrix_cell::run::now_rfc3339(),
            host: Some(hwmatrix_cell::run::host()),
            device: Some("cpu (the exporter's PyTorch)".into()),
            engine: Some(
                "torch.onnx (legacy, then dynamo), checked by onnxruntime's CPU provider".into(),
            ),
            library: Some(exporter_libraries()),
            cpu: None,
            fixture_key: Some(fixture_key.to_string()),
            content: None,
            runtime: Some(env!("CARGO_PKG_VERSION").to_string()),
            record: None,
            legacy: None,
        }
    }
}

/// The engine library a record's `library` names, and its version:
/// `onnxruntime (<cache>/venv/.../libonnxruntime.so.1.31.1 ...)`,
/// `libtorch 2.13.0+cu130 (...)`, `onnxruntime-web 1.30.0 (...)`. None for
/// a library this checkout does not pin (wgpu's, a system library).
fn library_version(library: &str) -> Option<(&'static str, String)> {
    let version = leading_version;
    let found = if let Some(rest) = library.strip_prefix("onnxruntime-web ") {
        ("onnxruntime-web", version(rest))
    } else if let Some(rest) = library.strip_prefix("OpenVINO ") {
        ("openvino", version(rest))
    } else if let Some(rest) = library.strip_prefix("wgpu ") {
        ("wgpu", version(rest))
    } else if let Some(rest) = library.strip_prefix("libtorch ") {
        ("torch", version(rest))
    } else if let Some((_, rest)) = library.split_once("libonnxruntime.so.") {
        // The OpenVINO provider build ships its own libonnxruntime (requirements-openvino.txt).
        (
            if library.contains("venv-openvino") {
                "onnxruntime-openvino"
            } else {
                "onnxruntime"
            },
            version(rest),
        )
    } else {
        return None;
    };
    (!found.1.is_empty()).then_some(found)
}

/// The version a text starts with (`1.31.1` of `1.31.1 (...)`), or "".
fn leading_version(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<String>()
        .trim_end_matches('.')
        .to_string()
}

/// The browser a web entry was measured in (`... in Chrome/148.0.7778.167
/// (/usr/bin/chromium)`, `... in HeadlessChrome/153.0.8010.0
/// (<cache>/web/chromium-webnn/chromium)`, `... in Firefox 159.0 (...)`):
/// its name, its version, and whether it is the WebNN Chromium. None where
/// the library names no browser.
fn browser_named(library: &str) -> Option<(&'static str, String)> {
    let (_, browser) = library.split_once(" in ")?;
    if let Some((_, rest)) = browser.split_once("Chrome/") {
        let name = if browser.contains("chromium-webnn") {
            WEBNN_CHROMIUM
        } else {
            "Chromium"
        };
        Some((name, leading_version(rest)))
    } else {
        let rest = browser.strip_prefix("Firefox ")?;
        Some(("Firefox", leading_version(rest)))
    }
}

/// The WebNN Chromium, npm's `@sparticuz/chromium` (runtime/web/package.json pins it).
const WEBNN_CHROMIUM: &str = "the WebNN Chromium";

/// The browsers a record's library names, as today's for a re-measurement
/// compared with the entry it may keep.
fn browsers_named_in(library: Option<&str>) -> BrowserVersions {
    let mut browsers = BrowserVersions::default();
    match library.and_then(browser_named) {
        Some(("Chromium", version)) => browsers.chromium = Some(version),
        Some(("Firefox", version)) => browsers.firefox = Some(version),
        _ => {}
    }
    browsers
}

/// Whether a web entry's browser is another release (major version) than
/// today's: the browser is part of the engine (its WebGPU or WebNN
/// implementation decides what runs), while a patch release within one major
/// (Debian's security updates of Chromium) changes no kernel it measured.
/// One whose browser cannot be read or is not installed here is stale.
fn browser_stale(library: &str, today: &BrowserVersions) -> Option<String> {
    let Some((name, then)) = browser_named(library) else {
        return Some(format!(
            "its browser cannot be read from `{}`",
            crate::text::shorten(library, 80)
        ));
    };
    let now = match name {
        WEBNN_CHROMIUM => pinned_version("@sparticuz/chromium"),
        "Chromium" => today.chromium.clone(),
        _ => today.firefox.clone(),
    };
    let major = |version: &str| version.split('.').next().unwrap_or_default().to_string();
    match now {
        None => Some(format!(
            "measured in {name} {then}, and no {name} is here to compare with"
        )),
        Some(now) if major(&now) != major(&then) => {
            Some(format!("measured in {name} {then}, today's is {now}"))
        }
        Some(_) => None,
    }
}

/// The version this checkout pins of an engine library: the exporter's
/// requirements (onnxruntime, torch, onnxruntime-openvino) or the browser
/// harness's npm packages (onnxruntime-web).
fn pinned_version(package: &str) -> Option<String> {
    const REQUIREMENTS: [&str; 4] = [
        include_str!("../../../importer/exporter/requirements.txt"),
        include_str!("../../../importer/exporter/requirements-plugins.txt"),
        include_str!("../../../importer/exporter/requirements-openvino.txt"),
        include_str!("../../../importer/exporter/requirements-openvino-runtime.txt"),
    ];
    const PACKAGE_JSON: &str = include_str!("../../../../runtime/web/package.json");
    // The Rust engines (wgpu) are pinned by the workspace's lock file.
    const CARGO_LOCK: &str = include_str!("../../../../Cargo.lock");
    let pin = format!("{package}==");
    let from_requirements = REQUIREMENTS
        .iter()
        .flat_map(|text| text.lines())
        .find_map(|line| {
            line.trim()
                .strip_prefix(pin.as_str())
                .map(|v| v.trim().to_string())
        });
    from_requirements
        .or_else(|| {
            let key = format!("\"{package}\":");
            let rest = PACKAGE_JSON.split_once(key.as_str())?.1;
            Some(
                rest.split('"')
                    .nth(1)?
                    .trim_start_matches(['^', '~'])
                    .to_string(),
            )
        })
        .or_else(|| {
            let locked = format!("name = \"{package}\"\nversion = \"");
            let rest = CARGO_LOCK.split_once(locked.as_str())?.1;
            rest.split('"').next().map(str::to_string)
        })
}

/// The exporter's pinned libraries (generator/importer/exporter/requirements.txt), as
/// `torch==2.13.0, transformers==5.23.0, ...`.
pub fn exporter_libraries() -> String {
    let requirements = String::from_utf8_lossy(crate::fixture_key::EXPORTER_REQUIREMENTS);
    requirements
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("==") && !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What this environment lacked, in words shared by the pipeline entries it stopped, by their
/// error kind.
pub fn environment_cause(kind: Option<ErrorKind>) -> &'static str {
    match kind {
        Some(ErrorKind::LibraryMissing) => "a library the model needs is not installed here",
        Some(ErrorKind::Timeout) => "our worker's time limit",
        _ => "another limit of this machine (see the model's entry)",
    }
}

impl ModelSpec {
    /// The fixture pipeline's entry for `check` (one of [`CheckId::PIPELINE`]).
    pub fn pipeline_entry(&self, check: CheckId) -> Option<&Entry> {
        self.evidence
            .iter()
            .find(|e| e.platform.is_none() && e.check == check)
    }

    /// The export entry, where this environment stopped the fixture pipeline (a library
    /// absent here, our worker's time limit) rather than our harness or the exporters.
    pub fn stopped_by_environment(&self) -> Option<&Entry> {
        self.pipeline_entry(CheckId::Export)
            .filter(|e| e.attribution == Some(Attribution::Environment))
    }

    /// Whether the engine's cells have a fixture to run on: the model's, where
    /// its export passed; libtorch's own, where a run measured the ONNX
    /// export failing (not our harness stopping before it) and the TorchScript
    /// trace passed (fixtures.rs, `torchscript_only_job`).
    pub fn has_fixture(&self, engine: EngineKind) -> bool {
        self.export.known_issue.is_none() || (engine.runs_the_trace() && self.traced_without_onnx())
    }

    /// A run measured the ONNX export failing, after our harness built and ran
    /// the tiny model, and no trace failure is stored: libtorch's cells run on
    /// a fixture of their own. Whole models only: one checked as its
    /// components has its components' fixtures, which torchscript.py does not build.
    pub fn traced_without_onnx(&self) -> bool {
        self.export.known_issue_measured
            && !self.export.stage.is_some_and(Stage::is_harness)
            && self.components.is_empty()
            && self.pipeline_entry(CheckId::TorchscriptExport).is_none()
    }
}

/// How the fixture pipeline failed, as values its parts report: the stage
/// the worker says it stopped at, and whether our pool's limit stopped it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineFailure {
    pub stage: Stage,
    /// Our worker pool's time limit killed the job (workers.rs): the environment's, not the model's.
    pub timed_out: bool,
    /// The generation exporter's own limit (a cache it cannot flatten), not torch.onnx's.
    pub harness_limit: bool,
    /// The optional libraries transformers refused to build the model without, absent here
    /// (natten, detectron2): the worker finds them from the call that raised.
    pub missing_libraries: Vec<String>,
    /// The whole error, in the worker's words.
    pub error: String,
}

impl PipelineFailure {
    /// Who failed: the environment at our time limit or without a library
    /// the model needs, our harness before any exporter ran (config,
    /// reference) or at its own limits, else the model with torch.onnx.
    pub fn attribution(&self) -> Attribution {
        if self.timed_out || !self.missing_libraries.is_empty() {
            Attribution::Environment
        } else if self.stage.is_harness() || self.harness_limit {
            Attribution::Harness
        } else {
            Attribution::Model
        }
    }
}

/// The fixture pipeline's failure as an entry: its stage, who failed, and
/// this run's provenance.
pub fn pipeline_failure(check: CheckId, failure: &PipelineFailure, fixture_key: &str) -> Entry {
    let attribution = failure.attribution();
    Entry {
        platform: None,
        engine: None,
        check,
        cpu_class: None,
        outcome: EntryOutcome::Failed,
        attribution: Some(attribution),
        stage: Some(failure.stage),
        error_kind: Some(if failure.timed_out {
            ErrorKind::Timeout
        } else if !failure.missing_libraries.is_empty() {
            ErrorKind::LibraryMissing
        } else if attribution == Attribution::Harness {
            ErrorKind::FixtureMissing
        } else {
            ErrorKind::ExportFailed
        }),
        error: stored_error(&failure.error),
        provenance: Provenance::of_pipeline(fixture_key),
    }
}

/// Reads a model's evidence file (empty when it has none).
pub fn read(root: &Path, model_type: &str) -> Result<EvidenceFile, String> {
    let path = root.join("evidence").join(format!("{model_type}.yaml"));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            serde_yaml::from_str(&text).map_err(|e| format!("error: {}: {e}", path.display()))
        }
        Err(_) => Ok(EvidenceFile {
            model_type: model_type.to_string(),
            ..EvidenceFile::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(platform: Option<Platform>, check: &str, error: &str, key: &str) -> Entry {
        Entry {
            platform,
            engine: platform.map(|_| EngineKind::Onnxruntime),
            check: check.parse().expect("a check's name"),
            cpu_class: None,
            outcome: EntryOutcome::Failed,
            attribution: Some(Attribution::Engine),
            stage: Some(Stage::Run),
            error_kind: Some(ErrorKind::RunFailed),
            error: error.into(),
            provenance: Provenance {
                run: Some("run-1".into()),
                date: "2026-11-27T03:00:00Z".into(),
                host: Some("h".into()),
                fixture_key: Some(key.into()),
                content: None,
                // Today's engine (a version that cannot be read is stale), or the exporter's.
                library: Some(match platform {
                    Some(_) => format!(
                        "onnxruntime (libonnxruntime.so.{})",
                        pinned_version("onnxruntime").expect("requirements.txt pins it")
                    ),
                    None => exporter_libraries(),
                }),
                ..Provenance::default()
            },
        }
    }

    /// Content decides where both sides have it: a rebuild under another key
    /// that changed no byte the check reads leaves the entry fresh, another
    /// digest stales it; without content the key decides. A re-measurement
    /// that says the same gives a kept entry its content, nothing else.
    #[test]
    fn content_decides_staleness_where_it_is_known() {
        let mut entry = failure(Some(Platform::Cpu), "runs", "runs: failed", "k1");
        let today = |key, content: &[&str]| Today {
            fixture_key: key,
            content: content.iter().map(|c| c.to_string()).collect(),
            browsers: &NO_BROWSERS,
            runtime: None,
        };
        assert!(
            entry.stale(&today("k2", &["c1"])).is_some(),
            "no content: the key decides"
        );
        entry.provenance.content = Some("c1".into());
        assert_eq!(
            entry.stale(&today("k2", &["c1"])),
            None,
            "an exporter edit that changed no byte"
        );
        let why = entry
            .stale(&today("k2", &["c2"]))
            .expect("what it reads changed");
        assert!(why.contains("content c1") && why.contains("c2"), "{why}");
        assert_eq!(
            entry.stale(&today("k2", &["c0", "c1"])),
            None,
            "one of a components model's fixtures"
        );
        let why = entry
            .stale(&today("k2", &[]))
            .expect("not built here: the key decides");
        assert!(why.contains("not built here"), "{why}");
        // Stopped by the exporter (no variant), it opened no engine: its content decides alone.
        let mut no_variant = entry.clone();
        no_variant.provenance.library = None;
        assert!(
            no_variant.stale(&today("k1", &["c1"])).is_some(),
            "no engine version"
        );
        no_variant.stage = Some(Stage::Export);
        assert_eq!(no_variant.stale(&today("k2", &["c1"])), None);

        let key = EntryKey {
            platform: Some(Platform::Cpu),
            engine: Some(EngineKind::Onnxruntime),
            check: CheckId::Runs,
            cpu_class: None,
        };
        let old = failure(Some(Platform::Cpu), "runs", "runs: failed", "k1");
        let mut again = old.clone();
        again.provenance.run = Some("run-2".into());
        again.provenance.content = Some("c1".into());
        let mut entries = vec![old.clone()];
        merge(&mut entries, vec![(key.clone(), Some(again.clone()))], "k1");
        assert_eq!(entries[0].provenance.run.as_deref(), Some("run-1"), "kept");
        assert_eq!(
            entries[0].provenance.content.as_deref(),
            Some("c1"),
            "stamped"
        );
        // Rebuilt under another key, same bytes: still kept, as it was.
        let kept = entries.clone();
        let mut rebuilt = again.clone();
        rebuilt.provenance.run = Some("run-3".into());
        rebuilt.provenance.fixture_key = Some("k2".into());
        merge(&mut entries, vec![(key.clone(), Some(rebuilt))], "k2");
        assert_eq!(entries, kept);
        // Other bytes: replaced.
        let mut changed = again.clone();
        changed.provenance.run = Some("run-4".into());
        changed.provenance.content = Some("c2".into());
        merge(&mut entries, vec![(key, Some(changed.clone()))], "k2");
        assert_eq!(entries, vec![changed]);
        // A build on another CPU class is not compared by content: its key decides.
        let mut measured = failure(Some(Platform::Cpu), "runs", "runs: failed", "k1");
        measured.provenance.content = Some("c1 on x86-64 avx512-vnni".into());
        assert!(
            measured
                .stale(&today("k1", &["c1 on x86-64 avx512-vnni"]))
                .is_none()
        );
        assert!(
            measured
                .stale(&today("k1", &["c9 on x86-64 avx512-vnni"]))
                .is_some(),
            "other bytes of a build on the same class"
        );
        assert!(
            measured
                .stale(&today("k1", &["c9 on x86-64 avx2"]))
                .is_none(),
            "another class's build of the same recipe"
        );
        assert!(
            measured
                .stale(&today("k2", &["c9 on x86-64 avx2"]))
                .is_some_and(|why| why.contains("another CPU class")),
            "... under another key"
        );
        assert!(
            measured.stale(&today("k2", &["c1"])).is_none(),
            "a digest taken before fixtures named their class compares by its bytes"
        );
    }

    /// An entry's check is one a check has: a misspelt name is refused where it stands
    /// (it was once kept as a string no check would ever match), listing the names.
    #[test]
    fn an_entry_naming_no_check_is_refused() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-evidence-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("evidence")).unwrap();
        let entry = |check: &str| {
            format!(
                "model_type: bert\nentries:\n- platform: cpu\n  engine: onnxruntime\n  check: {check}\n  outcome: failed\n  attribution: model\n  error: e\n  provenance:\n    date: '2026-12-06'\n"
            )
        };
        std::fs::write(dir.join("evidence/bert.yaml"), entry("runs")).unwrap();
        assert_eq!(read(&dir, "bert").unwrap().entries[0].check, CheckId::Runs);
        std::fs::write(
            dir.join("evidence/bert.yaml"),
            entry("int8_matches_referenc"),
        )
        .unwrap();
        let err = read(&dir, "bert").unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            err.contains("bert.yaml")
                && err.contains("unknown check `int8_matches_referenc`")
                && err.contains("int8_matches_reference"),
            "{err}"
        );
    }

    #[test]
    fn a_class_scoped_check_keeps_each_cpu_class_its_own_verdict() {
        const AVX2: &str = "x86-64 avx2";
        const VNNI: &str = "x86-64 avx512-vnni";
        let int8 = CheckId::Precision(hwmatrix_cell::Precision::Int8);
        assert!(class_scoped(Some(Platform::Cpu), int8));
        assert!(class_scoped(Some(Platform::Openvino), int8));
        assert!(!class_scoped(
            Some(Platform::Cpu),
            CheckId::MatchesReference
        ));
        assert!(!class_scoped(Some(Platform::Webgpu), int8));
        let on = |class: &str| EntryKey {
            platform: Some(Platform::Cpu),
            engine: Some(EngineKind::Onnxruntime),
            check: int8,
            cpu_class: Some(class.into()),
        };
        let measured_on = |class: &str| {
            let mut e = failure(
                Some(Platform::Cpu),
                int8.name(),
                "cosine 0.7087, below 0.98",
                "k",
            );
            e.attribution = Some(Attribution::Model);
            e.provenance.cpu = Some(format!("{class} (avx2)"));
            e
        };
        // A failure on AVX2 where the store has none: AVX2's own, the engine's on that hardware.
        let mut entries = Vec::new();
        merge(&mut entries, vec![(on(AVX2), Some(measured_on(AVX2)))], "k");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].cpu_class.as_deref(), Some(AVX2));
        assert_eq!(entries[0].attribution, Some(Attribution::Engine));
        assert!(entries[0].error.starts_with("on x86-64 avx2, without VNNI"));
        assert!(entries[0].holds_on(AVX2) && !entries[0].holds_on(VNNI));
        // A pass on VNNI never clears AVX2's entry; a pass on AVX2 does.
        merge(&mut entries, vec![(on(VNNI), None)], "k");
        assert_eq!(entries.len(), 1);
        merge(&mut entries, vec![(on(AVX2), None)], "k");
        assert!(entries.is_empty());
        // An entry for every class, measured on VNNI: a failure on AVX2 keeps it for every
        // class (a model's failure is not AVX2's); a pass on AVX2 narrows it to VNNI.
        let mut vnni = measured_on(VNNI);
        vnni.error = "cosine 0.5, below 0.98".into();
        let mut entries = vec![vnni.clone()];
        merge(&mut entries, vec![(on(AVX2), Some(measured_on(AVX2)))], "k");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].cpu_class, None);
        assert_eq!(entries[0].attribution, Some(Attribution::Model));
        let mut entries = vec![vnni.clone()];
        merge(&mut entries, vec![(on(AVX2), None)], "k");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].cpu_class.as_deref(), Some(VNNI));
        assert_eq!(
            entries[0].attribution,
            Some(Attribution::Model),
            "VNNI computes int8 exactly: its failure stays the model's"
        );
        // Measured before entries named their CPU: a pass anywhere clears it, as before.
        let mut legacy = vnni.clone();
        legacy.provenance.cpu = None;
        let mut entries = vec![legacy];
        merge(&mut entries, vec![(on(AVX2), None)], "k");
        assert!(entries.is_empty());
    }

    #[test]
    fn the_same_failure_keeps_its_entry_another_replaces_it_and_a_pass_clears_it() {
        let key = |check: &str| EntryKey {
            platform: Some(Platform::Openvino),
            engine: Some(EngineKind::Onnxruntime),
            check: check.parse().expect("a check's name"),
            cpu_class: None,
        };
        let old = failure(Some(Platform::Openvino), "runs", "runs: failed", "k1");
        let mut entries = vec![old.clone()];
        // Measured again by a later run, the same: nothing churns (the first run's provenance stays).
        let mut again = old.clone();
        again.provenance.run = Some("run-2".into());
        merge(&mut entries, vec![(key("runs"), Some(again.clone()))], "k1");
        assert_eq!(entries, vec![old.clone()]);
        // The same failure on another fixture key: the old entry was stale, the new one replaces it.
        let mut rebuilt = again.clone();
        rebuilt.provenance.fixture_key = Some("k2".into());
        assert!(old.stale(&Today::key("k2")).is_some());
        merge(
            &mut entries,
            vec![(key("runs"), Some(rebuilt.clone()))],
            "k2",
        );
        assert_eq!(entries, vec![rebuilt.clone()]);
        // The same failure but for this run's timings: fresh, it is kept whole; stale,
        // only its provenance changes (the store keeps its wording of the error).
        let timed = |us: u32, key: &str| {
            let mut entry = rebuilt.clone();
            entry.error = format!("not every node ran on QNN: Reshape ×8 ran elsewhere ({us} µs)");
            entry.provenance.fixture_key = Some(key.into());
            entry
        };
        let mut entries = vec![timed(242, "k2")];
        merge(
            &mut entries,
            vec![(key("runs"), Some(timed(218, "k2")))],
            "k2",
        );
        assert_eq!(entries, vec![timed(242, "k2")], "fresh: kept");
        merge(
            &mut entries,
            vec![(key("runs"), Some(timed(218, "k3")))],
            "k3",
        );
        let mut provenance_only = timed(242, "k3");
        provenance_only.error = timed(242, "k2").error;
        assert_eq!(
            entries,
            vec![provenance_only],
            "stale: its provenance replaced"
        );
        let mut other_ops = timed(218, "k4");
        other_ops.error = other_ops.error.replace("×8", "×9");
        merge(
            &mut entries,
            vec![(key("runs"), Some(other_ops.clone()))],
            "k4",
        );
        assert_eq!(entries, vec![other_ops], "another error replaces it");
        // Each check keeps its own outcome; a pass clears only its own entry.
        merge(
            &mut entries,
            vec![
                (
                    key("dynamic_shapes"),
                    Some(failure(
                        Some(Platform::Openvino),
                        "dynamic_shapes",
                        "other",
                        "k2",
                    )),
                ),
                (key("runs"), None),
            ],
            "k2",
        );
        assert_eq!(
            entries.iter().map(|e| e.check.name()).collect::<Vec<_>>(),
            ["dynamic_shapes"]
        );
    }

    #[test]
    fn an_entry_measured_with_another_engine_library_is_stale() {
        let with = |library: &str| {
            let mut entry = failure(Some(Platform::Cpu), "runs", "failed", "k");
            entry.provenance.library = Some(library.into());
            entry
        };
        let pinned = pinned_version("onnxruntime").expect("requirements.txt pins onnxruntime");
        let today = with(&format!(
            "onnxruntime (<cache>/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.{pinned})"
        ));
        assert_eq!(today.stale(&Today::key("k")), None);
        let older = with(
            "onnxruntime (<cache>/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.1.20.0 with the QNNExecutionProvider plugin x)",
        );
        assert!(
            older
                .stale(&Today::key("k"))
                .is_some_and(|why| why.contains("onnxruntime 1.20.0") && why.contains(&pinned)),
            "{:?}",
            older.stale(&Today::key("k"))
        );
        // OpenVINO's provider build is its own package and pin.
        let openvino =
            pinned_version("onnxruntime-openvino").expect("requirements-openvino.txt pins it");
        assert_eq!(
            with(&format!(
                "onnxruntime (<cache>/venv-openvino/lib/libonnxruntime.so.{openvino})"
            ))
            .stale(&Today::key("k")),
            None
        );
        assert!(
            with("libtorch 1.0.0+cpu (x)")
                .stale(&Today::key("k"))
                .is_some_and(|why| why.contains("torch 1.0.0"))
        );
        assert!(
            with("onnxruntime-web 0.1.0 (ort.webgpu.min.mjs, webgpu) in Chromium")
                .stale(&Today::key("k"))
                .is_some()
        );
        assert_eq!(
            with("wgpu 30").stale(&Today::key("k")),
            None,
            "Cargo.lock pins wgpu 30.x"
        );
        assert!(with("wgpu 29").stale(&Today::key("k")).is_some());
        let openvino =
            pinned_version("openvino").expect("requirements-openvino-runtime.txt pins it");
        assert_eq!(
            with(&format!("OpenVINO {openvino} (x)")).stale(&Today::key("k")),
            None
        );
        assert!(
            with("OpenVINO 2025.0.0 (x)")
                .stale(&Today::key("k"))
                .is_some()
        );
        // A provider plugin's wheel is compared with its pin too; one recorded
        // by its path alone cannot be read.
        let ort = pinned_version("onnxruntime").expect("requirements.txt pins it");
        let qnn = pinned_version("onnxruntime-qnn").expect("requirements-plugins.txt pins it");
        let plugin = |wheel: &str| {
            with(&format!(
                "onnxruntime (<cache>/libonnxruntime.so.{ort} with the QNNExecutionProvider plugin {wheel})"
            ))
            .stale(&Today::key("k"))
        };
        assert_eq!(
            plugin(&format!("onnxruntime-qnn {qnn} (<cache>/x.so)")),
            None
        );
        assert!(
            plugin("onnxruntime-qnn 0.1.0 (<cache>/x.so)").is_some_and(|why| why.contains("0.1.0"))
        );
        assert!(
            plugin("<cache>/x.so").is_some_and(|why| why.contains("cannot be read")),
            "recorded before entries named the plugin's version"
        );
        // A version that cannot be read is stale, never fresh.
        assert!(
            with("onnxruntime-web ? (ort.webgpu.min.mjs, webgpu) in Chromium")
                .stale(&Today::key("k"))
                .is_some_and(|why| why.contains("cannot be read"))
        );
        let mut unversioned = with("x");
        unversioned.provenance.library = None;
        assert!(
            unversioned
                .stale(&Today::key("k"))
                .is_some_and(|why| why.contains("no engine"))
        );
        // The pipeline's entries are compared with the exporter's pins.
        let mut export = failure(None, "export", "failed", "k");
        export.provenance.library = Some(exporter_libraries());
        assert_eq!(export.stale(&Today::key("k")), None);
        export.provenance.library = Some("torch==1.0.0".into());
        assert!(export.stale(&Today::key("k")).is_some());
    }

    /// An entry is stale when other code than today's decided its verdict,
    /// or when it was measured before records named that code.
    #[test]
    fn an_entry_judged_by_other_verdict_code_is_stale() {
        let pinned = pinned_version("onnxruntime").expect("requirements.txt pins onnxruntime");
        let mut entry = failure(Some(Platform::Cpu), "runs", "failed", "k");
        entry.provenance.library = Some(format!(
            "onnxruntime (<cache>/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.{pinned})"
        ));
        let today = |runtime: &str| Today {
            runtime: Some(runtime.into()),
            ..Today::key("k")
        };
        let now = hwmatrix_cell::verdict_code::describe("0.1.0", "00112233aabbccdd");
        entry.provenance.runtime = Some(now.clone());
        assert_eq!(entry.stale(&today(&now)), None);
        let other = hwmatrix_cell::verdict_code::describe("0.1.0", "ffeeddcc00000000");
        assert!(
            entry
                .stale(&today(&other))
                .is_some_and(|why| why.contains("00112233aabbccdd") && why.contains("ffeeddcc")),
            "{:?}",
            entry.stale(&today(&other))
        );
        entry.provenance.runtime = Some("0.1.0".into());
        assert!(
            entry
                .stale(&today(&now))
                .is_some_and(|why| why.contains("before records carried")),
            "measured before records named their verdict code"
        );
        // Today's digest is read from this checkout's runtime/.
        assert!(
            hwmatrix_cell::verdict_code::today(EngineKind::Onnxruntime)
                .is_some_and(|t| hwmatrix_cell::verdict_code::named_in(&t).is_some())
        );
    }

    /// A web entry's browser is part of its engine: another major release,
    /// or no such browser here to compare with, stales it; a patch release
    /// does not. The WebNN Chromium is compared with its npm pin.
    #[test]
    fn an_entry_measured_in_another_browser_release_is_stale() {
        let web = pinned_version("onnxruntime-web").expect("package.json pins it");
        let webnn = pinned_version("@sparticuz/chromium").expect("package.json pins it");
        let entry = |browser: &str| {
            let mut entry = failure(Some(Platform::Webgpu), "runs", "failed", "k");
            entry.provenance.library = Some(format!(
                "onnxruntime-web {web} (ort.webgpu.min.mjs, WebGpuExecutionProvider) in {browser}; WebGPU adapter null"
            ));
            entry
        };
        let here = BrowserVersions {
            chromium: Some("148.0.7778.200".into()),
            firefox: Some("159.0.1".into()),
        };
        let today = Today {
            fixture_key: "k",
            content: Vec::new(),
            browsers: &here,
            runtime: None,
        };
        let chrome = entry("Chrome/148.0.7778.167 (/usr/bin/chromium)");
        assert_eq!(
            chrome.stale(&today),
            None,
            "a patch release of the same major"
        );
        let older = entry("Chrome/147.0.7727.1 (/usr/bin/chromium)");
        assert!(
            older
                .stale(&today)
                .is_some_and(|why| why.contains("Chromium 147.0.7727.1") && why.contains("148")),
            "{:?}",
            older.stale(&today)
        );
        assert!(
            chrome
                .stale(&Today::key("k"))
                .is_some_and(|why| why.contains("no Chromium is here")),
            "no browser here to compare with: stale, never fresh"
        );
        let firefox =
            entry("Firefox 159.0 (Debian unstable's, chrooted in <cache>/web/firefox/root)");
        assert_eq!(firefox.stale(&today), None);
        let mut newer = here.clone();
        newer.firefox = Some("160.0".into());
        let newer_today = Today {
            browsers: &newer,
            ..today.clone()
        };
        assert!(firefox.stale(&newer_today).is_some());
        let major = webnn.split('.').next().unwrap();
        let webnn_entry = |version: &str| {
            entry(&format!(
                "HeadlessChrome/{version} (<cache>/web/chromium-webnn/chromium)"
            ))
        };
        assert_eq!(
            webnn_entry(&format!("{major}.0.8010.0")).stale(&Today::key("k")),
            None,
            "the WebNN Chromium is npm's pin, known without looking"
        );
        assert!(webnn_entry("140.0.1.0").stale(&Today::key("k")).is_some());
        assert!(
            entry("Safari 18")
                .stale(&today)
                .is_some_and(|why| why.contains("cannot be read"))
        );
        // A re-measurement in the same release keeps the entry it says the same as.
        assert_eq!(
            browsers_named_in(chrome.provenance.library.as_deref())
                .chromium
                .as_deref(),
            Some("148.0.7778.167")
        );
    }

    #[test]
    fn a_stored_error_keeps_the_cause_and_drops_the_log() {
        let error = "onnxruntime-web (webgpu) running the model: failed (code 1) (page log: \u{1b}[1;31m2026-11-28 16:57:17.188428 [E:onnxruntime:, a.cc:671 Run] Starting program \"Cast\" (24, 1, 1)\u{1b}[m | x); calibration in /tmp/ort.quant.mhhojdgo/augmented_model.onnx";
        let stored = stored_error(error);
        assert_eq!(
            stored,
            "onnxruntime-web (webgpu) running the model: failed (code 1); calibration in <tmp>/augmented_model.onnx"
        );
        assert_eq!(untidy(&stored), None);
        assert_eq!(untidy(error), Some("a browser's page log"));
        assert_eq!(untidy("a \u{1b}[0;93mwarning"), Some("a terminal escape"));
        assert_eq!(stored_error(&stored), stored, "tidying is idempotent");
    }

    #[test]
    fn who_failed_decides_known_issue_or_not_tested_here() {
        let mut entry = failure(
            Some(Platform::Webgpu),
            "fp16_matches_reference",
            "requires f16",
            "k",
        );
        assert!(entry.is_known_issue());
        entry.attribution = Some(Attribution::Environment);
        assert!(
            !entry.is_known_issue(),
            "a software adapter without shader-f16 is this machine's, not the model's"
        );
        assert!(
            entry
                .reason("bert on webgpu", "bert")
                .contains("the environment here (not tested here)")
        );
        let legacy = Entry {
            provenance: Provenance {
                date: "2026-11-20".into(),
                legacy: Some("moved".into()),
                ..Provenance::default()
            },
            ..entry
        };
        assert!(
            legacy
                .stale(&Today::key("k"))
                .is_some_and(|why| why.contains("before evidence carried")),
            "an entry without provenance is always stale"
        );
    }

    #[test]
    fn the_pipeline_names_who_failed() {
        let failed = |stage, error: &str| PipelineFailure {
            stage,
            timed_out: false,
            harness_limit: false,
            missing_libraries: Vec::new(),
            error: error.into(),
        };
        let model = pipeline_failure(
            CheckId::Export,
            &failed(
                Stage::Export,
                "RuntimeError: legacy exporter: x; dynamo exporter: y",
            ),
            "k",
        );
        assert_eq!(
            (model.attribution, model.stage, model.error_kind),
            (
                Some(Attribution::Model),
                Some(Stage::Export),
                Some(ErrorKind::ExportFailed)
            )
        );
        // The words do not decide: a message that merely mentions a time limit is still the model's.
        let words = pipeline_failure(
            CheckId::Export,
            &failed(Stage::Export, "RuntimeError: timed out after 300 s"),
            "k",
        );
        assert_eq!(words.attribution, Some(Attribution::Model));
        let ours = pipeline_failure(
            CheckId::Export,
            &failed(
                Stage::Reference,
                "running the tiny model: RuntimeError: shapes",
            ),
            "k",
        );
        assert_eq!(
            (ours.attribution, ours.stage),
            (Some(Attribution::Harness), Some(Stage::Reference))
        );
        let absent = PipelineFailure {
            missing_libraries: vec!["natten".into()],
            ..failed(
                Stage::Reference,
                "running the tiny model: ImportError: DinatModel requires the natten library",
            )
        };
        let absent = pipeline_failure(CheckId::Export, &absent, "k");
        assert_eq!(
            (absent.attribution, absent.error_kind),
            (
                Some(Attribution::Environment),
                Some(ErrorKind::LibraryMissing)
            ),
            "a library absent here is this environment's, not our harness's"
        );
        assert_eq!(
            environment_cause(absent.error_kind),
            "a library the model needs is not installed here"
        );
        let limit = pipeline_failure(
            CheckId::Export,
            &PipelineFailure {
                stage: Stage::Export,
                timed_out: true,
                harness_limit: false,
                missing_libraries: Vec::new(),
                error: "timed out after 300 s".into(),
            },
            "k",
        );
        assert_eq!(
            (limit.attribution, limit.error_kind),
            (Some(Attribution::Environment), Some(ErrorKind::Timeout)),
            "our worker's limit is not the model's"
        );
        assert_eq!(limit.error, "timed out after 300 s");
        assert_eq!(
            environment_cause(limit.error_kind),
            "our worker's time limit"
        );
        let flatten = PipelineFailure {
            harness_limit: true,
            ..failed(Stage::Reference, "RuntimeError: cannot flatten the cache")
        };
        assert_eq!(
            pipeline_failure(CheckId::GenerationExport, &flatten, "k").attribution,
            Some(Attribution::Harness)
        );
        assert_eq!(model.provenance.fixture_key.as_deref(), Some("k"));
        assert!(
            model.provenance.run.is_some()
                && model.provenance.host.is_some()
                && model
                    .provenance
                    .library
                    .as_deref()
                    .is_some_and(|l| l.contains("torch=="))
        );
    }

    #[test]
    fn errors_name_paths_relative_to_the_fixture_root() {
        let fixtures = hwmatrix_cell::paths::fixtures_dir();
        let error = format!("cannot load {}/bert/model.onnx: bad", fixtures.display());
        assert_eq!(
            relative_paths(&error),
            "cannot load <fixtures>/bert/model.onnx: bad"
        );
        let scratch = format!(
            "Load model from {}/aria.partial-4661/model.onnx failed",
            fixtures.display()
        );
        assert_eq!(
            relative_paths(&scratch),
            "Load model from <fixtures>/aria.partial-<pid>/model.onnx failed"
        );
    }
}
