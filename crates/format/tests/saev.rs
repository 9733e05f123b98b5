//! SAEV: hashes equal Python's, byte-level cross-checks with an independent
//! Python writer/reader (tests/reference/saev_reference.py), views, and every
//! rejection path.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use modelbin_format::Error;
use modelbin_format::SaevError;
use modelbin_format::saev::{self, LayerChoice, Metadata, Patches, Writer};
use proptest::prelude::*;
use serde_json::json;

fn python(args: &[&str]) -> String {
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

fn metadata(n_imgs: u64, cls: bool, max: u64) -> Metadata {
    Metadata::from_value(&json!({
        "vit_family": "clip", "vit_ckpt": "ViT-B-32/openai", "layers": [-2, 5, 11],
        "n_patches_per_img": 4, "cls_token": cls, "d_vit": 8, "seed": 42, "n_imgs": n_imgs,
        "max_patches_per_shard": max, "data": {"name": "ILSVRC/imagenet-1k", "split": "train", "type": "Imagenet"}
    }))
    .unwrap()
}

fn value(img: u64, layer_idx: usize, token: u64, dim: u64) -> f32 {
    (img * 1000 + layer_idx as u64 * 100 + token) as f32 + dim as f32 / 1024.0
}

fn write_ours(root: &Path, m: &Metadata) -> PathBuf {
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

#[test]
fn python_reads_what_we_write_and_we_read_what_python_writes() {
    for (n_imgs, cls, max) in [(7, true, 45), (6, false, 24), (1, true, 1000)] {
        let m = metadata(n_imgs, cls, max);
        let ours_root = tempfile::tempdir().unwrap();
        let ours = write_ours(ours_root.path(), &m);
        assert_eq!(ours.file_name().unwrap().to_str().unwrap(), m.hash());

        let py_root = tempfile::tempdir().unwrap();
        let meta_file = py_root.path().join("in.json");
        std::fs::write(&meta_file, serde_json::to_string(&m.to_value()).unwrap()).unwrap();
        assert_eq!(python(&["hash", meta_file.to_str().unwrap()]), m.hash());
        let theirs = PathBuf::from(python(&[
            "write",
            py_root.path().to_str().unwrap(),
            meta_file.to_str().unwrap(),
        ]));

        // Byte for byte the same dataset: metadata.json and shards.
        for entry in std::fs::read_dir(&theirs).unwrap() {
            let name = entry.unwrap().file_name();
            assert_eq!(
                std::fs::read(theirs.join(&name)).unwrap(),
                std::fs::read(ours.join(&name)).unwrap(),
                "{name:?}"
            );
        }
        let dataset = saev::open(&theirs).unwrap();
        for img in [0, n_imgs - 1] {
            for (l, &layer) in m.layers.iter().enumerate() {
                let token = m.tokens_per_img() - 1;
                let ours_vec = dataset.vector(img, layer, token).unwrap();
                let expected: Vec<f32> = (0..m.d_vit).map(|d| value(img, l, token, d)).collect();
                assert_eq!(ours_vec, expected.as_slice());
                let theirs_vec: Vec<f32> = serde_json::from_str(&python(&[
                    "read",
                    ours.to_str().unwrap(),
                    &img.to_string(),
                    &layer.to_string(),
                    &token.to_string(),
                ]))
                .unwrap();
                assert_eq!(theirs_vec, expected);
            }
        }
    }
}

#[test]
fn shard_arithmetic_and_views() {
    let m = metadata(7, true, 45); // L 3, T 5: S = 45 // 15 = 3, shards = ceil(7 / 3) = 3
    assert_eq!((m.imgs_per_shard(), m.n_shards()), (3, 3));
    let root = tempfile::tempdir().unwrap();
    let dataset = saev::open(write_ours(root.path(), &m)).unwrap();
    assert_eq!(dataset.shards().len(), 3);
    assert!(
        dataset
            .shards()
            .iter()
            .all(|s| s.len() as u64 == m.shard_bytes()),
        "every shard full size"
    );
    let cases = [
        (Patches::Cls, LayerChoice::One(5), 7),
        (Patches::Cls, LayerChoice::All, 21),
        (Patches::Image, LayerChoice::One(-2), 28),
        (Patches::Image, LayerChoice::All, 84),
        (Patches::All, LayerChoice::One(11), 35),
        (Patches::All, LayerChoice::All, 105),
    ];
    for (patches, layer, len) in cases {
        let view = dataset.view(patches, layer).unwrap();
        assert_eq!(view.len(), len, "{patches:?} {layer:?}");
        let mut seen = std::collections::HashSet::new();
        for i in 0..len {
            let e = view.get(i).unwrap();
            let l = m.layers.iter().position(|&x| x == e.layer).unwrap();
            assert_eq!(e.vector[0], value(e.img, l, e.token, 0));
            assert_eq!(dataset.vector(e.img, e.layer, e.token).unwrap(), e.vector);
            match patches {
                Patches::Cls => assert_eq!(e.token, 0),
                Patches::Image => assert!(e.token >= 1),
                Patches::All => {}
            }
            assert!(seen.insert((e.img, e.layer, e.token)), "each example once");
        }
        assert!(matches!(
            view.get(len),
            Err(Error::Saev(SaevError::InvalidCoordinate(_)))
        ));
    }
    assert!(matches!(
        dataset.view(Patches::All, LayerChoice::One(3)),
        Err(Error::Saev(SaevError::InvalidCoordinate(_)))
    ));
    assert!(matches!(
        dataset.vector(7, 5, 0),
        Err(Error::Saev(SaevError::InvalidCoordinate(_)))
    ));
    assert!(matches!(
        dataset.vector(0, 5, 5),
        Err(Error::Saev(SaevError::InvalidCoordinate(_)))
    ));

    let no_cls = metadata(2, false, 100);
    let root = tempfile::tempdir().unwrap();
    let dataset = saev::open(write_ours(root.path(), &no_cls)).unwrap();
    assert!(
        matches!(
            dataset.view(Patches::Cls, LayerChoice::All),
            Err(Error::InvalidArgument(_))
        ),
        "CLS view without a CLS token"
    );
    assert_eq!(
        dataset
            .view(Patches::Image, LayerChoice::All)
            .unwrap()
            .get(0)
            .unwrap()
            .token,
        0
    );
}

#[test]
fn rejections() {
    let m = metadata(7, true, 45);
    let root = tempfile::tempdir().unwrap();
    let dir = write_ours(root.path(), &m);
    let shard = |i: u64| dir.join(saev::shard_name(i));

    // The same dataset again is reported, a different one at the path refused.
    assert!(
        matches!(Writer::create(root.path(), m.clone()), Err(Error::Saev(SaevError::DatasetExists { reason, .. })) if reason.contains("already"))
    );
    assert!(
        matches!(Writer::start(root.path(), m.clone()), Ok(saev::Start::Existing(path)) if path == dir)
    );
    let squatted = tempfile::tempdir().unwrap();
    std::fs::create_dir(squatted.path().join(m.hash())).unwrap();
    assert!(
        matches!(Writer::start(squatted.path(), m.clone()), Err(Error::Saev(SaevError::DatasetExists { reason, .. })) if reason.contains("not this dataset"))
    );

    // Truncated shard.
    let full = std::fs::read(shard(1)).unwrap();
    std::fs::write(shard(1), &full[..full.len() - 4]).unwrap();
    assert!(matches!(
        saev::open(&dir),
        Err(Error::Saev(SaevError::ShardSize { .. }))
    ));
    std::fs::write(shard(1), &full).unwrap();
    // The last shard may be exactly as long as its images need.
    let last = std::fs::read(shard(2)).unwrap();
    std::fs::write(shard(2), &last[..m.img_bytes() as usize]).unwrap();
    saev::open(&dir).unwrap();
    // Missing shard.
    std::fs::rename(shard(2), dir.join("moved")).unwrap();
    assert!(matches!(
        saev::open(&dir),
        Err(Error::Saev(SaevError::MissingShard { .. }))
    ));
    std::fs::rename(dir.join("moved"), shard(2)).unwrap();
    // An unexpected shard.
    std::fs::write(shard(3), vec![0; m.shard_bytes() as usize]).unwrap();
    assert!(matches!(
        saev::open(&dir),
        Err(Error::Saev(SaevError::UnexpectedShard { .. }))
    ));
    std::fs::remove_file(shard(3)).unwrap();

    // metadata.json: re-indented and reordered still verifies; edits do not.
    let meta = dir.join("metadata.json");
    let original = std::fs::read_to_string(&meta).unwrap();
    let value: serde_json::Value = serde_json::from_str(&original).unwrap();
    let mut sorted: Vec<(&String, &serde_json::Value)> =
        value.as_object().unwrap().iter().collect();
    sorted.reverse();
    let reordered: serde_json::Map<String, serde_json::Value> = sorted
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    std::fs::write(&meta, serde_json::to_string(&reordered).unwrap()).unwrap();
    saev::open(&dir).unwrap();
    for (edit, check) in [
        (original.replace("\"seed\": 42", "\"seed\": 43"), "hash"),
        (
            original.replace("\"seed\": 42", "\"seed\": 42, \"extra\": 1"),
            "unknown key",
        ),
        (
            original.replace("\"seed\": 42", "\"seed\": \"42\""),
            "`seed` must be an integer",
        ),
        (original.replace("\"n_imgs\": 7", "\"n_imgs\": 12"), "hash"),
        (
            original.replace("\"cls_token\": true", "\"cls_token\": 1"),
            "boolean",
        ),
        (
            original.replace(
                "\"max_patches_per_shard\": 45",
                "\"max_patches_per_shard\": 14",
            ),
            "below one image",
        ),
    ] {
        std::fs::write(&meta, edit).unwrap();
        let err = saev::open(&dir).unwrap_err().to_string();
        assert!(err.contains(check), "{check}: {err}");
    }
    std::fs::write(&meta, original).unwrap();
    saev::open(&dir).unwrap();

    // Writer input checks.
    let other = tempfile::tempdir().unwrap();
    let mut writer = Writer::create(other.path(), metadata(1, true, 45)).unwrap();
    assert!(matches!(
        writer.push(&[0.0; 3]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        Writer::create(other.path(), metadata(1, true, 45)).is_ok(),
        "a stale .partial is replaced"
    );
    let incomplete = Writer::create(other.path(), metadata(2, true, 45)).unwrap();
    assert!(matches!(
        incomplete.finish(),
        Err(Error::InvalidArgument(_))
    ));
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The hash equals python3's json.dumps(sort_keys=True) + hashlib on
    /// random `data` objects (floats, escapes, nesting).
    #[test]
    fn hash_equals_python(data in prop::collection::btree_map("\\PC{0,8}", json_value(), 0..5), seed in any::<i64>()) {
        let mut value = metadata(3, true, 100).to_value();
        value["data"] = serde_json::Value::Object(data.into_iter().collect());
        value["seed"] = seed.into();
        let m = Metadata::from_value(&value).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.json");
        std::fs::write(&file, serde_json::to_string(&value).unwrap()).unwrap();
        prop_assert_eq!(python(&["hash", file.to_str().unwrap()]), m.hash());
    }
}

mod loaders {
    use std::sync::Arc;

    use super::*;
    use modelbin_format::saev::{Loader, LoaderOptions};

    fn dataset() -> (tempfile::TempDir, Arc<saev::Dataset>, Metadata) {
        let m = metadata(23, true, 60); // S = 4, 6 shards
        let root = tempfile::tempdir().unwrap();
        let dir = write_ours(root.path(), &m);
        (root, Arc::new(saev::open(dir).unwrap()), m)
    }

    use super::common::loader_keys as keys;

    #[test]
    fn every_example_exactly_once_per_epoch() {
        let (_root, ds, _m) = dataset();
        for (patches, layer) in [
            (Patches::All, LayerChoice::All),
            (Patches::Image, LayerChoice::One(5)),
            (Patches::Cls, LayerChoice::All),
        ] {
            let view = ds.view(patches, layer).unwrap();
            let mut expected: Vec<u32> = (0..view.len())
                .map(|i| view.get(i).unwrap().vector[0] as u32)
                .collect();
            let ordered = keys(
                Loader::ordered(
                    ds.clone(),
                    patches,
                    layer,
                    LoaderOptions {
                        batch_size: 7,
                        ..Default::default()
                    },
                )
                .unwrap(),
            );
            assert_eq!(ordered, expected, "ordered loader follows the view");
            let options = LoaderOptions {
                batch_size: 10,
                threads: 3,
                buffer_bytes: 8 * 4 * 50,
                seed: 1,
                epoch: 0,
            };
            let mut shuffled = keys(Loader::shuffled(ds.clone(), patches, layer, options).unwrap());
            assert_ne!(shuffled, expected, "shuffled");
            shuffled.sort_unstable();
            expected.sort_unstable();
            assert_eq!(shuffled, expected, "each example once");
        }
    }

    #[test]
    fn deterministic_for_a_seed_whatever_the_threads() {
        let (_root, ds, _m) = dataset();
        let run = |threads, seed, epoch| {
            let options = LoaderOptions {
                batch_size: 16,
                threads,
                buffer_bytes: 4096,
                seed,
                epoch,
            };
            keys(Loader::shuffled(ds.clone(), Patches::All, LayerChoice::All, options).unwrap())
        };
        let a = run(1, 7, 0);
        assert_eq!(a, run(4, 7, 0));
        assert_eq!(a, run(2, 7, 0));
        assert_ne!(a, run(2, 7, 1), "another epoch, another order");
        assert_ne!(a, run(2, 8, 0), "another seed, another order");
    }

    #[test]
    fn dropping_a_loader_early_stops_its_threads() {
        let (_root, ds, _m) = dataset();
        let mut loader = Loader::shuffled(
            ds.clone(),
            Patches::All,
            LayerChoice::All,
            LoaderOptions {
                batch_size: 1,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(loader.next().is_some());
        drop(loader);
        assert!(matches!(
            Loader::ordered(
                ds,
                Patches::All,
                LayerChoice::All,
                LoaderOptions {
                    batch_size: 0,
                    ..Default::default()
                }
            ),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn kept_token_ids_are_checked_against_the_metadata_and_vocabulary() {
    let m = metadata(3, true, 45);
    let root = tempfile::tempdir().unwrap();
    let mut writer = Writer::create(root.path(), m.clone()).unwrap();
    let image = vec![0.5f32; (m.vectors_per_img() * m.d_vit) as usize];
    for _ in 0..m.n_imgs {
        writer.push(&image).unwrap();
    }
    // One id per patch (CLS excluded) of every image.
    assert!(matches!(
        writer.write_tokens(&[1, 2, 3], None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        writer.write_tokens(&[0; 12], Some(&["a", "b\nc"])),
        Err(Error::InvalidArgument(reason)) if reason.contains("line break")
    ));
    let ids: Vec<u32> = (0..12).map(|i| i % 5).collect();
    writer
        .write_tokens(&ids, Some(&["the", "cat", "##s", "sat", "."]))
        .unwrap();
    let dir = writer.finish().unwrap();
    let dataset = saev::open(&dir).unwrap();
    dataset.verify().unwrap();
    let kept = dataset.token_ids().unwrap();
    assert_eq!(kept.all().collect::<Vec<_>>(), ids);
    assert_eq!(kept.window(2), Some(vec![3, 4, 0, 1]));
    assert_eq!(kept.window(3), None);
    assert_eq!(kept.span(10, 5), vec![0, 1]);
    assert_eq!(dataset.vocabulary().unwrap().unwrap()[2], "##s");

    // An id past the vocabulary is found by verify, with its coordinates.
    let tokens = dir.join(saev::TOKENS_FILE);
    let mut bytes = std::fs::read(&tokens).unwrap();
    bytes[9 * 4] = 7;
    std::fs::write(&tokens, &bytes).unwrap();
    assert!(matches!(
        saev::open(&dir).unwrap().verify(),
        Err(Error::Saev(SaevError::TokenOutOfRange {
            img: 2,
            token: 1,
            id: 7,
            vocab_size: 5,
            ..
        }))
    ));
    // A file of the wrong size is refused on opening.
    std::fs::write(&tokens, &bytes[..44]).unwrap();
    assert!(matches!(
        saev::open(&dir),
        Err(Error::Saev(SaevError::TokensSize {
            expected: 48,
            found: 44,
            ..
        }))
    ));
}
