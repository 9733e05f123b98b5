//! x
fn main() {
    let t = modelbin_tokenize::Tokenizer::embedded("o200k_base").unwrap();
    println!("{}", t.count("hello world"));
}
