//! gen, the command line over hwmatrix's generator crates: hwmatrix-specs
//! (model-specs/ loaded, validated and planned), hwmatrix-codegen (the
//! generated crate rendered and written), hwmatrix-importer (specs derived,
//! fixtures built, cells measured into the evidence store) and
//! hwmatrix-results (the results database and the report). Each verb is a
//! module of [`cli`].

pub mod cli;
