//! With the `torch` feature, tch's build (torch-sys) tells where the libtorch
//! it linked lives. The runtime passes that on, to its own code (the engine
//! reports the library it runs) and, through `links`, to the crate whose test
//! binaries link it: `generated`'s build script sets their rpath from it, so
//! they find libtorch without LD_LIBRARY_PATH.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-env=HWMATRIX_LIBTORCH_LIB={dir}");
        println!("cargo:libtorch_lib={dir}");
    }
}
