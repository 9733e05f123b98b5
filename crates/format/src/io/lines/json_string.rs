//! The text of a line that holds one JSON string, with nothing but JSON
//! whitespace around it: the input lines of `tokens encode --jsonl`.
//!
//! Lines are unescaped here first: once the whole line is known to be UTF-8,
//! one pass finds runs of plain bytes eight at a time and copies them whole,
//! and decodes escapes where they stand. Anything this pass does not accept (a
//! line that is not one string, bad UTF-8, a control character, an unknown
//! escape, a lone surrogate) goes to serde_json, which decides and words the
//! error, so both give the same texts and the same errors (tested on generated
//! lines, and fuzzed by the `json_lines` target). Two-byte escapes are read
//! from a table, and escaped non-ASCII text (runs of `\u` escapes) is decoded
//! in a loop of its own, because text in most scripts other than Latin
//! arrives that way.

use serde::de::{DeserializeSeed, Visitor};

/// Appends the text of `line`, which must hold one JSON string and nothing
/// but JSON whitespace around it, to `texts`.
/// (After an error, `texts` may hold the string that was read: the caller
/// goes by the ends of the texts that were.)
pub fn push_json_string(line: &[u8], texts: &mut String) -> serde_json::Result<()> {
    let len = texts.len();
    if let Ok(line) = std::str::from_utf8(line)
        && push_unescaped(line, texts).is_some()
    {
        return Ok(());
    }
    texts.truncate(len);
    push_parsed(line, texts)
}

/// [`push_json_string`] through serde_json.
fn push_parsed(line: &[u8], texts: &mut String) -> serde_json::Result<()> {
    let mut parser = serde_json::Deserializer::from_slice(line);
    AppendTo(texts).deserialize(&mut parser)?;
    parser.end()
}

/// Parses a JSON string and appends it to the given string, whether the
/// parser lends it from the input (no escapes) or from its own buffer, so
/// no string is allocated per line.
struct AppendTo<'b>(&'b mut String);

impl<'de> DeserializeSeed<'de> for AppendTo<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, parser: D) -> Result<(), D::Error> {
        parser.deserialize_str(self)
    }
}

impl Visitor<'_> for AppendTo<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON string")
    }

    fn visit_str<E>(self, text: &str) -> Result<(), E> {
        self.0.push_str(text);
        Ok(())
    }
}

/// Appends the text of the JSON string `line` holds, or returns `None`
/// (with part of it appended) where the line is anything else or uses
/// what this pass leaves to serde_json.
fn push_unescaped(line: &str, texts: &mut String) -> Option<()> {
    let bytes = line.as_bytes();
    let open = bytes.iter().position(|&b| !is_json_space(b))?;
    if bytes[open] != b'"' {
        return None;
    }
    let mut at = open + 1;
    loop {
        let special = at + plain_len(&bytes[at..]);
        // Plain runs end at an ASCII byte or the line's end: char boundaries.
        texts.push_str(&line[at..special]);
        at = special + 1;
        match bytes.get(special)? {
            b'"' => return bytes[at..].iter().all(|&b| is_json_space(b)).then_some(()),
            b'\\' => {
                at = push_escape(bytes, at, texts)?;
                // Escapes often come in runs (escaped non-ASCII text).
                while bytes.get(at) == Some(&b'\\') {
                    at = push_escape(bytes, at + 1, texts)?;
                }
            }
            _ => return None,
        }
    }
}

/// JSON's whitespace.
fn is_json_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The number of bytes at the start of `bytes` that stand for themselves
/// in a JSON string: up to the first quote, backslash or control
/// character. Eight bytes are tested at a time: in each word, a byte's high
/// bit is set by the subtractions only if the byte, or some byte below it
/// (through a borrow), is special, so the lowest flagged byte is the first
/// special one.
fn plain_len(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = ONES << 7;
    let mut words = bytes.chunks_exact(8);
    let mut len = 0;
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let below = |w: u64, bound: u64| w.wrapping_sub(ONES * bound) & !w;
        let equal_zero = |w: u64| below(w, 1);
        let flagged = (equal_zero(word ^ (ONES * u64::from(b'"')))
            | equal_zero(word ^ (ONES * u64::from(b'\\')))
            | below(word, 0x20))
            & HIGHS;
        if flagged != 0 {
            return len + flagged.trailing_zeros() as usize / 8;
        }
        len += 8;
    }
    len + words
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(words.remainder().len())
}

/// Appends the character of the escape whose letter is at `at` (just after
/// the backslash; for `\u`, the characters of the run of `\u` escapes it
/// starts) and returns where it ends.
#[inline]
fn push_escape(bytes: &[u8], at: usize, texts: &mut String) -> Option<usize> {
    let letter = *bytes.get(at)?;
    match SHORT_ESCAPES[usize::from(letter)] {
        0 if letter == b'u' => push_unicode_escapes(bytes, at + 1, texts),
        0 => None,
        character => {
            texts.push(char::from(character));
            Some(at + 1)
        }
    }
}

/// What each two-byte escape stands for, by its letter (a line feed for
/// `n`), and 0 for every other byte (no two-byte escape stands for NUL).
static SHORT_ESCAPES: [u8; 256] = {
    let mut table = [0; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0C;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// Appends the characters of a run of `\u` escapes, the first one's hex
/// digits at `at`, and returns where the run ends.
fn push_unicode_escapes(bytes: &[u8], mut at: usize, texts: &mut String) -> Option<usize> {
    loop {
        let (character, end) = unicode_escape(bytes, at)?;
        texts.push(character);
        at = end;
        if bytes.get(at..at + 2) != Some(b"\\u") {
            return Some(at);
        }
        at += 2;
    }
}

/// The character of the four hex digits at `at` (after `\u`), with the low
/// surrogate's escape that must follow a high one, and where they end.
/// Lone surrogates are left to serde_json.
fn unicode_escape(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let unit = hex4(bytes.get(at..at + 4)?)?;
    if !(0xD800..0xDC00).contains(&unit) {
        // `from_u32` refuses a lone low surrogate.
        return Some((char::from_u32(unit)?, at + 4));
    }
    let low = match bytes.get(at + 4..at + 10)? {
        [b'\\', b'u', digits @ ..] => hex4(digits)?,
        _ => return None,
    };
    if !(0xDC00..0xE000).contains(&low) {
        return None;
    }
    let scalar = 0x10000 + ((unit - 0xD800) << 10 | (low - 0xDC00));
    Some((char::from_u32(scalar)?, at + 10))
}

/// The value of four hex digits.
fn hex4(digits: &[u8]) -> Option<u32> {
    let values = <[u8; 4]>::try_from(digits)
        .ok()?
        .map(|digit| HEX_VALUES[usize::from(digit)]);
    // A byte that is not a hex digit has its high bit set.
    if values.iter().fold(0, |any, &value| any | value) & 0x80 != 0 {
        return None;
    }
    Some(
        values
            .iter()
            .fold(0, |sum, &value| sum << 4 | u32::from(value)),
    )
}

/// The value of each hex digit (either case), and 0xFF for every other byte.
static HEX_VALUES: [u8; 256] = {
    let mut table = [0xFF; 256];
    let mut value = 0;
    while value < 16 {
        let digit = b"0123456789abcdef"[value];
        table[digit as usize] = value as u8;
        table[digit.to_ascii_uppercase() as usize] = value as u8;
        value += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_unescaped_and_appended() {
        let mut texts = String::from("kept ");
        push_json_string(b"\"plain\"", &mut texts).unwrap();
        push_json_string(b" \"a\\n\\u00e9\\ud83d\\ude00\" \t", &mut texts).unwrap();
        push_json_string(
            "\"\\/\\b\\f\\r\\t\\\"\\\\ raw é 🙂\"".as_bytes(),
            &mut texts,
        )
        .unwrap();
        assert_eq!(
            texts,
            "kept plaina\n\u{e9}\u{1f600}/\u{8}\u{c}\r\t\"\\ raw é 🙂"
        );
        use serde_json::error::Category::{Data, Eof, Syntax};
        for (line, category) in [
            (&b""[..], Eof),
            (b"42", Data),
            (b"[\"a\"]", Data),
            (b"\"a\" \"b\"", Syntax),
            (b"\"a\ttab\"", Syntax),
            (b"\"unterminated", Eof),
            (b"\"\\ud800\"", Syntax),
            (b"\"\\udc00\"", Syntax),
            (b"\"\\ud800\\u0041\"", Syntax),
            (b"\"\\x\"", Syntax),
            (b"\"\\u00g0\"", Syntax),
            (b"\"\xff\"", Syntax),
            (b"\"a\"\xff", Syntax),
        ] {
            let error = push_json_string(line, &mut texts).unwrap_err();
            assert_eq!(error.classify(), category, "{error}");
        }
    }

    /// Every byte value at every position of runs of 1 to 39 bytes, with
    /// bytes that stand for themselves around it and a quote further on.
    #[test]
    fn plain_runs_end_at_the_first_special_byte() {
        let is_special = |b: &u8| *b == b'"' || *b == b'\\' || *b < 0x20;
        for len in 1..40 {
            for at in 0..len {
                for byte in 0..=u8::MAX {
                    let mut bytes: Vec<u8> =
                        (0..len).map(|i| [b'a', 0xc3, 0x7f, b' '][i % 4]).collect();
                    bytes[at] = byte;
                    bytes[(at + 3).min(len - 1)] = b'"';
                    let want = bytes.iter().position(is_special).unwrap_or(len);
                    assert_eq!(plain_len(&bytes), want, "{bytes:?}");
                }
            }
        }
    }

    /// Every byte value at every position of four hex digits: a hex digit
    /// of either case gives its value, anything else no value.
    #[test]
    fn hex_digits_are_read_and_others_refused() {
        for at in 0..4 {
            for byte in 0..=u8::MAX {
                let mut digits = *b"0fA9";
                digits[at] = byte;
                let want = std::str::from_utf8(&digits)
                    .ok()
                    .filter(|text| text.bytes().all(|b| b.is_ascii_hexdigit()))
                    .map(|text| u32::from_str_radix(text, 16).unwrap());
                assert_eq!(hex4(&digits), want, "{digits:?}");
            }
        }
    }

    /// Every byte after a backslash, alone and in a run of escapes, gives
    /// what serde_json gives.
    #[test]
    fn every_escape_letter_matches_serde_json() {
        for letter in 0..=u8::MAX {
            for line in [
                [&b"\"\\"[..], &[letter], b"\""].concat(),
                [&b"\"\\u00e9\\"[..], &[letter], b"0041\\n\""].concat(),
            ] {
                let (mut fast, mut parsed) = (String::new(), String::new());
                let got = push_json_string(&line, &mut fast).map_err(|e| e.to_string());
                let want = push_parsed(&line, &mut parsed).map_err(|e| e.to_string());
                assert_eq!(got, want, "{line:?}");
                assert!(got.is_err() || fast == parsed, "{line:?}");
            }
        }
    }

    /// Lines put together from pieces of valid and broken JSON give what
    /// serde_json gives: the same text, or an error with the same message.
    #[test]
    fn generated_lines_match_serde_json() {
        // What valid strings hold: plain runs short and long (the scan
        // tests eight bytes at a time), raw non-ASCII and DEL, and every
        // escape with hex digits of both cases; lone surrogate halves too,
        // which are valid where a high one meets a low one.
        const VALID: [&[u8]; 20] = [
            b"a",
            b" ",
            b"plain text",
            b"a longer run of plain text, past eight bytes",
            "é漢🙂".as_bytes(),
            b"\x7f",
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\b\\f\\n\\r\\t",
            b"\\u0000\\u001f\\u001F",
            b"\\u0020\\u007f",
            b"\\u00e9\\u00eA",
            b"\\u4E2D\\uFFFF",
            b"\\ud83d",
            b"\\ude00",
            b"\\ud83d\\ude00",
            b"\\uD834\\uDD1E",
            b"\\uDBFF\\uDFFF",
            b"\\uDbfF\\udC00",
        ];
        // What breaks them, or surrounds them.
        const OTHER: [&[u8]; 16] = [
            b"\"",
            b"\\",
            b"\\u12",
            b"\\uzzzz",
            b"\\u00\xc3\xa9",
            b"\\ud800\\ue000",
            b"\\ud800\\ud800",
            b"\\q",
            b"\t",
            b"\r\n",
            b"\x00",
            b"\x1f",
            b"\xc3",
            b"\xff",
            b"0",
            b"[]",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |bound: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % bound
        };
        let spaces: [&[u8]; 4] = [b"", b" ", b"\t ", b"\r"];
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..100_000 {
            let mut line = spaces[next(4)].to_vec();
            if next(8) > 0 {
                line.push(b'"');
            }
            for _ in 0..next(8) {
                // Mostly the pieces of valid strings.
                let piece = if next(6) > 0 {
                    VALID[next(VALID.len())]
                } else {
                    OTHER[next(OTHER.len())]
                };
                line.extend_from_slice(piece);
            }
            if next(8) > 0 {
                line.push(b'"');
            }
            line.extend_from_slice(spaces[next(4)]);
            let (mut fast, mut parsed) = (String::from("x"), String::from("x"));
            let got = push_json_string(&line, &mut fast).map_err(|e| e.to_string());
            let want = push_parsed(&line, &mut parsed).map_err(|e| e.to_string());
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&line));
            if got.is_ok() {
                assert_eq!(fast, parsed, "{:?}", String::from_utf8_lossy(&line));
                accepted += 1;
            } else {
                refused += 1;
            }
        }
        // Both outcomes were well exercised.
        assert!(
            accepted > 20_000 && refused > 20_000,
            "{accepted} {refused}"
        );
    }
}
