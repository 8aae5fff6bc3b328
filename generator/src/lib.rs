//! gen: model-specs/ in, the generated test crate out.
//!
//! load ([`spec`]) → plan the cells ([`plan`]) → render ([`render`]) →
//! write or check ([`write`]). [`fixtures`] drives the Python exporter and
//! [`list`] prints what the specs define; [`doctor`] what this machine can run;
//! [`evidence`] loads records into the results database and [`report`] turns them into the matrix. [`module_name`] is the one rule
//! that names a model_type's Rust module.

pub mod ci;
pub mod cli;
pub mod doctor;
pub mod evidence;
pub mod fixtures;
pub mod import;
pub mod list;
pub mod measure;
pub mod module_name;
pub mod plan;
pub mod render;
pub mod report;
pub mod spec;
pub mod workers;
pub mod write;
