//! Any bytes as a SAEV dataset's `images.jsonl` beside a valid
//! `vision.json`: the list is read or refused with a typed error, never a
//! panic; a list read has one entry per image, each naming a file (its
//! exact bytes where the path is not UTF-8) the list's display path agrees
//! with.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use modelbin_format::saev::{Metadata, Writer};

/// A dataset of 3 images of 2 × 2 patches (its directory), recorded as if
/// from a DINOv2 with 14-pixel patches.
static DATASET: LazyLock<(tempfile::TempDir, PathBuf)> = LazyLock::new(|| {
    let root = tempfile::tempdir().unwrap();
    let metadata = Metadata::parse(
        r#"{"vit_family": "dinov2", "vit_ckpt": "fuzz", "layers": [-1], "n_patches_per_img": 4,
            "cls_token": true, "d_vit": 2, "seed": 0, "n_imgs": 3,
            "max_patches_per_shard": 64, "data": "fuzz"}"#,
    )
    .unwrap();
    let mut writer = Writer::create(root.path(), metadata).unwrap();
    for img in 0..3 {
        writer.push(&[img as f32; 10]).unwrap();
    }
    let dir = writer.finish().unwrap();
    let vision = r#"{"family": "dinov2", "model": "m", "patch_size": 14, "patch_grid": [2, 2],
        "input_size": [28, 28], "registers": 0, "preprocessor_config": {}}"#;
    std::fs::write(dir.join("vision.json"), vision).unwrap();
    (root, dir)
});

fuzz_target!(|data: &[u8]| {
    let (_, dir) = &*DATASET;
    std::fs::write(dir.join("images.jsonl"), data).unwrap();
    let Ok(dataset) = modelbin_format::saev::open(dir) else {
        return;
    };
    if let Ok(Some(images)) = dataset.images() {
        assert_eq!(images.entries.len(), 3);
        for entry in &images.entries {
            let file = entry.file();
            assert_eq!(file.to_string_lossy(), entry.path);
            let _ = entry.name();
        }
    }
});
