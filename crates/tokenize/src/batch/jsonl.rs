//! Encoding a stream of JSON lines: one JSON string (or an object holding
//! the text in a field) per input line in, one JSON array of token ids per
//! output line out (`modelbin tokens encode --jsonl`).
//!
//! Input is read in batches of whole lines, sized to the pool's threads;
//! each batch is cut into runs of lines of at least 16 KiB (or to its end)
//! that the thread pool parses, encodes and serialises, and the runs'
//! output is written in input order. A run does each step over all its
//! lines before the next, so each step keeps its own tables in cache (the
//! tokenizer's especially), and its buffers are kept from batch to batch,
//! so nothing is allocated per line once the first batches have sized
//! them.

use std::io::{self, BufRead, Write};
use std::ops::Range;

use std::path::Path;

use modelbin_format::io::lines::{Line, push_json_ids, push_json_string, read_line};
use modelbin_format::io::texts::TextFormat;
use rayon::prelude::*;

use crate::Tokenizer;

/// Why an encoding of JSON lines stopped. Lines are numbered from 1 over
/// the whole input; the lines before the one named were written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonlError {
    /// The input could not be read.
    #[error("{0}")]
    Read(#[source] io::Error),
    /// The output could not be written.
    #[error("{0}")]
    Write(#[source] io::Error),
    /// A line longer than the cap.
    #[error("line {line} is longer than {max} bytes")]
    TooLong {
        /// The line.
        line: usize,
        /// The cap.
        max: usize,
    },
    /// A line that is not a JSON string of UTF-8 text.
    #[error("line {line}: not a JSON string: {reason}")]
    NotAString {
        /// The line.
        line: usize,
        /// What the JSON parser said (its positions are on the line alone).
        reason: serde_json::Error,
    },
    /// A line holding an object without the text field as a string, or
    /// another JSON value.
    #[error("{0}")]
    NoText(#[source] modelbin_format::Error),
    /// A text the tokenizer refuses.
    #[error("line {line}: {error}")]
    Encode {
        /// The line.
        line: usize,
        /// The tokenizer's error.
        error: crate::Error,
    },
}

/// Runs of lines read and encoded together, per thread of a pool of two or
/// more: a trade between threads that finish a batch close together and a
/// batch whose input, texts, ids and output (about four times its size)
/// leave room in the core's cache (1 MiB L2 here). At two threads, eight runs
/// of 16 KB per thread took 4.5% less time than two of 64 KB; at one, 1 MB
/// batches instead of 128 KB cost the encoding 3% and the parsing and
/// writing 5–15% more time, in cache misses (one thread now has batches of
/// one run: [`batch_bytes`]).
const RUNS_PER_THREAD: usize = 8;

/// Bytes of input lines one task parses and encodes.
const RUN_BYTES: usize = 16 << 10;

/// Threads a batch has work for, at most: beyond, batches stop growing, so
/// output keeps streaming and memory stays bounded (2 MB of input).
const BATCH_THREADS: usize = 16;

/// Bytes of input lines read and encoded together by the current pool:
/// about [`RUNS_PER_THREAD`] runs per thread (fewer when lines do not fill
/// runs evenly: a batch ends after the line that reaches its size), or one
/// run on one thread, which has no work to share. One run's buffers are an
/// eighth of eight runs', and the tokenizer keeps more of its tables in
/// cache: on one core, encoding took 1.4% less time (158.8 against 161.05
/// ms, medians of 40 alternating rounds), and parsing and writing 5% less.
fn batch_bytes() -> usize {
    match rayon::current_num_threads().min(BATCH_THREADS) {
        1 => RUN_BYTES,
        threads => RUN_BYTES * RUNS_PER_THREAD * threads,
    }
}

/// Encodes every line of `input`, writing the ids to `out`. A line is a
/// JSON string, or an object whose `format.field()` is one, as
/// [`TextFormat::line_text`] reads it. Stops at the first line that is
/// neither, or is longer than `max_line` bytes, after writing the lines
/// before it.
pub fn encode_jsonl(
    tokenizer: &Tokenizer,
    format: &TextFormat,
    mut input: impl BufRead,
    mut out: impl Write,
    max_line: usize,
) -> Result<(), JsonlError> {
    let write_error = JsonlError::Write;
    let mut batch = Batch::default();
    let mut runs: Vec<Run> = Vec::new();
    loop {
        let too_long = batch.read(&mut input, batch_bytes(), max_line)?;
        if batch.line_ends.is_empty() {
            out.flush().map_err(write_error)?;
            return too_long.map_or(Ok(()), Err);
        }
        let run_lines = batch.runs();
        if runs.len() < run_lines.len() {
            runs.resize_with(run_lines.len(), Run::default);
        }
        let runs = &mut runs[..run_lines.len()];
        runs.par_iter_mut()
            .zip(run_lines)
            .for_each(|(run, lines)| run.encode(&batch, tokenizer, format, lines));
        for run in runs {
            out.write_all(&run.json).map_err(write_error)?;
            if let Some(failure) = run.failure.take() {
                return Err(failure);
            }
        }
    }
}

/// Whole input lines, and where each ends.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    line_ends: Vec<usize>,
    /// Lines read before this batch.
    first_line: usize,
}

impl Batch {
    /// Replaces the batch with the next lines of `input`, about `bytes` of
    /// them (none at its end). A line longer than `max_line` ends the
    /// batch before it and is returned as the failure to report once the
    /// lines before it are written.
    fn read(
        &mut self,
        input: &mut impl BufRead,
        bytes: usize,
        max_line: usize,
    ) -> Result<Option<JsonlError>, JsonlError> {
        self.first_line += self.line_ends.len();
        self.bytes.clear();
        self.line_ends.clear();
        while self.bytes.len() < bytes {
            match read_line(input, &mut self.bytes, max_line).map_err(JsonlError::Read)? {
                Line::Read(_) => self.line_ends.push(self.bytes.len()),
                Line::End => break,
                Line::TooLong => {
                    return Ok(Some(JsonlError::TooLong {
                        line: self.first_line + self.line_ends.len() + 1,
                        max: max_line,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// The batch's lines cut into runs of about [`RUN_BYTES`].
    fn runs(&self) -> Vec<Range<usize>> {
        let mut runs = Vec::new();
        let (mut first, mut start) = (0, 0);
        for (index, &end) in self.line_ends.iter().enumerate() {
            if end - start >= RUN_BYTES || index + 1 == self.line_ends.len() {
                runs.push(first..index + 1);
                (first, start) = (index + 1, end);
            }
        }
        runs
    }

    /// Line `index` of the batch, without its line break (`\n` or
    /// `\r\n`), so that the parser's error positions are on its line 1.
    fn line(&self, index: usize) -> &[u8] {
        let start = if index == 0 {
            0
        } else {
            self.line_ends[index - 1]
        };
        let line = &self.bytes[start..self.line_ends[index]];
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        line.strip_suffix(b"\r").unwrap_or(line)
    }

    /// The failure of line `index` of the batch, which is not a JSON string
    /// of UTF-8 text.
    fn not_a_string(&self, index: usize, reason: serde_json::Error) -> JsonlError {
        JsonlError::NotAString {
            line: self.first_line + index + 1,
            reason,
        }
    }
}

/// One task's buffers: a run of lines' texts, ids and output.
#[derive(Default)]
struct Run {
    /// The lines' texts, one after another, and where each ends.
    texts: String,
    text_ends: Vec<usize>,
    /// The texts' ids, one after another, and where each text's ids end.
    ids: Vec<u32>,
    id_ends: Vec<usize>,
    /// The JSON lines of the lines before the first that failed (all of
    /// them if none did).
    json: Vec<u8>,
    /// The failure of that line.
    failure: Option<JsonlError>,
}

impl Run {
    /// Parses, encodes and serialises the batch's `lines`, up to the first
    /// that is not a JSON string of UTF-8 text.
    fn encode(
        &mut self,
        batch: &Batch,
        tokenizer: &Tokenizer,
        format: &TextFormat,
        lines: Range<usize>,
    ) {
        let first_index = lines.start;
        self.texts.clear();
        self.text_ends.clear();
        self.failure = None;
        for index in lines {
            let line = batch.line(index);
            if let Err(e) = push_json_string(line, &mut self.texts) {
                // Objects take the slower, general reading; a string
                // (the common line) is parsed in place.
                if line.first() != Some(&b'{') {
                    self.failure = Some(batch.not_a_string(index, e));
                    break;
                }
                let number = (batch.first_line + index + 1) as u64;
                match format.line_text(Path::new("stdin"), number, line) {
                    Ok(text) => self.texts.push_str(&text.unwrap_or_default()),
                    Err(e) => {
                        self.failure = Some(JsonlError::NoText(e));
                        break;
                    }
                }
            }
            self.text_ends.push(self.texts.len());
        }

        self.ids.clear();
        self.id_ends.clear();
        let starts = std::iter::once(0).chain(self.text_ends.iter().copied());
        let texts = starts
            .zip(&self.text_ends)
            .map(|(start, &end)| &self.texts[start..end]);
        if let Err((index, error)) =
            tokenizer.encode_run(texts, &[], &mut self.ids, &mut self.id_ends)
        {
            // The lines before it are still written.
            self.failure = Some(JsonlError::Encode {
                line: batch.first_line + first_index + index + 1,
                error,
            });
        }

        self.json.clear();
        let mut start = 0;
        for &end in &self.id_ends {
            push_json_ids(&mut self.json, &self.ids[start..end]);
            start = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of several batches: plain, escaped and non-ASCII texts, some
    /// with CRLF line ends, the last without a line end.
    fn many_lines() -> (Vec<String>, Vec<u8>) {
        let texts: Vec<String> = (0..4_000)
            .map(|i| match i % 4 {
                0 => format!("line {i}: plain words and numbers {}", i * 7919),
                1 => format!("ligne {i} : « échappée » \"quoted\"\n\tand tabbed"),
                2 => format!("{i} 漢字とかな 🙂{}", " word".repeat(i % 1000)),
                _ => String::new(),
            })
            .collect();
        let mut input = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            input.extend_from_slice(serde_json::to_string(text).unwrap().as_bytes());
            if i + 1 < texts.len() {
                input.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
            }
        }
        (texts, input)
    }

    /// Pools of one thread (one run per batch) and of two (several runs),
    /// whatever the machine, so batches are the same size.
    const THREADS: [usize; 2] = [1, 2];

    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(f)
    }

    fn encode(threads: usize, input: &[u8]) -> (String, Result<(), JsonlError>) {
        let tokenizer = Tokenizer::embedded("cl100k_base").unwrap();
        let mut out = Vec::new();
        let result = on_threads(threads, || {
            encode_jsonl(
                tokenizer,
                &TextFormat::default(),
                input,
                &mut out,
                modelbin_format::io::lines::DEFAULT_MAX_LINE_BYTES,
            )
        });
        (String::from_utf8(out).unwrap(), result)
    }

    /// What the output of `texts` must be: encode_ordinary's ids.
    fn expected(texts: &[String]) -> String {
        let tokenizer = Tokenizer::embedded("cl100k_base").unwrap();
        texts
            .iter()
            .map(|text| {
                serde_json::to_string(&tokenizer.encode_ordinary(text).unwrap()).unwrap() + "\n"
            })
            .collect()
    }

    #[test]
    fn every_line_is_encoded_in_order_across_batches() {
        let (texts, input) = many_lines();
        for threads in THREADS {
            let batch_bytes = on_threads(threads, batch_bytes);
            assert!(input.len() > 4 * batch_bytes, "{} bytes", input.len());
            let (out, result) = encode(threads, &input);
            result.unwrap();
            assert_eq!(out, expected(&texts), "{threads} threads");
        }
    }

    /// A bad line in the second batch: the lines before it are written and
    /// the error names it by its number in the whole input.
    #[test]
    fn objects_give_their_text_field_and_an_object_without_it_stops() {
        let input = b"{\"id\":1,\"text\":\"one\"}\n\"two\"\n{\"id\":3}\n\"four\"\n";
        let (out, result) = encode(1, input);
        assert_eq!(out, expected(&["one".into(), "two".into()]));
        match result {
            Err(JsonlError::NoText(modelbin_format::Error::BadJsonLine {
                line, reason, ..
            })) => {
                assert_eq!(
                    (line, reason.as_str()),
                    (3, "the object has no \"text\" field")
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn output_stops_at_the_first_bad_line() {
        let (texts, input) = many_lines();
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(
                input
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        for threads in THREADS {
            let batch_bytes = on_threads(threads, batch_bytes);
            let bad = line_starts
                .iter()
                .position(|&start| start > batch_bytes + 1000)
                .unwrap()
                + 5;
            let (start, end) = (line_starts[bad], line_starts[bad + 1]);
            let replacements = [
                &b"not json\n"[..],
                b"\"bad UTF-8 \xff\"\n",
                b"\"\xc3\"\r\n",
                b"\n",
                b"\"unterminated\n",
            ];
            for replacement in replacements {
                let input = [&input[..start], replacement, &input[end..]].concat();
                let (out, result) = encode(threads, &input);
                assert_eq!(out, expected(&texts[..bad]), "{threads} threads");
                match result {
                    // The parser sees the line alone, without its line break.
                    Err(JsonlError::NotAString { line, reason }) => {
                        assert_eq!(line, bad + 1);
                        assert!(
                            reason.to_string().contains(" at line 1 column "),
                            "{reason}"
                        );
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn no_input_no_output() {
        for threads in THREADS {
            let (out, result) = encode(threads, b"");
            result.unwrap();
            assert_eq!(out, "");
        }
    }
}
