//! Converting a Hugging Face / sentence-transformers BERT model directory
//! (`config.json`, `model.safetensors`, `vocab.txt`, and optionally
//! `sentence_bert_config.json`, `tokenizer_config.json`, `modules.json`,
//! `1_Pooling/config.json`) to EMBD.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::Value;

use crate::ModelError;
use crate::embd::int8::Quantizer;
use crate::embd::{
    SpecialTokens, Stored, Vocabulary, WriteOptions, check_weight_dtype, write_file,
};
use crate::io::checksum::{hex, sha256};
use crate::io::source;
use crate::io::source::JsonCaps;
use crate::model::{BertConfig, Pooling};
use crate::tensor::{TensorStore, TensorView};
use crate::{DType, Error, Result, safetensors};

/// The tensor sentence-transformers keeps that the model does not use.
const SKIPPED: &str = "embeddings.position_ids";

/// Choices for [`from_hf_dir`].
#[derive(Debug, Clone, Copy, Default)]
pub struct HfOptions {
    /// Store float tensors as this dtype (F32, F16 or BF16) instead of as
    /// they are; I8 stores the encoder's linear weights as int8 with a
    /// scale per block of 32 inputs (see [`crate::embd::int8`]) and keeps the
    /// rest as it is.
    pub dtype: Option<DType>,
    /// Where int8 values and scales come from when `dtype` is I8.
    pub quantizer: Option<Quantizer>,
}

/// Whether `dir` looks like a model directory [`from_hf_dir`] can convert.
pub fn is_hf_model_dir(dir: &Path) -> bool {
    ["config.json", "model.safetensors", "vocab.txt"]
        .iter()
        .all(|f| dir.join(f).is_file())
}

/// The largest `vocab.txt` read (multilingual BERT vocabularies are ~2 MB).
const MAX_VOCAB_BYTES: u64 = 64 << 20;

fn read_json(path: &Path) -> Result<Option<Value>> {
    if !path.exists() {
        return Ok(None);
    }
    source::read_json(path, "a model configuration file", JsonCaps::CONFIG).map(Some)
}

fn config_number(config: &Value, key: &str) -> Result<String> {
    config[key]
        .as_u64()
        .filter(|&n| n > 0)
        .map(|n| n.to_string())
        .ok_or_else(|| {
            Error::Model(ModelError::InvalidMetadata {
                key: format!("config.json {key}"),
                value: config[key].to_string(),
                reason: "expected a positive integer".into(),
            })
        })
}

/// The EMBD metadata for the model in `dir`, from its JSON files.
fn model_metadata(dir: &Path, weights_digest: &str) -> Result<BTreeMap<String, String>> {
    let config = read_json(&dir.join("config.json"))?.unwrap_or_default();
    if let Some(kind) = config["model_type"].as_str().filter(|&k| k != "bert") {
        return Err(Error::Model(ModelError::InvalidMetadata {
            key: "config.json model_type".into(),
            value: kind.into(),
            reason: "only BERT encoders are supported".into(),
        }));
    }
    let mut m = BTreeMap::new();
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "model".into());
    m.insert("model_name".into(), name);
    m.insert("model_version".into(), format!("sha256:{weights_digest}"));
    for (key, source) in [
        ("vocab_size", "vocab_size"),
        ("num_layers", "num_hidden_layers"),
        ("num_attention_heads", "num_attention_heads"),
        ("hidden_size", "hidden_size"),
        ("embedding_dim", "hidden_size"),
        ("intermediate_size", "intermediate_size"),
        ("max_position_emb", "max_position_embeddings"),
    ] {
        m.insert(key.into(), config_number(&config, source)?);
    }
    m.insert("created_at".into(), created_at());
    m.insert(
        "hidden_act".into(),
        config["hidden_act"].as_str().unwrap_or("gelu").into(),
    );
    if let Some(eps) = config["layer_norm_eps"].as_f64() {
        m.insert("layer_norm_eps".into(), format!("{:e}", eps as f32));
    }
    let st = read_json(&dir.join("sentence_bert_config.json"))?.unwrap_or_default();
    let tokenizer = read_json(&dir.join("tokenizer_config.json"))?.unwrap_or_default();
    let max_positions = config["max_position_embeddings"].as_u64().unwrap_or(512);
    let max_seq = st["max_seq_length"]
        .as_u64()
        .or_else(|| tokenizer["model_max_length"].as_u64())
        .unwrap_or(512)
        .min(max_positions);
    m.insert("max_seq_length".into(), max_seq.to_string());
    let lowercase = tokenizer["do_lower_case"].as_bool().unwrap_or(true);
    m.insert("do_lower_case".into(), lowercase.to_string());
    let pooling = read_json(&dir.join("1_Pooling/config.json"))?.unwrap_or_default();
    let pooling = if pooling["pooling_mode_cls_token"] == Value::Bool(true) {
        Pooling::Cls
    } else if pooling["pooling_mode_max_tokens"] == Value::Bool(true) {
        Pooling::Max
    } else {
        Pooling::Mean
    };
    m.insert("pooling".into(), pooling.name().into());
    let modules = read_json(&dir.join("modules.json"))?.unwrap_or_default();
    let normalize = modules.as_array().is_some_and(|list| {
        list.iter()
            .any(|module| module["type"] == "sentence_transformers.models.Normalize")
    });
    m.insert("normalize".into(), normalize.to_string());
    Ok(m)
}

/// `created_at`: `SOURCE_DATE_EPOCH` (for reproducible files) or now, as
/// ISO 8601 UTC.
fn created_at() -> String {
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    iso8601(seconds)
}

/// Seconds since 1970 as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
fn iso8601(seconds: u64) -> String {
    let (days, rem) = ((seconds / 86_400) as i64, seconds % 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Tensors in the encoder's natural order (embeddings, layers by number),
/// then any others (such as the pooler) by name.
pub(crate) fn model_order<'a>(
    config: &BertConfig,
    mut tensors: Vec<TensorView<'a>>,
) -> Vec<TensorView<'a>> {
    let rank: BTreeMap<String, usize> = config
        .tensors()
        .enumerate()
        .map(|(i, (name, _))| (name, i))
        .collect();
    tensors.sort_by(|a, b| {
        let key = |t: &TensorView<'_>| {
            (
                rank.get(t.name()).copied().unwrap_or(usize::MAX),
                t.name().to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    tensors
}

/// Converts the model in `dir` to an EMBD file at `out`, atomically.
/// `embeddings.position_ids` is skipped and a `bert.` name prefix dropped;
/// the pooler, if present, is kept. Returns (tensors written, file size).
pub fn from_hf_dir(
    dir: &Path,
    out: &Path,
    options: HfOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(usize, u64)> {
    check_weight_dtype(options.dtype)?;
    let weights_path = dir.join("model.safetensors");
    let weights = safetensors::open(&weights_path)?;
    let digest = hex(&sha256(weights.file_bytes()))[..16].to_owned();
    let metadata = model_metadata(dir, &digest)?;
    let vocab_path = dir.join("vocab.txt");
    let vocab_text = source::read_capped_text(&vocab_path, "vocab.txt", MAX_VOCAB_BYTES)?;
    let tokens: Vec<&str> = vocab_text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .collect();
    let specials = SpecialTokens::find(&tokens)?;

    let renamed: Vec<String> = weights
        .tensors()
        .map(|t| {
            t.name()
                .strip_prefix("bert.")
                .unwrap_or(t.name())
                .to_owned()
        })
        .collect();
    let (sources, names): (Vec<TensorView<'_>>, Vec<&str>) = weights
        .tensors()
        .zip(&renamed)
        .filter(|(_, name)| *name != SKIPPED)
        .map(|(tensor, name)| (tensor, name.as_str()))
        .unzip();
    let stored = Stored::new(&sources, &names, options.dtype, options.quantizer)?;
    let views = stored.views(&sources, &names)?;
    let type_vocab = views
        .iter()
        .find(|t| t.name() == "embeddings.token_type_embeddings.weight")
        .and_then(|t| t.shape().first().copied())
        .unwrap_or(1);
    let config = BertConfig::from_metadata(&metadata, type_vocab)?;
    if tokens.len() != config.vocab_size {
        return Err(Error::Model(ModelError::InvalidMetadata {
            key: "config.json vocab_size".into(),
            value: config.vocab_size.to_string(),
            reason: format!("vocab.txt has {} tokens", tokens.len()),
        }));
    }
    let by_name: HashMap<&str, &TensorView<'_>> = views.iter().map(|t| (t.name(), t)).collect();
    for (name, shape) in config.tensors() {
        match by_name.get(name.as_str()) {
            None => return Err(Error::Model(ModelError::MissingTensor { name })),
            Some(t) if t.shape() != shape.as_slice() => {
                return Err(Error::Model(ModelError::WrongShape {
                    name,
                    expected: shape,
                    found: t.shape().to_vec(),
                }));
            }
            Some(_) => {}
        }
    }
    let views = model_order(&config, views);
    let vocabulary = Vocabulary {
        tokens: &tokens,
        specials,
    };
    let size = write_file(
        out,
        &views,
        &metadata,
        Some(&vocabulary),
        &WriteOptions::default(),
        progress,
    )?;
    Ok((views.len(), size))
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_737_028_800), "2025-01-16T12:00:00Z");
        assert_eq!(iso8601(4_102_444_799), "2099-12-31T23:59:59Z");
    }
}
