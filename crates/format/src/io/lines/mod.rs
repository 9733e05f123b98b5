//! Text read and written a line at a time, as the commands that take lines
//! of text or JSON Lines do.
//!
//! [`read_line`] caps a line's length: a stream with no line break
//! (`/dev/zero`, a binary file) is [`Line::TooLong`], not an allocation that
//! grows until the process aborts. [`push_json_string`] reads a line holding
//! one JSON string, and [`push_json_ids`] writes token ids as a JSON array.
//!
//! ```
//! use modelbin_format::io::lines::{Line, push_json_ids, push_json_string, read_line};
//!
//! let mut input = &b"\"caf\\u00e9\"\n\"two\"\n"[..];
//! let (mut line, mut text) = (Vec::new(), String::new());
//! while let Line::Read(_) = read_line(&mut input, &mut line, 1024).unwrap() {
//!     push_json_string(&line, &mut text).unwrap();
//!     line.clear();
//! }
//! assert_eq!(text, "caf\u{e9}two");
//!
//! let mut json = Vec::new();
//! push_json_ids(&mut json, &[15339, 1917]);
//! assert_eq!(json, b"[15339,1917]\n");
//! ```

mod json_ids;
mod json_string;

pub use json_ids::push_json_ids;
pub use json_string::push_json_string;

use std::io::{self, BufRead};

/// The longest line a line reader takes unless told otherwise: 64 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line of this many bytes (its `\n` included, if it had one) was
    /// appended.
    Read(usize),
    /// The input has no more bytes.
    End,
    /// The line runs past the cap; nothing was appended.
    TooLong,
}

/// Appends the next line of `input`, its `\n` included, to `buf`, reading
/// no more than `max` bytes of it (the line break not counted) plus one
/// buffer of the reader.
pub fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    let start = buf.len();
    loop {
        let available = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(match buf.len() - start {
                0 => Line::End,
                // A last line with no break may end in a `\r` that was not
                // counted while a `\n` could still follow.
                read if read > max => {
                    buf.truncate(start);
                    Line::TooLong
                }
                read => Line::Read(read),
            });
        }
        let (take, ends) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let mut content = buf.len() - start + take;
        if ends {
            // The `\n`, and a `\r` before it, are the line break.
            let before_break = match take {
                1 => buf[start..].last(),
                _ => available.get(take - 2),
            };
            content -= 1 + usize::from(before_break == Some(&b'\r'));
        } else if available.last() == Some(&b'\r') {
            // It may be the first byte of a `\r\n` break: counted once the
            // next byte shows it is not.
            content -= 1;
        }
        if content > max {
            buf.truncate(start);
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        input.consume(take);
        if ends {
            return Ok(Line::Read(buf.len() - start));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize, capacity: usize) -> Vec<Result<Vec<u8>, Line>> {
        let mut reader = io::BufReader::with_capacity(capacity, input);
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            match read_line(&mut reader, &mut buf, max).unwrap() {
                Line::Read(n) => {
                    assert_eq!(n, buf.len());
                    out.push(Ok(buf));
                }
                Line::End => return out,
                Line::TooLong => {
                    assert!(buf.is_empty());
                    out.push(Err(Line::TooLong));
                    return out;
                }
            }
        }
    }

    #[test]
    fn lines_equal_read_until_under_the_cap() {
        let input = b"one\ntwo\r\n\nlast without break";
        for capacity in [1, 2, 3, 7, 64] {
            let mut expected = Vec::new();
            let mut reader = io::BufReader::new(&input[..]);
            loop {
                let mut buf = Vec::new();
                if reader.read_until(b'\n', &mut buf).unwrap() == 0 {
                    break;
                }
                expected.push(Ok(buf));
            }
            assert_eq!(lines(input, 18, capacity), expected, "capacity {capacity}");
        }
    }

    #[test]
    fn the_cap_counts_the_line_without_its_break() {
        for capacity in [1, 4, 64] {
            assert_eq!(lines(b"abcd\n", 4, capacity), [Ok(b"abcd\n".to_vec())]);
            assert_eq!(lines(b"abcd\r\n", 4, capacity), [Ok(b"abcd\r\n".to_vec())]);
            assert_eq!(lines(b"abcd", 4, capacity), [Ok(b"abcd".to_vec())]);
            assert_eq!(lines(b"abc\r", 4, capacity), [Ok(b"abc\r".to_vec())]);
            assert_eq!(lines(b"abcd\r", 4, capacity), [Err(Line::TooLong)]);
            assert_eq!(
                lines(b"ab\nabcde\n", 4, capacity),
                [Ok(b"ab\n".to_vec()), Err(Line::TooLong)]
            );
        }
    }

    #[test]
    fn an_endless_line_stops_at_the_cap() {
        let mut zeros = io::BufReader::new(io::repeat(0));
        let mut buf = Vec::new();
        assert_eq!(
            read_line(&mut zeros, &mut buf, 1 << 20).unwrap(),
            Line::TooLong
        );
        assert!(buf.capacity() <= 2 << 20, "{}", buf.capacity());
    }
}
