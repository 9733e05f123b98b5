//! JPEG decoding with libjpeg-turbo, the library PIL decodes JPEGs with,
//! set up as PIL sets it up: the accurate integer IDCT, smooth ("fancy")
//! chroma upsampling and the library's own conversion to RGB. So a file's
//! pixels equal PIL's `Image.open(path).convert("RGB")` for baseline,
//! progressive and arithmetic-coded files at every chroma subsampling.
//! PIL's other choices are followed too: CMYK files are read with Adobe's
//! inverted polarity and converted with PIL's formula, 12-bit and
//! two-component files are refused, and data that libjpeg-turbo decodes
//! with a warning (a damaged but readable scan) is accepted, as PIL
//! ignores libjpeg's warnings. Turning the image upright follows PIL's
//! `getexif`: the EXIF orientation, else an XMP `tiff:Orientation`.
//!
//! Bounds: the header is read before any pixel is decoded, so a side beyond
//! [`MAX_SIDE`] or pixels beyond [`MAX_BYTES`] are refused first; a
//! progressive file's coefficient buffers are capped at
//! [`COEFFICIENT_BYTES`], and its scans at [`MAX_SCANS`], since each scan
//! passes over the whole image.

use std::ffi::{CStr, c_int};

use image::RgbImage;
use image::metadata::Orientation;
use turbojpeg_sys as tj;

use super::limits::{MAX_BYTES, MAX_SIDE};
use crate::vit::error::ImageError;

/// The most scans a progressive file may have. Real encoders write about
/// ten; this is libjpeg-turbo's own recommendation for untrusted input.
const MAX_SCANS: c_int = 500;

/// The most bytes a progressive file's coefficients may take (two per
/// sample): room for any image within [`MAX_BYTES`] of RGB pixels.
const COEFFICIENT_BYTES: u64 = 3 * MAX_BYTES;

/// A libjpeg-turbo decompressor.
struct Decompressor(tj::tjhandle);

impl Drop for Decompressor {
    fn drop(&mut self) {
        // SAFETY: the handle came from `tj3Init` and is destroyed once.
        unsafe { tj::tj3Destroy(self.0) }
    }
}

impl Decompressor {
    fn new() -> Result<Decompressor, ImageError> {
        // SAFETY: `tj3Init` takes no pointers; a null result is an error.
        let handle = unsafe { tj::tj3Init(tj::TJINIT_TJINIT_DECOMPRESS as c_int) };
        if handle.is_null() {
            return Err(ImageError::Decode(
                "libjpeg-turbo could not start a decompressor".into(),
            ));
        }
        let decompressor = Decompressor(handle);
        decompressor.set(tj::TJPARAM_TJPARAM_SCANLIMIT, MAX_SCANS)?;
        decompressor.set(
            tj::TJPARAM_TJPARAM_MAXMEMORY,
            (COEFFICIENT_BYTES >> 20) as c_int,
        )?;
        Ok(decompressor)
    }

    fn set(&self, param: tj::TJPARAM, value: c_int) -> Result<(), ImageError> {
        // SAFETY: a live handle; an unknown parameter is reported, not UB.
        if unsafe { tj::tj3Set(self.0, param as c_int, value) } != 0 {
            return Err(ImageError::Decode(self.message()));
        }
        Ok(())
    }

    fn get(&self, param: tj::TJPARAM) -> c_int {
        // SAFETY: a live handle.
        unsafe { tj::tj3Get(self.0, param as c_int) }
    }

    /// The text of the handle's last error or warning.
    fn message(&self) -> String {
        // SAFETY: `tj3GetErrorStr` returns a NUL-terminated string owned by
        // the handle (or by the library), valid until the next call on it.
        unsafe { CStr::from_ptr(tj::tj3GetErrorStr(self.0)) }
            .to_string_lossy()
            .into_owned()
    }

    /// Whether the last failed call only warned: the image was decoded
    /// whole, from data libjpeg-turbo found damaged.
    fn only_warned(&self) -> bool {
        // SAFETY: a live handle.
        unsafe { tj::tj3GetErrorCode(self.0) == tj::TJERR_TJERR_WARNING as c_int }
    }

    /// Reads the header of `bytes` into the handle's parameters.
    fn read_header(&self, bytes: &[u8]) -> Result<(), ImageError> {
        // SAFETY: `bytes` is a live slice of the length passed.
        let status =
            unsafe { tj::tj3DecompressHeader(self.0, bytes.as_ptr(), bytes.len() as tj::size_t) };
        if status != 0 {
            return Err(ImageError::Decode(self.message()));
        }
        Ok(())
    }
}

fn channels(format: tj::TJPF) -> usize {
    if format == tj::TJPF_TJPF_CMYK { 4 } else { 3 }
}

/// A JPEG file whose header was read and checked, ready to decode.
struct Opened {
    decompressor: Decompressor,
    width: u32,
    height: u32,
    format: tj::TJPF,
}

impl Opened {
    /// The file's pixels in its `format`, decoded at `1/denominator` of its
    /// size (1 or 8, libjpeg-turbo scaling factors): rows of
    /// `width.div_ceil(denominator)` pixels.
    fn pixels(&self, bytes: &[u8], denominator: u32) -> Result<Vec<u8>, ImageError> {
        let factor = tj::tjscalingfactor {
            num: 1,
            denom: denominator as c_int,
        };
        let handle = self.decompressor.0;
        // SAFETY: a live handle; the factor is one the library supports.
        if unsafe { tj::tj3SetScalingFactor(handle, factor) } != 0 {
            return Err(ImageError::Decode(self.decompressor.message()));
        }
        // libjpeg-turbo's TJSCALED: the side times the factor, rounded up.
        let width = self.width.div_ceil(denominator) as usize;
        let height = self.height.div_ceil(denominator) as usize;
        let pitch = width * channels(self.format);
        let mut pixels = vec![0u8; pitch * height];
        // SAFETY: `bytes` is a live slice of the length passed; `pixels`
        // holds `height` rows of `pitch` bytes: the size, at the factor just
        // set, of the image whose header this handle read from these bytes.
        let status = unsafe {
            tj::tj3Decompress8(
                handle,
                bytes.as_ptr(),
                bytes.len() as tj::size_t,
                pixels.as_mut_ptr(),
                pitch as c_int,
                self.format as c_int,
            )
        };
        if status != 0 && !self.decompressor.only_warned() {
            return Err(ImageError::Decode(self.decompressor.message()));
        }
        Ok(pixels)
    }
}

/// Reads the header of `bytes` (a JPEG file) and refuses, before any pixel
/// is decoded, a truncated file, a size beyond the limits, and (with
/// `convert_rgb` false) a file that is not in colour.
fn open(bytes: &[u8], convert_rgb: bool) -> Result<Opened, ImageError> {
    if !is_complete(bytes) {
        return Err(ImageError::Decode(
            "the JPEG data ends before its end-of-image marker (the file is truncated)".into(),
        ));
    }
    let decompressor = Decompressor::new()?;
    decompressor.read_header(bytes)?;
    let width = decompressor.get(tj::TJPARAM_TJPARAM_JPEGWIDTH);
    let height = decompressor.get(tj::TJPARAM_TJPARAM_JPEGHEIGHT);
    let (Ok(width), Ok(height)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(ImageError::Decode(format!(
            "the header gives {width}×{height} pixels"
        )));
    };
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(ImageError::TooLarge(format!(
            "{width}×{height} pixels: a side is above {MAX_SIDE}"
        )));
    }
    let colourspace = decompressor.get(tj::TJPARAM_TJPARAM_COLORSPACE);
    let cmyk = [tj::TJCS_TJCS_CMYK, tj::TJCS_TJCS_YCCK].map(|c| c as c_int);
    let format = if cmyk.contains(&colourspace) {
        tj::TJPF_TJPF_CMYK
    } else {
        tj::TJPF_TJPF_RGB
    };
    let colour = [tj::TJCS_TJCS_YCbCr, tj::TJCS_TJCS_RGB].map(|c| c as c_int);
    if !convert_rgb && !colour.contains(&colourspace) {
        return Err(ImageError::Unsupported(format!(
            "a {} JPEG, and the processor does not convert to RGB (do_convert_rgb is false)",
            if format == tj::TJPF_TJPF_CMYK {
                "CMYK"
            } else {
                "greyscale"
            }
        )));
    }
    let decoded_bytes = u64::from(width) * u64::from(height) * channels(format) as u64;
    if decoded_bytes > MAX_BYTES {
        return Err(ImageError::TooLarge(format!(
            "{width}×{height} pixels take more than {} MiB",
            MAX_BYTES >> 20
        )));
    }
    Ok(Opened {
        decompressor,
        width,
        height,
        format,
    })
}

/// `bytes` (a JPEG file) decoded as PIL decodes it, converted to RGB and
/// turned upright. With `convert_rgb` false only colour (YCbCr or RGB)
/// files are taken.
pub(super) fn decode(bytes: &[u8], convert_rgb: bool) -> Result<RgbImage, ImageError> {
    let opened = open(bytes, convert_rgb)?;
    let decoded = opened.pixels(bytes, 1)?;
    let rgb = if opened.format == tj::TJPF_TJPF_CMYK {
        decoded
            .chunks_exact(4)
            .flat_map(inverted_cmyk_to_rgb)
            .collect()
    } else {
        decoded
    };
    let image = RgbImage::from_raw(opened.width, opened.height, rgb)
        .expect("the buffer holds width × height RGB pixels");
    let mut image = image::DynamicImage::ImageRgb8(image);
    image.apply_orientation(orientation(bytes));
    Ok(image.into_rgb8())
}

/// The upright `(width, height)` of `bytes` (a JPEG file) if [`decode`]
/// takes it, found without making its pixels: the file is decoded at an
/// eighth of its size, which reads every coefficient of every scan (so
/// damaged data fails as in a full decode) but skips most of the inverse
/// DCT, the upsampling and the colour conversion. A lossless file, which
/// has no DCT to scale, is decoded whole.
pub(super) fn check(bytes: &[u8], convert_rgb: bool) -> Result<(u32, u32), ImageError> {
    let opened = open(bytes, convert_rgb)?;
    let lossless = opened.decompressor.get(tj::TJPARAM_TJPARAM_LOSSLESS) != 0;
    opened.pixels(bytes, if lossless { 1 } else { 8 })?;
    let (width, height) = (opened.width, opened.height);
    let turned = matches!(
        orientation(bytes),
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    );
    Ok(if turned {
        (height, width)
    } else {
        (width, height)
    })
}

/// One CMYK pixel as libjpeg-turbo gives it, read with Adobe's inverted
/// polarity (PIL's `CMYK;I`) and converted as PIL's `convert("RGB")` does:
/// each channel `(255 - k) - c·(255 - k)/255`, rounded as PIL's
/// `MULDIV255`.
fn inverted_cmyk_to_rgb(pixel: &[u8]) -> [u8; 3] {
    let [c, m, y, k] = [0, 1, 2, 3].map(|i| 255 - i32::from(pixel[i]));
    let not_k = 255 - k;
    let times_not_k = |v: i32| {
        let t = v * not_k + 128;
        ((t >> 8) + t) >> 8
    };
    [c, m, y].map(|v| (not_k - times_not_k(v)).clamp(0, 255) as u8)
}

/// The orientation PIL's `exif_transpose` applies: the EXIF block's
/// (the first `Exif` APP1 segment), else a `tiff:Orientation` in an XMP
/// segment; none when neither names a valid one.
fn orientation(bytes: &[u8]) -> Orientation {
    let mut exif = None;
    let mut xmp = None;
    for (marker, body) in segments(bytes).take_while(|&(marker, _)| marker != SOS) {
        if marker != 0xE1 {
            continue;
        }
        if let Some(tiff) = body.strip_prefix(b"Exif\0\0") {
            exif.get_or_insert(tiff);
        } else if let Some(packet) = body.strip_prefix(b"http://ns.adobe.com/xap/1.0/\0") {
            xmp = Some(packet);
        }
    }
    if let Some(tiff) = exif {
        // As PIL's `getexif`, a block without the tag falls back to XMP.
        if let Some(orientation) = Orientation::from_exif_chunk(tiff) {
            return orientation;
        }
    }
    xmp.and_then(xmp_orientation)
        .unwrap_or(Orientation::NoTransforms)
}

/// The digit after the first `tiff:Orientation="` or `tiff:Orientation>`
/// in an XMP packet, as PIL's pattern finds it.
fn xmp_orientation(packet: &[u8]) -> Option<Orientation> {
    const TAG: &[u8] = b"tiff:Orientation";
    let mut rest = packet;
    while let Some(at) = rest.windows(TAG.len()).position(|w| w == TAG) {
        let after = &rest[at + TAG.len()..];
        let digit = match after {
            [b'=', b'"', d, ..] | [b'>', d, ..] if d.is_ascii_digit() => Some(d - b'0'),
            _ => None,
        };
        if let Some(digit) = digit {
            return Orientation::from_exif(digit);
        }
        rest = after;
    }
    None
}

/// Whether `bytes` reach their end-of-image marker. libjpeg-turbo fills
/// a truncated scan in grey, with a warning, where PIL refuses the file
/// ("image file is truncated").
fn is_complete(bytes: &[u8]) -> bool {
    segments(bytes).any(|(marker, _)| marker == EOI)
}

const EOI: u8 = 0xD9;
const SOS: u8 = 0xDA;

/// The marker segments of a JPEG file, `(marker, body)` in order, walked by
/// their lengths, each scan's entropy-coded data skipped up to the next
/// marker (stuffed `FF 00` bytes and restart markers are data); the
/// end-of-image marker comes last, with an empty body. The walk ends early
/// at bytes that are not a marker or a segment cut short.
fn segments(bytes: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut at = 2; // after the start-of-image marker
    let mut ended = false;
    std::iter::from_fn(move || {
        while !ended {
            let (&0xFF, &marker) = (bytes.get(at)?, bytes.get(at + 1)?) else {
                return None;
            };
            match marker {
                // Fill bytes, and markers without a length.
                0xFF => at += 1,
                0x01 | 0xD0..=0xD7 => at += 2,
                EOI => {
                    ended = true;
                    return Some((marker, &[][..]));
                }
                _ => {
                    let length = bytes.get(at + 2..at + 4)?;
                    let end =
                        at + 2 + usize::from(u16::from_be_bytes([length[0], length[1]])).max(2);
                    let body = bytes.get(at + 4..end)?;
                    at = end;
                    if marker == SOS {
                        while at + 1 < bytes.len()
                            && (bytes[at] != 0xFF || matches!(bytes[at + 1], 0x00 | 0xD0..=0xD7))
                        {
                            at += 1;
                        }
                    }
                    return Some((marker, body));
                }
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xmp_orientation_follows_pils_pattern() {
        let packet = br#"<x:xmpmeta><rdf:Description tiff:Orientation="6"/></x:xmpmeta>"#;
        assert_eq!(xmp_orientation(packet), Some(Orientation::Rotate90));
        let element = b"<tiff:Orientation>3</tiff:Orientation>";
        assert_eq!(xmp_orientation(element), Some(Orientation::Rotate180));
        // The first match decides, as `re.search` does; 9 is no orientation.
        assert_eq!(
            xmp_orientation(br#"tiff:Orientation="9" tiff:Orientation="6""#),
            None
        );
        assert_eq!(xmp_orientation(b"tiff:Orientation x"), None);
    }

    /// A lossless JPEG of `pixels` (RGB, `width`×`height`), written by
    /// libjpeg-turbo's compressor.
    fn lossless_jpeg(pixels: &[u8], width: usize, height: usize) -> Vec<u8> {
        let mut jpeg: *mut u8 = std::ptr::null_mut();
        let mut size: tj::size_t = 0;
        // SAFETY: a fresh compressor handle, destroyed at the end; `pixels`
        // holds `height` rows of `3 × width` bytes; the output buffer is
        // allocated by the library, copied out and freed with `tj3Free`.
        unsafe {
            let handle = tj::tj3Init(tj::TJINIT_TJINIT_COMPRESS as c_int);
            assert!(!handle.is_null());
            assert_eq!(
                tj::tj3Set(handle, tj::TJPARAM_TJPARAM_LOSSLESS as c_int, 1),
                0
            );
            let status = tj::tj3Compress8(
                handle,
                pixels.as_ptr(),
                width as c_int,
                0,
                height as c_int,
                tj::TJPF_TJPF_RGB as c_int,
                &mut jpeg,
                &mut size,
            );
            assert_eq!(status, 0);
            let bytes = std::slice::from_raw_parts(jpeg, size as usize).to_vec();
            tj::tj3Free(jpeg.cast());
            tj::tj3Destroy(handle);
            bytes
        }
    }

    #[test]
    fn lossless_files_decode_to_their_pixels_and_pass_the_check() {
        let (width, height) = (21, 13);
        let pixels: Vec<u8> = (0..width * height * 3)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let jpeg = lossless_jpeg(&pixels, width, height);
        assert_eq!(decode(&jpeg, true).unwrap().into_raw(), pixels);
        assert_eq!(check(&jpeg, true).unwrap(), (21, 13));
    }

    #[test]
    fn cmyk_converts_as_pil_converts() {
        // Stored inverted: 255 is no ink.
        assert_eq!(inverted_cmyk_to_rgb(&[255, 255, 255, 255]), [255, 255, 255]);
        assert_eq!(inverted_cmyk_to_rgb(&[0, 0, 0, 0]), [0, 0, 0]);
        assert_eq!(inverted_cmyk_to_rgb(&[0, 255, 255, 255]), [0, 255, 255]);
    }

    #[test]
    fn segments_skip_scan_data_and_end_at_the_end_of_image() {
        let file = [
            0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x04, b'a', b'b', 0xFF, 0xFF, 0xDA, 0x00, 0x02, 0x12,
            0xFF, 0x00, 0xFF, 0xD3, 0x34, 0xFF, 0xD9, 0xFF, 0xE2,
        ];
        let found: Vec<_> = segments(&file).collect();
        assert_eq!(found, [(0xE1, &b"ab"[..]), (SOS, &[][..]), (EOI, &[][..])]);
        assert!(is_complete(&file));
        assert!(!is_complete(&file[..file.len() - 4]));
        assert_eq!(segments(&[0xFF, 0xD8, 0xFF, 0xE1, 0x00]).count(), 0);
    }
}
