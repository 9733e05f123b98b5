//! `modelbin acts union` and unions given to `sae train`, `sae eval`, `sae
//! features`, `acts verify` and `acts inspect`: training over the union of
//! a dataset's slices gives the very autoencoder trained over the dataset,
//! for a seed, and its features over the union are those over the dataset.

mod common;

use std::path::{Path, PathBuf};

use common::slices::assert_same_features;
use common::{fails, ok, s};
use modelbin_format::saev::{Metadata, Writer};

/// Images `from..to` of a 90-image recording of width 16 (layers -2, -1,
/// CLS + 4 patches), values from a sine, as one dataset under `root`.
fn slice(root: &Path, from: usize, to: usize, data: &str) -> PathBuf {
    let d = 16;
    let metadata = Metadata {
        vit_family: "test".into(),
        vit_ckpt: "sine".into(),
        layers: vec![-2, -1],
        n_patches_per_img: 4,
        cls_token: true,
        d_vit: d,
        seed: 0,
        n_imgs: (to - from) as u64,
        max_patches_per_shard: 70,
        data: data.into(),
    };
    let per_img = 2 * 5 * d as usize;
    let mut writer = Writer::create(root, metadata).unwrap();
    for img in from..to {
        let values: Vec<f32> = (0..per_img)
            .map(|i| ((img * per_img + i) as f32 * 0.37).sin() * (1.0 + (i % 7) as f32))
            .collect();
        writer.push(&values).unwrap();
    }
    writer.finish().unwrap()
}

fn train(data: &[&str], out: &Path) -> Vec<u8> {
    let mut args = vec!["sae", "train"];
    args.extend_from_slice(data);
    args.extend_from_slice(&[
        "--layer",
        "-1",
        "--d-sae",
        "32",
        "-k",
        "4",
        "--steps",
        "40",
        "--batch-size",
        "64",
        "--seed",
        "7",
        "--threads",
        "2",
        "-o",
        s(out),
    ]);
    ok(&args, "");
    std::fs::read(out.join("sae_weights.safetensors")).unwrap()
}

#[test]
fn training_over_a_union_of_slices_equals_training_over_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("acts");
    let whole = slice(&root, 0, 90, "whole");
    let slices = [
        slice(&root, 0, 31, "slice 0"),
        slice(&root, 31, 32, "slice 1"),
        slice(&root, 32, 90, "slice 2"),
    ];
    let out = ok(
        &[
            "acts",
            "union",
            s(&slices[0]),
            s(&slices[1]),
            s(&slices[2]),
            "-o",
            s(&root),
        ],
        "",
    );
    let manifest = root.join("union.json");
    assert_eq!(out.lines().last().unwrap(), s(&manifest));
    // 90 images × 4 patches = 360 examples: 40 steps of 64 are 7 epochs.
    let one = train(&[s(&whole)], &dir.path().join("one"));
    let by_manifest = train(&[s(&manifest)], &dir.path().join("manifest"));
    let by_paths = train(
        &[s(&slices[0]), s(&slices[1]), s(&slices[2])],
        &dir.path().join("paths"),
    );
    assert!(one == by_manifest, "the union's autoencoder differs");
    assert!(one == by_paths, "the listed slices' autoencoder differs");
    // Another order of the members is another union, another order.
    let reordered = train(
        &[s(&slices[2]), s(&slices[0]), s(&slices[1])],
        &dir.path().join("reordered"),
    );
    assert!(one != reordered);
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest/cfg.json")).unwrap())
            .unwrap();
    assert_eq!(cfg["metadata"]["dataset"], s(&manifest));

    // verify and inspect read the union.
    let verified = ok(&["acts", "verify", s(&manifest)], "");
    assert!(
        verified.contains("SAEV union of 3 datasets, 90 images"),
        "{verified}"
    );
    let inspected: serde_json::Value =
        serde_json::from_str(&ok(&["acts", "inspect", s(&root), "--json"], "")).unwrap();
    assert_eq!(inspected["n_imgs"], 90);
    assert_eq!(inspected["members"][1]["data"], "slice 1");
    let listed: serde_json::Value = serde_json::from_str(&ok(
        &["acts", "inspect", s(&slices[0]), s(&slices[1]), "--json"],
        "",
    ))
    .unwrap();
    assert_eq!(listed["n_imgs"], 32);

    // eval and features read the union as the dataset (this one kept no
    // token ids: inputs are shown by their coordinates).
    let sae = dir.path().join("manifest");
    let evaluated = ok(&["sae", "eval", s(&sae), s(&manifest), "--layer", "-1"], "");
    assert!(evaluated.contains(" on 360 vectors"), "{evaluated}");
    assert!(!evaluated.contains("warning"), "{evaluated}");
    let found = assert_same_features(
        &sae,
        &whole,
        &[vec![manifest], slices.to_vec()],
        &["--samples", "3"],
    );
    // The one-image member's input is among those shown.
    assert!(found.contains(r#""img":31,"#), "{found}");
}

#[test]
fn unions_that_do_not_hold_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("acts");
    let a = slice(&root, 0, 10, "a");
    let mut metadata = modelbin_format::saev::open(&a).unwrap().metadata().clone();
    metadata.d_vit = 8;
    metadata.n_imgs = 1;
    metadata.data = "narrow".into();
    let mut writer = Writer::create(&root, metadata).unwrap();
    writer.push(&vec![0.5; 2 * 5 * 8]).unwrap();
    let narrow = writer.finish().unwrap();
    let refused = fails(&["acts", "union", s(&a), s(&narrow), "-o", s(&root)], "");
    assert!(refused.contains("`d_vit` is 8"), "{refused}");
    let refused = fails(
        &[
            "sae",
            "train",
            s(&a),
            s(&narrow),
            "--layer",
            "-1",
            "-o",
            s(&dir.path().join("x")),
        ],
        "",
    );
    assert!(refused.contains("`d_vit`"), "{refused}");
    // A manifest whose image count of a member is false: verify checks
    // every field it states.
    ok(&["acts", "union", s(&a), "-o", s(&root)], "");
    let manifest = root.join("union.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let mut lying: serde_json::Value = serde_json::from_str(&text).unwrap();
    lying["members"][0]["n_imgs"] = serde_json::json!(1_000_000_000_000u64);
    std::fs::write(&manifest, lying.to_string()).unwrap();
    let refused = fails(&["acts", "verify", s(&manifest)], "");
    assert!(
        refused.contains("holds 10 images, the manifest lists 1000000000000"),
        "{refused}"
    );
    std::fs::write(&manifest, text).unwrap();
    // A member moved away: the manifest names it.
    std::fs::rename(&a, dir.path().join("moved")).unwrap();
    let refused = fails(&["acts", "verify", s(&root)], "");
    assert!(refused.contains("is missing"), "{refused}");
}
