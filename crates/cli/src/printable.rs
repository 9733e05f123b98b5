//! Text from files on a terminal. Anything a file or a file name holds
//! (lines, token text, metadata, paths) may carry escape sequences that
//! clear the screen, retitle the window or write the clipboard (OSC 52).
//! Reports, listings and diagnostics escape every control character
//! ([`printable`]; [`crate::stdout`] applies it to every line it prints),
//! so no byte of such a sequence reaches the terminal. Text that is the
//! command's product (decoded tokens, generated text) is written as it is
//! to a pipe or a file, like `cat`, and only escaped on a terminal
//! ([`ProductText`]).

use std::borrow::Cow;
use std::io::{self, Write};

/// `text` as printed: control characters escaped (`\u{1b}`, `\n`), so
/// that text from a file cannot move the cursor or recolour the terminal.
/// The escaped text holds no control character, so escaping it again
/// changes nothing.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    write_printable(&mut out, text).expect("writing to memory");
    Cow::Owned(String::from_utf8(out).expect("escaped text is UTF-8"))
}

/// Writes `text` as [`printable`] gives it, without a copy.
pub fn write_printable(out: &mut dyn Write, text: &str) -> io::Result<()> {
    write_escaping(out, text, char::is_control)
}

/// The width of `text` as [`printable`] gives it, in characters.
pub fn printed_width(text: &str) -> usize {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().count()
            } else {
                1
            }
        })
        .sum()
}

/// Writes `text` with the characters `escape` picks written as Rust
/// escapes (`\u{1b}`).
fn write_escaping(out: &mut dyn Write, text: &str, escape: fn(char) -> bool) -> io::Result<()> {
    let mut rest = text;
    while let Some(at) = rest.find(escape) {
        out.write_all(&rest.as_bytes()[..at])?;
        let c = rest[at..].chars().next().expect("found at a char boundary");
        write!(out, "{}", c.escape_default())?;
        rest = &rest[at + c.len_utf8()..];
    }
    out.write_all(rest.as_bytes())
}

/// Whether a character of product text is escaped on a terminal: control
/// characters other than newline and tab, which text needs to read as text.
fn escaped_in_product(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Writes text that is a command's product (`tokens decode`, `tllm
/// generate`), possibly in pieces that split a UTF-8 character: the bytes
/// as they are when standard output is not a terminal (a pipe or a file
/// gets exactly the decoded text, as `cat` would give it); on a terminal,
/// control characters other than newline and tab escaped as [`printable`]
/// does and bytes that are not UTF-8 as `\xNN`, as `ls` shows file names.
pub struct ProductText {
    terminal: bool,
    /// The start of a UTF-8 character whose remaining bytes are still to come.
    pending: Vec<u8>,
}

impl ProductText {
    /// Text for this process's standard output.
    pub fn for_stdout() -> Self {
        Self::new(io::IsTerminal::is_terminal(&io::stdout()))
    }

    /// Text for a terminal (`terminal`) or for a pipe or file.
    pub fn new(terminal: bool) -> Self {
        ProductText {
            terminal,
            pending: Vec::new(),
        }
    }

    /// Writes the next piece of the text.
    pub fn write(&mut self, out: &mut dyn Write, piece: &[u8]) -> io::Result<()> {
        if !self.terminal {
            return out.write_all(piece);
        }
        self.pending.extend_from_slice(piece);
        let bytes = std::mem::take(&mut self.pending);
        let mut rest = &bytes[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => return write_escaping(out, text, escaped_in_product),
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    let valid = std::str::from_utf8(valid).expect("checked up to here");
                    write_escaping(out, valid, escaped_in_product)?;
                    let Some(invalid) = e.error_len() else {
                        // An incomplete character: its other bytes may follow.
                        self.pending = after.to_vec();
                        return Ok(());
                    };
                    write_bytes_escaped(out, &after[..invalid])?;
                    rest = &after[invalid..];
                }
            }
        }
    }

    /// Ends the text: a character left incomplete is written as `\xNN`.
    pub fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        write_bytes_escaped(out, &pending)
    }
}

/// Writes each byte as `\xNN`.
fn write_bytes_escaped(out: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
    bytes.iter().try_for_each(|b| write!(out, "\\x{b:02x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "clear\u{1b}[2J clip\u{1b}]52;c;SGVsbG8=\u{7} csi\u{9b}1m del\u{7f}";

    #[test]
    fn printable_escapes_every_control_character_once() {
        let shown = printable(HOSTILE);
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert_eq!(
            shown,
            r"clear\u{1b}[2J clip\u{1b}]52;c;SGVsbG8=\u{7} csi\u{9b}1m del\u{7f}"
        );
        assert_eq!(printable(&shown), shown, "escaping twice changes nothing");
        assert_eq!(printed_width(HOSTILE), shown.chars().count());
        assert!(matches!(printable("plain é"), Cow::Borrowed("plain é")));
    }

    /// `pieces` through a [`ProductText`] for a terminal or not.
    fn product(terminal: bool, pieces: &[&[u8]]) -> Vec<u8> {
        let mut text = ProductText::new(terminal);
        let mut out = Vec::new();
        for piece in pieces {
            text.write(&mut out, piece).unwrap();
        }
        text.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn product_text_is_raw_to_a_pipe_and_escaped_on_a_terminal() {
        let bytes = format!("{HOSTILE}\nline\ttab\r").into_bytes();
        assert_eq!(product(false, &[&bytes]), bytes);
        let shown = String::from_utf8(product(true, &[&bytes])).unwrap();
        assert_eq!(
            shown,
            format!("{}\nline\ttab\\r", printable(HOSTILE)),
            "newline and tab kept"
        );
        // A C1 control split across pieces, a stray byte, and a character
        // cut at the end.
        let csi = "\u{9b}".as_bytes();
        let pieces: [&[u8]; 4] = [b"a", &csi[..1], &csi[1..], b"b\xff\xe2\x82"];
        assert_eq!(product(true, &pieces), br"a\u{9b}b\xff\xe2\x82");
        let euro = "€".as_bytes();
        assert_eq!(product(true, &[&euro[..1], &euro[1..]]), euro);
    }
}
