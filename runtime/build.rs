//! With the `torch` feature, tch's build (torch-sys) tells where the libtorch
//! it linked lives. The runtime passes that on: to its own code (the engine
//! reports the library it runs), to its own unit-test binary's link, and,
//! through `links`, to the crates whose test binaries link it (`generated`
//! and `tests` include the same link fixes from their build scripts).
//! It also digests the code that decides each engine's verdicts
//! (verdict_code.rs), which every record carries.

include!("link_libtorch.rs");
include!("verdict_code.rs");

fn main() {
    // Each engine's verdict code digest, for the records its checks write
    // (`runtime::record::runtime_version`).
    let runtime_dir =
        std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=verdict_code.rs");
    for (engine, _) in VERDICT_CODE_ENGINES {
        for file in verdict_code_files(engine).expect("listed") {
            println!("cargo:rerun-if-changed={file}");
        }
        let digest = verdict_code_digest(&runtime_dir, engine).expect("the runtime's own sources");
        println!(
            "cargo:rustc-env=HWMATRIX_VERDICT_CODE_{}={digest}",
            engine.to_ascii_uppercase()
        );
    }
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-env=HWMATRIX_LIBTORCH_LIB={dir}");
        println!("cargo:libtorch_lib={dir}");
        link_libtorch(&dir);
    }
}
