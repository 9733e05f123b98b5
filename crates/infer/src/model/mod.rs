//! One interface over every model a workflow drives: the decoder language
//! models, the TLLM transformer, the BERT encoder and the vision
//! transformers.
//!
//! [`open_model`] decides a path's kind once; the workflows (recording,
//! `sae eval --model`, `sae features --model`, steering) then go through
//! [`HookedModel`] and its facets, never through a kind's own API:
//!
//! - every model gives its width, its blocks, and its activations at a
//!   [`Site`] of some blocks over [`Inputs`] (token windows, or images'
//!   pixels), laid out as SAEV images;
//! - a model that reads tokens gives its [`TokenModel`] facet: how text
//!   becomes ids and windows, its vocabulary, its special tokens;
//! - a model that predicts the next token gives its [`HookedDecoder`]
//!   facet: sessions whose every pass a hook may read or change (splicing,
//!   ablation, steering), and the unembedding;
//! - a model whose input embeddings are compared with directions (BERT)
//!   gives them.
//!
//! A dataset's metadata names the model it was recorded from by its
//! family and, for a language model, its site; [`Recorded::of`] reads them
//! back as typed values, the one place that reads those strings.

mod site;
mod steer;

use std::path::Path;

use modelbin_format::io::source::{self, JsonCaps};

use modelbin_format::saev::Metadata;

use crate::Result;

pub use site::Site;
pub use steer::{Steered, SteeredSession, Steering, generate_steered};

/// The kind of a model: what it reads and what it can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// The TLLM transformer (a `.tllm` file): bytes in, next-byte logits.
    Tllm,
    /// A BERT encoder (an EMBD file, or a Hugging Face BERT directory):
    /// word pieces in.
    Bert,
    /// A decoder language model (a Hugging Face directory): its
    /// tokenizer's ids in, next-token logits.
    LanguageModel,
    /// A vision transformer (a Hugging Face directory): images in.
    Vision,
}

impl ModelKind {
    /// The kind's name in messages (`tllm`, `bert`, `language model`,
    /// `vision transformer`).
    pub fn describe(self) -> &'static str {
        match self {
            ModelKind::Tllm => "TLLM",
            ModelKind::Bert => "BERT",
            ModelKind::LanguageModel => "language model",
            ModelKind::Vision => "vision transformer",
        }
    }
}

/// What a dataset says of the model it was recorded from, read back typed
/// from its metadata (`vit_family`, and `data.site` for a language model).
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The model's kind.
    pub kind: ModelKind,
    /// The family (`vit_family`: `tllm`, `bert`, a language model's
    /// `model_type`, `dinov2`, ...).
    pub family: String,
    /// The site recorded (a block's output unless a language model's
    /// recording names another).
    pub site: Site,
}

impl Recorded {
    /// The model `metadata` says a dataset was recorded from; `None` for a
    /// dataset whose family names no model this crate runs.
    pub fn of(metadata: &Metadata) -> Option<Recorded> {
        let family = metadata.vit_family.clone();
        let site = metadata.data.get("site").and_then(|s| s.as_str());
        let kind = match (family.as_str(), site) {
            (_, Some(_)) => ModelKind::LanguageModel,
            ("tllm", None) => ModelKind::Tllm,
            ("bert", None) => ModelKind::Bert,
            (f, None) if crate::vit::Family::from_name(f).is_some() => ModelKind::Vision,
            _ => return None,
        };
        let site = match site {
            Some(name) => name.parse().ok()?,
            None => Site::ResidPost,
        };
        Some(Recorded { kind, family, site })
    }
}

/// What a model runs over.
#[derive(Debug, Clone, Copy)]
pub enum Inputs<'a> {
    /// Windows of token ids, each one sequence from position 0 (for BERT
    /// each run as `[CLS] window [SEP]`); `cls` also gives BERT's CLS
    /// row, first.
    Windows {
        /// The windows.
        windows: &'a [&'a [u32]],
        /// Whether the CLS row is wanted (BERT only).
        cls: bool,
    },
    /// Normalised pixel values, `[images, 3, height, width]` row-major.
    Pixels {
        /// The values.
        values: &'a [f32],
        /// Images.
        images: usize,
        /// Their height in pixels.
        height: usize,
        /// Their width in pixels.
        width: usize,
    },
}

/// A model a workflow reads the activations of, and may hook.
pub trait HookedModel: Send + Sync {
    /// Its kind.
    fn kind(&self) -> ModelKind;

    /// Its family, as a recording's `vit_family` names it (`tllm`, `bert`,
    /// a language model's `model_type`, `dinov2`, `clip`, `siglip`).
    fn family(&self) -> &'static str;

    /// How messages name it (`a TLLM model`, `a gpt2 language model`).
    fn name(&self) -> String;

    /// Whether its inputs start with a CLS token whose row can be read.
    fn has_cls(&self) -> bool {
        false
    }

    /// Whether its linear layers run on int8 weights.
    fn is_int8(&self) -> bool {
        false
    }

    /// The width of its residual stream.
    fn width(&self) -> usize;

    /// Its blocks.
    fn blocks(&self) -> usize;

    /// The sites its activations are read at (a block's output at least).
    fn sites(&self) -> &'static [Site] {
        &[Site::ResidPost]
    }

    /// The activations at `site` of each block of `blocks` (0 is the
    /// first) over `inputs`: one SAEV image per window or picture,
    /// `[blocks, tokens, width]` flattened. A window's tokens are its own
    /// (BERT's CLS row first when asked, never its SEP); a picture's are
    /// its CLS row (if the model has one) then its patches, row by row.
    fn activations(
        &self,
        inputs: Inputs<'_>,
        blocks: &[usize],
        site: Site,
    ) -> Result<Vec<Vec<f32>>>;

    /// How it reads text, if it reads tokens.
    fn tokens(&self) -> Option<&dyn TokenModel> {
        None
    }

    /// Its decoding side, if it predicts the next token.
    fn decoder(&self) -> Option<&dyn HookedDecoder> {
        None
    }

    /// Its input embeddings `[vocab, width]`, where directions are read
    /// against them (BERT: the nearest word pieces).
    fn input_embeddings(&self) -> Option<Vec<f32>> {
        None
    }
}

/// How a model reads text: its ids, its windows, its vocabulary.
pub trait TokenModel {
    /// Tokens in the vocabulary.
    fn vocab_size(&self) -> usize;

    /// The ids of one text (its bytes); `None` when the model reads text
    /// and the bytes are not UTF-8.
    fn tokenize(&self, text: &[u8]) -> Result<Option<Vec<u32>>>;

    /// The id put after each text of a JSON Lines or Parquet file, as a
    /// plain file's lines end (a byte-level model's line break).
    fn separator(&self) -> Option<u32> {
        None
    }

    /// The BOS token each window starts with, when the model has one.
    fn bos(&self) -> Option<u32> {
        None
    }

    /// The longest window, and the default one.
    fn windows(&self) -> (usize, usize);

    /// The windows of `window` tokens of `texts`, flattened: consecutive
    /// cuts of the texts run together, a final partial window dropped.
    fn windows_of(&self, texts: &[Vec<u32>], window: usize) -> Vec<u32> {
        let mut ids = texts.concat();
        ids.truncate(ids.len() / window.max(1) * window);
        ids
    }

    /// How a recording's metadata describes the tokens and the windows.
    fn describe(&self, window: usize) -> (String, String) {
        (
            "token ids".into(),
            format!(
                "consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"
            ),
        )
    }

    /// Each token's text as kept beside a dataset's ids (`vocab.txt`), if
    /// the ids need one.
    fn vocabulary(&self) -> Option<Vec<String>> {
        None
    }

    /// Token `id` shown by itself on a feature page.
    fn token_name(&self, id: u32) -> String;

    /// The ids SAELens's evals leave out (the tokenizer's BOS and EOS).
    fn special_tokens(&self) -> Vec<u32> {
        Vec::new()
    }

    /// What a recording's `data` keeps for SAELens to hook the model
    /// again (the model's name, whether windows start with BOS, the
    /// tokenizer's engine), for a model SAELens hooks by name; the
    /// recording adds the site and hook names. `dir` is the model's path.
    fn saelens_data(&self, dir: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
        let _ = dir;
        None
    }
}

/// A model that predicts the next token, whose passes can be hooked.
pub trait HookedDecoder: Sync {
    /// The longest sequence a session holds.
    fn context(&self) -> usize;

    /// Tokens in its vocabulary (the logits' width).
    fn vocab(&self) -> usize;

    /// A session with an empty cache.
    fn session(&self) -> Box<dyn HookedSession + '_>;

    /// `rows · W_Uᵀ`: what each row (`[n, width]`) adds to each token's
    /// logit through the unembedding alone, `[n, vocab]`.
    fn unembed(&self, rows: &[f32]) -> Vec<f32>;
}

/// One sequence being decoded, its passes hookable.
pub trait HookedSession {
    /// Tokens in its cache.
    fn len(&self) -> usize;

    /// Whether its cache is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `ids` after the cached tokens, calling `hook(block, site,
    /// rows)` with the new positions' rows (`[ids.len(), width]`) at every
    /// site the model has; the hook may change them, and the rest of the
    /// pass and the cache see what it leaves. Returns the logits of every
    /// new position (`all`) or of the last.
    fn extend_with_hook(
        &mut self,
        ids: &[u32],
        all: bool,
        hook: &mut dyn FnMut(usize, Site, &mut [f32]),
    ) -> Result<Vec<f32>>;
}

/// Block `layer` of a model of `blocks` blocks, a negative layer counting
/// from the end (-1 is the last); `None` past either end. The one rule for
/// layers everywhere a layer is given (recording, splicing, Python).
pub fn resolve_layer(layer: i64, blocks: usize) -> Option<usize> {
    let block = if layer < 0 {
        i64::try_from(blocks).ok()?.checked_add(layer)?
    } else {
        layer
    };
    usize::try_from(block).ok().filter(|&b| b < blocks)
}

/// The name a model directory is known by (what a recording names its
/// model by, and SAELens and TransformerLens know it as): the one rule for
/// every kind of model directory:
/// `config.json`'s `_name_or_path` when it names one, else the Hub repo of
/// a cache snapshot (`models--ORG--NAME/snapshots/REV` gives `ORG/NAME`),
/// else the directory's own name.
pub fn model_name(dir: &Path) -> String {
    let path = dir.join("config.json");
    if let Ok(json) = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG)
        && let Some(name) = json.get("_name_or_path").and_then(|n| n.as_str())
        && !name.is_empty()
    {
        return name.to_owned();
    }
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let names: Vec<String> = dir
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let [.., repo, snapshots, _] = names.as_slice()
        && snapshots == "snapshots"
        && let Some(repo) = repo.strip_prefix("models--")
    {
        return repo.replacen("--", "/", 1);
    }
    names.last().cloned().unwrap_or_default()
}

/// The token windows of `inputs` for `model`, which reads tokens and no
/// CLS row of its own: [`RecordError::NoClsToken`] when the CLS row is
/// asked, [`RecordError::LanguageModelSetting`] for a site the model does
/// not have, and an invalid argument for pixels.
///
/// [`RecordError::NoClsToken`]: crate::RecordError::NoClsToken
/// [`RecordError::LanguageModelSetting`]: crate::RecordError::LanguageModelSetting
pub(crate) fn token_windows<'a>(
    model: &dyn HookedModel,
    inputs: Inputs<'a>,
    site: Site,
) -> Result<&'a [&'a [u32]]> {
    check_site(model, site)?;
    match inputs {
        Inputs::Windows { cls: true, .. } if !model.has_cls() => {
            Err(crate::RecordError::NoClsToken.into())
        }
        Inputs::Windows { windows, .. } => Ok(windows),
        Inputs::Pixels { .. } => Err(not_its_input(model, "images")),
    }
}

/// Refuses a site `model` does not have.
pub(crate) fn check_site(model: &dyn HookedModel, site: Site) -> Result<()> {
    if model.sites().contains(&site) {
        Ok(())
    } else {
        Err(crate::RecordError::LanguageModelSetting { setting: "site" }.into())
    }
}

/// The error for inputs of another kind than `model` reads.
pub(crate) fn not_its_input(model: &dyn HookedModel, what: &str) -> crate::Error {
    crate::Error::Format(modelbin_format::Error::InvalidArgument(format!(
        "{} does not read {what}",
        model.name()
    )))
}

impl crate::generation::Decoder for dyn HookedDecoder + '_ {
    type Session<'a>
        = Box<dyn HookedSession + 'a>
    where
        Self: 'a;

    fn context(&self) -> usize {
        HookedDecoder::context(self)
    }

    fn start(&self) -> Box<dyn HookedSession + '_> {
        self.session()
    }
}

impl crate::generation::DecoderSession for Box<dyn HookedSession + '_> {
    fn cached(&self) -> usize {
        self.len()
    }

    fn extend_last(&mut self, ids: &[u32]) -> Result<Vec<f32>> {
        self.extend_with_hook(ids, false, &mut |_, _, _| {})
    }
}

/// How to open a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Run the linear layers on int8 weights (language models and vision
    /// transformers).
    pub int8: bool,
    /// A language model: start each window with the tokenizer's BOS token.
    pub bos: bool,
}

impl OpenOptions {
    /// The options with `int8` and `bos` as given.
    pub fn new(int8: bool, bos: bool) -> OpenOptions {
        OpenOptions { int8, bos }
    }
}

/// Opens the model at `path`, deciding its kind once: a directory whose
/// `config.json` names a vision transformer is one, one naming another
/// `model_type` than `bert` is a decoder language model (refused by name
/// when this crate runs no such family), any other directory a BERT
/// encoder; a file is read by its format (TLLM or EMBD).
pub fn open_model(path: &Path, options: OpenOptions) -> Result<Box<dyn HookedModel>> {
    let model_type = path
        .is_dir()
        .then(|| crate::lm::model_type_of_dir(path))
        .flatten();
    match model_type.as_deref() {
        Some(t) if crate::vit::is_vision_model_type(t) => {
            let mut model = crate::vit::VisionModel::open(path)?;
            if options.int8 {
                model.quantize_int8();
            }
            Ok(Box::new(model))
        }
        Some(t) if t != "bert" => {
            crate::lm::TokenizedModel::open(path, options).map(|m| Box::new(m) as _)
        }
        _ if path.is_dir() => crate::bert::Embedder::open_model(path).map(|m| Box::new(m) as _),
        _ => match modelbin_format::detect::detect(path)? {
            modelbin_format::Format::Tllm => {
                crate::tllm::Model::open(path).map(|m| Box::new(m) as _)
            }
            modelbin_format::Format::Embd => {
                crate::bert::Embedder::open_model(path).map(|m| Box::new(m) as _)
            }
            format => Err(crate::RecordError::NotAModel {
                path: path.to_path_buf(),
                format,
            }
            .into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_come_from_the_config_a_hub_snapshot_or_the_directory() {
        let root = tempfile::tempdir().unwrap();
        let named = root.path().join("mine");
        std::fs::create_dir(&named).unwrap();
        std::fs::write(
            named.join("config.json"),
            r#"{"_name_or_path": "org/model"}"#,
        )
        .unwrap();
        assert_eq!(model_name(&named), "org/model");
        std::fs::write(named.join("config.json"), r#"{"_name_or_path": ""}"#).unwrap();
        assert_eq!(model_name(&named), "mine");
        let snapshot = root
            .path()
            .join("models--EleutherAI--pythia-70m/snapshots/abc123");
        std::fs::create_dir_all(&snapshot).unwrap();
        assert_eq!(model_name(&snapshot), "EleutherAI/pythia-70m");
    }
}
