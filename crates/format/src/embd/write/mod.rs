//! Writing EMBD files: streaming, 64-byte aligned, checksummed, atomic.
//! `storage.rs` turns each tensor into the bytes of the storage dtype a
//! conversion asks for (float casts, int8 quantization and back).

pub(crate) mod storage;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::{
    ALIGNMENT, DESCRIPTOR_LEN, END_MAGIC, FOOTER_LEN, HEADER_CRC_SPAN, HEADER_LEN, MAGIC,
    SpecialTokens, VERSION_MAJOR, VERSION_MINOR, flags,
};
use crate::LayoutError;
use crate::error::At;
use crate::io::checksum::{crc32, fnv1a32};
use crate::io::output::OutputFile;
use crate::tensor::TensorView;
use crate::{Error, Result};

/// Bytes written between two progress reports.
const PROGRESS_STEP: usize = 16 << 20;

/// A vocabulary to embed: tokens by id and the special ids.
#[derive(Debug, Clone, Copy)]
pub struct Vocabulary<'a> {
    /// Token strings; the id is the index.
    pub tokens: &'a [&'a str],
    /// The special token ids (each below the token count).
    pub specials: SpecialTokens,
}

/// Layout choices of the writer.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// Set CHECKSUM_ENABLED and write the data and file CRCs.
    pub checksums: bool,
    /// Set TENSORS_ALIGNED and start every tensor on a 64-byte boundary.
    pub aligned: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            checksums: true,
            aligned: true,
        }
    }
}

fn unrepresentable(reason: String) -> Error {
    Error::Unrepresentable {
        format: "EMBD",
        reason,
    }
}

fn u16_len(len: usize, what: &str) -> Result<u16> {
    u16::try_from(len).map_err(|_| unrepresentable(format!("{what} is {len} bytes, over 65535")))
}

fn u32_len(len: u64, what: &str) -> Result<u32> {
    u32::try_from(len).map_err(|_| unrepresentable(format!("{what} is {len} bytes, over 2^32")))
}

fn metadata_section(metadata: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let mut entries = Vec::new();
    for (key, value) in metadata {
        entries.extend(u16_len(key.len(), "a metadata key")?.to_le_bytes());
        entries.extend(u16_len(value.len(), &format!("metadata `{key}`"))?.to_le_bytes());
        entries.extend(key.as_bytes());
        entries.extend(value.as_bytes());
    }
    let mut section = Vec::with_capacity(8 + entries.len());
    section.extend(u32_len(metadata.len() as u64, "the metadata count")?.to_le_bytes());
    section.extend(u32_len(entries.len() as u64, "the metadata")?.to_le_bytes());
    section.extend(entries);
    Ok(section)
}

fn vocabulary_section(vocab: &Vocabulary<'_>) -> Result<Vec<u8>> {
    let count = vocab.tokens.len();
    if let Some(id) = vocab
        .specials
        .all()
        .into_iter()
        .find(|&id| id as usize >= count)
    {
        return Err(unrepresentable(format!(
            "special token id {id} is outside the {count}-token vocabulary"
        )));
    }
    let mut entries = Vec::new();
    for token in vocab.tokens {
        entries.extend(u16_len(token.len(), &format!("token {token:?}"))?.to_le_bytes());
        entries.extend(token.as_bytes());
    }
    let total = u32_len(entries.len() as u64, "the vocabulary")?;
    let mut section = Vec::with_capacity(32 + entries.len());
    section.extend(u32_len(count as u64, "the token count")?.to_le_bytes());
    section.extend(total.to_le_bytes());
    section.extend(u32_len(12 + u64::from(total), "the vocabulary")?.to_le_bytes());
    section.extend(entries);
    for id in vocab.specials.all() {
        section.extend(id.to_le_bytes());
    }
    Ok(section)
}

/// The descriptors and name table, and each tensor's data offset.
fn tensor_index(tensors: &[TensorView<'_>], alignment: u64) -> Result<(Vec<u8>, Vec<u64>, u64)> {
    let mut seen = std::collections::HashSet::new();
    let mut descriptors = Vec::with_capacity(tensors.len() * DESCRIPTOR_LEN as usize);
    let mut names: Vec<u8> = Vec::new();
    let mut offsets = Vec::with_capacity(tensors.len());
    let mut end = 0u64;
    for t in tensors {
        if !seen.insert(t.name()) {
            return Err(Error::Layout(LayoutError::DuplicateTensorName {
                name: t.name().to_owned(),
                at: At(None),
            }));
        }
        let code = t.dtype().embd_code().ok_or_else(|| {
            Error::Layout(LayoutError::UnsupportedDtype {
                name: t.name().to_owned(),
                dtype: t.dtype().to_string(),
                format: "EMBD",
            })
        })?;
        let shape = t.shape();
        if !(1..=4).contains(&shape.len()) {
            return Err(unrepresentable(format!(
                "tensor `{}` has {} dimensions; EMBD stores 1 to 4",
                t.name(),
                shape.len()
            )));
        }
        let start = end.next_multiple_of(alignment);
        descriptors.extend(fnv1a32(t.name().as_bytes()).to_le_bytes());
        descriptors.push(code);
        descriptors.push(shape.len() as u8);
        descriptors.extend(u16_len(t.name().len(), "a tensor name")?.to_le_bytes());
        for i in 0..4 {
            let dim = shape.get(i).copied().unwrap_or(0);
            let dim = u32::try_from(dim).map_err(|_| {
                unrepresentable(format!("tensor `{}` has a dimension over 2^32", t.name()))
            })?;
            descriptors.extend(dim.to_le_bytes());
        }
        descriptors.extend(start.to_le_bytes());
        names.extend(t.name().as_bytes());
        offsets.push(start);
        end = start + t.data().len() as u64;
    }
    descriptors.extend(names);
    Ok((descriptors, offsets, end))
}

/// Writes an EMBD file atomically: the sections in order, every tensor
/// streamed from where it is (in the order given), the CRCs computed on the
/// way. `progress` gets (bytes written, total). Returns the file size.
pub fn write_file(
    path: impl AsRef<Path>,
    tensors: &[TensorView<'_>],
    metadata: &BTreeMap<String, String>,
    vocabulary: Option<&Vocabulary<'_>>,
    options: &WriteOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let path = path.as_ref();
    let alignment = if options.aligned { ALIGNMENT } else { 1 };
    let metadata = metadata_section(metadata)?;
    let vocab = vocabulary
        .map(vocabulary_section)
        .transpose()?
        .unwrap_or_default();
    let (index, offsets, data_size) = tensor_index(tensors, alignment)?;
    let vocab_offset = HEADER_LEN + metadata.len() as u64;
    let index_offset = vocab_offset + vocab.len() as u64;
    let index_end = index_offset + index.len() as u64;
    let data_offset = index_end.next_multiple_of(alignment);
    let total = data_offset + data_size + FOOTER_LEN;

    let mut flag_bits = 0;
    for (on, bit) in [
        (vocabulary.is_some(), flags::VOCAB_EMBEDDED),
        (options.aligned, flags::TENSORS_ALIGNED),
        (options.checksums, flags::CHECKSUM_ENABLED),
    ] {
        if on {
            flag_bits |= bit;
        }
    }
    let mut header = Vec::with_capacity(HEADER_LEN as usize);
    header.extend(MAGIC);
    header.extend(VERSION_MAJOR.to_le_bytes());
    header.extend(VERSION_MINOR.to_le_bytes());
    header.extend(flag_bits.to_le_bytes());
    for (value, what) in [
        (HEADER_LEN, "the header"),
        (metadata.len() as u64, "the metadata"),
        (vocab_offset, "the metadata"),
        (vocab.len() as u64, "the vocabulary"),
        (index_offset, "the vocabulary"),
        (tensors.len() as u64, "the tensor count"),
        (data_offset, "the tensor index"),
    ] {
        header.extend(u32_len(value, what)?.to_le_bytes());
    }
    header.extend(data_size.to_le_bytes());
    header.extend(total.to_le_bytes());
    header.extend(crc32(&header[..HEADER_CRC_SPAN]).to_le_bytes());
    header.extend([0u8; 4]);

    let mut out = ChecksummedWriter::new(OutputFile::create(path)?, path, total);
    for section in [&header, &metadata, &vocab, &index] {
        out.write(section, progress)?;
    }
    out.pad_to(data_offset, progress)?;
    out.start_data();
    for (tensor, &offset) in tensors.iter().zip(&offsets) {
        out.pad_to(data_offset + offset, progress)?;
        for chunk in tensor.data().chunks(PROGRESS_STEP) {
            out.write(chunk, progress)?;
        }
    }
    out.finish(options.checksums, progress)
}

/// Writes through to the file while keeping the data and file CRCs.
struct ChecksummedWriter<'p> {
    file: OutputFile,
    path: &'p Path,
    total: u64,
    written: u64,
    file_crc: crc32fast::Hasher,
    data_crc: Option<crc32fast::Hasher>,
}

impl<'p> ChecksummedWriter<'p> {
    fn new(file: OutputFile, path: &'p Path, total: u64) -> Self {
        ChecksummedWriter {
            file,
            path,
            total,
            written: 0,
            file_crc: crc32fast::Hasher::new(),
            data_crc: None,
        }
    }

    fn write(&mut self, bytes: &[u8], progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| Error::io(self.path, e))?;
        self.file_crc.update(bytes);
        if let Some(data) = &mut self.data_crc {
            data.update(bytes);
        }
        self.written += bytes.len() as u64;
        progress(self.written, self.total);
        Ok(())
    }

    fn pad_to(&mut self, offset: u64, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let padding = [0u8; ALIGNMENT as usize];
        while self.written < offset {
            let n = (offset - self.written).min(ALIGNMENT) as usize;
            self.write(&padding[..n], progress)?;
        }
        Ok(())
    }

    fn start_data(&mut self) {
        self.data_crc = Some(crc32fast::Hasher::new());
    }

    fn finish(mut self, checksums: bool, progress: &mut dyn FnMut(u64, u64)) -> Result<u64> {
        let data_crc = self.data_crc.take().map_or(0, |h| h.finalize());
        let file_crc = self.file_crc.clone().finalize();
        let (data_crc, file_crc) = if checksums {
            (data_crc, file_crc)
        } else {
            (0, 0)
        };
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend(data_crc.to_le_bytes());
        footer.extend(file_crc.to_le_bytes());
        footer.extend(END_MAGIC);
        footer.extend([0u8; 4]);
        self.write(&footer, progress)?;
        self.file.commit()?;
        Ok(self.written)
    }
}

/// Rewrites `file` to `out` with its weights stored as `dtype` (or
/// unchanged when `None`; see [`crate::convert::HfOptions::dtype`]), keeping
/// metadata, vocabulary and tensor order. Storage as I8 takes its values
/// from `quantizer`.
pub fn recast<B: AsRef<[u8]>>(
    file: &super::Embd<B>,
    out: &Path,
    dtype: Option<crate::DType>,
    quantizer: Option<super::int8::Quantizer>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    use crate::tensor::TensorStore;
    storage::check_weight_dtype(dtype)?;
    let sources: Vec<TensorView<'_>> = file.tensors().collect();
    let names: Vec<&str> = sources.iter().map(|t| t.name()).collect();
    let stored = storage::Stored::new(&sources, &names, dtype, quantizer)?;
    let views = stored.views(&sources, &names)?;
    let tokens: Vec<&str> = file.tokens().collect();
    let vocabulary = file.special_tokens().map(|specials| Vocabulary {
        tokens: &tokens,
        specials,
    });
    let options = WriteOptions {
        checksums: file.header().has(flags::CHECKSUM_ENABLED),
        aligned: file.header().has(flags::TENSORS_ALIGNED),
    };
    write_file(
        out,
        &views,
        &file.metadata,
        vocabulary.as_ref(),
        &options,
        progress,
    )
}
