//! Character classes of the tiktoken pre-tokenizer patterns, by char: a
//! table lookup for ASCII, and for other chars two loads from the table
//! `build.rs` lays out from their Unicode categories (`class_table.rs`).

use crate::pretokenize::class_table::{BLOCK, BLOCKS};
pub use crate::pretokenize::class_table::{LETTER, LOWERISH, NUMBER, SPACE, UPPERISH};

/// Every char's class (see `class_table.rs`), laid out by `build.rs`.
static TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/classes.bin"));

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
    let code = c as usize;
    if code < 0x80 {
        return ASCII[code];
    }
    let block = usize::from(TABLE[code / BLOCK]);
    TABLE[BLOCKS + block * BLOCK + code % BLOCK]
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

    /// The laid-out table (and the ASCII table) give every char the class
    /// its category gives it, and the table is the one `table` builds.
    #[test]
    fn every_char_has_its_category_class() {
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            assert_eq!(
                class(c),
                crate::pretokenize::class_table::by_category(c),
                "{c:?}"
            );
        }
        assert_eq!(TABLE, crate::pretokenize::class_table::table());
    }
}
