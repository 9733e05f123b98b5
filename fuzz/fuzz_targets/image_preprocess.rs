//! Fuzz image decoding and preprocessing (DINOv2's processor: shortest edge
//! 256, center crop 224): any bytes are Ok or a typed error, never a panic
//! nor an allocation beyond the decoding limits; an accepted image gives
//! 3×224×224 finite values, and the check that makes no pixels (what a
//! recording's first pass runs) accepts exactly the images decoding does.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use modelbin_infer::vit::ImageProcessor;

static PROCESSOR: LazyLock<ImageProcessor> = LazyLock::new(|| {
    ImageProcessor::from_json(
        r#"{"image_processor_type": "BitImageProcessor", "size": {"shortest_edge": 256},
            "crop_size": {"height": 224, "width": 224}, "resample": 3,
            "do_center_crop": true, "do_resize": true, "do_rescale": true,
            "do_normalize": true, "do_convert_rgb": true,
            "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}"#,
    )
    .unwrap()
});

fuzz_target!(|data: &[u8]| {
    let decoded = PROCESSOR.pixel_values(data);
    if let Ok(pixels) = &decoded {
        assert_eq!(pixels.len(), 3 * 224 * 224);
        assert!(pixels.iter().all(|v| v.is_finite()));
    }
    assert_eq!(PROCESSOR.check(data).is_ok(), decoded.is_ok());
});
