//! The 8 hardware platforms, by name. Whether one is present on this machine:
//! [`crate::presence`].

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Cpu,
    Cuda,
    Rocm,
    Mps,
    Openvino,
    Qnn,
    Webnn,
    Webgpu,
}

impl Platform {
    pub const ALL: [Platform; 8] = [
        Platform::Cpu,
        Platform::Cuda,
        Platform::Rocm,
        Platform::Mps,
        Platform::Openvino,
        Platform::Qnn,
        Platform::Webnn,
        Platform::Webgpu,
    ];

    /// The lowercase name used in specs, test paths, cargo features and records.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Cpu => "cpu",
            Platform::Cuda => "cuda",
            Platform::Rocm => "rocm",
            Platform::Mps => "mps",
            Platform::Openvino => "openvino",
            Platform::Qnn => "qnn",
            Platform::Webnn => "webnn",
            Platform::Webgpu => "webgpu",
        }
    }

    pub fn from_name(name: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for platform in Platform::ALL {
            assert_eq!(Platform::from_name(platform.name()), Some(platform));
        }
        assert_eq!(Platform::from_name("tpu"), None);
    }
}
