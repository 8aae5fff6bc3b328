//! Slices of the architectures: which share of the matrix one run measures.
//!
//! `tests/run.sh` measures the cells of one slice of the architectures a run,
//! and re-verifies the evidence store's entries of a finer slice. Both cut by
//! the model alone (never by platform or engine), by one order of every model,
//! so a slice of N is inside the slice of every divisor of N with the same K
//! modulo it: slice 13 of 16 is inside slice 5 of 8. A run's store slice then
//! reads only the fixtures its cells' slice already exported.

use std::collections::{BTreeMap, BTreeSet};

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

/// FNV-1a of a model_type: stable across checkouts and runs, and spreading neighbours in
/// the alphabet (the same family's architectures) over the slices.
fn hash(model_type: &str) -> u64 {
    model_type.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The slice of `n` each of `models` falls in: the models ordered by their hash, the r-th
/// of them in slice r mod n. So slices differ in size by one model at most (a hash modulo n
/// left one slice of 8 with 67 models and another with 90), and slice K of N lies inside
/// slice K mod M of M for every M dividing N. A model added to the specs moves the models
/// after it in that order to the next slice.
pub fn slices<'a>(models: impl IntoIterator<Item = &'a str>, n: u32) -> BTreeMap<&'a str, u32> {
    let mut ordered: Vec<&str> = models.into_iter().collect();
    ordered.sort_by_key(|m| (hash(m), *m));
    ordered.dedup();
    ordered
        .into_iter()
        .enumerate()
        .map(|(rank, model)| (model, (rank % n as usize) as u32))
        .collect()
}

/// The models of one slice of `models` (every one where `slice` is None).
pub struct Slice {
    members: Option<BTreeSet<String>>,
}

impl Slice {
    /// Slice `slice` (K of N) of `models`, which must be every model of the specs (not a
    /// selection of them): a slice is cut from all of them.
    pub fn new<'a>(models: impl IntoIterator<Item = &'a str>, slice: Option<(u32, u32)>) -> Slice {
        Slice {
            members: slice.map(|(k, n)| {
                slices(models, n)
                    .into_iter()
                    .filter(|&(_, s)| s == k)
                    .map(|(m, _)| m.to_string())
                    .collect()
            }),
        }
    }

    /// Whether the model is in the slice.
    pub fn contains(&self, model_type: &str) -> bool {
        self.members
            .as_ref()
            .is_none_or(|members| members.contains(model_type))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made-up names, as many as the specs have, for sizes.
    fn names() -> Vec<String> {
        (0..649).map(|i| format!("model-{i}")).collect()
    }

    #[test]
    fn slices_split_the_models_evenly_and_cover_them_all() {
        assert_eq!(parse_slice("3/8"), Ok((3, 8)));
        assert!(parse_slice("8/8").is_err() && parse_slice("1").is_err());
        let names = names();
        let all = slices(names.iter().map(String::as_str), 8);
        assert_eq!(all.len(), names.len(), "every model once");
        let mut sizes = [0usize; 8];
        for k in 0..8 {
            let slice = Slice::new(names.iter().map(String::as_str), Some((k, 8)));
            sizes[k as usize] = names.iter().filter(|m| slice.contains(m)).count();
        }
        assert_eq!(sizes.iter().sum::<usize>(), names.len(), "{sizes:?}");
        assert!(
            sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
            "slices of 8 differ by one model at most: {sizes:?}"
        );
        let none = Slice::new(names.iter().map(String::as_str), None);
        assert!(names.iter().all(|m| none.contains(m)));
    }

    #[test]
    fn a_finer_slice_is_inside_the_coarser_one_it_divides() {
        let names = names();
        let by = |n| slices(names.iter().map(String::as_str), n);
        let (s8, s16, s32) = (by(8), by(16), by(32));
        for name in &names {
            let k16 = s16[name.as_str()];
            assert_eq!(s8[name.as_str()], k16 % 8, "{name}");
            assert_eq!(s32[name.as_str()] % 16, k16, "{name}");
        }
    }
}
