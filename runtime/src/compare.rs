//! Comparison of engine outputs with references, and of shapes with the
//! axes a spec declares.

use std::collections::BTreeMap;

use crate::{TensorDecl, Tolerance};
use crate::tensor::Tensor;

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
        return Err(format!("shape {:?} differs from the reference {:?}", actual.shape, expected.shape));
    }
    if actual.dtype() != expected.dtype() {
        return Err(format!("dtype {} differs from the reference {}", actual.dtype(), expected.dtype()));
    }
    let exact = !expected.dtype().is_float();
    let mut dev = Deviation::default();
    let mut worst_excess = 0.0;
    for (i, (a, e)) in actual.values().into_iter().zip(expected.values()).enumerate() {
        let diff = (a - e).abs();
        dev.max_abs = dev.max_abs.max(diff);
        if e != 0.0 {
            dev.max_rel = dev.max_rel.max(diff / e.abs());
        }
        let bound = if exact { 0.0 } else { tol.abs + tol.rel * e.abs() };
        // NaN never passes: `diff > bound` is false for NaN, so test the negation.
        if !(diff <= bound) {
            dev.violations += 1;
            let excess = if diff.is_nan() { f64::INFINITY } else { diff - bound };
            if dev.worst.is_none() || excess > worst_excess {
                worst_excess = excess;
                dev.worst = Some(i);
            }
        }
    }
    Ok(dev)
}

/// How much a reference varies, measured against the check's own rule: if
/// the constant tensor holding the reference's mean would pass, the reference
/// cannot tell a working model from a broken one.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Spread {
    pub mean: f64,
    /// The largest |e - mean| over the reference's elements.
    pub max_from_mean: f64,
    /// Whether the constant `mean` would pass within the tolerance.
    pub constant_would_pass: bool,
}

pub fn spread(expected: &Tensor, tol: Tolerance) -> Spread {
    let values = expected.values();
    let mean = if values.is_empty() { 0.0 } else { values.iter().sum::<f64>() / values.len() as f64 };
    // Integers compare exactly, so for them the constant is the value itself.
    let exact = !expected.dtype().is_float();
    let constant = if exact { values.first().copied().unwrap_or(0.0) } else { mean };
    let constant_would_pass = values.iter().all(|&e| {
        let bound = if exact { 0.0 } else { tol.abs + tol.rel * e.abs() };
        (constant - e).abs() <= bound
    });
    let max_from_mean = values.iter().map(|e| (e - mean).abs()).fold(0.0, f64::max);
    Spread { mean, max_from_mean, constant_would_pass }
}

/// Binds every named axis of the declared tensors to the sizes meta.json gives
/// (input axes from the shape's `axes`, the rest from the reference outputs),
/// so output shapes are checked against the spec's axes and the fixture, never
/// against numbers written into generated code.
pub fn bind_axes(
    input_axes: &BTreeMap<String, usize>,
    declared: &[TensorDecl],
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
    use crate::tensor::Data;
    use crate::tensor::DType;

    fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor { shape: shape.to_vec(), data: Data::Float32(v.to_vec()) }
    }

    const TOL: Tolerance = Tolerance { abs: 1e-4, rel: 1e-3 };

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
        let ints = Tensor { shape: vec![3], data: Data::Int64(vec![4, 4, 5]) };
        assert!(!spread(&ints, TOL).constant_would_pass);
    }

    #[test]
    fn shape_and_dtype_mismatch_are_errors() {
        assert!(deviation(&f32s(&[2], &[0.0, 0.0]), &f32s(&[1, 2], &[0.0, 0.0]), TOL).is_err());
        let ints = Tensor { shape: vec![2], data: Data::Int64(vec![0, 0]) };
        assert!(deviation(&f32s(&[2], &[0.0, 0.0]), &ints, TOL).is_err());
    }

    #[test]
    fn binds_output_axes_and_catches_conflicts() {
        let decl = [TensorDecl { name: "h", dtype: DType::Float32, axes: &["batch", "sequence", "hidden"] }];
        let inputs = BTreeMap::from([("batch".to_string(), 2), ("sequence".to_string(), 5)]);
        let good = BTreeMap::from([("h".to_string(), vec![2, 5, 32])]);
        let sizes = bind_axes(&inputs, &decl, &good).unwrap();
        assert_eq!(expected_shape(&decl[0], &sizes), vec![2, 5, 32]);
        let conflicting = BTreeMap::from([("h".to_string(), vec![2, 6, 32])]);
        assert!(bind_axes(&inputs, &decl, &conflicting).unwrap_err().contains("sequence"));
        let wrong_rank = BTreeMap::from([("h".to_string(), vec![2, 5])]);
        assert!(bind_axes(&inputs, &decl, &wrong_rank).unwrap_err().contains("rank"));
    }
}
