//! With the `torch` feature, tch's build (torch-sys) tells where the libtorch
//! it linked lives. The runtime passes that on: to its own code (the engine
//! reports the library it runs), to its own unit-test binary's link, and,
//! through `links`, to the crates whose test binaries link it (`generated`
//! and `tests` include the same link fixes from their build scripts).

include!("link_libtorch.rs");

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-env=HWMATRIX_LIBTORCH_LIB={dir}");
        println!("cargo:libtorch_lib={dir}");
        link_libtorch(&dir);
    }
}
