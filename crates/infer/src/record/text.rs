//! Text recordings: one SAEV image per window of tokens, the windows'
//! token ids kept beside the shards (`tokens.bin`, and the vocabulary for
//! WordPiece ids).
//!
//! A TLLM model reads bytes; a BERT model (an EMBD file or a Hugging Face
//! directory) reads WordPiece tokens, each window run as `[CLS] window
//! [SEP]`; a decoder language model (a Hugging Face directory) reads its
//! tokenizer.json's tokens, in windows cut as SAELens cuts them (a BOS
//! token first: [`windows`](super::windows)), at one of SAELens's hook
//! points ([`Site`]).

use std::path::{Path, PathBuf};

use modelbin_format::Format;
use modelbin_format::io::checksum::{hex, sha256};
use modelbin_format::io::source::MappedFile;
use modelbin_format::io::texts::{TextFormat, TextKind, Texts};
use modelbin_format::saev::Metadata;
use rayon::prelude::*;

use modelbin_tokenize::{HfTokenizer, hf_byte_char};

use super::windows::{MIN_WINDOW_WITH_BOS, saelens_windows};
use super::{Output, blocks_of};
use crate::bert::Embedder;
use crate::identity::alongside_checkpoint_id;
use crate::lm::{LanguageModel, LoadOptions, Site, model_type_of_dir};
use crate::tllm::Model;
use crate::{RecordError, Result};

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSettings {
    /// Blocks whose output is recorded (0 is the first; negative values
    /// count from the end, -1 is the last).
    pub layers: Vec<i64>,
    /// Tokens per window, one SAEV image each (`None`: the model's
    /// context; for BERT its max_seq_length less the CLS and SEP tokens;
    /// for a language model [`DEFAULT_LM_WINDOW`], SAELens's context size).
    pub tokens_per_text: Option<usize>,
    /// BERT: also record the CLS row of each window, as the CLS token.
    pub cls: bool,
    /// A language model: the hook point recorded (SAELens's
    /// `hook_resid_post` by default).
    pub site: Site,
    /// A language model: start each window with the tokenizer's BOS token
    /// (SAELens's `prepend_bos`), and separate texts with it.
    pub bos: bool,
    /// A language model: run its linear layers on int8 weights.
    pub int8: bool,
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
            site: Site::ResidPost,
            bos: true,
            int8: false,
            max_patches_per_shard: 2_400_000,
            text_format: TextFormat::default(),
        }
    }
}

/// What a text recording reads.
#[derive(Debug, Clone, Copy)]
pub enum TextInputs<'a> {
    /// Text files and directories, read as
    /// [`TextFormat`](modelbin_format::io::texts::TextFormat) says.
    Files(&'a [PathBuf]),
    /// Texts in memory, each one text (as a JSON Lines file's line is).
    Texts(&'a [String]),
}

/// A language model's window unless told otherwise: SAELens's default
/// `context_size`.
pub const DEFAULT_LM_WINDOW: usize = 128;

/// Tokens computed together before their windows are written in order.
const TOKENS_PER_ROUND: usize = 16_384;

/// The text being recorded and how far it got.
pub(super) struct TextSource {
    model: RecordedModel,
    site: Site,
    blocks: Vec<usize>,
    cls: bool,
    window: usize,
    ids: Vec<u32>,
    /// Windows recorded.
    written: usize,
}

impl TextSource {
    /// Opens the model, reads and tokenizes the texts of `inputs` (in
    /// order), checks the settings, cuts the windows, and starts the
    /// dataset under `root`.
    pub(super) fn start(
        model_path: &Path,
        inputs: TextInputs<'_>,
        settings: RecordSettings,
        root: &Path,
    ) -> Result<(TextSource, Output)> {
        let (model, model_id) =
            alongside_checkpoint_id(model_path, || RecordedModel::open(model_path, &settings))?;
        if settings.cls && !matches!(model, RecordedModel::Bert(_)) {
            return Err(RecordError::NoClsToken.into());
        }
        if !matches!(model, RecordedModel::Lm(_)) {
            if settings.int8 {
                return Err(RecordError::LanguageModelSetting { setting: "int8" }.into());
            }
            if settings.site != Site::ResidPost {
                return Err(RecordError::LanguageModelSetting { setting: "site" }.into());
            }
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
        if model.bos().is_some() && window < MIN_WINDOW_WITH_BOS {
            return Err(RecordError::WindowTooShortForBos { window }.into());
        }
        let (texts, described) = match inputs {
            TextInputs::Files(files) => {
                let files = settings.text_format.text_files(files)?;
                model.read_files(&files, &settings.text_format)?
            }
            TextInputs::Texts(texts) => model.read_texts(texts)?,
        };
        let tokens_read: usize = texts.iter().map(Vec::len).sum();
        let ids = model.windows_of(&texts, window);
        let n_imgs = ids.len() / window;
        if n_imgs == 0 {
            return Err(RecordError::TooFewTokens {
                tokens: tokens_read,
                window,
            }
            .into());
        }
        let tokens = match &model {
            RecordedModel::Tllm(_) => "bytes (token id = byte value)",
            RecordedModel::Bert(_) => {
                "WordPiece ids of the model's vocabulary, without [CLS]/[SEP]"
            }
            RecordedModel::Lm(_) => {
                "ids of the model's tokenizer.json, the BOS included where it was run (vocab.txt: each token's bytes in GPT-2's byte-to-character alphabet)"
            }
        };
        let windowing = match &model {
            RecordedModel::Lm(lm) if lm.bos.is_some() => format!(
                "windows of {window} tokens cut as SAELens's concat_and_batch_sequences (prepend_bos, BOS as separator): each text tokenized with its special tokens (a leading BOS dropped), the texts concatenated with BOS {} between them, each window starting with BOS; a final partial window is dropped",
                lm.bos.unwrap_or_default()
            ),
            _ => format!(
                "consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"
            ),
        };
        let mut data = serde_json::json!({
            "files": described,
            "tokens": tokens,
            "vocab_size": model.vocab_size(),
            "token_ids": "tokens.bin: u32 little-endian, [n_imgs, n_patches_per_img]",
            "windowing": windowing,
        });
        if let RecordedModel::Lm(lm) = &model {
            data["site"] = settings.site.name().into();
            data["hook_names"] = blocks
                .iter()
                .map(|&b| settings.site.hook_name(b))
                .collect::<Vec<_>>()
                .into();
            data["prepend_bos"] = lm.bos.is_some().into();
            data["model_name"] = crate::lm::model_name_of_dir(model_path).into();
            data["tokenizer_engine"] = lm.tokenizer.engine().into();
        }
        let metadata = Metadata {
            vit_family: model.family().into(),
            vit_ckpt: format!("{}{}", model_id, if settings.int8 { " (int8)" } else { "" }),
            layers: settings.layers.clone(),
            n_patches_per_img: window as u64,
            cls_token: settings.cls,
            d_vit: model.width() as u64,
            seed: 0,
            n_imgs: n_imgs as u64,
            max_patches_per_shard: settings.max_patches_per_shard,
            data,
        };
        let output = Output::start(root, metadata, |writer| {
            let vocabulary = model.vocabulary();
            let words: Option<Vec<&str>> = vocabulary
                .as_ref()
                .map(|v| v.iter().map(String::as_str).collect());
            Ok(writer.write_tokens(&ids, words.as_deref())?)
        })?;
        let source = TextSource {
            model,
            site: settings.site,
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
        let images = self
            .model
            .images(&windows, &self.blocks, self.cls, self.site)?;
        self.written = end;
        Ok(Some(images))
    }
}

/// The model being recorded.
enum RecordedModel {
    Tllm(Model),
    Bert(Box<Embedder>),
    Lm(Box<RecordedLm>),
}

/// A decoder language model with its tokenizer.
struct RecordedLm {
    model: LanguageModel,
    tokenizer: HfTokenizer,
    /// The BOS token prepended to each window, unless turned off or the
    /// tokenizer has none.
    bos: Option<u32>,
}

impl RecordedModel {
    fn open(path: &Path, settings: &RecordSettings) -> Result<RecordedModel> {
        // A directory is BERT's when its config.json says so (or says no
        // model type); any other model type is a decoder's, and one this
        // crate does not run is refused naming it.
        let model_type = path.is_dir().then(|| model_type_of_dir(path)).flatten();
        if model_type.is_some_and(|t| t != "bert") {
            let model = LanguageModel::open_with(path, LoadOptions::int8(settings.int8))?;
            let tokenizer = HfTokenizer::open_dir(path)?;
            let bos = tokenizer.bos_id().filter(|_| settings.bos);
            return Ok(RecordedModel::Lm(Box::new(RecordedLm {
                model,
                tokenizer,
                bos,
            })));
        }
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

    /// The dataset's `vit_family`: `tllm`, `bert`, or a language model's
    /// `model_type`.
    fn family(&self) -> &'static str {
        match self {
            RecordedModel::Tllm(_) => "tllm",
            RecordedModel::Bert(_) => "bert",
            RecordedModel::Lm(lm) => lm.model.config().family.name(),
        }
    }

    fn blocks(&self) -> usize {
        match self {
            RecordedModel::Tllm(m) => m.config().n_layers as usize,
            RecordedModel::Bert(e) => e.config().num_layers,
            RecordedModel::Lm(lm) => lm.model.config().layers,
        }
    }

    fn width(&self) -> usize {
        match self {
            RecordedModel::Tllm(m) => m.config().model_dim as usize,
            RecordedModel::Bert(e) => e.config().hidden_size,
            RecordedModel::Lm(lm) => lm.model.config().hidden,
        }
    }

    fn vocab_size(&self) -> usize {
        match self {
            RecordedModel::Tllm(m) => m.config().vocab_size as usize,
            RecordedModel::Bert(e) => e.tokenizer().vocab_size(),
            RecordedModel::Lm(lm) => lm.model.config().vocab_size,
        }
    }

    /// The BOS token each window starts with, if any.
    fn bos(&self) -> Option<u32> {
        match self {
            RecordedModel::Lm(lm) => lm.bos,
            _ => None,
        }
    }

    /// The windows of `window` tokens of `texts`, flattened: a language
    /// model's as SAELens cuts them, the others' consecutive (a final
    /// partial window dropped).
    fn windows_of(&self, texts: &[Vec<u32>], window: usize) -> Vec<u32> {
        if let RecordedModel::Lm(lm) = self {
            return saelens_windows(texts, window, lm.bos);
        }
        let mut ids = texts.concat();
        ids.truncate(ids.len() / window * window);
        ids
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
            RecordedModel::Lm(lm) => {
                let n = lm.model.config().max_positions;
                (n, DEFAULT_LM_WINDOW.min(n))
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
                    model: "a BERT model".into(),
                })?;
                Ok(e.tokenizer().pieces(text))
            }
            RecordedModel::Lm(lm) => {
                let text = std::str::from_utf8(bytes).map_err(|_| RecordError::NotUtf8 {
                    path: path.to_path_buf(),
                    model: format!("a {} language model", lm.model.config().family),
                })?;
                // As TransformerLens's to_tokens(prepend_bos=False), which
                // SAELens tokenizes with: the tokenizer's special tokens,
                // less a leading BOS (the windows place their own).
                let mut ids = lm.tokenizer.encode(text, true)?;
                if lm.tokenizer.adds_bos() && ids.first() == lm.tokenizer.bos_id().as_ref() {
                    ids.remove(0);
                }
                Ok(ids)
            }
        }
    }

    /// The token ids of each of `files`' texts, in order (a plain file is
    /// one text, a JSON Lines file one per line, a Parquet file one per
    /// row), and how the dataset's metadata describes each file (path,
    /// size, SHA-256, and for JSON Lines the field, for Parquet the column,
    /// and the number of texts). A regular file is mapped;
    /// a stream is read under its cap ([`MappedFile::open_or_read`]). The
    /// texts of a JSON Lines or Parquet file each end with a line break for a
    /// byte-level model, as the lines of a plain file do; WordPiece ids
    /// need no separator, and a language model's windows place BOS tokens
    /// between texts.
    fn read_files(
        &self,
        files: &[PathBuf],
        format: &TextFormat,
    ) -> Result<(Vec<Vec<u32>>, Vec<serde_json::Value>)> {
        let mut ids = Vec::new();
        let mut described = Vec::new();
        for path in files {
            let bytes = MappedFile::open_or_read(path)?;
            let mut description = serde_json::json!({
                "path": path, "bytes": bytes.len(), "sha256": hex(&sha256(&bytes)),
            });
            match format.texts(path, &bytes)? {
                Texts::Plain(text) => ids.push(self.tokenize(path, text)?),
                Texts::Records(texts) => {
                    let (kind, key) = match format.kind(path) {
                        TextKind::Parquet => ("parquet", "column"),
                        _ => ("json_lines", "field"),
                    };
                    description[kind] =
                        serde_json::json!({key: format.field(), "texts": texts.len()});
                    for text in &texts {
                        let mut text_ids = self.tokenize(path, text.as_bytes())?;
                        if matches!(self, RecordedModel::Tllm(_)) {
                            text_ids.push(u32::from(b'\n'));
                        }
                        ids.push(text_ids);
                    }
                }
            }
            described.push(description);
        }
        Ok((ids, described))
    }

    /// The token ids of each text of `texts` (as the texts of a JSON Lines
    /// file), and how the metadata describes them: their number and the
    /// SHA-256 of their JSON Lines.
    fn read_texts(&self, texts: &[String]) -> Result<(Vec<Vec<u32>>, Vec<serde_json::Value>)> {
        let mut lines = String::new();
        let mut ids = Vec::with_capacity(texts.len());
        for text in texts {
            lines.push_str(&serde_json::to_string(text).expect("a string serializes"));
            lines.push('\n');
            let mut text_ids = self.tokenize(Path::new("texts"), text.as_bytes())?;
            if matches!(self, RecordedModel::Tllm(_)) {
                text_ids.push(u32::from(b'\n'));
            }
            ids.push(text_ids);
        }
        let described = serde_json::json!({
            "texts": texts.len(), "sha256_of_json_lines": hex(&sha256(lines.as_bytes())),
        });
        Ok((ids, vec![described]))
    }

    /// The vocabulary kept beside the token ids (none for bytes): for a
    /// language model each token's bytes in GPT-2's byte-to-character
    /// alphabet (so no token holds a line break), empty for an id the
    /// tokenizer lacks.
    fn vocabulary(&self) -> Option<Vec<String>> {
        match self {
            RecordedModel::Tllm(_) => None,
            RecordedModel::Lm(lm) => Some(
                (0..lm.model.config().vocab_size as u32)
                    .map(|id| {
                        let bytes = lm.tokenizer.token_bytes(id).unwrap_or_default();
                        bytes.into_iter().map(hf_byte_char).collect()
                    })
                    .collect(),
            ),
            RecordedModel::Bert(e) => {
                let t = e.tokenizer();
                Some(
                    (0..t.vocab_size() as u32)
                        .map(|id| t.token(id).unwrap_or("").to_owned())
                        .collect(),
                )
            }
        }
    }

    /// Each window's image, `[layers, tokens, width]` flattened.
    fn images(
        &self,
        windows: &[&[u32]],
        blocks: &[usize],
        cls: bool,
        site: Site,
    ) -> Result<Vec<Vec<f32>>> {
        match self {
            RecordedModel::Lm(lm) => {
                let window = windows.first().map_or(1, |w| w.len());
                let ids = windows.concat();
                let states = lm.model.activations(&ids, window, blocks, site)?;
                let h = self.width();
                Ok((0..windows.len())
                    .map(|w| {
                        let rows = w * window * h..(w + 1) * window * h;
                        states
                            .iter()
                            .flat_map(|s| &s[rows.clone()])
                            .copied()
                            .collect()
                    })
                    .collect())
            }
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
