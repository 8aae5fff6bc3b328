//! hwmatrix's runtime: everything a generated cell does, written once.
//!
//! A cell in `generated/` is static data ([`cell::Cell`]) plus one call into
//! [`checks`]. The checks find the platform ([`platform`]), open the fixture
//! ([`fixture`]), run it on a real engine ([`engine`]) that verifies which
//! backend ran it, compare with the reference ([`compare`]) and write a
//! result record ([`record`]). Nothing here simulates a result.

pub mod cell;
pub mod checks;
pub mod compare;
pub mod engine;
pub mod fixture;
pub mod npy;
pub mod paths;
pub mod platform;
pub mod record;
pub mod tensor;

pub use cell::{BrowserBackend, Cell, Engine, ExecutionProvider, ModelCard, TensorDecl, Tolerance};
pub use platform::Platform;
pub use tensor::DType;
