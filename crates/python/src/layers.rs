//! Layers given from Python (negative ones count from the end), resolved by
//! the library's one rule (`modelbin_infer::model::resolve_layer`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The blocks `layers` name in a model of `blocks` blocks; `ValueError`
/// naming the first layer past either end.
pub fn resolve(layers: &[i64], blocks: usize) -> PyResult<Vec<usize>> {
    layers
        .iter()
        .map(|&layer| {
            modelbin_infer::model::resolve_layer(layer, blocks).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "layer {layer}: the model has {blocks} blocks (0 to {}, or -{blocks} to -1)",
                    blocks.saturating_sub(1)
                ))
            })
        })
        .collect()
}
