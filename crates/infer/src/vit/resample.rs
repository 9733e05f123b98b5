//! Resizing as PIL's `Image.resize` does it, to the rounding: the
//! convolution filters (BOX, BILINEAR, HAMMING, BICUBIC, LANCZOS) with their
//! support widened by the downscale factor, weights in 22-bit fixed point,
//! two passes (horizontal and vertical, in Pillow 13's order) through an
//! 8-bit intermediate image; and
//! NEAREST as PIL's scaling transform. transformers' PIL image processors
//! resize with it, and the image crate's resampler (f32 throughout, vertical
//! pass first) differs from it by up to 4/255 at sharp edges.

use std::ops::Range;

use image::RgbImage;

/// A PIL resampling filter, by its PIL code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// `Resampling.NEAREST` (0).
    Nearest,
    /// `Resampling.LANCZOS` (1): Lanczos, 3 lobes.
    Lanczos,
    /// `Resampling.BILINEAR` (2): triangle.
    Bilinear,
    /// `Resampling.BICUBIC` (3): Keys' cubic, a = -0.5.
    Bicubic,
    /// `Resampling.BOX` (4).
    Box,
    /// `Resampling.HAMMING` (5).
    Hamming,
}

impl Filter {
    /// The filter of PIL's code, if it is one.
    pub fn from_pil(code: i64) -> Option<Filter> {
        Some(match code {
            0 => Filter::Nearest,
            1 => Filter::Lanczos,
            2 => Filter::Bilinear,
            3 => Filter::Bicubic,
            4 => Filter::Box,
            5 => Filter::Hamming,
            _ => return None,
        })
    }

    fn support(self) -> f64 {
        match self {
            Filter::Nearest | Filter::Box => 0.5,
            Filter::Bilinear | Filter::Hamming => 1.0,
            Filter::Bicubic => 2.0,
            Filter::Lanczos => 3.0,
        }
    }

    fn weight(self, x: f64) -> f64 {
        use std::f64::consts::PI;
        let sinc = |x: f64| {
            if x == 0.0 {
                1.0
            } else {
                (x * PI).sin() / (x * PI)
            }
        };
        match self {
            Filter::Nearest | Filter::Box => f64::from(u8::from(x > -0.5 && x <= 0.5)),
            Filter::Bilinear => (1.0 - x.abs()).max(0.0),
            Filter::Hamming => {
                let x = x.abs();
                if x == 0.0 {
                    1.0
                } else if x >= 1.0 {
                    0.0
                } else {
                    (x * PI).sin() / (x * PI) * (0.54 + 0.46 * (x * PI).cos())
                }
            }
            Filter::Bicubic => {
                const A: f64 = -0.5;
                let x = x.abs();
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
            Filter::Lanczos => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
        }
    }
}

/// Fractional bits of the fixed-point weights (PIL's `PRECISION_BITS`).
const PRECISION_BITS: u32 = 32 - 8 - 2;

/// For each output pixel along one axis, the first input pixel it reads and
/// its fixed-point weights (PIL's `precompute_coeffs` and
/// `normalize_coeffs_8bpc`), `stride` weights per output pixel, unused
/// ones zero.
struct Taps {
    first: Vec<usize>,
    count: Vec<usize>,
    weights: Vec<i32>,
    stride: usize,
}

impl Taps {
    fn new(in_size: usize, out_size: usize, filter: Filter) -> Taps {
        let scale = in_size as f64 / out_size as f64;
        let filter_scale = scale.max(1.0);
        let support = filter.support() * filter_scale;
        let stride = support.ceil() as usize * 2 + 1;
        let mut taps = Taps {
            first: Vec::with_capacity(out_size),
            count: Vec::with_capacity(out_size),
            weights: vec![0; out_size * stride],
            stride,
        };
        // A product with the reciprocal, not a division: PIL's rounding.
        let inverse_scale = 1.0 / filter_scale;
        for out in 0..out_size {
            let center = (out as f64 + 0.5) * scale;
            // C's (int) cast truncates toward zero, as `as` does.
            let min = ((center - support + 0.5) as i64).max(0) as usize;
            let max = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let count = max.saturating_sub(min).min(stride);
            let raw: Vec<f64> = (min..min + count)
                .map(|x| filter.weight((x as f64 - center + 0.5) * inverse_scale))
                .collect();
            let total: f64 = raw.iter().sum();
            for (k, &w) in raw.iter().enumerate() {
                let w = if total == 0.0 { w } else { w / total };
                let scaled = w * f64::from(1u32 << PRECISION_BITS);
                taps.weights[out * stride + k] = if w < 0.0 {
                    (scaled - 0.5) as i32
                } else {
                    (scaled + 0.5) as i32
                };
            }
            taps.first.push(min);
            taps.count.push(count);
        }
        taps
    }

    /// Output pixel `out`'s first input pixel and weights.
    fn of(&self, out: usize) -> (usize, &[i32]) {
        let start = out * self.stride;
        (
            self.first[out],
            &self.weights[start..start + self.count[out]],
        )
    }
}

/// The 8-bit value of a fixed-point sum (PIL's `clip8`).
fn clip(sum: i32) -> u8 {
    (sum >> PRECISION_BITS).clamp(0, 255) as u8
}

/// The rounding term every sum starts from.
const HALF: i32 = 1 << (PRECISION_BITS - 1);

/// The columns `columns` and rows `rows` of `image` resized to
/// `width`×`height` with `filter`: equal to that part of PIL's
/// `Image.resize((width, height), filter)` on the RGB image, without
/// computing the rest (a center crop keeps only part). The two passes run
/// in Pillow 13's order: the vertical one first when the height loses more
/// than twice as many pixels as the width, else the horizontal one.
/// (Pillow 12 and earlier always ran the horizontal pass first; the order
/// changes the rounding of the intermediate image.)
///
/// # Panics
///
/// When `columns` or `rows` reach beyond `width` or `height`.
pub fn resize_part(
    image: &RgbImage,
    width: u32,
    height: u32,
    filter: Filter,
    columns: Range<u32>,
    rows: Range<u32>,
) -> RgbImage {
    assert!(columns.end <= width && rows.end <= height);
    if filter == Filter::Nearest {
        return nearest(image, width, height, columns, rows);
    }
    let shrunk = |from: u32, to: u32| i64::from(from) - i64::from(to);
    let vertical_first = shrunk(image.height(), height) > 0
        && shrunk(image.height(), height) > 2 * shrunk(image.width(), width);
    let horizontal = |image: &RgbImage, columns: Range<u32>| {
        if image.width() == width {
            crop(image, columns, 0..image.height())
        } else {
            let taps = Taps::new(image.width() as usize, width as usize, filter);
            horizontal_pass(image, &taps, columns)
        }
    };
    let vertical = |image: &RgbImage, rows: Range<u32>| {
        if image.height() == height {
            crop(image, 0..image.width(), rows)
        } else {
            let taps = Taps::new(image.height() as usize, height as usize, filter);
            vertical_pass(image, &taps, rows)
        }
    };
    if vertical_first {
        horizontal(&vertical(image, rows), columns)
    } else {
        vertical(&horizontal(image, columns), rows)
    }
}

/// `image` resized to `width`×`height` with `filter`, equal to PIL's
/// `Image.resize((width, height), filter)` on the RGB image
/// ([`resize_part`] of all of it).
pub fn resize(image: &RgbImage, width: u32, height: u32, filter: Filter) -> RgbImage {
    if image.dimensions() == (width, height) {
        return image.clone();
    }
    resize_part(image, width, height, filter, 0..width, 0..height)
}

/// The `columns` × `rows` part of `image`.
pub(super) fn crop(image: &RgbImage, columns: Range<u32>, rows: Range<u32>) -> RgbImage {
    let row_bytes = image.width() as usize * 3;
    let (start, end) = (columns.start as usize * 3, columns.end as usize * 3);
    let pixels = image
        .as_raw()
        .chunks_exact(row_bytes.max(1))
        .skip(rows.start as usize)
        .take(rows.len())
        .flat_map(|row| &row[start..end])
        .copied()
        .collect();
    RgbImage::from_raw(columns.len() as u32, rows.len() as u32, pixels)
        .expect("the part holds columns × rows pixels")
}

/// Output columns `columns` of `image` resampled along its rows.
fn horizontal_pass(image: &RgbImage, taps: &Taps, columns: Range<u32>) -> RgbImage {
    let row_bytes = image.width() as usize * 3;
    let mut pixels = Vec::with_capacity(columns.len() * image.height() as usize * 3);
    for row in image.as_raw().chunks_exact(row_bytes.max(1)) {
        for out in columns.clone() {
            let (first, weights) = taps.of(out as usize);
            let mut sums = [HALF; 3];
            for (pixel, &w) in row[first * 3..].chunks_exact(3).zip(weights) {
                for c in 0..3 {
                    sums[c] += i32::from(pixel[c]) * w;
                }
            }
            pixels.extend(sums.map(clip));
        }
    }
    RgbImage::from_raw(columns.len() as u32, image.height(), pixels)
        .expect("the pass holds columns × rows pixels")
}

/// Output rows `rows` of `image` resampled along its columns: each output
/// row a weighted sum of whole input rows, which vectorizes.
fn vertical_pass(image: &RgbImage, taps: &Taps, rows: Range<u32>) -> RgbImage {
    let row_bytes = image.width() as usize * 3;
    let source = image.as_raw();
    let mut pixels = Vec::with_capacity(rows.len() * row_bytes);
    let mut sums = vec![0i32; row_bytes];
    for out in rows.clone() {
        let (first, weights) = taps.of(out as usize);
        sums.fill(HALF);
        for (k, &w) in weights.iter().enumerate() {
            let row = &source[(first + k) * row_bytes..(first + k + 1) * row_bytes];
            for (sum, &sample) in sums.iter_mut().zip(row) {
                *sum += i32::from(sample) * w;
            }
        }
        pixels.extend(sums.iter().map(|&sum| clip(sum)));
    }
    RgbImage::from_raw(image.width(), rows.len() as u32, pixels)
        .expect("the pass holds columns × rows pixels")
}

/// PIL's NEAREST resize (its scaling transform), columns `columns` and
/// rows `rows` of it: output pixel `x` takes input pixel
/// `int(scale / 2 + x * scale)`, the position accumulated as PIL
/// accumulates it.
fn nearest(
    image: &RgbImage,
    width: u32,
    height: u32,
    columns: Range<u32>,
    rows: Range<u32>,
) -> RgbImage {
    let positions = |in_size: u32, out_size: u32| -> Vec<u32> {
        let scale = f64::from(in_size) / f64::from(out_size);
        let mut position = scale * 0.5;
        (0..out_size)
            .map(|_| {
                let index = (position as u32).min(in_size - 1);
                position += scale;
                index
            })
            .collect()
    };
    let xs = positions(image.width(), width);
    let ys = positions(image.height(), height);
    RgbImage::from_fn(columns.len() as u32, rows.len() as u32, |x, y| {
        *image.get_pixel(
            xs[(columns.start + x) as usize],
            ys[(rows.start + y) as usize],
        )
    })
}
