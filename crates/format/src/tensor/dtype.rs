//! Element types of every format modelbin reads.

use std::fmt;

/// An element type, with its size and its code in each format that stores it.
///
/// The variant order is BinTensors' dtype order (its codes 0..=14); the
/// BinTensors writer sorts tensors by it, descending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    /// Boolean, one byte (0 or 1).
    Bool,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// 8-bit float, 5 exponent bits, 2 mantissa bits.
    F8E5M2,
    /// 8-bit float, 4 exponent bits, 3 mantissa bits.
    F8E4M3,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 16-bit integer.
    U16,
    /// IEEE-754 half precision.
    F16,
    /// bfloat16.
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// IEEE-754 single precision.
    F32,
    /// IEEE-754 double precision.
    F64,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 64-bit integer.
    U64,
}

/// EMBD's dtype codes (docs/formats/embd.md), indexed by code.
const EMBD_CODES: [DType; 9] = [
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::I16,
    DType::I8,
    DType::U32,
    DType::U16,
    DType::U8,
];

impl DType {
    /// Every dtype, in BinTensors code order.
    pub const ALL: [DType; 15] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::F8E5M2,
        DType::F8E4M3,
        DType::I16,
        DType::U16,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::U32,
        DType::F32,
        DType::F64,
        DType::I64,
        DType::U64,
    ];

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 | DType::F8E5M2 | DType::F8E4M3 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// The name safetensors and BinTensors use (`"F32"`, `"BOOL"`, `"F8_E4M3"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "BOOL",
            DType::U8 => "U8",
            DType::I8 => "I8",
            DType::F8E5M2 => "F8_E5M2",
            DType::F8E4M3 => "F8_E4M3",
            DType::I16 => "I16",
            DType::U16 => "U16",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::I32 => "I32",
            DType::U32 => "U32",
            DType::F32 => "F32",
            DType::F64 => "F64",
            DType::I64 => "I64",
            DType::U64 => "U64",
        }
    }

    /// Parses a safetensors/BinTensors name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// BinTensors' dtype byte.
    pub const fn bintensors_code(self) -> u8 {
        self as u8
    }

    /// The dtype with BinTensors code `code`.
    pub fn from_bintensors_code(code: u64) -> Option<DType> {
        usize::try_from(code)
            .ok()
            .and_then(|i| DType::ALL.get(i).copied())
    }

    /// EMBD's dtype code, for the nine dtypes EMBD stores.
    pub fn embd_code(self) -> Option<u8> {
        EMBD_CODES.iter().position(|&d| d == self).map(|i| i as u8)
    }

    /// The dtype with EMBD code `code`.
    pub fn from_embd_code(code: u8) -> Option<DType> {
        EMBD_CODES.get(usize::from(code)).copied()
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for DType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Byte length of a `dtype` tensor of `shape`, or `None` on overflow.
pub fn byte_len(dtype: DType, shape: &[usize]) -> Option<u64> {
    shape
        .iter()
        .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bintensors_codes_follow_the_design_table() {
        let names = [
            "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32",
            "F32", "F64", "I64", "U64",
        ];
        for (code, name) in names.iter().enumerate() {
            let dtype = DType::from_bintensors_code(code as u64).unwrap();
            assert_eq!(dtype.name(), *name);
            assert_eq!(dtype.bintensors_code() as usize, code);
            assert_eq!(DType::from_name(name), Some(dtype));
        }
        assert_eq!(DType::from_bintensors_code(15), None);
        assert_eq!(DType::from_bintensors_code(u64::MAX), None);
        assert_eq!(DType::from_name("F4"), None);
    }

    #[test]
    fn sizes() {
        let sizes: Vec<usize> = DType::ALL.iter().map(|d| d.size()).collect();
        assert_eq!(sizes, [1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8]);
    }

    #[test]
    fn embd_codes_follow_the_spec_table() {
        let expected = [
            DType::F32,
            DType::F16,
            DType::BF16,
            DType::I32,
            DType::I16,
            DType::I8,
            DType::U32,
            DType::U16,
            DType::U8,
        ];
        for (code, dtype) in expected.into_iter().enumerate() {
            assert_eq!(DType::from_embd_code(code as u8), Some(dtype));
            assert_eq!(dtype.embd_code(), Some(code as u8));
        }
        assert_eq!(DType::from_embd_code(9), None);
        assert_eq!(DType::Bool.embd_code(), None);
    }
}
