//! Any bytes as a Hugging Face tokenizer.json: loading gives a tokenizer or
//! a typed error, and encoding, decoding and the token queries on a few
//! texts never panic or allocate without bound.

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_tokenize::HfTokenizer;

const TEXTS: [&str; 6] = [
    "",
    "hello world",
    " <|endoftext|> x  \n\n\t<s></s>",
    "日本語 😀 1234567 café e\u{301}",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "\u{a0}\u{3000}  def f(x):\n    return x  ",
];

fuzz_target!(|data: &[u8]| {
    let Ok(tokenizer) = HfTokenizer::from_json(data) else {
        return;
    };
    for text in TEXTS {
        for special in [false, true] {
            if let Ok(ids) = tokenizer.encode(text, special) {
                let _ = tokenizer.decode_bytes(&ids);
            }
        }
        let _ = tokenizer.encode_ordinary(text);
    }
    let _ = (tokenizer.bos_id(), tokenizer.eos_id(), tokenizer.adds_bos());
    let size = tokenizer.vocab_size();
    for id in (0..size.min(64)).chain([size, u32::MAX]) {
        let _ = tokenizer.token_bytes(id);
    }
    let _ = tokenizer.decode_bytes(&[u32::MAX, 0]);
});
