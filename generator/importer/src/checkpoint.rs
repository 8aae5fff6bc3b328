//! What a checkpoint is before anything runs on it: its architecture, its weights'
//! files and how many parameters they hold, read from config.json and the weights'
//! own headers (safetensors' JSON header, GGUF's tensor table) without loading a
//! tensor. `gen checkpoint` refuses here what it cannot or must not run: a folder
//! that is not a checkpoint, a config.json it cannot read, a GGUF of an architecture
//! transformers cannot load, and weights too large for this machine's memory.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The weights' files, by format.
#[derive(Debug, Clone, PartialEq)]
pub enum Weights {
    /// config.json with one or more `*.safetensors` files.
    Safetensors(Vec<PathBuf>),
    /// config.json with PyTorch's pickled `pytorch_model*.bin` files.
    PytorchBin(Vec<PathBuf>),
    /// One GGUF file (llama.cpp's format): transformers dequantizes it to float32.
    Gguf(PathBuf),
}

/// A checkpoint, read but not loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The folder, or the GGUF file.
    pub path: PathBuf,
    /// Its name in the results: the folder's name, or the GGUF's without `.gguf`.
    pub name: String,
    /// transformers' `model_type`: config.json's, or the one a GGUF architecture loads as.
    pub model_type: String,
    pub weights: Weights,
    /// Parameters the weights hold, from their headers; None for pickled weights (their
    /// header is the pickle itself), whose size is then their files'.
    pub parameters: Option<u64>,
    /// The weights at float32, the format every fixture is exported from.
    pub float32_bytes: u64,
}

impl Checkpoint {
    /// How `float32_bytes` was counted, for the messages that cite it.
    pub fn counted(&self) -> String {
        match (&self.weights, self.parameters) {
            (Weights::Safetensors(_), Some(n)) => {
                format!("{} parameters in its safetensors headers", millions(n))
            }
            (Weights::Gguf(_), Some(n)) => {
                format!("{} parameters in its GGUF tensor table", millions(n))
            }
            _ => "the size of its pickled weights' files".into(),
        }
    }
}

fn millions(n: u64) -> String {
    format!("{:.1}M", n as f64 / 1e6)
}

/// GGUF architectures (`general.architecture`) transformers' GGUF loader turns into a
/// model, with the `model_type` it loads them as. transformers lists more
/// (integrations/ggml.py); these are the decoders whose loading it documents and we
/// have a spec of. Anything else is refused with this list.
pub const GGUF_ARCHITECTURES: &[(&str, &str)] = &[
    ("llama", "llama"),
    ("mistral", "mistral"),
    ("qwen2", "qwen2"),
    ("qwen2moe", "qwen2_moe"),
    ("qwen3", "qwen3"),
    ("qwen3moe", "qwen3_moe"),
    ("phi3", "phi3"),
    ("gemma2", "gemma2"),
    ("gemma3", "gemma3_text"),
    ("gpt2", "gpt2"),
    ("stablelm", "stablelm"),
    ("starcoder2", "starcoder2"),
    ("falcon", "falcon"),
    ("bloom", "bloom"),
];

/// Reads a checkpoint folder or GGUF file, or says why it is not one it can run.
pub fn inspect(path: &Path) -> Result<Checkpoint, String> {
    let shown = path.display();
    if path.is_file() {
        if path.extension().is_some_and(|e| e == "gguf") {
            return gguf_checkpoint(path);
        }
        return Err(format!(
            "error: {shown} is a file, not a checkpoint\n  help: pass a checkpoint folder (config.json with model.safetensors or pytorch_model.bin) or a .gguf file"
        ));
    }
    let entries = std::fs::read_dir(path)
        .map_err(|e| {
            format!("error: {shown}: {e}\n  help: pass a checkpoint folder or a .gguf file")
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect::<Vec<_>>();
    let with = |ext: &str, prefix: &str| {
        let mut found: Vec<PathBuf> = entries
            .iter()
            .filter(|p| {
                p.is_file()
                    && p.extension().is_some_and(|e| e == ext)
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix))
            })
            .cloned()
            .collect();
        found.sort();
        found
    };
    let config = path.join("config.json");
    if !config.is_file() {
        let ggufs = with("gguf", "");
        return match &ggufs[..] {
            [one] => gguf_checkpoint(one),
            [] if entries.is_empty() => Err(format!(
                "error: {shown} is empty: not a checkpoint\n  help: pass a folder with config.json and model.safetensors (or pytorch_model.bin), as save_pretrained writes it, or a .gguf file"
            )),
            [] => Err(format!(
                "error: {shown} has no config.json (nor a .gguf file): not a checkpoint\n  help: pass a folder with config.json and model.safetensors (or pytorch_model.bin), as save_pretrained writes it, or a .gguf file"
            )),
            several => Err(format!(
                "error: {shown} has no config.json and {} .gguf files\n  help: pass the one to run: gen checkpoint {}",
                several.len(),
                several[0].display()
            )),
        };
    }
    let model_type = model_type_of(&config)?;
    let safetensors = with("safetensors", "");
    let pickles = with("bin", "pytorch_model");
    let (weights, parameters, float32_bytes) = if !safetensors.is_empty() {
        let mut parameters = 0u64;
        for file in &safetensors {
            parameters += safetensors_parameters(file)?;
        }
        (
            Weights::Safetensors(safetensors),
            Some(parameters),
            parameters * 4,
        )
    } else if !pickles.is_empty() {
        // A pickle's tensors are not listed without unpickling it: its size stands in,
        // counted as float32 (a float16 file understates the float32 export by half).
        let bytes = pickles
            .iter()
            .map(|p| p.metadata().map(|m| m.len()).unwrap_or(0))
            .sum();
        (Weights::PytorchBin(pickles), None, bytes)
    } else {
        return Err(format!(
            "error: {shown} has config.json but no weights (model.safetensors, pytorch_model.bin)\n  help: save the model with save_pretrained, which writes both"
        ));
    };
    Ok(Checkpoint {
        path: path.to_path_buf(),
        name: file_name(path),
        model_type,
        weights,
        parameters,
        float32_bytes,
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "checkpoint".into())
}

/// config.json's `model_type`, or why it has none (a parse error with its line and column).
fn model_type_of(config: &Path) -> Result<String, String> {
    let text =
        std::fs::read_to_string(config).map_err(|e| format!("error: {}: {e}", config.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "error: {}:{}:{}: not valid JSON: {e}\n  help: fix config.json (save_pretrained writes it) and run again",
            config.display(),
            e.line(),
            e.column()
        )
    })?;
    match value.get("model_type").and_then(|v| v.as_str()) {
        Some(t) if !t.is_empty() => Ok(t.to_string()),
        _ => Err(format!(
            "error: {}: no `model_type`: transformers cannot tell its architecture\n  help: a config.json save_pretrained writes names it (e.g. \"model_type\": \"bert\")",
            config.display()
        )),
    }
}

/// The parameters a safetensors file holds, from its JSON header alone.
fn safetensors_parameters(file: &Path) -> Result<u64, String> {
    let broken = |why: String| {
        format!(
            "error: {}: not a safetensors file: {why}\n  help: the file is truncated or not safetensors; save the model again",
            file.display()
        )
    };
    let mut reader = File::open(file).map_err(|e| format!("error: {}: {e}", file.display()))?;
    let mut length = [0u8; 8];
    reader
        .read_exact(&mut length)
        .map_err(|e| broken(format!("no header length ({e})")))?;
    let length = u64::from_le_bytes(length);
    // safetensors caps its header at 100 MB.
    if length > 100_000_000 {
        return Err(broken(format!("a header of {length} bytes")));
    }
    let mut header = vec![0u8; length as usize];
    reader
        .read_exact(&mut header)
        .map_err(|e| broken(format!("a header shorter than its {length} bytes ({e})")))?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| broken(format!("its header: {e}")))?;
    let mut parameters = 0u64;
    for (name, tensor) in &header {
        if name == "__metadata__" {
            continue;
        }
        let shape = tensor
            .get("shape")
            .and_then(|s| s.as_array())
            .ok_or_else(|| broken(format!("tensor {name} has no shape")))?;
        let elements = shape
            .iter()
            .map(|d| {
                d.as_u64()
                    .ok_or_else(|| broken(format!("tensor {name}'s shape {shape:?}")))
            })
            .try_fold(1u64, |n, d| d.map(|d| n.saturating_mul(d)))?;
        parameters = parameters.saturating_add(elements);
    }
    Ok(parameters)
}

fn gguf_checkpoint(file: &Path) -> Result<Checkpoint, String> {
    let header = read_gguf(file)?;
    let Some(architecture) = header.architecture else {
        return Err(format!(
            "error: {}: no general.architecture in its metadata\n  help: a GGUF llama.cpp's converter writes names it",
            file.display()
        ));
    };
    let Some((_, model_type)) = GGUF_ARCHITECTURES.iter().find(|(a, _)| *a == architecture) else {
        let known: Vec<&str> = GGUF_ARCHITECTURES.iter().map(|(a, _)| *a).collect();
        return Err(format!(
            "error: {}: a GGUF of architecture `{architecture}`, which transformers' GGUF loader does not turn into a model we can export\n  help: the architectures it loads: {}; for another, pass the checkpoint's transformers folder (config.json and safetensors)",
            file.display(),
            known.join(", ")
        ));
    };
    let name = file
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "checkpoint".into());
    Ok(Checkpoint {
        path: file.to_path_buf(),
        name,
        model_type: model_type.to_string(),
        weights: Weights::Gguf(file.to_path_buf()),
        parameters: Some(header.parameters),
        float32_bytes: header.parameters.saturating_mul(4),
    })
}

/// What `gen checkpoint` needs of a GGUF's header.
struct GgufHeader {
    architecture: Option<String>,
    parameters: u64,
}

/// Reads a GGUF file's metadata and tensor table (the format's version 2 and 3:
/// github.com/ggml-org/ggml/blob/master/docs/gguf.md), stopping before the tensors' data.
fn read_gguf(file: &Path) -> Result<GgufHeader, String> {
    let broken = |why: String| {
        format!(
            "error: {}: not a GGUF file: {why}\n  help: the file is truncated or not llama.cpp's GGUF",
            file.display()
        )
    };
    let mut r =
        BufReader::new(File::open(file).map_err(|e| format!("error: {}: {e}", file.display()))?);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)
        .map_err(|e| broken(e.to_string()))?;
    if &magic != b"GGUF" {
        return Err(broken(format!("it starts with {magic:?}, not GGUF")));
    }
    let version = u32_le(&mut r).map_err(&broken)?;
    if !(2..=3).contains(&version) {
        return Err(broken(format!("version {version} (this reads 2 and 3)")));
    }
    let tensors = u64_le(&mut r).map_err(&broken)?;
    let pairs = u64_le(&mut r).map_err(&broken)?;
    let mut architecture = None;
    for _ in 0..pairs {
        let key = gguf_string(&mut r).map_err(&broken)?;
        let kind = u32_le(&mut r).map_err(&broken)?;
        if key == "general.architecture" && kind == GGUF_STRING {
            architecture = Some(gguf_string(&mut r).map_err(&broken)?);
        } else {
            skip_value(&mut r, kind).map_err(&broken)?;
        }
    }
    let mut parameters = 0u64;
    for _ in 0..tensors {
        let name = gguf_string(&mut r).map_err(&broken)?;
        let dims = u32_le(&mut r).map_err(&broken)?;
        if dims > 8 {
            return Err(broken(format!("tensor {name} has {dims} dimensions")));
        }
        let mut elements = 1u64;
        for _ in 0..dims {
            elements = elements.saturating_mul(u64_le(&mut r).map_err(&broken)?);
        }
        let _type = u32_le(&mut r).map_err(&broken)?;
        let _offset = u64_le(&mut r).map_err(&broken)?;
        parameters = parameters.saturating_add(elements);
    }
    Ok(GgufHeader {
        architecture,
        parameters,
    })
}

const GGUF_STRING: u32 = 8;
const GGUF_ARRAY: u32 = 9;

fn read_n<const N: usize>(r: &mut impl Read) -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    r.read_exact(&mut bytes)
        .map_err(|e| format!("it ends early ({e})"))?;
    Ok(bytes)
}

fn u32_le(r: &mut impl Read) -> Result<u32, String> {
    read_n::<4>(r).map(u32::from_le_bytes)
}

fn u64_le(r: &mut impl Read) -> Result<u64, String> {
    read_n::<8>(r).map(u64::from_le_bytes)
}

fn gguf_string(r: &mut impl Read) -> Result<String, String> {
    let length = u64_le(r)?;
    if length > 1 << 24 {
        return Err(format!("a string of {length} bytes"));
    }
    let mut bytes = vec![0u8; length as usize];
    r.read_exact(&mut bytes)
        .map_err(|e| format!("it ends early ({e})"))?;
    String::from_utf8(bytes).map_err(|_| "a string that is not UTF-8".into())
}

/// Skips one metadata value of GGUF type `kind`.
fn skip_value(r: &mut impl Read, kind: u32) -> Result<(), String> {
    let width = match kind {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        GGUF_STRING => return gguf_string(r).map(drop),
        GGUF_ARRAY => {
            let item = u32_le(r)?;
            let count = u64_le(r)?;
            for _ in 0..count {
                skip_value(r, item)?;
            }
            return Ok(());
        }
        other => return Err(format!("a metadata value of unknown type {other}")),
    };
    std::io::copy(&mut r.take(width), &mut std::io::sink())
        .map_err(|e| format!("it ends early ({e})"))
        .and_then(|n| {
            (n == width)
                .then_some(())
                .ok_or_else(|| "it ends early".to_string())
        })
}

/// The memory exporting a checkpoint takes at its peak, as a multiple of its float32
/// weights: the exporter holds the float32 model, the exported graph it serialises
/// (the weights again), ONNX Runtime's reference session (again) and a quantizer's
/// working copy: four times, plus the interpreter and libraries.
pub const EXPORT_PEAK_FACTOR: u64 = 4;
pub const EXPORT_BASELINE_BYTES: u64 = 2 << 30;

/// The memory exporting `checkpoint` needs at its peak.
pub fn export_needs(checkpoint: &Checkpoint) -> u64 {
    checkpoint
        .float32_bytes
        .saturating_mul(EXPORT_PEAK_FACTOR)
        .saturating_add(EXPORT_BASELINE_BYTES)
}

/// This machine's available memory (`MemAvailable` of /proc/meminfo), where it can be read.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Refuses a checkpoint whose export would not fit in `available` bytes, with the sizes.
pub fn fits(checkpoint: &Checkpoint, available: Option<u64>) -> Result<(), String> {
    let needs = export_needs(checkpoint);
    match available {
        Some(available) if needs > available => Err(format!(
            "error: {} is too large for this machine: exporting it needs about {:.1} GB ({EXPORT_PEAK_FACTOR} × its {:.2} GB of float32 weights, counted from {}, + {:.0} GB for the exporter), and {:.1} GB are available\n  help: run it on a machine with more memory; nothing was exported or allocated",
            checkpoint.path.display(),
            gb(needs),
            gb(checkpoint.float32_bytes),
            checkpoint.counted(),
            gb(EXPORT_BASELINE_BYTES),
            gb(available)
        )),
        _ => Ok(()),
    }
}

fn gb(bytes: u64) -> f64 {
    bytes as f64 / 1e9
}

/// Checkpoint files with headers and no data, for tests of the refusals (unit tests here,
/// gen's CLI tests): a safetensors header, a GGUF header.
#[doc(hidden)]
pub mod test_files {
    use super::{GGUF_ARRAY, GGUF_STRING};
    use std::path::Path;

    /// A safetensors file whose header declares these shapes (float32) and no data.
    pub fn safetensors(path: &Path, shapes: &[&[u64]]) {
        let mut header = serde_json::Map::new();
        for (i, shape) in shapes.iter().enumerate() {
            header.insert(
                format!("t{i}"),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}),
            );
        }
        let header = serde_json::to_vec(&header).unwrap();
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header);
        std::fs::write(path, bytes).unwrap();
    }

    /// A GGUF v3 file with this architecture and one tensor of these dims (no data).
    pub fn gguf(path: &Path, architecture: &str, dims: &[u64]) {
        let string = |s: &str| {
            let mut b = (s.len() as u64).to_le_bytes().to_vec();
            b.extend(s.as_bytes());
            b
        };
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(1u64.to_le_bytes()); // tensors
        b.extend(3u64.to_le_bytes()); // metadata pairs
        // An array before the architecture: the reader must skip it.
        b.extend(string("tokenizer.ggml.tokens"));
        b.extend(GGUF_ARRAY.to_le_bytes());
        b.extend(GGUF_STRING.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        b.extend(string("a"));
        b.extend(string("b"));
        b.extend(string("general.alignment"));
        b.extend(4u32.to_le_bytes());
        b.extend(32u32.to_le_bytes());
        b.extend(string("general.architecture"));
        b.extend(GGUF_STRING.to_le_bytes());
        b.extend(string(architecture));
        b.extend(string("token_embd.weight"));
        b.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            b.extend(d.to_le_bytes());
        }
        b.extend(0u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        std::fs::write(path, b).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::test_files::{gguf, safetensors};
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("hwmatrix-checkpoint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_folder_is_read_from_its_config_and_headers() {
        let dir = folder("bert");
        std::fs::write(dir.join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
        safetensors(&dir.join("model.safetensors"), &[&[10, 20], &[5]]);
        let c = inspect(&dir).unwrap();
        assert_eq!(c.model_type, "bert");
        assert_eq!(c.parameters, Some(205));
        assert_eq!(c.float32_bytes, 820);
        assert!(matches!(c.weights, Weights::Safetensors(ref f) if f.len() == 1));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn what_is_not_a_checkpoint_is_refused_with_its_reason() {
        let empty = folder("empty");
        let e = inspect(&empty).unwrap_err();
        assert!(e.contains("is empty: not a checkpoint"), "{e}");

        let broken = folder("broken");
        std::fs::write(
            broken.join("config.json"),
            "{\n  \"model_type\": \"bert\",\n}",
        )
        .unwrap();
        let e = inspect(&broken).unwrap_err();
        assert!(e.contains("config.json:3:1: not valid JSON"), "{e}");

        let untyped = folder("untyped");
        std::fs::write(untyped.join("config.json"), "{}").unwrap();
        let e = inspect(&untyped).unwrap_err();
        assert!(e.contains("no `model_type`"), "{e}");

        let weightless = folder("weightless");
        std::fs::write(weightless.join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
        let e = inspect(&weightless).unwrap_err();
        assert!(e.contains("no weights"), "{e}");

        for dir in [empty, broken, untyped, weightless] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn a_gguf_names_its_architecture_and_parameters() {
        let dir = folder("gguf");
        let file = dir.join("tiny.Q4_1.gguf");
        gguf(&file, "llama", &[64, 1000]);
        let c = inspect(&file).unwrap();
        assert_eq!(
            (c.model_type.as_str(), c.parameters),
            ("llama", Some(64_000))
        );
        assert_eq!(c.name, "tiny.Q4_1");
        // A folder holding one GGUF and no config.json is that GGUF.
        assert_eq!(inspect(&dir).unwrap().model_type, "llama");

        gguf(&file, "rwkv6", &[64, 1000]);
        let e = inspect(&file).unwrap_err();
        assert!(e.contains("architecture `rwkv6`"), "{e}");
        assert!(e.contains("llama, mistral"), "{e}");

        std::fs::write(&file, b"GGML....").unwrap();
        let e = inspect(&file).unwrap_err();
        assert!(e.contains("not a GGUF file"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn weights_beyond_the_memory_here_are_refused_with_the_sizes() {
        let dir = folder("large");
        std::fs::write(dir.join("config.json"), r#"{"model_type": "llama"}"#).unwrap();
        // 70 billion parameters declared, not one byte of them written.
        safetensors(&dir.join("model.safetensors"), &[&[70_000, 1_000_000]]);
        let c = inspect(&dir).unwrap();
        let e = fits(&c, Some(24 << 30)).unwrap_err();
        assert!(e.contains("too large for this machine"), "{e}");
        assert!(e.contains("280.00 GB of float32 weights"), "{e}");
        assert!(e.contains("70000.0M parameters"), "{e}");
        // The same weights fit a machine with the memory.
        assert!(fits(&c, Some(2 << 40)).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
