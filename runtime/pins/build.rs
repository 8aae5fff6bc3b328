// Empty: cargo resolves build-dependencies only for a package with a build
// script, and the pins of the proc macros' crates are build-dependencies.
fn main() {}
