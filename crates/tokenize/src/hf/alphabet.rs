//! GPT-2's byte-level alphabet (`bytes_to_unicode`): each byte stands for
//! one printable character, so that a vocabulary of byte strings can be
//! written as JSON text. The 188 printable bytes `!`..`~`, `¡`..`¬` and
//! `®`..`ÿ` stand for themselves; the other 68, in byte order, for
//! U+0100 onwards (space is `Ġ` U+0120, newline `Ċ` U+010A).
//!
//! modelbin merges raw bytes, so token strings are turned into bytes once,
//! at load, and text is never mapped to the alphabet.

/// Characters of the alphabet are below this code point.
const END: usize = 0x144;

/// The byte-level alphabet, both ways.
#[derive(Debug, Clone)]
pub(crate) struct Alphabet {
    to_char: [char; 256],
    /// Byte of each code point below [`END`], or `None`.
    to_byte: [Option<u8>; END],
}

impl Alphabet {
    /// The alphabet.
    pub fn new() -> Alphabet {
        let printable = |b: u8| matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
        let mut to_char = ['\0'; 256];
        let mut to_byte = [None; END];
        let mut next = 256u32;
        for b in 0..=255u8 {
            let c = if printable(b) {
                u32::from(b)
            } else {
                next += 1;
                next - 1
            };
            let c = char::from_u32(c).expect("below U+0144");
            to_char[usize::from(b)] = c;
            to_byte[c as usize] = Some(b);
        }
        Alphabet { to_char, to_byte }
    }

    /// The character that stands for byte `b`.
    pub fn char_of(&self, b: u8) -> char {
        self.to_char[usize::from(b)]
    }

    /// The bytes a token string stands for, when every character is in the
    /// alphabet.
    pub fn bytes_of(&self, token: &str) -> Option<Vec<u8>> {
        token
            .chars()
            .map(|c| self.to_byte.get(c as usize).copied().flatten())
            .collect()
    }

    /// The bytes of a token as Hugging Face's ByteLevel decoder gives
    /// them: through the alphabet when every character is in it, else the
    /// token's own UTF-8 (an added token such as `<|endoftext|>` is
    /// printable ASCII, so both agree).
    pub fn decode(&self, token: &str) -> Vec<u8> {
        self.bytes_of(token)
            .unwrap_or_else(|| token.as_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::Alphabet;

    /// The memo's examples, and a bijection over all 256 bytes.
    #[test]
    fn gpt2_alphabet() {
        let a = Alphabet::new();
        assert_eq!(a.char_of(b' '), 'Ġ');
        assert_eq!(a.char_of(b'\n'), 'Ċ');
        assert_eq!(a.char_of(b'\t'), 'ĉ');
        assert_eq!(a.char_of(0x7F), '\u{121}');
        assert_eq!(a.char_of(0xA0), 'ł');
        assert_eq!(a.char_of(0xAD), '\u{143}');
        assert_eq!(a.char_of(b'a'), 'a');
        let all: String = (0..=255u8).map(|b| a.char_of(b)).collect();
        assert_eq!(a.bytes_of(&all).unwrap(), (0..=255u8).collect::<Vec<_>>());
        assert_eq!(a.bytes_of("a b"), None);
        assert_eq!(a.decode("▁x"), "▁x".as_bytes());
    }
}
