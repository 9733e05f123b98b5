//! How every command that reads texts from files reads them (`tokens
//! count/encode/cost`, `embed`, `search`, `acts record`): one rule, so a
//! file never means one thing to one command and another to the next.
//!
//! - A file named `*.parquet` is Parquet: each row of its top-level string
//!   column [field](TextFormat::field) (default `text`, the commands'
//!   `--field`) is one text, as Hugging Face `datasets` stores a split
//!   ([`parquet`]). A null row or a column of another type is an error
//!   naming it.
//! - Any other file is plain text, unless it is JSON Lines: asked for
//!   ([`TextFormat::jsonl`], the commands' `--jsonl`) or named `*.jsonl` /
//!   `*.ndjson`. Each non-empty line of JSON Lines is one text: a JSON
//!   string, or an object whose field is a string. Anything else is
//!   [`Error::BadJsonLine`], naming the file and line: quote characters are
//!   never read as text.
//! - A directory gives its text files ([`TEXT_EXTENSIONS`]), walked as every
//!   command walks directories ([`input_files`]).
//!
//! ```
//! use modelbin_format::io::texts::{TextFormat, Texts};
//!
//! let format = TextFormat::default();
//! let jsonl = b"{\"id\": 1, \"text\": \"caf\\u00e9\"}\n\n\"plain string\"\n";
//! let Texts::Records(texts) = format.texts("rows.jsonl".as_ref(), jsonl).unwrap() else {
//!     unreachable!()
//! };
//! assert_eq!(texts, ["caf\u{e9}", "plain string"]);
//! assert!(matches!(format.texts("notes.txt".as_ref(), b"\"as is\""), Ok(Texts::Plain(b"\"as is\""))));
//! ```

use std::path::{Path, PathBuf};

pub mod parquet;

use crate::io::walk::{has_extension, input_files};
use crate::{Error, Result};

/// The extensions of the files a directory gives as texts (compared
/// ignoring case).
pub const TEXT_EXTENSIONS: &[&str] = &["txt", "text", "md", "rst", "jsonl", "ndjson", "parquet"];

/// The extensions that make a file JSON Lines without being asked.
pub const JSON_LINES_EXTENSIONS: &[&str] = &["jsonl", "ndjson"];

/// The extensions that make a file Parquet.
pub const PARQUET_EXTENSIONS: &[&str] = &["parquet"];

/// The JSON Lines field, or the Parquet column, read as the text unless
/// told another.
pub const DEFAULT_TEXT_FIELD: &str = "text";

/// How a file holds its texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// The whole file is one text.
    Plain,
    /// One text per non-empty line, a JSON string or an object's field.
    JsonLines,
    /// One text per row of a string column.
    Parquet,
}

/// How text files are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextFormat {
    /// Read every file as JSON Lines, whatever its name (but `*.parquet`).
    pub jsonl: bool,
    /// The field of a JSON Lines object, or the Parquet column, to read
    /// (`None`: [`DEFAULT_TEXT_FIELD`]).
    pub field: Option<String>,
}

/// The texts of one file.
#[derive(Debug, PartialEq, Eq)]
pub enum Texts<'a> {
    /// A plain file: its bytes, one text.
    Plain(&'a [u8]),
    /// A JSON Lines or Parquet file: the text of each non-empty line or
    /// of each row, in order.
    Records(Vec<String>),
}

impl TextFormat {
    /// How `path` holds its texts.
    pub fn kind(&self, path: &Path) -> TextKind {
        if has_extension(path, PARQUET_EXTENSIONS) {
            TextKind::Parquet
        } else if self.jsonl || has_extension(path, JSON_LINES_EXTENSIONS) {
            TextKind::JsonLines
        } else {
            TextKind::Plain
        }
    }

    /// Whether `path` is read as JSON Lines.
    pub fn is_json_lines(&self, path: &Path) -> bool {
        self.kind(path) == TextKind::JsonLines
    }

    /// The field read from JSON Lines objects, and the column read from
    /// Parquet files.
    pub fn field(&self) -> &str {
        self.field.as_deref().unwrap_or(DEFAULT_TEXT_FIELD)
    }

    /// The text files `inputs` name: anything not a directory as given
    /// (whatever its name; a stream such as a FIFO is read under its cap by
    /// the reader, and a missing file is reported by it), directories
    /// walked for [`TEXT_EXTENSIONS`] ([`input_files`]: a FIFO found in one
    /// is refused).
    pub fn text_files(&self, inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for input in inputs {
            if input.is_dir() {
                let under = std::slice::from_ref(input);
                files.extend(input_files(under, |path| {
                    has_extension(path, TEXT_EXTENSIONS)
                })?);
            } else {
                files.push(input.clone());
            }
        }
        Ok(files)
    }

    /// The texts of `path`'s `bytes`.
    pub fn texts<'a>(&self, path: &Path, bytes: &'a [u8]) -> Result<Texts<'a>> {
        match self.kind(path) {
            TextKind::Plain => return Ok(Texts::Plain(bytes)),
            TextKind::Parquet => {
                let texts = parquet::column_texts(path, bytes, self.field())?;
                return Ok(Texts::Records(texts));
            }
            TextKind::JsonLines => {}
        }
        let mut texts = Vec::new();
        for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if let Some(text) = self.line_text(path, index as u64 + 1, line)? {
                texts.push(text);
            }
        }
        Ok(Texts::Records(texts))
    }

    /// The text of line `number` (from 1) of a JSON Lines file, `None` for
    /// a blank line.
    pub fn line_text(&self, path: &Path, number: u64, line: &[u8]) -> Result<Option<String>> {
        let bad = |reason: String| Error::BadJsonLine {
            path: path.to_path_buf(),
            line: number,
            reason,
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let value: serde_json::Value =
            serde_json::from_slice(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let field = self.field();
        match value {
            serde_json::Value::String(text) => Ok(Some(text)),
            serde_json::Value::Object(mut object) => match object.remove(field) {
                Some(serde_json::Value::String(text)) => Ok(Some(text)),
                Some(other) => Err(bad(format!(
                    "field {field:?} is {}, not a string",
                    kind(&other)
                ))),
                None => Err(bad(format!("the object has no {field:?} field"))),
            },
            other => Err(bad(format!(
                "{}, not a string or an object with a {field:?} field",
                kind(&other)
            ))),
        }
    }
}

/// How an error names a JSON value's kind.
fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(format: &TextFormat, line: &str) -> String {
        match format.line_text("f.jsonl".as_ref(), 3, line.as_bytes()) {
            Err(Error::BadJsonLine {
                line: 3, reason, ..
            }) => reason,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn a_json_line_is_a_string_or_an_objects_field_and_nothing_else() {
        let default = TextFormat::default();
        let body = TextFormat {
            jsonl: true,
            field: Some("body".into()),
        };
        let text = |f: &TextFormat, line: &str| f.line_text("f".as_ref(), 1, line.as_bytes());
        assert_eq!(
            text(&default, "{\"text\":\"a\"}").unwrap(),
            Some("a".into())
        );
        assert_eq!(
            text(&body, "{\"body\":\"b\",\"text\":1}\r").unwrap(),
            Some("b".into())
        );
        assert_eq!(text(&default, " \t").unwrap(), None);
        assert_eq!(
            reason(&default, "{\"body\":\"b\"}"),
            "the object has no \"text\" field"
        );
        assert_eq!(
            reason(&default, "{\"text\":7}"),
            "field \"text\" is a number, not a string"
        );
        assert_eq!(
            reason(&default, "[1]"),
            "an array, not a string or an object with a \"text\" field"
        );
        assert!(reason(&default, "plain words").starts_with("not JSON"));
    }

    #[test]
    fn jsonl_is_asked_for_or_named() {
        let format = TextFormat::default();
        assert!(format.is_json_lines("a.JSONL".as_ref()));
        assert!(format.is_json_lines("a.ndjson".as_ref()));
        assert!(!format.is_json_lines("a.txt".as_ref()));
        let asked = TextFormat {
            jsonl: true,
            field: None,
        };
        assert!(asked.is_json_lines("a.txt".as_ref()));
        assert_eq!(
            asked.texts("a.txt".as_ref(), b"\"x\"\n\"y\"").unwrap(),
            Texts::Records(vec!["x".into(), "y".into()])
        );
    }
}
