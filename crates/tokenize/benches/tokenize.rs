//! Tokenizer benchmarks (filled in below).
fn main() {}
