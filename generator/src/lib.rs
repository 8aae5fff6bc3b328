//! gen: model-specs/ in, the generated test crate out.
//!
//! load ([`spec`]) → plan the cells ([`plan`]) → render ([`render`]) →
//! write or check ([`write`]). [`fixtures`] drives the Python exporter and
//! [`list`] prints what the specs define.

pub mod cli;
pub mod fixtures;
pub mod list;
pub mod plan;
pub mod render;
pub mod spec;
pub mod write;
