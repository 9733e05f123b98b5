//! Loading and refusals of vision transformers on small model directories
//! written here (their outputs are checked against transformers in
//! crates/python/tests_heavy/test_vit.py).

use std::path::Path;

use modelbin_format::{DType, ModelError, TensorView, safetensors};
use serde_json::{Value, json};

use super::{Family, VisionModel};
use crate::Error;

/// The tensors of a CLIP vision tower of width 8, 1 block, 4×4 patches on
/// 8×8 images, as (name, shape).
fn clip_tensors() -> Vec<(String, Vec<usize>)> {
    let mut t: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.class_embedding".into(), vec![8]),
        ("embeddings.patch_embedding.weight".into(), vec![8, 3, 4, 4]),
        ("embeddings.position_embedding.weight".into(), vec![5, 8]),
        ("pre_layrnorm.weight".into(), vec![8]),
        ("pre_layrnorm.bias".into(), vec![8]),
    ];
    let l = "encoder.layers.0.";
    for p in ["q_proj", "k_proj", "v_proj", "out_proj"] {
        t.push((format!("{l}self_attn.{p}.weight"), vec![8, 8]));
        t.push((format!("{l}self_attn.{p}.bias"), vec![8]));
    }
    for n in ["layer_norm1", "layer_norm2"] {
        t.push((format!("{l}{n}.weight"), vec![8]));
        t.push((format!("{l}{n}.bias"), vec![8]));
    }
    t.push((format!("{l}mlp.fc1.weight"), vec![16, 8]));
    t.push((format!("{l}mlp.fc1.bias"), vec![16]));
    t.push((format!("{l}mlp.fc2.weight"), vec![8, 16]));
    t.push((format!("{l}mlp.fc2.bias"), vec![8]));
    t
}

fn clip_config() -> Value {
    json!({
        "model_type": "clip_vision_model", "hidden_size": 8, "intermediate_size": 16,
        "num_hidden_layers": 1, "num_attention_heads": 2, "patch_size": 4, "image_size": 8,
    })
}

/// Writes `config` and F32 tensors of `shapes` (small varied values) to
/// `dir`.
fn write_model(dir: &Path, config: &Value, shapes: &[(String, Vec<usize>)]) {
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let data: Vec<Vec<u8>> = shapes
        .iter()
        .map(|(_, shape)| {
            let n: usize = shape.iter().product();
            (0..n)
                .flat_map(|i| (((i * 7919) % 13) as f32 * 0.01 - 0.06).to_le_bytes())
                .collect()
        })
        .collect();
    let views: Vec<TensorView<'_>> = shapes
        .iter()
        .zip(&data)
        .map(|((name, shape), bytes)| TensorView::new(name, DType::F32, shape, bytes).unwrap())
        .collect();
    safetensors::write_file(dir.join("model.safetensors"), views, None, &mut |_, _| {}).unwrap();
}

fn open_with(config: &Value, shapes: &[(String, Vec<usize>)]) -> crate::Result<VisionModel> {
    let dir = tempfile::tempdir().unwrap();
    write_model(dir.path(), config, shapes);
    VisionModel::open(dir.path())
}

fn model_error(result: crate::Result<VisionModel>) -> ModelError {
    match result {
        Err(Error::Format(modelbin_format::Error::Model(e))) => e,
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[test]
fn clip_tower_opens_and_runs() {
    let model = open_with(&clip_config(), &clip_tensors()).unwrap();
    assert_eq!(model.family(), Family::Clip);
    assert_eq!(model.family().name(), "clip");
    assert_eq!(
        (model.blocks(), model.width(), model.patch_size()),
        (1, 8, 4)
    );
    assert!(model.has_cls());
    assert_eq!((model.registers(), model.image_size()), (0, (8, 8)));
    assert_eq!(model.patch_grid(8, 8).unwrap(), (2, 2));
    let pixels: Vec<f32> = (0..2 * 3 * 64).map(|i| (i as f32 * 0.37).sin()).collect();
    let states = model.hidden_states(&pixels, 2, 8, 8, &[0, 0]).unwrap();
    assert_eq!(states.len(), 2);
    assert_eq!(states[0].len(), 2 * 5 * 8);
    assert_eq!(states[0], states[1]);
    assert!(states[0].iter().all(|v| v.is_finite()));
    assert!(
        model
            .hidden_states(&pixels, 2, 8, 8, &[])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn unknown_model_type_is_refused() {
    let mut config = clip_config();
    config["model_type"] = json!("vit");
    match model_error(open_with(&config, &clip_tensors())) {
        ModelError::InvalidMetadata { key, value, .. } => {
            assert_eq!(
                (key.as_str(), value.as_str()),
                ("config.json model_type", "\"vit\"")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unsupported_activation_and_swiglu_are_refused() {
    let mut config = clip_config();
    config["hidden_act"] = json!("relu");
    match model_error(open_with(&config, &clip_tensors())) {
        ModelError::InvalidMetadata { key, .. } => assert_eq!(key, "config.json hidden_act"),
        other => panic!("{other:?}"),
    }
    let config = json!({"model_type": "dinov2", "use_swiglu_ffn": true});
    match model_error(open_with(&config, &[])) {
        ModelError::InvalidMetadata { key, .. } => assert_eq!(key, "config.json use_swiglu_ffn"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn full_clip_model_reads_its_vision_config() {
    let config = json!({"model_type": "clip", "vision_config": {"hidden_size": "wide"}});
    match model_error(open_with(&config, &[])) {
        ModelError::InvalidMetadata { key, .. } => {
            assert_eq!(key, "config.json vision_config.hidden_size");
        }
        other => panic!("{other:?}"),
    }
    let config = json!({"model_type": "clip", "vision_config": clip_config()});
    let shapes: Vec<(String, Vec<usize>)> = clip_tensors()
        .into_iter()
        .map(|(name, shape)| (format!("vision_model.{name}"), shape))
        .collect();
    let model = open_with(&config, &shapes).unwrap();
    assert_eq!(model.width(), 8);
    // The tower alone has no `vision_model.` names.
    match model_error(open_with(&config, &clip_tensors())) {
        ModelError::MissingTensor { name } => {
            assert_eq!(name, "vision_model.embeddings.patch_embedding.weight");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_tensor_is_named() {
    let shapes: Vec<_> = clip_tensors()
        .into_iter()
        .filter(|(name, _)| name != "encoder.layers.0.mlp.fc2.bias")
        .collect();
    match model_error(open_with(&clip_config(), &shapes)) {
        ModelError::MissingTensor { name } => assert_eq!(name, "encoder.layers.0.mlp.fc2.bias"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_shape_is_named() {
    let mut shapes = clip_tensors();
    shapes[2].1 = vec![4, 8];
    match model_error(open_with(&clip_config(), &shapes)) {
        ModelError::WrongShape {
            name,
            expected,
            found,
        } => {
            assert_eq!(name, "embeddings.position_embedding.weight");
            assert_eq!((expected, found), (vec![5, 8], vec![4, 8]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_non_finite_weight_is_refused_at_load_naming_the_tensor() {
    for bad in [f32::NAN, f32::INFINITY] {
        let dir = tempfile::tempdir().unwrap();
        write_model(dir.path(), &clip_config(), &clip_tensors());
        // Rewrite one tensor with `bad` as its third value.
        let path = dir.path().join("model.safetensors");
        let file = safetensors::open(&path).unwrap();
        let owned: Vec<(String, Vec<usize>, Vec<u8>)> =
            modelbin_format::TensorStore::tensors(&file)
                .map(|t| {
                    let mut data = t.data().to_vec();
                    if t.name() == "encoder.layers.0.mlp.fc1.bias" {
                        data[8..12].copy_from_slice(&bad.to_le_bytes());
                    }
                    (t.name().to_owned(), t.shape().to_vec(), data)
                })
                .collect();
        drop(file);
        let views: Vec<TensorView<'_>> = owned
            .iter()
            .map(|(name, shape, data)| TensorView::new(name, DType::F32, shape, data).unwrap())
            .collect();
        safetensors::write_file(&path, views, None, &mut |_, _| {}).unwrap();
        match model_error(VisionModel::open(dir.path())) {
            ModelError::NonFinite { name, index, value } => {
                assert_eq!((name.as_str(), index), ("encoder.layers.0.mlp.fc1.bias", 2));
                assert_eq!(value.to_bits(), bad.to_bits());
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn image_sizes_that_do_not_fit_are_refused() {
    let model = open_with(&clip_config(), &clip_tensors()).unwrap();
    for (height, width) in [(8, 6), (12, 12), (0, 8)] {
        match model.patch_grid(height, width) {
            Err(Error::ImageSize {
                height: h,
                width: w,
                ..
            }) => assert_eq!((h, w), (height, width)),
            other => panic!("{height}×{width}: {other:?}"),
        }
        let pixels = vec![0.0; 3 * height * width];
        assert!(matches!(
            model.hidden_states(&pixels, 1, height, width, &[0]),
            Err(Error::ImageSize { .. })
        ));
    }
    // A pixel count that is not images × 3 × height × width, a block past
    // the last.
    for (pixels, block) in [(3 * 64 - 1, 0), (3 * 64, 1)] {
        assert!(matches!(
            model.hidden_states(&vec![0.0; pixels], 1, 8, 8, &[block]),
            Err(Error::Format(modelbin_format::Error::InvalidArgument(_)))
        ));
    }
}
