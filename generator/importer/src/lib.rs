//! What gen learns by running things: specs derived from transformers'
//! registries ([`derive`]), fixtures built by the Python exporter
//! ([`fixtures`], through a pool of [`workers`]), and a platform's cells
//! measured into the evidence store ([`measure`]), and what each architecture
//! weighs at its default size ([`memory`]).

pub mod after_export;
pub mod checkpoint;
pub mod derive;
pub mod fixtures;
pub mod measure;
pub mod memory;
pub mod workers;
