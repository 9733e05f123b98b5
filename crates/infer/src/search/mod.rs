//! Semantic search over text files: every non-empty line (or, in JSON
//! Lines and Parquet files, every record's text, as
//! [`modelbin_format::io::texts::TextFormat`] reads it), or every chunk of
//! N tokens of each document ([`Segments`], [`chunks`]), embedded once,
//! then ranked by cosine similarity to each query. An index
//! can be saved (a safetensors file: the embeddings, the lines' text and
//! where each comes from, and the model and files it was built from) and
//! reused while the model and the files are unchanged, so a corpus is
//! embedded once and queried many times.
//!
//! ```no_run
//! use modelbin_infer::Embedder;
//! use modelbin_format::io::lines::DEFAULT_MAX_LINE_BYTES;
//! use modelbin_infer::search::{LineIndex, Segments};
//!
//! # fn main() -> modelbin_infer::Result<()> {
//! let embedder = Embedder::open("all-MiniLM-L6-v2.embd")?;
//! let files = ["notes.txt".into()];
//! let model = "all-MiniLM-L6-v2.embd".as_ref();
//! let format = Default::default();
//! let segments = Segments::Chunks { tokens: 128, overlap: 32 };
//! let index = LineIndex::build(&embedder, model, &files, &format, DEFAULT_MAX_LINE_BYTES, segments)?;
//! index.save("notes.index.safetensors".as_ref())?;
//! for hit in index.search(&embedder, "where did I park", 3)? {
//!     println!("{:.3} {}:{} {}", hit.score, hit.path.display(), hit.line, hit.text);
//! }
//! # Ok(())
//! # }
//! ```

pub mod chunks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use modelbin_format::io::checksum::{hex, sha256};
use modelbin_format::io::source::MappedFile;
use modelbin_format::io::texts::{TextFormat, TextKind, Texts};
use modelbin_format::{DType, TensorStore, TensorView, safetensors};

use crate::bert::{Embedder, cosine};
use crate::{Error, Result};
pub use chunks::Segments;

/// The index format's version, kept in its metadata.
const INDEX_VERSION: &str = "1";

/// Embedded lines of text files.
#[derive(Debug, Clone, PartialEq)]
pub struct LineIndex {
    /// What the index was built from: the model's hash and each file's
    /// path and SHA-256.
    source: Source,
    /// Each line's file (an index into `source.files`) and line number.
    places: Vec<(u32, u32)>,
    /// The lines' text, concatenated, and where each starts and ends.
    text: String,
    bounds: Vec<u64>,
    /// The embeddings, `[lines, dim]`.
    vectors: Vec<f32>,
    dim: usize,
}

/// What an index was built from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Source {
    model: String,
    files: Vec<(PathBuf, String)>,
    /// The field JSON Lines files were read by, when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    json_field: Option<String>,
    /// How the files were cut.
    #[serde(default, skip_serializing_if = "is_lines")]
    segments: Segments,
}

fn is_lines(segments: &Segments) -> bool {
    *segments == Segments::Lines
}

/// One line found by [`LineIndex::search`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SearchHit<'a> {
    /// Cosine similarity to the query.
    pub score: f32,
    /// The file.
    pub path: &'a Path,
    /// The line number (1-based; a Parquet file's row, from 1).
    pub line: usize,
    /// The line's text.
    pub text: &'a str,
}

impl LineIndex {
    /// Embeds every non-empty line of `files` with `embedder`, the model
    /// read from `model` (whose hash the index keeps), or with
    /// [`Segments::Chunks`] every chunk of each document; the lines of JSON
    /// Lines files and the rows of Parquet files (as `format` tells them)
    /// are read as their texts (documents), a row numbered as a line; a
    /// chunk is numbered by the line it starts on. Each file is read once,
    /// as [`MappedFile::open`] reads inputs (regular files only); a line
    /// longer than `max_line_bytes` is
    /// [`modelbin_format::Error::LineTooLong`].
    pub fn build(
        embedder: &Embedder,
        model: &Path,
        files: &[PathBuf],
        format: &TextFormat,
        max_line_bytes: usize,
        segments: Segments,
    ) -> Result<LineIndex> {
        segments.check()?;
        let mut source = Source {
            model: crate::identity::checkpoint_id(model)?,
            files: Vec::with_capacity(files.len()),
            json_field: json_field(files, format),
            segments,
        };
        let mut places = Vec::new();
        let (mut text, mut bounds) = (String::new(), vec![0u64]);
        let tokenizer = embedder.tokenizer();
        for (file, path) in files.iter().enumerate() {
            let bytes = MappedFile::open(path)?;
            source.files.push((path.clone(), hex(&sha256(&bytes))));
            let mut add = |number: usize, document: &str| {
                let Segments::Chunks { tokens, overlap } = segments else {
                    if document.len() > max_line_bytes {
                        return Err(modelbin_format::Error::LineTooLong {
                            path: path.clone(),
                            line: number as u64,
                            max: max_line_bytes as u64,
                        });
                    }
                    if !document.trim().is_empty() {
                        places.push((file as u32, number as u32));
                        text.push_str(document);
                        bounds.push(text.len() as u64);
                    }
                    return Ok(());
                };
                let count = |word: &str| tokenizer.pieces(word).len();
                for (lines_before, chunk) in chunks::chunks(document, tokens, overlap, count) {
                    places.push((file as u32, (number + lines_before) as u32));
                    text.push_str(chunk);
                    bounds.push(text.len() as u64);
                }
                Ok(())
            };
            if format.kind(path) == TextKind::Parquet {
                if let Texts::Records(rows) = format.texts(path, &bytes)? {
                    for (row, line) in rows.iter().enumerate() {
                        add(row + 1, line)?;
                    }
                }
                continue;
            }
            let content = std::str::from_utf8(&bytes).map_err(|e| {
                let reason = format!("not UTF-8 text at byte {}", e.valid_up_to());
                let invalid = std::io::Error::new(std::io::ErrorKind::InvalidData, reason);
                modelbin_format::Error::io(path, invalid)
            })?;
            if format.kind(path) == TextKind::Plain && segments != Segments::Lines {
                add(1, content)?;
                continue;
            }
            for (number, line) in content.lines().enumerate() {
                if format.is_json_lines(path) {
                    if let Some(record) =
                        format.line_text(path, number as u64 + 1, line.as_bytes())?
                    {
                        add(number + 1, &record)?;
                    }
                } else {
                    add(number + 1, line)?;
                }
            }
        }
        let lines: Vec<&str> = (0..places.len())
            .map(|i| &text[bounds[i] as usize..bounds[i + 1] as usize])
            .collect();
        let vectors = if lines.is_empty() {
            Vec::new()
        } else {
            embedder.embed(&lines)?.concat()
        };
        Ok(LineIndex {
            source,
            places,
            bounds,
            dim: embedder.config().hidden_size,
            vectors,
            text,
        })
    }

    /// Lines indexed.
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// Whether no line was indexed.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// Whether the index was built from the model at `model` and from
    /// `files` as they are now (same paths, same contents).
    pub fn is_current(
        &self,
        model: &Path,
        files: &[PathBuf],
        format: &TextFormat,
        segments: Segments,
    ) -> Result<bool> {
        Ok(Source::of(model, files, format, segments)? == self.source)
    }

    /// Whether the index was built with the model at `model` (so that its
    /// queries can be compared with the lines).
    pub fn has_model(&self, model: &Path) -> Result<bool> {
        Ok(crate::identity::matches(model, &self.source.model)?.0)
    }

    /// The files the lines come from, as given when the index was built.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.source.files.iter().map(|(path, _)| path.as_path())
    }

    /// The `top` lines closest to `query` (embedded with `embedder`, which
    /// must be the index's model), best first.
    pub fn search(
        &self,
        embedder: &Embedder,
        query: &str,
        top: usize,
    ) -> Result<Vec<SearchHit<'_>>> {
        let query = embedder.embed(&[query])?.concat();
        if query.len() != self.dim {
            return Err(Error::Format(modelbin_format::Error::InvalidArgument(
                format!(
                    "the index holds embeddings of width {}, the model gives {}",
                    self.dim,
                    query.len()
                ),
            )));
        }
        let mut hits: Vec<SearchHit> = self
            .vectors
            .chunks_exact(self.dim.max(1))
            .enumerate()
            .map(|(i, vector)| {
                let (file, line) = self.places[i];
                SearchHit {
                    score: cosine(&query, vector),
                    path: &self.source.files[file as usize].0,
                    line: line as usize,
                    text: &self.text[self.bounds[i] as usize..self.bounds[i + 1] as usize],
                }
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(top);
        Ok(hits)
    }

    /// Writes the index as a safetensors file, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        // safetensors stores little-endian values.
        let vectors: Vec<u8> = self.vectors.iter().flat_map(|v| v.to_le_bytes()).collect();
        let places: Vec<u8> = self
            .places
            .iter()
            .flat_map(|&(f, l)| [f, l])
            .flat_map(u32::to_le_bytes)
            .collect();
        let bounds: Vec<u8> = self.bounds.iter().flat_map(|b| b.to_le_bytes()).collect();
        let shapes = [
            [self.len(), self.dim],
            [self.len(), 2],
            [self.bounds.len(), 1],
            [self.text.len(), 1],
        ];
        let tensors = [
            TensorView::new("embeddings", DType::F32, &shapes[0], &vectors)?,
            TensorView::new("places", DType::U32, &shapes[1], &places)?,
            TensorView::new("bounds", DType::U64, &shapes[2], &bounds)?,
            TensorView::new("text", DType::U8, &shapes[3], self.text.as_bytes())?,
        ];
        let metadata = BTreeMap::from([
            ("modelbin_line_index".to_owned(), INDEX_VERSION.to_owned()),
            (
                "source".to_owned(),
                serde_json::to_string(&self.source).expect("a source serializes"),
            ),
        ]);
        safetensors::write_file(path, tensors, Some(&metadata), &mut |_, _| {})?;
        Ok(())
    }

    /// Reads an index [`LineIndex::save`] wrote, checking that its parts
    /// agree with each other and that every embedding is finite
    /// ([`Error::NonFiniteIndexRow`]).
    pub fn load(path: &Path) -> Result<LineIndex> {
        let file = safetensors::open(path)?;
        let invalid = |reason: &str| {
            Error::Format(modelbin_format::Error::InvalidArgument(format!(
                "{}: not a line index: {reason}",
                path.display()
            )))
        };
        let metadata = file.metadata().cloned().unwrap_or_default();
        if metadata.get("modelbin_line_index").map(String::as_str) != Some(INDEX_VERSION) {
            return Err(invalid("no modelbin_line_index version 1 in its metadata"));
        }
        let source: Source = metadata
            .get("source")
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or_else(|| invalid("its metadata has no source"))?;
        let tensor = |name: &str, dtype: DType| {
            file.get(name)
                .filter(|t| t.dtype() == dtype && t.shape().len() == 2)
                .ok_or_else(|| invalid(&format!("no 2-D {dtype} tensor `{name}`")))
        };
        let embeddings = tensor("embeddings", DType::F32)?;
        let places = tensor("places", DType::U32)?;
        let bounds = tensor("bounds", DType::U64)?;
        let text = tensor("text", DType::U8)?;
        let lines = embeddings.shape()[0];
        let places: Vec<u32> = places
            .data()
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        let bounds: Vec<u64> = bounds
            .data()
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        let text = String::from_utf8(text.data().to_vec())
            .map_err(|_| invalid("its text is not UTF-8"))?;
        let consistent = places.len() == 2 * lines
            && bounds.len() == lines + 1
            && bounds.first() == Some(&0)
            && bounds.windows(2).all(|w| w[0] <= w[1])
            && bounds.last() == Some(&(text.len() as u64))
            && bounds.iter().all(|&b| text.is_char_boundary(b as usize))
            && places
                .chunks_exact(2)
                .all(|p| (p[0] as usize) < source.files.len());
        if !consistent {
            return Err(invalid("its lines, places and text do not agree"));
        }
        let dim = embeddings.shape()[1];
        let vectors = embeddings.to_f32()?.into_owned();
        if let Some(at) = vectors.iter().position(|v| !v.is_finite()) {
            let row = at / dim.max(1);
            let (file, line) = (places[2 * row], places[2 * row + 1]);
            return Err(Error::NonFiniteIndexRow {
                path: path.to_path_buf(),
                row,
                file: source.files[file as usize].0.clone(),
                line,
                value: vectors[at],
            });
        }
        Ok(LineIndex {
            places: places.chunks_exact(2).map(|p| (p[0], p[1])).collect(),
            dim,
            vectors,
            source,
            bounds,
            text,
        })
    }
}

impl Source {
    /// The model's hash and each file's path and SHA-256.
    fn of(
        model: &Path,
        paths: &[PathBuf],
        format: &TextFormat,
        segments: Segments,
    ) -> Result<Source> {
        let files = paths
            .iter()
            .map(|path| {
                let bytes = MappedFile::open(path)?;
                Ok((path.clone(), hex(&sha256(&bytes))))
            })
            .collect::<Result<_>>()?;
        Ok(Source {
            model: crate::identity::checkpoint_id(model)?,
            files,
            json_field: json_field(paths, format),
            segments,
        })
    }
}

/// The field JSON Lines files (or the column Parquet files) among `files`
/// are read by, if there are any.
fn json_field(files: &[PathBuf], format: &TextFormat) -> Option<String> {
    files
        .iter()
        .any(|path| format.kind(path) != TextKind::Plain)
        .then(|| format.field().to_owned())
}
