//! Constants and saved values that would make a NaN or an infinity are
//! refused where they are read, each matched on its error variant.

use modelbin_infer::vit::ImageProcessor;
use modelbin_infer::{Error, ImageError};

/// A processor without resize or crop to a fixed 4×4, with `extra` keys.
fn processor(extra: &str) -> Result<ImageProcessor, Error> {
    ImageProcessor::from_json(&format!(
        r#"{{"do_center_crop": true, "crop_size": {{"height": 4, "width": 4}},
            "do_convert_rgb": true, "do_rescale": true, "do_normalize": true,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], {extra}}}"#
    ))
}

/// The key an [`ImageError::UnusableConstant`] names.
fn unusable_key(result: Result<ImageProcessor, Error>) -> String {
    match result {
        Err(Error::Image(ImageError::UnusableConstant { key, .. })) => key,
        other => panic!("expected an unusable constant, got {other:?}"),
    }
}

#[test]
fn preprocessing_constants_that_leave_f32_are_refused_naming_the_key() {
    for (extra, key) in [
        // Finite as f64, subnormal (or 0) as the f32 it is divided by.
        (r#""image_std": [1e-45, 0.5, 0.5]"#, "image_std[0]"),
        (r#""image_std": [0.5, 1e-39, 0.5]"#, "image_std[1]"),
        // 255 × 1e300 is beyond f32.
        (r#""rescale_factor": 1e300"#, "rescale_factor"),
        // Infinite once converted to f32.
        (r#""image_mean": [0.5, 0.5, 3e39]"#, "image_mean[2]"),
        (r#""image_std": [0.5, 0.5, 1e39]"#, "image_std[2]"),
        // Each finite and normal, but (0 − 3e38) / 1.2e-38 overflows.
        (
            r#""image_mean": 3e38, "image_std": 1.2e-38, "do_rescale": false"#,
            "image_mean[0] and image_std[0]",
        ),
    ] {
        assert_eq!(unusable_key(processor(extra)), key, "{extra}");
    }
    // The message names the file and the key.
    let err = processor(r#""rescale_factor": 1e300"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("preprocessor_config.json: rescale_factor = 1e300"),
        "{err}"
    );
}

#[test]
fn extreme_but_usable_constants_give_finite_pixels() {
    // A negative rescale and a large mean whose range still fits in f32.
    let processor = processor(
        r#""rescale_factor": -1e30, "image_mean": [1e30, 0, 0], "image_std": [1e-5, 1, 1]"#,
    )
    .unwrap();
    let view = image::RgbImage::from_fn(4, 4, |x, y| {
        image::Rgb([(x * 85) as u8, (y * 85) as u8, 255])
    });
    let pixels = processor.to_pixel_values(&view, true);
    assert!(pixels.iter().all(|v| v.is_finite()), "{pixels:?}");
}
