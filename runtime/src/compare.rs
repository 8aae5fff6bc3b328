//! Comparison of engine outputs with references, and of shapes with the
//! axes a spec declares.

use std::collections::BTreeMap;

use crate::tensor::{Data, Tensor};
use crate::{TensorDecl, Tolerance};
pub use hwmatrix_record::{Agreement, Spread};

/// How far an output is from its reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Deviation {
    pub max_abs: f64,
    pub max_rel: f64,
    /// Elements outside the tolerance.
    pub violations: usize,
    /// The flat index of the worst violation (largest excess over the bound).
    pub worst: Option<usize>,
}

/// Elementwise comparison with numpy's allclose rule; integers must be equal.
#[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(diff <= bound)` is what makes NaN fail
pub fn deviation(actual: &Tensor, expected: &Tensor, tol: Tolerance) -> Result<Deviation, String> {
    if actual.shape != expected.shape {
        return Err(format!(
            "shape {:?} differs from the reference {:?}",
            actual.shape, expected.shape
        ));
    }
    if actual.dtype() != expected.dtype() {
        return Err(format!(
            "dtype {} differs from the reference {}",
            actual.dtype(),
            expected.dtype()
        ));
    }
    let exact = !expected.dtype().is_float();
    let mut dev = Deviation::default();
    let mut worst_excess = 0.0;
    for (i, (a, e)) in actual
        .values()
        .into_iter()
        .zip(expected.values())
        .enumerate()
    {
        let diff = (a - e).abs();
        dev.max_abs = dev.max_abs.max(diff);
        if e != 0.0 {
            dev.max_rel = dev.max_rel.max(diff / e.abs());
        }
        let bound = if exact {
            0.0
        } else {
            tol.abs + tol.rel * e.abs()
        };
        // NaN never passes: `diff > bound` is false for NaN, so test the negation.
        if !(diff <= bound) {
            dev.violations += 1;
            let excess = if diff.is_nan() {
                f64::INFINITY
            } else {
                diff - bound
            };
            if dev.worst.is_none() || excess > worst_excess {
                worst_excess = excess;
                dev.worst = Some(i);
            }
        }
    }
    Ok(dev)
}

pub fn spread(expected: &Tensor, tol: Tolerance) -> Spread {
    let values = expected.values();
    let mean = if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    };
    // Integers compare exactly, so for them the constant is the value itself.
    let exact = !expected.dtype().is_float();
    let constant = if exact {
        values.first().copied().unwrap_or(0.0)
    } else {
        mean
    };
    let constant_would_pass = values.iter().all(|&e| {
        let bound = if exact {
            0.0
        } else {
            tol.abs + tol.rel * e.abs()
        };
        (constant - e).abs() <= bound
    });
    let max_from_mean = values.iter().map(|e| (e - mean).abs()).fold(0.0, f64::max);
    Spread {
        mean,
        max_from_mean,
        constant_would_pass,
    }
}

/// Rows along the last axis where it holds features: `hidden`, `vocab`,
/// `projection`, or the classes of logits. Elsewhere (feature maps, images,
/// audio samples) a row is one batch item, flattened: a row of a few pixels
/// has no direction worth comparing.
pub fn feature_axis_last(output: &str, axes: &[&str]) -> bool {
    output.contains("logits")
        || axes
            .last()
            .is_some_and(|a| ["hidden", "vocab", "projection"].contains(a))
}

/// The [`Agreement`] of a float output with its reference of the same shape,
/// rows as [`feature_axis_last`] says; None for integer outputs (they must
/// match exactly) and empty ones. A non-finite value gives NaN, which fails
/// every bound.
pub fn agreement(
    name: &str,
    feature_last: bool,
    actual: &Tensor,
    expected: &Tensor,
) -> Option<Agreement> {
    if !expected.dtype().is_float() || actual.shape != expected.shape || expected.is_empty() {
        return None;
    }
    let width = match (feature_last, expected.shape.first()) {
        (true, _) | (false, None) => expected.shape.last().copied().unwrap_or(1),
        (false, Some(&batch)) => expected.len() / batch.max(1),
    }
    .max(1);
    let (a, e) = (actual.values(), expected.values());
    let (mut rows, mut cosine_sum, mut cosine_min) = (0usize, 0.0, f64::INFINITY);
    let (mut top1_kept, mut all_rows) = (0usize, 0usize);
    let (mut err2, mut ref2) = (0.0, 0.0);
    for (ra, re) in a.chunks(width).zip(e.chunks(width)) {
        let (mut dot, mut na, mut ne) = (0.0, 0.0, 0.0);
        for (&x, &y) in ra.iter().zip(re) {
            dot += x * y;
            na += x * x;
            ne += y * y;
            err2 += (x - y) * (x - y);
        }
        ref2 += ne;
        if ne > 0.0 {
            // A zero row against a nonzero reference row keeps no direction: cosine 0.
            let cosine = if na > 0.0 {
                dot / (na.sqrt() * ne.sqrt())
            } else if na == 0.0 {
                0.0
            } else {
                f64::NAN
            };
            rows += 1;
            cosine_sum += cosine;
            cosine_min = if cosine.is_nan() || cosine_min.is_nan() {
                f64::NAN
            } else {
                cosine_min.min(cosine)
            };
        }
        all_rows += 1;
        if argmax(ra) == argmax(re) {
            top1_kept += 1;
        }
    }
    let rel_l2 = if ref2 > 0.0 {
        (err2 / ref2).sqrt()
    } else if err2 == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    let has_cosine = width >= 2 && rows > 0;
    Some(Agreement {
        rows,
        cosine_min: has_cosine.then_some(cosine_min),
        cosine_mean: has_cosine.then(|| cosine_sum / rows as f64),
        rel_l2,
        top1: (name.contains("logits") && width >= 2)
            .then(|| top1_kept as f64 / all_rows.max(1) as f64),
        pooled_cosine_min: None,
    })
}

/// The worst batch item's cosine between the mean-pooled features of `actual` and of
/// `expected`, for an output laid out `[batch, sequence, hidden]`, pooled over the
/// positions `mask` (`[batch, sequence]`) keeps, every position where there is none:
/// the sentence embedding a sentence encoder's users compare. None for another layout
/// or dtype.
pub fn pooled_cosine_min(
    output_axes: &[&str],
    actual: &Tensor,
    expected: &Tensor,
    mask: Option<&Tensor>,
) -> Option<f64> {
    let laid_out = output_axes.len() == 3
        && output_axes[..2] == ["batch", "sequence"]
        && output_axes[2] == "hidden";
    if !laid_out || actual.shape != expected.shape || expected.shape.len() != 3 {
        return None;
    }
    if !expected.dtype().is_float() || expected.is_empty() {
        return None;
    }
    let (batch, sequence, hidden) = (expected.shape[0], expected.shape[1], expected.shape[2]);
    let keep: Vec<bool> = match mask {
        Some(m) if m.shape == [batch, sequence] => m.values().iter().map(|v| *v != 0.0).collect(),
        _ => vec![true; batch * sequence],
    };
    let (a, e) = (actual.values(), expected.values());
    let pooled = |values: &[f64], item: usize| -> Vec<f64> {
        let mut sum = vec![0.0; hidden];
        for position in (0..sequence).filter(|p| keep[item * sequence + p]) {
            let row = &values[(item * sequence + position) * hidden..][..hidden];
            sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
        }
        sum
    };
    (0..batch)
        .filter(|item| keep[item * sequence..][..sequence].contains(&true))
        .map(|item| {
            let (pa, pe) = (pooled(&a, item), pooled(&e, item));
            let dot: f64 = pa.iter().zip(&pe).map(|(x, y)| x * y).sum();
            let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
            dot / (norm(&pa) * norm(&pe))
        })
        .reduce(f64::min)
}

/// Which positions of an output the attention mask keeps, where the output is
/// laid out over the mask (`[batch, sequence, ...]` against the mask's
/// `[batch, sequence]`) and the mask pads some: one flag per position (a row
/// of the features after). None where the output is not so laid out or
/// nothing is padded: every position is judged.
pub fn kept_positions(output_axes: &[&str], output: &Tensor, mask: &Tensor) -> Option<Vec<bool>> {
    let laid_out =
        output_axes.len() >= 3 && output_axes[0] == "batch" && output_axes[1] == "sequence";
    if !laid_out
        || mask.shape.len() != 2
        || output.shape.len() < 3
        || output.shape[..2] != mask.shape[..]
    {
        return None;
    }
    let kept: Vec<bool> = mask.values().iter().map(|v| *v != 0.0).collect();
    kept.contains(&false).then_some(kept)
}

/// The positions of a float32 output that `kept` marks `want`, as a
/// `[positions, features]` tensor (None for another dtype, or none selected).
pub fn select_positions(tensor: &Tensor, kept: &[bool], want: bool) -> Option<Tensor> {
    let Data::Float32(values) = &tensor.data else {
        return None;
    };
    let width = tensor.len() / kept.len().max(1);
    let rows: Vec<f32> = values
        .chunks(width.max(1))
        .zip(kept)
        .filter(|(_, k)| **k == want)
        .flat_map(|(row, _)| row.iter().copied())
        .collect();
    (!rows.is_empty()).then(|| Tensor {
        shape: vec![rows.len() / width.max(1), width],
        data: Data::Float32(rows),
    })
}

/// The first index of the largest value; NaN never wins, and a row of NaN has none.
pub(crate) fn argmax(row: &[f64]) -> Option<usize> {
    row.iter()
        .enumerate()
        .filter(|(_, v)| !v.is_nan())
        .fold(None, |best: Option<(usize, f64)>, (i, &v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((i, v)),
        })
        .map(|(i, _)| i)
}

/// Binds every named axis of the declared tensors to the sizes meta.json gives
/// (input axes from the shape's `axes`, the rest from the reference outputs),
/// so output shapes are checked against the spec's axes and the fixture, never
/// against numbers written into generated code.
pub fn bind_axes(
    input_axes: &BTreeMap<String, usize>,
    declared: &[&TensorDecl],
    reference_shapes: &BTreeMap<String, Vec<usize>>,
) -> Result<BTreeMap<String, usize>, String> {
    let mut sizes = input_axes.clone();
    for decl in declared {
        let shape = reference_shapes
            .get(decl.name)
            .ok_or_else(|| format!("the fixture has no reference output {:?}", decl.name))?;
        if shape.len() != decl.axes.len() {
            return Err(format!(
                "reference output {} has rank {} ({shape:?}), the spec declares {} axes {:?}",
                decl.name,
                shape.len(),
                decl.axes.len(),
                decl.axes
            ));
        }
        for (axis, &size) in decl.axes.iter().zip(shape) {
            match sizes.get(*axis) {
                Some(&bound) if bound != size => {
                    return Err(format!(
                        "axis {axis:?} is {bound} elsewhere but {size} in reference output {} {shape:?}",
                        decl.name
                    ));
                }
                _ => {
                    sizes.insert(axis.to_string(), size);
                }
            }
        }
    }
    Ok(sizes)
}

/// The shape a declared tensor must have under an axis binding.
pub fn expected_shape(decl: &TensorDecl, sizes: &BTreeMap<String, usize>) -> Vec<usize> {
    decl.axes.iter().map(|a| sizes[*a]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DType;

    fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor {
            shape: shape.to_vec(),
            data: Data::Float32(v.to_vec()),
        }
    }

    const TOL: Tolerance = Tolerance {
        abs: 1e-4,
        rel: 1e-3,
    };

    #[test]
    fn within_tolerance_passes_and_outside_fails() {
        let e = f32s(&[3], &[1.0, -2.0, 100.0]);
        let ok = deviation(&f32s(&[3], &[1.00005, -2.0, 100.05]), &e, TOL).unwrap();
        assert_eq!(ok.violations, 0);
        let bad = deviation(&f32s(&[3], &[1.0, -2.01, 100.0]), &e, TOL).unwrap();
        assert_eq!((bad.violations, bad.worst), (1, Some(1)));
        assert!((bad.max_abs - 0.01).abs() < 1e-6);
    }

    #[test]
    fn nan_is_a_violation() {
        let dev = deviation(&f32s(&[2], &[f32::NAN, 0.0]), &f32s(&[2], &[0.0, 0.0]), TOL).unwrap();
        assert_eq!((dev.violations, dev.worst), (1, Some(0)));
    }

    #[test]
    fn a_constant_reference_is_not_informative() {
        // DETR's boxes before the fix: about 0.5 ± 2.4e-4, so 0.5 itself passes.
        let flat = f32s(&[4], &[0.50024, 0.49976, 0.5001, 0.4999]);
        assert!(spread(&flat, TOL).constant_would_pass);
        let varied = f32s(&[4], &[0.1, 0.9, 0.5, 0.3]);
        let s = spread(&varied, TOL);
        assert!(!s.constant_would_pass);
        assert!((s.max_from_mean - 0.45).abs() < 1e-6);
        // A single element always equals its mean.
        assert!(spread(&f32s(&[1, 1], &[3.7]), TOL).constant_would_pass);
        let ints = Tensor {
            shape: vec![3],
            data: Data::Int64(vec![4, 4, 5]),
        };
        assert!(!spread(&ints, TOL).constant_would_pass);
    }

    #[test]
    fn shape_and_dtype_mismatch_are_errors() {
        assert!(deviation(&f32s(&[2], &[0.0, 0.0]), &f32s(&[1, 2], &[0.0, 0.0]), TOL).is_err());
        let ints = Tensor {
            shape: vec![2],
            data: Data::Int64(vec![0, 0]),
        };
        assert!(deviation(&f32s(&[2], &[0.0, 0.0]), &ints, TOL).is_err());
    }

    #[test]
    fn the_pooled_cosine_compares_sentence_embeddings_over_kept_positions() {
        let t = |v: Vec<f32>| Tensor {
            shape: vec![1, 3, 2],
            data: Data::Float32(v),
        };
        let axes = ["batch", "sequence", "hidden"];
        let expected = t(vec![1.0, 0.0, 1.0, 0.0, 0.0, 9.0]);
        // The padded third position is wildly off: outside the mask it does not count.
        let actual = t(vec![1.0, 0.0, 1.0, 0.0, 9.0, 0.0]);
        let mask = Tensor {
            shape: vec![1, 3],
            data: Data::Int64(vec![1, 1, 0]),
        };
        let kept = pooled_cosine_min(&axes, &actual, &expected, Some(&mask)).unwrap();
        assert!((kept - 1.0).abs() < 1e-12, "{kept}");
        let all = pooled_cosine_min(&axes, &actual, &expected, None).unwrap();
        assert!(all < 0.3, "{all}");
        assert_eq!(
            pooled_cosine_min(&["batch", "channels", "height"], &actual, &expected, None),
            None
        );
    }

    #[test]
    fn agreement_measures_rows_energy_and_the_top_class() {
        let e = f32s(&[2, 3], &[1.0, 0.0, 0.0, 0.0, 2.0, 1.0]);
        let same = agreement("last_hidden_state", true, &e, &e).unwrap();
        assert_eq!((same.rows, same.rel_l2, same.top1), (2, 0.0, None));
        assert!((same.cosine_min.unwrap() - 1.0).abs() < 1e-12);
        // Row 0 turned a right angle, row 1 kept: cosine 0 and 1; the error's energy is 2 of the reference's 6.
        let turned = agreement(
            "logits",
            true,
            &f32s(&[2, 3], &[0.0, 1.0, 0.0, 0.0, 2.0, 1.0]),
            &e,
        )
        .unwrap();
        assert!(
            turned.cosine_min.unwrap().abs() < 1e-12
                && (turned.cosine_mean.unwrap() - 0.5).abs() < 1e-12
        );
        assert!((turned.rel_l2 - (2.0f64 / 6.0).sqrt()).abs() < 1e-12);
        assert_eq!(turned.top1, Some(0.5));
        // Scaled rows keep their direction, not their energy.
        let scaled = agreement(
            "x",
            true,
            &f32s(&[2, 3], &[2.0, 0.0, 0.0, 0.0, 4.0, 2.0]),
            &e,
        )
        .unwrap();
        assert!(
            (scaled.cosine_min.unwrap() - 1.0).abs() < 1e-12 && (scaled.rel_l2 - 1.0).abs() < 1e-12
        );
        // NaN fails every bound; integers and one-element rows have no agreement.
        let nan = agreement(
            "x",
            true,
            &f32s(&[2, 3], &[f32::NAN, 0.0, 0.0, 0.0, 2.0, 1.0]),
            &e,
        )
        .unwrap();
        assert!(nan.cosine_min.unwrap().is_nan() && nan.rel_l2.is_nan());
        // One-element rows have no cosine, only the relative L2 error.
        let scores = agreement(
            "x",
            true,
            &f32s(&[2, 1], &[1.0, 2.0]),
            &f32s(&[2, 1], &[1.0, 1.0]),
        )
        .unwrap();
        assert_eq!(scores.cosine_min, None);
        assert!((scores.rel_l2 - 0.5f64.sqrt()).abs() < 1e-12);
        let ints = Tensor {
            shape: vec![1, 2],
            data: Data::Int64(vec![0, 1]),
        };
        assert!(agreement("x", true, &ints, &ints).is_none());
        // A feature map's row is its batch item: [1, 2, 1, 2] is one row of 4.
        let map = f32s(&[1, 2, 1, 2], &[0.0, 1.0, 0.0, 1.0]);
        let flipped = agreement(
            "feature_maps",
            false,
            &f32s(&[1, 2, 1, 2], &[1.0, 0.0, 0.0, 1.0]),
            &map,
        )
        .unwrap();
        assert_eq!(flipped.rows, 1);
        assert!((flipped.cosine_min.unwrap() - 0.5).abs() < 1e-12);
        assert!(
            feature_axis_last("pred_logits", &["batch", "queries", "classes"])
                && !feature_axis_last("feature_maps", &["batch", "channels", "height", "width"])
        );
    }

    #[test]
    fn the_mask_keeps_the_real_tokens_and_sets_the_padded_ones_apart() {
        // batch 2, sequence 2, hidden 2; the second row's last token is padding.
        let hidden = f32s(&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        let mask = Tensor {
            shape: vec![2, 2],
            data: Data::Int64(vec![1, 1, 1, 0]),
        };
        let kept = kept_positions(&["batch", "sequence", "hidden"], &hidden, &mask)
            .expect("laid out over the mask, with padding");
        assert_eq!(kept, vec![true, true, true, false]);
        assert_eq!(
            select_positions(&hidden, &kept, true).unwrap(),
            f32s(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        );
        assert_eq!(
            select_positions(&hidden, &kept, false).unwrap(),
            f32s(&[1, 2], &[7.0, 8.0])
        );
        let unpadded = Tensor {
            shape: vec![2, 2],
            data: Data::Int64(vec![1, 1, 1, 1]),
        };
        assert!(
            kept_positions(&["batch", "sequence", "hidden"], &hidden, &unpadded).is_none(),
            "nothing padded: every position is judged"
        );
        assert!(
            kept_positions(&["batch", "channels", "frames"], &hidden, &mask).is_none(),
            "not laid out over the mask"
        );
    }

    #[test]
    fn binds_output_axes_and_catches_conflicts() {
        let h = TensorDecl {
            name: "h",
            dtype: DType::Float32,
            axes: &["batch", "sequence", "hidden"],
        };
        let decl = [&h];
        let inputs = BTreeMap::from([("batch".to_string(), 2), ("sequence".to_string(), 5)]);
        let good = BTreeMap::from([("h".to_string(), vec![2, 5, 32])]);
        let sizes = bind_axes(&inputs, &decl, &good).unwrap();
        assert_eq!(expected_shape(decl[0], &sizes), vec![2, 5, 32]);
        let conflicting = BTreeMap::from([("h".to_string(), vec![2, 6, 32])]);
        assert!(
            bind_axes(&inputs, &decl, &conflicting)
                .unwrap_err()
                .contains("sequence")
        );
        let wrong_rank = BTreeMap::from([("h".to_string(), vec![2, 5])]);
        assert!(
            bind_axes(&inputs, &decl, &wrong_rank)
                .unwrap_err()
                .contains("rank")
        );
    }
}
