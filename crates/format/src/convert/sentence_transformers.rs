//! Exporting an EMBD model as a sentence-transformers model directory, the
//! layout `SentenceTransformer(DIR)` loads: the BERT encoder as a Hugging
//! Face model (`config.json`, `model.safetensors` in float32, the WordPiece
//! tokenizer's `vocab.txt`, `tokenizer_config.json`,
//! `special_tokens_map.json`), and sentence-transformers' own files
//! (`modules.json`, `sentence_bert_config.json`,
//! `config_sentence_transformers.json`, `1_Pooling/config.json`, and
//! `2_Normalize/` when the model normalises).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::embd::{Embd, int8};
use crate::io::output::{self, OutputFile};
use crate::model::{BertConfig, Pooling};
use crate::tensor::{TensorStore, TensorView};
use crate::{DType, Error, ModelError, Result, safetensors};

/// The export's name as a conversion target (`convert --to`).
pub const TARGET: &str = "sentence-transformers";

/// What an export wrote (as `convert --json` reports it).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExportReport {
    /// The input's format (safetensors for a Hugging Face directory).
    pub from: crate::Format,
    /// [`TARGET`].
    pub to: &'static str,
    /// Tensors in `model.safetensors`.
    pub tensors: usize,
    /// Bytes of every file written.
    pub bytes_written: u64,
}

/// Writes the model of `embd` as a sentence-transformers directory at
/// `dir`, which must not exist yet (or be empty), in a directory that
/// exists (see [`output::check_directory_output`]: standard output, a FIFO
/// or a device is refused, a missing parent is not created). Weights stored
/// as f16, bf16 or int8 are written as float32 (int8 dequantized with its
/// scales), which is what the model computes with. The files are written
/// into a staging directory beside `dir` (see [`output::staging_path`]),
/// renamed into place at the end, so `dir` never holds half an export.
/// `progress` gets (bytes written, total).
pub fn export<B: AsRef<[u8]>>(
    embd: &Embd<B>,
    dir: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ExportReport> {
    output::check_directory_output(dir)?;
    let config = BertConfig::validate(embd)?;
    let specials = embd.special_tokens().ok_or_else(|| {
        Error::Model(ModelError::InvalidMetadata {
            key: "vocabulary".into(),
            value: "absent".into(),
            reason: "a sentence-transformers model needs the WordPiece vocabulary".into(),
        })
    })?;
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(Error::io(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the directory exists and is not empty; export into a new one",
            ),
        ));
    }
    let staging = output::staging_path(dir, "");
    let written = write_all(embd, &config, specials, &staging, progress).and_then(|report| {
        if dir.exists() {
            std::fs::remove_dir(dir).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::rename(&staging, dir).map_err(|e| Error::io(dir, e))?;
        Ok(report)
    });
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    written
}

/// Writes every file of the export into `dir`.
fn write_all<B: AsRef<[u8]>>(
    embd: &Embd<B>,
    config: &BertConfig,
    specials: crate::embd::SpecialTokens,
    dir: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ExportReport> {
    // Not create_dir_all: the staging directory's parent was checked to
    // exist, and is never created.
    std::fs::create_dir(dir).map_err(|e| Error::io(dir, e))?;
    std::fs::create_dir(dir.join("1_Pooling")).map_err(|e| Error::io(dir, e))?;
    let weights = float_weights(embd)?;
    let views = weights
        .iter()
        .map(|(name, shape, bytes)| TensorView::new(name, DType::F32, shape, bytes))
        .collect::<Result<Vec<_>>>()?;
    let tensors = views.len();
    let metadata = BTreeMap::from([("format".to_owned(), "pt".to_owned())]);
    let mut bytes_written = safetensors::write_file(
        dir.join("model.safetensors"),
        views,
        Some(&metadata),
        progress,
    )?;

    let token = |id: u32| embd.token(id).unwrap_or_default().to_owned();
    let [pad, unk, cls, sep, mask] = specials.all().map(token);
    let mut vocab = embd.tokens().collect::<Vec<_>>().join("\n");
    vocab.push('\n');
    let hidden_act = embd.metadata_value("hidden_act").unwrap_or("gelu");
    let files: [(&str, Vec<u8>); 8] = [
        ("vocab.txt", vocab.into_bytes()),
        (
            "config.json",
            pretty(&hf_config(config, hidden_act, specials.pad)),
        ),
        (
            "tokenizer_config.json",
            pretty(&json!({
                "tokenizer_class": "BertTokenizer",
                "do_lower_case": config.lowercase,
                "strip_accents": null,
                "tokenize_chinese_chars": true,
                "model_max_length": config.max_seq_length,
                "pad_token": pad, "unk_token": unk, "cls_token": cls,
                "sep_token": sep, "mask_token": mask,
            })),
        ),
        (
            "special_tokens_map.json",
            pretty(&json!({
                "pad_token": pad, "unk_token": unk, "cls_token": cls,
                "sep_token": sep, "mask_token": mask,
            })),
        ),
        ("modules.json", pretty(&modules(config.normalize))),
        (
            "sentence_bert_config.json",
            pretty(&json!({"max_seq_length": config.max_seq_length, "do_lower_case": false})),
        ),
        (
            "config_sentence_transformers.json",
            pretty(&json!({
                "model_type": "SentenceTransformer",
                "prompts": {},
                "default_prompt_name": null,
                "similarity_fn_name": "cosine",
            })),
        ),
        ("1_Pooling/config.json", pretty(&pooling(config))),
    ];
    for (name, bytes) in files {
        bytes_written += write_file(&dir.join(name), &bytes)?;
    }
    if config.normalize {
        std::fs::create_dir(dir.join("2_Normalize")).map_err(|e| Error::io(dir, e))?;
    }
    Ok(ExportReport {
        from: crate::Format::Embd,
        to: TARGET,
        tensors,
        bytes_written,
    })
}

/// A tensor as float32: name, shape, little-endian bytes.
type FloatTensor = (String, Vec<usize>, Vec<u8>);

/// Every model tensor as float32, int8 weights dequantized; their scale
/// tensors are not model tensors.
fn float_weights<B: AsRef<[u8]>>(embd: &Embd<B>) -> Result<Vec<FloatTensor>> {
    embd.tensors()
        .filter(|t| !t.name().ends_with(int8::SCALE_SUFFIX))
        .map(|t| {
            let values = int8::weight_f32(embd, t.name())?;
            let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            Ok((t.name().to_owned(), t.shape().to_vec(), bytes))
        })
        .collect()
}

/// Hugging Face's `config.json` of the BERT encoder.
fn hf_config(config: &BertConfig, hidden_act: &str, pad_id: u32) -> Value {
    json!({
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": hidden_act,
        "max_position_embeddings": config.max_position,
        "type_vocab_size": config.type_vocab_size,
        // The f32 as its shortest decimal (1e-12, not 9.99999996e-13).
        "layer_norm_eps": config.layer_norm_eps.to_string().parse::<f64>().unwrap_or(1e-12),
        "pad_token_id": pad_id,
        "position_embedding_type": "absolute",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
        "torch_dtype": "float32",
    })
}

/// sentence-transformers' module list: the encoder, pooling, and
/// normalisation when the model normalises.
fn modules(normalize: bool) -> Value {
    let mut list = vec![
        json!({"idx": 0, "name": "0", "path": "",
               "type": "sentence_transformers.models.Transformer"}),
        json!({"idx": 1, "name": "1", "path": "1_Pooling",
               "type": "sentence_transformers.models.Pooling"}),
    ];
    if normalize {
        list.push(json!({"idx": 2, "name": "2", "path": "2_Normalize",
                         "type": "sentence_transformers.models.Normalize"}));
    }
    Value::Array(list)
}

/// The pooling module's configuration.
fn pooling(config: &BertConfig) -> Value {
    json!({
        "word_embedding_dimension": config.embedding_dim,
        "pooling_mode_cls_token": config.pooling == Pooling::Cls,
        "pooling_mode_mean_tokens": config.pooling == Pooling::Mean,
        "pooling_mode_max_tokens": config.pooling == Pooling::Max,
        "pooling_mode_mean_sqrt_len_tokens": false,
        "pooling_mode_weightedmean_tokens": false,
        "pooling_mode_lasttoken": false,
        "include_prompt": true,
    })
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).expect("JSON values serialize");
    text.push(b'\n');
    text
}

/// Writes `bytes` to `path` atomically; returns their length.
fn write_file(path: &Path, bytes: &[u8]) -> Result<u64> {
    use std::io::Write;
    let mut file = OutputFile::create(path)?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))?;
    file.commit()?;
    Ok(bytes.len() as u64)
}
