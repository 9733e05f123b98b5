//! Any bytes as a SAEV `union.json` beside one real member dataset: the
//! union opens or is refused with a typed error, never a panic; an opened
//! union numbers exactly its members' images.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use modelbin_format::saev::{Metadata, Union, Writer};

/// A directory holding one small dataset (its hash as its name).
static ROOT: LazyLock<(tempfile::TempDir, PathBuf)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let metadata = Metadata::parse(
        r#"{"vit_family": "test", "vit_ckpt": "fuzz", "layers": [-1], "n_patches_per_img": 2,
            "cls_token": false, "d_vit": 3, "seed": 0, "n_imgs": 4,
            "max_patches_per_shard": 16, "data": "fuzz"}"#,
    )
    .unwrap();
    let mut writer = Writer::create(dir.path(), metadata).unwrap();
    for img in 0..4 {
        writer.push(&[img as f32; 6]).unwrap();
    }
    let member = writer.finish().unwrap();
    (dir, member)
});

fuzz_target!(|data: &[u8]| {
    let (dir, member) = &*ROOT;
    let manifest = dir.path().join("union.json");
    std::fs::write(&manifest, data).unwrap();
    if let Ok(union) = Union::open(&[&manifest]) {
        let total: u64 = union.members().iter().map(|m| m.metadata().n_imgs).sum();
        assert_eq!(union.n_imgs(), total);
        assert!(union.members().iter().all(|m| m.dir().ends_with(member.file_name().unwrap())));
    }
});
