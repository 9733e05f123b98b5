//! Byte-level training data: corpus files, the train/validation split, and
//! the windows a step trains on.

use modelbin_format::io::source::MappedFile;

use crate::rng::Rng;
use crate::{Result, TrainingError};

/// A corpus split into training and validation bytes (the last
/// `val_fraction` of the concatenated files is validation).
#[derive(Debug, Clone)]
pub struct Corpus {
    train: Vec<u8>,
    val: Vec<u8>,
}

impl Corpus {
    /// Splits `bytes` for windows of `seq` tokens (each window needs
    /// `seq + 1` bytes: inputs and their next-byte targets).
    pub fn new(bytes: Vec<u8>, val_fraction: f64, seq: usize) -> Result<Self> {
        if bytes.is_empty() {
            return Err(TrainingError::EmptyCorpus.into());
        }
        if !(0.0..1.0).contains(&val_fraction) {
            return Err(TrainingError::ValidationFraction(val_fraction).into());
        }
        let val_len = (bytes.len() as f64 * val_fraction) as usize;
        let split = bytes.len() - val_len;
        if split < seq + 1 {
            return Err(TrainingError::CorpusTooShort {
                part: "training",
                bytes: split,
                needed: seq + 1,
            }
            .into());
        }
        if val_fraction > 0.0 && val_len < 2 {
            return Err(TrainingError::CorpusTooShort {
                part: "validation",
                bytes: val_len,
                needed: 2,
            }
            .into());
        }
        let mut train = bytes;
        let val = train.split_off(split);
        Ok(Corpus { train, val })
    }

    /// Training bytes.
    pub fn train(&self) -> &[u8] {
        &self.train
    }

    /// Validation bytes (empty with a validation fraction of 0).
    pub fn val(&self) -> &[u8] {
        &self.val
    }

    /// `count` random training windows of `seq + 1` bytes, from `rng`.
    pub fn sample(&self, count: usize, seq: usize, rng: &mut Rng) -> Vec<&[u8]> {
        let starts = self.train.len() - seq;
        (0..count)
            .map(|_| {
                let start = rng.below(starts);
                &self.train[start..start + seq + 1]
            })
            .collect()
    }

    /// Up to `max` validation windows of at most `seq + 1` bytes, evenly
    /// spaced and not overlapping.
    pub fn val_windows(&self, seq: usize, max: usize) -> Vec<&[u8]> {
        if self.val.len() < 2 {
            return Vec::new();
        }
        let len = (seq + 1).min(self.val.len());
        let fit = (self.val.len() - 1) / (len - 1);
        let count = fit.clamp(1, max);
        let stride = (self.val.len() - len) / count.max(1);
        (0..count)
            .map(|i| &self.val[i * stride..i * stride + len])
            .collect()
    }
}

/// Reads and concatenates corpus files: regular files mapped, streams
/// read under their cap ([`MappedFile::open_or_read`]).
pub fn read_corpus(paths: &[std::path::PathBuf]) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    for path in paths {
        bytes.extend_from_slice(&MappedFile::open_or_read(path)?);
    }
    Ok(bytes)
}
