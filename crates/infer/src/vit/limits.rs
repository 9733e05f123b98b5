//! The bounds of image decoding, which the JPEG decoder and the rest of
//! the preprocessing share.

/// The largest width or height decoded.
pub const MAX_SIDE: u32 = 16384;
/// The most bytes one image's decoded pixels (and each resize buffer) may
/// take.
pub const MAX_BYTES: u64 = 256 << 20;
