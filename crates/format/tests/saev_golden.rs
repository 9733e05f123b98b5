//! SAEV: hashes equal Python's, byte-level cross-checks with an independent Python writer/reader (tests/reference/saev_reference.py), views, and the loaders.

mod common;

use common::saev::*;
use modelbin_format::Error;
use modelbin_format::SaevError;
use modelbin_format::saev::{self, LayerChoice, Metadata, Patches};
use proptest::prelude::*;
use std::path::PathBuf;

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
