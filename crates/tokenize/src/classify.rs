//! Character classes of the tiktoken pre-tokenizer patterns.
//!
//! `\p{L}`, `\p{N}` and the o200k letter groups come from the Unicode General
//! Category (Unicode 16, the version of the regex tables tiktoken-rs uses);
//! `\s` is the White_Space property (`char::is_whitespace`). ASCII is a table
//! lookup.

use unicode_general_category::{GeneralCategory as G, get_general_category};

/// `\p{L}`.
pub const LETTER: u8 = 1;
/// `\p{N}`.
pub const NUMBER: u8 = 2;
/// `\s`.
pub const SPACE: u8 = 4;
/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
pub const UPPERISH: u8 = 8;
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
pub const LOWERISH: u8 = 16;

const ASCII: [u8; 128] = ascii_table();

const fn ascii_table() -> [u8; 128] {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = if c.is_ascii_uppercase() {
            LETTER | UPPERISH
        } else if c.is_ascii_lowercase() {
            LETTER | LOWERISH
        } else if c.is_ascii_digit() {
            NUMBER
        } else if matches!(c, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r') {
            SPACE
        } else {
            0
        };
        b += 1;
    }
    table
}

/// The class bits of the ASCII char `b` (< 0x80).
#[inline]
pub fn ascii_class(b: u8) -> u8 {
    ASCII[usize::from(b & 0x7F)]
}

/// The class bits of `c`.
#[inline]
pub fn class(c: char) -> u8 {
    if c.is_ascii() {
        return ASCII[c as usize];
    }
    let category = match get_general_category(c) {
        G::UppercaseLetter | G::TitlecaseLetter => LETTER | UPPERISH,
        G::LowercaseLetter => LETTER | LOWERISH,
        G::ModifierLetter | G::OtherLetter => LETTER | UPPERISH | LOWERISH,
        G::NonspacingMark | G::SpacingMark | G::EnclosingMark => UPPERISH | LOWERISH,
        G::DecimalNumber | G::LetterNumber | G::OtherNumber => NUMBER,
        _ => 0,
    };
    if c.is_whitespace() {
        category | SPACE
    } else {
        category
    }
}

/// `[^\s\p{L}\p{N}]`: neither space, letter nor number.
#[inline]
pub fn is_other(class: u8) -> bool {
    class & (LETTER | NUMBER | SPACE) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class('a'), LETTER | LOWERISH);
        assert_eq!(class('Z'), LETTER | UPPERISH);
        assert_eq!(class('7'), NUMBER);
        assert_eq!(class('\n'), SPACE);
        assert_eq!(class('!'), 0);
        assert_eq!(class('é'), LETTER | LOWERISH);
        assert_eq!(class('ǅ'), LETTER | UPPERISH, "titlecase");
        assert_eq!(class('中'), LETTER | UPPERISH | LOWERISH);
        assert_eq!(class('\u{0301}'), UPPERISH | LOWERISH, "combining mark");
        assert_eq!(class('½'), NUMBER);
        assert_eq!(class('\u{3000}'), SPACE);
        assert_eq!(class('\u{85}'), SPACE);
        assert_eq!(class('\u{A0}'), SPACE);
        assert!(is_other(class('€')));
        for b in 0u8..128 {
            let c = b as char;
            assert_eq!(class(c) & SPACE != 0, c.is_whitespace(), "{b}");
        }
    }
}
