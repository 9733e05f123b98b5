//! Hugging Face `tokenizer.json` files: ids equal to the `tokenizers`
//! library's `Tokenizer.encode(text, add_special_tokens).ids`.
//!
//! Two engines, chosen when the file is loaded ([`HfTokenizer::engine`]):
//!
//! * **modelbin** runs byte-level BPE itself: model `BPE` (no dropout, no
//!   subword prefix or suffix), normalizer none or `NFC`, pre-tokenizer
//!   `ByteLevel` (GPT-2, Pythia, RoBERTa) or `Split(regex, Isolated)` then
//!   `ByteLevel(use_regex: false)` (Llama 3, Qwen2). Pre-tokens come from
//!   modelbin's linear-time GPT-2 scanner or from the file's regex; merges
//!   follow Hugging Face's order (lowest merge index first: see `bpe`);
//!   `ignore_merges` looks the whole pre-token up first. Every byte must
//!   have a token ([`HfTokenizerError::MissingByte`] otherwise).
//! * **tokenizers** (Hugging Face's crate) runs everything else:
//!   `Metaspace` with byte fallback (Llama 2, TinyLlama, Mistral),
//!   Unigram, WordPiece, other normalizers and pre-tokenizers.
//!
//! On both, added tokens split the text first (`added`), and the
//! post-processor puts its special ids around the text's when
//! `add_special_tokens` is true (`post`).
//!
//! [`HfTokenizer::open_dir`] also reads `tokenizer_config.json` for its
//! `bos_token` and `eos_token` (see [`HfTokenizer::bos_id`]); one the
//! tokenizer has no id for is refused
//! ([`HfTokenizerError::UnknownSpecialToken`]), never replaced by another.
//! Its
//! `add_bos_token`/`add_eos_token` change no ids: transformers 5.24 drops
//! them when a `tokenizer.json` is there (`tokenization_utils_base.py`,
//! `from_pretrained`), and `AutoTokenizer` with the generic backend then
//! encodes exactly as `tokenizer.json` says (checked by the tests).
//! Model-specific tokenizer classes that rebuild the tokenizer from its
//! vocabulary are not followed.
//!
//! Files are read whole through `modelbin_format::io::source` (regular
//! files only, at most [`MAX_FILE_BYTES`]); counts, ids and regexes have
//! limits (`raw`), each refusal a [`HfTokenizerError`].
//!
//! ```
//! use modelbin_tokenize::HfTokenizer;
//!
//! // Merges "b c", "a b", "ab c": Hugging Face merges by merge index, so
//! // "abc" is [a, bc] (tiktoken's rule would give [abc]).
//! let json = r#"{"version":"1.0","added_tokens":[],"normalizer":null,
//!   "pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
//!   "post_processor":null,"decoder":null,
//!   "model":{"type":"BPE","vocab":VOCAB,"merges":["b c","a b","ab c"]}}"#;
//! // Every byte's token (ids 0..=255 in byte order), then the merged ones.
//! let alphabet: String = (0..=255u8)
//!     .map(|b| format!("{:?}:{b},", modelbin_tokenize::hf_byte_char(b).to_string()))
//!     .collect();
//! let vocab = format!("{{{alphabet}\"ab\":256,\"bc\":257,\"abc\":258}}");
//! let tokenizer = HfTokenizer::from_json(json.replace("VOCAB", &vocab).as_bytes())?;
//! assert_eq!(tokenizer.engine(), "modelbin");
//! assert_eq!(tokenizer.encode("abc", true)?, [97, 257]);
//! assert_eq!(tokenizer.decode_bytes(&[97, 257])?, b"abc");
//! # Ok::<(), modelbin_tokenize::Error>(())
//! ```

mod added;
mod alphabet;
mod bpe;
pub(crate) mod error;
mod post;
mod pretok;
mod raw;
mod route;

use std::path::Path;

use modelbin_format::io::source::read_capped;
use rustc_hash::FxHashMap;
use serde::Deserialize;

pub use error::HfTokenizerError;
pub use raw::{MAX_CONFIG_BYTES, MAX_FILE_BYTES};

use crate::hf::added::{AddedTokens, Extract, Segment};
use crate::hf::alphabet::Alphabet;
use crate::hf::bpe::ByteLevelBpe;
use crate::hf::post::Post;
use crate::hf::pretok::{Normalizer, PreTokenizer};
use crate::hf::raw::{RawBpe, RawConfig, RawFile, type_of};
use crate::hf::route::HfRoute;
use crate::{Error, Result};

use HfTokenizerError as E;

/// The character of GPT-2's byte-level alphabet that stands for byte `b`
/// in a byte-level `tokenizer.json` (space is `Ġ`).
pub fn hf_byte_char(b: u8) -> char {
    Alphabet::new().char_of(b)
}

/// A tokenizer read from a Hugging Face `tokenizer.json`. Thread-safe:
/// share one across threads.
#[derive(Debug)]
pub struct HfTokenizer {
    engine: Engine,
    /// The post-processor modelbin applies; `None` when the `tokenizers`
    /// crate applies its own (a shape modelbin does not read).
    post: Option<Post>,
    bos: Option<u32>,
    eos: Option<u32>,
    /// The id `encode(.., true)` puts first, if it adds one.
    leading: Option<u32>,
    vocab_size: u32,
}

#[derive(Debug)]
enum Engine {
    Ours(Box<Ours>),
    Hf(Box<HfRoute>),
}

/// modelbin's byte-level BPE tokenizer.
#[derive(Debug)]
struct Ours {
    normalizer: Normalizer,
    pretok: PreTokenizer,
    bpe: ByteLevelBpe,
    added: AddedTokens,
    /// Every model token's bytes, by id.
    tokens: FxHashMap<u32, Box<[u8]>>,
    /// Every model token's id, by its text.
    vocab: FxHashMap<String, u32>,
    alphabet: Alphabet,
}

impl HfTokenizer {
    /// Opens a Hugging Face tokenizer directory: `dir/tokenizer.json`, and
    /// `dir/tokenizer_config.json` when present (see the module docs for
    /// what it changes).
    pub fn open_dir(dir: &Path) -> Result<HfTokenizer> {
        let json = read_capped(
            &dir.join("tokenizer.json"),
            "tokenizer.json",
            MAX_FILE_BYTES,
        )?;
        let config_path = dir.join("tokenizer_config.json");
        let config = if config_path.exists() {
            let bytes = read_capped(&config_path, "tokenizer_config.json", MAX_CONFIG_BYTES)?;
            Some(RawConfig::parse(&bytes)?)
        } else {
            None
        };
        HfTokenizer::build(&json, config)
    }

    /// Opens one `tokenizer.json` file.
    pub fn open(path: &Path) -> Result<HfTokenizer> {
        let json = read_capped(path, "tokenizer.json", MAX_FILE_BYTES)?;
        HfTokenizer::from_json(&json)
    }

    /// A tokenizer from the bytes of a `tokenizer.json`.
    pub fn from_json(bytes: &[u8]) -> Result<HfTokenizer> {
        HfTokenizer::build(bytes, None)
    }

    fn build(bytes: &[u8], config: Option<RawConfig>) -> Result<HfTokenizer> {
        let raw = RawFile::parse(bytes)?;
        let file_post = Post::read(raw.post_processor.as_ref())?;
        let engine = match Ours::build(&raw, file_post.is_some())? {
            Some(ours) => Engine::Ours(Box::new(ours)),
            None => Engine::Hf(Box::new(HfRoute::new(bytes)?)),
        };
        let mut tokenizer = HfTokenizer {
            engine,
            post: file_post,
            bos: None,
            eos: None,
            leading: None,
            vocab_size: 0,
        };
        let config = config.unwrap_or_default();
        let name_id =
            |key: &'static str, name: &Option<raw::RawTokenName>| -> Result<Option<u32>> {
                let Some(name) = name else {
                    return Ok(None);
                };
                match tokenizer.id_of(name.text()) {
                    Some(id) => Ok(Some(id)),
                    None => Err(HfTokenizerError::UnknownSpecialToken {
                        key,
                        token: name.text().to_owned(),
                    }
                    .into()),
                }
            };
        let config_bos = name_id("bos_token", &config.bos_token)?;
        let config_eos = name_id("eos_token", &config.eos_token)?;
        tokenizer.leading = match (&tokenizer.post, &tokenizer.engine) {
            (Some(post), _) => post.leading(),
            (None, Engine::Hf(hf)) => {
                let with = hf.encode("", true, true)?;
                let without = hf.encode("", false, true)?;
                if without.is_empty() {
                    with.first().copied()
                } else {
                    None
                }
            }
            (None, Engine::Ours(_)) => None,
        };
        let trailing = tokenizer.post.as_ref().and_then(Post::trailing);
        tokenizer.bos = config_bos.or(config_eos).or(tokenizer.leading);
        tokenizer.eos = config_eos.or(trailing);
        tokenizer.vocab_size = match &tokenizer.engine {
            Engine::Ours(ours) => {
                let model = ours.tokens.keys().copied().max();
                model.max(ours.added.max_id()).map_or(0, |id| id + 1)
            }
            Engine::Hf(hf) => hf.vocab_size(),
        };
        Ok(tokenizer)
    }

    /// The id of a token's text: an added token's, else the model's.
    fn id_of(&self, text: &str) -> Option<u32> {
        match &self.engine {
            Engine::Ours(ours) => ours.added.id(text).or_else(|| ours.id_of(text)),
            Engine::Hf(hf) => hf.id(text),
        }
    }

    /// The ids of `text`, equal to `tokenizers`' `Tokenizer.encode(text,
    /// add_special_tokens).ids`: added tokens (special or not) are
    /// extracted, and with `add_special_tokens` the post-processor's
    /// special ids are added. Only a file's regex can fail
    /// ([`Error::PatternFailed`]), or the `tokenizers` crate.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let ids = match &self.engine {
            Engine::Ours(ours) => ours.encode(text, Extract::All)?,
            Engine::Hf(hf) => hf.encode(text, add_special_tokens && self.post.is_none(), true)?,
        };
        Ok(match &self.post {
            Some(post) if add_special_tokens => post.apply(ids),
            _ => ids,
        })
    }

    /// The ids of `text` with special tokens' texts treated as plain text
    /// (`tokenizers` with `encode_special_tokens`, no post-processor).
    /// Non-special added tokens are still extracted.
    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<u32>> {
        match &self.engine {
            Engine::Ours(ours) => ours.encode(text, Extract::Ordinary),
            Engine::Hf(hf) => Ok(hf.encode(text, false, false)?),
        }
    }

    /// The bytes `ids` stand for, special tokens included. On modelbin's
    /// engine each token's bytes in turn; on the `tokenizers` route, the
    /// file's decoder (for Metaspace files it drops the space it put
    /// before the text). An id of no token is [`Error::UnknownToken`].
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        match &self.engine {
            Engine::Ours(ours) => {
                let mut out = Vec::with_capacity(ids.len() * 4);
                for &id in ids {
                    out.extend_from_slice(&ours.token_bytes(id).ok_or(Error::UnknownToken(id))?);
                }
                Ok(out)
            }
            Engine::Hf(hf) => {
                if let Some(&id) = ids.iter().find(|&&id| hf.token(id).is_none()) {
                    return Err(Error::UnknownToken(id));
                }
                Ok(hf.decode(ids)?)
            }
        }
    }

    /// One token's bytes (for showing a token alone): on the `tokenizers`
    /// route, a byte-fallback token `<0xHH>` is its byte and any other
    /// token is the decoder's text of it alone.
    pub fn token_bytes(&self, id: u32) -> Option<Vec<u8>> {
        match &self.engine {
            Engine::Ours(ours) => ours.token_bytes(id),
            Engine::Hf(hf) => {
                let token = hf.token(id)?;
                if hf.byte_fallback()
                    && let Some(hex) = token.strip_prefix("<0x").and_then(|t| t.strip_suffix('>'))
                    && hex.len() == 2
                    && let Ok(byte) = u8::from_str_radix(hex, 16)
                {
                    return Some(vec![byte]);
                }
                hf.decode(&[id]).ok()
            }
        }
    }

    /// The BOS id SAELens and TransformerLens prepend: `tokenizer_config.json`'s
    /// `bos_token`, else its `eos_token` (TransformerLens uses EOS when a
    /// tokenizer has no BOS), else the post-processor's leading special
    /// token.
    pub fn bos_id(&self) -> Option<u32> {
        self.bos
    }

    /// The EOS id: `tokenizer_config.json`'s `eos_token`, else the
    /// post-processor's trailing special token.
    pub fn eos_id(&self) -> Option<u32> {
        self.eos
    }

    /// Whether `encode(.., true)` puts [`HfTokenizer::bos_id`] first.
    pub fn adds_bos(&self) -> bool {
        self.bos.is_some() && self.leading == self.bos
    }

    /// The highest id plus one, over the model's vocabulary and the added
    /// tokens.
    pub fn vocab_size(&self) -> u32 {
        self.vocab_size
    }

    /// The engine that runs this file: `"modelbin"` (byte-level BPE) or
    /// `"tokenizers"` (Hugging Face's crate).
    pub fn engine(&self) -> &'static str {
        match self.engine {
            Engine::Ours(_) => "modelbin",
            Engine::Hf(_) => "tokenizers",
        }
    }
}

impl Ours {
    /// modelbin's engine for `raw`, or `None` when the file is not a shape
    /// it runs (or its post-processor is not one it reads).
    fn build(raw: &RawFile, post_read: bool) -> Result<Option<Ours>, E> {
        if !post_read || type_of(&raw.model) != Some("BPE") {
            return Ok(None);
        }
        let Some(normalizer) = Normalizer::read(raw.normalizer.as_ref()) else {
            return Ok(None);
        };
        let Some(pretok) = PreTokenizer::read(raw.pre_tokenizer.as_ref())? else {
            return Ok(None);
        };
        let Ok(model) = RawBpe::deserialize(&raw.model) else {
            return Ok(None); // the tokenizers crate names the problem
        };
        let empty = |s: &Option<String>| s.as_deref().is_none_or(str::is_empty);
        if !empty(&model.continuing_subword_prefix) || !empty(&model.end_of_word_suffix) {
            return Ok(None);
        }
        let alphabet = Alphabet::new();
        let mut tokens: FxHashMap<u32, Box<[u8]>> = FxHashMap::default();
        let mut names: FxHashMap<u32, &str> = FxHashMap::default();
        for (text, &id) in &model.vocab {
            if let Some(first) = names.insert(id, text) {
                let (first, second) = if first < text.as_str() {
                    (first, text.as_str())
                } else {
                    (text.as_str(), first)
                };
                return Err(E::DuplicateId {
                    id,
                    first: first.chars().take(100).collect(),
                    second: second.chars().take(100).collect(),
                });
            }
            tokens.insert(id, alphabet.decode(text).into_boxed_slice());
        }
        let mut byte_ids = [0u32; 256];
        for b in 0..=255u8 {
            let c = alphabet.char_of(b);
            byte_ids[usize::from(b)] = *model
                .vocab
                .get(c.encode_utf8(&mut [0; 4]) as &str)
                .ok_or(E::MissingByte { byte: b, char: c })?;
        }
        let id = |index: usize, token: &str| {
            model
                .vocab
                .get(token)
                .copied()
                .ok_or_else(|| E::MergeNotInVocab {
                    index,
                    token: token.chars().take(200).collect(),
                })
        };
        let mut merges = Vec::with_capacity(model.merges.len());
        for (index, (a, b)) in model.merges.pairs()?.into_iter().enumerate() {
            merges.push((id(index, a)?, id(index, b)?, id(index, &format!("{a}{b}"))?));
        }
        let whole = model.ignore_merges.unwrap_or(false).then(|| {
            model
                .vocab
                .iter()
                .filter_map(|(text, &id)| Some((alphabet.bytes_of(text)?.into_boxed_slice(), id)))
                .collect()
        });
        let added = AddedTokens::new(
            &raw.added_tokens,
            model.vocab.len() as u32,
            |t| model.vocab.get(t).copied(),
            normalizer,
        )?;
        Ok(Some(Ours {
            normalizer,
            pretok,
            bpe: ByteLevelBpe::new(byte_ids, merges, whole),
            added,
            tokens,
            vocab: model.vocab,
            alphabet,
        }))
    }

    /// The ids of `text`.
    fn encode(&self, text: &str, extract: Extract) -> Result<Vec<u32>> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        self.added.split(
            text,
            self.normalizer,
            extract,
            &mut |segment| match segment {
                Segment::Added(id) => {
                    ids.push(id);
                    Ok(())
                }
                Segment::Text(text) => self
                    .pretok
                    .pieces(text, &mut |piece| self.bpe.encode_piece(piece, &mut ids)),
            },
        )?;
        Ok(ids)
    }

    /// An id's bytes: an added token's text through the alphabet (as the
    /// ByteLevel decoder reads it), else the model token's.
    fn token_bytes(&self, id: u32) -> Option<Vec<u8>> {
        if let Some(text) = self.added.text(id) {
            return Some(self.alphabet.decode(text));
        }
        self.tokens.get(&id).map(|b| b.to_vec())
    }

    /// The model id of a token's text.
    fn id_of(&self, text: &str) -> Option<u32> {
        self.vocab.get(text).copied()
    }
}
