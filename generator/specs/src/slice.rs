//! Slices of the architectures: which share of the matrix one run measures.
//!
//! `tests/run.sh` measures the cells of one slice of the architectures a run,
//! and re-verifies the evidence store's entries of a finer slice. Both cut by
//! the model alone (never by platform or engine), with one hash, so a slice of
//! N is inside the slice of every divisor of N with the same K modulo it: slice
//! 13 of 16 is inside slice 5 of 8. A run's store slice then reads only the
//! fixtures its cells' slice already exported.

/// `K/N` with K < N.
pub fn parse_slice(text: &str) -> Result<(u32, u32), String> {
    let (k, n) = text
        .split_once('/')
        .ok_or("write the slice as K/N, e.g. 3/8")?;
    let (k, n): (u32, u32) = (
        k.trim().parse().map_err(|e| format!("K: {e}"))?,
        n.trim().parse().map_err(|e| format!("N: {e}"))?,
    );
    if n == 0 || k >= n {
        return Err(format!("slice {k}/{n}: K counts from 0 and stays below N"));
    }
    Ok((k, n))
}

/// The slice of `n` a model falls in: by a stable hash (FNV-1a) of its
/// model_type, so every checkout and run puts it in the same one.
pub fn slice_of(model_type: &str, n: u32) -> u32 {
    let hash = model_type.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % u64::from(n)) as u32
}

/// Whether a model is in slice `(k, n)`; every model is when there is none.
pub fn in_slice(model_type: &str, slice: Option<(u32, u32)>) -> bool {
    slice.is_none_or(|(k, n)| slice_of(model_type, n) == k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_split_the_models_and_cover_them_all() {
        assert_eq!(parse_slice("3/8"), Ok((3, 8)));
        assert!(parse_slice("8/8").is_err() && parse_slice("1").is_err());
        let names = [
            "bert", "llama", "vit", "whisper", "t5", "clip", "sam", "gpt2", "roberta", "deit",
        ];
        let slices: std::collections::BTreeSet<u32> =
            names.iter().map(|m| slice_of(m, 4)).collect();
        assert!(slices.len() > 1, "names spread over the slices: {slices:?}");
        for name in names {
            let in_some: Vec<u32> = (0..8).filter(|k| in_slice(name, Some((*k, 8)))).collect();
            assert_eq!(in_some.len(), 1, "{name} is in exactly one slice of 8");
        }
    }

    #[test]
    fn a_finer_slice_is_inside_the_coarser_one_it_divides() {
        for name in ["bert", "llama", "xlm-roberta", "kosmos-2.5", "sam", "t5"] {
            let k16 = slice_of(name, 16);
            assert_eq!(slice_of(name, 8), k16 % 8, "{name}");
            assert_eq!(slice_of(name, 32) % 16, k16, "{name}");
        }
    }
}
