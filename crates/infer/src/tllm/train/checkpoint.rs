//! Checkpoints: the weights as a TLLM file, and beside it (`FILE.opt`) the
//! optimiser state, so that `--resume` continues bit for bit.
//!
//! Sidecar layout (little-endian): `"TLLMOPT2"`, the 36-byte TLLM header of
//! the model, u32 CRC-32 of the whole weights file it belongs to, u64 step,
//! u64 seed, u64 parameter count n, n × f32 first moments, n × f32 second
//! moments, u32 CRC-32 of everything before it.
//!
//! A checkpoint changes two files, which no rename can replace together.
//! So the sidecar names its weights by their CRC, and a save keeps the
//! previous sidecar as `FILE.opt.prev` until the new weights are in place:
//!
//! 1. `FILE.opt` is hard-linked as `FILE.opt.prev` (through a temporary
//!    name and a rename, so `FILE.opt.prev` is always whole);
//! 2. the new sidecar, naming the new weights' CRC, replaces `FILE.opt`;
//! 3. the new weights replace `FILE`;
//! 4. `FILE.opt.prev` is removed.
//!
//! Each step is atomic, and after a kill at any instant one of the two
//! sidecars names the weights in `FILE`: `load` takes that one, so the last
//! complete checkpoint always resumes.

use std::io::Write;
use std::path::{Path, PathBuf};

use modelbin_format::io::bytes::ByteReader;
use modelbin_format::io::checksum::crc32;
use modelbin_format::io::output::OutputFile;
use modelbin_format::io::source::MappedFile;
use modelbin_format::tensor::TensorStore;
use modelbin_format::tensor::floats;
use modelbin_format::tllm::{self, Config};

use crate::{Result, TrainingError};

const MAGIC: &[u8; 8] = b"TLLMOPT2";
/// The magic of the first layout, which did not record the weights' CRC.
const MAGIC_V1: &[u8; 8] = b"TLLMOPT1";

/// The optimiser state saved beside a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerState {
    /// Steps done.
    pub step: u64,
    /// The run's seed.
    pub seed: u64,
    /// First moments.
    pub m: Vec<f32>,
    /// Second moments.
    pub v: Vec<f32>,
}

/// The sidecar path of checkpoint `weights`.
pub fn sidecar(weights: &Path) -> PathBuf {
    let mut name = weights.as_os_str().to_owned();
    name.push(".opt");
    PathBuf::from(name)
}

/// The sidecar kept while a save replaces the weights.
pub fn previous_sidecar(weights: &Path) -> PathBuf {
    let mut name = sidecar(weights).into_os_string();
    name.push(".prev");
    PathBuf::from(name)
}

/// Saves a checkpoint: the weights (TLLM) and the optimiser state, in the
/// order the module's doc gives, so that a kill at any instant leaves a
/// pair that [`load`] resumes.
pub fn save(
    path: &Path,
    config: &Config,
    tensors: &[&[f32]],
    state: &OptimizerState,
) -> Result<()> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|t| floats::encode_f32(t)).collect();
    let slices: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let weights = tllm::to_bytes(config, &slices)?;
    let side = sidecar(path);
    let previous = previous_sidecar(path);
    keep_as(&side, &previous)?;
    write_whole(&side, &sidecar_bytes(config, crc32(&weights), state))?;
    write_whole(path, &weights)?;
    match std::fs::remove_file(&previous) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(modelbin_format::Error::io(&previous, e).into())
        }
        _ => Ok(()),
    }
}

/// Replaces `copy` with a hard link to `original` (when it exists) in one
/// rename, so `copy` is never seen half made.
fn keep_as(original: &Path, copy: &Path) -> Result<()> {
    let mut temp = copy.as_os_str().to_owned();
    temp.push(format!(".link-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let _ = std::fs::remove_file(&temp);
    match std::fs::hard_link(original, &temp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(modelbin_format::Error::io(original, e).into()),
    }
    std::fs::rename(&temp, copy).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        modelbin_format::Error::io(copy, e).into()
    })
}

/// Writes `bytes` as the whole file `path`, atomically.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = OutputFile::create(path)?;
    file.write_all(bytes)
        .map_err(|e| modelbin_format::Error::io(path, e))?;
    file.commit()?;
    Ok(())
}

/// The sidecar's bytes for weights whose file has CRC-32 `weights_crc`.
fn sidecar_bytes(config: &Config, weights_crc: u32, state: &OptimizerState) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 8 * state.m.len());
    out.extend(MAGIC);
    out.extend(config.header_bytes());
    out.extend(weights_crc.to_le_bytes());
    out.extend(state.step.to_le_bytes());
    out.extend(state.seed.to_le_bytes());
    out.extend((state.m.len() as u64).to_le_bytes());
    out.extend(floats::encode_f32(&state.m));
    out.extend(floats::encode_f32(&state.v));
    out.extend(crc32(&out).to_le_bytes());
    out
}

/// Loads a checkpoint: the configuration, the flat parameters (file order)
/// and the optimiser state of the sidecar that belongs to these weights:
/// `FILE.opt`, or `FILE.opt.prev` when a save was killed between replacing
/// the sidecar and replacing the weights.
pub fn load(path: &Path) -> Result<(Config, Vec<f32>, OptimizerState)> {
    let file = tllm::open(path)?;
    let config = *file.config();
    let mut params = Vec::new();
    for tensor in file.tensors() {
        params.extend_from_slice(&floats::decode_f32(tensor.data()));
    }
    let weights_crc = crc32(file.file_bytes());
    let side = sidecar(path);
    let state = match read_sidecar(&side, &config, weights_crc, params.len()) {
        Ok(state) => Ok(state),
        Err(SidecarProblem::Invalid(reason)) => Err(reason),
        Err(SidecarProblem::OtherWeights) => {
            let previous = previous_sidecar(path);
            read_sidecar(&previous, &config, weights_crc, params.len()).map_err(|_| {
                format!(
                    "it belongs to other weights than {}, and no earlier optimiser \
                     state does",
                    path.display()
                )
            })
        }
    };
    let state = state.map_err(|reason| TrainingError::OptimizerState { path: side, reason })?;
    Ok((config, params, state))
}

/// Why a sidecar cannot be used.
enum SidecarProblem {
    /// It is valid but names other weights.
    OtherWeights,
    /// It cannot be used at all (the reason).
    Invalid(String),
}

/// Reads the sidecar `side` for a model of `config` with `params`
/// parameters whose weights file has CRC-32 `weights_crc`.
fn read_sidecar(
    side: &Path,
    config: &Config,
    weights_crc: u32,
    params: usize,
) -> Result<OptimizerState, SidecarProblem> {
    let invalid = |reason: String| SidecarProblem::Invalid(reason);
    let bytes = MappedFile::open(side)
        .map_err(|e| invalid(format!("cannot read the optimiser state: {e}")))?;
    let Some(body_len) = bytes.len().checked_sub(4) else {
        return Err(invalid("corrupt (truncated)".into()));
    };
    if crc32(&bytes[..body_len]).to_le_bytes() != bytes[body_len..] {
        return Err(invalid("corrupt (CRC mismatch or truncated)".into()));
    }
    let layout = |e: modelbin_format::Error| invalid(e.to_string());
    let mut r = ByteReader::new(&bytes[..body_len], 0);
    match &r.array::<8>("magic").map_err(layout)? {
        m if m == MAGIC => {}
        m if m == MAGIC_V1 => {
            return Err(invalid(
                "written by an older modelbin, without the weights' checksum: \
                 its match with the weights cannot be checked"
                    .into(),
            ));
        }
        _ => return Err(invalid("not a TLLM optimiser state".into())),
    }
    if r.bytes(36, "model header").map_err(layout)? != config.header_bytes().as_slice() {
        return Err(invalid(
            "it belongs to a model of a different configuration".into(),
        ));
    }
    if r.u32_le("weights checksum").map_err(layout)? != weights_crc {
        return Err(SidecarProblem::OtherWeights);
    }
    let step = r.u64_le("step").map_err(layout)?;
    let seed = r.u64_le("seed").map_err(layout)?;
    let n = r.u64_le("parameter count").map_err(layout)?;
    if n != params as u64 || r.remaining() as u64 != 8 * n {
        return Err(invalid(format!("{n} parameters; the model has {params}")));
    }
    let mut read = || -> Result<Vec<f32>, SidecarProblem> {
        let raw = r.bytes(4 * n, "moments").map_err(layout)?;
        Ok(floats::decode_f32(raw).into_owned())
    };
    let m = read()?;
    let v = read()?;
    Ok(OptimizerState { step, seed, m, v })
}
