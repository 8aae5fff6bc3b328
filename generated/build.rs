// With the `torch` feature, the test binaries link libtorch from the folder
// the runtime's build found it in (passed on through the runtime's `links`).

include!("../runtime/link_libtorch.rs");

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_HWMATRIX_RUNTIME_LIBTORCH_LIB");
    if let Ok(dir) = std::env::var("DEP_HWMATRIX_RUNTIME_LIBTORCH_LIB") {
        link_libtorch(&dir);
    }
}
