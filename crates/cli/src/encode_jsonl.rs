//! `tokens encode --jsonl` on standard input: one JSON string (or object
//! with the text field) per input line in, one JSON array of token ids per
//! output line out. The pipeline is
//! `modelbin_tokenize::batch::jsonl`; this face words its errors for
//! standard input and output.

use std::io::{BufRead, Write};

use modelbin_format::io::texts::TextFormat;
use modelbin_tokenize::Tokenizer;
use modelbin_tokenize::batch::jsonl::{self, JsonlError};

use crate::failure::Failure;
use crate::line_limit::too_long;

/// Encodes every line of `input`, writing the ids to `out`. Stops at the
/// first line that holds no text (as `format` reads lines), or is longer
/// than `max_line` bytes, after writing the lines before it.
pub fn encode_jsonl(
    tokenizer: &Tokenizer,
    format: &TextFormat,
    input: impl BufRead,
    out: impl Write,
    max_line: usize,
) -> Result<(), Failure> {
    jsonl::encode_jsonl(tokenizer, format, input, out, max_line).map_err(failure)
}

/// A stop of the pipeline as a failure naming standard input's line.
fn failure(e: JsonlError) -> Failure {
    match e {
        JsonlError::Read(e) => Failure::Invalid(format!("stdin: {e}")),
        JsonlError::Write(e) => crate::stdout::write_error(e),
        JsonlError::TooLong { line, max } => too_long("stdin", line, max),
        JsonlError::NotAString { line, reason } => {
            Failure::Invalid(format!("stdin line {line}: not a JSON string: {reason}"))
        }
        e @ JsonlError::Encode { .. } => Failure::Invalid(format!("stdin {e}")),
        JsonlError::NoText(e) => Failure::Invalid(e.to_string()),
        e => Failure::Invalid(format!("stdin: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output line of `text`.
    fn ids(text: &str) -> String {
        let tokenizer = Tokenizer::embedded("cl100k_base").unwrap();
        serde_json::to_string(&tokenizer.encode_ordinary(text).unwrap()).unwrap() + "\n"
    }

    fn encode(input: &[u8]) -> (String, Result<(), Failure>) {
        let tokenizer = Tokenizer::embedded("cl100k_base").unwrap();
        let mut out = Vec::new();
        let result = encode_jsonl(tokenizer, &TextFormat::default(), input, &mut out, 64);
        (String::from_utf8(out).unwrap(), result)
    }

    /// A bad line is named by its number on standard input, with the
    /// parser's position on the line alone.
    #[test]
    fn a_bad_line_is_named_on_stdin() {
        let (out, result) = encode(b"\"hello\"\r\n\"world\"\nnot json\n\"more\"\n");
        assert_eq!(out, ids("hello") + &ids("world"));
        match result {
            Err(Failure::Invalid(message)) => assert!(
                message.starts_with("stdin line 3: not a JSON string: ")
                    && message.contains(" at line 1 column "),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_long_line_names_the_flag() {
        let long = format!("\"{}\"\n", "a".repeat(100));
        let (out, result) = encode(format!("\"ok\"\n{long}").as_bytes());
        assert_eq!(out, ids("ok"));
        match result {
            Err(Failure::Invalid(message)) => assert_eq!(
                message,
                "stdin line 2 is longer than 64 bytes; pass --max-line-bytes to raise the limit"
            ),
            other => panic!("{other:?}"),
        }
    }
}
