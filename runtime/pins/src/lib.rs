//! Nothing to call: this crate exists for its manifest. Every build of the
//! workspace depends on it (through hwmatrix-cell), so the shared third-party
//! crates it names get the same features whichever packages a cargo command
//! selects, and one build's artifacts serve the next (the way cargo-hakari's
//! workspace-hack crates do). A stale pin costs rebuilds, never correctness.
