//! Text recordings: one SAEV image per window of tokens, the windows'
//! token ids kept beside the shards (`tokens.bin`, and the vocabulary for
//! WordPiece ids).
//!
//! A TLLM model reads bytes; a BERT model (an EMBD file or a Hugging Face
//! directory) reads WordPiece tokens, each window run as `[CLS] window
//! [SEP]`.

use std::path::{Path, PathBuf};

use modelbin_format::Format;
use modelbin_format::io::checksum::{hex, sha256};
use modelbin_format::io::source::MappedFile;
use modelbin_format::io::texts::{TextFormat, Texts};
use modelbin_format::saev::Metadata;
use rayon::prelude::*;

use super::{Output, blocks_of, checkpoint_id};
use crate::bert::Embedder;
use crate::tllm::Model;
use crate::{RecordError, Result};

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSettings {
    /// Blocks whose output is recorded (0 is the first; negative values
    /// count from the end, -1 is the last).
    pub layers: Vec<i64>,
    /// Tokens per window, one SAEV image each (`None`: the model's
    /// context; for BERT its max_seq_length less the CLS and SEP tokens).
    pub tokens_per_text: Option<usize>,
    /// BERT: also record the CLS row of each window, as the CLS token.
    pub cls: bool,
    /// The budget of vectors per shard.
    pub max_patches_per_shard: u64,
    /// How the text files are read (plain or JSON Lines, and which field).
    pub text_format: TextFormat,
}

impl Default for RecordSettings {
    /// The last block, the model's context, no CLS, 2,400,000 vectors per
    /// shard: the command line's defaults.
    fn default() -> Self {
        RecordSettings {
            layers: vec![-1],
            tokens_per_text: None,
            cls: false,
            max_patches_per_shard: 2_400_000,
            text_format: TextFormat::default(),
        }
    }
}

/// Tokens computed together before their windows are written in order.
const TOKENS_PER_ROUND: usize = 16_384;

/// The text being recorded and how far it got.
pub(super) struct TextSource {
    model: RecordedModel,
    blocks: Vec<usize>,
    cls: bool,
    window: usize,
    ids: Vec<u32>,
    /// Windows recorded.
    written: usize,
}

impl TextSource {
    /// Opens the model, reads and tokenizes `files` (concatenated in
    /// order), checks the settings, and starts the dataset under `root`.
    pub(super) fn start(
        model_path: &Path,
        files: &[PathBuf],
        settings: RecordSettings,
        root: &Path,
    ) -> Result<(TextSource, Output)> {
        let model = RecordedModel::open(model_path)?;
        if settings.cls && matches!(model, RecordedModel::Tllm(_)) {
            return Err(RecordError::NoClsToken.into());
        }
        let blocks = blocks_of(&settings.layers, model.blocks())?;
        let (longest, default) = model.windows();
        if longest == 0 {
            return Err(RecordError::NoRoom {
                path: model_path.to_path_buf(),
            }
            .into());
        }
        let window = settings.tokens_per_text.unwrap_or(default.max(1));
        if window > longest {
            return Err(RecordError::WindowTooLong { window, longest }.into());
        }
        let files = settings.text_format.text_files(files)?;
        let (mut ids, described) = model.read_files(&files, &settings.text_format)?;
        let n_imgs = ids.len() / window;
        if n_imgs == 0 {
            return Err(RecordError::TooFewTokens {
                tokens: ids.len(),
                window,
            }
            .into());
        }
        ids.truncate(n_imgs * window);
        let tokens = match model {
            RecordedModel::Tllm(_) => "bytes (token id = byte value)",
            RecordedModel::Bert(_) => {
                "WordPiece ids of the model's vocabulary, without [CLS]/[SEP]"
            }
        };
        let metadata = Metadata {
            vit_family: model.family().into(),
            vit_ckpt: checkpoint_id(model_path)?,
            layers: settings.layers.clone(),
            n_patches_per_img: window as u64,
            cls_token: settings.cls,
            d_vit: model.width() as u64,
            seed: 0,
            n_imgs: n_imgs as u64,
            max_patches_per_shard: settings.max_patches_per_shard,
            data: serde_json::json!({
                "files": described,
                "tokens": tokens,
                "vocab_size": model.vocab_size(),
                "token_ids": "tokens.bin: u32 little-endian, [n_imgs, n_patches_per_img]",
                "windowing": format!("consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"),
            }),
        };
        let output = Output::start(root, metadata, |writer| {
            Ok(writer.write_tokens(&ids, model.vocabulary().as_deref())?)
        })?;
        let source = TextSource {
            model,
            blocks,
            cls: settings.cls,
            window,
            ids,
            written: 0,
        };
        Ok((source, output))
    }

    /// Tokens to record.
    pub(super) fn tokens_total(&self) -> u64 {
        self.ids.len() as u64
    }

    /// Tokens recorded so far.
    pub(super) fn tokens_done(&self) -> u64 {
        (self.written * self.window) as u64
    }

    /// Windows recorded so far.
    pub(super) fn images_done(&self) -> usize {
        self.written
    }

    /// How an error names window `img`: its number and its tokens' place
    /// in the files' text.
    pub(super) fn describe(&self, img: usize) -> String {
        let start = img * self.window;
        format!(
            "window {img} (tokens {start}..{} of the text)",
            start + self.window
        )
    }

    /// The images of the next round of windows (about 16,384 tokens), or
    /// `None` once every window is recorded.
    pub(super) fn next_round(&mut self) -> Result<Option<Vec<Vec<f32>>>> {
        let n_imgs = self.ids.len() / self.window;
        if self.written == n_imgs {
            return Ok(None);
        }
        let per_round = (TOKENS_PER_ROUND / self.window).max(1);
        let end = (self.written + per_round).min(n_imgs);
        let windows: Vec<&[u32]> = self.ids[self.written * self.window..end * self.window]
            .chunks_exact(self.window)
            .collect();
        let images = self.model.images(&windows, &self.blocks, self.cls)?;
        self.written = end;
        Ok(Some(images))
    }
}

/// The model being recorded.
enum RecordedModel {
    Tllm(Model),
    Bert(Box<Embedder>),
}

impl RecordedModel {
    fn open(path: &Path) -> Result<RecordedModel> {
        let format = if path.is_dir() {
            Format::Embd
        } else {
            modelbin_format::detect::detect(path)?
        };
        match format {
            Format::Tllm => {
                let model = Model::open(path)?;
                if model.config().vocab_size < 256 {
                    return Err(RecordError::NotByteLevel {
                        path: path.to_path_buf(),
                        vocab_size: model.config().vocab_size,
                    }
                    .into());
                }
                Ok(RecordedModel::Tllm(model))
            }
            Format::Embd => Ok(RecordedModel::Bert(Box::new(Embedder::open_model(path)?))),
            format => Err(RecordError::NotAModel {
                path: path.to_path_buf(),
                format,
            }
            .into()),
        }
    }

    fn family(&self) -> &'static str {
        match self {
            RecordedModel::Tllm(_) => "tllm",
            RecordedModel::Bert(_) => "bert",
        }
    }

    fn blocks(&self) -> usize {
        match self {
            RecordedModel::Tllm(m) => m.config().n_layers as usize,
            RecordedModel::Bert(e) => e.config().num_layers,
        }
    }

    fn width(&self) -> usize {
        match self {
            RecordedModel::Tllm(m) => m.config().model_dim as usize,
            RecordedModel::Bert(e) => e.config().hidden_size,
        }
    }

    fn vocab_size(&self) -> usize {
        match self {
            RecordedModel::Tllm(m) => m.config().vocab_size as usize,
            RecordedModel::Bert(e) => e.tokenizer().vocab_size(),
        }
    }

    /// The longest window, and the default one.
    fn windows(&self) -> (usize, usize) {
        match self {
            RecordedModel::Tllm(m) => {
                let n = m.config().max_seq_len as usize;
                (n, n)
            }
            RecordedModel::Bert(e) => {
                let c = e.config();
                let longest = c.max_position.saturating_sub(2);
                (
                    longest,
                    c.max_seq_length.min(c.max_position).saturating_sub(2),
                )
            }
        }
    }

    /// The token ids of a text.
    fn tokenize(&self, path: &Path, bytes: &[u8]) -> Result<Vec<u32>> {
        match self {
            RecordedModel::Tllm(_) => Ok(bytes.iter().map(|&b| u32::from(b)).collect()),
            RecordedModel::Bert(e) => {
                let text = std::str::from_utf8(bytes).map_err(|_| RecordError::NotUtf8 {
                    path: path.to_path_buf(),
                })?;
                Ok(e.tokenizer().pieces(text))
            }
        }
    }

    /// The token ids of `files`' texts, concatenated in order, and how the
    /// dataset's metadata describes each file (path, size, SHA-256, and
    /// for JSON Lines the field and the number of texts). A regular file is
    /// mapped; a stream is read under its cap
    /// ([`MappedFile::open_or_read`]). The texts of a JSON Lines file each
    /// end with a line break for a byte-level model, as the lines of a
    /// plain file do; WordPiece ids need no separator.
    fn read_files(
        &self,
        files: &[PathBuf],
        format: &TextFormat,
    ) -> Result<(Vec<u32>, Vec<serde_json::Value>)> {
        let mut ids = Vec::new();
        let mut described = Vec::new();
        for path in files {
            let bytes = MappedFile::open_or_read(path)?;
            let mut description = serde_json::json!({
                "path": path, "bytes": bytes.len(), "sha256": hex(&sha256(&bytes)),
            });
            match format.texts(path, &bytes)? {
                Texts::Plain(text) => ids.extend(self.tokenize(path, text)?),
                Texts::Records(texts) => {
                    description["json_lines"] =
                        serde_json::json!({"field": format.field(), "texts": texts.len()});
                    for text in &texts {
                        ids.extend(self.tokenize(path, text.as_bytes())?);
                        if matches!(self, RecordedModel::Tllm(_)) {
                            ids.push(u32::from(b'\n'));
                        }
                    }
                }
            }
            described.push(description);
        }
        Ok((ids, described))
    }

    /// The vocabulary kept beside the token ids (none for bytes).
    fn vocabulary(&self) -> Option<Vec<&str>> {
        match self {
            RecordedModel::Tllm(_) => None,
            RecordedModel::Bert(e) => {
                let t = e.tokenizer();
                Some(
                    (0..t.vocab_size() as u32)
                        .map(|id| t.token(id).unwrap_or(""))
                        .collect(),
                )
            }
        }
    }

    /// Each window's image, `[layers, tokens, width]` flattened.
    fn images(&self, windows: &[&[u32]], blocks: &[usize], cls: bool) -> Result<Vec<Vec<f32>>> {
        match self {
            RecordedModel::Tllm(model) => windows
                .par_iter()
                .map(|ids| model.residual_stream(ids, blocks).map(|s| s.concat()))
                .collect(),
            RecordedModel::Bert(embedder) => {
                let specials = embedder.tokenizer().specials();
                let sequences: Vec<Vec<u32>> = windows
                    .iter()
                    .map(|w| {
                        let mut s = Vec::with_capacity(w.len() + 2);
                        s.push(specials.cls);
                        s.extend_from_slice(w);
                        s.push(specials.sep);
                        s
                    })
                    .collect();
                let refs: Vec<&[u32]> = sequences.iter().map(Vec::as_slice).collect();
                let states = embedder.encoder().hidden_states(&refs, blocks)?;
                let h = self.width();
                let mut start = 0;
                let mut images = Vec::with_capacity(windows.len());
                for window in windows {
                    // Rows of this sequence: [CLS] at `start`, the window
                    // after it, [SEP] last (never recorded).
                    let first = if cls { start } else { start + 1 };
                    let rows = first..start + 1 + window.len();
                    let mut image = Vec::with_capacity(blocks.len() * rows.len() * h);
                    for state in &states {
                        image.extend_from_slice(&state[rows.start * h..rows.end * h]);
                    }
                    images.push(image);
                    start += window.len() + 2;
                }
                Ok(images)
            }
        }
    }
}
