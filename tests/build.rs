// The test binaries here link the runtime too, and with it libtorch when
// the `torch` feature is on: the same rpath and link fixes as `generated`'s.
include!("../generated/build.rs");
