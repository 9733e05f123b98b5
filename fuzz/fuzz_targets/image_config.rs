//! Fuzz a vision model's `preprocessor_config.json`: any text is a
//! processor or a typed error, never a panic; a processor the library
//! accepts turns a small PNG into finite values of the size it states,
//! whatever its constants (sizes, resampling, rescale factor, mean, std).
#![no_main]

use std::io::Cursor;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use modelbin_infer::vit::ImageProcessor;

/// A 24 × 16 colour PNG.
static IMAGE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let rgb = image::RgbImage::from_fn(24, 16, |x, y| {
        image::Rgb([(x * 10) as u8, (y * 15) as u8, ((x * y) % 251) as u8])
    });
    let mut png = Vec::new();
    rgb.write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(processor) = ImageProcessor::from_json(text) else {
        return;
    };
    let (height, width) = processor.output_size();
    if height * width > 1 << 20 {
        // Large outputs are valid but slow to fuzz; their arithmetic is
        // the same as a small one's.
        return;
    }
    if let Ok(pixels) = processor.pixel_values(&IMAGE) {
        assert_eq!(pixels.len(), 3 * height * width);
        assert!(pixels.iter().all(|v| v.is_finite()));
    }
});
