//! The fixture contract (model-specs/README.md): `<root>/<model_type>/` with meta.json,
//! model.onnx, model.pt (TorchScript), and inputs/outputs for two shapes. Anything may produce one
//! (our exporter, a real checkpoint); checks rely on nothing but this layout, and
//! `content.json` (hwmatrix_cell::content, which `gen fixtures` writes) for the spec it was
//! built from and the digests of what each check reads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::content::{CONTENT_RECORD, Content};
use crate::error::{CheckError, ErrorKind};
use crate::npy;
use crate::paths;
use crate::tensor::Tensor;
use crate::{ModelDecl, Precision, TensorDecl};

#[derive(Debug, Deserialize)]
pub struct Meta {
    pub model_type: String,
    pub source: String,
    #[serde(default)]
    pub seed: Option<u64>,
    /// The key `gen fixtures` built it under (hwmatrix_specs::fixture_key):
    /// which build it is, for records; tools that make fixtures from real
    /// checkpoints may leave it out.
    #[serde(default)]
    pub cache_key: Option<String>,
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    /// One entry per shape; the first is the export shape.
    pub shapes: Vec<ShapeMeta>,
    /// The TorchScript export (`model.pt`): absent in fixtures made before it.
    #[serde(default)]
    pub torchscript: Option<ExtraExport>,
    /// Each precision variant (`model.int8.onnx`, `model.q4.onnx`...) under
    /// its precision's name: how it was made, or the converter's error.
    #[serde(default)]
    pub int8: Option<ExtraExport>,
    #[serde(default)]
    pub int8_avx2: Option<ExtraExport>,
    #[serde(default)]
    pub fp16: Option<ExtraExport>,
    #[serde(default)]
    pub q4: Option<ExtraExport>,
    #[serde(default)]
    pub q4f16: Option<ExtraExport>,
    #[serde(default)]
    pub qdq8: Option<ExtraExport>,
    /// model.onnx's nodes that produce no floating-point tensor (index and
    /// shape arithmetic), which providers may leave to the CPU by design.
    #[serde(default)]
    pub integer_nodes: Option<IntegerNodes>,
    /// Matrix-product layers with the activations they received on the
    /// export shape, for the quantization checks (exporter 9 on).
    #[serde(default)]
    pub linear_layers: Option<LinearLayers>,
    /// Another tool made the graph (optimum's ONNX exporter: `gen fixtures --graph
    /// optimum`): which of the spec's outputs it has. Absent: our exporter's graph,
    /// which has exactly the spec's outputs.
    #[serde(default)]
    pub graph: Option<GraphMeta>,
}

/// What a fixture on another tool's graph says of that graph (meta.json `graph`).
#[derive(Debug, Deserialize)]
pub struct GraphMeta {
    /// The spec's outputs the graph has: the ones compared (the fixture holds their references).
    pub outputs: Vec<String>,
    /// Each input the graph takes with the graph's own names of its axes ("" for a fixed
    /// size): another tool names them its way (optimum: `batch_size`, `sequence_length`),
    /// and a provider that builds static graphs fixes them by those names.
    #[serde(default)]
    pub input_axes: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// The exporter's sample of the model's matrix-product layers.
#[derive(Debug, Deserialize)]
pub struct LinearLayers {
    pub layers: Vec<LinearLayer>,
    /// How many the forward pass went through (the sample is spread over them).
    pub captured: usize,
    pub method: String,
}

/// One layer: `<dir>/x.npy` `[rows, in]` activations and `<dir>/w.npy` `[out, in]` weights.
#[derive(Debug, Deserialize)]
pub struct LinearLayer {
    pub name: String,
    pub role: crate::LayerRole,
    /// `linear`, `conv1d-transposed` (transformers' Conv1D), `conv1d`, `conv2d` (unfolded patches).
    pub kind: String,
    pub dir: String,
    pub rows: usize,
    #[serde(rename = "in")]
    pub in_features: usize,
    #[serde(rename = "out")]
    pub out_features: usize,
}

/// The exporter's split of model.onnx's named nodes, or why it has none:
/// `names` compute on index and shape data only (no float output, or no
/// float input), `float` on floating-point data. A node in neither was made by
/// ONNX Runtime's optimizer.
#[derive(Debug, Default, Deserialize)]
pub struct IntegerNodes {
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub float: Vec<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// How an extra export went (TorchScript, a precision variant): `file` when it was written, else the exporter's `error`.
#[derive(Debug, Deserialize)]
pub struct ExtraExport {
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// The record a script that makes formats after the export leaves beside a fixture
/// (`nncf.json`, `transformersjs.json`): how it made each, from one export of the fixture.
#[derive(Debug, Deserialize)]
struct MadeAfterExport {
    /// The key of the script that made them (hwmatrix_specs::fixture_key).
    key: String,
    /// The `cache_key` of the export they were made from.
    fixture_key: Option<String>,
    /// Each format, by its name (`nncf_int4`, `bnb4`); the record's other fields
    /// (`versions`) are not formats.
    #[serde(flatten)]
    formats: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub struct ShapeMeta {
    /// The size of every named input axis in this shape.
    pub axes: BTreeMap<String, usize>,
    pub inputs: Vec<TensorMeta>,
    pub outputs: Vec<TensorMeta>,
}

#[derive(Debug, Deserialize)]
pub struct TensorMeta {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
}

/// The two shapes of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The shape the model was exported with (`inputs/`, `outputs/`).
    Export,
    /// A second shape that must run too (`inputs2/`, `outputs2/`).
    Second,
}

impl Shape {
    fn index(self) -> usize {
        match self {
            Shape::Export => 0,
            Shape::Second => 1,
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Shape::Export => "",
            Shape::Second => "2",
        }
    }
}

#[derive(Debug)]
pub struct Fixture {
    pub dir: PathBuf,
    pub meta: Meta,
    /// What it holds (`content.json`), where `gen fixtures` recorded it.
    pub content: Option<Content>,
}

impl Fixture {
    /// Opens the fixture of a model under `HWMATRIX_FIXTURES` and checks that
    /// it was built from this model's spec with this checkout's exporter.
    /// A component's fixture is `<model_type>/<component>/` in the model's.
    pub fn open(model: &ModelDecl) -> Result<Fixture, CheckError> {
        let fixture = match model.component {
            None => Fixture::open_in(&paths::fixtures_dir(), model.model_type)?,
            Some(component) => {
                Fixture::open_component_in(&paths::fixtures_dir(), model.model_type, component)?
            }
        };
        fixture.check_fresh(model)?;
        Ok(fixture)
    }

    /// A fixture our exporter built (source `tiny-random`) must have been
    /// built from the spec it is used for ([`built_from`]).
    pub fn check_fresh(&self, model: &ModelDecl) -> Result<(), CheckError> {
        built_from(
            "fixture",
            &self.dir,
            &self.meta.source,
            self.meta.cache_key.as_deref(),
            self.content.as_ref(),
            model,
            model.spec_digest,
        )
    }

    /// What a record says of the fixture `check` read on `engine`.
    pub fn record(&self, check: &str, engine: crate::EngineKind) -> crate::record::FixtureRecord {
        fixture_record(
            &self.dir,
            &self.meta.source,
            self.meta.cache_key.as_deref(),
            self.content.as_ref(),
            check,
            engine,
        )
    }

    pub fn open_in(root: &Path, model_type: &str) -> Result<Fixture, CheckError> {
        Fixture::open_dir(root.join(model_type), root, model_type)
    }

    /// One component's fixture inside its model's.
    pub fn open_component_in(
        root: &Path,
        model_type: &str,
        component: &str,
    ) -> Result<Fixture, CheckError> {
        Fixture::open_dir(root.join(model_type).join(component), root, model_type)
    }

    fn open_dir(dir: PathBuf, root: &Path, model_type: &str) -> Result<Fixture, CheckError> {
        let meta_path = dir.join("meta.json");
        let invalid = |message: String| CheckError::new(ErrorKind::FixtureInvalid, message);
        let text = match std::fs::read_to_string(&meta_path) {
            Ok(text) => text,
            Err(_) => {
                let build = format!(
                    "build it with `cargo run -p generator --bin gen -- fixtures --model {model_type}`"
                );
                return Err(
                    match std::fs::read_to_string(paths::export_error_file(root, model_type)) {
                        Ok(error) => CheckError::new(
                            ErrorKind::ExportFailed,
                            format!(
                                "no fixture for {model_type}: the exporter failed on it: {}; fix the spec and {build}",
                                error.trim()
                            ),
                        ),
                        Err(_) => CheckError::new(
                            ErrorKind::FixtureMissing,
                            format!(
                                "no fixture for {model_type}: {} does not exist; {build}",
                                meta_path.display()
                            ),
                        ),
                    },
                );
            }
        };
        let meta: Meta = serde_json::from_str(&text)
            .map_err(|e| invalid(format!("{}: {e}", meta_path.display())))?;
        if meta.model_type != model_type {
            return Err(invalid(format!(
                "{}: model_type is {:?}, expected {model_type:?}",
                meta_path.display(),
                meta.model_type
            )));
        }
        if meta.shapes.len() != 2 {
            return Err(invalid(format!(
                "{}: {} shapes, the contract has 2",
                meta_path.display(),
                meta.shapes.len()
            )));
        }
        let content = Content::read(&dir);
        Ok(Fixture { dir, meta, content })
    }

    /// The spec's outputs a check judges: every one, or on another tool's graph the ones it
    /// has (each other is listed in meta.json's `graph.outputs_missing`, never compared).
    pub fn judged_outputs(&self, declared: &'static [TensorDecl]) -> Vec<&'static TensorDecl> {
        declared
            .iter()
            .filter(|d| {
                self.meta
                    .graph
                    .as_ref()
                    .is_none_or(|g| g.outputs.iter().any(|o| o == d.name))
            })
            .collect()
    }

    /// Whether another tool made the graph (which may give outputs the spec does not declare).
    pub fn is_another_tools_graph(&self) -> bool {
        self.meta.graph.is_some()
    }

    /// The inputs of another tool's graph with its own names of their axes ("" for a fixed
    /// size), where the fixture records them; None for our exporter's graph, whose axes are
    /// named as the spec's.
    pub fn graph_input_axes(&self) -> Option<Vec<(String, Vec<String>)>> {
        let axes = self.meta.graph.as_ref()?.input_axes.as_ref()?;
        Some(axes.iter().map(|(n, a)| (n.clone(), a.clone())).collect())
    }

    pub fn model_onnx(&self) -> PathBuf {
        self.dir.join("model.onnx")
    }

    /// The TorchScript export, or the exporter's reason for not having one
    /// (`meta.json`'s `torchscript.error`: tracing failed).
    pub fn model_torchscript(&self) -> Result<PathBuf, CheckError> {
        let path = self.dir.join("model.pt");
        if path.is_file() {
            return Ok(path);
        }
        Err(match &self.meta.torchscript {
            Some(ExtraExport {
                error: Some(error), ..
            }) => CheckError::new(
                ErrorKind::ExportFailed,
                format!("the exporter could not trace the model to TorchScript: {error}"),
            ),
            _ => CheckError::new(
                ErrorKind::FixtureInvalid,
                format!(
                    "{} has no model.pt: rebuild the fixture with `gen fixtures`",
                    self.dir.display()
                ),
            ),
        })
    }

    /// A precision variant's model (`model.q4.onnx`), or the exporter's
    /// reason for not having one (`meta.json`'s `q4.error`).
    pub fn model_precision(&self, precision: Precision) -> Result<PathBuf, CheckError> {
        if let Some((record, tool)) = precision.made_after_export() {
            return self.made_after_export(precision.name(), record, tool);
        }
        let path = self.dir.join(precision.model_file());
        if path.is_file() {
            return Ok(path);
        }
        let made = match precision {
            Precision::Fp16 => &self.meta.fp16,
            Precision::Int8 => &self.meta.int8,
            Precision::Int8Avx2 => &self.meta.int8_avx2,
            Precision::Q4 => &self.meta.q4,
            Precision::Q4f16 => &self.meta.q4f16,
            Precision::Qdq8 => &self.meta.qdq8,
            Precision::NncfInt8
            | Precision::NncfInt4
            | Precision::Bnb4
            | Precision::Q2
            | Precision::Q2f16 => {
                unreachable!("read from its script's record above")
            }
        };
        Err(match made.as_ref().and_then(|v| v.error.as_ref()) {
            Some(error) => {
                // A quantizer with nothing to quantize (no MatMul weight for q4's MatMulNBits) is not a
                // failure; nor is q4f16 then, which is made from q4 ("no q4 variant to convert").
                let nothing_to_quantize = |made: &Option<ExtraExport>| {
                    made.as_ref()
                        .and_then(|v| v.error.as_deref())
                        .is_some_and(|e| e.contains("quantized no node"))
                };
                let kind = if error.contains("quantized no node")
                    || (precision == Precision::Q4f16 && nothing_to_quantize(&self.meta.q4))
                {
                    ErrorKind::DoesNotApply
                } else {
                    ErrorKind::ExportFailed
                };
                CheckError::new(
                    kind,
                    format!(
                        "the exporter could not make the {} model: {error}",
                        precision.name()
                    ),
                )
            }
            None => CheckError::new(
                ErrorKind::FixtureInvalid,
                format!(
                    "{} has no {}: rebuild the fixture with `gen fixtures`",
                    self.dir.display(),
                    precision.model_file()
                ),
            ),
        })
    }

    /// The model OpenVINO's PyTorch frontend converted from the fixture's module (float32,
    /// `precision` None; on a fixture of optimum's graph, optimum-intel's conversion of the
    /// saved tiny model) or NNCF's format of it (`model.ov_pytorch.nncf_int8.xml`, made by
    /// openvino_pytorch.py), or the converter's or NNCF's reason for not having one.
    pub fn openvino_pytorch(&self, precision: Option<Precision>) -> Result<PathBuf, CheckError> {
        let converter = if self.is_another_tools_graph() {
            "optimum-intel"
        } else {
            "OpenVINO's PyTorch frontend"
        };
        match precision {
            None => {
                self.made_after_export("float32", crate::paths::OPENVINO_PYTORCH_RECORD, converter)
            }
            Some(p) if p.is_openvino_ir() => {
                self.made_after_export(p.name(), crate::paths::OPENVINO_PYTORCH_RECORD, "NNCF")
            }
            Some(p) => Err(CheckError::new(
                ErrorKind::EngineNotBuilt,
                format!(
                    "OpenVINO's PyTorch frontend makes OpenVINO IR, and NNCF's formats of it; {} is an ONNX graph",
                    p.name()
                ),
            )),
        }
    }

    /// A format a script made after the export (NNCF's IR `model.nncf_int4.xml` by
    /// nncf_variants.py, `model.bnb4.onnx` by transformersjs_formats.py, OpenVINO's
    /// conversion by openvino_pytorch.py), which says in its `record` how it made each
    /// `format` for this fixture, or `tool`'s reason for not making one.
    fn made_after_export(
        &self,
        format: &str,
        record: &str,
        tool: &str,
    ) -> Result<PathBuf, CheckError> {
        let path = self.dir.join(record);
        let rebuild = if record == crate::paths::TRANSFORMERSJS_RECORD {
            "run `gen fixtures`"
        } else {
            "run `bash tests/setup.sh openvino` (OpenVINO's runtime and NNCF), then `gen fixtures`"
        };
        let made: MadeAfterExport = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                CheckError::new(
                    ErrorKind::FixtureInvalid,
                    format!("{}: {e}", path.display()),
                )
            })?,
            Err(_) => {
                return Err(CheckError::new(
                    ErrorKind::FixtureInvalid,
                    format!(
                        "{} has no {} model ({record}): {rebuild}",
                        self.dir.display(),
                        format
                    ),
                ));
            }
        };
        // Which script made them is gen fixtures' question (it remakes them
        // under a new one); a cell asks that they are of this export, and the
        // ones whose digests content.json holds.
        let stale = if made.fixture_key != self.meta.cache_key {
            Some("from another export of this fixture")
        } else if self
            .content
            .as_ref()
            .is_some_and(|c| c.key_of(record) != Some(made.key.as_str()))
        {
            Some("after gen fixtures recorded what the fixture holds")
        } else {
            None
        };
        if let Some(how) = stale {
            return Err(CheckError::new(
                ErrorKind::FixtureInvalid,
                format!("{}: its formats were made {how}: {rebuild}", path.display()),
            ));
        }
        let variant: ExtraExport = made
            .formats
            .get(format)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or(ExtraExport {
                file: None,
                error: None,
            });
        match variant {
            ExtraExport {
                file: Some(file), ..
            } if self.dir.join(&file).is_file() => Ok(self.dir.join(file)),
            ExtraExport {
                error: Some(error), ..
            } => Err(CheckError::new(
                // A model whose weights NNCF leaves all in the backup width, or with no
                // MatMul a quantizer takes, has no such format.
                if error.contains("compressed no weight") || error.contains("quantized no node") {
                    ErrorKind::DoesNotApply
                } else {
                    ErrorKind::ExportFailed
                },
                format!("{tool} could not make the {} model: {error}", format),
            )),
            _ => Err(CheckError::new(
                ErrorKind::FixtureInvalid,
                format!(
                    "{} names no {} file that exists: {rebuild}",
                    path.display(),
                    format
                ),
            )),
        }
    }

    pub fn shape(&self, shape: Shape) -> &ShapeMeta {
        &self.meta.shapes[shape.index()]
    }

    /// The inputs of one shape, in the order meta.json lists them.
    pub fn inputs(&self, shape: Shape) -> Result<Vec<(String, Tensor)>, CheckError> {
        self.load(
            &format!("inputs{}", shape.suffix()),
            &self.shape(shape).inputs,
        )
    }

    /// The PyTorch float32 reference outputs of one shape.
    pub fn outputs(&self, shape: Shape) -> Result<Vec<(String, Tensor)>, CheckError> {
        self.load(
            &format!("outputs{}", shape.suffix()),
            &self.shape(shape).outputs,
        )
    }

    /// A layer's activations and weights as float32, checked against meta.json's shapes.
    pub fn linear_layer(&self, layer: &LinearLayer) -> Result<(Vec<f32>, Vec<f32>), CheckError> {
        let shapes = [
            vec![layer.rows, layer.in_features],
            vec![layer.out_features, layer.in_features],
        ];
        let [x, w] = ["x", "w"].map(|name| {
            let path = self.dir.join(&layer.dir).join(format!("{name}.npy"));
            let invalid = |message: String| CheckError::new(ErrorKind::FixtureInvalid, message);
            let tensor = npy::read(&path).map_err(invalid)?;
            let expected = if name == "x" { &shapes[0] } else { &shapes[1] };
            if &tensor.shape != expected {
                return Err(invalid(format!(
                    "{}/{name}.npy has shape {:?}, meta.json says {expected:?}",
                    layer.dir, tensor.shape
                )));
            }
            Ok(tensor
                .values()
                .into_iter()
                .map(|v| v as f32)
                .collect::<Vec<f32>>())
        });
        Ok((x?, w?))
    }

    fn load(
        &self,
        folder: &str,
        tensors: &[TensorMeta],
    ) -> Result<Vec<(String, Tensor)>, CheckError> {
        tensors
            .iter()
            .map(|t| Ok((t.name.clone(), read_checked(&self.dir, folder, t)?)))
            .collect()
    }
}

/// A digest as messages show it.
fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

/// Whether a fixture our exporter built (`source` tiny-random) in `dir` was
/// built from `spec_digest`, as its content.json (`content`) says, and
/// whether that record was taken of this build (meta.json's `cache_key`):
/// else it fails with the command that fixes it, never silently. Which
/// exporter built it is not asked: the record says what the check read.
/// `what` names it (`fixture`, `generation fixture`).
pub(crate) fn built_from(
    what: &str,
    dir: &Path,
    source: &str,
    cache_key: Option<&str>,
    content: Option<&Content>,
    model: &ModelDecl,
    spec_digest: &str,
) -> Result<(), CheckError> {
    if source != "tiny-random" {
        return Ok(());
    }
    let gen_fixtures = format!(
        "`cargo run -p generator --bin gen -- fixtures --model {}`",
        model.model_type
    );
    let stale = |message: String| Err(CheckError::new(ErrorKind::FixtureStale, message));
    match content {
        // Taken of another build (one `gen import` exported since): the
        // digests are not of these bytes.
        Some(content) if content.cache_key.as_deref() != cache_key => stale(format!(
            "the {what} {}'s {CONTENT_RECORD} was taken of another build of it (key {}, meta.json's is {}): run {gen_fixtures}, which takes it again",
            dir.display(),
            short(content.cache_key.as_deref().unwrap_or("none")),
            short(cache_key.unwrap_or("none")),
        )),
        Some(content) if content.spec_digest == spec_digest => Ok(()),
        Some(content) => stale(format!(
            "the {what} {} is stale: it was built from a spec with digest {}, but {} gives {}; rebuild it with {gen_fixtures}",
            dir.display(),
            short(&content.spec_digest),
            model.spec_path,
            short(spec_digest),
        )),
        None => stale(format!(
            "the {what} {} has no {CONTENT_RECORD} (what it holds, which records carry): rebuild it with {gen_fixtures}",
            dir.display()
        )),
    }
}

/// What a record says of a fixture a check read: its folder, source, build,
/// and the digest of the parts it read where content.json was taken of this
/// build (only such digests say what the check read).
pub(crate) fn fixture_record(
    dir: &Path,
    source: &str,
    cache_key: Option<&str>,
    content: Option<&Content>,
    check: &str,
    engine: crate::EngineKind,
) -> crate::record::FixtureRecord {
    crate::record::FixtureRecord {
        dir: dir.display().to_string(),
        source: source.to_string(),
        cache_key: cache_key.map(str::to_string),
        content: content
            .filter(|c| c.cache_key.as_deref() == cache_key)
            .map(|c| c.check_digest(check, engine)),
    }
}

/// `<dir>/<folder>/<name>.npy`, refused unless its shape is the one meta.json gives.
pub(crate) fn read_checked(dir: &Path, folder: &str, t: &TensorMeta) -> Result<Tensor, CheckError> {
    let invalid = |message: String| CheckError::new(ErrorKind::FixtureInvalid, message);
    let tensor = npy::read(&dir.join(folder).join(format!("{}.npy", t.name))).map_err(invalid)?;
    if tensor.shape != t.shape {
        return Err(invalid(format!(
            "{folder}/{}.npy has shape {:?}, meta.json says {:?}",
            t.name, tensor.shape, t.shape
        )));
    }
    Ok(tensor)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture folder without variant files, whose meta.json holds the exporter's errors.
    fn fixture_with(q4_error: &str) -> Fixture {
        let meta = serde_json::json!({
            "model_type": "m", "source": "tiny-random", "shapes": [],
            "q4": {"error": q4_error},
            "q4f16": {"error": "RuntimeError: no q4 variant to convert (its conversion failed)"},
        });
        Fixture {
            dir: std::env::temp_dir().join("hwmatrix-no-such-fixture"),
            meta: serde_json::from_value(meta).unwrap(),
            content: None,
        }
    }

    /// Ours is judged on every declared output; another tool's graph on those it has.
    #[test]
    fn another_tools_graph_is_judged_on_the_outputs_it_has() {
        use hwmatrix_cell::DType;
        static DECLARED: [TensorDecl; 2] = [
            TensorDecl {
                name: "last_hidden_state",
                dtype: DType::Float32,
                axes: &["batch"],
            },
            TensorDecl {
                name: "pooler_output",
                dtype: DType::Float32,
                axes: &["batch"],
            },
        ];
        let names = |f: &Fixture| {
            f.judged_outputs(&DECLARED)
                .iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
        };
        let ours = fixture_with("none");
        assert_eq!(names(&ours), ["last_hidden_state", "pooler_output"]);
        assert!(!ours.is_another_tools_graph());
        assert_eq!(ours.graph_input_axes(), None);
        let meta = serde_json::json!({
            "model_type": "m", "source": "optimum-onnx 0.1.0", "shapes": [],
            "graph": {"outputs": ["last_hidden_state"], "task": "feature-extraction",
                      "input_axes": {"input_ids": ["batch_size", "sequence_length"], "pixel_values": ["batch_size", "", "", ""]}},
        });
        let optimum = Fixture {
            meta: serde_json::from_value(meta).unwrap(),
            ..fixture_with("none")
        };
        assert_eq!(names(&optimum), ["last_hidden_state"]);
        assert!(optimum.is_another_tools_graph());
        // Static-shape providers fix the graph's own axis names, not the spec's.
        let axes = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            optimum.graph_input_axes(),
            Some(vec![
                ("input_ids".into(), axes(&["batch_size", "sequence_length"])),
                ("pixel_values".into(), axes(&["batch_size", "", "", ""])),
            ])
        );
    }

    #[test]
    fn q4f16_does_not_apply_where_q4_had_nothing_to_quantize() {
        let nothing = fixture_with(
            "RuntimeError: MatMulNBitsQuantizer quantized no node: the graph has no MatMul",
        );
        for precision in [Precision::Q4, Precision::Q4f16] {
            let error = nothing.model_precision(precision).unwrap_err();
            assert_eq!(
                error.kind,
                ErrorKind::DoesNotApply,
                "{precision:?}: {}",
                error.message
            );
        }
        // A q4 conversion that failed otherwise leaves q4f16 an exporter failure.
        let failed = fixture_with("RuntimeError: the quantizer crashed");
        let error = failed.model_precision(Precision::Q4f16).unwrap_err();
        assert_eq!(error.kind, ErrorKind::ExportFailed, "{}", error.message);
    }

    /// NNCF's formats are read from nncf.json: made, not applicable, failed, stale or absent.
    #[test]
    fn nncf_formats_say_what_nncf_made() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-nncf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({
            "model_type": "m", "source": "tiny-random", "shapes": [], "cache_key": "k1",
        });
        let content = |nncf_key: &str| Content {
            spec_digest: "s".into(),
            cache_key: Some("k1".into()),
            made_after_export: [(crate::paths::NNCF_RECORD.into(), nncf_key.into())].into(),
            built_on: None,
            parts: Default::default(),
        };
        let mut fixture = Fixture {
            dir: dir.clone(),
            meta: serde_json::from_value(meta).unwrap(),
            content: Some(content("script-1")),
        };
        let kind = |p: Precision| fixture.model_precision(p).map_err(|e| e.kind);
        assert_eq!(kind(Precision::NncfInt8), Err(ErrorKind::FixtureInvalid));
        let record = |key: &str, fixture_key: &str| {
            let made = serde_json::json!({
                "key": key, "fixture_key": fixture_key,
                "nncf_int8": {"file": "model.nncf_int8.xml"},
                "nncf_int4": {"error": "NNCF compressed no weight to int4 ({'int4': 0, 'int8': 3})"},
            });
            std::fs::write(dir.join(crate::paths::NNCF_RECORD), made.to_string()).unwrap();
        };
        record("script-1", "k1");
        // Named but not on disk: the fixture is broken, not the format.
        assert_eq!(kind(Precision::NncfInt8), Err(ErrorKind::FixtureInvalid));
        std::fs::write(dir.join("model.nncf_int8.xml"), "<net/>").unwrap();
        assert_eq!(
            kind(Precision::NncfInt8),
            Ok(dir.join("model.nncf_int8.xml"))
        );
        assert_eq!(kind(Precision::NncfInt4), Err(ErrorKind::DoesNotApply));
        // Made from an earlier export of the fixture: refused, with how to remake it.
        record("script-1", "k0");
        let stale = fixture.model_precision(Precision::NncfInt8).unwrap_err();
        assert_eq!(stale.kind, ErrorKind::FixtureInvalid);
        assert!(stale.message.contains("gen fixtures"), "{}", stale.message);
        // Remade after gen fixtures took the fixture's digests: refused too,
        // until it takes them again.
        record("script-2", "k1");
        let older = fixture.model_precision(Precision::NncfInt8).unwrap_err();
        assert!(
            older.message.contains("gen fixtures recorded"),
            "{}",
            older.message
        );
        fixture.content = Some(content("script-2"));
        assert!(fixture.model_precision(Precision::NncfInt8).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// transformers.js's formats are read from their own record, keyed apart from NNCF's.
    #[test]
    fn transformersjs_formats_name_their_quantizer() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-tjs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({
            "model_type": "m", "source": "tiny-random", "shapes": [], "cache_key": "k1",
        });
        let fixture = Fixture {
            dir: dir.clone(),
            meta: serde_json::from_value(meta).unwrap(),
            content: Some(Content {
                spec_digest: "s".into(),
                cache_key: Some("k1".into()),
                made_after_export: [
                    (crate::paths::NNCF_RECORD.into(), "nncf-script".into()),
                    (
                        crate::paths::TRANSFORMERSJS_RECORD.into(),
                        "tjs-script".into(),
                    ),
                    (
                        crate::paths::OPENVINO_PYTORCH_RECORD.into(),
                        "ovp-script".into(),
                    ),
                ]
                .into(),
                built_on: None,
                parts: Default::default(),
            }),
        };
        let made = serde_json::json!({
            "key": "tjs-script", "fixture_key": "k1", "versions": {"onnxruntime": "1.31.1"},
            "bnb4": {"file": "model.bnb4.onnx"},
            "q2": {"error": "RuntimeError: MatMulNBitsQuantizer quantized no node: the graph has no MatMul"},
            "q2f16": {"error": "RuntimeError: no q2 model to convert: RuntimeError: MatMulNBitsQuantizer quantized no node: the graph has no MatMul"},
        });
        std::fs::write(
            dir.join(crate::paths::TRANSFORMERSJS_RECORD),
            made.to_string(),
        )
        .unwrap();
        std::fs::write(dir.join("model.bnb4.onnx"), "graph").unwrap();
        assert_eq!(
            fixture.model_precision(Precision::Bnb4).map_err(|e| e.kind),
            Ok(dir.join("model.bnb4.onnx"))
        );
        let q2 = fixture.model_precision(Precision::Q2).unwrap_err();
        assert_eq!(q2.kind, ErrorKind::DoesNotApply);
        assert!(
            q2.message
                .starts_with("ONNX Runtime's quantizer could not make the q2 model"),
            "{}",
            q2.message
        );
        // q2f16 is converted from q2: where q2 had nothing to quantize, neither has it.
        let q2f16 = fixture.model_precision(Precision::Q2f16).unwrap_err();
        assert_eq!(q2f16.kind, ErrorKind::DoesNotApply, "{}", q2f16.message);

        // OpenVINO's PyTorch frontend: its conversion's error is the converter's, whole, and
        // NNCF's formats of a model it did not make say why; an ONNX format is not its.
        let converted = serde_json::json!({
            "key": "ovp-script", "fixture_key": "k1",
            "float32": {"error": "openvino._pyopenvino.OpConversionFailure: No conversion rule found for operations: aten::diff"},
            "nncf_int8": {"error": "no converted model to compress"},
        });
        std::fs::write(
            dir.join(crate::paths::OPENVINO_PYTORCH_RECORD),
            converted.to_string(),
        )
        .unwrap();
        let float32 = fixture.openvino_pytorch(None).unwrap_err();
        assert_eq!(float32.kind, ErrorKind::ExportFailed);
        assert_eq!(
            float32.message,
            "OpenVINO's PyTorch frontend could not make the float32 model: openvino._pyopenvino.OpConversionFailure: No conversion rule found for operations: aten::diff"
        );
        let int8 = fixture
            .openvino_pytorch(Some(Precision::NncfInt8))
            .unwrap_err();
        assert!(
            int8.message
                .starts_with("NNCF could not make the nncf_int8"),
            "{}",
            int8.message
        );
        assert_eq!(
            fixture
                .openvino_pytorch(Some(Precision::Q4))
                .unwrap_err()
                .kind,
            ErrorKind::EngineNotBuilt
        );
        std::fs::write(
            dir.join(crate::paths::OPENVINO_PYTORCH_RECORD),
            serde_json::json!({"key": "ovp-script", "fixture_key": "k1", "float32": {"file": "model.ov_pytorch.xml"}}).to_string(),
        )
        .unwrap();
        std::fs::write(dir.join("model.ov_pytorch.xml"), "ir").unwrap();
        assert_eq!(
            fixture.openvino_pytorch(None).map_err(|e| e.kind),
            Ok(dir.join("model.ov_pytorch.xml"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
