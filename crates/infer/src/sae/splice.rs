//! How much of a TLLM's next-token loss an autoencoder keeps: the
//! reconstruction is spliced into the forward pass in place of one block's
//! output, and the cross-entropy compared with the clean pass and with the
//! block's output zeroed (Gao et al., 2024, section 4.1; SAELens's
//! "CE loss score").

use std::path::Path;

use modelbin_format::Format;
use modelbin_format::saev::Dataset;
use rayon::prelude::*;

use super::Sae;
use crate::tllm::Model;
use crate::{Error, Result, SaeError};

/// A TLLM model checked to be the one a dataset was recorded from, with the
/// block to splice and the windows to run.
pub struct Splice {
    model: Model,
    block: usize,
    windows: Vec<Vec<u32>>,
}

impl Splice {
    /// Checks that `model_path` is the model `dataset` was recorded from
    /// (by its hash) and takes the dataset's first `windows` windows;
    /// `layer` is the layer as recorded.
    pub fn open(model_path: &Path, dataset: &Dataset, layer: i64, windows: u64) -> Result<Splice> {
        let metadata = dataset.metadata();
        if metadata.vit_family != "tllm" {
            return Err(SaeError::NotTllmRecording {
                family: metadata.vit_family.clone(),
            }
            .into());
        }
        let Some(ids) = dataset.token_ids() else {
            return Err(SaeError::NoTokenIds {
                dataset: dataset.dir().to_path_buf(),
            }
            .into());
        };
        if !model_path.is_dir()
            && let Ok(format) = modelbin_format::detect::detect(model_path)
            && format != Format::Tllm
        {
            return Err(SaeError::NotTllm {
                model: model_path.to_path_buf(),
                format,
            }
            .into());
        }
        check_recorded_from(model_path, dataset)?;
        let model = Model::open(model_path)?;
        let blocks = i64::from(model.config().n_layers);
        let block = if layer < 0 { blocks + layer } else { layer };
        let windows = (0..windows.min(metadata.n_imgs))
            .filter_map(|img| ids.window(img))
            .collect();
        Ok(Splice {
            model,
            block: block as usize,
            windows,
        })
    }

    /// The windows run clean, with `sae`'s reconstruction spliced in, and
    /// with the layer zeroed.
    pub fn measure(&self, sae: &Sae<f32>) -> Result<CrossEntropy> {
        cross_entropy(&self.model, sae, self.block, &self.windows)
    }
}

/// Refuses a model other than the one `dataset` was recorded from (by its
/// hash, `vit_ckpt`).
pub(crate) fn check_recorded_from(model_path: &Path, dataset: &Dataset) -> Result<()> {
    let recorded = &dataset.metadata().vit_ckpt;
    let hash = crate::record::checkpoint_id(model_path)?;
    if &hash != recorded {
        return Err(SaeError::OtherModel {
            model: model_path.to_path_buf(),
            hash,
            recorded: recorded.clone(),
        }
        .into());
    }
    Ok(())
}

/// Mean next-token cross-entropy (nats per token) of three passes over the
/// same windows.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CrossEntropy {
    /// Windows run.
    pub windows: usize,
    /// Predictions scored (`window length − 1` per window).
    pub tokens: usize,
    /// The model as it is.
    pub clean: f64,
    /// With the block's output replaced by its reconstruction.
    pub spliced: f64,
    /// With the block's output replaced by zeros.
    pub zero_ablated: f64,
    /// `(zero_ablated − spliced) / (zero_ablated − clean)`: 1 when splicing
    /// loses nothing, 0 when it is as bad as erasing the block's output.
    pub recovered: f64,
}

/// Runs every window three times — clean, with block `block`'s output
/// replaced by `sae`'s reconstruction, and zeroed — and averages the loss of
/// predicting each next token of the window.
pub fn cross_entropy(
    model: &Model,
    sae: &Sae<f32>,
    block: usize,
    windows: &[Vec<u32>],
) -> Result<CrossEntropy> {
    let blocks = model.config().n_layers as usize;
    let width = model.config().model_dim as usize;
    if block >= blocks || sae.d_in != width {
        return Err(Error::Format(modelbin_format::Error::InvalidArgument(
            format!(
                "block {block} of {blocks}, an autoencoder of width {} on a model of width {width}",
                sae.d_in
            ),
        )));
    }
    // Per window: the three summed losses and the predictions scored.
    let sums = windows
        .par_iter()
        .filter(|ids| ids.len() >= 2)
        .map(|ids| -> Result<[f64; 4]> {
            let clean = loss(model, ids, &mut |_, _| {})?;
            let spliced = loss(model, ids, &mut |l, x| {
                if l == block {
                    let rows = x.len() / width;
                    x.copy_from_slice(&sae.forward(x, rows));
                }
            })?;
            let zero = loss(model, ids, &mut |l, x| {
                if l == block {
                    x.fill(0.0);
                }
            })?;
            Ok([clean, spliced, zero, (ids.len() - 1) as f64])
        })
        .collect::<Result<Vec<_>>>()?;
    let total = |i: usize| sums.iter().map(|s| s[i]).sum::<f64>();
    let tokens = total(3) as usize;
    let mean = |i: usize| total(i) / tokens.max(1) as f64;
    let (clean, spliced, zero_ablated) = (mean(0), mean(1), mean(2));
    Ok(CrossEntropy {
        windows: sums.len(),
        tokens,
        clean,
        spliced,
        zero_ablated,
        recovered: (zero_ablated - spliced) / (zero_ablated - clean),
    })
}

/// Σ over positions of −log p(next token), the residual stream passed
/// through `hook`.
fn loss(model: &Model, ids: &[u32], hook: &mut dyn FnMut(usize, &mut [f32])) -> Result<f64> {
    let vocab = model.config().vocab_size as usize;
    let logits = model.session().extend_with_hook(ids, true, hook)?;
    Ok(logits
        .chunks_exact(vocab)
        .zip(&ids[1..])
        .map(|(row, &next)| {
            let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let log_sum = row
                .iter()
                .map(|&v| f64::from(v - max).exp())
                .sum::<f64>()
                .ln()
                + f64::from(max);
            log_sum - f64::from(row[next as usize])
        })
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sae::Activation;

    /// An autoencoder that reconstructs exactly: latents ±e_i, ReLU.
    fn exact(d: usize) -> Sae<f32> {
        let mut w = vec![0.0f32; 2 * d * d];
        for i in 0..d {
            w[i * d + i] = 1.0;
            w[(d + i) * d + i] = -1.0;
        }
        Sae {
            d_in: d,
            d_sae: 2 * d,
            activation: Activation::Relu,
            w_enc: w.clone(),
            b_enc: vec![0.0; 2 * d],
            w_dec: w,
            b_dec: vec![0.0; d],
        }
    }

    #[test]
    fn an_exact_reconstruction_recovers_everything() {
        let config = modelbin_format::tllm::Config {
            model_dim: 16,
            n_layers: 2,
            n_heads: 2,
            ffn_hidden_dim: 32,
            max_seq_len: 12,
            vocab_size: 256,
            dropout: 0.0,
        };
        let model = Model::random(config, 3, 0.3).unwrap();
        let windows: Vec<Vec<u32>> = (0..4)
            .map(|w| (0..12).map(|i| (w * 31 + i * 7) % 256).collect())
            .collect();
        let ce = cross_entropy(&model, &exact(16), 0, &windows).unwrap();
        assert_eq!((ce.windows, ce.tokens), (4, 44));
        assert!((ce.spliced - ce.clean).abs() < 1e-5, "{ce:?}");
        assert!(ce.zero_ablated != ce.clean);
        assert!((ce.recovered - 1.0).abs() < 1e-4, "{ce:?}");
        // The clean loss is the model's own: −log softmax of its logits.
        let logits = model.session().extend(&windows[0], true).unwrap();
        let row = &logits[..256];
        let p: f64 = row.iter().map(|&v| f64::from(v).exp()).sum();
        let first = p.ln() - f64::from(row[windows[0][1] as usize]);
        assert!((loss(&model, &windows[0][..2], &mut |_, _| {}).unwrap() - first).abs() < 1e-9);
        assert!(matches!(
            cross_entropy(&model, &exact(8), 0, &windows),
            Err(Error::Format(modelbin_format::Error::InvalidArgument(_)))
        ));
    }
}
