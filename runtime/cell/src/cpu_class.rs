//! The CPU's class: the instruction-set features that decide which integer
//! kernels an engine runs, so a precision verdict measured on one CPU is
//! never taken for another's. ONNX Runtime's MLAS picks its u8×s8 GEMM by
//! the best of AMX, AVX-512 VNNI, AVX-512 (BW/DQ/VL), AVX-VNNI and AVX2, and
//! without VNNI its `vpmaddubsw` pairs saturate at 16 bits (its quantization
//! guide's `reduce_range`); OpenVINO's oneDNN dispatches on the same
//! features. So a class is named by the kernel family those features select,
//! and keeps the features themselves as provenance.
//!
//! The class is read from `/proc/cpuinfo`'s flags where there is one (the
//! same words a machine's `cpu.txt` carries, so records from elsewhere are
//! classed by the same function), else from the standard library's feature
//! detection.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The features that decide the kernels, by `/proc/cpuinfo`'s names, in the
/// order the class is chosen (best first within an architecture).
const X86_FEATURES: [&str; 7] = [
    "amx_int8",
    "amx_tile",
    "avx512_vnni",
    "avx512bw",
    "avx512f",
    "avx_vnni",
    "avx2",
];
/// arm64's (`/proc/cpuinfo` names: `asimddp` is the dot product, `i8mm` the int8 matrix multiply).
const ARM64_FEATURES: [&str; 4] = ["i8mm", "asimddp", "sve", "asimd"];

/// A CPU class: the architecture and the kernel family its features select.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CpuClass {
    /// `x86-64 avx512-vnni`, `x86-64 avx2`, `arm64 i8mm`: what entries and reports key by.
    pub class: String,
    /// The deciding features present, by `/proc/cpuinfo`'s names (`avx2 avx512f avx512_vnni`).
    pub features: Vec<String>,
    /// Whether ONNX Runtime's u8 x s8 kernels can saturate here ([`int8_may_saturate`]),
    /// so that readers of a record (tests/checkpoint.sh) need not know the classes.
    #[serde(default)]
    pub int8_may_saturate: bool,
}

/// Every class this module can name, best first: what a report lists as
/// measured or never measured.
pub const CLASSES: [&str; 9] = [
    "x86-64 amx",
    "x86-64 avx512-vnni",
    "x86-64 avx512",
    "x86-64 avx-vnni",
    "x86-64 avx2",
    "x86-64 sse",
    "arm64 i8mm",
    "arm64 dotprod",
    "arm64 neon",
];

impl CpuClass {
    /// The class of a CPU with these `/proc/cpuinfo` flags (words separated
    /// by white space), for the architecture they belong to: arm64's flags
    /// have `asimd`, x86's `sse2`.
    pub fn from_flags(flags: &str) -> CpuClass {
        let words: Vec<&str> = flags.split_whitespace().collect();
        let has = |f: &str| words.contains(&f);
        let arm = has("asimd") || has("fp") && !has("sse2");
        let known: &[&str] = if arm { &ARM64_FEATURES } else { &X86_FEATURES };
        let features: Vec<String> = known
            .iter()
            .filter(|f| has(f))
            .map(|f| f.to_string())
            .collect();
        let family = if arm {
            if has("i8mm") {
                "arm64 i8mm"
            } else if has("asimddp") {
                "arm64 dotprod"
            } else {
                "arm64 neon"
            }
        } else if has("amx_int8") && has("amx_tile") {
            "x86-64 amx"
        } else if has("avx512_vnni") {
            "x86-64 avx512-vnni"
        } else if has("avx512bw") {
            "x86-64 avx512"
        } else if has("avx_vnni") {
            "x86-64 avx-vnni"
        } else if has("avx2") {
            "x86-64 avx2"
        } else {
            "x86-64 sse"
        };
        CpuClass {
            class: family.to_string(),
            features,
            int8_may_saturate: int8_may_saturate(family),
        }
    }

    /// The class of the `flags` line of a `/proc/cpuinfo`-like text
    /// (`flags : ...` on x86, `Features : ...` on arm64); None without one.
    pub fn from_cpuinfo(text: &str) -> Option<CpuClass> {
        flags_line(text).map(CpuClass::from_flags)
    }

    /// This machine's class, read once per process.
    pub fn here() -> &'static CpuClass {
        static HERE: OnceLock<CpuClass> = OnceLock::new();
        HERE.get_or_init(|| flags_here().map_or_else(detected, CpuClass::from_flags))
    }

    /// `x86-64 avx512-vnni (avx512_vnni avx512bw avx512f avx_vnni avx2)`: the
    /// class with its features, as provenance says it.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.class, self.features.join(" "))
    }
}

/// The features besides a class's own that choose the float kernels a fixture
/// is computed with (oneDNN's and MKL's ISA levels under PyTorch's references
/// and the quantizers' calibration; arm64's half and bfloat16 arithmetic).
/// Two CPUs of one class can differ here: this machine's Ice Lake (no
/// AVX-VNNI, no AVX-512 BF16) and a Sapphire Rapids without AMX exposed are
/// both `x86-64 avx512-vnni`, and their exports of clap differ in bytes.
const X86_FLOAT_FEATURES: [&str; 6] = [
    "fma",
    "avx512vl",
    "avx512dq",
    "avx512_bf16",
    "avx512_fp16",
    "amx_bf16",
];
const ARM64_FLOAT_FEATURES: [&str; 4] = ["asimdhp", "fphp", "bf16", "sve2"];

/// What a fixture's bytes may depend on of the CPU that built it: its class
/// and every feature that chooses an integer or float kernel
/// (`x86-64 avx512-vnni (avx512_vnni avx512bw avx512f avx2 fma avx512vl avx512dq)`).
/// Fixtures are compared by content only between builds of the same (see
/// crate::content::comparable).
pub fn built_on(flags: &str) -> String {
    let class = CpuClass::from_flags(flags);
    let words: Vec<&str> = flags.split_whitespace().collect();
    let float: &[&str] = if class.class.starts_with("arm64") {
        &ARM64_FLOAT_FEATURES
    } else {
        &X86_FLOAT_FEATURES
    };
    let mut features = class.features.clone();
    features.extend(
        float
            .iter()
            .filter(|f| words.contains(f))
            .map(|f| f.to_string()),
    );
    format!("{} ({})", class.class, features.join(" "))
}

/// [`built_on`] for this machine, read once per process; where no
/// `/proc/cpuinfo` tells the flags, the class with its own features.
pub fn built_on_here() -> &'static str {
    static HERE: OnceLock<String> = OnceLock::new();
    HERE.get_or_init(|| flags_here().map_or_else(|| CpuClass::here().describe(), built_on))
}

/// This machine's `/proc/cpuinfo` flags, read once per process; None where there is none.
fn flags_here() -> Option<&'static str> {
    static FLAGS: OnceLock<Option<String>> = OnceLock::new();
    FLAGS
        .get_or_init(|| {
            let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
            flags_line(&text).map(str::to_string)
        })
        .as_deref()
}

/// The flags of a `/proc/cpuinfo`-like text (`flags : ...` on x86,
/// `Features : ...` on arm64).
fn flags_line(text: &str) -> Option<&str> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        matches!(key.trim(), "flags" | "Features").then_some(value)
    })
}

/// Whether ONNX Runtime's u8 x s8 integer kernels can saturate on a class (no
/// VNNI, no AMX), by its name: its int8 failures there are the engine's on that
/// hardware, which `reduce_range` or another preset avoids.
pub fn int8_may_saturate(class: &str) -> bool {
    matches!(class, "x86-64 avx512" | "x86-64 avx2" | "x86-64 sse")
}

/// The class by the standard library's detection, where no `/proc/cpuinfo` is.
fn detected() -> CpuClass {
    let mut flags: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        flags.push("sse2");
        if std::arch::is_x86_feature_detected!("avx2") {
            flags.push("avx2");
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            flags.push("avx512f");
        }
        if std::arch::is_x86_feature_detected!("avx512bw") {
            flags.push("avx512bw");
        }
        if std::arch::is_x86_feature_detected!("avx512vnni") {
            flags.push("avx512_vnni");
        }
        if std::arch::is_x86_feature_detected!("avxvnni") {
            flags.push("avx_vnni");
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        flags.push("asimd");
        if std::arch::is_aarch64_feature_detected!("dotprod") {
            flags.push("asimddp");
        }
        if std::arch::is_aarch64_feature_detected!("i8mm") {
            flags.push("i8mm");
        }
        if std::arch::is_aarch64_feature_detected!("sve") {
            flags.push("sve");
        }
    }
    CpuClass::from_flags(&flags.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_kernel_an_engine_picks() {
        // The AVX2 machine of shared/measurements/cpu-avx2 (its flags, abridged).
        let epyc = "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2 sha_ni";
        let avx2 = CpuClass::from_flags(epyc);
        assert_eq!(avx2.class, "x86-64 avx2");
        assert_eq!(avx2.features, ["avx2"]);
        assert!(avx2.int8_may_saturate);
        // A Sapphire Rapids without AMX exposed: AVX-512 VNNI wins over AVX-VNNI.
        let spr = "sse2 avx2 avx512f avx512bw avx512_vnni avx_vnni avx512_bf16";
        let vnni = CpuClass::from_flags(spr);
        assert_eq!(vnni.class, "x86-64 avx512-vnni");
        assert_eq!(
            vnni.describe(),
            "x86-64 avx512-vnni (avx512_vnni avx512bw avx512f avx_vnni avx2)"
        );
        assert!(!vnni.int8_may_saturate);
        // AVX-512 without VNNI (Skylake-SP) saturates as AVX2 does.
        assert_eq!(
            CpuClass::from_flags("sse2 avx2 avx512f avx512bw").class,
            "x86-64 avx512"
        );
        assert_eq!(
            CpuClass::from_flags("sse2 avx2 avx512f avx512bw amx_tile amx_int8 avx512_vnni").class,
            "x86-64 amx"
        );
        assert_eq!(
            CpuClass::from_flags("fp asimd asimddp i8mm sve").class,
            "arm64 i8mm"
        );
        for class in [avx2, vnni] {
            assert!(CLASSES.contains(&class.class.as_str()));
        }
    }

    /// Two CPUs of one class whose float kernels differ are built on two
    /// things: this machine's Ice Lake and the Sapphire Rapids the store's
    /// VNNI runs were made on.
    #[test]
    fn a_build_names_the_float_kernels_beside_the_class() {
        let ice_lake = "sse2 fma avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni gfni";
        let sapphire = "sse2 fma avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni avx_vnni avx512_bf16 avx512_fp16";
        assert_eq!(
            CpuClass::from_flags(ice_lake).class,
            CpuClass::from_flags(sapphire).class
        );
        assert_eq!(
            built_on(ice_lake),
            "x86-64 avx512-vnni (avx512_vnni avx512bw avx512f avx2 fma avx512vl avx512dq)"
        );
        assert_ne!(built_on(ice_lake), built_on(sapphire));
        assert_eq!(
            built_on(ice_lake),
            built_on(&format!("{ice_lake} hypervisor rdrand"))
        );
        assert!(built_on_here().starts_with(&CpuClass::here().class));
    }

    #[test]
    fn a_cpuinfo_text_is_classed_by_its_flags_line() {
        let text = "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2\ncores\t: 2\n";
        assert_eq!(
            CpuClass::from_cpuinfo(text).map(|c| c.class),
            Some("x86-64 avx2".into())
        );
        assert_eq!(CpuClass::from_cpuinfo("model name : nothing"), None);
        // This machine has a class, and the same one each time it is asked.
        assert!(CLASSES.contains(&CpuClass::here().class.as_str()));
        assert!(std::ptr::eq(CpuClass::here(), CpuClass::here()));
    }
}
