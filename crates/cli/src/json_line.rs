//! The lines of `tokens encode --jsonl`, fast: reading one that holds a
//! JSON string, and writing one that holds a JSON array of ids.
//!
//! Next to the tokenizer, reading and writing these lines through
//! serde_json took a quarter of the command's time. Here, runs of plain
//! string bytes are found eight at a time and copied whole, escapes are
//! decoded in place, and the UTF-8 check is left to one pass over the whole
//! text (`std::str::from_utf8`); ids are written two digits per table
//! lookup with no branch on their width. Both accept, refuse and write what
//! serde_json does (tests compare them on random and mutated lines).

use std::fmt;

/// Why a line is not one JSON string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonStringError {
    /// The line does not start (after whitespace) with `"`.
    NotAString,
    /// The line ends inside the string.
    Unterminated,
    /// A control character (below U+0020) appears unescaped.
    ControlCharacter,
    /// A `\` is followed by something that is not an escape.
    BadEscape,
    /// A `\u` escape names half of a surrogate pair without the other half.
    LoneSurrogate,
    /// Something other than whitespace follows the string.
    TrailingCharacters,
}

impl fmt::Display for JsonStringError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            JsonStringError::NotAString => "it does not start with a string",
            JsonStringError::Unterminated => "the string is not closed",
            JsonStringError::ControlCharacter => "a control character is not escaped",
            JsonStringError::BadEscape => "an invalid escape",
            JsonStringError::LoneSurrogate => "a \\u escape is half of a surrogate pair",
            JsonStringError::TrailingCharacters => "characters follow the string",
        })
    }
}

/// A JSON string's error and the byte of the line where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonLineError {
    /// What is wrong.
    pub kind: JsonStringError,
    /// Where, counting from 0.
    pub at: usize,
}

impl fmt::Display for JsonLineError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} (byte {})", self.kind, self.at + 1)
    }
}

/// Appends the text of `line`, which must hold one JSON string and nothing
/// but JSON whitespace around it (its line break included), to `text`.
/// The bytes appended are not checked to be UTF-8: the caller checks them.
pub fn push_json_string(line: &[u8], text: &mut Vec<u8>) -> Result<(), JsonLineError> {
    let fail = |kind, at| Err(JsonLineError { kind, at });
    let mut at = skip_whitespace(line, 0);
    if line.get(at) != Some(&b'"') {
        return fail(JsonStringError::NotAString, at);
    }
    at += 1;
    loop {
        at += copy_plain(&line[at..], text);
        match line.get(at) {
            None => return fail(JsonStringError::Unterminated, at),
            Some(b'"') => break,
            Some(b'\\') => match unescape(line, at, text) {
                Ok(next) => at = next,
                Err(kind) => return fail(kind, at),
            },
            Some(_) => return fail(JsonStringError::ControlCharacter, at),
        }
    }
    let end = skip_whitespace(line, at + 1);
    if end != line.len() {
        return fail(JsonStringError::TrailingCharacters, end);
    }
    Ok(())
}

/// The position of the first byte from `at` on that is not JSON whitespace.
fn skip_whitespace(line: &[u8], mut at: usize) -> usize {
    while matches!(line.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Appends the leading plain bytes of `bytes` (neither `"`, `\\` nor a
/// control character) to `text` and returns how many there were. Eight
/// bytes are tested and copied per step; the copy is cut back to the first
/// special byte.
fn copy_plain(bytes: &[u8], text: &mut Vec<u8>) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The lowest byte flagged is the first byte below `n` (for n <= 0x80);
    // bytes above a flagged one may be flagged wrongly, which is harmless.
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGHS;
    let mut words = bytes.chunks_exact(8);
    for (index, chunk) in (&mut words).enumerate() {
        let chunk: &[u8; 8] = chunk.try_into().expect("eight bytes");
        let word = u64::from_le_bytes(*chunk);
        text.extend_from_slice(chunk);
        let special = below(word ^ (ONES * u64::from(b'"')), 1)
            | below(word ^ (ONES * u64::from(b'\\')), 1)
            | below(word, 0x20);
        if special != 0 {
            let plain = (special.trailing_zeros() / 8) as usize;
            text.truncate(text.len() - 8 + plain);
            return index * 8 + plain;
        }
    }
    let tail = words.remainder();
    let plain = tail
        .iter()
        .take_while(|&&b| b != b'"' && b != b'\\' && b >= 0x20)
        .count();
    text.extend_from_slice(&tail[..plain]);
    bytes.len() - tail.len() + plain
}

/// Decodes the escape at `line[at]` (a `\`) onto `text`; returns the
/// position after it.
fn unescape(line: &[u8], at: usize, text: &mut Vec<u8>) -> Result<usize, JsonStringError> {
    let simple = match line.get(at + 1) {
        Some(b'"') => b'"',
        Some(b'\\') => b'\\',
        Some(b'/') => b'/',
        Some(b'b') => 0x08,
        Some(b'f') => 0x0c,
        Some(b'n') => b'\n',
        Some(b'r') => b'\r',
        Some(b't') => b'\t',
        Some(b'u') => return unescape_unicode(line, at, text),
        None => return Err(JsonStringError::Unterminated),
        Some(_) => return Err(JsonStringError::BadEscape),
    };
    text.push(simple);
    Ok(at + 2)
}

/// Decodes `\uXXXX` at `line[at]`, or a surrogate pair `\uD8xx\uDCxx`.
fn unescape_unicode(line: &[u8], at: usize, text: &mut Vec<u8>) -> Result<usize, JsonStringError> {
    let first = hex4(line, at + 2)?;
    let (code, next) = match first {
        0xD800..=0xDBFF => {
            if line.get(at + 6..at + 8) != Some(b"\\u") {
                return Err(JsonStringError::LoneSurrogate);
            }
            let second = hex4(line, at + 8)?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return Err(JsonStringError::LoneSurrogate);
            }
            (
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00),
                at + 12,
            )
        }
        0xDC00..=0xDFFF => return Err(JsonStringError::LoneSurrogate),
        _ => (first, at + 6),
    };
    let c = char::from_u32(code).expect("not a surrogate, below 0x110000");
    text.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    Ok(next)
}

/// The value of the four hex digits at `line[at..at + 4]`.
fn hex4(line: &[u8], at: usize) -> Result<u32, JsonStringError> {
    let digits = line.get(at..at + 4).ok_or(JsonStringError::Unterminated)?;
    digits.iter().try_fold(0, |value, &digit| {
        let nibble = (digit as char)
            .to_digit(16)
            .ok_or(JsonStringError::BadEscape)?;
        Ok(value << 4 | nibble)
    })
}

/// Appends `ids` as a JSON array (serde_json's compact form) and a line
/// break. Digits are formed in a stack buffer copied out when nearly full.
pub fn push_json_line(json: &mut Vec<u8>, ids: &[u32]) {
    let mut buffer = [0u8; 256];
    buffer[0] = b'[';
    let mut len = 1;
    for (index, &id) in ids.iter().enumerate() {
        // Room for a comma and a number.
        if len > buffer.len() - 1 - DECIMAL_ROOM {
            json.extend_from_slice(&buffer[..len]);
            len = 0;
        }
        if index > 0 {
            buffer[len] = b',';
            len += 1;
        }
        len += write_decimal(&mut buffer[len..], id);
    }
    json.extend_from_slice(&buffer[..len]);
    json.extend_from_slice(b"]\n");
}

/// "00", "01", …, "99": two digits per step.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The smallest number of each decimal width from two digits up, with 0
/// first: `value < POWERS_OF_TEN[k]` tells whether a number whose bit length
/// suggests `k + 1` digits has only `k`.
const POWERS_OF_TEN: [u32; 10] = [
    0,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// The bytes [`write_decimal`] may write.
const DECIMAL_ROOM: usize = 10;

/// Writes the decimal digits of `value` at the start of `out` (at least
/// [`DECIMAL_ROOM`] bytes long; the bytes after the digits may be
/// overwritten) and returns how many there are.
fn write_decimal(out: &mut [u8], value: u32) -> usize {
    const EIGHT_DIGITS: u32 = 100_000_000;
    if value < EIGHT_DIGITS {
        return write_short_decimal(out, value);
    }
    let lead = write_short_decimal(out, value / EIGHT_DIGITS);
    out[lead..lead + 8].copy_from_slice(&eight_digits(value % EIGHT_DIGITS).to_le_bytes());
    lead + 8
}

/// [`write_decimal`] for values below 10^8. The digits are put together in
/// a register and stored at once, and no branch depends on the value, so
/// ids of mixed widths cost neither mispredictions nor stalled reloads.
fn write_short_decimal(out: &mut [u8], value: u32) -> usize {
    let bits = u32::BITS - (value | 1).leading_zeros();
    let guess = ((bits * 1233) >> 12) as usize;
    let width = guess + 1 - usize::from(value < POWERS_OF_TEN[guess]);
    let significant = eight_digits(value) >> (8 * (8 - width));
    out[..8].copy_from_slice(&significant.to_le_bytes());
    width
}

/// The eight decimal digits of `value` (below 10^8, zero-padded) as ASCII,
/// the most significant in the lowest byte.
fn eight_digits(value: u32) -> u64 {
    let pair = |two_digits: u32| {
        let at = two_digits as usize * 2;
        u64::from(u16::from_le_bytes([DIGIT_PAIRS[at], DIGIT_PAIRS[at + 1]]))
    };
    let (high, low) = (value / 10_000, value % 10_000);
    pair(high / 100) | pair(high % 100) << 16 | pair(low / 100) << 32 | pair(low % 100) << 48
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The text of `line` as a string, or the error.
    fn read(line: &[u8]) -> Result<String, JsonLineError> {
        let mut text = Vec::new();
        push_json_string(line, &mut text)?;
        Ok(String::from_utf8(text).expect("UTF-8 in these tests"))
    }

    /// `text` as a JSON string with every non-ASCII character escaped as
    /// `\uXXXX` (surrogate pairs above U+FFFF), as Python's `json.dumps`
    /// writes it by default.
    fn ascii_json(text: &str) -> String {
        let mut json = String::from("\"");
        for c in text.chars() {
            match c {
                '"' => json.push_str("\\\""),
                '\\' => json.push_str("\\\\"),
                '\n' => json.push_str("\\n"),
                ' '..='~' => json.push(c),
                _ => {
                    for unit in c.encode_utf16(&mut [0; 2]) {
                        json.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        json.push('"');
        json
    }

    #[test]
    fn strings_are_unescaped_and_appended() {
        let mut text = b"kept ".to_vec();
        push_json_string(b"\"plain\"\n", &mut text).unwrap();
        push_json_string(
            b" \t\"a\\n\\u00e9\\ud83d\\ude00\\/\\b\\f\\r\\t\\\"\\\\\" \r\n",
            &mut text,
        )
        .unwrap();
        assert_eq!(
            text,
            "kept plaina\n\u{e9}\u{1f600}/\u{8}\u{c}\r\t\"\\".as_bytes()
        );
        assert_eq!(read(b"\"\"").unwrap(), "");
        assert_eq!(read(b"\"\\u0000\x7f\"").unwrap(), "\0\x7f");
    }

    #[test]
    fn each_refusal_names_its_reason_and_byte() {
        use JsonStringError::*;
        let cases: [(&[u8], JsonStringError, usize); 15] = [
            (b"\n", NotAString, 1),
            (b" 42\n", NotAString, 1),
            (b"[\"a\"]", NotAString, 0),
            (b"\"unterminated", Unterminated, 13),
            (b"\"a line break in it\n", ControlCharacter, 19),
            (b"\"ends in an escape\\", Unterminated, 18),
            (b"\"\\u12", Unterminated, 1),
            (b"\"tab\there\"", ControlCharacter, 4),
            (b"\"\\x\"", BadEscape, 1),
            (b"\"\\u12g4\"", BadEscape, 1),
            (b"\"\\ud800\"", LoneSurrogate, 1),
            (b"\"\\ud800\\u0041\"", LoneSurrogate, 1),
            (b"\"\\udc00\"", LoneSurrogate, 1),
            (b"\"a\" \"b\"\n", TrailingCharacters, 4),
            (b"\"a\"\xff\n", TrailingCharacters, 3),
        ];
        for (line, kind, at) in cases {
            assert_eq!(
                read(line),
                Err(JsonLineError { kind, at }),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn decimals_match_to_string() {
        let mut values: Vec<u32> = (0..=10)
            .flat_map(|k| {
                let power = 10u64.pow(k);
                [power - 1, power, power + 1]
            })
            .filter_map(|v| u32::try_from(v).ok())
            .chain([u32::MAX, u32::MAX - 1, 1 << 31])
            .collect();
        // A spread of values of every width (a fixed multiplicative walk).
        let mut v: u32 = 1;
        for _ in 0..100_000 {
            v = v.wrapping_mul(2_654_435_761).wrapping_add(12_345);
            values.push(v >> (v % 32));
        }
        let mut out = [0u8; DECIMAL_ROOM];
        for value in values {
            let width = write_decimal(&mut out, value);
            assert_eq!(&out[..width], value.to_string().as_bytes(), "{value}");
        }
    }

    #[test]
    fn json_lines_match_serde_json() {
        for ids in [vec![], vec![0], vec![7, 100_256, 4_294_967_295, 10, 99]] {
            let mut json = Vec::new();
            push_json_line(&mut json, &ids);
            let want = serde_json::to_string(&ids).unwrap() + "\n";
            assert_eq!(String::from_utf8(json).unwrap(), want);
        }
        // Long enough to refill the stack buffer many times.
        let ids: Vec<u32> = (0..5_000).map(|i| i * 997).collect();
        let mut json = Vec::new();
        push_json_line(&mut json, &ids);
        assert_eq!(
            json,
            (serde_json::to_string(&ids).unwrap() + "\n").into_bytes()
        );
    }

    /// Every control byte, and the closing quote and escapes, found at every
    /// place in and after the eight-byte steps.
    #[test]
    fn special_bytes_are_found_at_every_position() {
        for before in 0..20 {
            let plain = "é".repeat(before / 2) + &"a".repeat(before % 2);
            for control in 0..0x20u8 {
                let line = [b"\"", plain.as_bytes(), &[control], b"\""].concat();
                let error = JsonLineError {
                    kind: JsonStringError::ControlCharacter,
                    at: 1 + plain.len(),
                };
                assert_eq!(read(&line), Err(error), "{control:#x} after {before}");
            }
            assert_eq!(read(format!("\"{plain}\"").as_bytes()).unwrap(), plain);
            let escaped = format!("\"{plain}\\\"{plain}\\\\\"");
            assert_eq!(
                read(escaped.as_bytes()).unwrap(),
                format!("{plain}\"{plain}\\")
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any text, written by serde_json or escaped to ASCII, reads back.
        #[test]
        fn written_strings_read_back(text in any::<String>(), pad in "[ \t\r]{0,3}") {
            let compact = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(read(format!("{pad}{compact}{pad}\n").as_bytes()).unwrap(), text.clone());
            prop_assert_eq!(read(ascii_json(&text).as_bytes()).unwrap(), text);
        }

        /// On any line (written strings with bytes changed, cut or added),
        /// a line is read exactly when serde_json reads it, to the same text.
        #[test]
        fn agrees_with_serde_json_on_mutated_lines(
            text in any::<String>(),
            ascii in any::<bool>(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<u8>()), 1..4),
        ) {
            let mut line = if ascii { ascii_json(&text) } else { serde_json::to_string(&text).unwrap() }
                .into_bytes();
            for (at, edit, byte) in edits {
                let at = at.index(line.len() + 1);
                match edit {
                    0 if at < line.len() => line[at] = byte,
                    1 if at < line.len() => { line.remove(at); }
                    _ => line.insert(at, byte),
                }
            }
            let mut ours = Vec::new();
            let ours = push_json_string(&line, &mut ours)
                .ok()
                .and_then(|()| String::from_utf8(ours).ok());
            let theirs = serde_json::from_slice::<String>(&line).ok();
            prop_assert_eq!(ours, theirs, "{:?}", String::from_utf8_lossy(&line));
        }
    }
}
