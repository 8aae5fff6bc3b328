//! The generated crate written from the plan: each model's module, adapters
//! and test modules rendered ([`render`]: quote for Rust items, Tera for the
//! test modules), then written or checked ([`write`]). [`list`] prints what
//! the plan holds; [`workflow`] writes the CI workflow from hardware.yaml.

pub mod list;
pub mod render;
pub mod workflow;
pub mod write;
