//! What the SAEV tests share: written shards, their metadata, and the Python reference.

use modelbin_format::saev::{Metadata, Writer};
use proptest::prelude::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn python(args: &[&str]) -> String {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reference/saev_reference.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

pub fn metadata(n_imgs: u64, cls: bool, max: u64) -> Metadata {
    Metadata::from_value(&json!({
        "vit_family": "clip", "vit_ckpt": "ViT-B-32/openai", "layers": [-2, 5, 11],
        "n_patches_per_img": 4, "cls_token": cls, "d_vit": 8, "seed": 42, "n_imgs": n_imgs,
        "max_patches_per_shard": max, "data": {"name": "ILSVRC/imagenet-1k", "split": "train", "type": "Imagenet"}
    }))
    .unwrap()
}

pub fn value(img: u64, layer_idx: usize, token: u64, dim: u64) -> f32 {
    (img * 1000 + layer_idx as u64 * 100 + token) as f32 + dim as f32 / 1024.0
}

pub fn write_ours(root: &Path, m: &Metadata) -> PathBuf {
    let mut writer = Writer::create(root, m.clone()).unwrap();
    for img in 0..m.n_imgs {
        let mut image = Vec::new();
        for l in 0..m.layers.len() {
            for t in 0..m.tokens_per_img() {
                for d in 0..m.d_vit {
                    image.push(value(img, l, t, d));
                }
            }
        }
        writer.push(&image).unwrap();
    }
    writer.finish().unwrap()
}

pub fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN/inf", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
        any::<String>().prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}
