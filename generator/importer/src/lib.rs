//! What gen learns by running things: specs derived from transformers'
//! registries ([`import`]), fixtures built by the Python exporter
//! ([`fixtures`], through a pool of [`workers`]), and a platform's cells
//! measured into the evidence store ([`measure`]).

pub mod fixtures;
pub mod import;
pub mod measure;
pub mod workers;
