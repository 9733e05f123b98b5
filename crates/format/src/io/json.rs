//! What every JSON document we read shares: a bound on its values (a parsed
//! value costs tens of bytes of memory however short its text, `0,` is two
//! bytes, so documents are refused when they hold more values than a
//! documented cap, counted in one pass over the text before anything is
//! built), and the byte offset of a parse error.

use crate::{Error, Result};

/// An upper bound on the number of values in the JSON text `json`: one for
/// the root, plus one per `[`, `,` and `:` outside strings (every other
/// value starts right after one of them).
pub(crate) fn value_bound(json: &[u8]) -> u64 {
    let mut strings = Strings::default();
    let mut count = 1u64;
    for &byte in json {
        if !strings.skips(byte) && matches!(byte, b'[' | b',' | b':') {
            count += 1;
        }
    }
    count
}

/// Follows a JSON text byte by byte, telling which bytes are inside a
/// string (escapes included).
#[derive(Debug, Default)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Whether `byte` belongs to a string already opened (its closing
    /// quote included); an opening quote is not skipped, but opens one.
    fn skips(&mut self, byte: u8) -> bool {
        if self.inside {
            match byte {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.inside = false,
                _ => {}
            }
            return true;
        }
        self.inside = byte == b'"';
        false
    }
}

/// Refuses `json` when it may hold more than `limit` values.
pub(crate) fn check(json: &[u8], what: &'static str, limit: u64) -> Result<()> {
    let values = value_bound(json);
    if values > limit {
        return Err(Error::TooManyJsonValues {
            what,
            values,
            limit,
        });
    }
    Ok(())
}

/// The byte offset within `json` of the line and column serde_json reports.
pub(crate) fn error_offset(json: &[u8], e: &serde_json::Error) -> u64 {
    let line_start = json
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(e.line().saturating_sub(2))
        .map_or(0, |(i, _)| i + 1);
    let line_start = if e.line() <= 1 { 0 } else { line_start };
    (line_start + e.column().saturating_sub(1)) as u64
}

/// The byte offsets, in order, of the keys of the top-level object of
/// `json` (where each key's opening quote is), in one pass over the text.
pub(crate) fn top_level_key_offsets(json: &[u8]) -> Vec<u64> {
    let (mut offsets, mut depth, mut expecting_key) = (Vec::new(), 0usize, false);
    let mut strings = Strings::default();
    for (offset, &byte) in json.iter().enumerate() {
        if strings.skips(byte) {
            continue;
        }
        match byte {
            b'"' if depth == 1 && expecting_key => {
                offsets.push(offset as u64);
                expecting_key = false;
            }
            b'{' | b'[' => {
                depth += 1;
                expecting_key = depth == 1 && byte == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expecting_key = depth == 1,
            _ => {}
        }
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_the_values_of_a_document() {
        let json = br#"{"a": [1, 2, {"b": "x,y:[z\"]"}], "c": null}"#;
        // Values: root, the array, 1, 2, the inner object, "x..", null = 7.
        let bound = value_bound(json);
        assert!(bound >= 7, "{bound}");
        assert!(bound <= 8, "{bound}");
        assert_eq!(value_bound(b"0"), 1);
        check(json, "a document", 8).unwrap();
        assert!(matches!(
            check(b"[0,0,0,0]", "a document", 4),
            Err(Error::TooManyJsonValues {
                values: 5,
                limit: 4,
                ..
            })
        ));
    }

    #[test]
    fn top_level_keys_are_found_past_nested_objects_and_strings() {
        let json = br#"{"a":{"x":[1,{"y":2}]}, "b\"{,":"v,\"w", "c":3}"#;
        let offsets = top_level_key_offsets(json);
        let keys: Vec<&[u8]> = offsets
            .iter()
            .map(|&o| &json[o as usize..o as usize + 2])
            .collect();
        assert_eq!(keys, [&br#""a"#[..], br#""b"#, br#""c"#]);
    }
}
