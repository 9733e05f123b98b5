//! Checkpoints: the weights as a TLLM file, and beside it (`FILE.opt`) the
//! optimiser state, so that `--resume` continues bit for bit.
//!
//! Sidecar layout (little-endian): `"TLLMOPT2"`, the 36-byte TLLM header of
//! the model, u32 CRC-32 of the whole weights file it belongs to, u64 step,
//! u64 seed, u64 parameter count n, n × f32 first moments, n × f32 second
//! moments, u32 CRC-32 of everything before it.
//!
//! The two files are renamed into place one after the other; a process
//! killed between the renames leaves new weights beside old optimiser
//! state. The weights' CRC in the sidecar makes `load` refuse such a pair.

use std::io::Write;
use std::path::{Path, PathBuf};

use modelbin_format::atomic::AtomicFile;
use modelbin_format::bytes::ByteReader;
use modelbin_format::checksum::crc32;
use modelbin_format::floats;
use modelbin_format::source::MappedFile;
use modelbin_format::tensor::TensorStore;
use modelbin_format::tllm::{self, Config};

use crate::{Error, Result, TrainingError};

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

/// Writes the weights (TLLM, atomically) and then the sidecar (atomically).
pub fn save(
    path: &Path,
    config: &Config,
    tensors: &[&[f32]],
    state: &OptimizerState,
) -> Result<()> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|t| floats::encode_f32(t)).collect();
    let slices: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    tllm::write_file(path, config, &slices, &mut |_, _| {})?;
    let weights_crc = crc32(&MappedFile::open(path)?);
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
    let side = sidecar(path);
    let mut file = AtomicFile::create(&side)?;
    file.write_all(&out)
        .map_err(|e| modelbin_format::Error::io(&side, e))?;
    file.commit()?;
    Ok(())
}

/// Loads a checkpoint: the configuration, the flat parameters (file order)
/// and the optimiser state; the sidecar must belong to these weights.
pub fn load(path: &Path) -> Result<(Config, Vec<f32>, OptimizerState)> {
    let file = tllm::open(path)?;
    let config = *file.config();
    let mut params = Vec::new();
    for tensor in file.tensors() {
        params.extend_from_slice(&floats::decode_f32(tensor.data()));
    }
    let side = sidecar(path);
    let bad = |reason: String| -> Error {
        TrainingError::OptimizerState {
            path: side.clone(),
            reason,
        }
        .into()
    };
    let bytes =
        std::fs::read(&side).map_err(|e| bad(format!("cannot read the optimiser state: {e}")))?;
    if bytes.len() < 4 || crc32(&bytes[..bytes.len() - 4]).to_le_bytes() != bytes[bytes.len() - 4..]
    {
        return Err(bad("corrupt (CRC mismatch or truncated)".into()));
    }
    let mut r = ByteReader::new(&bytes[..bytes.len() - 4], 0);
    match &r.array::<8>("magic")? {
        m if m == MAGIC => {}
        m if m == MAGIC_V1 => {
            return Err(bad(
                "written by an older modelbin, without the weights' checksum: \
                 its match with the weights cannot be checked"
                    .into(),
            ));
        }
        _ => return Err(bad("not a TLLM optimiser state".into())),
    }
    if r.bytes(36, "model header")? != config.header_bytes().as_slice() {
        return Err(bad(
            "it belongs to a model of a different configuration".into()
        ));
    }
    if r.u32_le("weights checksum")? != crc32(file.file_bytes()) {
        return Err(bad(format!(
            "it belongs to other weights than {} (a checkpoint interrupted \
             between writing the weights and the optimiser state?)",
            path.display()
        )));
    }
    let step = r.u64_le("step")?;
    let seed = r.u64_le("seed")?;
    let n = r.u64_le("parameter count")?;
    if n != params.len() as u64 || r.remaining() as u64 != 8 * n {
        return Err(bad(format!(
            "{n} parameters; the model has {}",
            params.len()
        )));
    }
    let read = |r: &mut ByteReader<'_>| -> Result<Vec<f32>> {
        let raw = r.bytes(4 * n, "moments")?;
        Ok(floats::decode_f32(raw).into_owned())
    };
    let m = read(&mut r)?;
    let v = read(&mut r)?;
    Ok((config, params, OptimizerState { step, seed, m, v }))
}
