//! Fuzz the tokenizer: any text encodes, and decoding gives the text back;
//! counting agrees with encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_tokenize::Tokenizer;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for name in ["cl100k_base", "o200k_base"] {
        let t = Tokenizer::embedded(name).unwrap();
        let ids = t.encode_ordinary(&text);
        assert_eq!(t.decode(&ids).unwrap(), text);
        assert_eq!(t.count(&text), ids.len());
    }
});
