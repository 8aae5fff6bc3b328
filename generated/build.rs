// With the `torch` feature, the test binaries link libtorch from the folder
// the runtime's build found it in. torch-sys gives them no rpath (they would
// not start without LD_LIBRARY_PATH), and the linker's `--as-needed` drops
// libtorch_cuda, whose CUDA kernels register only when it is loaded, so a
// CUDA torch would never see a GPU: both are fixed here.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_HWMATRIX_RUNTIME_LIBTORCH_LIB");
    let Ok(dir) = std::env::var("DEP_HWMATRIX_RUNTIME_LIBTORCH_LIB") else { return };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    if std::path::Path::new(&dir).join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-L{dir}");
        println!("cargo:rustc-link-arg=-ltorch_cuda");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
}
