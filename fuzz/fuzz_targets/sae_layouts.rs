//! Any bytes as the configuration of a downloaded autoencoder (Gemma Scope
//! 2's `config.json`, Llama Scope's `hyperparams.json`, sparsify's
//! `cfg.json`, the first byte choosing which) beside tensors that fit the
//! usual configuration: an autoencoder or a typed error, never a panic;
//! an accepted one has the tensors' widths and finite, non-negative
//! JumpReLU thresholds.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use modelbin_format::{DType, TensorView};
use modelbin_infer::sae::Activation;
use modelbin_infer::sae::layouts;

const D_IN: usize = 4;
const D_SAE: usize = 6;

fn write(path: &Path, tensors: &[(&str, Vec<usize>)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let data: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, shape)| {
            (0..shape.iter().product::<usize>())
                .flat_map(|i| (0.1 + 0.01 * i as f32).to_le_bytes())
                .collect()
        })
        .collect();
    let views = tensors
        .iter()
        .zip(&data)
        .map(|((name, shape), bytes)| TensorView::new(name, DType::F32, shape, bytes).unwrap());
    modelbin_format::safetensors::write_file(path, views, None, &mut |_, _| {}).unwrap();
}

/// The three layouts' folders with their tensors, made once: (folder,
/// configuration file name).
fn folders() -> &'static [(PathBuf, &'static str); 3] {
    static ROOT: OnceLock<(tempfile::TempDir, [(PathBuf, &'static str); 3])> = OnceLock::new();
    &ROOT
        .get_or_init(|| {
            let root = tempfile::tempdir().unwrap();
            let gemma = root.path().join("resid_post/layer_5_width_16k");
            write(
                &gemma.join("params.safetensors"),
                &[
                    ("w_enc", vec![D_IN, D_SAE]),
                    ("w_dec", vec![D_SAE, D_IN]),
                    ("b_enc", vec![D_SAE]),
                    ("b_dec", vec![D_IN]),
                    ("threshold", vec![D_SAE]),
                ],
            );
            let llama = root.path().join("Llama3_1-8B-Base-L2R-8x");
            write(
                &llama.join("checkpoints/final.safetensors"),
                &[
                    ("encoder.weight", vec![D_SAE, D_IN]),
                    ("encoder.bias", vec![D_SAE]),
                    ("decoder.weight", vec![D_IN, D_SAE]),
                    ("decoder.bias", vec![D_IN]),
                ],
            );
            let sparsify = root.path().join("run/layers.3");
            write(
                &sparsify.join("sae.safetensors"),
                &[
                    ("encoder.weight", vec![D_SAE, D_IN]),
                    ("encoder.bias", vec![D_SAE]),
                    ("W_dec", vec![D_SAE, D_IN]),
                    ("b_dec", vec![D_IN]),
                ],
            );
            let folders = [
                (gemma, "config.json"),
                (llama, "hyperparams.json"),
                (sparsify, "cfg.json"),
            ];
            (root, folders)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, config)) = data.split_first() else {
        return;
    };
    let (folder, name) = &folders()[which as usize % 3];
    std::fs::write(folder.join(name), config).unwrap();
    let Ok((sae, config)) = layouts::load(folder) else {
        return;
    };
    assert_eq!((sae.d_in, sae.d_sae), (D_IN, D_SAE));
    assert_eq!((config.d_in, config.d_sae), (D_IN, D_SAE));
    if let Activation::JumpRelu(threshold) = &sae.activation {
        assert!(threshold.iter().all(|t| t.is_finite() && *t >= 0.0));
    }
});
