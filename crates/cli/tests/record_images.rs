//! `modelbin acts record --images`: a vision transformer's residual stream
//! over image files. The recorded vectors equal the library's forward pass
//! over the library's preprocessing (both checked against transformers in
//! crates/python/tests_heavy/test_record_images.py); the image list beside
//! the shards maps each image back to its file; undecodable files are
//! skipped with a warning, or refused with --strict.

mod common;

use std::fs::File;
use std::io::Cursor;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use common::bounded::{self, MIB, Run};
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
    write_weights(dir, &shapes, |t, i| {
        (((i + 31 * t) * 7919) % 23) as f32 * 0.02 - 0.2
    });
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

/// `dir/model.safetensors` holding float32 tensors of `shapes`, element
/// `i` of tensor `t` being `value(t, i)`.
fn write_weights(dir: &Path, shapes: &[(String, Vec<usize>)], value: impl Fn(usize, usize) -> f32) {
    let data: Vec<Vec<u8>> = shapes
        .iter()
        .enumerate()
        .map(|(t, (_, shape))| {
            let n: usize = shape.iter().product();
            (0..n).flat_map(|i| value(t, i).to_le_bytes()).collect()
        })
        .collect();
    let views: Vec<TensorView<'_>> = shapes
        .iter()
        .zip(&data)
        .map(|((name, shape), bytes)| TensorView::new(name, DType::F32, shape, bytes).unwrap())
        .collect();
    safetensors::write_file(dir.join("model.safetensors"), views, None, &mut |_, _| {}).unwrap();
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
    // The file skipped, with why, as Python's summary has it.
    let skipped_files = report["skipped_files"].as_array().unwrap();
    assert_eq!(skipped_files.len(), 1, "{report}");
    assert!(
        skipped_files[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("broken.png")
            && !skipped_files[0]["reason"].as_str().unwrap().is_empty(),
        "{report}"
    );

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
    assert!(
        m.vit_ckpt.starts_with("clip@sha256-tensors:"),
        "{}",
        m.vit_ckpt
    );
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
            modelbin_format::io::checksum::hex(&modelbin_format::io::checksum::sha256(&bytes))
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

/// Runs `acts record -m model --images inputs... -o root` under the
/// hostile suites' address-space limit and timeout.
fn record_bounded(model: &Path, inputs: &[&Path], root: &Path) -> Run {
    let mut args = vec!["acts", "record", "-m", s(model), "-o", s(root), "--images"];
    args.extend(inputs.iter().map(|p| s(p)));
    bounded::modelbin(&args)
}

/// A FIFO or a device node among the images, named or found in a folder,
/// or standing for `preprocessor_config.json`, is refused at once by what
/// it is: nothing waits for a writer or reads an endless device.
#[test]
fn special_files_among_images_and_configs_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (model, images) = setup(dir.path());
    let root = dir.path().join("acts");
    let fifo = images.join("x.png");
    bounded::mkfifo(&fifo);
    record_bounded(&model, &[&images], &root).assert_fails_with(256 * MIB, "x.png: is a FIFO");
    record_bounded(&model, &[&fifo], &root).assert_fails_with(256 * MIB, "x.png: is a FIFO");
    std::fs::remove_file(&fifo).unwrap();
    let Some(zero) = bounded::device(&images, "z.png", 5) else {
        return;
    };
    record_bounded(&model, &[&images], &root).assert_fails_with(256 * MIB, "z.png: is a device");
    std::fs::remove_file(&zero).unwrap();

    let config = model.join("preprocessor_config.json");
    let saved = std::fs::read(&config).unwrap();
    std::fs::remove_file(&config).unwrap();
    bounded::mkfifo(&config);
    record_bounded(&model, &[&images], &root).assert_fails_with(256 * MIB, "is a FIFO");
    std::fs::remove_file(&config).unwrap();
    bounded::device(&model, "preprocessor_config.json", 5).unwrap();
    record_bounded(&model, &[&images], &root).assert_fails_with(256 * MIB, "is a device");
    std::fs::remove_file(&config).unwrap();
    // 300 MB of config (sparse: no disk), refused by its size before a
    // byte is read.
    std::fs::write(&config, &saved).unwrap();
    File::options()
        .append(true)
        .open(&config)
        .unwrap()
        .set_len(300_000_000)
        .unwrap();
    record_bounded(&model, &[&images], &root)
        .assert_fails_with(64 * MIB, "over the limit of 1048576 bytes");
    assert!(!root.exists() || bounded::entries(&root).is_empty());
}

/// An image file over the cap (a sparse 2 GiB `big.png`) is skipped by its
/// size without being read; a file name that is not UTF-8 is recorded
/// under its own name, listed lossily with its bytes beside, and found
/// again by `acts verify`.
#[test]
fn large_image_files_are_skipped_unread_and_any_file_name_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (model, images) = setup(dir.path());
    let big = images.join("big.png");
    File::create(&big).unwrap().set_len(2 << 30).unwrap();
    let odd = images.join(std::ffi::OsStr::from_bytes(b"odd-\xff.png"));
    std::fs::copy(images.join("a.png"), &odd).unwrap();
    let root = dir.path().join("acts");
    let run = record_bounded(&model, &[&images], &root);
    run.assert_bounded(128 * MIB);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("big.png") && run.stderr.contains("over the limit of 268435456 bytes"),
        "{run:?}"
    );
    let dataset = modelbin_format::saev::datasets_in(&root);
    let dataset = modelbin_format::saev::open(&dataset[0]).unwrap();
    let listed = dataset.images().unwrap().unwrap();
    let names: Vec<&str> = listed.entries.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["a.png", "c.jpg", "grey.png", "odd-\u{fffd}.png"]);
    // The odd name's image is a.png's bytes, so its vectors are a.png's.
    assert_eq!(listed.entries[3].sha256, listed.entries[0].sha256);
    assert_eq!(
        dataset.vector(3, -1, 5).unwrap(),
        dataset.vector(0, -1, 5).unwrap()
    );
    assert_eq!(listed.entries[3].file(), odd);
    assert_eq!(listed.entries[0].path_bytes, None);
    let verified = ok(&["acts", "verify", s(dataset.dir())], "");
    assert!(verified.contains(": OK (saev, 68 vectors"), "{verified}");
}

/// A DINOv2 of `width` with one block and 4-pixel patches, made for 8×8
/// images (4 patches), whose preprocessing crops to `crop` pixels.
fn write_dinov2(dir: &Path, width: usize, crop: usize) {
    let (h, f) = (width, 4 * width);
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.cls_token".into(), vec![1, 1, h]),
        ("embeddings.position_embeddings".into(), vec![1, 5, h]),
        (
            "embeddings.patch_embeddings.projection.weight".into(),
            vec![h, 3, 4, 4],
        ),
        (
            "embeddings.patch_embeddings.projection.bias".into(),
            vec![h],
        ),
    ];
    let l = "encoder.layer.0.";
    for (part, shape) in [
        ("norm1.weight", vec![h]),
        ("norm1.bias", vec![h]),
        ("norm2.weight", vec![h]),
        ("norm2.bias", vec![h]),
        ("layer_scale1.lambda1", vec![h]),
        ("layer_scale2.lambda1", vec![h]),
        ("mlp.fc1.weight", vec![f, h]),
        ("mlp.fc1.bias", vec![f]),
        ("mlp.fc2.weight", vec![h, f]),
        ("mlp.fc2.bias", vec![h]),
    ] {
        shapes.push((format!("{l}{part}"), shape));
    }
    for part in ["query", "key", "value"] {
        shapes.push((format!("{l}attention.attention.{part}.weight"), vec![h, h]));
        shapes.push((format!("{l}attention.attention.{part}.bias"), vec![h]));
    }
    shapes.push((format!("{l}attention.output.dense.weight"), vec![h, h]));
    shapes.push((format!("{l}attention.output.dense.bias"), vec![h]));
    write_weights(dir, &shapes, |_, i| (i % 7) as f32 * 0.01);
    let config = serde_json::json!({
        "model_type": "dinov2", "hidden_size": h, "num_hidden_layers": 1,
        "num_attention_heads": 2, "patch_size": 4, "image_size": 8,
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let processor = serde_json::json!({
        "image_processor_type": "BitImageProcessor", "do_resize": true,
        "size": {"shortest_edge": crop}, "resample": 3, "do_center_crop": true,
        "crop_size": {"height": crop, "width": crop}, "do_rescale": true,
        "rescale_factor": 1.0 / 255.0, "do_normalize": true,
        "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225],
    });
    std::fs::write(dir.join("preprocessor_config.json"), processor.to_string()).unwrap();
}

/// Attention's memory is bounded: a crop of 2,048 pixels in 4-pixel
/// patches (262,145 tokens, whose scores would take 275 GB a head at
/// once) is refused before the forward pass allocates, naming the memory
/// it needs; a crop of 400 (10,001 tokens, 400 MB of scores a head at
/// once) records in blocks of queries within the limit.
#[test]
fn attention_memory_is_checked_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("dinov2");
    std::fs::create_dir(&model).unwrap();
    let image = dir.path().join("a.png");
    write_image(&image, 48, 40, image::ImageFormat::Png, false);
    let root = dir.path().join("acts");

    write_dinov2(&model, 64, 2048);
    let run = record_bounded(&model, &[&image], &root);
    run.assert_fails_with(
        512 * MIB,
        "a forward pass over 1 images of 2048×2048 pixels (262145 tokens each) needs about",
    );
    assert!(run.stderr.contains("the address-space limit"), "{run:?}");

    write_dinov2(&model, 8, 400);
    let run = record_bounded(&model, &[&image], &root);
    run.assert_bounded(256 * MIB);
    assert_eq!(run.code, Some(0), "{run:?}");
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
