//! The code that decides a check's verdict, by engine: the list and digest
//! the runtime's build script bakes into every record
//! (runtime/verdict_code.rs, included here as is), and today's digest from
//! the checkout, which gen compares a stored entry's with.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use crate::EngineKind;

include!("../../verdict_code.rs");

/// How a record names the runtime that wrote it: `0.1.0 (verdict code 8c3f...)`.
pub fn describe(version: &str, digest: &str) -> String {
    format!("{version} (verdict code {digest})")
}

/// The verdict code digest a record's runtime version names, if it names one.
pub fn named_in(runtime: &str) -> Option<&str> {
    let (_, rest) = runtime.split_once("(verdict code ")?;
    rest.strip_suffix(')')
}

/// Today's runtime version for `engine` as a record built from this
/// checkout would name it, read from the checkout's runtime/ (once per
/// process and engine); None outside a checkout or where a file is missing.
pub fn today(engine: EngineKind) -> Option<String> {
    static TODAY: OnceLock<Mutex<BTreeMap<EngineKind, Option<String>>>> = OnceLock::new();
    let cache = TODAY.get_or_init(|| Mutex::new(BTreeMap::new()));
    let mut cache = cache.lock().expect("not poisoned");
    cache
        .entry(engine)
        .or_insert_with(|| {
            let runtime_dir = crate::paths::checkout_root()?.join("runtime");
            let digest = verdict_code_digest(&runtime_dir, engine.name()).ok()?;
            Some(describe(env!("CARGO_PKG_VERSION"), &digest))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every engine has its list; a comment edit changes no digest, a code
    /// edit changes its engine's and not another engine's.
    #[test]
    fn the_digest_follows_code_not_comments() {
        let dir = std::env::temp_dir().join(format!("hwmatrix-verdict-{}", std::process::id()));
        let all: Vec<&str> = VERDICT_CODE_ENGINES
            .iter()
            .flat_map(|(engine, _)| verdict_code_files(engine).expect("listed"))
            .collect();
        for file in &all {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "fn check() {\n    compare();\n}\n").unwrap();
        }
        for engine in [
            EngineKind::Onnxruntime,
            EngineKind::Libtorch,
            EngineKind::Wgpu,
            EngineKind::Chromium,
            EngineKind::Openvino,
            EngineKind::Firefox,
            EngineKind::OpenvinoPytorch,
        ] {
            assert!(
                verdict_code_files(engine.name()).is_some(),
                "{engine:?} is listed"
            );
        }
        let digest = |engine: &str| verdict_code_digest(&dir, engine).unwrap();
        let (onnx, torch) = (digest("onnxruntime"), digest("libtorch"));
        std::fs::write(
            dir.join("src/engine/onnx.rs"),
            "// a comment\nfn check() {\n\n    compare(); \n}\n",
        )
        .unwrap();
        assert_eq!(digest("onnxruntime"), onnx, "a comment and blank lines");
        std::fs::write(
            dir.join("src/engine/onnx.rs"),
            "fn check() {\n    compare(1);\n}\n",
        )
        .unwrap();
        assert_ne!(digest("onnxruntime"), onnx, "the adapter's code changed");
        assert_eq!(digest("libtorch"), torch, "another engine's adapter");
        std::fs::write(dir.join("src/compare.rs"), "fn compare() { strict() }\n").unwrap();
        assert_ne!(
            digest("libtorch"),
            torch,
            "the comparison every engine uses"
        );
        assert!(verdict_code_digest(&dir, "tensorrt").is_err());
        let named = describe("0.1.0", &onnx);
        assert_eq!(named_in(&named), Some(onnx.as_str()));
        assert_eq!(named_in("0.1.0"), None, "written before records named it");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The list names files of this checkout (a missing one would stop the
    /// runtime's build script too).
    #[test]
    fn every_listed_file_is_in_the_checkout() {
        let runtime_dir = crate::paths::checkout_root()
            .expect("tests run in the checkout")
            .join("runtime");
        for (engine, _) in VERDICT_CODE_ENGINES {
            assert!(
                verdict_code_digest(&runtime_dir, engine).is_ok(),
                "{engine}"
            );
        }
        assert!(today(EngineKind::Firefox).is_some());
    }
}
