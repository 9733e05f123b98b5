//! The texts of a Parquet file: one column of strings, row by row, as the
//! Hugging Face `datasets` library and pyarrow write them.
//!
//! The parquet crate decodes the file. It reserves memory for counts the
//! file declares before it checks them: a schema element's number of
//! children (up to 2^31 pointers) and each page's decompressed size (up to
//! 2 GiB). So `pages` reads those first: the schema's counts before the
//! crate parses the footer, and the column's page headers, against the file
//! and the memory this process may take, before it reads the column.
//!
//! The crate's decoders trust lengths inside pages and panic on some
//! malformed ones (a byte-array length past its buffer, found by cutting
//! and garbling real files). Every call into it therefore runs under
//! `quiet::catch_panic`, which turns such a panic into
//! [`ParquetError::Malformed`] without the panic's message on standard
//! error; the checks of this module run outside it, where a panic would
//! be a bug of ours.

mod pages;
mod quiet;

use std::io::Read;
use std::path::{Path, PathBuf};

use parquet::basic::{ConvertedType, LogicalType, Type as PhysicalType};
use parquet::column::reader::ColumnReader;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, FileReader, Length, SerializedFileReader};
use parquet::schema::types::ColumnDescriptor;

use crate::io::memory;

/// Why a Parquet file gives no texts.
#[derive(Debug, thiserror::Error)]
pub enum ParquetError {
    /// The file is not Parquet, or its structure is broken.
    #[error("{path}: not a readable Parquet file: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, in the decoder's words.
        reason: String,
    },
    /// The file has no top-level column of that name.
    #[error("{path}: no column {column:?} (its columns: {columns})")]
    NoColumn {
        /// The file.
        path: PathBuf,
        /// The column asked for.
        column: String,
        /// The file's columns, comma-separated.
        columns: String,
    },
    /// The column does not hold one string per row.
    #[error("{path}: column {column:?} holds {holds}, not one string per row")]
    NotText {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// What it holds: its physical type and annotation, or "lists".
        holds: String,
    },
    /// A row's value is null.
    #[error("{path}: row {row} of column {column:?} is null")]
    Null {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// The row (from 0, over the whole file).
        row: u64,
    },
    /// A row's string is not UTF-8.
    #[error("{path}: row {row} of column {column:?} is not UTF-8")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// The row (from 0, over the whole file).
        row: u64,
    },
    /// The column's pages declare more decompressed bytes than this
    /// process may take.
    #[error(
        "{path}: column {column:?} declares {bytes} bytes of text, more than the {bound} bytes {source_name} leaves"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// The bytes its pages declare.
        bytes: u64,
        /// The bytes available.
        bound: u64,
        /// What sets the bound.
        source_name: &'static str,
    },
}

/// The strings of `bytes`' (a Parquet file's) top-level column `column`,
/// in row order over every row group. A null row, a string that is not
/// UTF-8 or a column of another type is an error naming it: a row is never
/// skipped or guessed.
pub fn column_texts(path: &Path, bytes: &[u8], column: &str) -> Result<Vec<String>, ParquetError> {
    pages::check_schema(bytes).map_err(|reason| malformed(path, reason))?;
    // The crate reads from an owned buffer; the one copy of the file is
    // smaller than the texts decompressed from it.
    let file = StrictBytes(bytes::Bytes::copy_from_slice(bytes));
    let reader = decoding(path, || {
        SerializedFileReader::new(file).map_err(|e| malformed(path, e))
    })?;
    let metadata = reader.metadata();
    let index = text_column(path, metadata, column)?;
    check_pages(path, bytes, metadata, index, column)?;
    decoding(path, || read_rows(path, &reader, index, column))
}

/// Runs `work`, which calls into the crate: a panic there is
/// [`ParquetError::Malformed`].
fn decoding<T>(
    path: &Path,
    work: impl FnOnce() -> Result<T, ParquetError>,
) -> Result<T, ParquetError> {
    quiet::catch_panic(work)
        .unwrap_or_else(|| Err(malformed(path, "the decoder failed on malformed data")))
}

/// The crate's error `error` about `path`.
fn malformed(path: &Path, error: impl std::fmt::Display) -> ParquetError {
    ParquetError::Malformed {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// The strings of column `index` (named `column`), whose pages are
/// checked.
fn read_rows(
    path: &Path,
    reader: &SerializedFileReader<StrictBytes>,
    index: usize,
    column: &str,
) -> Result<Vec<String>, ParquetError> {
    let descriptor = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .column(index);
    let nullable = descriptor.max_def_level() > 0;
    let mut texts = Vec::new();
    let (mut values, mut levels) = (Vec::new(), Vec::new());
    for group in 0..reader.num_row_groups() {
        let group = reader
            .get_row_group(group)
            .map_err(|e| malformed(path, e))?;
        let ColumnReader::ByteArrayColumnReader(mut strings) = group
            .get_column_reader(index)
            .map_err(|e| malformed(path, e))?
        else {
            return Err(malformed(path, "the column's reader is not of strings"));
        };
        loop {
            values.clear();
            levels.clear();
            let (records, _, _) = strings
                .read_records(1024, Some(&mut levels), None, &mut values)
                .map_err(|e| malformed(path, e))?;
            if records == 0 {
                break;
            }
            let row = texts.len() as u64;
            if nullable && let Some(null) = levels.iter().position(|&level| level == 0) {
                return Err(ParquetError::Null {
                    path: path.to_path_buf(),
                    column: column.to_owned(),
                    row: row + null as u64,
                });
            }
            for (offset, value) in values.drain(..).enumerate() {
                let text = String::from_utf8(value.data().to_vec()).map_err(|_| {
                    ParquetError::NotUtf8 {
                        path: path.to_path_buf(),
                        column: column.to_owned(),
                        row: row + offset as u64,
                    }
                })?;
                texts.push(text);
            }
        }
    }
    Ok(texts)
}

/// The file's bytes as the crate reads them, where reading past the end
/// is an error: the crate skips Thrift values it does not know by reading
/// and discarding, and a reader that answers "no more bytes" without an
/// error would let a list of 2^31 skipped values spin through them all.
struct StrictBytes(bytes::Bytes);

impl Length for StrictBytes {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl ChunkReader for StrictBytes {
    type T = EndIsError<<bytes::Bytes as ChunkReader>::T>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.0.get_read(start).map(EndIsError)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0.get_bytes(start, length)
    }
}

/// A reader whose end is an error ([`StrictBytes`]).
struct EndIsError<R>(R);

impl<R: Read> Read for EndIsError<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buffer)? {
            0 if !buffer.is_empty() => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file ends inside a page",
            )),
            n => Ok(n),
        }
    }
}

/// The index of the top-level string column `column`.
fn text_column(
    path: &Path,
    metadata: &ParquetMetaData,
    column: &str,
) -> Result<usize, ParquetError> {
    let schema = metadata.file_metadata().schema_descr();
    let columns: Vec<&ColumnDescriptor> = schema.columns().iter().map(|c| c.as_ref()).collect();
    let Some(index) = columns
        .iter()
        .position(|c| c.path().parts().first().map(String::as_str) == Some(column))
    else {
        let mut names: Vec<String> = columns.iter().map(|c| c.path().string()).collect();
        names.dedup();
        return Err(ParquetError::NoColumn {
            path: path.to_path_buf(),
            column: column.to_owned(),
            columns: names.join(", "),
        });
    };
    let descriptor = columns[index];
    let not_text = |holds: String| ParquetError::NotText {
        path: path.to_path_buf(),
        column: column.to_owned(),
        holds,
    };
    if descriptor.path().parts().len() > 1 || descriptor.max_rep_level() > 0 {
        return Err(not_text("nested values or lists".into()));
    }
    let annotated_text = matches!(descriptor.logical_type_ref(), Some(LogicalType::String))
        || descriptor.converted_type() == ConvertedType::UTF8;
    if descriptor.physical_type() != PhysicalType::BYTE_ARRAY || !annotated_text {
        return Err(not_text(format!(
            "{} values ({})",
            descriptor.physical_type(),
            match descriptor.logical_type_ref() {
                Some(logical) => format!("{logical:?}"),
                None => "no string annotation".into(),
            }
        )));
    }
    Ok(index)
}

/// Checks the page headers of column `index` in every row group against
/// the file and the memory available, before the decoder reserves what
/// they declare.
fn check_pages(
    path: &Path,
    bytes: &[u8],
    metadata: &ParquetMetaData,
    index: usize,
    column: &str,
) -> Result<(), ParquetError> {
    let mut declared = 0u64;
    for group in metadata.row_groups() {
        let chunk = group.column(index);
        let start = chunk
            .dictionary_page_offset()
            .unwrap_or(chunk.data_page_offset());
        declared = declared.saturating_add(
            pages::declared_bytes(bytes, start, chunk.compressed_size())
                .map_err(|reason| malformed(path, format!("column {column:?}: {reason}")))?,
        );
    }
    match memory::check(declared as f64, "the Parquet column") {
        Ok(()) => Ok(()),
        Err(shortfall) => Err(ParquetError::TooLarge {
            path: path.to_path_buf(),
            column: column.to_owned(),
            bytes: declared,
            bound: shortfall.bound.bytes,
            source_name: shortfall.bound.source,
        }),
    }
}
