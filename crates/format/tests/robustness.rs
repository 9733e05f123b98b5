//! Mutated valid files never make a reader panic: every outcome is Ok or Err.
//! (The fuzz targets under fuzz/ explore the same property without bounds.)

mod common;

use common::{WORKED_EXAMPLE, tensor_set};
use modelbin_format::bintensors::{self, BinTensors};
use modelbin_format::safetensors::SafeTensors;
use modelbin_format::{Index, TensorStore, detect};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Mutation {
    Overwrite(usize, u8),
    FlipBit(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    /// An extreme little-endian u64 written over 8 bytes.
    Word(usize, u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let extreme = prop::sample::select(vec![
        0u64,
        1,
        7,
        8,
        250,
        251,
        0xFFFF,
        1 << 32,
        100_000_000,
        100_000_001,
        1 << 63,
        u64::MAX - 7,
        u64::MAX,
    ]);
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Overwrite(p, b)),
        (any::<usize>(), 0u8..8).prop_map(|(p, b)| Mutation::FlipBit(p, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..9))
            .prop_map(|(p, b)| Mutation::Insert(p, b)),
        (any::<usize>(), 1usize..9).prop_map(|(p, n)| Mutation::Remove(p, n)),
        (any::<usize>(), extreme).prop_map(|(p, v)| Mutation::Word(p, v)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let pos = |p: usize, len: usize| if len == 0 { 0 } else { p % len };
    match m {
        Mutation::Overwrite(p, b) if !bytes.is_empty() => {
            let i = pos(*p, bytes.len());
            bytes[i] = *b;
        }
        Mutation::FlipBit(p, bit) if !bytes.is_empty() => {
            let i = pos(*p, bytes.len());
            bytes[i] ^= 1 << bit;
        }
        Mutation::Truncate(p) => bytes.truncate(pos(*p, bytes.len() + 1)),
        Mutation::Insert(p, b) => {
            let i = pos(*p, bytes.len() + 1);
            bytes.splice(i..i, b.iter().copied());
        }
        Mutation::Remove(p, n) if !bytes.is_empty() => {
            let i = pos(*p, bytes.len());
            bytes.drain(i..(i + n).min(bytes.len()));
        }
        Mutation::Word(p, v) if bytes.len() >= 8 => {
            // Favour the size prefix, which drives everything else.
            let i = if p % 3 == 0 {
                0
            } else {
                pos(*p, bytes.len() - 7)
            };
            bytes[i..i + 8].copy_from_slice(&v.to_le_bytes());
        }
        _ => {}
    }
}

/// Touches everything a valid file exposes, so that accessors are exercised too.
fn exercise(file: &impl TensorStore) {
    for t in file.tensors() {
        assert_eq!(file.tensor(t.name()).unwrap().data(), t.data());
        let whole = t.slice(&[]).unwrap();
        assert_eq!(whole.to_vec(), t.data());
        if let Some(&first) = t.shape().first() {
            let _ = t.slice(&[Index::from(first / 2..first)]).unwrap().to_vec();
        }
    }
    let _ = file.metadata();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn mutated_bintensors_never_panic(
        set in tensor_set(),
        mutations in prop::collection::vec(mutation(), 1..4),
        use_worked_example in any::<bool>(),
    ) {
        let mut bytes = if use_worked_example {
            WORKED_EXAMPLE.to_vec()
        } else {
            bintensors::serialize(set.views(), set.metadata.as_ref()).unwrap()
        };
        mutations.iter().for_each(|m| apply(&mut bytes, m));
        let _ = detect::detect_bytes(&bytes);
        if let Ok(file) = BinTensors::from_buffer(&bytes) {
            exercise(&file);
            // Whatever we accept, we write back byte for byte... up to order.
            let again = bintensors::serialize(file.tensors(), file.metadata()).unwrap();
            let reread = BinTensors::from_buffer(&again).unwrap();
            prop_assert_eq!(reread.len(), file.len());
        }
    }

    #[test]
    fn mutated_safetensors_never_panic(
        set in tensor_set(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let views = set.views();
        let mut bytes = safetensors::serialize(
            views.iter().map(|v| (v.name().to_owned(), common::SafeRef(*v))),
            set.metadata_hashmap(),
        ).unwrap();
        mutations.iter().for_each(|m| apply(&mut bytes, m));
        let _ = detect::detect_bytes(&bytes);
        if let Ok(file) = SafeTensors::from_buffer(&bytes) {
            exercise(&file);
        }
    }
}

/// A small real-shaped vocabulary: all 256 bytes, some merges, a gap, a special.
fn small_vocabulary() -> Vec<u8> {
    let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
    tokens.extend([
        (b"ab".to_vec(), 256),
        (b"abc".to_vec(), 257),
        (b"<|endoftext|>".to_vec(), 260),
    ]);
    modelbin_format::bpe2::build(&tokens, [0; 32]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn mutated_bpe2_never_panics(mutations in prop::collection::vec(mutation(), 1..4)) {
        let mut bytes = small_vocabulary();
        mutations.iter().for_each(|m| apply(&mut bytes, m));
        let _ = detect::detect_bytes(&bytes);
        if let Ok(file) = modelbin_format::bpe2::Bpe2::from_buffer(bytes.as_slice()) {
            let mut out = Vec::new();
            file.write_tiktoken(&mut out).unwrap();
            let parsed = modelbin_format::bpe2::parse_tiktoken(&out).unwrap();
            prop_assert_eq!(parsed.len(), file.tokens().count());
        }
    }
}

/// A small TLLM model with counting values.
fn small_tllm() -> Vec<u8> {
    let config = modelbin_format::tllm::Config {
        model_dim: 4,
        n_layers: 1,
        n_heads: 2,
        ffn_hidden_dim: 4,
        max_seq_len: 2,
        vocab_size: 3,
        dropout: 0.0,
    };
    let data: Vec<Vec<u8>> = config
        .tensors()
        .iter()
        .map(|s| {
            (0..s.shape.len())
                .flat_map(|i| (i as f32).to_le_bytes())
                .collect()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.tllm");
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    modelbin_format::tllm::write_file(&path, &config, &slices, &mut |_, _| {}).unwrap();
    std::fs::read(path).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn mutated_tllm_never_panics(mutations in prop::collection::vec(mutation(), 1..4)) {
        let mut bytes = small_tllm();
        mutations.iter().for_each(|m| apply(&mut bytes, m));
        if let Ok(file) = modelbin_format::tllm::Tllm::from_buffer(bytes.as_slice()) {
            let summary = modelbin_format::tllm::TllmSummary::of(&file);
            prop_assert_eq!(summary.tensors.len(), file.len());
        }
    }
}

/// A small SAEV dataset's files: `metadata.json` and its shards.
fn small_saev() -> &'static (Vec<u8>, Vec<Vec<u8>>) {
    use modelbin_format::saev::{Metadata, Writer};
    static FILES: std::sync::OnceLock<(Vec<u8>, Vec<Vec<u8>>)> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let metadata = Metadata::from_value(&serde_json::json!({
            "vit_family": "clip", "vit_ckpt": "ViT-B-32/openai", "layers": [-2, 5],
            "n_patches_per_img": 3, "cls_token": true, "d_vit": 4, "seed": 1, "n_imgs": 5,
            "max_patches_per_shard": 16, "data": {"name": "x"}
        }))
        .unwrap();
        let root = tempfile::tempdir().unwrap();
        let mut writer = Writer::create(root.path(), metadata.clone()).unwrap();
        for img in 0..metadata.n_imgs {
            let values = metadata.vectors_per_img() * metadata.d_vit;
            writer
                .push(
                    &(0..values)
                        .map(|v| (img * 100 + v) as f32)
                        .collect::<Vec<_>>(),
                )
                .unwrap();
        }
        let dir = writer.finish().unwrap();
        let shards = (0..metadata.n_shards())
            .map(|i| std::fs::read(dir.join(modelbin_format::saev::shard_name(i))).unwrap())
            .collect();
        (std::fs::read(dir.join("metadata.json")).unwrap(), shards)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Mutated metadata (reparsed, and written under its new hash so that
    /// opening goes past the hash check) and mutated shards: opening,
    /// every view, random access and statistics never panic.
    #[test]
    fn mutated_saev_never_panics(
        metadata_mutations in prop::collection::vec(mutation(), 0..3),
        shard_mutations in prop::collection::vec((0usize..8, mutation()), 0..3),
    ) {
        use modelbin_format::saev::{self, LayerChoice, Metadata, Patches};
        let (text, shards) = small_saev();
        let mut text = text.clone();
        metadata_mutations.iter().for_each(|m| apply(&mut text, m));
        let Ok(metadata) = std::str::from_utf8(&text).map_err(drop).and_then(|t| Metadata::parse(t).map_err(drop)) else {
            return Ok(());
        };
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(metadata.hash());
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("metadata.json"), &text).unwrap();
        let mut shards = shards.clone();
        for (index, m) in &shard_mutations {
            let count = shards.len();
            apply(&mut shards[index % count], m);
        }
        for (i, shard) in shards.iter().enumerate() {
            std::fs::write(dir.join(saev::shard_name(i as u64)), shard).unwrap();
        }
        if let Ok(dataset) = saev::open(&dir) {
            for patches in [Patches::Cls, Patches::Image, Patches::All] {
                for layer in [LayerChoice::All, LayerChoice::One(-2), LayerChoice::One(7)] {
                    if let Ok(view) = dataset.view(patches, layer) {
                        for i in [0, view.len() / 2, view.len().saturating_sub(1), view.len()] {
                            let _ = view.get(i);
                        }
                    }
                }
            }
            let _ = dataset.vector(0, -2, 0);
            let stats = dataset.layer_stats(&mut |_, _| {});
            prop_assert_eq!(stats.len(), dataset.metadata().layers.len());
        }
    }
}
