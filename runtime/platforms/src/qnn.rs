//! Qualcomm's QNN provider, a plugin (`onnxruntime-qnn`): a Snapdragon's
//! Hexagon NPU, else Qualcomm's HTP emulator, the x86-64 `libQnnHtp.so` of
//! the same wheel, which runs the same graphs on the CPU.

use std::path::PathBuf;

use hwmatrix_cell::ExecutionProvider;

use crate::files::first_existing;
use crate::onnxruntime::Plugin;
use crate::{Availability, Provider};

pub struct Qnn;

impl Provider for Qnn {
    fn plugin(&self) -> Option<Plugin> {
        Some(Plugin {
            package: "onnxruntime_qnn",
            file: "libonnxruntime_providers_qnn.so",
            wheel: "onnxruntime-qnn==2.7.0",
        })
    }
}

/// What records and reports call evidence from Qualcomm's HTP emulator: not a
/// Snapdragon, so its timings mean nothing and its numerics are the emulator's.
pub const HTP_EMULATOR: &str = "QNN HTP emulator (x86_64)";

/// A Snapdragon's DSP devices: where none exists, QNN runs on the emulator.
pub const DSP_DEVICES: [&str; 3] = ["/dev/fastrpc-cdsp", "/dev/adsprpc-smd", "/dev/fastrpc-adsp"];

pub fn detect() -> Availability {
    match first_existing(&DSP_DEVICES) {
        Some(dev) => Availability::Present(format!("Qualcomm DSP {}", dev.display())),
        None => match htp_emulator() {
            Ok(htp) => Availability::Present(format!("{HTP_EMULATOR}: {}", htp.display())),
            Err(why) => Availability::Absent(format!(
                "no Qualcomm Hexagon NPU (none of /dev/fastrpc-cdsp, /dev/adsprpc-smd, /dev/fastrpc-adsp exists), and {why}"
            )),
        },
    }
}

/// The HTP emulator of the plugin's wheel (`libQnnHtp.so` beside the plugin
/// library), on an x86-64 machine.
pub fn htp_emulator() -> Result<PathBuf, String> {
    if !cfg!(target_arch = "x86_64") {
        return Err(format!(
            "Qualcomm's HTP emulator is an x86-64 library; this is {}",
            std::env::consts::ARCH
        ));
    }
    let plugin =
        crate::plugin_library(ExecutionProvider::Qnn).expect("QNN is a plugin provider")?;
    let htp = plugin.with_file_name("libQnnHtp.so");
    if htp.is_file() {
        Ok(htp)
    } else {
        Err(format!("no HTP emulator: {} does not exist", htp.display()))
    }
}
