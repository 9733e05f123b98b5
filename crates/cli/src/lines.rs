//! Line-by-line input with a cap on a line's length: a stream with no line
//! break (`/dev/zero`, a binary file) is an error naming the cap, not an
//! allocation that grows until the process aborts.

use std::io::{self, BufRead};

/// The longest line a line reader takes unless told otherwise: 64 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// The `--max-line-bytes` flag of the commands that read lines.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct LineLimit {
    /// The longest input line accepted, in bytes, its line break not
    /// counted; a longer line is an error.
    #[arg(
        long = "max-line-bytes",
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_LINE_BYTES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
    )]
    pub max_line_bytes: usize,
}

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

/// The error for line `number` (1-based) of `source` that is longer than
/// `max` bytes.
pub fn too_long(source: &str, number: usize, max: usize) -> crate::failure::Failure {
    crate::failure::Failure::Invalid(format!(
        "{source} line {number} is longer than {max} bytes; pass --max-line-bytes to raise the limit"
    ))
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
