//! Decoder language models refuse what they cannot run with typed errors,
//! each matched on its variant: odd or malformed `config.json`s, sharded
//! checkpoints whose index and shards disagree, tensors of the wrong shape
//! or dtype or with non-finite values, and inputs outside the model.

use std::path::Path;

use modelbin_format::safetensors::{self, ShardError};
use modelbin_format::{DType, ModelError, TensorView};
use modelbin_infer::lm::{LanguageModel, Site};
use modelbin_infer::{Error, LmError};
use serde_json::{Value, json};

/// A tiny Llama: width 8, 2 heads of 4, 1 key/value head, MLP 16,
/// vocabulary 10, context 6, 1 layer, untied.
fn llama_config() -> Value {
    json!({
        "model_type": "llama", "hidden_size": 8, "num_attention_heads": 2,
        "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 10,
        "max_position_embeddings": 6, "num_hidden_layers": 1, "tie_word_embeddings": false,
    })
}

/// The tensors of [`llama_config`], as (name, shape).
fn llama_tensors() -> Vec<(String, Vec<usize>)> {
    let mut t = vec![
        ("model.embed_tokens.weight".to_owned(), vec![10, 8]),
        ("model.norm.weight".to_owned(), vec![8]),
        ("lm_head.weight".to_owned(), vec![10, 8]),
    ];
    let l = "model.layers.0.";
    for (name, shape) in [
        ("input_layernorm.weight", vec![8]),
        ("post_attention_layernorm.weight", vec![8]),
        ("self_attn.q_proj.weight", vec![8, 8]),
        ("self_attn.k_proj.weight", vec![4, 8]),
        ("self_attn.v_proj.weight", vec![4, 8]),
        ("self_attn.o_proj.weight", vec![8, 8]),
        ("mlp.gate_proj.weight", vec![16, 8]),
        ("mlp.up_proj.weight", vec![16, 8]),
        ("mlp.down_proj.weight", vec![8, 16]),
    ] {
        t.push((format!("{l}{name}"), shape));
    }
    t
}

/// Small varied values for a tensor of `n` elements, as F32 bytes.
fn values(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| (((i * 7919) % 13) as f32 * 0.05 - 0.3).to_le_bytes())
        .collect()
}

/// What may replace a tensor's data: given its name and element count,
/// its dtype and bytes instead of the F32 values.
type Replace = dyn Fn(&str, usize) -> Option<(DType, Vec<u8>)>;

/// Writes `shapes` (F32) as the safetensors file `path`; `replace` may
/// replace a tensor's data and dtype.
fn write_tensors(path: &Path, shapes: &[(String, Vec<usize>)], replace: &Replace) {
    let data: Vec<(DType, Vec<u8>)> = shapes
        .iter()
        .map(|(name, shape)| {
            let n = shape.iter().product();
            replace(name, n).unwrap_or_else(|| (DType::F32, values(n)))
        })
        .collect();
    let views: Vec<TensorView<'_>> = shapes
        .iter()
        .zip(&data)
        .map(|((name, shape), (dtype, bytes))| TensorView::new(name, *dtype, shape, bytes).unwrap())
        .collect();
    safetensors::write_file(path, views, None, &mut |_, _| {}).unwrap();
}

/// A model directory of `config` and the F32 tensors `shapes`.
fn model_dir(config: &Value, shapes: &[(String, Vec<usize>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    write_tensors(&dir.path().join("model.safetensors"), shapes, &|_, _| None);
    dir
}

fn open(config: &Value) -> modelbin_infer::Result<LanguageModel> {
    let dir = model_dir(config, &llama_tensors());
    LanguageModel::open(dir.path())
}

fn lm_error(result: modelbin_infer::Result<LanguageModel>) -> LmError {
    match result {
        Err(Error::Lm(e)) => e,
        other => panic!("expected an LmError, got {other:?}"),
    }
}

fn model_error(result: modelbin_infer::Result<LanguageModel>) -> ModelError {
    match result {
        Err(Error::Format(modelbin_format::Error::Model(e))) => e,
        other => panic!("expected a ModelError, got {other:?}"),
    }
}

fn shard_error(result: modelbin_infer::Result<LanguageModel>) -> ShardError {
    match result {
        Err(Error::Format(modelbin_format::Error::Shard(e))) => e,
        other => panic!("expected a ShardError, got {other:?}"),
    }
}

/// `config` with `key` set to `value`.
fn with(mut config: Value, key: &str, value: Value) -> Value {
    config[key] = value;
    config
}

#[test]
fn the_tiny_model_opens_and_runs() {
    let model = open(&llama_config()).unwrap();
    let c = model.config();
    assert_eq!((c.hidden, c.heads, c.kv_heads, c.head_dim), (8, 2, 1, 4));
    assert_eq!(
        (c.bos_token_id, c.eos_token_ids.clone()),
        (Some(1), vec![2])
    );
    let logits = model.logits(&[1, 2, 3]).unwrap();
    assert_eq!(logits.len(), 3 * 10);
    let rows = model
        .activations(&[1, 2, 3, 4], 2, &[0], Site::MlpOut)
        .unwrap();
    assert_eq!(rows[0].len(), 4 * 8);
}

#[test]
fn unknown_model_types_are_named() {
    for (value, name) in [
        (json!("mixtral"), "mixtral"),
        (json!(7), ""),
        (Value::Null, ""),
    ] {
        match lm_error(open(&with(llama_config(), "model_type", value))) {
            LmError::UnsupportedModelType {
                model_type,
                supported,
            } => {
                assert_eq!(model_type, name);
                assert_eq!(
                    supported,
                    "gpt2, gpt_neox, llama, mistral, qwen2, qwen3, gemma2 or gemma3_text"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn malformed_config_json_is_refused() {
    let dir = model_dir(&llama_config(), &llama_tensors());
    let config = dir.path().join("config.json");
    std::fs::write(&config, "{\"model_type\": \"llama\", ").unwrap();
    assert!(matches!(
        LanguageModel::open(dir.path()),
        Err(Error::Format(modelbin_format::Error::Layout(_)))
    ));
    std::fs::write(&config, "[1, 2]").unwrap();
    assert!(matches!(
        model_error(LanguageModel::open(dir.path())),
        ModelError::InvalidMetadata { .. }
    ));
    std::fs::remove_file(&config).unwrap();
    assert!(matches!(
        LanguageModel::open(dir.path()),
        Err(Error::Format(modelbin_format::Error::Io { .. }))
    ));
}

#[test]
fn odd_values_name_their_key() {
    for (key, value) in [
        ("hidden_size", json!("eight")),
        ("hidden_size", json!(0)),
        ("num_hidden_layers", json!(-1)),
        ("vocab_size", json!(1e12)),
        ("rms_norm_eps", json!(2.0)),
        ("eos_token_id", json!([2, "x"])),
        ("bos_token_id", json!(1u64 << 40)),
    ] {
        match model_error(open(&with(llama_config(), key, value.clone()))) {
            ModelError::InvalidMetadata { key: named, .. } => {
                assert_eq!(named, format!("config.json {key}"), "{value}")
            }
            other => panic!("{key} {value}: {other:?}"),
        }
    }
}

/// A tiny configuration of each family: a model type and the keys that
/// keep it small.
fn tiny_configs() -> Vec<Value> {
    vec![
        json!({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1, "vocab_size": 10, "n_positions": 6}),
        json!({"model_type": "gpt_neox", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
               "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 6, "rotary_pct": 0.5}),
        llama_config(),
        with(llama_config(), "model_type", json!("qwen2")),
        with(llama_config(), "model_type", json!("mistral")),
        with(
            with(llama_config(), "model_type", json!("qwen3")),
            "head_dim",
            json!(4),
        ),
        with(
            with(llama_config(), "model_type", json!("gemma2")),
            "head_dim",
            json!(4),
        ),
        with(
            with(llama_config(), "model_type", json!("gemma3_text")),
            "head_dim",
            json!(4),
        ),
    ]
}

/// The shape keys every Llama-shaped family reads.
const LLAMA_SHAPE: [&str; 9] = [
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "max_position_embeddings",
    "rms_norm_eps",
];

/// The RoPE keys of the Llama-shaped families.
const ROPE: [&str; 3] = ["rope_theta", "rope_scaling", "rope_parameters"];

/// Qwen's sliding-window keys.
const QWEN_SLIDING: [&str; 4] = [
    "use_sliding_window",
    "sliding_window",
    "max_window_layers",
    "layer_types",
];

/// Gemma's own keys.
const GEMMA: [&str; 6] = [
    "query_pre_attn_scalar",
    "sliding_window",
    "layer_types",
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "use_bidirectional_attention",
];

/// Every key each family reads, as the docs list them.
fn keys_read(model_type: &str) -> Vec<&'static str> {
    let common = ["tie_word_embeddings", "bos_token_id", "eos_token_id"];
    let family: Vec<&str> = match model_type {
        "gpt2" => vec![
            "vocab_size",
            "n_positions",
            "n_embd",
            "n_layer",
            "n_head",
            "n_inner",
            "activation_function",
            "layer_norm_epsilon",
            "scale_attn_weights",
            "scale_attn_by_inverse_layer_idx",
            "add_cross_attention",
        ],
        "gpt_neox" => vec![
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "hidden_act",
            "max_position_embeddings",
            "layer_norm_eps",
            "use_parallel_residual",
            "attention_bias",
            "rotary_pct",
            "rotary_emb_base",
            "rope_scaling",
            "rope_parameters",
        ],
        "llama" => [
            LLAMA_SHAPE.as_slice(),
            &[
                "hidden_act",
                "attention_bias",
                "mlp_bias",
                "partial_rotary_factor",
            ],
            &ROPE,
        ]
        .concat(),
        "qwen2" => [
            LLAMA_SHAPE.as_slice(),
            &["hidden_act", "partial_rotary_factor"],
            &ROPE,
            &QWEN_SLIDING,
        ]
        .concat(),
        "qwen3" => [
            LLAMA_SHAPE.as_slice(),
            &["hidden_act", "attention_bias", "partial_rotary_factor"],
            &ROPE,
            &QWEN_SLIDING,
        ]
        .concat(),
        "mistral" => [
            LLAMA_SHAPE.as_slice(),
            &["hidden_act", "partial_rotary_factor", "sliding_window"],
            &ROPE,
        ]
        .concat(),
        "gemma2" => [
            LLAMA_SHAPE.as_slice(),
            &[
                "hidden_activation",
                "attention_bias",
                "partial_rotary_factor",
            ],
            &ROPE,
            &GEMMA,
        ]
        .concat(),
        "gemma3_text" => [
            LLAMA_SHAPE.as_slice(),
            &[
                "hidden_activation",
                "attention_bias",
                "rope_local_base_freq",
            ],
            &ROPE,
            &GEMMA,
            &["sliding_window_pattern"],
        ]
        .concat(),
        other => panic!("no key list for {other}"),
    };
    family.iter().chain(&common).copied().collect()
}

/// Opens a directory holding `config` alone: the configuration is read
/// (and refused) before any tensor.
fn open_config(config: &Value) -> modelbin_infer::Result<LanguageModel> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    LanguageModel::open(dir.path())
}

#[test]
fn every_key_a_family_reads_refuses_a_value_of_the_wrong_type() {
    // Values no key takes: transformers would read the strings and the
    // number 1 by Python's truthiness where a boolean is meant, and the
    // default must not be taken silently either.
    let wrong = [
        json!("yes"),
        json!("no"),
        json!([1]),
        json!({"a": 1}),
        json!(true),
        json!(1),
    ];
    for config in tiny_configs() {
        let model_type = config["model_type"].as_str().unwrap().to_owned();
        for key in keys_read(&model_type) {
            for value in &wrong {
                // A value the key may legitimately hold is not a wrong one.
                let fits = match key {
                    "eos_token_id" => value == &json!(1) || value == &json!([1]),
                    "bos_token_id" => value == &json!(1),
                    "rope_scaling" | "rope_parameters" => value.is_object(),
                    _ if value == &json!(true) => {
                        key.starts_with("scale_attn")
                            || [
                                "tie_word_embeddings",
                                "add_cross_attention",
                                "use_parallel_residual",
                                "attention_bias",
                                "mlp_bias",
                                "use_sliding_window",
                                "use_bidirectional_attention",
                            ]
                            .contains(&key)
                    }
                    _ if value == &json!(1) => ![
                        "tie_word_embeddings",
                        "add_cross_attention",
                        "use_parallel_residual",
                        "attention_bias",
                        "mlp_bias",
                        "use_sliding_window",
                        "use_bidirectional_attention",
                        "hidden_activation",
                        "scale_attn_weights",
                        "scale_attn_by_inverse_layer_idx",
                        "hidden_act",
                        "activation_function",
                        "rope_scaling",
                        "rope_parameters",
                        "layer_types",
                        "layer_norm_epsilon",
                        "layer_norm_eps",
                        "rms_norm_eps",
                    ]
                    .contains(&key),
                    _ => false,
                };
                if fits {
                    continue;
                }
                match open_config(&with(config.clone(), key, value.clone())) {
                    Err(Error::Format(modelbin_format::Error::Model(
                        ModelError::InvalidMetadata { key: named, .. },
                    ))) => assert_eq!(named, format!("config.json {key}"), "{model_type} {value}"),
                    // The activation keys name an unsupported activation.
                    Err(Error::Lm(LmError::UnsupportedActivation { key: named, .. }))
                        if named == key => {}
                    // A boolean the key takes, naming what is refused.
                    Err(Error::Lm(LmError::BidirectionalAttention))
                        if key == "use_bidirectional_attention" => {}
                    other => panic!("{model_type} {key} = {value}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn keys_of_the_audit_are_refused_by_name() {
    let gpt2 = &tiny_configs()[0];
    for value in [json!("yes"), json!("no"), json!(1)] {
        let config = with(gpt2.clone(), "scale_attn_by_inverse_layer_idx", value);
        assert!(matches!(
            model_error(open_config(&config)),
            ModelError::InvalidMetadata { key, .. } if key == "config.json scale_attn_by_inverse_layer_idx"
        ));
    }
    let neox = with(
        tiny_configs()[1].clone(),
        "use_parallel_residual",
        json!("no"),
    );
    assert!(matches!(
        model_error(open_config(&neox)),
        ModelError::InvalidMetadata { key, .. } if key == "config.json use_parallel_residual"
    ));
    let linear = with(llama_config(), "rope_scaling", json!("linear"));
    assert!(matches!(
        model_error(open_config(&linear)),
        ModelError::InvalidMetadata { key, .. } if key == "config.json rope_scaling"
    ));
    let mut qwen = tiny_configs()[3].clone();
    qwen["num_hidden_layers"] = json!(2);
    qwen["layer_types"] = json!(["full_attention"]);
    assert!(matches!(
        model_error(open_config(&qwen)),
        ModelError::InvalidMetadata { key, .. } if key == "config.json layer_types"
    ));
    qwen["layer_types"] = json!(["full_attention", "local"]);
    assert!(matches!(
        model_error(open_config(&qwen)),
        ModelError::InvalidMetadata { key, .. } if key == "config.json layer_types"
    ));
    // Full attention on every layer, one entry per layer: runs.
    qwen["layer_types"] = json!(["full_attention", "full_attention"]);
    assert!(!matches!(
        open_config(&qwen),
        Err(Error::Format(modelbin_format::Error::Model(
            ModelError::InvalidMetadata { .. }
        )))
    ));
}

#[test]
fn eos_may_be_a_list() {
    let model = open(&with(llama_config(), "eos_token_id", json!([2, 7]))).unwrap();
    assert_eq!(model.config().eos_token_ids, [2, 7]);
}

#[test]
fn unsupported_rope_types_activations_and_shapes_are_typed() {
    let yarn = with(
        llama_config(),
        "rope_scaling",
        json!({"rope_type": "yarn", "factor": 4.0}),
    );
    assert!(
        matches!(lm_error(open(&yarn)), LmError::UnsupportedRope { rope_type } if rope_type == "yarn")
    );
    let v5 = with(
        llama_config(),
        "rope_parameters",
        json!({"rope_type": "dynamic", "rope_theta": 1e4}),
    );
    assert!(matches!(
        lm_error(open(&v5)),
        LmError::UnsupportedRope { .. }
    ));
    let llama3 = with(
        llama_config(),
        "rope_scaling",
        json!({"rope_type": "llama3", "factor": 8.0}),
    );
    assert!(matches!(
        lm_error(open(&llama3)),
        LmError::BadRope {
            key: "low_freq_factor",
            ..
        }
    ));
    let tanh = with(llama_config(), "hidden_act", json!("tanh"));
    assert!(matches!(
        lm_error(open(&tanh)),
        LmError::UnsupportedActivation { key: "hidden_act", name } if name == "tanh"
    ));
    let kv = with(llama_config(), "num_key_value_heads", json!(3));
    assert!(matches!(
        lm_error(open(&kv)),
        LmError::KvHeadsDoNotDivide {
            heads: 2,
            kv_heads: 3
        }
    ));
    let heads = with(llama_config(), "num_attention_heads", json!(3));
    assert!(matches!(
        lm_error(open(&heads)),
        LmError::HeadsDoNotDivide {
            hidden: 8,
            heads: 3
        }
    ));
}

#[test]
fn family_rules_are_typed() {
    let gpt2 = json!({"model_type": "gpt2", "n_embd": 8, "n_head": 3, "n_layer": 1});
    assert!(matches!(
        lm_error(open(&gpt2)),
        LmError::HeadsDoNotDivide { .. }
    ));
    let cross =
        json!({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "add_cross_attention": true});
    assert!(matches!(lm_error(open(&cross)), LmError::CrossAttention));
    // A sliding layer needs a window, as transformers says too.
    let mut qwen = with(llama_config(), "model_type", json!("qwen2"));
    qwen["layer_types"] = json!(["sliding_attention"]);
    assert!(matches!(
        lm_error(open(&qwen)),
        LmError::NoSlidingWindow { layer: 0 }
    ));
    let mut gemma = with(llama_config(), "model_type", json!("gemma3_text"));
    gemma["layer_types"] = json!(["sliding_attention"]);
    gemma["sliding_window"] = json!(null);
    assert!(matches!(
        lm_error(open(&gemma)),
        LmError::NoSlidingWindow { layer: 0 }
    ));
    gemma["use_bidirectional_attention"] = json!(true);
    assert!(matches!(
        lm_error(open(&gemma)),
        LmError::BidirectionalAttention
    ));
    for (key, value) in [
        (
            "layer_types",
            json!(["sliding_attention", "full_attention"]),
        ),
        ("layer_types", json!(["local_attention"])),
        ("sliding_window", json!(0)),
        ("attn_logit_softcapping", json!(-1.0)),
        ("query_pre_attn_scalar", json!(0)),
    ] {
        let config = with(
            with(llama_config(), "model_type", json!("gemma2")),
            key,
            value,
        );
        assert!(
            matches!(
                model_error(open_config(&config)),
                ModelError::InvalidMetadata { key: named, .. } if named == format!("config.json {key}")
            ),
            "{key}"
        );
    }
}

#[test]
fn tensors_of_the_wrong_shape_dtype_or_value_are_named() {
    let q = "model.layers.0.self_attn.q_proj.weight";
    let mut shapes = llama_tensors();
    shapes.iter_mut().find(|(n, _)| n == q).unwrap().1 = vec![8, 7];
    let dir = model_dir(&llama_config(), &shapes);
    match model_error(LanguageModel::open(dir.path())) {
        ModelError::WrongShape {
            name,
            expected,
            found,
        } => {
            assert_eq!(
                (name.as_str(), expected, found),
                (q, vec![8, 8], vec![8, 7])
            );
        }
        other => panic!("{other:?}"),
    }
    let rewrite = |replace: &Replace| {
        let dir = model_dir(&llama_config(), &llama_tensors());
        write_tensors(
            &dir.path().join("model.safetensors"),
            &llama_tensors(),
            replace,
        );
        LanguageModel::open(dir.path())
    };
    let ints = rewrite(&move |name, n| (name == q).then(|| (DType::I32, vec![0; 4 * n])));
    assert!(matches!(model_error(ints), ModelError::WrongDtype { name, .. } if name == q));
    let nan = rewrite(&move |name, n| {
        (name == q).then(|| {
            let mut bytes = values(n);
            bytes[12..16].copy_from_slice(&f32::NAN.to_le_bytes());
            (DType::F32, bytes)
        })
    });
    assert!(matches!(model_error(nan), ModelError::NonFinite { name, index: 3, .. } if name == q));
    let mut missing = llama_tensors();
    missing.retain(|(n, _)| !n.ends_with("up_proj.weight"));
    let dir = model_dir(&llama_config(), &missing);
    assert!(matches!(
        model_error(LanguageModel::open(dir.path())),
        ModelError::MissingTensor { name } if name == "model.layers.0.mlp.up_proj.weight"
    ));
}

/// The tiny model split in two shards (the embedding alone in the first)
/// with an index that `edit` may change, opened.
fn sharded(edit: &dyn Fn(&Path, &mut Value)) -> modelbin_infer::Result<LanguageModel> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), llama_config().to_string()).unwrap();
    let (first, second): (Vec<_>, Vec<_>) = llama_tensors()
        .into_iter()
        .partition(|(n, _)| n.contains("embed"));
    write_tensors(&dir.path().join("a.safetensors"), &first, &|_, _| None);
    write_tensors(&dir.path().join("b.safetensors"), &second, &|_, _| None);
    let mut map = serde_json::Map::new();
    for (name, _) in &first {
        map.insert(name.clone(), json!("a.safetensors"));
    }
    for (name, _) in &second {
        map.insert(name.clone(), json!("b.safetensors"));
    }
    let mut index = json!({"metadata": {"total_size": 0}, "weight_map": map});
    edit(dir.path(), &mut index);
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        serde_json::to_string(&index).unwrap(),
    )
    .unwrap();
    LanguageModel::open(dir.path())
}

#[test]
fn sharded_checkpoints_load_and_their_index_is_checked() {
    let whole = open(&llama_config()).unwrap().logits(&[1, 2]).unwrap();
    let split = sharded(&|_, _| {}).unwrap().logits(&[1, 2]).unwrap();
    assert_eq!(whole, split);
    let missing = sharded(&|dir, _| std::fs::remove_file(dir.join("b.safetensors")).unwrap());
    assert!(
        matches!(shard_error(missing), ShardError::MissingShard { shard, .. } if shard == "b.safetensors")
    );
    let outside =
        sharded(&|_, index| index["weight_map"]["model.norm.weight"] = json!("../b.safetensors"));
    assert!(matches!(
        shard_error(outside),
        ShardError::BadShardName { .. }
    ));
    let wrong =
        sharded(&|_, index| index["weight_map"]["model.norm.weight"] = json!("a.safetensors"));
    assert!(
        matches!(shard_error(wrong), ShardError::NotInShard { tensor, .. } if tensor == "model.norm.weight")
    );
    let twice = sharded(&|dir, _| {
        let mut both = llama_tensors();
        both.retain(|(n, _)| n.contains("embed") || n.contains("norm.weight"));
        write_tensors(&dir.join("a.safetensors"), &both, &|_, _| None);
    });
    assert!(
        matches!(shard_error(twice), ShardError::TensorTwice { tensor, .. } if tensor.contains("norm"))
    );
    let bad = sharded(&|_, index| *index = json!({"weight_map": [1, 2]}));
    assert!(matches!(shard_error(bad), ShardError::BadIndex { .. }));
}

#[test]
fn named_twice_in_the_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("model.safetensors.index.json");
    std::fs::write(
        &index,
        r#"{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}"#,
    )
    .unwrap();
    match modelbin_format::safetensors::sharded::Sharded::open_index(&index) {
        Err(modelbin_format::Error::Shard(ShardError::NamedTwice { tensor, .. })) => {
            assert_eq!(tensor, "a")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn inputs_outside_the_model_are_refused() {
    let model = open(&llama_config()).unwrap();
    assert!(matches!(
        model.logits(&[1, 10]),
        Err(Error::TokenOutOfRange {
            id: 10,
            position: 1,
            vocab_size: 10
        })
    ));
    assert!(matches!(
        model.logits(&[1; 7]),
        Err(Error::SequenceTooLong { len: 7, max: 6 })
    ));
    let mut session = model.session();
    session.extend(&[1; 4], false).unwrap();
    assert!(matches!(
        session.extend(&[1; 3], false),
        Err(Error::SequenceTooLong { len: 7, max: 6 })
    ));
    assert_eq!(session.len(), 4);
    assert!(matches!(model.logits(&[]), Err(Error::EmptyInput)));
    assert!(matches!(
        model.activations(&[1, 2, 3], 2, &[0], Site::ResidPost),
        Err(Error::Lm(LmError::NotWholeWindows { ids: 3, window: 2 }))
    ));
    assert!(matches!(
        model.activations(&[1; 14], 7, &[0], Site::ResidPost),
        Err(Error::SequenceTooLong { .. })
    ));
    assert!(matches!(
        model.activations(&[1, 2], 2, &[1], Site::ResidPost),
        Err(Error::Lm(LmError::NoSuchLayer {
            layer: 1,
            layers: 1
        }))
    ));
    assert!(matches!(
        "resid_mid".parse::<Site>(),
        Err(Error::Lm(LmError::UnknownSite { name })) if name == "resid_mid"
    ));
    for site in Site::ALL {
        assert_eq!(site.name().parse::<Site>().unwrap(), site);
    }
}
