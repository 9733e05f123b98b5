//! Fuzz the tokenizer: any text encodes, and decoding gives the text back;
//! counting agrees with encoding; the built-in patterns cut the text into
//! pieces that cover it; a custom pattern (the text before a NUL) either
//! fails with `PatternFailed` or gives ordered, non-empty pieces on char
//! boundaries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_tokenize::{Error, Pattern, Tokenizer};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for name in ["cl100k_base", "o200k_base"] {
        let t = Tokenizer::embedded(name).unwrap();
        let ids = t.encode_ordinary(&text).unwrap();
        assert_eq!(t.decode(&ids).unwrap(), text);
        assert_eq!(t.count(&text).unwrap(), ids.len());
    }
    for pattern in [Pattern::Cl100k, Pattern::O200k, Pattern::Gpt2] {
        let mut covered = 0;
        pattern
            .split(&text, |start, end| {
                assert!(start == covered && start < end, "{start}..{end}");
                covered = end;
            })
            .unwrap();
        assert_eq!(covered, text.len());
    }
    if let Some((regex, rest)) = text.split_once('\0')
        && let Ok(pattern) = Pattern::custom(regex)
    {
        let mut after = 0;
        let split = pattern.split(rest, |start, end| {
            assert!(after <= start && start < end && end <= rest.len());
            assert!(rest.is_char_boundary(start) && rest.is_char_boundary(end));
            after = end;
        });
        assert!(matches!(split, Ok(()) | Err(Error::PatternFailed { .. })), "{split:?}");
    }
});
