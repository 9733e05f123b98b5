//! The one float codec of the crate: little-endian bytes of every float
//! dtype to `f32` values and back.
//!
//! F32 bytes are borrowed when they are 4-byte aligned on a little-endian
//! machine (always, for the tensors of a mapped file in the aligned
//! formats); every other case decodes into a new vector. F64 rounds to the
//! nearest `f32`; the two 8-bit floats decode exactly (every value they hold
//! is an `f32`) and, as in the OCP 8-bit float definition that safetensors
//! follows, F8E4M3 has no infinities and one NaN pattern per sign.

use std::borrow::Cow;

use crate::DType;

/// Whether `dtype` is one of the float dtypes [`decode`] reads.
pub fn is_float(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::F64 | DType::F32 | DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2
    )
}

/// `bytes` (little-endian values of `dtype`) as `f32` values; `None` when
/// `dtype` is not a float dtype. Trailing bytes short of one value are
/// ignored; callers pass whole tensors.
pub fn decode(dtype: DType, bytes: &[u8]) -> Option<Cow<'_, [f32]>> {
    Some(match dtype {
        DType::F32 => decode_f32(bytes),
        DType::F64 => Cow::Owned(
            bytes
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32)
                .collect(),
        ),
        DType::F16 => Cow::Owned(
            bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
        ),
        DType::BF16 => Cow::Owned(
            bytes
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
        ),
        DType::F8E4M3 => Cow::Owned(bytes.iter().map(|&b| f8e4m3_to_f32(b)).collect()),
        DType::F8E5M2 => Cow::Owned(bytes.iter().map(|&b| f8e5m2_to_f32(b)).collect()),
        _ => return None,
    })
}

/// The index and value of the first NaN or infinity in `bytes` (values of
/// the float dtype `dtype`), decoded a block at a time so that memory stays
/// small whatever the tensor's size; `None` when all are finite or `dtype`
/// is not a float dtype.
pub fn first_non_finite(dtype: DType, bytes: &[u8]) -> Option<(usize, f32)> {
    const BLOCK_VALUES: usize = 1 << 16;
    let width = dtype.size();
    if !is_float(dtype) || width == 0 {
        return None;
    }
    bytes
        .chunks(BLOCK_VALUES * width)
        .enumerate()
        .find_map(|(block, chunk)| {
            let values = decode(dtype, chunk)?;
            if all_finite(&values) {
                return None;
            }
            let at = values.iter().position(|v| !v.is_finite())?;
            Some((block * BLOCK_VALUES + at, values[at]))
        })
}

/// Whether every value is finite, in a branch-free pass the compiler
/// vectorizes (a search for the first bad value stops to test each one).
fn all_finite(values: &[f32]) -> bool {
    const EXPONENT: u32 = 0x7f80_0000;
    values.chunks(256).all(|chunk| {
        chunk.iter().fold(0u32, |bad, v| {
            bad | u32::from(v.to_bits() & EXPONENT == EXPONENT)
        }) == 0
    })
}

/// Refuses the model weight `name` (values of the float dtype `dtype` in
/// `bytes`) when it holds a NaN or an infinity, naming the first
/// ([`ModelError::NonFinite`](crate::ModelError::NonFinite)): every output
/// computed from such a weight would be NaN or infinite too. Values are
/// judged as `f32`, the width the engines compute in, so an F64 value
/// beyond `f32`'s range is refused as the infinity it becomes.
pub fn require_finite(name: &str, dtype: DType, bytes: &[u8]) -> crate::Result<()> {
    match first_non_finite(dtype, bytes) {
        None => Ok(()),
        Some((index, value)) => Err(non_finite(name, index, value)),
    }
}

/// [`require_finite`] for weights already decoded to `f32`.
pub fn require_finite_values(name: &str, values: &[f32]) -> crate::Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(non_finite(name, index, values[index])),
    }
}

fn non_finite(name: &str, index: usize, value: f32) -> crate::Error {
    crate::Error::Model(crate::ModelError::NonFinite {
        name: name.to_owned(),
        index,
        value,
    })
}

/// Little-endian f32 bytes as values, borrowed when aligned.
pub fn decode_f32(bytes: &[u8]) -> Cow<'_, [f32]> {
    #[cfg(target_endian = "little")]
    if let Ok(values) = bytemuck::try_cast_slice::<u8, f32>(bytes) {
        return Cow::Borrowed(values);
    }
    Cow::Owned(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect(),
    )
}

/// `values` as little-endian bytes of `dtype` (F32, F16 or BF16, rounded to
/// nearest even); `None` for other dtypes.
pub fn encode(values: &[f32], dtype: DType) -> Option<Vec<u8>> {
    Some(match dtype {
        DType::F32 => encode_f32(values),
        DType::F16 => values
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect(),
        DType::BF16 => values
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect(),
        _ => return None,
    })
}

/// `values` as little-endian f32 bytes.
pub fn encode_f32(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// One F8E4M3 value (bias 7; exponent 15 with mantissa 7 is NaN, no infinity).
fn f8e4m3_to_f32(byte: u8) -> f32 {
    let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((byte >> 3) & 0x0F);
    let mantissa = f32::from(byte & 0x07);
    if exponent == 0x0F && byte & 0x07 == 0x07 {
        return f32::NAN;
    }
    sign * if exponent == 0 {
        mantissa / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + mantissa / 8.0) * 2f32.powi(exponent - 7)
    }
}

/// One F8E5M2 value (bias 15; IEEE-like, with infinities and NaNs): the
/// upper byte of an IEEE half.
fn f8e5m2_to_f32(byte: u8) -> f32 {
    half::f16::from_bits(u16::from(byte) << 8).to_f32()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_non_finite_value_is_found_wherever_it_is() {
        let finite: Vec<f32> = (0..600).map(|i| i as f32 * 1e30 - 3e32).collect();
        assert!(all_finite(&finite));
        assert_eq!(
            first_non_finite(DType::F32, bytemuck::cast_slice(&finite)),
            None
        );
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            for at in [0, 1, 255, 256, 599] {
                let mut values = finite.clone();
                values[at] = bad;
                let (index, value) =
                    first_non_finite(DType::F32, bytemuck::cast_slice(&values)).unwrap();
                assert_eq!(index, at);
                assert_eq!(value.to_bits(), bad.to_bits());
            }
        }
    }

    #[test]
    fn eight_bit_floats_decode_their_known_values() {
        // F8E4M3: 0x38 = 1.0, 0x7E = 448 (largest), 0x01 = 2^-9 (smallest
        // subnormal), 0x7F NaN, 0xB8 = -1.0.
        let e4m3 = decode(DType::F8E4M3, &[0x38, 0x7E, 0x01, 0xB8]).unwrap();
        assert_eq!(&*e4m3, &[1.0, 448.0, 2f32.powi(-9), -1.0]);
        assert!(decode(DType::F8E4M3, &[0x7F]).unwrap()[0].is_nan());
        // F8E5M2: 0x3C = 1.0, 0x7B = 57344 (largest), 0x7C = inf.
        let e5m2 = decode(DType::F8E5M2, &[0x3C, 0x7B, 0x7C]).unwrap();
        assert_eq!(&*e5m2, &[1.0, 57344.0, f32::INFINITY]);
    }

    #[test]
    fn every_storable_dtype_round_trips_through_f32() {
        let values = [0.0f32, -1.5, 3.25, 65504.0, 1e-3];
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let bytes = encode(&values, dtype).unwrap();
            let back = decode(dtype, &bytes).unwrap();
            let again = encode(&back, dtype).unwrap();
            assert_eq!(bytes, again, "{dtype}");
        }
        assert_eq!(&*decode(DType::F32, &encode_f32(&values)).unwrap(), &values);
        let f64s: Vec<u8> = [2.5f64, -0.125]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(&*decode(DType::F64, &f64s).unwrap(), &[2.5, -0.125]);
        assert!(decode(DType::I32, &[0; 4]).is_none());
        assert!(encode(&values, DType::F8E4M3).is_none());
    }
}
