//! Writing TLLM files: the header, then each tensor's dimension prefix and
//! its f32 bytes, in the order of [`Config::tensors`], atomically.

use std::io::Write;
use std::path::Path;

use super::Config;
use crate::io::output::OutputFile;
use crate::{Error, LayoutError, Result};

/// Writes a TLLM file atomically: the header, then each tensor of
/// [`Config::tensors`] from `data` (raw little-endian f32 bytes, in that
/// order and of those sizes). `progress` gets (bytes written, total).
/// Returns the file size.
pub fn write_file(
    path: impl AsRef<Path>,
    config: &Config,
    data: &[&[u8]],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let path = path.as_ref();
    let total = check_tensor_data(config, data)?;
    let mut file = OutputFile::create(path)?;
    write_to(&mut file, config, data, &mut |written| {
        progress(written, total)
    })
    .map_err(|e| Error::io(path, e))?;
    file.commit()?;
    Ok(total)
}

/// The bytes of a TLLM file (as [`write_file`] writes them), built in
/// memory: for a caller that must know them (their checksum) before the
/// file is committed.
pub fn to_bytes(config: &Config, data: &[&[u8]]) -> Result<Vec<u8>> {
    let total = check_tensor_data(config, data)?;
    let mut bytes = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    write_to(&mut bytes, config, data, &mut |_| {}).map_err(|e| Error::io("memory", e))?;
    Ok(bytes)
}

/// Checks that `data` holds the tensors of `config` and returns the file
/// size they make.
fn check_tensor_data(config: &Config, data: &[&[u8]]) -> Result<u64> {
    config.validate()?;
    let specs = config.tensors();
    if specs.len() != data.len() {
        return Err(Error::InvalidArgument(format!(
            "{} tensors given, a TLLM configuration of {} layers has {}",
            data.len(),
            config.n_layers,
            specs.len()
        )));
    }
    for (spec, bytes) in specs.iter().zip(data) {
        if bytes.len() != spec.shape.len() * 4 {
            return Err(Error::InvalidArgument(format!(
                "tensor `{}` {:?} needs {} bytes of f32, {} given",
                spec.name,
                spec.shape.dims(),
                spec.shape.len() * 4,
                bytes.len()
            )));
        }
    }
    config.file_size().ok_or_else(|| {
        Error::Layout(LayoutError::Overflow {
            what: "the file size this configuration implies".into(),
            at: crate::At(None),
        })
    })
}

/// Writes the header and the checked tensors; `progress` gets the bytes
/// written so far.
fn write_to(
    out: &mut impl Write,
    config: &Config,
    data: &[&[u8]],
    progress: &mut dyn FnMut(u64),
) -> std::io::Result<()> {
    let mut written = 0;
    let mut write = |bytes: &[u8]| {
        written += bytes.len() as u64;
        progress(written);
        out.write_all(bytes)
    };
    write(&config.header_bytes())?;
    for (spec, bytes) in config.tensors().iter().zip(data) {
        let prefix: Vec<u8> = spec
            .shape
            .dims()
            .iter()
            .flat_map(|&d| (d as u64).to_le_bytes())
            .collect();
        write(&prefix)?;
        write(bytes)?;
    }
    Ok(())
}
