//! Text recordings: one SAEV image per window of tokens, the windows'
//! token ids kept beside the shards (`tokens.bin`, and the vocabulary for
//! ids that need one).
//!
//! Any model that reads tokens records through the one model interface
//! ([`crate::model`]): its [`TokenModel`] facet turns the texts into ids
//! and windows (a TLLM model reads bytes; a BERT model word pieces, each
//! window run as `[CLS] window [SEP]`; a decoder language model its
//! tokenizer.json's tokens, in windows cut as SAELens cuts them, a BOS token
//! first: [`windows`](super::windows)), and its activations are read at
//! one of the sites it has ([`Site`]).

use std::path::{Path, PathBuf};

use modelbin_format::io::checksum::{hex, sha256};
use modelbin_format::io::source::MappedFile;
use modelbin_format::io::texts::{TextFormat, TextKind, Texts};
use modelbin_format::saev::Metadata;

use super::windows::MIN_WINDOW_WITH_BOS;
use super::{Output, blocks_of};
use crate::identity::alongside_checkpoint_id;
use crate::model::{HookedModel, Inputs, OpenOptions, Site, TokenModel, open_model};
use crate::{RecordError, Result};

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSettings {
    /// Blocks whose output is recorded (0 is the first; negative values
    /// count from the end, -1 is the last).
    pub layers: Vec<i64>,
    /// Tokens per window, one SAEV image each (`None`: the model's
    /// context; for BERT its max_seq_length less the CLS and SEP tokens;
    /// for a language model [`DEFAULT_LM_WINDOW`](crate::lm::DEFAULT_LM_WINDOW), SAELens's context size).
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
    /// Record at most this many tokens: the first whole windows, in the
    /// input order, that fit (SAELens's `training_tokens`); `None`: every
    /// whole window.
    pub max_tokens: Option<usize>,
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
            max_tokens: None,
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

/// Tokens computed together before their windows are written in order.
const TOKENS_PER_ROUND: usize = 16_384;

/// The text being recorded and how far it got.
pub(super) struct TextSource {
    model: Box<dyn HookedModel>,
    site: Site,
    blocks: Vec<usize>,
    cls: bool,
    window: usize,
    ids: Vec<u32>,
    /// Windows recorded.
    written: usize,
}

/// The model's token facet, or [`RecordError::NoText`] for a model that
/// reads no text.
fn tokens_of<'m>(model: &'m dyn HookedModel, path: &Path) -> Result<&'m dyn TokenModel> {
    model.tokens().ok_or_else(|| {
        RecordError::NoText {
            path: path.to_path_buf(),
            model: model.name(),
        }
        .into()
    })
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
        let options = OpenOptions::new(settings.int8, settings.bos);
        let (model, model_id) =
            alongside_checkpoint_id(model_path, || open_model(model_path, options))?;
        let tokens = tokens_of(model.as_ref(), model_path)?;
        if settings.cls && !model.has_cls() {
            return Err(RecordError::NoClsToken.into());
        }
        if settings.int8 && !model.is_int8() {
            return Err(RecordError::LanguageModelSetting { setting: "int8" }.into());
        }
        crate::model::check_site(model.as_ref(), settings.site)?;
        let blocks = blocks_of(&settings.layers, model.blocks())?;
        let (longest, default) = tokens.windows();
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
        if tokens.bos().is_some() && window < MIN_WINDOW_WITH_BOS {
            return Err(RecordError::WindowTooShortForBos { window }.into());
        }
        let reader = Reader {
            model: model.as_ref(),
            tokens,
        };
        let (texts, described) = match inputs {
            TextInputs::Files(files) => {
                let files = settings.text_format.text_files(files)?;
                reader.read_files(&files, &settings.text_format)?
            }
            TextInputs::Texts(texts) => reader.read_texts(texts)?,
        };
        let tokens_read: usize = texts.iter().map(Vec::len).sum();
        let mut ids = tokens.windows_of(&texts, window);
        let available = ids.len() / window;
        if let Some(max_tokens) = settings.max_tokens {
            if max_tokens < window {
                return Err(RecordError::MaxTokensBelowWindow { max_tokens, window }.into());
            }
            ids.truncate((max_tokens / window).min(available) * window);
        }
        let n_imgs = ids.len() / window;
        if n_imgs == 0 {
            return Err(RecordError::TooFewTokens {
                tokens: tokens_read,
                window,
            }
            .into());
        }
        let (described_tokens, windowing) = tokens.describe(window);
        let mut data = serde_json::json!({
            "files": described,
            "tokens": described_tokens,
            "vocab_size": tokens.vocab_size(),
            "token_ids": "tokens.bin: u32 little-endian, [n_imgs, n_patches_per_img]",
            "windowing": windowing,
        });
        if let Some(max_tokens) = settings.max_tokens {
            data["max_tokens"] = max_tokens.into();
            data["windows_left"] = (available - n_imgs).into();
        }
        if let Some(saelens) = tokens.saelens_data(model_path) {
            data["site"] = settings.site.name().into();
            data["hook_names"] = blocks
                .iter()
                .map(|&b| settings.site.hook_name(b))
                .collect::<Vec<_>>()
                .into();
            let object = data.as_object_mut().expect("the data is an object");
            object.extend(saelens);
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
            let vocabulary = tokens.vocabulary();
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
        let inputs = Inputs::Windows {
            windows: &windows,
            cls: self.cls,
        };
        let images = self.model.activations(inputs, &self.blocks, self.site)?;
        self.written = end;
        Ok(Some(images))
    }
}

/// Reads texts into ids with a model's token facet.
struct Reader<'m> {
    model: &'m dyn HookedModel,
    tokens: &'m dyn TokenModel,
}

impl Reader<'_> {
    /// The token ids of a text read from `path` ([`RecordError::NotUtf8`]
    /// naming the model, for one that reads text, when it is not UTF-8).
    fn tokenize(&self, path: &Path, bytes: &[u8]) -> Result<Vec<u32>> {
        self.tokens.tokenize(bytes)?.ok_or_else(|| {
            RecordError::NotUtf8 {
                path: path.to_path_buf(),
                model: self.model.name(),
            }
            .into()
        })
    }

    /// The ids of one record's text (a JSON Lines line, a Parquet row),
    /// ended as a plain file's lines end for a model that needs it.
    fn record(&self, path: &Path, text: &[u8]) -> Result<Vec<u32>> {
        let mut ids = self.tokenize(path, text)?;
        ids.extend(self.tokens.separator());
        Ok(ids)
    }

    /// The token ids of each of `files`' texts, in order (a plain file is
    /// one text, a JSON Lines file one per line, a Parquet file one per
    /// row), and how the dataset's metadata describes each file (path,
    /// size, SHA-256, and for JSON Lines the field, for Parquet the column,
    /// and the number of texts). A regular file is mapped;
    /// a stream is read under its cap ([`MappedFile::open_or_read`]).
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
                        ids.push(self.record(path, text.as_bytes())?);
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
            ids.push(self.record(Path::new("texts"), text.as_bytes())?);
        }
        let described = serde_json::json!({
            "texts": texts.len(), "sha256_of_json_lines": hex(&sha256(lines.as_bytes())),
        });
        Ok((ids, vec![described]))
    }
}
