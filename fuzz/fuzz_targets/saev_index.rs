//! Fuzz SAEV index decoding: arbitrary views, indices and coordinates on a
//! small dataset are Ok or Err, never a panic, and what `get` returns is
//! what `vector` returns for the same coordinates.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use modelbin_format::saev::{self, Dataset, LayerChoice, Metadata, Patches, Writer};

fn dataset() -> &'static Dataset {
    static DATASET: OnceLock<(tempfile::TempDir, Dataset)> = OnceLock::new();
    &DATASET
        .get_or_init(|| {
            let root = tempfile::tempdir().unwrap();
            let metadata = Metadata::parse(
                r#"{"vit_family": "clip", "vit_ckpt": "x", "layers": [-1, 4], "n_patches_per_img": 3,
                    "cls_token": true, "d_vit": 2, "seed": 0, "n_imgs": 5, "max_patches_per_shard": 17, "data": "x"}"#,
            )
            .unwrap();
            let values = (metadata.vectors_per_img() * metadata.d_vit) as usize;
            let mut writer = Writer::create(root.path(), metadata.clone()).unwrap();
            for img in 0..metadata.n_imgs {
                writer.push(&vec![img as f32; values]).unwrap();
            }
            let dir = writer.finish().unwrap();
            (root, saev::open(dir).unwrap())
        })
        .1
}

fuzz_target!(|input: (u8, i8, u64, u64, i64, u64)| {
    let (kind, layer, index, img, layer_value, token) = input;
    let patches = [Patches::Cls, Patches::Image, Patches::All][kind as usize % 3];
    let layer = if layer < 0 { LayerChoice::All } else { LayerChoice::One(i64::from(layer % 6) - 1) };
    let ds = dataset();
    if let Ok(view) = ds.view(patches, layer) {
        if let Ok(example) = view.get(index) {
            assert_eq!(ds.vector(example.img, example.layer, example.token).unwrap(), example.vector);
        }
    }
    let _ = ds.vector(img, layer_value, token);
});
