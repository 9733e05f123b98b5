//! `modelbin acts record --images`: a vision transformer's residual stream
//! over image files. The recorded vectors equal the library's forward pass
//! over the library's preprocessing (both checked against transformers in
//! crates/python/tests_heavy/test_record_images.py); the image list beside
//! the shards maps each image back to its file; undecodable files are
//! skipped with a warning, or refused with --strict.

mod common;

use std::io::Cursor;
use std::path::Path;

use common::{fails, ok, run, s, usage};
use modelbin_format::{DType, TensorView, safetensors};
use modelbin_infer::vit::{ImageProcessor, VisionModel};

const WIDTH: usize = 16;
const PATCH: usize = 8;
const SIDE: usize = 32;

/// A CLIP vision tower of width 16, 2 blocks, 8×8 patches on 32×32 images
/// (16 patches and a CLS token), with varied weights, and CLIP's
/// preprocessing scaled to its input: shortest edge 36, center crop 32.
fn write_clip(dir: &Path) {
    let (h, f) = (WIDTH, 2 * WIDTH);
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.class_embedding".into(), vec![h]),
        (
            "embeddings.patch_embedding.weight".into(),
            vec![h, 3, PATCH, PATCH],
        ),
        ("embeddings.position_embedding.weight".into(), vec![17, h]),
        ("pre_layrnorm.weight".into(), vec![h]),
        ("pre_layrnorm.bias".into(), vec![h]),
    ];
    for block in 0..2 {
        let l = format!("encoder.layers.{block}.");
        for (part, rows, cols) in [
            ("self_attn.q_proj", h, h),
            ("self_attn.k_proj", h, h),
            ("self_attn.v_proj", h, h),
            ("self_attn.out_proj", h, h),
            ("mlp.fc1", f, h),
            ("mlp.fc2", h, f),
            ("layer_norm1", h, 0),
            ("layer_norm2", h, 0),
        ] {
            let weight = if cols == 0 {
                vec![rows]
            } else {
                vec![rows, cols]
            };
            shapes.push((format!("{l}{part}.weight"), weight));
            shapes.push((format!("{l}{part}.bias"), vec![rows]));
        }
    }
    let data: Vec<Vec<u8>> = shapes
        .iter()
        .enumerate()
        .map(|(t, (_, shape))| {
            let n: usize = shape.iter().product();
            (0..n)
                .flat_map(|i| ((((i + 31 * t) * 7919) % 23) as f32 * 0.02 - 0.2).to_le_bytes())
                .collect()
        })
        .collect();
    let views: Vec<TensorView<'_>> = shapes
        .iter()
        .zip(&data)
        .map(|((name, shape), bytes)| TensorView::new(name, DType::F32, shape, bytes).unwrap())
        .collect();
    safetensors::write_file(dir.join("model.safetensors"), views, None, &mut |_, _| {}).unwrap();
    let config = serde_json::json!({
        "model_type": "clip_vision_model", "hidden_size": WIDTH, "intermediate_size": 2 * WIDTH,
        "num_hidden_layers": 2, "num_attention_heads": 2, "patch_size": PATCH, "image_size": SIDE,
        "hidden_act": "quick_gelu",
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let processor = serde_json::json!({
        "image_processor_type": "CLIPImageProcessor", "do_resize": true,
        "size": {"shortest_edge": 36}, "resample": 3, "do_center_crop": true,
        "crop_size": {"height": SIDE, "width": SIDE}, "do_rescale": true,
        "rescale_factor": 1.0 / 255.0, "do_normalize": true,
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711], "do_convert_rgb": true,
    });
    std::fs::write(dir.join("preprocessor_config.json"), processor.to_string()).unwrap();
}

/// An image file of `width × height` in `format`, colour or grey.
fn write_image(path: &Path, width: u32, height: u32, format: image::ImageFormat, grey: bool) {
    let rgb = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x * 255 / width) as u8,
            (y * 255 / height) as u8,
            ((x * y) % 251) as u8,
        ])
    });
    let picture = if grey {
        image::DynamicImage::ImageRgb8(rgb).into_luma8().into()
    } else {
        image::DynamicImage::ImageRgb8(rgb)
    };
    let mut bytes = Vec::new();
    picture
        .write_to(&mut Cursor::new(&mut bytes), format)
        .unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A model, a folder of three images (one in a subfolder, one grey), a
/// file that is not an image, and a text file the folder walk ignores.
fn setup(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let model = dir.join("clip");
    std::fs::create_dir(&model).unwrap();
    write_clip(&model);
    let images = dir.join("images");
    write_image(
        &images.join("a.png"),
        48,
        40,
        image::ImageFormat::Png,
        false,
    );
    write_image(
        &images.join("b/c.jpg"),
        40,
        60,
        image::ImageFormat::Jpeg,
        false,
    );
    write_image(
        &images.join("grey.png"),
        36,
        36,
        image::ImageFormat::Png,
        true,
    );
    std::fs::write(images.join("broken.png"), b"\x89PNG\r\n\x1a\n not really").unwrap();
    std::fs::write(images.join("notes.txt"), "not an image").unwrap();
    (model, images)
}

#[test]
fn recorded_images_are_the_models_hidden_states_of_each_file() {
    let dir = tempfile::tempdir().unwrap();
    let (model, images) = setup(dir.path());
    let root = dir.path().join("acts");
    let args = [
        "acts",
        "record",
        "-m",
        s(&model),
        "--images",
        s(&images),
        "--layers",
        "0,-1",
        "-o",
        s(&root),
        "--json",
    ];
    let out = run(&args, "");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warning: skipped") && stderr.contains("broken.png"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["images"].as_u64(), report["skipped"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(report["vectors"], 3 * 2 * 17);

    let dataset = modelbin_format::saev::open(report["path"].as_str().unwrap()).unwrap();
    let m = dataset.metadata();
    assert_eq!(
        (
            m.vit_family.as_str(),
            m.cls_token,
            m.n_patches_per_img,
            m.d_vit,
            m.n_imgs
        ),
        ("clip", true, 16, WIDTH as u64, 3)
    );
    assert!(m.vit_ckpt.starts_with("clip@sha256:"), "{}", m.vit_ckpt);
    let listed = dataset.images().unwrap().expect("the image list is kept");
    let names: Vec<&str> = listed.entries.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["a.png", "c.jpg", "grey.png"]);
    assert_eq!(
        (listed.vision.patch_grid, listed.vision.input_size),
        ([4, 4], [32, 32])
    );

    let vit = VisionModel::open(&model).unwrap();
    let processor = ImageProcessor::open(&model).unwrap();
    for (img, entry) in listed.entries.iter().enumerate() {
        let bytes = std::fs::read(&entry.path).unwrap();
        assert_eq!(
            entry.sha256,
            modelbin_format::checksum::hex(&modelbin_format::checksum::sha256(&bytes))
        );
        let pixels = processor.pixel_values(&bytes).unwrap();
        let states = vit.hidden_states(&pixels, 1, SIDE, SIDE, &[0, 1]).unwrap();
        for (layer, state) in [0i64, -1].iter().zip(&states) {
            for token in 0..17 {
                let recorded = dataset.vector(img as u64, *layer, token).unwrap();
                let own = &state[token as usize * WIDTH..(token as usize + 1) * WIDTH];
                assert_eq!(recorded, own, "image {img}, layer {layer}, token {token}");
            }
        }
    }
    ok(&["acts", "verify", report["path"].as_str().unwrap()], "");
}

#[test]
fn strict_refuses_an_undecodable_image_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (model, images) = setup(dir.path());
    let root = dir.path().join("acts");
    let err = fails(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "--images",
            s(&images),
            "--strict",
            "-o",
            s(&root),
        ],
        "",
    );
    assert!(
        err.contains("broken.png") && err.contains("decode"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(&root)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn image_flags_are_checked_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let (model, images) = setup(dir.path());
    let out = s(dir.path());
    for extra in [&["--cls"][..], &["--tokens-per-text", "4"]] {
        let mut args = vec![
            "acts",
            "record",
            "-m",
            s(&model),
            "-o",
            out,
            "--images",
            s(&images),
        ];
        args.extend_from_slice(extra);
        usage(&args, "");
    }
    usage(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "-o",
            out,
            "t.txt",
            "--images",
            s(&images),
        ],
        "",
    );
    usage(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "-o",
            out,
            "--strict",
            "t.txt",
        ],
        "",
    );
    let err = fails(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "-o",
            out,
            "--images",
            s(&images.join("broken.png")),
        ],
        "",
    );
    assert!(err.contains("none of the 1 image files decodes"), "{err}");
    let err = usage(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "-o",
            out,
            "--images",
            s(&images),
            "--layers",
            "2",
        ],
        "",
    );
    assert!(err.contains("--layers 2: the model has 2 blocks"), "{err}");
}

/// Rewrites `model/model.safetensors` with `change(name, values)` applied
/// to each tensor.
fn change_weights(model: &Path, change: impl Fn(&str, &mut [f32])) {
    let path = model.join("model.safetensors");
    let file = safetensors::open(&path).unwrap();
    let owned: Vec<(String, Vec<usize>, Vec<u8>)> = modelbin_format::TensorStore::tensors(&file)
        .map(|t| {
            let mut values = t.to_f32().unwrap().into_owned();
            change(t.name(), &mut values);
            let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            (t.name().to_owned(), t.shape().to_vec(), data)
        })
        .collect();
    drop(file);
    let views = owned
        .iter()
        .map(|(name, shape, data)| TensorView::new(name, DType::F32, shape, data).unwrap());
    safetensors::write_file(&path, views, None, &mut |_, _| {}).unwrap();
}

#[test]
fn non_finite_weights_and_values_stop_the_recording_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (model, images) = setup(dir.path());
    // Its skip warning would be a second line.
    std::fs::remove_file(images.join("broken.png")).unwrap();
    let root = dir.path().join("acts");
    let record = || {
        fails(
            &[
                "acts",
                "record",
                "-m",
                s(&model),
                "--images",
                s(&images),
                "-o",
                s(&root),
            ],
            "",
        )
    };
    let left = || -> Vec<_> {
        std::fs::read_dir(&root)
            .map(|d| d.map(|e| e.unwrap().file_name()).collect())
            .unwrap_or_default()
    };
    // A NaN weight is refused when the model loads, naming the tensor.
    let tensor = "encoder.layers.1.self_attn.v_proj.weight";
    change_weights(&model, |name, values| {
        if name == tensor {
            values[3] = f32::NAN;
        }
    });
    let err = record();
    assert!(
        err.contains(&format!("tensor `{tensor}` holds NaN at element 3")),
        "{err}"
    );
    assert!(left().is_empty(), "{:?}", left());
    // Finite weights whose sum overflows: caught in the recorded vectors,
    // naming the first image file and the layer.
    change_weights(&model, |name, values| {
        if name == tensor {
            values[3] = 0.0;
        }
        if name.ends_with("mlp.fc2.bias") {
            values[0] = 3e38;
        }
    });
    let err = record();
    assert!(
        err.contains("a.png: the recorded vector of layer -1, token 0 holds"),
        "{err}"
    );
    assert!(left().is_empty(), "{:?}", left());
}
