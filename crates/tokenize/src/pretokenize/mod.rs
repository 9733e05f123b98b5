//! Pre-tokenizers: the split of text into pieces that tiktoken's regexes make,
//! as hand-written scanners that run in linear time (no backtracking, no
//! regex stack) and give exactly the regexes' matches. The regexes are
//! tiktoken's (`openai_public.py`): [`CL100K_REGEX`], [`O200K_REGEX`] and
//! [`GPT2_REGEX`]; and the `Split` regexes of Hugging Face's Llama 3 and
//! Qwen2 `tokenizer.json` files: [`LLAMA3_REGEX`] and [`QWEN2_REGEX`].
//!
//! Every character starts some alternative of the built-in patterns, so the
//! pieces tile the text. A custom pattern runs through `fancy-regex`, like
//! tiktoken, and text between matches is dropped, as tiktoken drops it.

pub(crate) mod class_table;
pub(crate) mod classify;

use crate::pretokenize::classify::{
    LETTER, LOWERISH, NUMBER, SPACE, UPPERISH, ascii_class, class, is_other,
};

/// cl100k_base's regex.
pub const CL100K_REGEX: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
/// o200k_base's (and o200k_harmony's) regex.
pub const O200K_REGEX: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// The GPT-2 regex of gpt2, r50k_base, p50k_base and p50k_edit.
pub const GPT2_REGEX: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";

/// The `Split` regex of Llama 3's `tokenizer.json` (transformers'
/// `TikTokenConverter`). Not tiktoken's current cl100k_base regex: that one
/// takes a whitespace run at the end of the text whole (`\s++$`), where
/// this one ends a run at its last newline (`\s*[\r\n]+`), as o200k does.
pub const LLAMA3_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// The `Split` regex of Qwen2's `tokenizer.json`: Llama 3's with single
/// digits (`\p{N}`).
pub const QWEN2_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A pre-tokenizer pattern.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// cl100k_base's pattern.
    Cl100k,
    /// o200k_base's pattern.
    O200k,
    /// The GPT-2 pattern of gpt2, r50k_base, p50k_base and p50k_edit.
    Gpt2,
    /// Llama 3's `tokenizer.json` pattern ([`LLAMA3_REGEX`]).
    Llama3,
    /// Qwen2's `tokenizer.json` pattern ([`QWEN2_REGEX`]).
    Qwen2,
    /// Any other regex (fancy-regex syntax, as tiktoken uses).
    Custom(Box<fancy_regex::Regex>),
}

impl Pattern {
    /// The built-in pattern of a known encoding.
    pub fn for_encoding(name: &str) -> Option<Pattern> {
        match name {
            "cl100k_base" => Some(Pattern::Cl100k),
            "o200k_base" | "o200k_harmony" => Some(Pattern::O200k),
            "gpt2" | "r50k_base" | "p50k_base" | "p50k_edit" => Some(Pattern::Gpt2),
            _ => None,
        }
    }

    /// The pattern of `regex`: a built-in one when `regex` is exactly one of
    /// tiktoken's (so it runs at the built-in scanner's speed), otherwise a
    /// custom pattern.
    ///
    /// ```
    /// use modelbin_tokenize::pretokenize::{Pattern, CL100K_REGEX};
    /// assert!(matches!(Pattern::from_regex(CL100K_REGEX)?, Pattern::Cl100k));
    /// assert!(matches!(Pattern::from_regex(r"\w+|\s+")?, Pattern::Custom(_)));
    /// # Ok::<(), modelbin_tokenize::Error>(())
    /// ```
    pub fn from_regex(regex: &str) -> crate::Result<Pattern> {
        match regex {
            CL100K_REGEX => Ok(Pattern::Cl100k),
            O200K_REGEX => Ok(Pattern::O200k),
            GPT2_REGEX => Ok(Pattern::Gpt2),
            LLAMA3_REGEX => Ok(Pattern::Llama3),
            QWEN2_REGEX => Ok(Pattern::Qwen2),
            _ => Pattern::custom(regex),
        }
    }

    /// The regex this pattern splits as (tiktoken's `pat_str`).
    pub fn regex(&self) -> &str {
        match self {
            Pattern::Cl100k => CL100K_REGEX,
            Pattern::O200k => O200K_REGEX,
            Pattern::Gpt2 => GPT2_REGEX,
            Pattern::Llama3 => LLAMA3_REGEX,
            Pattern::Qwen2 => QWEN2_REGEX,
            Pattern::Custom(regex) => regex.as_str(),
        }
    }

    /// A custom pattern, compiled with fancy-regex as tiktoken does.
    pub fn custom(regex: &str) -> crate::Result<Pattern> {
        fancy_regex::Regex::new(regex)
            .map(|r| Pattern::Custom(Box::new(r)))
            .map_err(|e| crate::Error::BadPattern(e.to_string()))
    }

    /// Calls `piece` with the byte range of every piece of `text`, in order.
    /// Only a custom pattern can fail: see [`crate::Error::PatternFailed`].
    pub fn split(&self, text: &str, piece: impl FnMut(usize, usize)) -> crate::Result<()> {
        self.split_into(text, piece)
    }

    /// Gives `sink` the byte range of every piece of `text`, in order.
    pub(crate) fn split_into(&self, text: &str, mut sink: impl PieceSink) -> crate::Result<()> {
        match self {
            Pattern::Cl100k => split_with(text, cl100k, &mut sink),
            Pattern::O200k => split_with(text, o200k, &mut sink),
            Pattern::Gpt2 => split_with(text, gpt2, &mut sink),
            Pattern::Llama3 => split_with(text, llama3::<3>, &mut sink),
            Pattern::Qwen2 => split_with(text, llama3::<1>, &mut sink),
            Pattern::Custom(regex) => return split_custom(regex, text, &mut sink),
        }
        Ok(())
    }
}

/// The matches of a custom pattern. An empty match makes no piece (it
/// holds no bytes to encode).
fn split_custom(
    regex: &fancy_regex::Regex,
    text: &str,
    sink: &mut impl PieceSink,
) -> crate::Result<()> {
    regex_matches(regex, text, |start, end| {
        if start < end {
            sink.piece(start, end);
        }
    })
}

/// Calls `found` with the range of every match of `regex` in `text`, empty
/// ones included, in order. A match that exceeds fancy-regex's backtrack
/// limit is an error: the matches after it would be missing.
pub(crate) fn regex_matches(
    regex: &fancy_regex::Regex,
    text: &str,
    mut found: impl FnMut(usize, usize),
) -> crate::Result<()> {
    let mut searched_to = 0;
    for m in regex.find_iter(text) {
        let m = m.map_err(|e| crate::Error::PatternFailed {
            offset: searched_to,
            reason: e.to_string(),
        })?;
        found(m.start(), m.end());
        searched_to = m.end();
    }
    Ok(())
}

/// What [`Pattern::split_into`] gives each piece to. A sink whose method
/// is always inlined makes the split loop and the handling of each piece
/// one function.
pub(crate) trait PieceSink {
    /// Takes the piece at bytes `start..end` of the text.
    fn piece(&mut self, start: usize, end: usize);
}

impl<F: FnMut(usize, usize)> PieceSink for F {
    fn piece(&mut self, start: usize, end: usize) {
        self(start, end);
    }
}

/// Gives `sink` the range of every piece `scan` finds in `text`. Generic
/// over the scanner, so that each pattern's loop calls its scanner
/// directly rather than through a pointer, and the compiler may inline it
/// (in the Python module's build, whose five loops share it, it stays a
/// call).
#[inline(always)]
fn split_with(text: &str, scan: impl Fn(&str, usize) -> usize, sink: &mut impl PieceSink) {
    let mut start = 0;
    while start < text.len() {
        let end = scan(text, start);
        sink.piece(start, end);
        start = end;
    }
}

/// The char at byte `i` and its length, if any.
#[inline]
fn char_at(text: &str, i: usize) -> Option<(char, usize)> {
    let b = *text.as_bytes().get(i)?;
    if b < 0x80 {
        return Some((b as char, 1));
    }
    let c = text[i..].chars().next()?;
    Some((c, c.len_utf8()))
}

/// End of the run of chars from `i` whose class has any bit of `mask`.
#[inline]
fn run(text: &str, i: usize, mask: u8) -> usize {
    run_where(text, i, |class| class & mask != 0)
}

/// End of the run of "other" chars (`[^\s\p{L}\p{N}]`) from `i`.
#[inline]
fn run_other(text: &str, i: usize) -> usize {
    run_where(text, i, is_other)
}

/// End of the run of chars from `i` whose class passes `keep`.
#[inline]
fn run_where(text: &str, mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    let bytes = text.as_bytes();
    loop {
        // ASCII bytes by the table alone, then one other char.
        while let Some(&b) = bytes.get(i).filter(|b| b.is_ascii()) {
            if !keep(ascii_class(b)) {
                return i;
            }
            i += 1;
        }
        match char_at(text, i) {
            Some((c, n)) if keep(class(c)) => i += n,
            _ => return i,
        }
    }
}

/// End of a run of the given ASCII bytes from `i`.
#[inline]
fn run_bytes(text: &str, i: usize, set: &[u8]) -> usize {
    ascii_run(text.as_bytes(), i, |b| set.contains(b))
}

/// `[^\r\n\p{L}\p{N}]`: may prefix a word.
#[inline]
fn is_prefix(c: char, class: u8) -> bool {
    c != '\r' && c != '\n' && class & (LETTER | NUMBER) == 0
}

/// Whether `c` matches `[x]` case-insensitively under Unicode simple case
/// folding, for the ASCII letters of the contractions.
#[inline]
fn folds_to(c: char, lower: char) -> bool {
    c.to_ascii_lowercase() == lower || (lower == 's' && c == 'ſ')
}

/// A contraction after the apostrophe at `i`: the end of the match, or `None`.
/// Single letters are `[sdmt]` (cl100k) or `s|t|m|d` (o200k): the same set.
fn contraction(text: &str, i: usize, case_insensitive: bool) -> Option<usize> {
    if text.as_bytes().get(i) != Some(&b'\'') {
        return None;
    }
    let is = |c: char, lower: char| {
        if case_insensitive {
            folds_to(c, lower)
        } else {
            c == lower
        }
    };
    let (c1, n1) = char_at(text, i + 1)?;
    if ['s', 'd', 'm', 't'].into_iter().any(|l| is(c1, l)) {
        return Some(i + 1 + n1);
    }
    let (c2, n2) = char_at(text, i + 1 + n1)?;
    let pair = [('l', 'l'), ('v', 'e'), ('r', 'e')]
        .into_iter()
        .any(|(a, b)| is(c1, a) && is(c2, b));
    pair.then_some(i + 1 + n1 + n2)
}

/// How a pattern's whitespace alternatives end a run of whitespace.
#[derive(Clone, Copy)]
struct SpaceRules {
    /// `\s++$` comes first (cl100k, GPT-2): a run reaching the end is one piece.
    end_first: bool,
    /// `\s*[\r\n]` (cl100k) or `\s*[\r\n]+` (o200k): up to the last newline.
    newline: bool,
}

/// Where the piece starting with whitespace at `i` ends. After the rules
/// above: `\s+(?!\S)` takes the run to its end at the end of the text, or
/// all but its last char when that precedes a non-space; a one-char run is
/// one piece (`\s` or `\s+`).
fn whitespace(text: &str, i: usize, rules: SpaceRules) -> usize {
    let end = run(text, i, SPACE);
    if rules.end_first && end == text.len() {
        return end;
    }
    if rules.newline
        && let Some(p) = text.as_bytes()[i..end]
            .iter()
            .rposition(|&b| b == b'\r' || b == b'\n')
    {
        return i + p + 1;
    }
    if end == text.len() {
        return end;
    }
    let last = text[i..end].chars().next_back().map_or(0, char::len_utf8);
    if end - last > i { end - last } else { end }
}

/// One piece of cl100k_base from byte `i` (< `text.len()`); returns its end.
/// Always inlined, as `o200k` is: called through a pointer, a scanner
/// would save and restore registers for every piece.
#[inline(always)]
fn cl100k(text: &str, i: usize) -> usize {
    cl100k_ascii_word(text.as_bytes(), i).unwrap_or_else(|| cl100k_general(text, i))
}

/// One piece of cl100k_base, by the general scanner.
fn cl100k_general(text: &str, i: usize) -> usize {
    cl100k_like::<3>(
        text,
        i,
        SpaceRules {
            end_first: true,
            newline: true,
        },
    )
}

/// One piece of Llama 3's pattern (`DIGITS` = 3) or Qwen2's (1): cl100k's
/// alternatives but for the whitespace, which ends as o200k's does.
#[inline(always)]
fn llama3<const DIGITS: usize>(text: &str, i: usize) -> usize {
    cl100k_ascii_word(text.as_bytes(), i).unwrap_or_else(|| {
        cl100k_like::<DIGITS>(
            text,
            i,
            SpaceRules {
                end_first: false,
                newline: true,
            },
        )
    })
}

/// The general scanner of cl100k_base's alternatives, with up to `DIGITS`
/// numbers in a piece and the given whitespace rules.
fn cl100k_like<const DIGITS: usize>(text: &str, i: usize, rules: SpaceRules) -> usize {
    let (c, n) = char_at(text, i).expect("i is inside the text");
    let k = class(c);
    if c == '\''
        && let Some(end) = contraction(text, i, true)
    {
        return end;
    }
    if k & LETTER != 0 {
        return run(text, i + n, LETTER);
    }
    if is_prefix(c, k)
        && let Some((c2, n2)) = char_at(text, i + n)
        && class(c2) & LETTER != 0
    {
        return run(text, i + n + n2, LETTER);
    }
    if k & NUMBER != 0 {
        return if DIGITS == 1 {
            i + n
        } else {
            up_to_three_numbers(text, i + n)
        };
    }
    if let Some(end) = punctuation(text, i, c, k) {
        return run_bytes(text, end, b"\r\n");
    }
    whitespace(text, i, rules)
}

/// Where the letters of an ASCII word at `i` would start: at `i` when it
/// is a letter, after it when it is a prefix (an ASCII byte that is no
/// letter, digit, `\r`, `\n` or one of `also_not`); `None` otherwise.
#[inline]
fn ascii_word_start(bytes: &[u8], i: usize, also_not: &[u8]) -> Option<usize> {
    let first = *bytes.get(i)?;
    if first.is_ascii_alphabetic() {
        Some(i)
    } else if first.is_ascii()
        && !first.is_ascii_digit()
        && first != b'\r'
        && first != b'\n'
        && !also_not.contains(&first)
    {
        Some(i + 1)
    } else {
        None
    }
}

/// End of the run of bytes from `i` that pass `keep`.
#[inline]
fn ascii_run(bytes: &[u8], mut i: usize, keep: impl Fn(&u8) -> bool) -> usize {
    while bytes.get(i).is_some_and(&keep) {
        i += 1;
    }
    i
}

/// cl100k_base's word alternative where ASCII alone decides it: an
/// optional prefix (an ASCII byte that is no letter, digit, apostrophe,
/// `\r` or `\n`; an apostrophe may start a contraction), then `[A-Za-z]+`,
/// then the end or an ASCII byte. `None` where the general scanner must
/// decide, for example before a non-ASCII char (it could be a letter).
#[inline]
fn cl100k_ascii_word(bytes: &[u8], i: usize) -> Option<usize> {
    let start = ascii_word_start(bytes, i, b"'")?;
    let end = ascii_run(bytes, start, u8::is_ascii_alphabetic);
    match bytes.get(end) {
        _ if end == start => None,
        Some(&b) if !b.is_ascii() => None,
        _ => Some(end),
    }
}

/// `\p{N}{1,3}` after its first char, which ends at `end`.
fn up_to_three_numbers(text: &str, mut end: usize) -> usize {
    for _ in 0..2 {
        match char_at(text, end) {
            Some((d, m)) if class(d) & NUMBER != 0 => end += m,
            _ => break,
        }
    }
    end
}

/// ` ?[^\s\p{L}\p{N}]+`: the end of the run, if one starts at `i`.
fn punctuation(text: &str, i: usize, c: char, k: u8) -> Option<usize> {
    if is_other(k) {
        return Some(run_other(text, i));
    }
    if c == ' ' && char_at(text, i + 1).is_some_and(|(c2, _)| is_other(class(c2))) {
        return Some(run_other(text, i + 1));
    }
    None
}

/// One piece of the GPT-2 pattern (p50k_base, r50k_base).
fn gpt2(text: &str, i: usize) -> usize {
    let (c, n) = char_at(text, i).expect("i is inside the text");
    let k = class(c);
    if c == '\''
        && let Some(end) = contraction(text, i, false)
    {
        return end;
    }
    // ` ?\p{L}++`, ` ?\p{N}++`, ` ?[^\s\p{L}\p{N}]++`
    let (start, k) = match char_at(text, i + n) {
        Some((c2, _)) if c == ' ' && class(c2) & SPACE == 0 => (i + 1, class(c2)),
        _ => (i, k),
    };
    if k & LETTER != 0 {
        return run(text, start, LETTER);
    }
    if k & NUMBER != 0 {
        return run(text, start, NUMBER);
    }
    if is_other(k) {
        return run_other(text, start);
    }
    whitespace(
        text,
        i,
        SpaceRules {
            end_first: true,
            newline: false,
        },
    )
}

/// o200k's word alternatives from `s`: `U*W+` (first) or `U+W*` (second),
/// then an optional contraction. Always inlined into the general scanner,
/// which tries it up to four times for a piece: as a call, it would save
/// and restore registers each time.
#[inline(always)]
fn o200k_word(text: &str, s: usize, second: bool) -> Option<usize> {
    // The maximal U run, and the end of the last W char inside it.
    let mut u_end = s;
    let mut last_w_end = None;
    while let Some((c, n)) = char_at(text, u_end) {
        let k = class(c);
        if k & UPPERISH == 0 {
            break;
        }
        u_end += n;
        if k & LOWERISH != 0 {
            last_w_end = Some(u_end);
        }
    }
    let after_u = char_at(text, u_end).is_some_and(|(c, _)| class(c) & LOWERISH != 0);
    let end = if second {
        if u_end == s {
            return None;
        }
        run(text, u_end, LOWERISH)
    } else if after_u {
        run(text, u_end, LOWERISH)
    } else {
        last_w_end?
    };
    Some(contraction(text, end, true).unwrap_or(end))
}

/// o200k_base's first word alternative where ASCII alone decides it: an
/// optional prefix (an ASCII byte that is no letter, digit, `\r` or `\n`),
/// then `[A-Z]*[a-z]+`, then the end or an ASCII byte that is neither a
/// lowercase letter nor an apostrophe (which could start a contraction).
/// `None` where the general scanner must decide, for example before a
/// non-ASCII char (a mark or letter could continue the word).
#[inline]
fn o200k_ascii_word(bytes: &[u8], i: usize) -> Option<usize> {
    let lower_start = ascii_run(
        bytes,
        ascii_word_start(bytes, i, b"")?,
        u8::is_ascii_uppercase,
    );
    let end = ascii_run(bytes, lower_start, u8::is_ascii_lowercase);
    match bytes.get(end) {
        _ if end == lower_start => None,
        Some(&b) if !b.is_ascii() || b == b'\'' => None,
        _ => Some(end),
    }
}

/// One piece of o200k_base. Always inlined (see `cl100k`).
#[inline(always)]
fn o200k(text: &str, i: usize) -> usize {
    o200k_ascii_word(text.as_bytes(), i).unwrap_or_else(|| o200k_general(text, i))
}

/// One piece of o200k_base, by the general scanner. Always inlined into
/// `o200k` (and with it into the split loop, where that is inlined): as a
/// call, it would save and restore registers for every piece the ASCII
/// scanner leaves to it.
#[inline(always)]
fn o200k_general(text: &str, i: usize) -> usize {
    let (c, n) = char_at(text, i).expect("i is inside the text");
    let k = class(c);
    // A word starts with an UPPERISH or LOWERISH character; where none
    // does, both word alternatives fail, so they are not tried.
    let starts_word = |k: u8| k & (UPPERISH | LOWERISH) != 0;
    let word_after_prefix =
        is_prefix(c, k) && char_at(text, i + n).is_some_and(|(next, _)| starts_word(class(next)));
    if word_after_prefix || starts_word(k) {
        for second in [false, true] {
            if word_after_prefix && let Some(end) = o200k_word(text, i + n, second) {
                return end;
            }
            if let Some(end) = o200k_word(text, i, second) {
                return end;
            }
        }
    }
    if k & NUMBER != 0 {
        return up_to_three_numbers(text, i + n);
    }
    if let Some(end) = punctuation(text, i, c, k) {
        return run_bytes(text, end, b"\r\n/");
    }
    whitespace(
        text,
        i,
        SpaceRules {
            end_first: false,
            newline: true,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pattern: &Pattern, text: &str) -> Vec<String> {
        let mut out = vec![];
        pattern
            .split(text, |a, b| out.push(text[a..b].to_owned()))
            .unwrap();
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Where the ASCII word scanners answer, at any char boundary, the
        /// general scanners give the same end: on ASCII words next to
        /// apostrophes, digits, line breaks, accents and combining marks.
        #[test]
        fn ascii_word_scanners_agree_with_the_general_ones(
            text in "( |\t|\r|\n|'|'s|'T|'ll|'VE|\\.|!|[0-9]|[a-z]{1,6}|[A-Z]{1,3}|é|É|\u{0301}|ʰ|中|’){0,24}"
        ) {
            for i in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
                if let Some(end) = cl100k_ascii_word(text.as_bytes(), i) {
                    proptest::prop_assert_eq!(end, cl100k_general(&text, i), "cl100k {:?} at {}", text, i);
                }
                if let Some(end) = o200k_ascii_word(text.as_bytes(), i) {
                    proptest::prop_assert_eq!(end, o200k_general(&text, i), "o200k {:?} at {}", text, i);
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// The Llama 3 and Qwen2 scanners split as their regexes do
        /// (fancy-regex): on letters, digits, apostrophes, punctuation and
        /// runs of Unicode whitespace with and without newlines.
        #[test]
        fn llama3_and_qwen2_scanners_equal_their_regexes(
            text in "( |  |\t|\r|\n|\r\n|\u{a0}|\u{3000}|\u{85}|'|'s|'T|'ll|'VE|ſ|\\.|!|\\?\n|[0-9]{1,5}|[a-z]{1,6}|[A-Z]{1,3}|é|中|😀|²|\u{301}){0,30}"
        ) {
            for (pattern, regex) in [(Pattern::Llama3, LLAMA3_REGEX), (Pattern::Qwen2, QWEN2_REGEX)] {
                let custom = Pattern::custom(regex).unwrap();
                proptest::prop_assert_eq!(pieces(&pattern, &text), pieces(&custom, &text), "{}", regex);
            }
        }
    }

    #[test]
    fn llama3_examples() {
        let p = Pattern::from_regex(LLAMA3_REGEX).unwrap();
        assert!(matches!(p, Pattern::Llama3));
        assert_eq!(pieces(&p, "a\n  "), ["a", "\n", "  "]);
        assert_eq!(pieces(&p, "x  \n\n  "), ["x", "  \n\n", "  "]);
        assert_eq!(pieces(&p, "12345 I'M"), ["123", "45", " I", "'M"]);
        let q = Pattern::from_regex(QWEN2_REGEX).unwrap();
        assert_eq!(pieces(&q, "x12 3"), ["x", "1", "2", " ", "3"]);
        assert_eq!(pieces(&Pattern::Cl100k, "a\n  "), ["a", "\n  "]);
    }

    #[test]
    fn cl100k_examples() {
        let p = Pattern::Cl100k;
        assert_eq!(pieces(&p, "hello world"), ["hello", " world"]);
        assert_eq!(
            pieces(&p, "I'm 12345 ok!!\n\n  x"),
            ["I", "'m", " ", "123", "45", " ok", "!!\n\n", " ", " x"]
        );
        assert_eq!(pieces(&p, "a  \n b"), ["a", "  \n", " b"]);
        assert_eq!(pieces(&p, "x   "), ["x", "   "]);
        assert_eq!(pieces(&p, "'S 'LL"), ["'S", " '", "LL"]);
    }
}
