//! The quantization check of a webgpu cell, one per scheme: the model's own
//! weight matrices (from its fixture) quantized at the scheme's widths, the
//! products computed by wgpu's kernels on the adapter with the activations
//! the layers really received. One verdict: the kernel agrees with the CPU's
//! product of the same quantized weights within float32 rounding (does this
//! adapter's kernel compute the quantized product right?).
//!
//! The mean relative error against float32 is recorded, with the rating whose
//! band it falls in beside the spec's (`web_quantization`), and never
//! judged: on a tiny model's random weights it is the deviation of this scheme
//! on these matrices, not evidence for or against a rating that trained
//! weights earned (only a real checkpoint's records can be).

use crate::error::{CheckError, ErrorKind};
use crate::record::{self, FixtureRecord, Outcome, QuantizationRecord, Record};
use crate::{Cell, QuantScheme, QuantizationDecl};

/// Runs one scheme's check on each part of the cell's model (its components,
/// or the whole model), writes a record per part, and panics (fails the test)
/// when any part failed.
pub fn quantization(cell: &Cell, scheme: QuantScheme) {
    // A component with no matrix-product layer (a token embedding is a table lookup) has no
    // weights the kernels multiply: it is left out, unless every component is such.
    let with_layers: Vec<&'static crate::ModelDecl> = cell
        .model
        .parts()
        .iter()
        .filter(|part| !has_no_linear_layers(part))
        .collect();
    let parts: Vec<&'static crate::ModelDecl> = if with_layers.is_empty() {
        cell.model.parts().iter().collect()
    } else {
        with_layers
    };
    let failures: Vec<String> = parts
        .into_iter()
        .filter_map(|part| quantization_of_part(&cell.for_part(part), scheme).err())
        .collect();
    if !failures.is_empty() {
        panic!("{}", failures.join("\n"));
    }
}

/// A component whose fixture says no matrix-product layer ran in it.
fn has_no_linear_layers(part: &'static crate::ModelDecl) -> bool {
    part.component.is_some()
        && crate::fixture::Fixture::open(part).is_ok_and(|f| {
            f.meta
                .linear_layers
                .as_ref()
                .is_some_and(|l| l.captured == 0)
        })
}

fn quantization_of_part(cell: &Cell, scheme: QuantScheme) -> Result<(), String> {
    let expected = cell
        .quantization
        .and_then(|q| q.check(scheme))
        .and_then(|c| c.expected);
    let mut measured = QuantizationRecord {
        scheme,
        group_size: settings(cell).group_size,
        adapter: None,
        layers_captured: None,
        sampling: None,
        layers: Vec::new(),
        mean_relative_error: None,
        max_relative_error: None,
        weight_bytes_float32: 0,
        weight_bytes_quantized: 0,
        memory_saved: None,
        measured_rating: None,
        expected_rating: expected,
        expected_band: expected.and_then(|r| settings(cell).band(r)),
    };
    let mut fixture_record = None;
    let outcome = perform(cell, scheme, &mut measured, &mut fixture_record);
    let engine = match &measured.adapter {
        Some(adapter) => format!("wgpu {}, {}", adapter.wgpu_version, adapter.summary()),
        None => "wgpu (no adapter)".to_string(),
    };
    let record = Record {
        engine,
        status: if outcome.is_ok() {
            Outcome::Passed
        } else {
            Outcome::Failed
        },
        reason: outcome
            .as_ref()
            .err()
            .map(|e| cell.model.qualify(&e.message)),
        error_kind: outcome.as_ref().err().map(|e| e.kind),
        stage: match &outcome {
            Ok(()) => Some(crate::Stage::Pass),
            Err(e) => e.kind.stage(),
        },
        fixture: fixture_record,
        quantization: Some(measured),
        ..blank_record(cell, scheme)
    };
    if let Err(e) = record::append(&record) {
        panic!(
            "{}::{}: cannot write its result record ({:?}): {e}",
            cell.id(),
            scheme.check_name(),
            ErrorKind::RecordWrite
        );
    }
    outcome.map_err(|e| {
        format!(
            "{}::{} failed ({}): {}",
            cell.id(),
            scheme.check_name(),
            e.kind.name(),
            e.message
        )
    })
}

/// A record of `cell`'s `scheme` check with the identifying fields filled and nothing measured.
pub(crate) fn blank_record(cell: &Cell, scheme: QuantScheme) -> Record {
    record::blank_check(cell, crate::CheckId::Quantization(scheme))
}

/// How a kernel cell quantizes (model-specs/quantization.yaml, in its cell).
fn settings(cell: &Cell) -> &'static QuantizationDecl {
    match cell.quantization {
        Some(quantization) => quantization.settings,
        None => panic!(
            "{} has no quantization checks (it runs the model's graph): generated/ is out of date, run gen",
            cell.id()
        ),
    }
}

#[cfg(not(feature = "wgpu"))]
fn perform(
    cell: &Cell,
    _: QuantScheme,
    _: &mut QuantizationRecord,
    _: &mut Option<FixtureRecord>,
) -> Result<(), CheckError> {
    Err(CheckError::new(
        ErrorKind::EngineNotBuilt,
        format!(
            "{}: the runtime was built without its `wgpu` feature, which the quantization kernels need (the generated crate's `{}` feature turns it on)",
            cell.id(),
            cell.platform.feature
        ),
    ))
}

#[cfg(feature = "wgpu")]
fn perform(
    cell: &Cell,
    scheme: QuantScheme,
    measured: &mut QuantizationRecord,
    fixture_record: &mut Option<FixtureRecord>,
) -> Result<(), CheckError> {
    use crate::fixture::Fixture;

    let gpu = crate::engine::wgpu::gpu()?;
    measured.adapter = Some(gpu.adapter.clone());
    let fixture = Fixture::open(cell.model)?;
    *fixture_record = Some(fixture.record(scheme.check_name(), crate::EngineKind::Wgpu));
    let sample = fixture.meta.linear_layers.as_ref().ok_or_else(|| {
        CheckError::new(ErrorKind::FixtureInvalid, format!("{}'s fixture lists no linear_layers (exporters before 9 did not capture them): rebuild it with `gen fixtures`", cell.model.model_type))
    })?;
    measured.layers_captured = Some(sample.captured);
    let empty = sample.layers.iter().filter(|l| l.rows == 0).count();
    measured.sampling = Some(if empty == 0 {
        sample.method.clone()
    } else {
        format!(
            "{}; {empty} sampled layers ran on no rows and are left out",
            sample.method
        )
    });
    if sample.layers.is_empty() {
        return Err(CheckError::new(
            ErrorKind::DoesNotApply,
            format!(
                "{} has no matrix-product layer the exporter can take weights from (no nn.Linear, Conv1D or ungrouped convolution ran)",
                cell.model.model_type
            ),
        ));
    }
    let mut disagreements = Vec::new();
    // A layer that ran on an empty tensor (no rows) has no product to measure.
    for layer in sample.layers.iter().filter(|l| l.rows > 0) {
        measure_layer(
            gpu,
            &fixture,
            layer,
            scheme,
            cell,
            measured,
            &mut disagreements,
        )?;
    }
    let errors: Vec<f64> = measured
        .layers
        .iter()
        .filter_map(|l| l.relative_error)
        .collect();
    if measured.weight_bytes_float32 > 0 {
        measured.memory_saved = Some(
            1.0 - measured.weight_bytes_quantized as f64 / measured.weight_bytes_float32 as f64,
        );
    }
    if !disagreements.is_empty() {
        return Err(CheckError::new(
            ErrorKind::OutOfTolerance,
            format!(
                "wgpu's kernels ({}) on {} disagree with the CPU's product of the same quantized weights beyond float32 rounding in {} of {} layers: {}{}",
                scheme.name(),
                gpu.adapter.name,
                disagreements.len(),
                measured.layers.len(),
                disagreements
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; "),
                if disagreements.len() > 3 {
                    format!("; and {} more (all in the record)", disagreements.len() - 3)
                } else {
                    String::new()
                }
            ),
        ));
    }
    if errors.is_empty() {
        return Err(CheckError::new(
            ErrorKind::ReferenceNotInformative,
            format!(
                "every sampled layer's float32 product is all zeros on {}'s fixture activations: no error can be measured",
                cell.model.model_type
            ),
        ));
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    measured.mean_relative_error = Some(mean);
    measured.max_relative_error = errors.iter().copied().reduce(f64::max);
    measured.measured_rating = settings(cell).rating_of(mean);
    Ok(())
}

/// One sampled layer: wgpu's kernel on its quantized weights against the
/// CPU's product of the same weights (within float32 rounding), and the
/// quantization's own error against the float32 product.
#[cfg(feature = "wgpu")]
fn measure_layer(
    gpu: &crate::engine::wgpu::Gpu,
    fixture: &crate::fixture::Fixture,
    layer: &crate::fixture::LinearLayer,
    scheme: QuantScheme,
    cell: &Cell,
    measured: &mut QuantizationRecord,
    disagreements: &mut Vec<String>,
) -> Result<(), CheckError> {
    use crate::quant::{max_abs_difference, products, quantize, relative_error};
    use crate::record::LayerQuantization;

    let group_size = settings(cell).group_size as usize;
    let (x, w) = fixture.linear_layer(layer)?;
    let bits = scheme.bits(layer.role, &settings(cell).mixed);
    let packed = quantize(&w, layer.out_features, layer.in_features, bits, group_size);
    let got = gpu.linear(&x, layer.rows, &packed)?;
    let products = products(
        &x,
        layer.rows,
        &w,
        &packed.dequantize(),
        layer.out_features,
        layer.in_features,
    );
    // Sequential float32 summation of `in` products is within in·2⁻²⁴/(1 − in·2⁻²⁴) of Σ|xᵢwᵢ| (Higham's γₙ);
    // twice that leaves room for the kernel's own rounding of each product.
    let n = layer.in_features as f64 * 2f64.powi(-24);
    let kernel_bound = 2.0 * n / (1.0 - n) * products.magnitude.iter().copied().fold(0.0, f64::max)
        + f64::from(f32::MIN_POSITIVE);
    let kernel_difference = max_abs_difference(&got, &products.dequantized);
    if kernel_difference.is_nan() || kernel_difference > kernel_bound {
        disagreements.push(format!(
            "{} ({bits} bits): {kernel_difference:.3e} > {kernel_bound:.3e}",
            layer.name
        ));
    }
    let exact = products.exact;
    measured.weight_bytes_float32 += 4 * w.len();
    measured.weight_bytes_quantized += packed.bytes();
    measured.layers.push(LayerQuantization {
        name: layer.name.clone(),
        role: layer.role,
        kind: layer.kind.clone(),
        bits,
        rows: layer.rows,
        in_features: layer.in_features,
        out_features: layer.out_features,
        relative_error: relative_error(&got, &exact),
        kernel_max_abs_difference: kernel_difference,
        kernel_bound,
    });
    Ok(())
}
