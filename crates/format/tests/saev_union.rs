//! Unions of SAEV datasets: a dataset cut into slices and read as their
//! union gives the same examples, and the same shuffled order for a seed,
//! as the dataset; members that disagree and hostile manifests are refused
//! with their own errors.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::loader_keys as keys;

use modelbin_format::saev::{
    self, ImageEntry, LayerChoice, Loader, LoaderOptions, Metadata, Patches, TokenText, UNION_FILE,
    Union, VisionInfo, Writer, write_union,
};
use modelbin_format::{Error, SaevError};
use serde_json::json;

fn metadata(n_imgs: u64, data: &str) -> Metadata {
    metadata_of_width(n_imgs, data, 8)
}

fn metadata_of_width(n_imgs: u64, data: &str, d_vit: u64) -> Metadata {
    Metadata::from_value(&json!({
        "vit_family": "clip", "vit_ckpt": "ViT-B-32/openai", "layers": [-2, 5],
        "n_patches_per_img": 4, "cls_token": true, "d_vit": d_vit, "seed": 42, "n_imgs": n_imgs,
        "max_patches_per_shard": 30, "data": data
    }))
    .unwrap()
}

/// Image `img`'s values: every vector distinct, its first value a key.
fn image(m: &Metadata, img: u64) -> Vec<f32> {
    let mut values = Vec::new();
    for l in 0..m.n_layers() {
        for t in 0..m.tokens_per_img() {
            for d in 0..m.d_vit {
                values.push((img * 1000 + l * 100 + t) as f32 + d as f32 / 1024.0);
            }
        }
    }
    values
}

/// Writes images `from..to` (numbered as in the whole) as one dataset.
fn write(root: &Path, from: u64, to: u64, data: &str) -> PathBuf {
    write_of_width(root, from, to, data, 8)
}

fn write_of_width(root: &Path, from: u64, to: u64, data: &str, d_vit: u64) -> PathBuf {
    write_with(
        root,
        from,
        to,
        metadata_of_width(to - from, data, d_vit),
        |_| {},
    )
}

/// Writes images `from..to` with metadata `m`, `side` adding side files.
fn write_with(
    root: &Path,
    from: u64,
    to: u64,
    m: Metadata,
    side: impl FnOnce(&mut Writer),
) -> PathBuf {
    let mut writer = Writer::create(root, m.clone()).unwrap();
    for img in from..to {
        writer.push(&image(&m, img)).unwrap();
    }
    side(&mut writer);
    writer.finish().unwrap()
}

/// Images `from..to` with the side files of a recording: token ids (all
/// distinct, window after window), a vocabulary, and the image list, whose
/// entries name image files `{img}.png` under `root` (never read here).
/// `vision` changes the `vision.json` written.
fn write_recorded(
    root: &Path,
    from: u64,
    to: u64,
    data: &str,
    vision: impl FnOnce(&mut VisionInfo),
) -> PathBuf {
    let m = metadata(to - from, data);
    write_with(root, from, to, m, |writer| {
        let ids: Vec<u32> = (from as u32 * 4..to as u32 * 4).collect();
        let vocabulary: Vec<String> = (0..23 * 4).map(|id| format!("t{id}")).collect();
        let vocabulary: Vec<&str> = vocabulary.iter().map(String::as_str).collect();
        writer.write_tokens(&ids, Some(&vocabulary)).unwrap();
        let entries: Vec<ImageEntry> = (from..to)
            .map(|img| ImageEntry::of(&root.join(format!("{img}.png")), &img.to_le_bytes()))
            .collect();
        let mut info = VisionInfo {
            family: "clip".into(),
            model: format!("/models/{data}"),
            patch_size: 16,
            patch_grid: [2, 2],
            input_size: [32, 32],
            registers: 0,
            preprocessor_config: json!({"do_resize": true}).as_object().unwrap().clone(),
        };
        vision(&mut info);
        writer.write_images(&entries, &info).unwrap();
    })
}

/// The whole (23 images) and its three slices, all under one root.
fn whole_and_slices(root: &Path) -> (PathBuf, Vec<PathBuf>) {
    let whole = write(root, 0, 23, "whole");
    let slices = vec![
        write(root, 0, 5, "slice 0 of 3"),
        write(root, 5, 17, "slice 1 of 3"),
        write(root, 17, 23, "slice 2 of 3"),
    ];
    (whole, slices)
}

#[test]
fn a_union_of_slices_reads_and_shuffles_as_the_whole() {
    let root = tempfile::tempdir().unwrap();
    let (whole, slices) = whole_and_slices(root.path());
    let whole = Arc::new(saev::open(&whole).unwrap());
    let union = Union::open(&slices).unwrap();
    assert_eq!(union.n_imgs(), 23);
    assert_eq!(union.locate(5), Some((1, 0)));
    assert_eq!(union.locate(23), None);
    for (patches, layer) in [
        (Patches::All, LayerChoice::All),
        (Patches::Image, LayerChoice::One(5)),
        (Patches::Cls, LayerChoice::All),
    ] {
        let a = whole.view(patches, layer).unwrap();
        let b = union.view(patches, layer).unwrap();
        assert_eq!(a.len(), b.len());
        for i in 0..a.len() {
            assert_eq!(a.get(i).unwrap(), b.get(i).unwrap(), "example {i}");
        }
        for (threads, batch_size, buffer_bytes) in [(1, 10, 8 * 4 * 50), (3, 7, 4096)] {
            for epoch in [0, 1] {
                let options = LoaderOptions {
                    batch_size,
                    threads,
                    buffer_bytes,
                    seed: 3,
                    epoch,
                };
                let one = keys(Loader::shuffled(whole.clone(), patches, layer, options).unwrap());
                let many = keys(Loader::shuffled(union.clone(), patches, layer, options).unwrap());
                assert_eq!(one, many, "same seed, same order");
                let mut sorted = many.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len() as u64, a.len(), "each example once");
                let ordered =
                    keys(Loader::ordered(union.clone(), patches, layer, options).unwrap());
                let expected: Vec<u32> = (0..a.len())
                    .map(|i| a.get(i).unwrap().vector[0] as u32)
                    .collect();
                assert_eq!(ordered, expected);
            }
        }
    }
}

#[test]
fn a_union_of_slices_has_the_wholes_text_and_image_list() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let whole = saev::open(write_recorded(root, 0, 23, "whole", |_| {})).unwrap();
    // Each slice names its own copy of the model: the directory may differ.
    let slices = [(0, 5), (5, 6), (6, 23)]
        .map(|(a, b)| write_recorded(root, a, b, &format!("{a}..{b}"), |_| {}));
    let union = Union::open(&slices).unwrap();
    let one = TokenText::of(&whole).unwrap().unwrap();
    let many = TokenText::of_union(&union).unwrap().unwrap();
    // Every span, those across a member's edge and past the end included.
    for start in 0..23 * 4 + 2 {
        for len in [0, 1, 3, 9, 40] {
            assert_eq!(one.ids(start, len), many.ids(start, len), "{start}+{len}");
        }
    }
    for img in 0..24 {
        assert_eq!(one.window(img), many.window(img), "window {img}");
        for token in 0..5 {
            assert_eq!(one.context(img, token), many.context(img, token));
        }
    }
    let images = union.images().unwrap().unwrap();
    assert_eq!(images.entries, whole.images().unwrap().unwrap().entries);
    assert_eq!(images.vision.model, "/models/0..5");

    // A member without text makes a union without text; one without
    // images, or recorded with another geometry, is refused naming it.
    let untouched = write_with(root, 23, 25, metadata(2, "bare"), |_| {});
    let mixed = Union::open(&[slices[0].clone(), untouched.clone()]).unwrap();
    assert!(TokenText::of_union(&mixed).unwrap().is_none());
    let other_grid = write_recorded(root, 0, 2, "other preprocessing", |v| {
        v.preprocessor_config
            .insert("do_resize".into(), json!(false));
    });
    for (members, field, member) in [
        ([&slices[0], &untouched], "images.jsonl", &untouched),
        ([&untouched, &slices[0]], "images.jsonl", &slices[0]),
        (
            [&slices[0], &other_grid],
            "vision.preprocessor_config",
            &other_grid,
        ),
    ] {
        match Union::open(&members).unwrap().images() {
            Err(Error::Saev(SaevError::UnionMismatch {
                member: named,
                field: found,
                ..
            })) => assert_eq!((found, &named), (field, member)),
            other => panic!("{field}: {other:?}"),
        }
    }
}

#[test]
fn chunks_that_span_slices_shuffle_as_the_whole() {
    // 40 KB per image: the loader's chunks (4 MB) hold about a hundred
    // images, so slices of 70, 110 and 70 images cut across them.
    let root = tempfile::tempdir().unwrap();
    let whole = Arc::new(saev::open(write_of_width(root.path(), 0, 250, "whole", 1024)).unwrap());
    let slices = [(0, 70), (70, 180), (180, 250)]
        .map(|(a, b)| write_of_width(root.path(), a, b, &format!("{a}..{b}"), 1024));
    let union = Union::open(&slices).unwrap();
    let options = LoaderOptions {
        batch_size: 64,
        threads: 2,
        buffer_bytes: 1 << 20,
        seed: 9,
        epoch: 2,
    };
    let (patches, layer) = (Patches::Image, LayerChoice::One(-2));
    let one = keys(Loader::shuffled(whole, patches, layer, options).unwrap());
    let many = keys(Loader::shuffled(union, patches, layer, options).unwrap());
    assert_eq!(one.len(), 250 * 4);
    assert_eq!(one, many);
}

#[test]
fn the_manifest_fixes_the_order_and_reads_back() {
    let root = tempfile::tempdir().unwrap();
    let (_, slices) = whole_and_slices(root.path());
    let file = write_union(root.path(), &slices).unwrap();
    assert_eq!(file, root.path().join(UNION_FILE));
    let text = std::fs::read_to_string(&file).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(manifest["saev_union"], 1);
    for (entry, slice) in manifest["members"].as_array().unwrap().iter().zip(&slices) {
        let hash = slice.file_name().unwrap().to_str().unwrap();
        assert_eq!(entry["path"], hash);
        assert_eq!(entry["hash"], hash);
    }
    // The file, or its directory, opens as the union.
    for path in [file.clone(), root.path().to_path_buf()] {
        let union = Union::open(&[&path]).unwrap();
        assert_eq!(union.n_imgs(), 23);
        assert_eq!(union.manifest(), Some(file.as_path()));
        assert_eq!(union.hash(), Union::open(&slices).unwrap().hash());
        union.verify().unwrap();
    }
    // A manifest and a dataset together: the manifest's members, then it.
    let extra = write(root.path(), 23, 25, "slice 3");
    let union = Union::open(&[file.clone(), extra]).unwrap();
    assert_eq!(union.n_imgs(), 25);
    assert_eq!(union.locate(24), Some((3, 1)));
}

#[test]
fn members_that_disagree_are_refused_naming_the_field() {
    let root = tempfile::tempdir().unwrap();
    let base = metadata(2, "base");
    type Change = Box<dyn Fn(&mut Metadata)>;
    let cases: [(&str, Change); 6] = [
        ("vit_family", Box::new(|m| m.vit_family = "dinov2".into())),
        ("vit_ckpt", Box::new(|m| m.vit_ckpt = "other".into())),
        ("layers", Box::new(|m| m.layers = vec![-2, 6])),
        ("n_patches_per_img", Box::new(|m| m.n_patches_per_img = 3)),
        ("cls_token", Box::new(|m| m.cls_token = false)),
        ("d_vit", Box::new(|m| m.d_vit = 4)),
    ];
    let first = {
        let mut writer = Writer::create(root.path(), base.clone()).unwrap();
        writer.push(&image(&base, 0)).unwrap();
        writer.push(&image(&base, 1)).unwrap();
        writer.finish().unwrap()
    };
    for (name, change) in cases {
        let mut m = base.clone();
        change(&mut m);
        m.data = json!(name);
        let mut writer = Writer::create(root.path(), m.clone()).unwrap();
        let values = vec![0.5f32; (m.vectors_per_img() * m.d_vit) as usize];
        writer.push(&values).unwrap();
        writer.push(&values).unwrap();
        let other = writer.finish().unwrap();
        match Union::open(&[first.clone(), other.clone()]) {
            Err(Error::Saev(SaevError::UnionMismatch { member, field, .. })) => {
                assert_eq!(field, name);
                assert_eq!(member, other);
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(matches!(
            write_union(root.path(), &[first.clone(), other]),
            Err(Error::Saev(SaevError::UnionMismatch { .. }))
        ));
    }
    assert!(matches!(
        Union::open::<PathBuf>(&[]),
        Err(Error::Saev(SaevError::EmptyUnion))
    ));
    // The same dataset twice is a union (its vectors twice).
    assert_eq!(Union::open(&[first.clone(), first]).unwrap().n_imgs(), 4);
}

#[test]
fn hostile_manifests_are_refused_by_kind() {
    let root = tempfile::tempdir().unwrap();
    let (_, slices) = whole_and_slices(root.path());
    let hash = |p: &PathBuf| p.file_name().unwrap().to_str().unwrap().to_owned();
    let n = |p: &PathBuf| saev::open(p).unwrap().metadata().n_imgs;
    let manifest_with = |members: serde_json::Value| {
        let file = root.path().join(UNION_FILE);
        std::fs::write(
            &file,
            serde_json::to_string(&json!({"saev_union": 1, "members": members})).unwrap(),
        )
        .unwrap();
        Union::open(&[&file])
    };
    let entry = |path: &str, hash: &str| json!({"path": path, "hash": hash, "n_imgs": 1});
    // A member missing.
    let missing = manifest_with(json!([entry("0123", "0123")]));
    assert!(
        matches!(
            missing,
            Err(Error::Saev(SaevError::UnionMemberMissing { .. }))
        ),
        "{missing:?}"
    );
    // A directory that is not a dataset.
    std::fs::create_dir(root.path().join("empty")).unwrap();
    assert!(matches!(
        manifest_with(json!([entry("empty", "x")])),
        Err(Error::Saev(SaevError::UnionMemberMissing { .. }))
    ));
    // The hash listed is not the member's.
    assert!(matches!(
        manifest_with(json!([entry(&hash(&slices[0]), &hash(&slices[1]))])),
        Err(Error::Saev(SaevError::UnionHashMismatch { .. }))
    ));
    // The image count listed is not the member's: every field the manifest
    // states is checked.
    let first = hash(&slices[0]);
    for stated in [n(&slices[0]) + 1, 1_000_000_000_000] {
        let lying = json!([{"path": first, "hash": first, "n_imgs": stated}]);
        let refused = manifest_with(lying);
        assert!(
            matches!(
                &refused,
                Err(Error::Saev(SaevError::UnionCountMismatch { stated: s, found, .. }))
                    if *s == stated && *found == n(&slices[0])
            ),
            "{refused:?}"
        );
    }
    // Paths out of the union's directory: absolute, climbing, or a link.
    let outside = tempfile::tempdir().unwrap();
    let foreign = write(outside.path(), 0, 2, "elsewhere");
    std::os::unix::fs::symlink(&foreign, root.path().join("link")).unwrap();
    for path in [
        foreign.to_str().unwrap().to_owned(),
        format!("../{}", hash(&slices[0])),
        format!("{}/../{}", hash(&slices[0]), hash(&slices[1])),
        "link".to_owned(),
        ".".to_owned(),
        String::new(),
    ] {
        let refused = manifest_with(json!([entry(&path, &hash(&foreign))]));
        assert!(
            matches!(
                refused,
                Err(Error::Saev(SaevError::UnionPathEscapes { .. }))
            ),
            "{path}: {refused:?}"
        );
    }
    // Malformed manifests: not a manifest, and not JSON.
    let file = root.path().join(UNION_FILE);
    for text in [
        json!({"saev_union": 2, "members": []}).to_string(),
        json!({"saev_union": 1}).to_string(),
        json!({"saev_union": 1, "members": [], "extra": 1}).to_string(),
        json!({"saev_union": 1, "members": [{"path": hash(&slices[0]), "hash": 3, "n_imgs": 1}]})
            .to_string(),
        json!({"saev_union": 1, "members": [{"path": hash(&slices[0]), "hash": hash(&slices[0])}]})
            .to_string(),
        json!([1, 2]).to_string(),
    ] {
        std::fs::write(&file, &text).unwrap();
        let refused = Union::open(&[&file]);
        assert!(
            matches!(refused, Err(Error::Saev(SaevError::InvalidUnion { .. }))),
            "{text}: {refused:?}"
        );
    }
    std::fs::write(&file, "{\"saev_union\": 1, \"members\": [").unwrap();
    assert!(matches!(
        Union::open(&[&file]),
        Err(Error::Layout(
            modelbin_format::LayoutError::InvalidHeader { .. }
        ))
    ));
    std::fs::write(&file, vec![b' '; (1 << 20) + 1]).unwrap();
    assert!(matches!(
        Union::open(&[&file]),
        Err(Error::FileTooLarge { .. })
    ));
    // An empty member list is an empty union.
    assert!(matches!(
        manifest_with(json!([])),
        Err(Error::Saev(SaevError::EmptyUnion))
    ));
    // Writing a manifest for members outside its directory is refused.
    assert!(matches!(
        write_union(&root.path().join("sub"), &slices),
        Err(Error::Saev(SaevError::UnionPathEscapes { .. }))
    ));
    assert_eq!(n(&slices[0]), 5);
}
