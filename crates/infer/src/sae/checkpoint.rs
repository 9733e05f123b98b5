//! A training run's full state in one safetensors file, so that `sae train
//! --resume` continues exactly where a run stopped: the parameters (on
//! scaled inputs), Adam's moments, each latent's inputs since it last
//! fired, a JumpReLU autoencoder's thresholds and their moments, and in
//! the metadata the step, the input scale, the BatchTopK threshold and the
//! caller's own record (its settings and the loader's
//! position). The file is written atomically, so a run killed while
//! writing leaves the previous checkpoint.

use std::collections::BTreeMap;
use std::path::Path;

use modelbin_format::safetensors;
use modelbin_format::{DType, TensorStore, TensorView};

use super::Activation;
use super::train::{Architecture, Options, Trainer};
use crate::{Error, Result, SaeError};

/// The checkpoint's file name inside the output directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.safetensors";

/// A JumpReLU trainer's thresholds and their (m, v) moments.
const THRESHOLD_NAMES: [&str; 3] = ["threshold", "m.threshold", "v.threshold"];

/// The tensors, in order: the parameters, then their (m, v) moments.
const NAMES: [&str; 12] = [
    "w_enc", "b_enc", "w_dec", "b_dec", "m.w_enc", "v.w_enc", "m.b_enc", "v.b_enc", "m.w_dec",
    "v.w_dec", "m.b_dec", "v.b_dec",
];

fn bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Writes `trainer`'s state and `record` (any JSON the caller needs back);
/// a state that holds a NaN or an infinity is refused unwritten
/// ([`crate::SaeError::NonFiniteWeights`]), so the previous checkpoint
/// stays.
pub fn save(path: &Path, trainer: &Trainer, record: &serde_json::Value) -> Result<()> {
    let sae = &trainer.sae;
    let (m, v): (Vec<&Vec<f32>>, Vec<&Vec<f32>>) =
        trainer.moments.iter().map(|(m, v)| (m, v)).unzip();
    let arrays: [&[f32]; 12] = [
        &sae.w_enc, &sae.b_enc, &sae.w_dec, &sae.b_dec, m[0], v[0], m[1], v[1], m[2], v[2], m[3],
        v[3],
    ];
    let thresholds: Vec<&[f32]> = match &sae.activation {
        Activation::JumpRelu(t) if is_jumprelu(&trainer.options) => {
            let (m, v) = &trainer.threshold_moments;
            vec![t, m, v]
        }
        _ => Vec::new(),
    };
    let names = NAMES.iter().chain(&THRESHOLD_NAMES);
    let arrays: Vec<&[f32]> = arrays.into_iter().chain(thresholds).collect();
    super::require_finite_weights(names.clone().copied().zip(arrays.iter().copied()))?;
    let encoded: Vec<Vec<u8>> = arrays.iter().map(|a| bytes(a)).collect();
    let since: Vec<u8> = trainer
        .since_fired
        .iter()
        .flat_map(|n| n.to_le_bytes())
        .collect();
    let matrix = [sae.d_sae, sae.d_in];
    let shape = |name: &str| -> &[usize] {
        if name.ends_with("w_enc") || name.ends_with("w_dec") {
            &matrix
        } else if name.ends_with("b_dec") {
            &matrix[1..]
        } else {
            &matrix[..1]
        }
    };
    let mut tensors = names
        .zip(&encoded)
        .map(|(name, data)| TensorView::new(name, DType::F32, shape(name), data))
        .collect::<modelbin_format::Result<Vec<_>>>()?;
    tensors.push(TensorView::new(
        "since_fired",
        DType::U64,
        &matrix[..1],
        &since,
    )?);
    let state = serde_json::json!({
        "step": trainer.step,
        "scale": trainer.scale,
        "threshold": trainer.threshold,
        "record": record,
    });
    let metadata = BTreeMap::from([("modelbin.sae".to_string(), state.to_string())]);
    safetensors::write_file(path, tensors, Some(&metadata), &mut |_, _| {})?;
    Ok(())
}

/// Whether `options` train a JumpReLU autoencoder (whose thresholds are
/// trained; BatchTopK's are its tracked threshold).
fn is_jumprelu(options: &Options) -> bool {
    matches!(options.architecture, Architecture::JumpRelu { .. })
}

/// Reads a checkpoint back into a trainer with `options` for inputs of
/// `d_in` values (the checkpoint must hold an autoencoder of that shape);
/// returns it with the caller's record. Values a run cannot continue from
/// (see [`SaeError::BadCheckpoint`]) are refused.
pub fn load(path: &Path, d_in: usize, options: Options) -> Result<(Trainer, serde_json::Value)> {
    let file = safetensors::open(path)?;
    let bad = |reason: String| {
        Error::Format(modelbin_format::Error::InvalidArgument(format!(
            "{}: {reason}",
            path.display()
        )))
    };
    let state: serde_json::Value = file
        .metadata()
        .and_then(|m| m.get("modelbin.sae"))
        .and_then(|s| serde_json::from_str(s).ok())
        .ok_or_else(|| bad("not a modelbin sae checkpoint (no modelbin.sae metadata)".into()))?;
    let w_dec = file.tensor("w_dec")?;
    if w_dec.shape() != [options.d_sae, d_in] || d_in == 0 {
        return Err(bad(format!(
            "the checkpoint's decoder is {:?}, not [{} latents, {d_in}]",
            w_dec.shape(),
            options.d_sae
        )));
    }
    let d_sae = options.d_sae;
    let read = |name: &str, len: usize| -> Result<Vec<f32>> {
        let values = file.tensor(name)?.to_f32()?.into_owned();
        if values.len() != len {
            return Err(bad(format!(
                "{name} has {} values, not {len}",
                values.len()
            )));
        }
        Ok(values)
    };
    let sizes = [d_sae * d_in, d_sae, d_sae * d_in, d_in];
    let mut arrays = Vec::with_capacity(NAMES.len());
    for (i, name) in NAMES.iter().enumerate() {
        let size = if i < 4 { sizes[i] } else { sizes[(i - 4) / 2] };
        arrays.push(read(name, size)?);
    }
    let thresholds = match is_jumprelu(&options) {
        true => THRESHOLD_NAMES
            .iter()
            .map(|name| read(name, d_sae))
            .collect::<Result<Vec<_>>>()?,
        false => Vec::new(),
    };
    let since = file.tensor("since_fired")?;
    if since.dtype() != DType::U64 || since.shape() != [d_sae] {
        return Err(bad("since_fired is not u64 [d_sae]".into()));
    }
    let since_fired: Vec<u64> = since
        .data()
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    let scale = state["scale"]
        .as_f64()
        .ok_or_else(|| bad("no input scale".into()))? as f32;
    let refuse = |name: String, value: String, expected: &'static str| -> Error {
        SaeError::BadCheckpoint {
            path: path.to_path_buf(),
            name,
            value,
            expected,
        }
        .into()
    };
    // The saved autoencoder is divided by the scale: it must be a positive
    // normal number whose reciprocal is finite.
    if !(scale.is_normal() && scale > 0.0 && (1.0 / scale).is_finite()) {
        return Err(refuse(
            "scale".into(),
            scale.to_string(),
            "the input scale must be a positive normal number",
        ));
    }
    let threshold = match &state["threshold"] {
        serde_json::Value::Null => None,
        value => match value.as_f64().map(|t| t as f32) {
            Some(t) if t.is_finite() => Some(t),
            _ => {
                return Err(refuse(
                    "threshold".into(),
                    value.to_string(),
                    "the BatchTopK threshold must be a finite number",
                ));
            }
        },
    };
    for (name, values) in NAMES
        .iter()
        .chain(&THRESHOLD_NAMES)
        .zip(arrays.iter().chain(&thresholds))
    {
        let second_moment = name.starts_with("v.");
        if let Some(index) = values
            .iter()
            .position(|v| !v.is_finite() || (second_moment && *v < 0.0))
        {
            return Err(refuse(
                format!("{name}[{index}]"),
                values[index].to_string(),
                "a checkpoint's tensors must be finite (and second moments not negative)",
            ));
        }
    }
    // A trainer of the right shape, then its state replaced.
    let mut trainer = Trainer::new(&vec![0.0; d_in], d_in, options);
    let mut arrays = arrays.into_iter();
    let mut next = || arrays.next().expect("twelve arrays");
    trainer.sae.w_enc = next();
    trainer.sae.b_enc = next();
    trainer.sae.w_dec = next();
    trainer.sae.b_dec = next();
    for moment in &mut trainer.moments {
        *moment = (next(), next());
    }
    if let Ok([threshold, m, v]) = <[Vec<f32>; 3]>::try_from(thresholds) {
        trainer.sae.activation = Activation::JumpRelu(threshold);
        trainer.threshold_moments = (m, v);
    }
    trainer.since_fired = since_fired;
    trainer.scale = scale;
    trainer.step = state["step"].as_u64().unwrap_or(0);
    trainer.threshold = threshold;
    trainer.refresh_threshold();
    Ok((trainer, state["record"].clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sae::train::Architecture;

    fn options() -> Options {
        Options::new(Architecture::BatchTopK { k: 2 }, 4, 10, 1e-3)
    }

    /// A trainer for inputs of width 3, on a small sample.
    fn trainer() -> Trainer {
        let sample: Vec<f32> = (0..24).map(|i| (i as f32 * 0.7).sin()).collect();
        Trainer::new(&sample, 3, options())
    }

    /// Rewrites the checkpoint at `path` with `change` applied to each
    /// tensor's values (by name) and to its state metadata.
    fn forge(
        path: &Path,
        change: impl Fn(&str, &mut Vec<f32>),
        state: impl Fn(&mut serde_json::Value),
    ) {
        let file = safetensors::open(path).unwrap();
        let mut metadata = file.metadata().cloned().unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&metadata["modelbin.sae"]).unwrap();
        state(&mut value);
        metadata.insert("modelbin.sae".into(), value.to_string());
        let owned: Vec<(String, DType, Vec<usize>, Vec<u8>)> = file
            .tensors()
            .map(|t| {
                let data = if t.dtype() == DType::F32 {
                    let mut values = t.to_f32().unwrap().into_owned();
                    change(t.name(), &mut values);
                    bytes(&values)
                } else {
                    t.data().to_vec()
                };
                (t.name().to_owned(), t.dtype(), t.shape().to_vec(), data)
            })
            .collect();
        drop(file);
        let views = owned
            .iter()
            .map(|(name, dtype, shape, data)| TensorView::new(name, *dtype, shape, data).unwrap());
        safetensors::write_file(path, views, Some(&metadata), &mut |_, _| {}).unwrap();
    }

    /// The name a [`SaeError::BadCheckpoint`] gives.
    fn refused(path: &Path) -> String {
        match load(path, 3, options()) {
            Err(Error::Sae(SaeError::BadCheckpoint { name, .. })) => name,
            other => panic!("expected a bad checkpoint, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn values_a_run_cannot_continue_from_are_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CHECKPOINT_FILE);
        let record = serde_json::json!({});
        save(&path, &trainer(), &record).unwrap();
        assert!(load(&path, 3, options()).is_ok());
        for (scale, name) in [(0.0, "scale"), (-1.0, "scale"), (1e-40, "scale")] {
            save(&path, &trainer(), &record).unwrap();
            forge(&path, |_, _| {}, |s| s["scale"] = scale.into());
            assert_eq!(refused(&path), name, "scale {scale}");
        }
        save(&path, &trainer(), &record).unwrap();
        forge(&path, |_, _| {}, |s| s["threshold"] = 1e39.into());
        assert_eq!(refused(&path), "threshold");
        save(&path, &trainer(), &record).unwrap();
        forge(
            &path,
            |name, values| {
                if name == "w_dec" {
                    values[5] = f32::NEG_INFINITY;
                }
            },
            |_| {},
        );
        assert_eq!(refused(&path), "w_dec[5]");
        save(&path, &trainer(), &record).unwrap();
        forge(
            &path,
            |name, values| {
                if name == "v.b_enc" {
                    values[1] = -1.0;
                }
            },
            |_| {},
        );
        assert_eq!(refused(&path), "v.b_enc[1]");
    }

    /// A JumpReLU run continued from a checkpoint is the uninterrupted run,
    /// bit for bit: its thresholds and their moments are saved; a
    /// threshold that is not finite is refused.
    #[test]
    fn a_jumprelu_run_resumes_bit_for_bit() {
        let options = Options::new(
            Architecture::JumpRelu {
                l0_coeff: 0.1,
                bandwidth: 0.5,
            },
            8,
            10,
            1e-2,
        );
        let sample: Vec<f32> = (0..60).map(|i| (i as f32 * 0.37).sin() + 0.2).collect();
        let batch = |step: usize| &sample[(step % 4) * 12..][..12];
        let mut straight = Trainer::new(&sample, 3, options);
        for step in 0..6 {
            straight.step(batch(step), 2);
        }
        let mut first = Trainer::new(&sample, 3, options);
        for step in 0..3 {
            first.step(batch(step), 2);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CHECKPOINT_FILE);
        save(&path, &first, &serde_json::json!({})).unwrap();
        let (mut resumed, _) = load(&path, 3, options).unwrap();
        for step in 3..6 {
            resumed.step(batch(step), 2);
        }
        assert_eq!(resumed.sae.activation, straight.sae.activation);
        assert_eq!(resumed.sae.w_enc, straight.sae.w_enc);
        assert_eq!(resumed.threshold_moments, straight.threshold_moments);
        let Activation::JumpRelu(thresholds) = &straight.sae.activation else {
            panic!("a JumpReLU trainer")
        };
        assert!(
            thresholds
                .iter()
                .any(|&t| t != Architecture::INITIAL_THRESHOLD)
        );
        forge(
            &path,
            |name, values| {
                if name == "threshold" {
                    values[2] = f32::NAN;
                }
            },
            |_| {},
        );
        match load(&path, 3, options) {
            Err(Error::Sae(SaeError::BadCheckpoint { name, .. })) => {
                assert_eq!(name, "threshold[2]")
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn non_finite_state_is_never_saved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CHECKPOINT_FILE);
        let mut bad = trainer();
        bad.sae.b_enc[2] = f32::NAN;
        match save(&path, &bad, &serde_json::json!({})) {
            Err(Error::Sae(SaeError::NonFiniteWeights { name, index, .. })) => {
                assert_eq!((name.as_str(), index), ("b_enc", 2));
            }
            other => panic!("{other:?}"),
        }
        assert!(!path.exists());
        let mut sae = trainer().unscaled();
        sae.w_dec[0] = f32::INFINITY;
        let out = dir.path().join("sae");
        match super::super::saelens::save(&out, &sae, serde_json::json!({})) {
            Err(Error::Sae(SaeError::NonFiniteWeights { name, index, .. })) => {
                assert_eq!((name.as_str(), index), ("W_dec", 0));
            }
            other => panic!("{other:?}"),
        }
        assert!(!out.exists());
    }
}
