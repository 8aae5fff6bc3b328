// y = x · dequant(W)ᵀ for one linear layer with quantized weights.
// x: [rows, in] float32; W: [out, in] packed as runtime/src/quant.rs describes;
// y: [rows, out] float32. One invocation per output element. BITS is a
// pipeline-overridable constant, so each width compiles to its own kernel
// with its unpacking resolved at compile time.

override BITS: u32 = 4u;

struct Dims {
    rows: u32,
    in_features: u32,
    out_features: u32,
    group_size: u32,
    words_per_row: u32,
    groups_per_row: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> words: array<u32>;
// (scale, minimum) per group as two float16 halves; unused at 16 bits.
@group(0) @binding(3) var<storage, read> groups: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn weight(column: u32, i: u32) -> f32 {
    let per_word = 32u / BITS;
    let word = words[column * dims.words_per_row + i / per_word];
    if (BITS == 16u) {
        // Core WGSL unpacks float16 pairs: no shader-f16 needed.
        return unpack2x16float(word)[i % 2u];
    }
    let code = (word >> ((i % per_word) * BITS)) & ((1u << BITS) - 1u);
    let scale_minimum = unpack2x16float(groups[column * dims.groups_per_row + i / dims.group_size]);
    return f32(code) * scale_minimum.x + scale_minimum.y;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let column = id.x;
    let row = id.y;
    if (column >= dims.out_features || row >= dims.rows) {
        return;
    }
    var sum = 0.0;
    for (var i = 0u; i < dims.in_features; i = i + 1u) {
        sum = sum + x[row * dims.in_features + i] * weight(column, i);
    }
    y[row * dims.out_features + column] = sum;
}
