//! The key a fixture is built under: sha256 over the spec (as the exporter
//! receives it), the exporter, its pinned requirements and the seed. It
//! decides one thing, whether `gen fixtures` rebuilds a fixture; what a check
//! read is its content (hwmatrix_cell::content), which a rebuild that
//! changed no byte leaves as it was. So the exporter is compiled into gen
//! only: editing it recompiles neither the runtime nor `generated/`.

use sha2::{Digest, Sha256};

/// The exporter and its requirements, compiled into gen.
pub const EXPORTER_SOURCE: &[u8] = include_bytes!("../../importer/exporter/export.py");
/// The rewrites the export recipe's last attempts apply (patches.py): part of the exporter.
pub const PATCHES_SOURCE: &[u8] = include_bytes!("../../importer/exporter/patches.py");
pub const EXPORTER_REQUIREMENTS: &[u8] = include_bytes!("../../importer/exporter/requirements.txt");
/// The exporter of models checked as components: only their keys cover it,
/// so editing it rebuilds their fixtures only.
pub const COMPONENTS_SOURCE: &[u8] = include_bytes!("../../importer/exporter/components.py");

/// The exporter of generation fixtures (a decoder with its cache, and
/// generate()'s reference): only their keys cover it, and it covers no other
/// fixture's, so editing it rebuilds generation fixtures only.
pub const GENERATION_SOURCE: &[u8] = include_bytes!("../../importer/exporter/generation.py");

/// The script that makes NNCF's formats beside a fixture (OpenVINO IR, for OpenVINO's
/// runtime) and its venv's pinned requirements: their key is in each fixture's `nncf.json`.
pub const NNCF_SOURCE: &[u8] = include_bytes!("../../importer/exporter/nncf_variants.py");
pub const NNCF_REQUIREMENTS: &[u8] =
    include_bytes!("../../importer/exporter/requirements-openvino-runtime.txt");
/// The script that makes transformers.js's formats export.py does not (bnb4, q2, q2f16) beside a
/// fixture, in the exporter's venv: their key (the script and the exporter's requirements)
/// is in each fixture's `transformersjs.json`.
pub const TRANSFORMERSJS_SOURCE: &[u8] =
    include_bytes!("../../importer/exporter/transformersjs_formats.py");
/// The script that converts a fixture's PyTorch module with OpenVINO's PyTorch frontend (and
/// makes NNCF's formats of the IR with nncf_variants.py's code), in OpenVINO's venv with the
/// exporter venv's torch: their key is in each fixture's `openvino_pytorch.json`.
pub const OPENVINO_PYTORCH_SOURCE: &[u8] =
    include_bytes!("../../importer/exporter/openvino_pytorch.py");
/// The script that converts a fixture on optimum's graph with optimum-intel (openvino_pytorch.py
/// with its own `convert`), and optimum-intel's venv's pinned requirements: the key of those
/// conversions covers them with openvino_pytorch.py's parts.
pub const OPTIMUM_INTEL_SOURCE: &[u8] = include_bytes!("../../importer/exporter/optimum_intel.py");
pub const OPTIMUM_INTEL_REQUIREMENTS: &[u8] =
    include_bytes!("../../importer/exporter/requirements-optimum-intel.txt");
/// The scripts that make a fixture on optimum's graph (`gen fixtures --graph optimum`), and
/// optimum's venv's pinned requirements: only those fixtures' keys cover them.
pub const OPTIMUM_SOURCES: [&[u8]; 3] = [
    include_bytes!("../../importer/exporter/optimum_graph.py"),
    include_bytes!("../../importer/exporter/optimum_export.py"),
    include_bytes!("../../importer/exporter/requirements-optimum.txt"),
];
/// The seed every fixture is built with.
pub const SEED: u64 = 0;

/// sha256 of the spec JSON the exporter receives.
pub fn spec_digest(spec_json: &[u8]) -> String {
    hex(&Sha256::digest(spec_json))
}

/// The fixture key for a spec digest, with the compiled-in exporter (and its
/// components exporter for a model checked as `components`).
pub fn fixture_key(spec_digest: &str, components: bool) -> String {
    let mut hasher = Sha256::new();
    let components: &[u8] = if components { COMPONENTS_SOURCE } else { &[] };
    let parts: [&[u8]; 6] = [
        spec_digest.as_bytes(),
        EXPORTER_SOURCE,
        PATCHES_SOURCE,
        EXPORTER_REQUIREMENTS,
        &SEED.to_le_bytes(),
        components,
    ];
    // An empty part adds nothing, so a whole model's key is what it was before components existed.
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// The key of a model's generation fixture (`<fixtures>/generation/<model_type>`):
/// the spec, both exporters (generation.py builds on export.py's helpers), the
/// requirements and the seed.
pub fn generation_fixture_key(spec_digest: &str) -> String {
    let mut hasher = Sha256::new();
    let parts: [&[u8]; 5] = [
        spec_digest.as_bytes(),
        GENERATION_SOURCE,
        EXPORTER_SOURCE,
        EXPORTER_REQUIREMENTS,
        &SEED.to_le_bytes(),
    ];
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// The key of NNCF's formats of a fixture (`nncf.json`'s `key`): the script and its requirements.
/// `gen fixtures` remakes formats made under another.
pub fn nncf_key() -> String {
    let mut hasher = Sha256::new();
    for part in [NNCF_SOURCE, NNCF_REQUIREMENTS] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// The key of transformersjs_formats.py's formats: the script and the exporter's requirements
/// (its quantizers are onnxruntime's).
pub fn transformersjs_key() -> String {
    let mut hasher = Sha256::new();
    for part in [TRANSFORMERSJS_SOURCE, EXPORTER_REQUIREMENTS] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// The key of openvino_pytorch.py's conversion: the script, nncf_variants.py (whose code
/// makes its NNCF formats), OpenVINO's venv's requirements and the exporter's (torch).
pub fn openvino_pytorch_key() -> String {
    let mut hasher = Sha256::new();
    for part in [
        OPENVINO_PYTORCH_SOURCE,
        NNCF_SOURCE,
        NNCF_REQUIREMENTS,
        EXPORTER_REQUIREMENTS,
    ] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// The key of optimum_intel.py's conversions (fixtures on optimum's graph): its script,
/// openvino_pytorch.py's key's parts and optimum-intel's venv's requirements.
pub fn optimum_intel_key() -> String {
    let mut hasher = Sha256::new();
    for part in [
        OPTIMUM_INTEL_SOURCE,
        OPENVINO_PYTORCH_SOURCE,
        NNCF_SOURCE,
        NNCF_REQUIREMENTS,
        EXPORTER_REQUIREMENTS,
        OPTIMUM_INTEL_REQUIREMENTS,
    ] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// The key of a fixture on optimum's graph: optimum's scripts and requirements, then the
/// model's own fixture key (its weights, inputs and references are that fixture's; the
/// key ends with it, as a checkpoint fixture's does).
pub fn optimum_key(fixture_key: &str) -> String {
    let mut hasher = Sha256::new();
    for part in OPTIMUM_SOURCES {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    format!("optimum:{}:{fixture_key}", hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_depends_on_the_spec() {
        let a = fixture_key(&spec_digest(b"{\"model_type\":\"bert\"}"), false);
        let b = fixture_key(&spec_digest(b"{\"model_type\":\"bert\",\"x\":1}"), false);
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_ne!(
            a,
            fixture_key(&spec_digest(b"{\"model_type\":\"bert\"}"), true),
            "the components exporter is part of a components key"
        );
        assert_eq!(
            a,
            fixture_key(&spec_digest(b"{\"model_type\":\"bert\"}"), false)
        );
        let generation = generation_fixture_key(&spec_digest(b"{\"model_type\":\"bert\"}"));
        assert_ne!(a, generation, "a generation fixture has a key of its own");
    }
}
