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
    modelbin_format::tllm::write_file(&path, &config, &slices).unwrap();
    std::fs::read(path).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn mutated_tllm_never_panics(mutations in prop::collection::vec(mutation(), 1..4)) {
        let mut bytes = small_tllm();
        mutations.iter().for_each(|m| apply(&mut bytes, m));
        if let Ok(file) = modelbin_format::tllm::Tllm::from_buffer(bytes.as_slice()) {
            let summary = modelbin_format::inspect::TllmSummary::of(&file);
            prop_assert_eq!(summary.tensors.len(), file.specs().count());
        }
    }
}
