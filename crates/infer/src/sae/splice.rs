//! How much of a model's next-token loss an autoencoder keeps: the
//! reconstruction is spliced into the forward pass in place of the rows
//! at the recorded site, and the cross-entropy and the KL divergence to
//! the clean model are compared with the clean pass and with the site
//! zeroed (Gao et al., 2024, section 4.1). One code path serves every
//! model that predicts the next token, through the one model interface
//! ([`crate::model`]): a TLLM model (the site is a block's output) and a
//! decoder language model (any [`Site`] of a block).
//!
//! The numbers are SAELens's (`sae_lens.evals.get_recons_loss` with
//! `exclude_special_tokens=True`, its default): positions holding a
//! special token (the tokenizer's BOS and EOS) keep their clean rows in
//! the spliced pass and are left out of every mean — a prediction made
//! *from* such a position is not scored, and neither is its KL — while
//! the zero-ablated pass zeroes every position. The cross-entropy is the
//! mean over the scored predictions of each window (`window length − 1`
//! at most); the KL, `KL(clean ‖ spliced)` summed over the vocabulary, is
//! the mean over the scored positions (every position, the last
//! included). A TLLM's byte tokens have no special tokens.

use std::path::Path;

use modelbin_format::Format;
use modelbin_format::saev::Dataset;
use rayon::prelude::*;

use super::Sae;
use crate::lm::LanguageModel;
use crate::model::{
    HookedDecoder, HookedModel, ModelKind, OpenOptions, Recorded, Site, TokenModel, open_model,
};
use crate::tllm::Model;
use crate::{LmError, Result, SaeError};

/// A model that predicts the next token, and the rows of its forward pass
/// that a splice replaces: `site` of one block.
pub struct Target {
    model: Box<dyn HookedModel>,
    block: usize,
    site: Site,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("model", &self.model.name())
            .field("block", &self.block)
            .field("site", &self.site)
            .finish()
    }
}

impl Target {
    /// `site` of block `layer` as recorded (negative counts from the last
    /// block) of `model`: [`SaeError::NoSplice`] for a model that does not
    /// predict tokens, [`LmError::NoSuchLayer`] past its blocks.
    pub fn new(model: Box<dyn HookedModel>, layer: i64, site: Site) -> Result<Target> {
        if model.decoder().is_none() {
            return Err(SaeError::NoSplice {
                family: model.family().to_owned(),
            }
            .into());
        }
        crate::model::check_site(model.as_ref(), site)?;
        let blocks = model.blocks();
        let Some(block) = crate::model::resolve_layer(layer, blocks) else {
            let asked = if layer < 0 {
                blocks as i64 + layer
            } else {
                layer
            };
            return Err(LmError::NoSuchLayer {
                layer: asked.max(0) as usize,
                layers: blocks,
            }
            .into());
        };
        Ok(Target { model, block, site })
    }

    /// A TLLM model's block `layer` as recorded (its output).
    pub fn tllm(model: Model, layer: i64) -> Result<Target> {
        Target::new(Box::new(model), layer, Site::ResidPost)
    }

    /// A language model's `site` of block `layer` as recorded.
    pub fn lm(model: LanguageModel, layer: i64, site: Site) -> Result<Target> {
        Target::new(Box::new(model), layer, site)
    }

    /// The decoder ([`Target::new`] checked it has one).
    fn decoder(&self) -> &dyn HookedDecoder {
        self.model.decoder().expect("a target predicts tokens")
    }

    /// The width of the rows replaced.
    pub fn width(&self) -> usize {
        self.model.width()
    }

    /// The vocabulary's size.
    pub fn vocab(&self) -> usize {
        self.decoder().vocab()
    }

    /// The logits `[ids.len(), vocab]` of one sequence from position 0,
    /// with `replace` called once on the target's rows (`[ids.len(),
    /// width]`), which it may change.
    pub fn logits_with(
        &self,
        ids: &[u32],
        replace: &mut dyn FnMut(&mut [f32]),
    ) -> Result<Vec<f32>> {
        let (block, site) = (self.block, self.site);
        self.decoder()
            .session()
            .extend_with_hook(ids, true, &mut |b, s, rows| {
                if b == block && s == site {
                    replace(rows)
                }
            })
    }
}

/// A model checked to be the one a dataset was recorded from, with the
/// rows to splice, the windows to run and the token ids left out.
#[derive(Debug)]
pub struct Splice {
    target: Target,
    windows: Vec<Vec<u32>>,
    special: Vec<u32>,
}

impl Splice {
    /// A splice of `target` over `windows` (each one sequence from
    /// position 0), leaving out positions holding a token of `special`.
    pub fn new(target: Target, windows: Vec<Vec<u32>>, special: Vec<u32>) -> Splice {
        Splice {
            target,
            windows,
            special,
        }
    }

    /// Checks that `model_path` is the model `dataset` was recorded from
    /// (by its hash) and takes the dataset's first `windows` windows;
    /// `layer` is the layer as recorded. The splice is at the site
    /// recorded (a block's output unless a language model's recording
    /// names another), leaving out the model's special tokens (SAELens's
    /// evals leave out a tokenizer's BOS and EOS).
    pub fn open(model_path: &Path, dataset: &Dataset, layer: i64, windows: u64) -> Result<Splice> {
        let metadata = dataset.metadata();
        let recorded = Recorded::of(metadata)
            .filter(|r| matches!(r.kind, ModelKind::Tllm | ModelKind::LanguageModel));
        let Some(recorded) = recorded else {
            return Err(SaeError::NoSplice {
                family: metadata.vit_family.clone(),
            }
            .into());
        };
        let Some(ids) = dataset.token_ids() else {
            return Err(SaeError::NoTokenIds {
                dataset: dataset.dir().to_path_buf(),
            }
            .into());
        };
        if recorded.kind == ModelKind::Tllm
            && !model_path.is_dir()
            && let Ok(format) = modelbin_format::detect::detect(model_path)
            && format != Format::Tllm
        {
            return Err(SaeError::NotTllm {
                model: model_path.to_path_buf(),
                format,
            }
            .into());
        }
        // The model opens while its hash is checked against the recording's.
        let ((target, special), hash) =
            crate::identity::alongside_checkpoint_id(model_path, || {
                let model = open_model(model_path, OpenOptions::default())?;
                let special = model
                    .tokens()
                    .map(TokenModel::special_tokens)
                    .unwrap_or_default();
                Ok((Target::new(model, layer, recorded.site)?, special))
            })?;
        same_model(model_path, &hash, dataset)?;
        let windows = (0..windows.min(metadata.n_imgs))
            .filter_map(|img| ids.window(img))
            .collect();
        Ok(Splice::new(target, windows, special))
    }

    /// The model and the rows replaced.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The windows run clean, with `sae`'s reconstruction spliced in, and
    /// with the site zeroed, on the current rayon pool (a window per
    /// thread). [`SaeError::ModelWidth`] when the autoencoder's width is
    /// not the model's at the site.
    pub fn measure(&self, sae: &Sae<f32>) -> Result<CrossEntropy> {
        let width = self.target.width();
        if sae.d_in != width {
            return Err(SaeError::ModelWidth {
                sae: sae.d_in,
                model: width,
            }
            .into());
        }
        let sums = self
            .windows
            .par_iter()
            .filter(|ids| ids.len() >= 2)
            .map(|ids| self.window(sae, ids))
            .collect::<Result<Vec<_>>>()?;
        let total = |f: fn(&Sums) -> f64| sums.iter().map(f).sum::<f64>();
        let tokens = total(|s| s.scored);
        let positions = total(|s| s.positions);
        let ce = |f: fn(&Sums) -> f64| total(f) / tokens.max(1.0);
        let kl = |f: fn(&Sums) -> f64| total(f) / positions.max(1.0);
        let (clean, spliced, zero_ablated) = (ce(|s| s.clean), ce(|s| s.spliced), ce(|s| s.zero));
        let (kl_spliced, kl_zero_ablated) = (kl(|s| s.kl_spliced), kl(|s| s.kl_zero));
        Ok(CrossEntropy {
            windows: sums.len(),
            tokens: tokens as usize,
            clean,
            spliced,
            zero_ablated,
            recovered: (zero_ablated - spliced) / (zero_ablated - clean),
            kl_positions: positions as usize,
            kl_spliced,
            kl_zero_ablated,
            kl_recovered: (kl_zero_ablated - kl_spliced) / kl_zero_ablated,
        })
    }

    /// One window's three passes, summed over its scored positions.
    fn window(&self, sae: &Sae<f32>, ids: &[u32]) -> Result<Sums> {
        let width = self.target.width();
        let kept: Vec<bool> = ids.iter().map(|id| !self.special.contains(id)).collect();
        let clean = self.target.logits_with(ids, &mut |_| {})?;
        let spliced = self.target.logits_with(ids, &mut |rows| {
            let reconstruction = sae.forward(rows, rows.len() / width);
            for ((row, new), &keep) in rows
                .chunks_exact_mut(width)
                .zip(reconstruction.chunks_exact(width))
                .zip(&kept)
            {
                if keep {
                    row.copy_from_slice(new);
                }
            }
        })?;
        let zero = self.target.logits_with(ids, &mut |rows| rows.fill(0.0))?;
        let vocab = self.target.vocab();
        let mut sums = Sums::default();
        let mut clean_exps = Vec::with_capacity(vocab);
        for i in (0..ids.len()).filter(|&i| kept[i]) {
            let span = i * vocab..(i + 1) * vocab;
            let (c, s, z) = (&clean[span.clone()], &spliced[span.clone()], &zero[span]);
            let clean_norm = log_sum_exp(c, Some(&mut clean_exps));
            let (spliced_norm, zero_norm) = (log_sum_exp(s, None), log_sum_exp(z, None));
            if let Some(&next) = ids.get(i + 1) {
                let next = next as usize;
                sums.scored += 1.0;
                sums.clean += clean_norm - f64::from(c[next]);
                sums.spliced += spliced_norm - f64::from(s[next]);
                sums.zero += zero_norm - f64::from(z[next]);
            }
            sums.positions += 1.0;
            // KL(p ‖ q) = Σ p (log p − log q) = Σ p (c − q's logit) − (ln Z_c − ln Z_q),
            // as Σ p = 1: the clean row's exponentials are the only ones it needs.
            let (to_spliced, to_zero) = expected_gaps(&clean_exps, c, s, z);
            sums.kl_spliced += to_spliced - (clean_norm - spliced_norm);
            sums.kl_zero += to_zero - (clean_norm - zero_norm);
        }
        Ok(sums)
    }
}

/// One window's sums: predictions scored, the three losses, positions
/// scored for the KL and the two KLs.
#[derive(Default)]
struct Sums {
    scored: f64,
    clean: f64,
    spliced: f64,
    zero: f64,
    positions: f64,
    kl_spliced: f64,
    kl_zero: f64,
}

/// `ln Σ e^v` over `row`, in f64; with `exps`, also leaves there each
/// value's `e^(v − max)` over their sum, which is the softmax.
fn log_sum_exp(row: &[f32], exps: Option<&mut Vec<f64>>) -> f64 {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let shifted = row.iter().map(|&v| f64::from(v - max).exp());
    let sum = match exps {
        Some(exps) => {
            exps.clear();
            exps.extend(shifted);
            let sum: f64 = exps.iter().sum();
            exps.iter_mut().for_each(|e| *e /= sum);
            sum
        }
        None => shifted.sum(),
    };
    sum.ln() + f64::from(max)
}

/// `Σ p (c − s)` and `Σ p (c − z)`: the expected gaps, under the clean
/// softmax `p`, between the clean logits `c` and each other row's.
fn expected_gaps(p: &[f64], c: &[f32], s: &[f32], z: &[f32]) -> (f64, f64) {
    p.iter().zip(c.iter().zip(s.iter().zip(z))).fold(
        (0.0, 0.0),
        |(to_s, to_z), (&p, (&c, (&s, &z)))| {
            (
                to_s + p * (f64::from(c) - f64::from(s)),
                to_z + p * (f64::from(c) - f64::from(z)),
            )
        },
    )
}

/// Refuses a model other than the one `dataset` was recorded from (see
/// [`crate::identity`]).
pub(crate) fn check_recorded_from(model_path: &Path, dataset: &Dataset) -> Result<()> {
    let recorded = &dataset.metadata().vit_ckpt;
    let (same, hash) = crate::identity::matches(model_path, recorded)?;
    if !same {
        return Err(SaeError::OtherModel {
            model: model_path.to_path_buf(),
            hash,
            recorded: recorded.clone(),
        }
        .into());
    }
    Ok(())
}

/// [`check_recorded_from`] for a model whose id `hash` was computed as it
/// opened.
fn same_model(model_path: &Path, hash: &str, dataset: &Dataset) -> Result<()> {
    let recorded = &dataset.metadata().vit_ckpt;
    if hash != recorded.strip_suffix(" (int8)").unwrap_or(recorded) {
        return check_recorded_from(model_path, dataset);
    }
    Ok(())
}

/// Mean next-token cross-entropy (nats per token) of three passes over the
/// same windows, and the KL divergence of two of them to the clean one.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CrossEntropy {
    /// Windows run.
    pub windows: usize,
    /// Predictions scored (`window length − 1` per window, less those
    /// made from a special token).
    pub tokens: usize,
    /// The model as it is.
    pub clean: f64,
    /// With the site's rows replaced by their reconstruction.
    pub spliced: f64,
    /// With the site's rows replaced by zeros.
    pub zero_ablated: f64,
    /// `(zero_ablated − spliced) / (zero_ablated − clean)`: 1 when splicing
    /// loses nothing, 0 when it is as bad as erasing the site (SAELens's
    /// `ce_loss_score`).
    pub recovered: f64,
    /// Positions scored for the KL (every position of a window, less
    /// those holding a special token).
    pub kl_positions: usize,
    /// Mean `KL(clean ‖ spliced)` per position, in nats (SAELens's
    /// `kl_div_with_sae`).
    pub kl_spliced: f64,
    /// Mean `KL(clean ‖ zero-ablated)` per position (`kl_div_with_ablation`).
    pub kl_zero_ablated: f64,
    /// `(kl_zero_ablated − kl_spliced) / kl_zero_ablated` (`kl_div_score`).
    pub kl_recovered: f64,
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
            io: crate::sae::Io::default(),
        }
    }

    fn model() -> Model {
        let config = modelbin_format::tllm::Config {
            model_dim: 16,
            n_layers: 2,
            n_heads: 2,
            ffn_hidden_dim: 32,
            max_seq_len: 12,
            vocab_size: 256,
            dropout: 0.0,
        };
        Model::random(config, 3, 0.3).unwrap()
    }

    fn windows() -> Vec<Vec<u32>> {
        (0..4)
            .map(|w| (0..12).map(|i| (w * 31 + i * 7) % 256).collect())
            .collect()
    }

    #[test]
    fn an_exact_reconstruction_recovers_everything() {
        let splice = Splice::new(Target::tllm(model(), 0).unwrap(), windows(), Vec::new());
        let ce = splice.measure(&exact(16)).unwrap();
        assert_eq!((ce.windows, ce.tokens, ce.kl_positions), (4, 44, 48));
        assert!((ce.spliced - ce.clean).abs() < 1e-5, "{ce:?}");
        assert!(ce.zero_ablated != ce.clean);
        assert!((ce.recovered - 1.0).abs() < 1e-4, "{ce:?}");
        assert!(
            ce.kl_spliced.abs() < 1e-6 && ce.kl_zero_ablated > 0.0,
            "{ce:?}"
        );
        // The clean loss is the model's own: −log softmax of its logits.
        let ids = &windows()[0];
        let logits = model().session().extend(&ids[..2], true).unwrap();
        let row = &logits[..256];
        let p: f64 = row.iter().map(|&v| f64::from(v).exp()).sum();
        let first = p.ln() - f64::from(row[ids[1] as usize]);
        let one = Splice::new(
            Target::tllm(model(), 0).unwrap(),
            vec![ids[..2].to_vec()],
            Vec::new(),
        );
        assert!((one.measure(&exact(16)).unwrap().clean - first).abs() < 1e-9);
    }

    #[test]
    fn special_tokens_keep_their_rows_and_are_not_scored() {
        let ids = &windows()[0];
        // Every position special: nothing scored, nothing replaced.
        let splice = Splice::new(
            Target::tllm(model(), 1).unwrap(),
            vec![ids.clone()],
            ids.clone(),
        );
        let ce = splice.measure(&exact(16)).unwrap();
        assert_eq!((ce.tokens, ce.kl_positions), (0, 0));
        // One special token: one prediction and one position fewer.
        let splice = Splice::new(
            Target::tllm(model(), 1).unwrap(),
            vec![ids.clone()],
            vec![ids[3]],
        );
        let ce = splice.measure(&exact(16)).unwrap();
        assert_eq!((ce.tokens, ce.kl_positions), (10, 11));
    }

    #[test]
    fn mismatches_are_refused() {
        let splice = Splice::new(Target::tllm(model(), 0).unwrap(), windows(), Vec::new());
        assert!(matches!(
            splice.measure(&exact(8)),
            Err(crate::Error::Sae(SaeError::ModelWidth {
                sae: 8,
                model: 16
            }))
        ));
        assert!(matches!(
            Target::tllm(model(), 2),
            Err(crate::Error::Lm(LmError::NoSuchLayer {
                layer: 2,
                layers: 2
            }))
        ));
        assert!(Target::tllm(model(), -2).is_ok());
    }
}
