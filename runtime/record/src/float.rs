//! JSON has no NaN or infinity: serde_json writes both as `null`. A measured
//! error that is not finite (an output holding NaN) is evidence, so the
//! fields that can hold one read `null` back as NaN (non-finite either way:
//! it fails every bound it is judged by), and a band's open upper end as
//! infinity.

use serde::{Deserialize, Deserializer};

pub(crate) fn nan_if_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

pub(crate) fn open_band<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<(f64, f64)>, D::Error> {
    let band = Option::<(Option<f64>, Option<f64>)>::deserialize(deserializer)?;
    Ok(band.map(|(above, up_to)| {
        (
            above.unwrap_or(f64::NEG_INFINITY),
            up_to.unwrap_or(f64::INFINITY),
        )
    }))
}
