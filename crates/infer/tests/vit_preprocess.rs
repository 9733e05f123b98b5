//! The image processor's rejections, each matched on its error variant, its
//! conversions on images whose expected pixels are known, and the listing of
//! image files. Agreement with transformers' processors is tested against
//! transformers itself (crates/python/tests_heavy/test_image_processor.py).

use std::io::Cursor;
use std::path::{Path, PathBuf};

use image::{ImageFormat, RgbImage};
use modelbin_infer::vit::{ImageProcessor, image_files};
use modelbin_infer::{Error, ImageError};

/// DINOv2's processor.
const DINOV2: &str = r#"{
  "crop_size": {"height": 224, "width": 224}, "do_center_crop": true,
  "do_convert_rgb": true, "do_normalize": true, "do_rescale": true, "do_resize": true,
  "image_mean": [0.485, 0.456, 0.406], "image_processor_type": "BitImageProcessor",
  "image_std": [0.229, 0.224, 0.225], "resample": 3,
  "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 256}
}"#;

/// No resize and no normalization: the decoded pixels, cropped to 4×6.
const RAW_4X6: &str = r#"{"do_center_crop": true, "crop_size": {"height": 4, "width": 6},
  "do_rescale": true, "do_convert_rgb": true}"#;

fn image_error(result: Result<impl std::fmt::Debug, Error>) -> ImageError {
    match result {
        Err(Error::Image(e)) => e,
        other => panic!("expected an image error, got {other:?}"),
    }
}

fn encode(image: &image::DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), format)
        .unwrap();
    bytes
}

fn photo() -> image::DynamicImage {
    image::DynamicImage::ImageRgb8(RgbImage::from_fn(64, 48, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 5) as u8, ((x + y) * 2) as u8])
    }))
}

/// A PNG chunk: length, type, data, CRC.
fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
    out
}

/// A PNG whose header declares `width`×`height` RGBA pixels and whose data
/// is one tiny IDAT: refused or not before any pixel is decoded.
fn png_header_only(width: u32, height: u32) -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(chunk(b"IHDR", &header));
    png.extend(chunk(
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    ));
    png.extend(chunk(b"IEND", b""));
    png
}

#[test]
fn dinov2_gives_three_planes_of_224_squared() {
    let processor = ImageProcessor::from_json(DINOV2).unwrap();
    assert_eq!(processor.output_size(), (224, 224));
    let pixels = processor
        .pixel_values(&encode(&photo(), ImageFormat::Png))
        .unwrap();
    assert_eq!(pixels.len(), 3 * 224 * 224);
    // The top-left pixel of the crop of a 341×256 resize of a gradient.
    let view = processor
        .model_view(&encode(&photo(), ImageFormat::Png))
        .unwrap();
    let [r, _, _] = view.get_pixel(0, 0).0;
    let expected = (f64::from(r) * (1.0 / 255.0)) as f32;
    assert_eq!(pixels[0], (expected - 0.485) / 0.229);
}

#[test]
fn grey_is_replicated_and_alpha_composited_on_white() {
    let processor = ImageProcessor::from_json(RAW_4X6).unwrap();
    let grey =
        image::DynamicImage::ImageLuma8(image::GrayImage::from_pixel(6, 4, image::Luma([77])));
    let view = processor
        .model_view(&encode(&grey, ImageFormat::Png))
        .unwrap();
    assert!(view.pixels().all(|p| p.0 == [77, 77, 77]));

    // PIL's alpha_composite over white: 0 alpha is white, 255 the colour,
    // 128 rounds (10·128 + 255·127) / 255 = 132.02 to 132.
    for (alpha, expected) in [(0, 255), (255, 10), (128, 132)] {
        let rgba = image::DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            6,
            4,
            image::Rgba([10, 10, 10, alpha]),
        ));
        let view = processor
            .model_view(&encode(&rgba, ImageFormat::Png))
            .unwrap();
        assert_eq!(view.get_pixel(0, 0).0, [expected; 3], "alpha {alpha}");
    }
}

#[test]
fn sixteen_bit_colour_keeps_the_high_byte_and_grey_clips_at_255() {
    let processor = ImageProcessor::from_json(RAW_4X6).unwrap();
    let rgb16 = image::DynamicImage::ImageRgb16(image::ImageBuffer::from_pixel(
        6,
        4,
        image::Rgb([0x12FF, 0x0080, 0xFFFF]),
    ));
    let view = processor
        .model_view(&encode(&rgb16, ImageFormat::Png))
        .unwrap();
    assert_eq!(view.get_pixel(0, 0).0, [0x12, 0x00, 0xFF]);
    for (sample, expected) in [(200u16, 200u8), (300, 255)] {
        let grey16 = image::DynamicImage::ImageLuma16(image::ImageBuffer::from_pixel(
            6,
            4,
            image::Luma([sample]),
        ));
        let view = processor
            .model_view(&encode(&grey16, ImageFormat::Png))
            .unwrap();
        assert_eq!(view.get_pixel(0, 0).0, [expected; 3]);
    }
}

#[test]
fn an_image_smaller_than_the_crop_is_zero_padded_with_floor_offsets() {
    // 2×3 into 4×6: transformers pads ceil((4-2)/2) = 1 row above, 1 below,
    // and ceil((6-3)/2) = 2 columns left, 1 right.
    let processor = ImageProcessor::from_json(RAW_4X6).unwrap();
    let small = image::DynamicImage::ImageRgb8(RgbImage::from_pixel(3, 2, image::Rgb([9, 9, 9])));
    let view = processor
        .model_view(&encode(&small, ImageFormat::Png))
        .unwrap();
    for y in 0..4 {
        for x in 0..6 {
            let inside = (1..3).contains(&y) && (2..5).contains(&x);
            let want = if inside { [9; 3] } else { [0; 3] };
            assert_eq!(view.get_pixel(x, y).0, want, "({x}, {y})");
        }
    }
}

#[test]
fn truncated_jpeg_is_a_decode_error() {
    let jpeg = encode(&photo(), ImageFormat::Jpeg);
    let processor = ImageProcessor::from_json(DINOV2).unwrap();
    assert!(processor.pixel_values(&jpeg).is_ok());
    for cut in [jpeg.len() - 2, jpeg.len() / 2, 200, 3] {
        let e = image_error(processor.pixel_values(&jpeg[..cut]));
        assert!(matches!(e, ImageError::Decode(_)), "cut at {cut}: {e:?}");
    }
}

#[test]
fn check_takes_and_refuses_what_pixel_values_does() {
    let processor = ImageProcessor::from_json(DINOV2).unwrap();
    let jpeg = encode(&photo(), ImageFormat::Jpeg);
    let png = encode(&photo(), ImageFormat::Png);
    let strip = encode(
        &image::DynamicImage::ImageRgb8(RgbImage::new(16_000, 1)),
        ImageFormat::Png,
    );
    // A JPEG whose entropy-coded data is overwritten by a run of 0xFF
    // fill bytes and a restart marker out of sequence.
    let mut damaged = jpeg.clone();
    let middle = damaged.len() / 2;
    damaged[middle..middle + 40].fill(0xFF);
    damaged[middle + 40] = 0xD5;
    let mut inputs = vec![
        jpeg.clone(),
        png,
        strip,
        damaged,
        jpeg_header_only(20_000, 10, 3),
        jpeg_header_only(10_000, 10_000, 3),
        jpeg_header_only(64, 48, 4),
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec(),
    ];
    inputs.extend([jpeg.len() - 2, jpeg.len() / 2, 200].map(|cut| jpeg[..cut].to_vec()));
    for (i, bytes) in inputs.iter().enumerate() {
        let decoded = processor.pixel_values(bytes).map(|_| ());
        let checked = processor.check(bytes);
        match (decoded, checked) {
            (Ok(()), Ok(())) => {}
            (Err(Error::Image(a)), Err(Error::Image(b))) => assert_eq!(
                std::mem::discriminant(&a),
                std::mem::discriminant(&b),
                "input {i}: {a:?} and {b:?}"
            ),
            (decoded, checked) => panic!("input {i}: {decoded:?} but {checked:?}"),
        }
    }
}

#[test]
fn corrupt_png_is_a_decode_error() {
    let mut png = encode(&photo(), ImageFormat::Png);
    let data = png.len() - 20;
    png[data] ^= 0xFF;
    let processor = ImageProcessor::from_json(DINOV2).unwrap();
    let e = image_error(processor.pixel_values(&png));
    assert!(matches!(e, ImageError::Decode(_)), "{e:?}");
}

#[test]
fn empty_and_foreign_bytes_are_refused() {
    let processor = ImageProcessor::from_json(DINOV2).unwrap();
    let e = image_error(processor.pixel_values(b""));
    assert!(matches!(e, ImageError::Decode(_)), "{e:?}");
    let e = image_error(processor.pixel_values(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"));
    assert!(matches!(e, ImageError::Unsupported(_)), "{e:?}");
}

/// A JPEG of `components` (1, 3 or 4) whose frame header declares
/// `width`×`height` pixels, with one empty scan: refused or not before any
/// pixel is decoded.
fn jpeg_header_only(width: u16, height: u16, components: u8) -> Vec<u8> {
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xC0, 0, 8 + 3 * components, 8];
    jpeg.extend_from_slice(&height.to_be_bytes());
    jpeg.extend_from_slice(&width.to_be_bytes());
    jpeg.push(components);
    for id in 1..=components {
        jpeg.extend_from_slice(&[id, 0x11, 0]);
    }
    jpeg.extend_from_slice(&[0xFF, 0xDA, 0, 6 + 2 * components, components]);
    for id in 1..=components {
        jpeg.extend_from_slice(&[id, 0]);
    }
    jpeg.extend_from_slice(&[0, 63, 0, 0xFF, 0xD9]);
    jpeg
}

#[test]
fn huge_jpeg_headers_are_refused_before_decoding() {
    let processor = ImageProcessor::from_json(DINOV2).unwrap();
    // Above the side limit.
    let e = image_error(processor.pixel_values(&jpeg_header_only(20_000, 10, 3)));
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
    // Within it, but 10000² RGB pixels (300 MB) exceed the byte budget, and
    // so do 8500² CMYK pixels, which RGB ones of that size would not.
    let e = image_error(processor.pixel_values(&jpeg_header_only(10_000, 10_000, 3)));
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
    let e = image_error(processor.pixel_values(&jpeg_header_only(8_500, 8_500, 4)));
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
    let e = image_error(processor.pixel_values(&jpeg_header_only(8_500, 8_500, 3)));
    assert!(matches!(e, ImageError::Decode(_)), "{e:?}");
}

#[test]
fn huge_headers_are_refused_before_decoding() {
    let processor = ImageProcessor::from_json(DINOV2).unwrap();
    // Above the side limit.
    let e = image_error(processor.pixel_values(&png_header_only(100_000, 10)));
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
    // Within it, but 16000² RGBA pixels (1 GB) exceed the byte budget.
    let e = image_error(processor.pixel_values(&png_header_only(16_000, 16_000)));
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
    // An extreme aspect ratio whose resize would be huge.
    let strip = image::DynamicImage::ImageRgb8(RgbImage::new(16_000, 1));
    let e = image_error(processor.pixel_values(&encode(&strip, ImageFormat::Png)));
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
}

#[test]
fn configurations_that_cannot_be_followed_are_refused() {
    let with = |key: &str, value: &str| {
        let mut config: serde_json::Value = serde_json::from_str(DINOV2).unwrap();
        config[key] = serde_json::from_str(value).unwrap();
        ImageProcessor::from_json(&config.to_string())
    };
    let e = image_error(with("resample", "7"));
    assert!(
        matches!(e, ImageError::UnsupportedResample { code: 7 }),
        "{e:?}"
    );
    let e = image_error(with("do_pad", "true"));
    assert!(
        matches!(e, ImageError::UnsupportedSetting { ref key, .. } if key == "do_pad"),
        "{e:?}"
    );
    // A false or null setting that is not followed changes nothing.
    assert!(with("do_pad", "false").is_ok());
    let e = image_error(with(
        "size",
        r#"{"shortest_edge": 256, "longest_edge": 512}"#,
    ));
    assert!(
        matches!(e, ImageError::UnsupportedSetting { ref key, .. } if key == "size"),
        "{e:?}"
    );
    let e = image_error(with("image_mean", "[0.5, 0.5]"));
    assert!(matches!(e, ImageError::BadConfig(_)), "{e:?}");
    // Without the crop the output size would change with each image.
    let e = image_error(with("do_center_crop", "false"));
    assert!(matches!(e, ImageError::BadConfig(_)), "{e:?}");
    let e = image_error(ImageProcessor::from_json("[1, 2]"));
    assert!(matches!(e, ImageError::BadConfig(_)), "{e:?}");
    // Every PIL filter is followed.
    for code in 0..=5 {
        assert!(
            with("resample", &code.to_string()).is_ok(),
            "resample {code}"
        );
    }
}

#[test]
fn class_defaults_fill_missing_keys() {
    // openai/clip-vit-base-patch32's file: an integer size (CLIP's default
    // is not square: the shortest edge), no rescale keys.
    let clip = ImageProcessor::from_json(
        r#"{"crop_size": 224, "do_center_crop": true, "do_normalize": true, "do_resize": true,
            "feature_extractor_type": "CLIPFeatureExtractor", "resample": 3, "size": 224,
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711]}"#,
    )
    .unwrap();
    assert_eq!(clip.output_size(), (224, 224));
    // google/siglip-base-patch16-224's.
    let siglip = ImageProcessor::from_json(
        r#"{"do_normalize": true, "do_rescale": true, "do_resize": true,
            "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "SiglipImageProcessor",
            "image_std": [0.5, 0.5, 0.5], "processor_class": "SiglipProcessor", "resample": 3,
            "rescale_factor": 0.00392156862745098, "size": {"height": 384, "width": 384}}"#,
    )
    .unwrap();
    assert_eq!(siglip.output_size(), (384, 384));
}

#[test]
fn a_missing_config_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let e = image_error(ImageProcessor::open(dir.path()));
    let ImageError::MissingConfig { path } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(path, &dir.path().join("preprocessor_config.json"));
    assert!(e.to_string().contains("preprocessor_config.json"));
}

fn touch(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"").unwrap();
}

#[test]
fn image_files_walks_directories_in_sorted_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for name in [
        "b/2.PNG",
        "b/1.jpeg",
        "a.jpg",
        "c/notes.txt",
        "c/d/e.JPG",
        "z.gif",
    ] {
        touch(&root.join(name));
    }
    let explicit = root.join("c/notes.txt");
    let files = image_files(&[root.to_path_buf(), explicit.clone(), root.join("a.jpg")]).unwrap();
    let expected: Vec<PathBuf> = ["a.jpg", "b/1.jpeg", "b/2.PNG", "c/d/e.JPG"]
        .iter()
        .map(|name| root.join(name))
        .chain([explicit, root.join("a.jpg")])
        .collect();
    assert_eq!(files, expected);

    let e = image_error(image_files(&[root.join("missing")]));
    assert!(
        matches!(e, ImageError::NotFound { ref path } if path == &root.join("missing")),
        "{e:?}"
    );
}

#[cfg(unix)]
#[test]
fn image_files_ends_in_a_symlink_loop() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    touch(&root.join("x/img.png"));
    std::os::unix::fs::symlink(root, root.join("x/back")).unwrap();
    std::os::unix::fs::symlink(root.join("x"), root.join("x/self")).unwrap();
    let files = image_files(&[root.to_path_buf()]).unwrap();
    assert_eq!(files, vec![root.join("x/img.png")]);
}
