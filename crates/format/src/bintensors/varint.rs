//! bincode-2 `standard()` varints: `< 251` in one byte, else a tag byte
//! (0xFB u16, 0xFC u32, 0xFD u64) and the value little-endian.

use crate::BintensorsError;
use crate::io::bytes::ByteReader;
use crate::{Error, Result};

const TAG_U16: u8 = 0xFB;
const TAG_U32: u8 = 0xFC;
const TAG_U64: u8 = 0xFD;

/// Reads a varint, rejecting invalid tags and non-canonical (over-long) forms.
pub(crate) fn read(r: &mut ByteReader<'_>, what: &'static str) -> Result<u64> {
    let offset = r.offset();
    let tag = r.u8(what)?;
    let (value, min) = match tag {
        0..=250 => return Ok(u64::from(tag)),
        TAG_U16 => (u64::from(r.u16_le(what)?), 251),
        TAG_U32 => (u64::from(r.u32_le(what)?), 1 << 16),
        TAG_U64 => (r.u64_le(what)?, 1 << 32),
        _ => {
            return Err(Error::Bintensors(BintensorsError::InvalidVarintTag {
                offset,
                tag,
            }));
        }
    };
    if value < min {
        return Err(Error::Bintensors(BintensorsError::NonCanonicalVarint {
            offset,
            value,
        }));
    }
    Ok(value)
}

/// Appends the canonical encoding of `value`.
pub(crate) fn write(out: &mut Vec<u8>, value: u64) {
    match value {
        0..=250 => out.push(value as u8),
        251..=0xFFFF => {
            out.push(TAG_U16);
            out.extend_from_slice(&(value as u16).to_le_bytes());
        }
        0x1_0000..=0xFFFF_FFFF => {
            out.push(TAG_U32);
            out.extend_from_slice(&(value as u32).to_le_bytes());
        }
        _ => {
            out.push(TAG_U64);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LayoutError;

    fn encode(value: u64) -> Vec<u8> {
        let mut out = vec![];
        write(&mut out, value);
        out
    }

    fn decode(bytes: &[u8]) -> Result<u64> {
        read(&mut ByteReader::new(bytes, 0), "varint")
    }

    #[test]
    fn encodes_like_bincode_standard() {
        assert_eq!(encode(0), [0]);
        assert_eq!(encode(250), [250]);
        assert_eq!(encode(251), [0xFB, 251, 0]);
        assert_eq!(encode(3000), [0xFB, 0xB8, 0x0B]);
        assert_eq!(encode(u64::from(u16::MAX)), [0xFB, 0xFF, 0xFF]);
        assert_eq!(encode(1 << 16), [0xFC, 0, 0, 1, 0]);
        assert_eq!(encode(u64::from(u32::MAX)), [0xFC, 0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(encode(1 << 32), [0xFD, 0, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(
            encode(u64::MAX),
            [0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        );
    }

    #[test]
    fn round_trips_at_every_boundary() {
        for v in [
            0,
            1,
            250,
            251,
            0xFFFF,
            0x1_0000,
            0xFFFF_FFFF,
            1 << 32,
            u64::MAX,
        ] {
            assert_eq!(decode(&encode(v)).unwrap(), v);
        }
    }

    #[test]
    fn rejects_invalid_and_non_canonical_forms() {
        assert!(matches!(
            decode(&[0xFE, 0, 0]),
            Err(Error::Bintensors(BintensorsError::InvalidVarintTag {
                tag: 0xFE,
                offset: 0
            }))
        ));
        assert!(matches!(
            decode(&[0xFF]),
            Err(Error::Bintensors(BintensorsError::InvalidVarintTag { .. }))
        ));
        assert!(matches!(
            decode(&[0xFB, 5, 0]),
            Err(Error::Bintensors(BintensorsError::NonCanonicalVarint {
                value: 5,
                ..
            }))
        ));
        assert!(matches!(
            decode(&[0xFC, 0xFF, 0xFF, 0, 0]),
            Err(Error::Bintensors(
                BintensorsError::NonCanonicalVarint { .. }
            ))
        ));
        assert!(matches!(
            decode(&[0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]),
            Err(Error::Bintensors(
                BintensorsError::NonCanonicalVarint { .. }
            ))
        ));
        assert!(matches!(
            decode(&[0xFB, 1]),
            Err(Error::Layout(LayoutError::Truncated { .. }))
        ));
        assert!(matches!(
            decode(&[]),
            Err(Error::Layout(LayoutError::Truncated { .. }))
        ));
    }
}
