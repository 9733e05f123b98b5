//! What the TLLM tests share: a small configuration, its tensors, a written file.

use modelbin_format::Error;
use modelbin_format::tllm::{self, Config, Tllm};
use proptest::prelude::*;

pub fn config() -> Config {
    Config {
        model_dim: 4,
        n_layers: 2,
        n_heads: 2,
        ffn_hidden_dim: 6,
        max_seq_len: 3,
        vocab_size: 5,
        dropout: 0.25,
    }
}

/// Tensor data: each tensor's values count up from a seed.
pub fn data(config: &Config, seed: f32) -> Vec<Vec<u8>> {
    config
        .tensors()
        .iter()
        .enumerate()
        .map(|(t, spec)| {
            (0..spec.shape.len())
                .flat_map(|i| (seed + t as f32 * 100.0 + i as f32 * 0.5).to_le_bytes())
                .collect()
        })
        .collect()
}

pub fn written(config: &Config) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.tllm");
    let data = data(config, 1.0);
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let size = tllm::write_file(&path, config, &slices, &mut |_, _| {}).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(size, bytes.len() as u64);
    bytes
}

pub fn parse(bytes: &[u8]) -> Result<(), Error> {
    Tllm::from_buffer(bytes).map(|_| ())
}

pub fn config_strategy() -> impl Strategy<Value = Config> {
    (1u32..4, 1u32..3, 1u32..6, 1u32..5, 1u32..40, 0.0f32..0.99).prop_map(
        |(heads, layers, per_head, seq, vocab, dropout)| Config {
            model_dim: heads * per_head,
            n_layers: layers,
            n_heads: heads,
            ffn_hidden_dim: per_head * 3,
            max_seq_len: seq,
            vocab_size: vocab,
            dropout,
        },
    )
}
