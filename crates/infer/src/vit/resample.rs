//! Resizing as PIL's `Image.resize` does it, to the rounding: the
//! convolution filters (BOX, BILINEAR, HAMMING, BICUBIC, LANCZOS) with their
//! support widened by the downscale factor, weights in 22-bit fixed point,
//! a horizontal pass into an 8-bit image and a vertical pass from it; and
//! NEAREST as PIL's scaling transform. transformers' PIL image processors
//! resize with it, and the image crate's resampler (f32 throughout, vertical
//! pass first) differs from it by up to 4/255 at sharp edges.

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
/// `normalize_coeffs_8bpc`).
struct Taps {
    first: Vec<usize>,
    weights: Vec<Vec<i64>>,
}

impl Taps {
    fn new(in_size: usize, out_size: usize, filter: Filter) -> Taps {
        let scale = in_size as f64 / out_size as f64;
        let filter_scale = scale.max(1.0);
        let support = filter.support() * filter_scale;
        let mut first = Vec::with_capacity(out_size);
        let mut weights = Vec::with_capacity(out_size);
        for out in 0..out_size {
            let center = (out as f64 + 0.5) * scale;
            // C's (int) cast truncates toward zero, as `as` does.
            let min = ((center - support + 0.5) as i64).max(0) as usize;
            let max = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let raw: Vec<f64> = (min..max.max(min))
                // A product with the reciprocal, not a division: PIL's
                // rounding.
                .map(|x| filter.weight((x as f64 - center + 0.5) * (1.0 / filter_scale)))
                .collect();
            let total: f64 = raw.iter().sum();
            let fixed = raw
                .iter()
                .map(|&w| {
                    let w = if total == 0.0 { w } else { w / total };
                    let scaled = w * f64::from(1u32 << PRECISION_BITS);
                    if w < 0.0 {
                        (scaled - 0.5) as i64
                    } else {
                        (scaled + 0.5) as i64
                    }
                })
                .collect();
            first.push(min);
            weights.push(fixed);
        }
        Taps { first, weights }
    }

    /// The 8-bit value of a fixed-point sum (PIL's `clip8`).
    fn clip(sum: i64) -> u8 {
        (sum >> PRECISION_BITS).clamp(0, 255) as u8
    }

    /// One output sample: the taps of output `out` over the samples
    /// `sample(first + k)`.
    fn apply(&self, out: usize, sample: impl Fn(usize) -> u8) -> u8 {
        let first = self.first[out];
        let sum = self.weights[out]
            .iter()
            .enumerate()
            .fold(1i64 << (PRECISION_BITS - 1), |sum, (k, &w)| {
                sum + i64::from(sample(first + k)) * w
            });
        Taps::clip(sum)
    }
}

/// `image` resized to `width`×`height` with `filter`, equal to PIL's
/// `Image.resize((width, height), filter)` on the RGB image. The two passes
/// run in Pillow 13's order: the vertical one first when the height loses
/// more than twice as many pixels as the width, else the horizontal one.
/// (Pillow 12 and earlier always ran the horizontal pass first; the order
/// changes the rounding of the intermediate image.)
pub fn resize(image: &RgbImage, width: u32, height: u32, filter: Filter) -> RgbImage {
    if image.dimensions() == (width, height) {
        return image.clone();
    }
    if filter == Filter::Nearest {
        return nearest(image, width, height);
    }
    let shrunk = |from: u32, to: u32| i64::from(from) - i64::from(to);
    let vertical_first = shrunk(image.height(), height) > 0
        && shrunk(image.height(), height) > 2 * shrunk(image.width(), width);
    if vertical_first {
        horizontal_pass(&vertical_pass(image, height, filter), width, filter)
    } else {
        vertical_pass(&horizontal_pass(image, width, filter), height, filter)
    }
}

/// `image` resampled to `width` columns (itself when it has that many).
fn horizontal_pass(image: &RgbImage, width: u32, filter: Filter) -> RgbImage {
    if image.width() == width {
        return image.clone();
    }
    let taps = Taps::new(image.width() as usize, width as usize, filter);
    RgbImage::from_fn(width, image.height(), |x, y| {
        image::Rgb(std::array::from_fn(|c| {
            taps.apply(x as usize, |sx| image.get_pixel(sx as u32, y).0[c])
        }))
    })
}

/// `image` resampled to `height` rows (itself when it has that many).
fn vertical_pass(image: &RgbImage, height: u32, filter: Filter) -> RgbImage {
    if image.height() == height {
        return image.clone();
    }
    let taps = Taps::new(image.height() as usize, height as usize, filter);
    RgbImage::from_fn(image.width(), height, |x, y| {
        image::Rgb(std::array::from_fn(|c| {
            taps.apply(y as usize, |sy| image.get_pixel(x, sy as u32).0[c])
        }))
    })
}

/// PIL's NEAREST resize (its scaling transform): output pixel `x` takes
/// input pixel `int(scale / 2 + x * scale)`, the position accumulated as PIL
/// accumulates it.
fn nearest(image: &RgbImage, width: u32, height: u32) -> RgbImage {
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
    RgbImage::from_fn(width, height, |x, y| {
        *image.get_pixel(xs[x as usize], ys[y as usize])
    })
}
