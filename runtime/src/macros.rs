//! The test functions of a cell, written once. A generated test module is a
//! few invocations of [`checks!`], so 649 models × 8 platforms stay thin, and
//! every check, of whatever family (float32, a precision format, `generates`,
//! a wgpu quantization scheme), becomes a test the same way.

/// A cell's checks as `#[test]` functions, each named after its check
/// ([`crate::CheckId`]'s name) and running it through [`crate::RunCheck`].
///
/// - `checks!(CELL, gate = gate_cpu: runs = Runs, int8_matches_reference =
///   Precision(Precision::Int8))`: the checks run when the cell's cargo
///   features (its platform's, and its engine's if it has one) are all on in
///   the calling crate, and fail there if the platform is absent. The gate is
///   a macro of the calling crate (generated's platforms.rs) that puts
///   `#[cfg_attr(not(all(feature = ..)), ignore = "..")]` on each test: the
///   message is written once per platform and engine, not in every test (an
///   attribute takes a literal only, never a constant).
/// - `checks!(CELL, ignore = "unsupported: why": runs = Runs, ..)`: never run
///   (unsupported or known issue); `cargo test -- --include-ignored` tries
///   them anyway.
///
/// A test named otherwise than its check does not build: the name is the
/// check's identity in every record, evidence entry and report column.
#[macro_export]
macro_rules! checks {
    (@id $check:ident $(($family:ident::$variant:ident))?) => {
        $crate::CheckId::$check $(($crate::$family::$variant))?
    };
    (@named $test:ident = $check:ident $(($family:ident::$variant:ident))?) => {
        const _: () = assert!(
            $crate::checks!(@id $check $(($family::$variant))?).is_named(stringify!($test)),
            concat!("the test `", stringify!($test), "` is not named after the check it runs: run gen")
        );
    };
    ($cell:path, gate = $gate:ident: $($test:ident = $check:ident $(($family:ident::$variant:ident))?),+ $(,)?) => {
        $($crate::checks!(@named $test = $check $(($family::$variant))?);)+
        $gate! {
            $(
                #[doc = concat!("The cell's `", stringify!($test), "` check ([`runtime::CheckId`]).")]
                #[test]
                fn $test() {
                    $crate::RunCheck::run_check(&$cell, $crate::checks!(@id $check $(($family::$variant))?));
                }
            )+
        }
    };
    ($cell:path, ignore = $why:literal: $($test:ident = $check:ident $(($family:ident::$variant:ident))?),+ $(,)?) => {
        $($crate::checks!(@named $test = $check $(($family::$variant))?);)+
        $(
            #[doc = concat!("The cell's `", stringify!($test), "` check ([`runtime::CheckId`]).")]
            #[test]
            #[ignore = $why]
            fn $test() {
                $crate::RunCheck::run_check(&$cell, $crate::checks!(@id $check $(($family::$variant))?));
            }
        )+
    };
}

/// What a generated test calls: one check of a cell, by its identity. A
/// whole-model cell (an engine running the model's graph) runs the float32
/// checks, its precision formats and `generates`; a kernel cell (on wgpu,
/// with [`crate::Cell::with_quantization`]) runs the quantization schemes on
/// the model's weights.
pub trait RunCheck {
    /// Runs the check, records it, and panics (fails the test) when it failed.
    fn run_check(&self, check: crate::CheckId);
}

impl RunCheck for crate::Cell {
    fn run_check(&self, check: crate::CheckId) {
        use crate::CheckId;
        // A kernel cell (wgpu) runs only its quantization schemes; every other cell runs
        // the model's graph.
        let kernel = self.quantization.is_some();
        match check {
            CheckId::Runs if !kernel => crate::checks::runs(self),
            CheckId::MatchesReference if !kernel => crate::checks::matches_reference(self),
            CheckId::DynamicShapes if !kernel => crate::checks::dynamic_shapes(self),
            CheckId::Precision(precision) if !kernel => crate::checks::precision(self, precision),
            CheckId::Generates if !kernel => crate::checks::generates(self),
            CheckId::Quantization(scheme) if kernel => {
                crate::quant::check::quantization(self, scheme)
            }
            _ => panic!(
                "{check} is not a check of {} ({}): generated/ is out of date, run gen",
                self.id(),
                if kernel {
                    "wgpu's quantization schemes on the model's weights"
                } else {
                    "a cell that runs the model's graph"
                }
            ),
        }
    }
}
