//! Fuzz the tokenizer: any text encodes, and decoding gives the text back;
//! counting agrees with encoding; any bytes encode (`encode_bytes`) and
//! decode back; the stable ids of `encode_with_unstable` decode to a prefix
//! of the text, and each completion after them to bytes that start with
//! the text; the built-in patterns cut the text into pieces that cover it;
//! a custom pattern (the text before a NUL) either fails with
//! `PatternFailed` or gives ordered, non-empty pieces on char boundaries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_tokenize::{Error, Pattern, Specials, Tokenizer};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for name in ["cl100k_base", "o200k_base"] {
        let t = Tokenizer::embedded(name).unwrap();
        let ids = t.encode_ordinary(&text).unwrap();
        assert_eq!(t.decode(&ids).unwrap(), text);
        assert_eq!(t.count(&text).unwrap(), ids.len());
        assert_eq!(t.decode_bytes(&t.encode_bytes(data).unwrap()).unwrap(), data);
        if text.len() <= 64 {
            let (stable, completions) = t.encode_with_unstable(&text, Specials::None).unwrap();
            let prefix = t.decode_bytes(&stable).unwrap();
            assert!(text.as_bytes().starts_with(&prefix));
            for completion in completions {
                let ids = [stable.as_slice(), &completion].concat();
                assert!(t.decode_bytes(&ids).unwrap().starts_with(text.as_bytes()));
            }
        }
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
