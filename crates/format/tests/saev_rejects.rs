//! SAEV: every rejection path, matched on its variant.

mod common;

use common::saev::*;
use modelbin_format::Error;
use modelbin_format::SaevError;
use modelbin_format::saev::{self, Writer};

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
