//! hwmatrix's runtime: everything a generated cell does, written once.
//!
//! A cell in `generated/` is static data ([`Cell`], from `hwmatrix-cell`)
//! plus [`checks!`], whose tests run a check each through [`RunCheck`]. The
//! checks ([`checks`]) find the platform ([`hwmatrix_platforms`]), open the
//! fixture ([`fixture`]), run it on a real engine ([`engine`]), judge where it
//! ran ([`placement`]), compare with the reference ([`compare`]) and write a
//! result record ([`record`]); cells that do not run get records too
//! ([`ledger`]); an engine that can crash its process runs each check in a
//! process of its own ([`isolation`]). Failures are typed
//! ([`error`]). Nothing here simulates a result.

pub mod bench;
pub mod checks;
pub mod compare;
pub mod engine;
pub mod error;
pub mod fixture;
pub mod generation;
pub mod isolation;
pub mod ledger;
mod macros;
pub mod npy;
pub mod placement;
pub mod quant;
pub mod record;
pub mod tensor;

pub use hwmatrix_cell::*;
pub use macros::RunCheck;
