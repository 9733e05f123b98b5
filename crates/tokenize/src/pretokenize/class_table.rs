//! The class bits of the tiktoken pre-tokenizer patterns, each char's class
//! from its Unicode General Category (Unicode 16, the version of the regex
//! tables tiktoken-rs uses) and `\s` (the White_Space property,
//! `char::is_whitespace`), and the table of every char's class that
//! `build.rs` lays out from them, so that a class at run time is two loads
//! instead of a search of the category ranges.
//!
//! The table splits the code points into blocks of [`BLOCK`]: first one
//! byte per block, the index of its classes among the distinct blocks,
//! then the classes of each distinct block (230 of them with
//! `unicode-general-category` 1.1, 38 KB in all; the layout holds up to
//! 256).

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

/// Code points per block of the table.
pub const BLOCK: usize = 128;
/// Blocks in all (every code point up to U+10FFFF).
pub const BLOCKS: usize = 0x11_0000 / BLOCK;

/// The class bits of `c`, from its General Category and `\s`.
pub fn by_category(c: char) -> u8 {
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

/// The table of every code point's class (surrogates, which are no chars,
/// have none): [`BLOCKS`] block indexes, then the distinct blocks.
/// Panics if there are more than 256 distinct blocks (a layout for a
/// future Unicode version would need wider indexes).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "build.rs lays out the table with it")
)]
pub fn table() -> Vec<u8> {
    let mut distinct: Vec<[u8; BLOCK]> = Vec::new();
    let mut indexes = Vec::with_capacity(BLOCKS);
    for block in 0..BLOCKS {
        let classes: [u8; BLOCK] = std::array::from_fn(|offset| {
            char::from_u32((block * BLOCK + offset) as u32).map_or(0, by_category)
        });
        let index = match distinct.iter().position(|d| *d == classes) {
            Some(index) => index,
            None => {
                distinct.push(classes);
                distinct.len() - 1
            }
        };
        indexes.push(u8::try_from(index).expect("at most 256 distinct blocks"));
    }
    indexes.extend(distinct.as_flattened());
    indexes
}
