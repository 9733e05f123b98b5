//! The encoder itself: post-LayerNorm transformer layers with biased
//! attention and exact-erf GELU, run over packed batches. Linear layers
//! stored as int8 multiply with integer kernels; attention, softmax,
//! LayerNorm and GELU stay in f32.
//!
//! A batch is the token rows of several sequences laid end to end, with no
//! padding: the linear layers see one tall matrix (rows split across the
//! rayon pool), attention runs per sequence and head.

use std::sync::Arc;

use modelbin_format::embd::Embd;
use modelbin_format::io::source::MappedFile;
use modelbin_format::model::BertConfig;
use rayon::prelude::*;

use crate::nn::attention::{
    add_in_place, attention, check_forward_memory, layer_norm_rows, rows_per_task,
};
use crate::nn::f32_tensor::{F32Tensor, decoded};
use crate::nn::int8::Int8Kernel;
use crate::nn::kernels::gelu_erf;
use crate::nn::linear::LinearWeights;
use crate::nn::word_table::WordTable;
use crate::{Error, Result};

/// One encoder layer's weights; matrices packed for `x · Wᵀ`.
#[derive(Debug, Clone)]
struct Layer {
    /// Query, key and value weights stacked: `[3h, h]`.
    qkv_w: LinearWeights,
    qkv_b: Vec<f32>,
    attn_out_w: LinearWeights,
    attn_out_b: Vec<f32>,
    ln1_w: Vec<f32>,
    ln1_b: Vec<f32>,
    ffn_in_w: LinearWeights,
    ffn_in_b: Vec<f32>,
    ffn_out_w: LinearWeights,
    ffn_out_b: Vec<f32>,
    ln2_w: Vec<f32>,
    ln2_b: Vec<f32>,
}

/// A BERT encoder with its weights in memory: f32, and the linear layers
/// int8 where the file stores them so.
#[derive(Debug, Clone)]
pub struct Bert {
    config: BertConfig,
    int8_kernel: Int8Kernel,
    /// The word embeddings, the largest tensor (47 MB of all-MiniLM-L6-v2's
    /// 91 in f32, 12 MB in int8): in place when the file is mapped, so
    /// opening a model reads only the rows its texts use.
    word: WordTable,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_ln_w: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
}

/// Refuses an EMBD file whose float weights hold a NaN or an infinity,
/// naming the first: one such weight makes every embedding and recorded
/// vector NaN. One pass over the file's tensors (the word table's pages
/// included, which a mapped load would otherwise read only as texts use
/// them: the price of knowing at load).
fn check_finite<B: AsRef<[u8]>>(embd: &Embd<B>) -> Result<()> {
    use modelbin_format::TensorStore;
    Ok(modelbin_format::any::check_finite(embd.tensors())?)
}

impl Bert {
    /// Loads the encoder of a validated EMBD file, checking that its tensors
    /// make the model its metadata describes and hold no NaN or infinity
    /// ([`modelbin_format::ModelError::NonFinite`], naming the tensor).
    pub fn load<B: AsRef<[u8]> + Sync>(embd: &Embd<B>) -> Result<Self> {
        let config = BertConfig::validate(embd)?;
        check_finite(embd)?;
        let word = WordTable::load(embd)?;
        Bert::build(embd, config, word, &|name| F32Tensor::load(embd, name))
    }

    /// Loads the encoder of a mapped EMBD file, keeping the file open to
    /// read its F32 word embeddings and linear weights in place (see
    /// [`Bert::load`]).
    pub fn load_mapped(file: Arc<Embd<MappedFile>>) -> Result<Self> {
        let config = BertConfig::validate(&*file)?;
        check_finite(&*file)?;
        let word = WordTable::of(&file)?;
        Bert::build(&*file, config, word, &|name| F32Tensor::of(&file, name))
    }

    /// The encoder of `embd` with its word embeddings `word`, its float
    /// linear weights taken through `floats`.
    fn build<B: AsRef<[u8]> + Sync>(
        embd: &Embd<B>,
        config: BertConfig,
        word: WordTable,
        floats: &(dyn Fn(&str) -> Result<F32Tensor> + Sync),
    ) -> Result<Self> {
        let (h, f) = (config.hidden_size, config.intermediate_size);
        let layers = (0..config.num_layers)
            .into_par_iter()
            .map(|i| {
                let name = |suffix: &str| format!("encoder.layer.{i}.{suffix}");
                let t = |suffix: &str| decoded(embd, &name(suffix));
                let linear = |suffixes: &[&str], k| {
                    let names: Vec<String> = suffixes.iter().map(|s| name(s)).collect();
                    LinearWeights::load(embd, floats, &names, k)
                };
                let mut qkv_b = t("attention.self.query.bias")?;
                qkv_b.extend(t("attention.self.key.bias")?);
                qkv_b.extend(t("attention.self.value.bias")?);
                Ok(Layer {
                    qkv_w: linear(
                        &[
                            "attention.self.query.weight",
                            "attention.self.key.weight",
                            "attention.self.value.weight",
                        ],
                        h,
                    )?,
                    qkv_b,
                    attn_out_w: linear(&["attention.output.dense.weight"], h)?,
                    attn_out_b: t("attention.output.dense.bias")?,
                    ln1_w: t("attention.output.LayerNorm.weight")?,
                    ln1_b: t("attention.output.LayerNorm.bias")?,
                    ffn_in_w: linear(&["intermediate.dense.weight"], h)?,
                    ffn_in_b: t("intermediate.dense.bias")?,
                    ffn_out_w: linear(&["output.dense.weight"], f)?,
                    ffn_out_b: t("output.dense.bias")?,
                    ln2_w: t("output.LayerNorm.weight")?,
                    ln2_b: t("output.LayerNorm.bias")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Bert {
            config,
            int8_kernel: crate::Kernels::chosen()?.int8,
            word,
            position: decoded(embd, "embeddings.position_embeddings.weight")?,
            token_type: decoded(embd, "embeddings.token_type_embeddings.weight")?,
            emb_ln_w: decoded(embd, "embeddings.LayerNorm.weight")?,
            emb_ln_b: decoded(embd, "embeddings.LayerNorm.bias")?,
            layers,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// The word-piece (input) embeddings, `[vocab_size, hidden_size]`
    /// row-major (an int8 table dequantized with its row scales).
    pub fn word_embeddings(&self) -> Vec<f32> {
        let hidden = self.config.hidden_size;
        let mut table = vec![0.0; self.config.vocab_size * hidden];
        for (id, row) in table.chunks_exact_mut(hidden).enumerate() {
            self.word.row(id, row);
        }
        table
    }

    /// Whether any linear layer runs on int8 weights.
    pub fn is_int8(&self) -> bool {
        self.layers.iter().any(|l| {
            [&l.qkv_w, &l.attn_out_w, &l.ffn_in_w, &l.ffn_out_w]
                .iter()
                .any(|w| w.is_int8())
        })
    }

    /// The kernel the int8 layers use: by default the process's
    /// ([`Kernels::chosen`](crate::Kernels::chosen)).
    pub fn int8_kernel(&self) -> Int8Kernel {
        self.int8_kernel
    }

    /// Runs the int8 layers with `kernel` instead of the process's (to
    /// compare kernels in one process), which must be one this CPU can run
    /// ([`Int8Kernel::available`]).
    pub fn set_int8_kernel(&mut self, kernel: Int8Kernel) -> Result<()> {
        if !kernel.is_available() {
            return Err(Error::KernelUnavailable(kernel.name()));
        }
        self.int8_kernel = kernel;
        Ok(())
    }

    /// Final hidden states of a packed batch: `sequences` (token ids, each
    /// at most `max_position` long, all with token type 0) laid end to end,
    /// `[total tokens, hidden]` row-major.
    pub fn forward(&self, sequences: &[&[u32]]) -> Result<Vec<f32>> {
        self.run_blocks(sequences, self.layers.len(), &mut |_, _| {})
    }

    /// The hidden states of a packed batch after each block of `blocks`
    /// (0 is the first; Hugging Face's `hidden_states[block + 1]`), one
    /// `[total tokens, hidden]` matrix per entry, in the order asked. The
    /// pass stops after the last block asked for.
    pub fn hidden_states(&self, sequences: &[&[u32]], blocks: &[usize]) -> Result<Vec<Vec<f32>>> {
        let layers = self.layers.len();
        if let Some(&block) = blocks.iter().find(|&&b| b >= layers) {
            return Err(Error::Format(modelbin_format::Error::InvalidArgument(
                format!("block {block} of a model with {layers} blocks"),
            )));
        }
        let last = blocks.iter().max().map_or(0, |&b| b + 1);
        let mut out = vec![Vec::new(); blocks.len()];
        self.run_blocks(sequences, last, &mut |block, x| {
            for (slot, _) in blocks.iter().enumerate().filter(|(_, b)| **b == block) {
                out[slot] = x.to_vec();
            }
        })?;
        Ok(out)
    }

    /// Embeddings, then the first `blocks` blocks; `observe` sees each
    /// block's output. Returns the last output.
    fn run_blocks(
        &self,
        sequences: &[&[u32]],
        blocks: usize,
        observe: &mut dyn FnMut(usize, &[f32]),
    ) -> Result<Vec<f32>> {
        let c = &self.config;
        let h = c.hidden_size;
        let rows: usize = sequences.iter().map(|s| s.len()).sum();
        check_forward_memory(rows, (h, c.intermediate_size), rows * h, || {
            format!(
                "a forward pass over {} texts ({rows} tokens)",
                sequences.len()
            )
        })?;
        let mut x = self.embed(sequences)?;
        let mut scratch = Scratch::new(rows, &self.config);
        for (index, layer) in self.layers.iter().enumerate().take(blocks) {
            self.layer(layer, sequences, &mut x, &mut scratch);
            observe(index, &x);
        }
        Ok(x)
    }

    /// Word + position + token-type embeddings, then LayerNorm.
    fn embed(&self, sequences: &[&[u32]]) -> Result<Vec<f32>> {
        let c = &self.config;
        let h = c.hidden_size;
        let rows: usize = sequences.iter().map(|s| s.len()).sum();
        let mut sum = vec![0.0f32; rows * h];
        let mut row = 0;
        for seq in sequences {
            if seq.len() > c.max_position {
                return Err(Error::SequenceTooLong {
                    len: seq.len(),
                    max: c.max_position as u32,
                });
            }
            for (position, &id) in seq.iter().enumerate() {
                if id as usize >= c.vocab_size {
                    return Err(Error::TokenOutOfRange {
                        id,
                        position,
                        vocab_size: c.vocab_size as u32,
                    });
                }
                let out = &mut sum[row * h..(row + 1) * h];
                self.word.row(id as usize, out);
                let pos = &self.position[position * h..(position + 1) * h];
                for i in 0..h {
                    out[i] = out[i] + pos[i] + self.token_type[i];
                }
                row += 1;
            }
        }
        let mut x = vec![0.0f32; rows * h];
        self.norm_rows(&sum, &self.emb_ln_w, &self.emb_ln_b, &mut x);
        Ok(x)
    }

    fn norm_rows(&self, input: &[f32], w: &[f32], b: &[f32], out: &mut [f32]) {
        let c = &self.config;
        layer_norm_rows(input, (w, b), out, c.hidden_size, c.layer_norm_eps);
    }

    /// One post-LN encoder layer, in place on `x`.
    fn layer(&self, l: &Layer, sequences: &[&[u32]], x: &mut [f32], s: &mut Scratch) {
        let f = self.config.intermediate_size;
        let kernel = self.int8_kernel;
        l.qkv_w.apply(x, &l.qkv_b, &mut s.qkv, kernel);
        let mut spans = Vec::with_capacity(sequences.len());
        let mut row = 0;
        for seq in sequences {
            spans.push((row, seq.len()));
            row += seq.len();
        }
        let c = &self.config;
        attention(&spans, &s.qkv, &mut s.context, c.hidden_size, c.num_heads);
        l.attn_out_w
            .apply(&s.context, &l.attn_out_b, &mut s.hidden, kernel);
        add_in_place(&mut s.hidden, x);
        self.norm_rows(&s.hidden, &l.ln1_w, &l.ln1_b, x);
        l.ffn_in_w
            .apply(x, &l.ffn_in_b, &mut s.intermediate, kernel);
        s.intermediate
            .par_chunks_mut(f * rows_per_task(x.len() / self.config.hidden_size))
            .for_each(gelu_erf);
        l.ffn_out_w
            .apply(&s.intermediate, &l.ffn_out_b, &mut s.hidden, kernel);
        add_in_place(&mut s.hidden, x);
        self.norm_rows(&s.hidden, &l.ln2_w, &l.ln2_b, x);
    }
}

/// Buffers reused across the layers of one forward pass.
struct Scratch {
    qkv: Vec<f32>,
    context: Vec<f32>,
    hidden: Vec<f32>,
    intermediate: Vec<f32>,
}

impl Scratch {
    fn new(rows: usize, c: &BertConfig) -> Self {
        let h = c.hidden_size;
        Scratch {
            qkv: vec![0.0; rows * 3 * h],
            context: vec![0.0; rows * h],
            hidden: vec![0.0; rows * h],
            intermediate: vec![0.0; rows * c.intermediate_size],
        }
    }
}
