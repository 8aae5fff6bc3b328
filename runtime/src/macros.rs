//! The test functions of a cell, written once. A generated test module is a
//! single invocation, so 300 models × 8 platforms stay thin and the check
//! names live here only (they match `hwmatrix_cell::CHECKS`).

/// The three checks of a cell as `#[test]` functions.
///
/// - `cell_tests!(CELL, gate = gate_cpu_torch)`: the checks run when the
///   cell's cargo features (its platform's, and its engine's if it has one)
///   are all on in the calling crate, and fail there if the platform is
///   absent. The gate is a macro of the calling crate (generated's
///   platforms.rs) that puts `#[cfg_attr(not(all(feature = ..)), ignore = "..")]`
///   on each test: the message is written once per platform and engine, not
///   in every test (an attribute takes a literal only, never a constant).
/// - `cell_tests!(CELL, ignore = "unsupported: why")`: never run (unsupported
///   or known issue); `cargo test -- --include-ignored` tries them anyway.
#[macro_export]
macro_rules! cell_tests {
    ($cell:path, gate = $gate:ident) => {
        $gate! {
            /// The export shape loads and runs; output names, dtypes and shapes as declared; all finite.
            #[test]
            fn runs() {
                $crate::checks::runs(&$cell);
            }
            /// Outputs within tolerance of the PyTorch float32 reference, which must be informative.
            #[test]
            fn matches_reference() {
                $crate::checks::matches_reference(&$cell);
            }
            /// The second input shape (padded masks, another batch) runs and matches its reference too.
            #[test]
            fn dynamic_shapes() {
                $crate::checks::dynamic_shapes(&$cell);
            }
        }
    };
    ($cell:path, ignore = $why:literal) => {
        /// The export shape loads and runs; output names, dtypes and shapes as declared; all finite.
        #[test]
        #[ignore = $why]
        fn runs() {
            $crate::checks::runs(&$cell);
        }
        /// Outputs within tolerance of the PyTorch float32 reference, which must be informative.
        #[test]
        #[ignore = $why]
        fn matches_reference() {
            $crate::checks::matches_reference(&$cell);
        }
        /// The second input shape (padded masks, another batch) runs and matches its reference too.
        #[test]
        #[ignore = $why]
        fn dynamic_shapes() {
            $crate::checks::dynamic_shapes(&$cell);
        }
    };
}

/// One float32 check of a cell (`runs`, `matches_reference` or
/// `dynamic_shapes`) as a `#[test]` function, where the cell's checks are
/// planned apart ([`hwmatrix_cell::CheckPlan`]): gated like
/// [`cell_tests!`], or ignored with its own reason.
#[macro_export]
macro_rules! check_test {
    ($check:ident, $cell:path, gate = $gate:ident) => {
        $gate! {
            #[doc = concat!("The cell's `", stringify!($check), "` check (`runtime::checks::", stringify!($check), "`).")]
            #[test]
            fn $check() {
                $crate::checks::$check(&$cell);
            }
        }
    };
    ($check:ident, $cell:path, ignore = $why:literal) => {
        #[doc = concat!("The cell's `", stringify!($check), "` check (`runtime::checks::", stringify!($check), "`).")]
        #[test]
        #[ignore = $why]
        fn $check() {
            $crate::checks::$check(&$cell);
        }
    };
}

/// A precision variant's check as a `#[test]` function named after it
/// (`int8_matches_reference`), gated like the cell's own checks, or ignored
/// with its own reason when the variant is a known issue.
#[macro_export]
macro_rules! precision_test {
    ($name:ident, $cell:path, $precision:ident, gate = $gate:ident) => {
        $gate! {
            /// The precision variant's outputs within its own tolerance of the float32 reference; the error is recorded.
            /// On the tiny random fixture this says the graph runs at that precision (its kernels
            /// and operators), not that a trained model keeps its accuracy: `gen checkpoint` says that.
            #[test]
            fn $name() {
                $crate::checks::precision(&$cell, $crate::Precision::$precision);
            }
        }
    };
    ($name:ident, $cell:path, $precision:ident, ignore = $why:literal) => {
        /// The precision variant's outputs within its own tolerance of the float32 reference; the error is recorded.
        /// On the tiny random fixture this says the graph runs at that precision (its kernels
        /// and operators), not that a trained model keeps its accuracy: `gen checkpoint` says that.
        #[test]
        #[ignore = $why]
        fn $name() {
            $crate::checks::precision(&$cell, $crate::Precision::$precision);
        }
    };
}

/// The `generates` check of a generating model's ONNX cell as a `#[test]`
/// function, gated like the cell's own checks, or ignored with its own reason.
#[macro_export]
macro_rules! generation_test {
    ($cell:path, gate = $gate:ident) => {
        $gate! {
            /// The decoder with its cache generates on this engine as PyTorch's generate() did: each step's logits within tolerance, the same top token.
            #[test]
            fn generates() {
                $crate::checks::generates(&$cell);
            }
        }
    };
    ($cell:path, ignore = $why:literal) => {
        /// The decoder with its cache generates on this engine as PyTorch's generate() did: each step's logits within tolerance, the same top token.
        #[test]
        #[ignore = $why]
        fn generates() {
            $crate::checks::generates(&$cell);
        }
    };
}

/// A quantization scheme's check of a webgpu cell as a `#[test]` function
/// named after it (`int4_quantization`): wgpu's kernels on the model's own
/// weights, gated like the platform's cells, or ignored with its own reason.
#[macro_export]
macro_rules! quantization_test {
    ($name:ident, $cell:path, $scheme:ident, gate = $gate:ident) => {
        $gate! {
            /// The model's weights quantized with this scheme on the wgpu adapter: the kernel agrees with the CPU, and the error agrees with the spec's rating.
            #[test]
            fn $name() {
                $crate::quant::check::quantization(&$cell, $crate::QuantScheme::$scheme);
            }
        }
    };
    ($name:ident, $cell:path, $scheme:ident, ignore = $why:literal) => {
        /// The model's weights quantized with this scheme on the wgpu adapter: the kernel agrees with the CPU, and the error agrees with the spec's rating.
        #[test]
        #[ignore = $why]
        fn $name() {
            $crate::quant::check::quantization(&$cell, $crate::QuantScheme::$scheme);
        }
    };
}
