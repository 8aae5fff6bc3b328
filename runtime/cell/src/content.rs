//! What a fixture holds, by content: `content.json` beside its meta.json,
//! written by `gen fixtures`, gives the sha256 of each part a check reads (the
//! graph, the TorchScript trace, each shape's inputs and references, each
//! precision variant, the sampled layers). A check's record carries the
//! digest of the parts it read ([`Content::check_digest`]), and the evidence
//! store keeps it: an exporter edit that rebuilds a fixture without changing
//! those bytes leaves every entry measured on it fresh ("early cutoff"), and
//! one that changes one variant stales only that variant's entries.
//!
//! Nothing here depends on the exporter's text: the build key
//! (hwmatrix_specs::fixture_key) decides only whether `gen fixtures` rebuilds.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{CheckId, EngineKind, Precision};

/// The file `gen fixtures` writes beside a fixture's meta.json.
pub const CONTENT_RECORD: &str = "content.json";

/// The part of a generation fixture (`<fixtures>/generation/<model_type>`): all of it.
pub const GENERATION_PART: &str = "generation";

/// meta.json's fields that say how or when a fixture was built, not what its
/// checks read: left out of its `meta` part, so a new build key or a library
/// version recorded anew changes no digest.
const BUILD_FIELDS: [&str; 3] = ["cache_key", "exporter", "versions"];

/// The form of the digests [`Content::take`] computes, written beside them in
/// content.json: raised when a part's canonical form changes (2: TorchScript
/// values read once are inlined). A record of another form is not read
/// ([`Content::read`]), so `gen fixtures` takes it again and no digest of one
/// form is compared with one of another.
pub const DIGESTS: u32 = 2;

/// content.json as written: the record with the form of its digests.
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(default)]
    digests: Option<u32>,
    #[serde(flatten)]
    content: Content,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Content {
    /// sha256 of the spec the fixture was built from (the generated
    /// declaration's `spec_digest`): a cell refuses a fixture of another spec.
    pub spec_digest: String,
    /// meta.json's `cache_key`, and the `key` of each record a script made after the
    /// export left ([`crate::paths::AFTER_EXPORT_RECORDS`], by its file name), when the
    /// digests were taken: `gen fixtures` takes them again when one changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub made_after_export: BTreeMap<String, String>,
    /// The CPU that built it, by its class and the features that choose its
    /// kernels ([`crate::cpu_class::built_on`]: `x86-64 avx512-vnni (avx512_vnni
    /// ... fma avx512vl avx512dq)`): PyTorch's references and the calibrated
    /// variants are computed on its kernels, so two such CPUs' builds of one
    /// recipe can differ in their last bits, and only builds on the same are
    /// compared by content. Records taken before it named the features name
    /// the class alone (`x86-64 avx512-vnni`); see [`names_the_features`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_on: Option<String>,
    /// sha256 of each part, by name (`graph`, `torchscript`, `meta`, `shape1`,
    /// `shape2`, `linear`, a precision's name such as `int8` or `nncf_int4`,
    /// `generation`). A part the fixture lacks is absent.
    pub parts: BTreeMap<String, String>,
}

impl Content {
    /// Takes the digests of the fixture in `dir` (`generation`: a generation fixture, one part).
    pub fn take(
        dir: &Path,
        spec_digest: &str,
        generation: bool,
        cache_key: Option<String>,
        made_after_export: BTreeMap<String, String>,
    ) -> std::io::Result<Content> {
        let mut parts = BTreeMap::new();
        if generation {
            let files = files_under(dir, dir, &|name| name != CONTENT_RECORD)?;
            parts.insert(GENERATION_PART.to_string(), digest_files(dir, &files)?);
        } else {
            let top = top_files(dir)?;
            let named = |prefix: &str| -> Vec<String> {
                top.iter()
                    .filter(|f| f.starts_with(prefix))
                    .cloned()
                    .collect()
            };
            let mut part = |name: &str, files: Vec<String>| -> std::io::Result<()> {
                if !files.is_empty() {
                    parts.insert(name.to_string(), digest_files(dir, &files)?);
                }
                Ok(())
            };
            // model.onnx and its external data (model.onnx.data), not model.int8.onnx.
            part("graph", named("model.onnx"))?;
            for precision in Precision::ALL {
                part(
                    precision.name(),
                    named(&format!("model.{}.", precision.name())),
                )?;
            }
            // OpenVINO's PyTorch frontend's IR and NNCF's formats of it, a part each: the
            // files `model.<part>.xml` and `.bin`.
            for part_name in OPENVINO_PYTORCH_PARTS {
                let ir = [
                    format!("model.{part_name}.xml"),
                    format!("model.{part_name}.bin"),
                ];
                let files = top.iter().filter(|f| ir.contains(f)).cloned().collect();
                part(part_name, files)?;
            }
            for (name, folders) in [
                ("shape1", ["inputs", "outputs"].as_slice()),
                ("shape2", &["inputs2", "outputs2"]),
                ("linear", &["linear"]),
            ] {
                let mut files = Vec::new();
                for folder in folders {
                    files.extend(files_under(dir, &dir.join(folder), &|_| true)?);
                }
                part(name, files)?;
            }
            if dir.join(TORCHSCRIPT).is_file() {
                parts.insert(
                    "torchscript".into(),
                    torchscript_digest(&dir.join(TORCHSCRIPT))?,
                );
            }
            parts.insert("meta".into(), meta_digest(dir)?);
        }
        Ok(Content {
            spec_digest: spec_digest.to_string(),
            cache_key,
            made_after_export,
            built_on: Some(crate::cpu_class::built_on_here().to_string()),
            parts,
        })
    }

    /// The key, when the digests were taken, of the script that writes `record` (a format's
    /// [`crate::Precision::made_after_export`] record) beside the fixture.
    pub fn key_of(&self, record: &str) -> Option<&str> {
        self.made_after_export.get(record).map(String::as_str)
    }

    /// The content record of the fixture in `dir`, if `gen fixtures` wrote one
    /// with digests of today's form ([`DIGESTS`]).
    pub fn read(dir: &Path) -> Option<Content> {
        let text = std::fs::read_to_string(dir.join(CONTENT_RECORD)).ok()?;
        let stored: Stored = serde_json::from_str(&text).ok()?;
        (stored.digests == Some(DIGESTS)).then_some(stored.content)
    }

    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let stored = Stored {
            digests: Some(DIGESTS),
            content: self.clone(),
        };
        let mut text = serde_json::to_string_pretty(&stored).map_err(std::io::Error::other)?;
        text.push('\n');
        std::fs::write(dir.join(CONTENT_RECORD), text)
    }

    /// The digest of what `check` reads on `engine`: the parts
    /// [`parts_read`] names, each with its digest or as absent; and the
    /// CPU the fixture was built on (`1a2b... on x86-64 avx2 (avx2 fma)`),
    /// which [`comparable`] reads.
    pub fn check_digest(&self, check: &str, engine: EngineKind) -> String {
        let mut hasher = Sha256::new();
        for part in parts_read(check, engine) {
            let digest = self.parts.get(part).map_or("-", String::as_str);
            hasher.update(format!("{part}={digest}\n"));
        }
        let digest = hex(&hasher.finalize())[..16].to_string();
        match &self.built_on {
            Some(class) => format!("{digest}{BUILT_ON}{class}"),
            None => digest,
        }
    }
}

const BUILT_ON: &str = " on ";

/// Whether a content record's `built_on` names the CPU's kernel features, not
/// its class alone (as records taken before did, whose CPUs of one class may
/// still have differed): `gen fixtures` takes those again.
pub fn names_the_features(built_on: &str) -> bool {
    built_on.ends_with(')')
}

/// Whether two check digests can be compared, and whether they are the same
/// content: the digests themselves, where both fixtures were built on the
/// same CPU (class and kernel features) or either does not say; None (not
/// comparable) for builds on two, whose bytes may differ in their last bits
/// by the kernels alone (a digest that names its class alone is another).
pub fn comparable(then: &str, now: &str) -> Option<bool> {
    let split = |d: &str| match d.split_once(BUILT_ON) {
        Some((digest, class)) => (digest.to_string(), Some(class.to_string())),
        None => (d.to_string(), None),
    };
    let ((a, a_class), (b, b_class)) = (split(then), split(now));
    match (a_class, b_class) {
        (Some(x), Some(y)) if x != y => None,
        _ => Some(a == b),
    }
}

/// The parts of OpenVINO's PyTorch frontend's models (openvino_pytorch.py): the converted
/// module, then NNCF's formats of it.
const OPENVINO_PYTORCH_PARTS: [&str; 3] =
    ["ov_pytorch", "ov_pytorch.nncf_int8", "ov_pytorch.nncf_int4"];

/// The part of the model OpenVINO's PyTorch frontend made that a check of `precision` reads
/// (None: float32, the converted module itself).
pub fn openvino_pytorch_part(precision: Option<Precision>) -> &'static str {
    match precision {
        Some(Precision::NncfInt8) => OPENVINO_PYTORCH_PARTS[1],
        Some(Precision::NncfInt4) => OPENVINO_PYTORCH_PARTS[2],
        _ => OPENVINO_PYTORCH_PARTS[0],
    }
}

/// The parts a check reads: the graph its engine loads (libtorch's trace,
/// OpenVINO's PyTorch frontend's IR, every other engine's ONNX graph),
/// meta.json's contract, and the inputs
/// and references of its shape; a precision check its variant instead of the
/// graph; wgpu's quantization checks the sampled layers; `generates` the
/// generation fixture. A check not named here reads every part.
pub fn parts_read(check: &str, engine: EngineKind) -> Vec<&'static str> {
    let graph = match engine {
        EngineKind::Libtorch => "torchscript",
        EngineKind::OpenvinoPytorch => openvino_pytorch_part(None),
        _ => "graph",
    };
    let check = CheckId::parse(check);
    if check == Some(CheckId::Generates) {
        return vec![GENERATION_PART];
    }
    if engine == EngineKind::Wgpu {
        return vec!["meta", "linear"];
    }
    match check {
        Some(CheckId::Precision(precision)) if engine == EngineKind::OpenvinoPytorch => {
            vec![openvino_pytorch_part(Some(precision)), "meta", "shape1"]
        }
        Some(CheckId::Precision(precision)) => vec![precision.name(), "meta", "shape1"],
        Some(CheckId::DynamicShapes) => vec![graph, "meta", "shape2"],
        Some(CheckId::Runs | CheckId::MatchesReference) => vec![graph, "meta", "shape1"],
        _ => {
            let mut all = vec!["graph", "torchscript", "meta", "shape1", "shape2", "linear"];
            all.extend(Precision::ALL.iter().map(|p| p.name()));
            // Not OpenVINO's PyTorch frontend's parts: only its engine's checks read them,
            // and those are all named above.
            all
        }
    }
}

/// The TorchScript trace libtorch loads.
const TORCHSCRIPT: &str = "model.pt";

/// The trace's digest: sha256 over what libtorch computes with, in a
/// canonical form. Left out: the `*.debug_pkl` source ranges, which name the
/// files the trace ran through (the checkout's and the venv's paths, so two
/// checkouts would differ), and `.data/serialization_id`, a hash of the
/// other members. Canonical: the class names TorchScript mangles
/// (`sparse.___torch_mangle_245.Embedding`) count the module types the
/// worker process created before, in a counter of the process (no argument
/// of `torch.jit.trace` resets it), and a mangled class gets a file of its
/// own; so the names are taken without their mangle and code files class by
/// class. How many classes a module type becomes depends on that history
/// too (a worker that traced other models first split bert's 7 classes over
/// 16 files), and a file numbers its local names across all its classes
/// (`_18` or `_0`, `input0` or `input2`): so each class's local names are
/// numbered by first appearance ([`with_locals_renumbered`]) and a class
/// written twice counts once. A file that is not a readable zip archive is
/// digested whole.
fn torchscript_digest(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    let Some(members) = zip_members(&bytes) else {
        return digest_files(
            path.parent().unwrap_or(Path::new(".")),
            &[TORCHSCRIPT.into()],
        );
    };
    let mut pieces: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut classes: std::collections::BTreeSet<(Vec<u8>, Vec<u8>)> = Default::default();
    for (name, data) in members {
        if name.ends_with(".debug_pkl") || name.ends_with(".data/serialization_id") {
            continue;
        }
        let (name, data) = (without_mangles(name.as_bytes()), without_mangles(&data));
        if name.ends_with(b".py") {
            classes.extend(classes_of(&data).map(|class| {
                let class = with_single_uses_inlined(class);
                (name.clone(), with_locals_renumbered(&class))
            }));
        } else {
            pieces.push((name, data));
        }
    }
    pieces.extend(classes);
    pieces.sort();
    let mut hasher = Sha256::new();
    for (name, data) in pieces {
        hasher.update(&name);
        hasher.update(format!("\n{}\n", data.len()));
        hasher.update(data);
    }
    Ok(hex(&hasher.finalize()))
}

/// `text` without TorchScript's mangles: `.___torch_mangle_12` and
/// `/___torch_mangle_12` (in qualified names and archive paths) removed.
fn without_mangles(text: &[u8]) -> Vec<u8> {
    const MANGLE: &[u8] = b"___torch_mangle_";
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if matches!(text[i], b'.' | b'/') && text[i + 1..].starts_with(MANGLE) {
            let digits = text[i + 1 + MANGLE.len()..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 {
                i += 1 + MANGLE.len() + digits;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

/// TorchScript code with each local that is assigned once and read once
/// written into the line that reads it: `_7 = [1, 2]` then `view(x, _7)`
/// becomes `view(x, [1, 2])`, and `h = torch.add(a, b)` then `return h`
/// becomes `return torch.add(a, b)`. TorchScript's printer inlines such values
/// or not by the worker's history (the same trace exported after other models:
/// 28 of 29 traces that differed between two exports differed only so), and
/// the graph is the same either way. A local is a name not after a `.`; one
/// whose only other appearance is its own assignment's right side, or an
/// earlier line, is left alone.
fn with_single_uses_inlined(code: &[u8]) -> Vec<u8> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    // Each local's appearances: (line, start, end), in order.
    let lines: Vec<&[u8]> = code.split(|&b| b == b'\n').collect();
    let mut seen: BTreeMap<&[u8], Vec<(usize, usize, usize)>> = BTreeMap::new();
    for (n, line) in lines.iter().enumerate() {
        let mut i = 0;
        while i < line.len() {
            let starts = (line[i].is_ascii_alphabetic() || line[i] == b'_')
                && (i == 0 || !(word(line[i - 1]) || line[i - 1] == b'.'));
            if !starts {
                i += 1;
                continue;
            }
            let end = i + line[i..].iter().take_while(|&&b| word(b)).count();
            seen.entry(&line[i..end]).or_default().push((n, i, end));
            i = end;
        }
    }
    // `<indent>NAME = EXPR` whose NAME appears twice: here first, then once after.
    let assigned_once = |n: usize| -> Option<(&[u8], &[u8])> {
        let line = lines[n];
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let rest = &line[indent..];
        let name_len = rest.iter().take_while(|&&b| word(b)).count();
        let expr = rest[name_len..].strip_prefix(b" = ")?;
        let name = &rest[..name_len];
        let places = seen.get(name)?;
        (indent > 0
            && name_len > 0
            && !expr.is_empty()
            && places.len() == 2
            && places[0] == (n, indent, indent + name_len)
            && places[1].0 > n)
            .then_some((name, expr))
    };
    let mut pending: BTreeMap<(usize, usize), Vec<u8>> = BTreeMap::new();
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(lines.len());
    for (n, line) in lines.iter().enumerate() {
        // This line with the values inlined into it, right to left so offsets hold.
        let mut text = line.to_vec();
        let mut here: Vec<(usize, usize, Vec<u8>)> = pending
            .range((n, 0)..(n + 1, 0))
            .map(|(&(_, start), expr)| {
                let end = start + text[start..].iter().take_while(|&&b| word(b)).count();
                (start, end, expr.clone())
            })
            .collect();
        here.sort_by_key(|h| std::cmp::Reverse(h.0));
        for (start, end, expr) in here {
            text.splice(start..end, expr);
        }
        match assigned_once(n) {
            Some((name, _)) => {
                let use_at = seen[name][1];
                let expr_at = text.iter().position(|&b| b == b'=').map_or(0, |e| e + 2);
                pending.insert((use_at.0, use_at.1), text[expr_at..].to_vec());
            }
            None => out.push(text),
        }
    }
    out.join(&b'\n')
}

/// TorchScript code with its local names numbered by first appearance: a
/// name that ends in digits and is not an attribute (no `.` before it:
/// `_18`, `input2`, not `CONSTANTS.c1` or `torch.conv2d`) becomes its stem
/// and its place among the names of that stem (`_#0`, `input#1`). The
/// numbering is a bijection within the piece, so code that differs in more
/// than the names its file gave its locals still differs.
fn with_locals_renumbered(code: &[u8]) -> Vec<u8> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut names: BTreeMap<&[u8], Vec<u8>> = BTreeMap::new();
    let mut per_stem: BTreeMap<&[u8], usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(code.len());
    let mut i = 0;
    while i < code.len() {
        let starts_name = (code[i].is_ascii_alphabetic() || code[i] == b'_')
            && (i == 0 || !(word(code[i - 1]) || code[i - 1] == b'.'));
        if !starts_name {
            out.push(code[i]);
            i += 1;
            continue;
        }
        let end = i + code[i..].iter().take_while(|&&b| word(b)).count();
        let name = &code[i..end];
        let stem_len = name.len() - name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        if stem_len == name.len() || stem_len == 0 {
            out.extend_from_slice(name);
        } else {
            let stem = &name[..stem_len];
            let renamed = names.entry(name).or_insert_with(|| {
                let n = per_stem.entry(stem).or_insert(0);
                *n += 1;
                format!("{}#{}", String::from_utf8_lossy(stem), *n - 1).into_bytes()
            });
            out.extend_from_slice(renamed);
        }
        i = end;
    }
    out
}

/// A code file's pieces, each starting at a line that starts a class (the
/// first may be what comes before the first class).
fn classes_of(code: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut starts: Vec<usize> = vec![0];
    starts.extend(
        (1..code.len()).filter(|&i| code[i - 1] == b'\n' && code[i..].starts_with(b"class ")),
    );
    starts.push(code.len());
    let pieces: Vec<&[u8]> = starts
        .windows(2)
        .map(|w| &code[w[0]..w[1]])
        .filter(|piece| !piece.is_empty())
        .collect();
    pieces.into_iter()
}

/// The members of a zip archive as PyTorch writes it (tensors stored, code
/// deflated; zip64 where it needs to be): each name and its bytes as the
/// archive holds them. None where the archive is not of that kind.
fn zip_members(bytes: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let u16_at = |at: usize| -> Option<u64> {
        Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?) as u64)
    };
    let u32_at = |at: usize| -> Option<u64> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as u64)
    };
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    // The end of central directory record: 22 bytes and a comment of at most 64 KiB.
    let search_from = bytes.len().saturating_sub(22 + 0xFFFF);
    let end = (search_from..=bytes.len().checked_sub(22)?)
        .rev()
        .find(|&at| u32_at(at) == Some(0x0605_4b50))?;
    let (mut count, mut directory) = (u16_at(end + 10)?, u32_at(end + 16)?);
    if count == 0xFFFF || directory == 0xFFFF_FFFF {
        // zip64: its locator sits just before the end record.
        let locator = end.checked_sub(20)?;
        (u32_at(locator)? == 0x0706_4b50).then_some(())?;
        let end64 = usize::try_from(u64_at(locator + 8)?).ok()?;
        (u32_at(end64)? == 0x0606_4b50).then_some(())?;
        count = u64_at(end64 + 32)?;
        directory = u64_at(end64 + 48)?;
    }
    let mut at = usize::try_from(directory).ok()?;
    let mut members = Vec::new();
    for _ in 0..count {
        (u32_at(at)? == 0x0201_4b50).then_some(())?;
        let method = u16_at(at + 10)?;
        let mut size = u32_at(at + 24)?;
        let (name_len, extra_len, comment_len) = (
            u16_at(at + 28)? as usize,
            u16_at(at + 30)? as usize,
            u16_at(at + 32)? as usize,
        );
        let mut local = u32_at(at + 42)?;
        let name = std::str::from_utf8(bytes.get(at + 46..at + 46 + name_len)?).ok()?;
        // zip64's extra field holds, in order, the sizes and offset the header marks 0xFFFFFFFF.
        let mut extra = at + 46 + name_len;
        let extra_end = extra + extra_len;
        while extra + 4 <= extra_end {
            let (id, len) = (u16_at(extra)?, u16_at(extra + 2)? as usize);
            if id == 1 {
                let mut field = extra + 4;
                if size == 0xFFFF_FFFF {
                    size = u64_at(field)?;
                    field += 8;
                }
                if u32_at(at + 20)? == 0xFFFF_FFFF {
                    field += 8;
                }
                if local == 0xFFFF_FFFF {
                    local = u64_at(field)?;
                }
            }
            extra += 4 + len;
        }
        let local = usize::try_from(local).ok()?;
        (u32_at(local)? == 0x0403_4b50).then_some(())?;
        let data = local + 30 + u16_at(local + 26)? as usize + u16_at(local + 28)? as usize;
        // Stored (tensors), or deflated (PyTorch's code/*.py).
        let stored = if method == 0 { size } else { u32_at(at + 20)? };
        (stored != 0xFFFF_FFFF).then_some(())?;
        let data_end = data.checked_add(usize::try_from(stored).ok()?)?;
        let raw = bytes.get(data..data_end)?;
        let content = match method {
            0 => raw.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec(raw).ok()?,
            _ => return None,
        };
        members.push((name.to_string(), content));
        at += 46 + name_len + extra_len + comment_len;
    }
    Some(members)
}

/// meta.json without its build fields, its keys in order.
fn meta_digest(dir: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(dir.join("meta.json"))?;
    let mut meta: serde_json::Value = serde_json::from_str(&text).map_err(std::io::Error::other)?;
    if let Some(fields) = meta.as_object_mut() {
        for field in BUILD_FIELDS {
            fields.remove(field);
        }
    }
    // serde_json's map is ordered by key, so this text is canonical; an error
    // the exporter recorded may name a random scratch folder (ONNX Runtime's
    // quantizer's `/tmp/ort.quant.wm6rqs2s/`: sam2's qdq8), which says nothing.
    let text = crate::paths::without_tmp_paths(&meta.to_string());
    Ok(hex(&Sha256::digest(text.as_bytes())))
}

/// The names of the files directly in `dir`, sorted.
fn top_files(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Every file under `folder` (none if it does not exist), relative to `root`, sorted.
fn files_under(
    root: &Path,
    folder: &Path,
    keep: &dyn Fn(&str) -> bool,
) -> std::io::Result<Vec<String>> {
    let mut files = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(root) {
                let relative = relative.to_string_lossy().replace('\\', "/");
                if keep(&relative) {
                    files.push(relative);
                }
            }
        }
    }
    files.sort();
    Ok(files)
}

/// sha256 over each file's relative name, length and bytes, in the order given.
fn digest_files(root: &Path, files: &[String]) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    for file in files {
        let mut reader = std::fs::File::open(root.join(file))?;
        let len = reader.metadata()?.len();
        hasher.update(format!("{file}\n{len}\n"));
        loop {
            let n = reader.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// Lowercase hex digits of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(dir: &Path, graph: &str, int8: &str) {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir.join("inputs")).unwrap();
        std::fs::create_dir_all(dir.join("inputs2")).unwrap();
        std::fs::write(dir.join("model.onnx"), graph).unwrap();
        std::fs::write(dir.join("model.int8.onnx"), int8).unwrap();
        std::fs::write(dir.join("inputs/x.npy"), "x").unwrap();
        std::fs::write(dir.join("inputs2/x.npy"), "x2").unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"cache_key":"k0","shapes":[]}"#).unwrap();
    }

    /// A stored zip archive as PyTorch writes one: each member's local
    /// header and bytes, then the central directory and its end record.
    fn zip(members: &[(&str, &str)]) -> Vec<u8> {
        let (mut out, mut directory) = (Vec::new(), Vec::new());
        for (name, data) in members {
            let offset = out.len() as u32;
            out.extend(0x0403_4b50u32.to_le_bytes());
            out.extend([0u8; 14]); // version, flags, method 0 (stored), time, date, crc
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((name.len() as u16).to_le_bytes());
            out.extend(0u16.to_le_bytes());
            out.extend(name.as_bytes());
            out.extend(data.as_bytes());
            directory.extend(0x0201_4b50u32.to_le_bytes());
            directory.extend([0u8; 16]); // versions, flags, method 0, time, date, crc
            directory.extend((data.len() as u32).to_le_bytes());
            directory.extend((data.len() as u32).to_le_bytes());
            directory.extend((name.len() as u16).to_le_bytes());
            directory.extend([0u8; 12]); // extra, comment, disk, attributes
            directory.extend(offset.to_le_bytes());
            directory.extend(name.as_bytes());
        }
        let start = out.len() as u32;
        out.extend(&directory);
        out.extend(0x0605_4b50u32.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend((members.len() as u16).to_le_bytes());
        out.extend((members.len() as u16).to_le_bytes());
        out.extend((directory.len() as u32).to_le_bytes());
        out.extend(start.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    /// The trace's digest follows what libtorch computes with, not the
    /// source paths in its debug records or the id that hashes them.
    #[test]
    fn a_record_of_another_form_of_digests_is_not_read() {
        let dir =
            std::env::temp_dir().join(format!("hwmatrix-content-form-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let content = Content {
            spec_digest: "s".into(),
            cache_key: None,
            made_after_export: BTreeMap::new(),
            built_on: None,
            parts: [("graph".to_string(), "g".to_string())].into(),
        };
        content.write(&dir).unwrap();
        assert_eq!(Content::read(&dir), Some(content));
        // The first form wrote no `digests`: taken again, never compared.
        std::fs::write(
            dir.join(CONTENT_RECORD),
            r#"{"spec_digest": "s", "parts": {"graph": "g"}}"#,
        )
        .unwrap();
        assert_eq!(Content::read(&dir), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_value_the_printer_inlined_or_not_digests_the_same() {
        let canonical = |code: &str| {
            String::from_utf8(with_locals_renumbered(&with_single_uses_inlined(
                code.as_bytes(),
            )))
            .unwrap()
        };
        // qwen3's last decoder layer, printed by two workers (2026-12-06).
        let named = "  def forward(self, x: Tensor) -> Tensor:\n    _4 = (norm).forward(x, )\n    _5, _6, = _4\n    hidden_states0 = torch.add(_6, (mlp).forward(_5, ))\n    return hidden_states0\n";
        let inlined = "  def forward(self, x: Tensor) -> Tensor:\n    _0 = (norm).forward(x, )\n    _1, _2, = _0\n    return torch.add(_2, (mlp).forward(_1, ))\n";
        assert_eq!(canonical(named), canonical(inlined));
        // A list the printer named: `_7 = [1, 2]` read once.
        assert_eq!(
            canonical("    _7 = [1, 2]\n    y = torch.view(x, _7)\n    return y\n"),
            canonical("    return torch.view(x, [1, 2])\n")
        );
        // A value read twice stays named, and other code stays other code.
        let twice = "    _7 = [1, 2]\n    y = torch.view(x, _7)\n    return torch.add(y, _7)\n";
        assert!(
            canonical(twice).contains("_#0 = [1, 2]"),
            "{}",
            canonical(twice)
        );
        assert_ne!(
            canonical(inlined),
            canonical(&inlined.replace("torch.add", "torch.sub"))
        );
    }

    #[test]
    fn a_trace_is_digested_without_its_debug_records() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(TORCHSCRIPT);
        let digest = |members: &[(&str, &str)]| {
            std::fs::write(&path, zip(members)).unwrap();
            torchscript_digest(&path).unwrap()
        };
        let first = digest(&[
            ("model/data.pkl", "weights"),
            (
                "model/code/__torch__.py.debug_pkl",
                "/work/main/export.py:783",
            ),
            ("model/.data/serialization_id", "1234"),
        ]);
        let other_checkout = digest(&[
            ("model/data.pkl", "weights"),
            (
                "model/code/__torch__.py.debug_pkl",
                "/tmp/ci-clone/export.py:783",
            ),
            ("model/.data/serialization_id", "5678"),
        ]);
        assert_eq!(
            first, other_checkout,
            "debug records and the id are left out"
        );
        let other_weights = digest(&[
            ("model/data.pkl", "other weights"),
            (
                "model/code/__torch__.py.debug_pkl",
                "/work/main/export.py:783",
            ),
        ]);
        assert_ne!(first, other_weights, "a member libtorch reads changed");
        // One process's trace names a class that an earlier trace took
        // `m.___torch_mangle_7.B` and gives it a file of its own.
        let fresh = digest(&[
            ("model/data.pkl", "c__torch__.m\nA\n"),
            (
                "model/code/__torch__/m.py",
                "class A:\n  b : __torch__.m.B\nclass B:\n  pass\n",
            ),
        ]);
        let after_others = digest(&[
            ("model/data.pkl", "c__torch__.m.___torch_mangle_3\nA\n"),
            (
                "model/code/__torch__/m/___torch_mangle_3.py",
                "class A:\n  b : __torch__.m.___torch_mangle_7.B\n",
            ),
            (
                "model/code/__torch__/m/___torch_mangle_7.py",
                "class B:\n  pass\n",
            ),
        ]);
        assert_eq!(
            fresh, after_others,
            "names without their mangle, code class by class"
        );
        let other_code = digest(&[
            ("model/data.pkl", "c__torch__.m\nA\n"),
            (
                "model/code/__torch__/m.py",
                "class A:\n  b : __torch__.m.B\nclass B:\n  x : int\n",
            ),
        ]);
        assert_ne!(fresh, other_code, "a class's code changed");
        // bert traced first in its worker, and after other models: its layers'
        // classes in one file, whose local names count across the classes, or
        // the same class written twice, each in a file of its own.
        let one_file = digest(&[(
            "model/code/__torch__/m.py",
            "class A:\n  def forward(self, x):\n    _0 = torch.add(x, x)\n    return _0\n\
             class L:\n  def forward(self, x):\n    _1 = torch.softmax(x, -1)\n    input0 = torch.relu(_1)\n    return input0\n",
        )]);
        let split = digest(&[
            (
                "model/code/__torch__/m.py",
                "class A:\n  def forward(self, x):\n    _0 = torch.add(x, x)\n    return _0\n",
            ),
            (
                "model/code/__torch__/m/___torch_mangle_4.py",
                "class L:\n  def forward(self, x):\n    _0 = torch.softmax(x, -1)\n    input2 = torch.relu(_0)\n    return input2\n",
            ),
            (
                "model/code/__torch__/m/___torch_mangle_5.py",
                "class L:\n  def forward(self, x):\n    _7 = torch.softmax(x, -1)\n    input0 = torch.relu(_7)\n    return input0\n",
            ),
        ]);
        assert_eq!(
            one_file, split,
            "local names by first appearance, a class once"
        );
        let swapped = digest(&[(
            "model/code/__torch__/m.py",
            "class A:\n  def forward(self, x):\n    _0 = torch.add(x, x)\n    return _0\n\
             class L:\n  def forward(self, x):\n    _1 = torch.softmax(x, -1)\n    input0 = torch.relu(_1)\n    return _1\n",
        )]);
        assert_ne!(one_file, swapped, "which local a line uses still counts");
        std::fs::write(&path, "not a zip").unwrap();
        assert_eq!(
            torchscript_digest(&path).unwrap(),
            digest_files(&dir, &[TORCHSCRIPT.into()]).unwrap(),
            "a file that is no archive is digested whole"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A rebuild with another key and the same bytes keeps every digest; a
    /// changed variant changes its own check's digest only.
    /// Digests compare only between builds on the same CPU, class and kernel
    /// features: a digest naming its class alone (taken before) or another
    /// CPU of the same class is not comparable, and the build key decides.
    #[test]
    fn digests_compare_between_builds_on_the_same_cpu() {
        let ice_lake = "x86-64 avx512-vnni (avx512_vnni avx512bw avx512f avx2 fma)";
        let sapphire = "x86-64 avx512-vnni (avx512_vnni avx512bw avx512f avx_vnni avx2 fma)";
        let on = |digest: &str, cpu: &str| format!("{digest}{BUILT_ON}{cpu}");
        assert_eq!(
            comparable(&on("aa", ice_lake), &on("aa", ice_lake)),
            Some(true)
        );
        assert_eq!(
            comparable(&on("aa", ice_lake), &on("bb", ice_lake)),
            Some(false)
        );
        assert_eq!(comparable(&on("aa", ice_lake), &on("bb", sapphire)), None);
        assert_eq!(
            comparable(&on("aa", "x86-64 avx512-vnni"), &on("bb", ice_lake)),
            None,
            "the class alone names another CPU"
        );
        assert!(names_the_features(ice_lake) && !names_the_features("x86-64 avx512-vnni"));
    }

    #[test]
    fn digests_follow_the_bytes_a_check_reads() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-content-{}", std::process::id()));
        fixture(&dir, "graph", "int8");
        std::fs::write(dir.join("meta.json"), r#"{"cache_key":"k1","shapes":[]}"#).unwrap();
        let first = Content::take(&dir, "s", false, Some("k1".into()), BTreeMap::new()).unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"cache_key":"k2","shapes":[]}"#).unwrap();
        let rebuilt = Content::take(&dir, "s", false, Some("k2".into()), BTreeMap::new()).unwrap();
        let onnx = EngineKind::Onnxruntime;
        // The quantizer's scratch folder, named at random, in an error meta.json records.
        let qdq8_error = |scratch: &str| {
            format!(
                r#"{{"cache_key":"k2","shapes":[],"qdq8":{{"error":"Load model from /tmp/{scratch}/augmented_model.onnx failed"}}}}"#
            )
        };
        std::fs::write(dir.join("meta.json"), qdq8_error("ort.quant.wm6rqs2s")).unwrap();
        let one_scratch =
            Content::take(&dir, "s", false, Some("k2".into()), BTreeMap::new()).unwrap();
        std::fs::write(dir.join("meta.json"), qdq8_error("ort.quant.9bt3c2om")).unwrap();
        let another = Content::take(&dir, "s", false, Some("k2".into()), BTreeMap::new()).unwrap();
        assert_eq!(
            one_scratch.parts["meta"], another.parts["meta"],
            "a scratch folder's name"
        );
        assert_ne!(
            one_scratch.parts["meta"], rebuilt.parts["meta"],
            "the error itself counts"
        );
        for check in ["runs", "dynamic_shapes", "int8_matches_reference"] {
            assert_eq!(
                first.check_digest(check, onnx),
                rebuilt.check_digest(check, onnx),
                "{check}: a new build key alone changes no digest"
            );
        }
        fixture(&dir, "graph", "another int8");
        let changed = Content::take(&dir, "s", false, Some("k3".into()), BTreeMap::new()).unwrap();
        assert_eq!(
            first.check_digest("runs", onnx),
            changed.check_digest("runs", onnx)
        );
        assert_ne!(
            first.check_digest("int8_matches_reference", onnx),
            changed.check_digest("int8_matches_reference", onnx),
            "the int8 variant changed"
        );
        assert_ne!(
            first.check_digest("runs", onnx),
            first.check_digest("dynamic_shapes", onnx),
            "another shape's inputs"
        );
        assert_ne!(
            first.check_digest("runs", onnx),
            first.check_digest("runs", EngineKind::Libtorch),
            "libtorch reads the trace, which this fixture lacks"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
