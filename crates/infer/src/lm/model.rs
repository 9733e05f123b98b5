//! The model: loading, the batched pass over whole windows that recording
//! runs (the residual stream at a site of some layers), and logits.

use std::path::Path;

use rayon::prelude::*;

use crate::hf::weights::Weights;
use crate::lm::block::{Block, Keys, Rows, Scratch};
use crate::lm::config::LmConfig;
use crate::lm::rope::{RopeTable, RopeTables};
use crate::lm::weights;
use crate::model::Site;
use crate::nn::attention::{CausalSpan, check_forward_memory};
use crate::nn::int8::Int8Kernel;
use crate::{Error, LmError, Result};

/// A session's keys and values, per layer (`[position, kv_heads · head_dim]`).
pub(crate) struct KvCache<'a> {
    pub keys: &'a mut [Vec<f32>],
    pub values: &'a mut [Vec<f32>],
}

/// How to load a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Quantize the blocks' linear layers (attention and MLP) to int8,
    /// with a scale per block of 32 inputs of each weight row, their
    /// inputs quantized row by row as they come: faster, less exact (the
    /// residual stream differs from the f32 model's by about a percent).
    /// Embeddings, norms, attention itself and the output projection stay
    /// in f32.
    pub int8: bool,
}

impl LoadOptions {
    /// The default options with `int8` set as given.
    pub fn int8(int8: bool) -> LoadOptions {
        LoadOptions { int8 }
    }
}

/// A decoder language model (GPT-2, GPT-NeoX, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3) loaded from a
/// Hugging Face model directory, its weights in memory as f32 (or int8).
#[derive(Debug, Clone)]
pub struct LanguageModel {
    /// The directory it was loaded from.
    dir: std::path::PathBuf,
    pub(crate) config: LmConfig,
    pub(crate) embed: Vec<f32>,
    pub(crate) positions: Option<Vec<f32>>,
    pub(crate) blocks: Vec<Block>,
    pub(crate) final_norm: crate::lm::block::Norm,
    pub(crate) head: crate::nn::linear::LinearWeights,
    pub(crate) int8_kernel: Int8Kernel,
}

impl LanguageModel {
    /// Loads the Hugging Face model directory `dir`: `config.json`, and
    /// `model.safetensors` or the shards of `model.safetensors.index.json`,
    /// as `save_pretrained` writes them (a cache snapshot of the Hub is
    /// such a directory). F32, F16 and BF16 weights are widened to f32.
    pub fn open(dir: &Path) -> Result<LanguageModel> {
        LanguageModel::open_with(dir, LoadOptions::default())
    }

    /// [`LanguageModel::open`] with `options`.
    pub fn open_with(dir: &Path, options: LoadOptions) -> Result<LanguageModel> {
        let config = LmConfig::read(dir)?;
        let mut w = Weights::open(dir, "")?;
        let layout = config.family.layout(&w);
        let (outer, mut blocks) = weights::load(&config, &mut w, &layout)?;
        if options.int8 {
            blocks.par_iter_mut().for_each(|b| {
                for linear in b.linears_mut() {
                    linear.weights = linear.weights.to_int8();
                }
            });
        }
        Ok(LanguageModel {
            dir: dir.to_path_buf(),
            config,
            embed: outer.embed,
            positions: outer.positions,
            blocks,
            final_norm: outer.final_norm,
            head: outer.head,
            int8_kernel: crate::Kernels::chosen()?.int8,
        })
    }

    /// The directory the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration.
    pub fn config(&self) -> &LmConfig {
        &self.config
    }

    /// Whether the blocks' linear layers run on int8 weights.
    pub fn is_int8(&self) -> bool {
        self.blocks.iter().any(|b| b.qkv.weights.is_int8())
    }

    /// Refuses ids outside the vocabulary, and positions
    /// `start..start + ids.len()` past the model's context.
    pub(crate) fn check_ids(&self, ids: &[u32], start: usize, context: usize) -> Result<()> {
        let vocab = self.config.vocab_size;
        if let Some((i, &id)) = ids
            .iter()
            .enumerate()
            .find(|&(_, &id)| id as usize >= vocab)
        {
            return Err(Error::TokenOutOfRange {
                id,
                position: start + i,
                vocab_size: vocab as u32,
            });
        }
        if context > self.config.max_positions {
            return Err(Error::SequenceTooLong {
                len: context,
                max: self.config.max_positions as u32,
            });
        }
        Ok(())
    }

    /// The embeddings of `ids` at `positions`, `[ids.len(), hidden]`.
    pub(crate) fn embed(&self, ids: &[u32], positions: &[usize]) -> Vec<f32> {
        let h = self.config.hidden;
        let mut x = vec![0.0f32; ids.len() * h];
        x.par_chunks_mut(h)
            .zip(ids.par_iter().zip(positions))
            .for_each(|(row, (&id, &p))| {
                row.copy_from_slice(&self.embed[id as usize * h..(id as usize + 1) * h]);
                if let Some(scale) = self.config.features.embed_scale {
                    row.iter_mut().for_each(|x| *x *= scale);
                }
                if let Some(table) = &self.positions {
                    for (x, q) in row.iter_mut().zip(&table[p * h..(p + 1) * h]) {
                        *x += q;
                    }
                }
            });
        x
    }

    /// The rotary tables of positions `first..first + count` (none for a
    /// model without rotary embeddings).
    pub(crate) fn rope_tables(&self, first: usize, count: usize) -> RopeTables {
        let table = |rope: &Option<_>| rope.as_ref().map(|r| RopeTable::new(r, first, count));
        RopeTables {
            full: table(&self.config.rope),
            sliding: table(&self.config.features.sliding_rope),
        }
    }

    /// Refuses a pass over `rows` rows whose buffers (and `extra` floats
    /// more) do not fit in memory.
    pub(crate) fn check_memory(
        &self,
        rows: usize,
        extra: usize,
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        check_forward_memory(
            rows,
            (0, Scratch::floats_per_row(&self.config)),
            extra,
            what,
        )
    }

    /// Runs the blocks `0..=last` over `x` (rows of `rows`), calling
    /// `hook(layer, site, rows)` at each site.
    pub(crate) fn run_blocks(
        &self,
        x: &mut [f32],
        rows: &Rows<'_>,
        last: usize,
        cache: Option<KvCache<'_>>,
        hook: &mut dyn FnMut(usize, Site, &mut [f32]),
    ) {
        let n = x.len() / self.config.hidden;
        let mut scratch = Scratch::new(n, &self.config);
        let mut cache = cache;
        for (layer, block) in self.blocks.iter().enumerate().take(last + 1) {
            let kv = match &mut cache {
                Some(cache) => Keys::Cached {
                    keys: &mut cache.keys[layer],
                    values: &mut cache.values[layer],
                },
                None => Keys::Fresh,
            };
            block.forward(
                layer,
                &self.config,
                x,
                rows,
                kv,
                &mut scratch,
                self.int8_kernel,
                &mut |site, rows| hook(layer, site, rows),
            );
        }
    }

    /// Logits `[rows, vocab]` of the residual rows `x` (final norm, then
    /// the output projection).
    pub(crate) fn head_logits(&self, x: &[f32]) -> Result<Vec<f32>> {
        let c = &self.config;
        let rows = x.len() / c.hidden;
        let mut normed = vec![0.0f32; x.len()];
        self.final_norm.apply(x, &mut normed, c.hidden, c.norm_eps);
        let mut logits = vec![0.0f32; rows * c.vocab_size];
        let zeros = vec![0.0f32; c.vocab_size];
        self.head
            .apply(&normed, &zeros, &mut logits, self.int8_kernel);
        if let Some(cap) = c.features.final_softcap {
            logits
                .par_chunks_mut(4096)
                .for_each(|l| l.iter_mut().for_each(|v| *v = (*v / cap).tanh() * cap));
        }
        crate::error::finite(logits, "the logits")
    }

    /// `rows · W_Uᵀ`: what each row of `rows` (`[n, hidden]`) adds to
    /// each token's logit through the unembedding alone (no final norm;
    /// for a tied model the embedding), `[n, vocab]`.
    pub fn unembed(&self, rows: &[f32]) -> Vec<f32> {
        let c = &self.config;
        let mut out = vec![0.0f32; rows.len() / c.hidden * c.vocab_size];
        let zeros = vec![0.0f32; c.vocab_size];
        self.head.apply(rows, &zeros, &mut out, self.int8_kernel);
        out
    }

    /// The residual stream at `site` of each layer of `layers` (0 is the
    /// first block) over `ids`, which are whole windows of `window` tokens:
    /// independent sequences, each from position 0. Returns one
    /// `[ids.len(), hidden]` matrix per entry of `layers`, in the order
    /// asked. All windows go through each linear layer as one tall
    /// matrix; the pass stops after the last layer asked for. This is what
    /// recording runs.
    pub fn activations(
        &self,
        ids: &[u32],
        window: usize,
        layers: &[usize],
        site: Site,
    ) -> Result<Vec<Vec<f32>>> {
        let c = &self.config;
        if window == 0 || !ids.len().is_multiple_of(window) {
            return Err(LmError::NotWholeWindows {
                ids: ids.len(),
                window,
            }
            .into());
        }
        if let Some(&layer) = layers.iter().find(|&&l| l >= c.layers) {
            return Err(LmError::NoSuchLayer {
                layer,
                layers: c.layers,
            }
            .into());
        }
        self.check_ids(ids, 0, window)?;
        let mut out = vec![Vec::new(); layers.len()];
        let Some(&last) = layers.iter().max() else {
            return Ok(out);
        };
        if ids.is_empty() {
            return Ok(out);
        }
        let copies = layers
            .len()
            .saturating_mul(ids.len())
            .saturating_mul(c.hidden);
        self.check_memory(ids.len(), copies, || {
            format!(
                "a forward pass over {} windows of {window} tokens",
                ids.len() / window
            )
        })?;
        let positions: Vec<usize> = (0..ids.len()).map(|i| i % window).collect();
        let spans: Vec<CausalSpan> = (0..ids.len() / window)
            .map(|w| CausalSpan {
                queries: w * window,
                len: window,
                keys: w * window,
                past: 0,
            })
            .collect();
        let tables = self.rope_tables(0, window);
        let rows = Rows {
            spans: &spans,
            positions: &positions,
            rope: &tables,
            rope_first: 0,
        };
        let mut x = self.embed(ids, &positions);
        self.run_blocks(&mut x, &rows, last, None, &mut |layer, at, values| {
            if at == site {
                for (slot, _) in layers.iter().enumerate().filter(|(_, l)| **l == layer) {
                    out[slot] = values.to_vec();
                }
            }
        });
        Ok(out)
    }
}
