//! The downloaded autoencoder layouts' rejections: each file lie (a
//! shape, a NaN or negative threshold, a missing key or tensor, a hook
//! point that is no site, a transcoder, a skip connection) is its typed
//! error, naming what is wrong. What each layout computes is checked
//! against its own reader in crates/python/tests_heavy/test_sae_layouts.py.

use std::io::Write;
use std::path::Path;

use modelbin_format::{DType, TensorView};
use modelbin_infer::sae::layouts::{self, Layout};
use modelbin_infer::{Error, SaeError};
use serde_json::{Value, json};

const D_IN: usize = 4;
const D_SAE: usize = 6;

/// A tensor: name, shape, values.
type Tensor = (&'static str, Vec<usize>, Vec<f32>);

fn values(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| scale * ((i % 7) as f32 - 3.0)).collect()
}

/// Gemma Scope's tensors (`W_enc [d_in, d_sae]`).
fn gemma_tensors() -> Vec<Tensor> {
    vec![
        ("W_enc", vec![D_IN, D_SAE], values(D_IN * D_SAE, 0.1)),
        ("W_dec", vec![D_SAE, D_IN], values(D_SAE * D_IN, 0.2)),
        ("b_enc", vec![D_SAE], values(D_SAE, 0.05)),
        ("b_dec", vec![D_IN], values(D_IN, 0.05)),
        ("threshold", vec![D_SAE], vec![0.5; D_SAE]),
    ]
}

/// `tensors` as an `.npz` archive at `path`, as `numpy.savez` stores it.
fn write_npz(path: &Path, tensors: &[Tensor]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, shape, values) in tensors {
        zip.start_file(
            format!("{name}.npy"),
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored),
        )
        .unwrap();
        let dims: Vec<String> = shape.iter().map(|d| format!("{d},")).collect();
        let header = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}\n",
            dims.join(" ")
        );
        zip.write_all(b"\x93NUMPY\x01\x00").unwrap();
        zip.write_all(&(header.len() as u16).to_le_bytes()).unwrap();
        zip.write_all(header.as_bytes()).unwrap();
        for v in values {
            zip.write_all(&v.to_le_bytes()).unwrap();
        }
    }
    zip.finish().unwrap();
}

/// `tensors` as a safetensors file at `path`.
fn write_safetensors(path: &Path, tensors: &[Tensor]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, _, v)| v.iter().flat_map(|x| x.to_le_bytes()).collect())
        .collect();
    let views: Vec<TensorView<'_>> = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, shape, _), data)| TensorView::new(name, DType::F32, shape, data).unwrap())
        .collect();
    modelbin_format::safetensors::write_file(path, views, None, &mut |_, _| {}).unwrap();
}

fn write_json(path: &Path, json: &Value) {
    std::fs::write(path, json.to_string()).unwrap();
}

/// A Gemma Scope folder as a Hugging Face cache names it, under `root`.
fn gemma_scope(root: &Path, repo: &str, tensors: &[Tensor]) -> std::path::PathBuf {
    let dir = root.join(format!(
        "models--google--{repo}/snapshots/abc/layer_7/width_16k/average_l0_9"
    ));
    std::fs::create_dir_all(&dir).unwrap();
    write_npz(&dir.join("params.npz"), tensors);
    dir
}

fn gemma2_config() -> Value {
    json!({"architecture": "jump_relu", "model_name": "gemma-v3-270m-pt",
           "hf_hook_point_in": "model.layers.5.output", "affine_connection": false})
}

/// A Gemma Scope 2 folder.
fn gemma_scope_2(root: &Path, config: &Value, tensors: &[Tensor]) -> std::path::PathBuf {
    let dir = root.join("resid_post/layer_5_width_16k_l0_small");
    std::fs::create_dir_all(&dir).unwrap();
    let lower: Vec<Tensor> = tensors
        .iter()
        .map(|(n, s, v)| {
            let n: &'static str = match *n {
                "W_enc" => "w_enc",
                "W_dec" => "w_dec",
                other => other,
            };
            (n, s.clone(), v.clone())
        })
        .collect();
    write_safetensors(&dir.join("params.safetensors"), &lower);
    write_json(&dir.join("config.json"), config);
    dir
}

fn llama_hyperparams() -> Value {
    json!({"d_model": D_IN, "d_sae": D_SAE, "hook_point_in": "blocks.2.hook_resid_post",
           "hook_point_out": "blocks.2.hook_resid_post", "jump_relu_threshold": 0.3,
           "dataset_average_activation_norm": {"in": 4.0, "out": 4.0}})
}

fn llama_tensors() -> Vec<Tensor> {
    vec![
        (
            "encoder.weight",
            vec![D_SAE, D_IN],
            values(D_SAE * D_IN, 0.1),
        ),
        ("encoder.bias", vec![D_SAE], values(D_SAE, 0.05)),
        (
            "decoder.weight",
            vec![D_IN, D_SAE],
            values(D_IN * D_SAE, 0.2),
        ),
        ("decoder.bias", vec![D_IN], values(D_IN, 0.05)),
    ]
}

fn llama_scope(root: &Path, hp: &Value, tensors: &[Tensor]) -> std::path::PathBuf {
    let dir = root.join("Llama3_1-8B-Base-L2R-8x");
    std::fs::create_dir_all(dir.join("checkpoints")).unwrap();
    write_json(&dir.join("hyperparams.json"), hp);
    write_safetensors(&dir.join("checkpoints/final.safetensors"), tensors);
    dir
}

fn sparsify_cfg() -> Value {
    json!({"activation": "topk", "expansion_factor": 32, "normalize_decoder": true,
           "num_latents": D_SAE, "k": 2, "multi_topk": false, "skip_connection": false,
           "transcode": false, "d_in": D_IN})
}

fn sparsify_tensors() -> Vec<Tensor> {
    vec![
        (
            "encoder.weight",
            vec![D_SAE, D_IN],
            values(D_SAE * D_IN, 0.1),
        ),
        ("encoder.bias", vec![D_SAE], values(D_SAE, 0.05)),
        ("W_dec", vec![D_SAE, D_IN], values(D_SAE * D_IN, 0.2)),
        ("b_dec", vec![D_IN], values(D_IN, 0.05)),
    ]
}

fn sparsify(root: &Path, cfg: &Value, tensors: &[Tensor]) -> std::path::PathBuf {
    let dir = root.join("run/layers.3");
    std::fs::create_dir_all(&dir).unwrap();
    write_json(&dir.join("cfg.json"), cfg);
    write_safetensors(&dir.join("sae.safetensors"), tensors);
    dir
}

fn with_tensor(tensors: &[Tensor], name: &str, shape: Vec<usize>, values: Vec<f32>) -> Vec<Tensor> {
    tensors
        .iter()
        .map(|t| match t.0 == name {
            true => (t.0, shape.clone(), values.clone()),
            false => t.clone(),
        })
        .collect()
}

fn without(tensors: &[Tensor], name: &str) -> Vec<Tensor> {
    tensors.iter().filter(|t| t.0 != name).cloned().collect()
}

fn with_key(json: &Value, key: &str, value: Value) -> Value {
    let mut json = json.clone();
    json[key] = value;
    json
}

fn sae_error(dir: &Path) -> SaeError {
    match layouts::load(dir) {
        Err(Error::Sae(e)) => e,
        other => panic!("{}: expected an SaeError, got {other:?}", dir.display()),
    }
}

/// `BadLayout` naming `what`.
fn assert_bad(dir: &Path, what: &str) {
    match sae_error(dir) {
        SaeError::BadLayout { what: named, .. } => assert_eq!(named, what, "{}", dir.display()),
        other => panic!(
            "{}: expected BadLayout {what}, got {other:?}",
            dir.display()
        ),
    }
}

fn assert_unsupported(dir: &Path, feature: &str) {
    match sae_error(dir) {
        SaeError::UnsupportedLayout { feature: named, .. } => {
            assert!(named.contains(feature), "{named}")
        }
        other => panic!(
            "{}: expected UnsupportedLayout, got {other:?}",
            dir.display()
        ),
    }
}

#[test]
fn every_layout_is_detected_and_read_with_its_hook() {
    let root = tempfile::tempdir().unwrap();
    let cases = [
        (
            gemma_scope(
                &root.path().join("g1"),
                "gemma-scope-2b-pt-res",
                &gemma_tensors(),
            ),
            Layout::GemmaScope,
            Some("blocks.7.hook_resid_post"),
        ),
        (
            gemma_scope(
                &root.path().join("g1m"),
                "gemma-scope-9b-it-mlp",
                &gemma_tensors(),
            ),
            Layout::GemmaScope,
            Some("blocks.7.hook_mlp_out"),
        ),
        (
            gemma_scope(
                &root.path().join("g1c"),
                "gemma-scope-2b-pt-res-canonical",
                &gemma_tensors(),
            ),
            Layout::GemmaScope,
            Some("blocks.7.hook_resid_post"),
        ),
        (
            gemma_scope_2(&root.path().join("g2"), &gemma2_config(), &gemma_tensors()),
            Layout::GemmaScope2,
            Some("blocks.5.hook_resid_post"),
        ),
        (
            llama_scope(
                &root.path().join("ls"),
                &llama_hyperparams(),
                &llama_tensors(),
            ),
            Layout::LlamaScope,
            Some("blocks.2.hook_resid_post"),
        ),
        (
            sparsify(
                &root.path().join("sp"),
                &sparsify_cfg(),
                &sparsify_tensors(),
            ),
            Layout::Sparsify,
            Some("blocks.3.hook_resid_post"),
        ),
    ];
    for (dir, layout, hook) in cases {
        assert_eq!(Layout::detect(&dir).unwrap(), layout);
        let (sae, config) = layouts::load(&dir).unwrap();
        assert_eq!((sae.d_in, sae.d_sae), (D_IN, D_SAE));
        assert_eq!(config.hook_name.as_deref(), hook, "{layout:?}");
        assert_eq!(config.json["metadata"]["layout"], layout.name());
    }
    // A Gemma Scope folder outside a repository's: no hook is guessed.
    let bare = root.path().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    write_npz(&bare.join("params.npz"), &gemma_tensors());
    assert_eq!(layouts::load(&bare).unwrap().1.hook_name, None);
}

#[test]
fn a_directory_without_an_autoencoder_names_those_inside_it() {
    let root = tempfile::tempdir().unwrap();
    let run = sparsify(root.path(), &sparsify_cfg(), &sparsify_tensors())
        .parent()
        .unwrap()
        .to_path_buf();
    match sae_error(&run) {
        SaeError::UnknownLayout { inside, .. } => assert_eq!(inside, ["layers.3"]),
        other => panic!("{other:?}"),
    }
    match sae_error(root.path()) {
        SaeError::UnknownLayout { inside, .. } => assert!(inside.is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn gemma_scope_lies_are_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let t = gemma_tensors();
    let mut n = 0;
    let mut case = |tensors: Vec<Tensor>, repo: &str| {
        n += 1;
        gemma_scope(&root.path().join(n.to_string()), repo, &tensors)
    };
    let res = "gemma-scope-2b-pt-res";
    assert_bad(
        &case(
            with_tensor(&t, "W_dec", vec![D_IN, D_SAE], values(24, 1.0)),
            res,
        ),
        "W_dec",
    );
    let mut nan = vec![0.5; D_SAE];
    nan[3] = f32::NAN;
    assert_bad(
        &case(with_tensor(&t, "threshold", vec![D_SAE], nan), res),
        "threshold",
    );
    assert_bad(
        &case(
            with_tensor(&t, "threshold", vec![D_SAE], vec![-0.5; D_SAE]),
            res,
        ),
        "threshold",
    );
    assert_bad(&case(without(&t, "b_enc"), res), "b_enc");
    assert_bad(
        &case(
            with_tensor(&t, "W_enc", vec![D_IN * D_SAE], values(24, 1.0)),
            res,
        ),
        "W_enc",
    );
    let mut extra = t.clone();
    extra.push(("W_skip", vec![D_IN], vec![0.0; D_IN]));
    assert!(matches!(
        sae_error(&case(extra, res)),
        SaeError::UnexpectedTensor { name, .. } if name == "W_skip"
    ));
    assert_unsupported(&case(t.clone(), "gemma-scope-2b-pt-att"), "attention-head");
    // Not an archive at all.
    let dir = root.path().join("junk");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("params.npz"), b"not a zip").unwrap();
    assert!(matches!(
        layouts::load(&dir),
        Err(Error::Format(modelbin_format::Error::Npz(
            modelbin_format::io::npz::NpzError::NotAnArchive { .. }
        )))
    ));
}

#[test]
fn gemma_scope_2_lies_are_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let (c, t) = (gemma2_config(), gemma_tensors());
    let mut n = 0;
    let mut case = |config: Value, tensors: Vec<Tensor>| {
        n += 1;
        gemma_scope_2(&root.path().join(n.to_string()), &config, &tensors)
    };
    assert_bad(
        &case(with_key(&c, "architecture", json!("topk")), t.clone()),
        "architecture",
    );
    assert_bad(
        &case(
            with_key(&c, "hf_hook_point_in", json!("model.layers.x.output")),
            t.clone(),
        ),
        "hf_hook_point_in",
    );
    assert_bad(
        &case(
            with_key(&c, "hf_hook_point_in", json!("lm_head.output")),
            t.clone(),
        ),
        "hf_hook_point_in",
    );
    assert_bad(
        &case(with_key(&c, "hf_hook_point_in", json!(5)), t.clone()),
        "hf_hook_point_in",
    );
    assert_bad(
        &case(with_key(&c, "hf_hook_point_in", Value::Null), t.clone()),
        "hf_hook_point_in",
    );
    assert_unsupported(
        &case(
            with_key(&c, "hf_hook_point_out", json!("model.layers.6.output")),
            t.clone(),
        ),
        "transcoder",
    );
    assert_unsupported(
        &case(with_key(&c, "affine_connection", json!(true)), t.clone()),
        "affine",
    );
    assert_unsupported(
        &case(
            with_key(
                &c,
                "hf_hook_point_in",
                json!("model.layers.5.self_attn.o_proj.input"),
            ),
            t.clone(),
        ),
        "attention-head",
    );
    let mut skip = t.clone();
    skip.push((
        "affine_skip_connection",
        vec![D_IN, D_IN],
        vec![0.0; D_IN * D_IN],
    ));
    assert_unsupported(&case(c.clone(), skip), "affine");
    assert_bad(
        &case(
            c.clone(),
            with_tensor(&t, "b_dec", vec![D_IN + 1], values(D_IN + 1, 1.0)),
        ),
        "b_dec",
    );
    // The MLP's output is Gemma's mlp_out.
    let mlp = case(
        with_key(
            &c,
            "hf_hook_point_in",
            json!("model.layers.5.post_feedforward_layernorm.output"),
        ),
        t.clone(),
    );
    assert_eq!(
        layouts::load(&mlp).unwrap().1.hook_name.as_deref(),
        Some("blocks.5.hook_mlp_out")
    );
}

#[test]
fn llama_scope_lies_are_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let (hp, t) = (llama_hyperparams(), llama_tensors());
    let mut n = 0;
    let mut case = |hp: Value, tensors: Vec<Tensor>| {
        n += 1;
        llama_scope(&root.path().join(n.to_string()), &hp, &tensors)
    };
    let mut missing = hp.clone();
    missing
        .as_object_mut()
        .unwrap()
        .remove("jump_relu_threshold");
    assert_bad(&case(missing, t.clone()), "jump_relu_threshold");
    assert_bad(&case(json!([1, 2]), t.clone()), "the file");
    assert_bad(
        &case(with_key(&hp, "jump_relu_threshold", json!(-1.0)), t.clone()),
        "jump_relu_threshold",
    );
    assert_bad(
        &case(with_key(&hp, "d_sae", json!("6")), t.clone()),
        "d_sae",
    );
    assert_bad(
        &case(
            with_key(&hp, "dataset_average_activation_norm", json!({"in": 0.0})),
            t.clone(),
        ),
        "dataset_average_activation_norm.in",
    );
    assert_unsupported(
        &case(
            with_key(&hp, "hook_point_out", json!("blocks.2.hook_mlp_out")),
            t.clone(),
        ),
        "transcoder",
    );
    assert_bad(
        &case(
            hp.clone(),
            with_tensor(&t, "decoder.weight", vec![D_SAE, D_IN], values(24, 1.0)),
        ),
        "decoder.weight",
    );
}

#[test]
fn sparsify_lies_are_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let (c, t) = (sparsify_cfg(), sparsify_tensors());
    let mut n = 0;
    let mut case = |cfg: Value, tensors: Vec<Tensor>| {
        n += 1;
        sparsify(&root.path().join(n.to_string()), &cfg, &tensors)
    };
    assert_unsupported(
        &case(with_key(&c, "activation", json!("groupmax")), t.clone()),
        "groupmax",
    );
    assert_unsupported(
        &case(with_key(&c, "skip_connection", json!(true)), t.clone()),
        "skip",
    );
    assert_unsupported(
        &case(with_key(&c, "transcode", json!(true)), t.clone()),
        "transcoder",
    );
    assert_bad(&case(with_key(&c, "k", json!(D_SAE + 1)), t.clone()), "k");
    assert_bad(
        &case(with_key(&c, "transcode", json!("no")), t.clone()),
        "transcode",
    );
    assert_bad(&case(with_key(&c, "d_in", Value::Null), t.clone()), "d_in");
    // sparsify stores W_dec as [d_sae, d_in]; SAELens's loader's
    // transposed reading is refused.
    assert_bad(
        &case(
            c.clone(),
            with_tensor(&t, "W_dec", vec![D_IN, D_SAE], values(24, 1.0)),
        ),
        "W_dec",
    );
    let mut nan = values(D_SAE, 0.05);
    nan[0] = f32::INFINITY;
    assert_bad(
        &case(c.clone(), with_tensor(&t, "encoder.bias", vec![D_SAE], nan)),
        "encoder.bias",
    );
}
