//! Weight quantization on the CPU: packing a float32 weight matrix at 16, 8,
//! 4 or 2 bits in the layout the WGSL kernels read
//! (`engine/wgpu/quantized_linear.wgsl`), unpacking it again, and the errors
//! the quantization checks record. The GPU computes the quantized products;
//! this module is what they are checked against, so the two are written
//! apart on purpose.
//!
//! Layout, for a weight `[out, in]` (PyTorch's `nn.Linear` order):
//! - 16 bits: two float16 values per u32 word, low half first.
//! - 8, 4, 2 bits: `32 / bits` unsigned codes per word, lowest bits first;
//!   each group of `group_size` consecutive input weights of a row shares a
//!   float16 scale and minimum, packed into one u32 (scale low, minimum high),
//!   and `w = code * scale + minimum`: the asymmetric group-wise scheme of the
//!   common 4-bit formats (GGUF's Q4_1, with group 32).
//!
//! Each row starts on a fresh word and a fresh group, so a row's words and
//! groups are `ceil(in / per_word)` and `ceil(in / group_size)`.

pub mod check;

use half::f16;

/// A weight matrix packed for the kernels.
#[derive(Debug, Clone)]
pub struct Packed {
    pub bits: u32,
    pub out_features: usize,
    pub in_features: usize,
    pub group_size: usize,
    pub words: Vec<u32>,
    /// (scale, minimum) per group as two float16 values; empty at 16 bits.
    pub groups: Vec<u32>,
}

impl Packed {
    pub fn words_per_row(&self) -> usize {
        self.in_features.div_ceil(values_per_word(self.bits))
    }

    pub fn groups_per_row(&self) -> usize {
        if self.bits == 16 {
            0
        } else {
            self.in_features.div_ceil(self.group_size)
        }
    }

    /// Bytes the packed weights take, scales and minimums included.
    pub fn bytes(&self) -> usize {
        4 * (self.words.len() + self.groups.len())
    }

    /// The weights the packed codes stand for, `[out, in]`, as the kernel computes them.
    pub fn dequantize(&self) -> Vec<f32> {
        let per_word = values_per_word(self.bits);
        let mut weights = Vec::with_capacity(self.out_features * self.in_features);
        for row in 0..self.out_features {
            for i in 0..self.in_features {
                let word = self.words[row * self.words_per_row() + i / per_word];
                let shift = (i % per_word) as u32 * self.bits;
                weights.push(if self.bits == 16 {
                    f16::from_bits((word >> shift) as u16).to_f32()
                } else {
                    let code = (word >> shift) & ((1 << self.bits) - 1);
                    let (scale, minimum) = unpack_f16_pair(
                        self.groups[row * self.groups_per_row() + i / self.group_size],
                    );
                    code as f32 * scale + minimum
                });
            }
        }
        weights
    }
}

fn values_per_word(bits: u32) -> usize {
    (32 / bits) as usize
}

fn pack_f16_pair(low: f16, high: f16) -> u32 {
    u32::from(low.to_bits()) | (u32::from(high.to_bits()) << 16)
}

fn unpack_f16_pair(word: u32) -> (f32, f32) {
    (
        f16::from_bits(word as u16).to_f32(),
        f16::from_bits((word >> 16) as u16).to_f32(),
    )
}

/// Packs `weights` (`[out, in]`, row-major) at `bits` ∈ {16, 8, 4, 2}.
pub fn quantize(
    weights: &[f32],
    out_features: usize,
    in_features: usize,
    bits: u32,
    group_size: usize,
) -> Packed {
    assert!(matches!(bits, 16 | 8 | 4 | 2), "no packing for {bits} bits");
    assert_eq!(
        weights.len(),
        out_features * in_features,
        "weights are not [{out_features}, {in_features}]"
    );
    let per_word = values_per_word(bits);
    let words_per_row = in_features.div_ceil(per_word);
    let mut packed = Packed {
        bits,
        out_features,
        in_features,
        group_size,
        words: vec![0; out_features * words_per_row],
        groups: Vec::new(),
    };
    let levels = ((1u32 << bits.min(8)) - 1) as f32;
    for (row, row_weights) in weights
        .chunks(in_features.max(1))
        .enumerate()
        .take(out_features)
    {
        let mut put = |i: usize, code: u32| {
            packed.words[row * words_per_row + i / per_word] |=
                code << ((i % per_word) as u32 * bits)
        };
        if bits == 16 {
            for (i, w) in row_weights.iter().enumerate() {
                put(i, u32::from(f16::from_f32(*w).to_bits()));
            }
            continue;
        }
        for (g, group) in row_weights.chunks(group_size).enumerate() {
            let (lo, hi) = group
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), w| {
                    (lo.min(*w), hi.max(*w))
                });
            // The scale and minimum are stored as float16; codes are computed
            // against the stored values so that rounding them costs nothing extra.
            let minimum = f16::from_f32(lo);
            let scale = f16::from_f32((hi - lo) / levels);
            let (scale_f, minimum_f) = (scale.to_f32(), minimum.to_f32());
            for (j, w) in group.iter().enumerate() {
                let code = if scale_f > 0.0 {
                    ((w - minimum_f) / scale_f).round().clamp(0.0, levels) as u32
                } else {
                    0
                };
                put(g * group_size + j, code);
            }
            packed.groups.push(pack_f16_pair(scale, minimum));
        }
    }
    packed
}

/// `x [rows, in] · wᵀ` with `w [out, in]`, accumulated in f64 (the tests' reference; the check uses [`products`]).
#[cfg(test)]
pub(crate) fn matmul(
    x: &[f32],
    rows: usize,
    w: &[f32],
    out_features: usize,
    in_features: usize,
) -> Vec<f64> {
    let mut y = vec![0.0; rows * out_features];
    for r in 0..rows {
        let xr = &x[r * in_features..(r + 1) * in_features];
        for o in 0..out_features {
            let wo = &w[o * in_features..(o + 1) * in_features];
            y[r * out_features + o] = xr
                .iter()
                .zip(wo)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum();
        }
    }
    y
}

/// What the quantization check compares, in one pass over a layer: the
/// float32 weights' product, the dequantized weights' product, and each
/// element's Σ|xᵢ·wᵢ| of the latter (the scale of its rounding error).
pub struct Products {
    pub exact: Vec<f64>,
    pub dequantized: Vec<f64>,
    pub magnitude: Vec<f64>,
}

pub fn products(
    x: &[f32],
    rows: usize,
    w: &[f32],
    dequantized: &[f32],
    out_features: usize,
    in_features: usize,
) -> Products {
    let n = rows * out_features;
    let mut p = Products {
        exact: vec![0.0; n],
        dequantized: vec![0.0; n],
        magnitude: vec![0.0; n],
    };
    for r in 0..rows {
        let xr = &x[r * in_features..(r + 1) * in_features];
        for o in 0..out_features {
            let (wo, qo) = (
                &w[o * in_features..(o + 1) * in_features],
                &dequantized[o * in_features..(o + 1) * in_features],
            );
            let (mut exact, mut deq, mut magnitude) = (0.0, 0.0, 0.0);
            for ((a, b), q) in xr.iter().zip(wo).zip(qo) {
                let (a, b, q) = (f64::from(*a), f64::from(*b), f64::from(*q));
                exact += a * b;
                deq += a * q;
                magnitude += (a * q).abs();
            }
            let i = r * out_features + o;
            (p.exact[i], p.dequantized[i], p.magnitude[i]) = (exact, deq, magnitude);
        }
    }
    p
}

/// `‖got − want‖₂ / ‖want‖₂`; None where `want` is all zeros (nothing to be relative to).
pub fn relative_error(got: &[f32], want: &[f64]) -> Option<f64> {
    let norm: f64 = want.iter().map(|v| v * v).sum::<f64>().sqrt();
    let diff: f64 = got
        .iter()
        .zip(want)
        .map(|(g, w)| (f64::from(*g) - w).powi(2))
        .sum::<f64>()
        .sqrt();
    (norm > 0.0).then_some(diff / norm)
}

/// The largest elementwise distance, for kernel-against-CPU agreement.
pub fn max_abs_difference(got: &[f32], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| (f64::from(*g) - w).abs())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1) (a linear congruential generator): the tests need spread, not randomness.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn each_width_reconstructs_within_half_a_step_of_its_group() {
        let (out, inp) = (5, 70); // 70 is no multiple of the group or of any word: partial groups and words
        let w = values(out * inp, 7);
        for bits in [8, 4, 2] {
            let packed = quantize(&w, out, inp, bits, 32);
            assert_eq!(packed.groups.len(), out * 3);
            let back = packed.dequantize();
            for (row, (orig, got)) in w.chunks(inp).zip(back.chunks(inp)).enumerate() {
                for (g, (og, gg)) in orig.chunks(32).zip(got.chunks(32)).enumerate() {
                    let (scale, _) = unpack_f16_pair(packed.groups[row * 3 + g]);
                    for (a, b) in og.iter().zip(gg) {
                        assert!(
                            (a - b).abs() <= scale / 2.0 + 1e-3,
                            "{bits} bits, row {row} group {g}: {a} came back as {b} (step {scale})"
                        );
                    }
                }
            }
        }
        let half = quantize(&w, out, inp, 16, 32).dequantize();
        assert!(w.iter().zip(&half).all(|(a, b)| (a - b).abs() <= 1e-3));
    }

    #[test]
    fn fewer_bits_lose_more_and_take_less() {
        let (out, inp, rows) = (16, 64, 4);
        let w = values(out * inp, 3);
        let x = values(rows * inp, 11);
        let exact = matmul(&x, rows, &w, out, inp);
        let mut last = (0.0, usize::MAX);
        for bits in [16, 8, 4, 2] {
            let packed = quantize(&w, out, inp, bits, 32);
            let y: Vec<f32> = matmul(&x, rows, &packed.dequantize(), out, inp)
                .iter()
                .map(|v| *v as f32)
                .collect();
            let error = relative_error(&y, &exact).unwrap();
            assert!(
                error > last.0 && packed.bytes() < last.1,
                "{bits} bits: error {error}, {} bytes; wider: {last:?}",
                packed.bytes()
            );
            last = (error, packed.bytes());
        }
        assert!(last.0 > 0.1, "2 bits must lose a lot: {}", last.0);
    }

    #[test]
    fn a_constant_group_comes_back_exactly_where_float16_holds_it() {
        let packed = quantize(&[0.5; 32], 1, 32, 4, 32);
        assert!(packed.dequantize().iter().all(|w| *w == 0.5));
    }

    #[test]
    fn relative_error_needs_a_nonzero_reference() {
        assert_eq!(relative_error(&[1.0], &[0.0]), None);
        assert_eq!(relative_error(&[1.5, 0.0], &[2.0, 0.0]), Some(0.25));
    }
}
