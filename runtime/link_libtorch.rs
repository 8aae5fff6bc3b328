// Included by the build scripts of every crate whose test binaries link the
// runtime (runtime, generated, tests): with the `torch` feature they link
// libtorch from `dir`. torch-sys gives them no rpath (they would not start
// without LD_LIBRARY_PATH), and the linker's `--as-needed` drops
// libtorch_cuda, whose CUDA kernels register only when it is loaded, so a
// CUDA torch would never see a GPU: both are fixed here.
fn link_libtorch(dir: &str) {
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    if std::path::Path::new(dir).join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-L{dir}");
        println!("cargo:rustc-link-arg=-ltorch_cuda");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
}
