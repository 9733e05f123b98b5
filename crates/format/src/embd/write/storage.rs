//! The bytes each tensor is written with when a conversion asks for a
//! storage dtype: floats cast to F32, F16 or BF16, or the linear weights
//! quantized to int8 with their scales (see [`crate::embd::int8`]), or int8
//! weights turned back into floats.

use std::collections::HashMap;

use crate::embd::int8::{
    Quantizer, SCALE_SUFFIX, WORD_EMBEDDINGS, block_for, block_of, dequantize, is_quantized,
    scale_name,
};
use crate::tensor::TensorView;
use crate::tensor::floats::{decode, encode, encode_f32, is_float};
use crate::{DType, Error, LayoutError, ModelError, Result};

/// Checks that `dtype` is one EMBD weights may be stored as.
pub(crate) fn check_weight_dtype(dtype: Option<DType>) -> Result<()> {
    match dtype {
        Some(d) if !matches!(d, DType::F32 | DType::F16 | DType::BF16 | DType::I8) => {
            Err(Error::Layout(LayoutError::UnsupportedDtype {
                name: "(the requested weight dtype)".into(),
                dtype: d.to_string(),
                format: "EMBD weights (F32, F16, BF16 or I8)",
            }))
        }
        _ => Ok(()),
    }
}

/// Whether `name` is the scale tensor of an int8 tensor (never cast: the
/// convention keeps scales in F32).
fn is_scale(name: &str) -> bool {
    name.strip_suffix(SCALE_SUFFIX).is_some_and(is_quantized)
}

/// What becomes of one source tensor.
enum Fate {
    /// Written as it is.
    Kept,
    /// Written over new bytes of a new dtype.
    Stored(DType, Vec<u8>),
    /// Quantized: INT8 bytes, then its F32 scale tensor (`[n, blocks]`,
    /// or `[n]` for one scale per row).
    Quantized {
        values: Vec<u8>,
        scale_name: String,
        scale_shape: Vec<usize>,
        scales: Vec<u8>,
    },
    /// Not written (the scale of a weight turned back into floats).
    Dropped,
}

/// The tensors of a conversion, each with the bytes it is written with.
pub(crate) struct Stored {
    fates: Vec<Fate>,
}

impl Stored {
    /// Decides each tensor's bytes for storage as `dtype` (`None`: as they
    /// are). `names[i]` is the name `sources[i]` is written under. Storage
    /// as I8 takes the values and scales from `quantizer`; without one it
    /// is [`Error::InvalidArgument`].
    ///
    /// A quantized tensor with an infinite or NaN value cannot be quantized:
    /// its block's scale would be refused by the model check
    /// ([`ModelError::InvalidScale`]), so it is refused here.
    pub(crate) fn new(
        sources: &[TensorView<'_>],
        names: &[&str],
        dtype: Option<DType>,
        quantizer: Option<Quantizer>,
    ) -> Result<Self> {
        let mut fates: Vec<Fate> = sources.iter().map(|_| Fate::Kept).collect();
        let Some(dtype) = dtype else {
            return Ok(Stored { fates });
        };
        if dtype == DType::I8 && quantizer.is_none() {
            return Err(Error::InvalidArgument(
                "int8 storage needs a quantizer (modelbin_infer::quantize_weight_blocks)".into(),
            ));
        }
        // One lookup per tensor, so a file of many tensors stays linear.
        let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        for (i, (tensor, &name)) in sources.iter().zip(names).enumerate() {
            let scale = index.get(scale_name(name).as_str()).copied();
            let fate = match (tensor.dtype(), dtype) {
                (from, DType::I8) if is_float(from) && is_quantized(name) => {
                    let (Some(values), Some(&k)) =
                        (decode(from, tensor.data()), tensor.shape().get(1))
                    else {
                        continue;
                    };
                    // Present: storage as I8 without one was refused above.
                    let Some(quantize) = quantizer else {
                        continue;
                    };
                    let block = block_for(name, k);
                    let (q, scales) = quantize(&values, k, block);
                    let blocks = k.div_ceil(block);
                    if let Some((at, &value)) =
                        scales.iter().enumerate().find(|(_, s)| !s.is_finite())
                    {
                        return Err(Error::Model(ModelError::InvalidScale {
                            name: scale_name(name),
                            row: at / blocks.max(1),
                            value,
                        }));
                    }
                    Fate::Quantized {
                        values: bytemuck::cast_slice(&q).to_vec(),
                        scale_name: scale_name(name),
                        scale_shape: if name == WORD_EMBEDDINGS {
                            vec![tensor.shape()[0]]
                        } else {
                            vec![tensor.shape()[0], blocks]
                        },
                        scales: encode_f32(&scales),
                    }
                }
                (DType::I8, to) if is_float(to) && is_quantized(name) => {
                    let (n, k) = match *tensor.shape() {
                        [n, k] => (n, k),
                        _ => continue,
                    };
                    let Some((scales, block)) = scale.and_then(|s| {
                        let block = block_of(sources[s].shape(), n, k)?;
                        Some((decode(sources[s].dtype(), sources[s].data())?, block))
                    }) else {
                        continue;
                    };
                    let values = dequantize(bytemuck::cast_slice(tensor.data()), &scales, k, block);
                    if let Some(s) = scale {
                        fates[s] = Fate::Dropped;
                    }
                    match encode(&values, to) {
                        Some(bytes) => Fate::Stored(to, bytes),
                        None => continue,
                    }
                }
                (from, to) if is_float(from) && is_float(to) && from != to => {
                    if matches!(fates[i], Fate::Dropped) || is_scale(name) {
                        continue;
                    }
                    match decode(from, tensor.data()).and_then(|v| encode(&v, to)) {
                        Some(bytes) => Fate::Stored(to, bytes),
                        None => continue,
                    }
                }
                _ => continue,
            };
            fates[i] = fate;
        }
        Ok(Stored { fates })
    }

    /// The tensors to write, in source order, each scale right after its
    /// weight.
    pub(crate) fn views<'a>(
        &'a self,
        sources: &[TensorView<'a>],
        names: &[&'a str],
    ) -> Result<Vec<TensorView<'a>>> {
        let mut views = Vec::with_capacity(2 * sources.len());
        for ((tensor, &name), fate) in sources.iter().zip(names).zip(&self.fates) {
            match fate {
                Fate::Kept => views.push(TensorView::new(
                    name,
                    tensor.dtype(),
                    tensor.shape(),
                    tensor.data(),
                )?),
                Fate::Stored(dtype, bytes) => {
                    views.push(TensorView::new(name, *dtype, tensor.shape(), bytes)?)
                }
                Fate::Quantized {
                    values,
                    scale_name,
                    scale_shape,
                    scales,
                } => {
                    views.push(TensorView::new(name, DType::I8, tensor.shape(), values)?);
                    views.push(TensorView::new(
                        scale_name,
                        DType::F32,
                        scale_shape,
                        scales,
                    )?);
                }
                Fate::Dropped => {}
            }
        }
        Ok(views)
    }
}
