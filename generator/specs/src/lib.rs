//! model-specs/ as gen reads it: the specs loaded, resolved and validated
//! ([`spec`]), the evidence store beside them ([`spec::evidence`]), and the
//! plan of every cell (model × platform × engine) resolved from both
//! ([`plan`]). [`module_name`] is the one rule that names a model_type's Rust
//! module; [`files`] writes a file so that no reader sees half of it.

pub mod files;
pub mod fixture_key;
pub mod module_name;
pub mod plan;
pub mod slice;
pub mod spec;
pub mod text;
