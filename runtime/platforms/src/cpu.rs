//! The host CPU: ONNX Runtime's default provider, compiled into every build.

use crate::{Availability, Provider};

pub struct Cpu;

impl Provider for Cpu {}

pub fn detect() -> Availability {
    Availability::Present("host CPU".into())
}
