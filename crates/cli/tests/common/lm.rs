//! Tiny random decoder language models and autoencoders written by the
//! tests themselves (no torch): a GPT-2 directory as `save_pretrained`
//! lays it out (hub tensor names), with a byte-level `tokenizer.json` of
//! the 256 byte tokens, and SAELens-layout autoencoders on it.

use std::path::Path;

use modelbin_format::{DType, TensorView, safetensors};
use modelbin_infer::rng::Rng;
use modelbin_infer::sae::{Activation, Io, Sae, saelens};

/// The width of the tiny models.
pub const HIDDEN: usize = 8;
/// Their vocabulary: one token per byte.
pub const VOCAB: usize = 256;

/// Writes a random GPT-2 of `layers` blocks (width [`HIDDEN`], 2 heads,
/// context 32) drawn from `seed` into `dir`, with a byte-level tokenizer.
pub fn tiny_gpt2(dir: &Path, layers: usize, seed: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let d = HIDDEN;
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("wte.weight".into(), vec![VOCAB, d]),
        ("wpe.weight".into(), vec![32, d]),
        ("ln_f.weight".into(), vec![d]),
        ("ln_f.bias".into(), vec![d]),
    ];
    for layer in 0..layers {
        for (name, shape) in [
            ("ln_1", vec![d]),
            ("ln_2", vec![d]),
            ("attn.c_attn", vec![d, 3 * d]),
            ("attn.c_proj", vec![d, d]),
            ("mlp.c_fc", vec![d, 4 * d]),
            ("mlp.c_proj", vec![4 * d, d]),
        ] {
            let out = *shape.last().unwrap();
            shapes.push((format!("h.{layer}.{name}.weight"), shape));
            shapes.push((format!("h.{layer}.{name}.bias"), vec![out]));
        }
    }
    let mut rng = Rng::new(seed);
    let data: Vec<Vec<u8>> = shapes
        .iter()
        .map(|(_, shape)| {
            (0..shape.iter().product::<usize>())
                .flat_map(|_| (rng.normal(0.5) as f32).to_le_bytes())
                .collect()
        })
        .collect();
    let views: Vec<TensorView<'_>> = shapes
        .iter()
        .zip(&data)
        .map(|((name, shape), bytes)| TensorView::new(name, DType::F32, shape, bytes).unwrap())
        .collect();
    safetensors::write_file(dir.join("model.safetensors"), views, None, &mut |_, _| {}).unwrap();
    let config = serde_json::json!({
        "model_type": "gpt2", "vocab_size": VOCAB, "n_positions": 32, "n_embd": d,
        "n_layer": layers, "n_head": 2, "bos_token_id": 0, "eos_token_id": 0,
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let vocab: serde_json::Map<String, serde_json::Value> = (0..=255u8)
        .map(|b| (modelbin_tokenize::hf_byte_char(b).to_string(), b.into()))
        .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "added_tokens": [], "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
                          "trim_offsets": true, "use_regex": true},
        "post_processor": null, "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
}

/// Writes a random ReLU autoencoder of `d_sae` latents on width
/// [`HIDDEN`] into `dir`, its `cfg.json`'s metadata holding `metadata`
/// (the hook, the model).
pub fn sae_on(dir: &Path, d_sae: usize, metadata: serde_json::Value) {
    let mut rng = Rng::new(11);
    let mut values = |n: usize| (0..n).map(|_| rng.normal(1.0) as f32).collect::<Vec<f32>>();
    let mut w_dec = values(d_sae * HIDDEN);
    modelbin_infer::sae::train::normalize_rows(&mut w_dec, HIDDEN);
    let sae = Sae {
        d_in: HIDDEN,
        d_sae,
        activation: Activation::Relu,
        w_enc: values(d_sae * HIDDEN),
        b_enc: values(d_sae),
        w_dec,
        b_dec: values(HIDDEN),
        io: Io::default(),
    };
    saelens::save(dir, &sae, metadata).unwrap();
}
