//! The image side files of a SAEV dataset (`images.jsonl`, `vision.json`):
//! written by the writer, read back equal, every rejection matched on its
//! error variant, and the image files' hashes checked.

use std::path::{Path, PathBuf};

use modelbin_format::saev::{self, ImageEntry, ImageState, Metadata, VisionInfo, Writer};
use modelbin_format::{Error, LayoutError, SaevError};
use serde_json::json;

const N_IMGS: u64 = 3;

fn metadata() -> Metadata {
    Metadata::from_value(&json!({
        "vit_family": "dinov2", "vit_ckpt": "tiny", "layers": [-1],
        "n_patches_per_img": 6, "cls_token": true, "d_vit": 4, "seed": 0, "n_imgs": N_IMGS,
        "max_patches_per_shard": 100, "data": "three images"
    }))
    .unwrap()
}

fn vision() -> VisionInfo {
    VisionInfo {
        family: "dinov2".into(),
        model: "models/tiny".into(),
        patch_size: 8,
        patch_grid: [2, 3],
        input_size: [16, 24],
        registers: 0,
        preprocessor_config: json!({"crop_size": {"height": 16, "width": 24}, "do_resize": true})
            .as_object()
            .unwrap()
            .clone(),
    }
}

/// Three image files under `dir` and their entries.
fn images(dir: &Path) -> Vec<ImageEntry> {
    (0..N_IMGS)
        .map(|i| {
            let path = dir.join(format!("img{i}.png"));
            let bytes = vec![i as u8; 10 + i as usize];
            std::fs::write(&path, &bytes).unwrap();
            ImageEntry::of(&path, &bytes)
        })
        .collect()
}

/// A dataset with the side files; returns its directory and the entries.
fn dataset(root: &Path) -> (PathBuf, Vec<ImageEntry>) {
    let entries = images(root);
    let metadata = metadata();
    let values = vec![0.5f32; (metadata.vectors_per_img() * metadata.d_vit) as usize];
    let mut writer = Writer::create(root.join("acts"), metadata).unwrap();
    for _ in 0..N_IMGS {
        writer.push(&values).unwrap();
    }
    writer.write_images(&entries, &vision()).unwrap();
    (writer.finish().unwrap(), entries)
}

#[test]
fn written_side_files_read_back_equal() {
    let root = tempfile::tempdir().unwrap();
    let (dir, entries) = dataset(root.path());
    let opened = saev::open(&dir).unwrap();
    opened.verify().unwrap();
    let read = opened.images().unwrap().expect("the side files are there");
    assert_eq!(read.entries, entries);
    assert_eq!(read.vision, vision());
    assert_eq!(read.entries[1].name(), "img1.png");
    // One JSON object per line, in image order.
    let text = std::fs::read_to_string(dir.join(saev::IMAGES_FILE)).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2]["path"], entries[2].path);
    assert_eq!(
        lines[2]["sha256"],
        // sha256 of twelve bytes 0x02, from Python's hashlib.
        "c5e9ccee95810812698974620d3569d634170407f0c6ebdf6ec58981a62af58f"
    );
    // Hashes of the image files.
    let check = read.check_files(&mut |_, _| {});
    assert_eq!(
        (check.images, check.missing.len(), check.changed.len()),
        (3, 0, 0)
    );
    std::fs::remove_file(&entries[0].path).unwrap();
    std::fs::write(&entries[2].path, b"other bytes").unwrap();
    let check = read.check_files(&mut |_, _| {});
    assert_eq!((check.missing, check.changed), (vec![0], vec![2]));
    assert_eq!(ImageState::of(&entries[1]), ImageState::Unchanged);
    // A dataset without the files has none.
    let plain = root.path().join("plain");
    let mut m = metadata();
    m.seed = 1;
    let dir = saev::write_synthetic(&plain, m, true, &mut |_, _| {}).unwrap();
    assert!(saev::open(&dir).unwrap().images().unwrap().is_none());
}

#[test]
fn the_writer_refuses_what_would_not_read_back() {
    let root = tempfile::tempdir().unwrap();
    let entries = images(root.path());
    let mut writer = Writer::create(root.path().join("acts"), metadata()).unwrap();
    let refused = |result: modelbin_format::Result<()>, words: &str| match result {
        Err(Error::InvalidArgument(message)) => assert!(message.contains(words), "{message}"),
        Err(Error::Saev(SaevError::PatchGrid {
            rows: 3, cols: 3, ..
        })) => {
            assert_eq!(words, "grid")
        }
        other => panic!("{other:?}"),
    };
    refused(
        writer.write_images(&entries[..2], &vision()),
        "2 images listed",
    );
    let mut relative = entries.clone();
    relative[1].path = "img1.png".into();
    refused(writer.write_images(&relative, &vision()), "not absolute");
    let mut grid = vision();
    grid.patch_grid = [3, 3];
    refused(writer.write_images(&entries, &grid), "grid");
}

/// The dataset with `file` of its side files replaced by `text`.
fn with(file: &str, text: &str) -> (tempfile::TempDir, Error) {
    let root = tempfile::tempdir().unwrap();
    let (dir, _) = dataset(root.path());
    std::fs::write(dir.join(file), text).unwrap();
    let error = saev::open(&dir).unwrap().images().unwrap_err();
    // `verify` reports the same.
    assert!(saev::open(&dir).unwrap().verify().is_err());
    (root, error)
}

fn line(path: &str, sha: &str) -> String {
    format!("{}\n", json!({"path": path, "sha256": sha}))
}

#[test]
fn rejections() {
    let sha = "ab".repeat(32);
    let three = line("/a.png", &sha).repeat(3);
    // A count other than n_imgs, above and below.
    for (lines, found) in [(4, 4), (2, 2)] {
        let (_root, e) = with(saev::IMAGES_FILE, &line("/a.png", &sha).repeat(lines));
        assert!(
            matches!(e, Error::Saev(SaevError::ImageCount { expected: 3, found: f, .. }) if f == found),
            "{e}"
        );
    }
    // A last line without a break still counts.
    let root = tempfile::tempdir().unwrap();
    let (dir, _) = dataset(root.path());
    std::fs::write(dir.join(saev::IMAGES_FILE), three.trim_end()).unwrap();
    let read = saev::open(&dir).unwrap().images().unwrap().unwrap();
    assert_eq!(read.entries.len(), 3);
    // Bad hex: upper case, short, not hex.
    for bad in ["AB".repeat(32), "ab".repeat(31), "zz".repeat(32)] {
        let text = format!("{}{}", line("/a.png", &bad), line("/b.png", &sha).repeat(2));
        let (_root, e) = with(saev::IMAGES_FILE, &text);
        assert!(
            matches!(&e, Error::Saev(SaevError::ImageEntry { line: 1, reason, .. }) if reason.contains("hex")),
            "{e}"
        );
    }
    // Malformed JSON, a missing key, an unknown key, a relative path.
    for (bad, words) in [
        ("{\"path\": \"/a.png\", ".to_owned(), "EOF"),
        (json!({"path": "/a.png"}).to_string(), "sha256"),
        (
            json!({"path": "/a.png", "sha256": sha, "x": 1}).to_string(),
            "unknown field",
        ),
        (
            json!({"path": "a.png", "sha256": sha}).to_string(),
            "absolute",
        ),
    ] {
        let text = format!("{}{bad}\n{}", line("/a.png", &sha), line("/b.png", &sha));
        let (_root, e) = with(saev::IMAGES_FILE, &text);
        assert!(
            matches!(&e, Error::Saev(SaevError::ImageEntry { line: 2, reason, .. }) if reason.contains(words)),
            "{words}: {e}"
        );
    }
    // An overlong line (a file with no line break at all).
    let long = "x".repeat(saev::MAX_IMAGE_LINE + 1);
    let (_root, e) = with(saev::IMAGES_FILE, &long);
    assert!(
        matches!(e, Error::Saev(SaevError::ImageLineTooLong { line: 1, .. })),
        "{e}"
    );
    // vision.json: a grid that does not hold n_patches_per_img.
    let mut bad = serde_json::to_value(vision()).unwrap();
    bad["patch_grid"] = json!([1, 5]);
    let (_root, e) = with(saev::VISION_FILE, &bad.to_string());
    assert!(
        matches!(
            e,
            Error::Saev(SaevError::PatchGrid {
                rows: 1,
                cols: 5,
                n_patches: 6,
                ..
            })
        ),
        "{e}"
    );
    // A grid larger than the input, an unknown family, a missing field.
    for (key, value, words) in [
        ("input_size", json!([15, 24]), "does not fit"),
        ("family", json!("resnet"), "none of"),
        ("registers", serde_json::Value::Null, "invalid type"),
    ] {
        let mut bad = serde_json::to_value(vision()).unwrap();
        bad[key] = value;
        let (_root, e) = with(saev::VISION_FILE, &bad.to_string());
        assert!(
            matches!(&e, Error::Saev(SaevError::InvalidVision { reason, .. }) if reason.contains(words)),
            "{words}: {e}"
        );
    }
    // Malformed JSON.
    let (_root, e) = with(saev::VISION_FILE, "{\"family\": ");
    assert!(
        matches!(e, Error::Layout(LayoutError::InvalidHeader { .. })),
        "{e}"
    );
    // One file without the other.
    let root = tempfile::tempdir().unwrap();
    let (dir, _) = dataset(root.path());
    std::fs::remove_file(dir.join(saev::VISION_FILE)).unwrap();
    let e = saev::open(&dir).unwrap().images().unwrap_err();
    assert!(
        matches!(e, Error::Saev(SaevError::ImagesIncomplete { .. })),
        "{e}"
    );
}
