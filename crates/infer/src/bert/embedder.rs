//! Sentence embeddings: WordPiece tokens → BERT → pooling → L2 norm, as
//! sentence-transformers computes them.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use modelbin_format::convert::{HfOptions, from_hf_dir};
use modelbin_format::embd::{self, Embd};
use modelbin_format::model::{BertConfig, Pooling};
use modelbin_tokenize::WordPiece;
use rayon::prelude::*;

use crate::Result;
use crate::bert::Bert;

/// Tokens packed into one forward pass by default.
pub const DEFAULT_BATCH_TOKENS: usize = 4096;

/// A sentence embedder: an EMBD model with its tokenizer. Thread-safe
/// (`Send + Sync`); calls use the current rayon pool.
#[derive(Debug, Clone)]
pub struct Embedder {
    bert: Bert,
    tokenizer: WordPiece,
    batch_tokens: usize,
}

/// The embeddings of some texts, and how many of them were cut to the
/// model's `max_seq_length` tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// One vector per text, in order.
    pub vectors: Vec<Vec<f32>>,
    /// Texts longer than `max_seq_length` tokens, embedded from their
    /// beginning.
    pub truncated: usize,
}

impl Embedder {
    /// Opens an EMBD file and loads its model and vocabulary. The file
    /// stays mapped while the embedder lives (F32 word embeddings are read
    /// in place, and F32 linear weights until their second product packs
    /// them), so it must not be truncated or rewritten in place meanwhile;
    /// replacing it by a rename, as modelbin's writers do, is safe.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let file = std::sync::Arc::new(embd::open(path)?);
        let bert = Bert::load_mapped(std::sync::Arc::clone(&file))?;
        Embedder::with_encoder(&file, bert)
    }

    /// Opens `path`: an EMBD file, or a Hugging Face / sentence-transformers
    /// model directory, converted to EMBD in a temporary file that is
    /// removed once loaded (the loaded model keeps what it needs).
    pub fn open_model(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if !path.is_dir() {
            return Embedder::open(path);
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let temp = std::env::temp_dir().join(format!(
            "modelbin-{}-{}.embd",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let loaded = from_hf_dir(path, &temp, HfOptions::default(), &mut |_, _| {})
            .map_err(crate::Error::from)
            // Loaded into memory, not mapped: the temporary file goes now.
            .and_then(|_| Embedder::from_embd(&embd::open(&temp)?));
        let _ = std::fs::remove_file(&temp);
        loaded
    }

    /// Loads the model and vocabulary of a validated EMBD file.
    pub fn from_embd<B: AsRef<[u8]> + Sync>(file: &Embd<B>) -> Result<Self> {
        Embedder::with_encoder(file, Bert::load(file)?)
    }

    /// The embedder of `file` around its loaded encoder.
    fn with_encoder<B: AsRef<[u8]>>(file: &Embd<B>, bert: Bert) -> Result<Self> {
        let specials = file
            .special_tokens()
            .expect("BertConfig::validate requires a vocabulary");
        let tokens = file.tokens().map(Box::from).collect();
        let tokenizer = WordPiece::new(tokens, specials, bert.config().lowercase)?;
        Ok(Embedder {
            bert,
            tokenizer,
            batch_tokens: DEFAULT_BATCH_TOKENS,
        })
    }

    /// Packs at most `tokens` tokens into one forward pass (at least one
    /// sequence always goes in).
    pub fn with_batch_tokens(mut self, tokens: usize) -> Self {
        self.batch_tokens = tokens.max(1);
        self
    }

    /// The model configuration.
    pub fn config(&self) -> &BertConfig {
        self.bert.config()
    }

    /// Width of the embeddings.
    pub fn dim(&self) -> usize {
        self.config().embedding_dim
    }

    /// The BERT encoder.
    pub fn encoder(&self) -> &Bert {
        &self.bert
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// Runs int8 layers with `kernel` instead of the fastest this CPU runs
    /// (to compare kernels); an error if this CPU cannot run it.
    pub fn set_int8_kernel(&mut self, kernel: crate::Int8Kernel) -> Result<()> {
        self.bert.set_int8_kernel(kernel)
    }

    /// The model input for `text`: `[CLS]` … `[SEP]`, truncated to
    /// `max_seq_length`.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, self.config().max_seq_length)
    }

    /// One embedding per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(self.embed_counting_truncations(texts)?.vectors)
    }

    /// One embedding per text, in order, with how many of the texts were
    /// longer than `max_seq_length` and cut to fit (told by the one
    /// tokenization the embeddings are made from).
    pub fn embed_counting_truncations(&self, texts: &[&str]) -> Result<Embeddings> {
        let max_len = self.config().max_seq_length;
        let (ids, cut): (Vec<Vec<u32>>, Vec<bool>) = texts
            .par_iter()
            .map(|t| self.tokenizer.encode_with_truncation(t, max_len))
            .unzip();
        Ok(Embeddings {
            vectors: self.embed_ids(&ids)?,
            truncated: cut.iter().filter(|&&cut| cut).count(),
        })
    }

    /// The final hidden state of every token of each text (`[CLS]` and
    /// `[SEP]` included), `[tokens, hidden]` row-major per text: what
    /// sentence-transformers calls `token_embeddings`, before pooling.
    pub fn token_embeddings(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let ids: Vec<Vec<u32>> = texts.par_iter().map(|t| self.tokenize(t)).collect();
        let hidden = self.config().hidden_size;
        let mut out = Vec::with_capacity(ids.len());
        for batch in self.packed(&ids) {
            let batch: Vec<&[u32]> = ids[batch].iter().map(Vec::as_slice).collect();
            let states = rayon::scope(|_| self.bert.forward(&batch))?;
            let mut rows = states.chunks_exact(hidden);
            for sequence in &batch {
                out.push(
                    rows.by_ref()
                        .take(sequence.len())
                        .flatten()
                        .copied()
                        .collect(),
                );
            }
        }
        Ok(out)
    }

    /// One embedding per token sequence (model inputs with `[CLS]`/`[SEP]`).
    /// Sequences are sorted by length and packed into batches of about
    /// `batch_tokens` tokens without padding.
    ///
    /// Called from outside the rayon pool, the whole call moves onto one of
    /// its threads once, instead of handing over each parallel step (at one
    /// thread that hand-over cost a sixth of a short sentence's time).
    pub fn embed_ids(&self, sequences: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        rayon::scope(|_| self.embed_ids_in_pool(sequences))
    }

    fn embed_ids_in_pool(&self, sequences: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..sequences.len()).collect();
        order.sort_by_key(|&i| sequences[i].len());
        let sorted: Vec<&[u32]> = order.iter().map(|&i| sequences[i].as_slice()).collect();
        let mut out = vec![Vec::new(); sequences.len()];
        for batch in self.packed(&sorted) {
            let pooled = self.embed_batch(&sorted[batch.clone()])?;
            for (&i, vector) in order[batch].iter().zip(pooled) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    /// `sequences` cut into runs of about `batch_tokens` tokens (each run
    /// holds at least one sequence), as index ranges.
    fn packed(&self, sequences: &[impl AsRef<[u32]>]) -> Vec<std::ops::Range<usize>> {
        let mut batches = Vec::new();
        let mut start = 0;
        while start < sequences.len() {
            let mut end = start + 1;
            let mut tokens = sequences[start].as_ref().len();
            while end < sequences.len()
                && tokens + sequences[end].as_ref().len() <= self.batch_tokens
            {
                tokens += sequences[end].as_ref().len();
                end += 1;
            }
            batches.push(start..end);
            start = end;
        }
        batches
    }

    fn embed_batch(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let hidden = self.bert.forward(batch)?;
        let c = self.config();
        let h = c.hidden_size;
        let mut row = 0;
        let mut out = Vec::with_capacity(batch.len());
        for seq in batch {
            let rows = &hidden[row * h..(row + seq.len()) * h];
            row += seq.len();
            let mut vector = pool(rows, h, c.pooling);
            if c.normalize {
                l2_normalize(&mut vector);
            }
            out.push(crate::error::finite(vector, "the embedding")?);
        }
        Ok(out)
    }
}

/// Pools the `h`-wide token rows of one sequence into one vector.
fn pool(rows: &[f32], h: usize, pooling: Pooling) -> Vec<f32> {
    let count = rows.len() / h;
    match pooling {
        Pooling::Cls => rows[..h].to_vec(),
        Pooling::Mean => {
            let mut sum = vec![0.0f64; h];
            for row in rows.chunks_exact(h) {
                sum.iter_mut()
                    .zip(row)
                    .for_each(|(s, &v)| *s += f64::from(v));
            }
            sum.iter().map(|s| (s / count as f64) as f32).collect()
        }
        Pooling::Max => {
            let mut max = vec![f32::NEG_INFINITY; h];
            for row in rows.chunks_exact(h) {
                max.iter_mut().zip(row).for_each(|(m, &v)| *m = m.max(v));
            }
            max
        }
    }
}

/// Scales `v` to unit length (sentence-transformers' `Normalize`, which
/// divides by max(‖v‖, 1e-12)).
fn l2_normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    let scale = 1.0 / norm.max(1e-12);
    v.iter_mut()
        .for_each(|x| *x = (f64::from(*x) * scale) as f32);
}

/// Cosine similarity of two vectors (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na.sqrt() * nb.sqrt())) as f32
    }
}
