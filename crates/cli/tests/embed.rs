//! `modelbin convert` of a model directory to EMBD, `inspect`/`verify` of
//! EMBD files, `embed` and `similarity`, on the real all-MiniLM-L6-v2.

mod common;

use std::path::{Path, PathBuf};

use common::{fails, ok, s};

fn model_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-data/all-MiniLM-L6-v2");
    assert!(
        dir.join("model.safetensors").is_file(),
        "run scripts/fetch-test-data.sh first"
    );
    dir
}

/// The model converted to EMBD in `dir`.
fn convert(dir: &Path) -> PathBuf {
    let out = dir.join("minilm.embd");
    let report = ok(&["convert", "--json", s(&model_dir()), s(&out)], "");
    let json: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(json["to"], "embd");
    assert_eq!(json["tensors"], 103);
    out
}

fn golden(name: &str) -> Vec<String> {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/minilm")
            .join(name),
    )
    .unwrap()
    .split('\n')
    .filter(|l| !l.is_empty())
    .map(str::to_owned)
    .collect()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn convert_inspect_verify_and_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let model = convert(dir.path());
    assert!(
        ok(&["verify", s(&model)], "")
            .contains("OK (embd (all-MiniLM-L6-v2), 103 tensors, 30522 tokens")
    );
    let text = ok(&["inspect", s(&model)], "");
    assert!(text.contains("model: BERT, 6 layers, hidden 384, 12 heads, FFN 1536, max 256 tokens, mean pooling, L2-normalised"));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--json", s(&model)], "")).unwrap();
    assert_eq!(json["token_count"], 30522);
    assert_eq!(json["special_tokens"]["cls"], 101);
    assert_eq!(json["model"]["num_layers"], 6);
    assert_eq!(json["metadata"]["max_seq_length"], "256");

    // One flipped bit in the tensor data: inspect still works, verify names the section.
    let mut bytes = std::fs::read(&model).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    let bad = dir.path().join("bad.embd");
    std::fs::write(&bad, &bytes).unwrap();
    ok(&["inspect", s(&bad)], "");
    let err = fails(&["verify", s(&bad)], "");
    assert!(err.contains("tensor data checksum mismatch"), "{err}");
    let json: serde_json::Value = serde_json::from_str(
        &String::from_utf8(common::run(&["verify", "--json", s(&bad)], "").stdout).unwrap(),
    )
    .unwrap();
    assert_eq!(json["valid"], false);
    // The embedding commands check the checksums before using a model,
    // unless told not to.
    let err = fails(&["similarity", "-m", s(&bad), "a", "b"], "");
    assert!(err.contains("tensor data checksum mismatch"), "{err}");
    ok(&["similarity", "-m", s(&bad), "--no-verify", "a", "b"], "");

    // Truncated: a clear error naming the section.
    std::fs::write(&bad, &bytes[..1000]).unwrap();
    let err = fails(&["inspect", s(&bad)], "");
    assert!(err.contains("truncated vocabulary section"), "{err}");

    // Half-size weights, and back to safetensors.
    let half = dir.path().join("half.embd");
    ok(&["convert", "--dtype", "f16", s(&model), s(&half)], "");
    assert!(
        std::fs::metadata(&half).unwrap().len()
            < std::fs::metadata(&model).unwrap().len() / 2 + 1_000_000
    );
    ok(&["verify", s(&half)], "");
    let st = dir.path().join("back.safetensors");
    assert!(ok(&["convert", s(&model), s(&st)], "").contains("103 tensors"));
    // Int8 linear layers and word embeddings: verified, and smaller than
    // the f16 file.
    let int8 = dir.path().join("int8.embd");
    ok(&["convert", "--dtype", "int8", s(&model), s(&int8)], "");
    ok(&["verify", s(&int8)], "");
    let (int8_size, f16_size) = (
        std::fs::metadata(&int8).unwrap().len(),
        std::fs::metadata(&half).unwrap().len(),
    );
    assert!(int8_size < f16_size, "{int8_size} vs {f16_size}");
    let out = common::run(&["convert", "--dtype", "int4", s(&model), s(&half)], "");
    assert_eq!(
        out.status.code(),
        Some(2),
        "unknown weight dtype is a usage error"
    );
    let err = fails(&["convert", s(&st), s(&dir.path().join("x.embd"))], "");
    assert!(err.contains("needs a vocabulary"), "{err}");
}

#[test]
fn embed_matches_the_golden_embeddings_and_streams_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let model = convert(dir.path());
    let sentences = golden("sentences.jsonl");
    let want: Vec<Vec<f64>> = golden("embeddings.jsonl")
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let input = sentences.join("\n") + "\n";
    let out = ok(
        &[
            "embed",
            "--model",
            s(&model),
            "--jsonl",
            "--batch-size",
            "7",
            "--threads",
            "2",
        ],
        &input,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), sentences.len());
    for (i, (line, want)) in lines.iter().zip(&want).enumerate() {
        let ours: Vec<f64> = serde_json::from_str(line).unwrap();
        assert!(cosine(&ours, want) >= 0.9999, "sentence {i}");
    }
    // Texts as arguments, and from a file.
    let args = ok(
        &["embed", "--model", s(&model), "A man is eating food.", ""],
        "",
    );
    assert_eq!(args.lines().count(), 2);
    let file = dir.path().join("in.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    assert_eq!(
        ok(&["embed", "--model", s(&model), "--input", s(&file)], "")
            .lines()
            .count(),
        3
    );
    let err = fails(&["embed", "--model", s(&model), "--jsonl"], "not json\n");
    assert!(err.contains("stdin line 1: not JSON: "), "{err}");
    let err = fails(
        &["embed", "--model", s(&dir.path().join("missing.embd")), "x"],
        "",
    );
    assert!(err.contains("missing.embd"), "{err}");
}

#[test]
fn similarity_ranks_paraphrases_above_unrelated_text() {
    let dir = tempfile::tempdir().unwrap();
    let model = convert(dir.path());
    let close: f64 = ok(
        &[
            "similarity",
            "--model",
            s(&model),
            "A man is eating food.",
            "A man is eating a piece of bread.",
        ],
        "",
    )
    .trim()
    .parse()
    .unwrap();
    let far: f64 = ok(
        &[
            "similarity",
            "--model",
            s(&model),
            "A man is eating food.",
            "The stock market fell sharply today.",
        ],
        "",
    )
    .trim()
    .parse()
    .unwrap();
    assert!(
        close > 0.6 && far < 0.2 && close > far,
        "close {close}, far {far}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(
        &["similarity", "--json", "--model", s(&model), "a", "a"],
        "",
    ))
    .unwrap();
    assert!((json["cosine"].as_f64().unwrap() - 1.0).abs() < 1e-5);
}

#[test]
fn embed_writes_npy_and_json_from_a_model_directory_and_searches() {
    let dir = tempfile::tempdir().unwrap();
    let model = convert(dir.path());
    let texts = [
        "A man is eating food.",
        "The stock market fell sharply today.",
    ];
    let lines = ok(&["embed", "-m", s(&model), texts[0], texts[1]], "");
    let want: Vec<Vec<f32>> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The model directory itself gives the same vectors.
    assert_eq!(
        ok(&["embed", "-m", s(&model_dir()), texts[0], texts[1]], ""),
        lines
    );
    // NumPy .npy: version 1.0 header for float32 [2, 384], then the rows.
    let npy = dir.path().join("v.npy");
    ok(
        &[
            "embed",
            "-m",
            s(&model),
            "--verify",
            "-o",
            s(&npy),
            texts[0],
            texts[1],
        ],
        "",
    );
    let bytes = std::fs::read(&npy).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header = std::str::from_utf8(&bytes[10..128]).unwrap();
    assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 384), }"));
    let values: Vec<f32> = bytes[128..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(values, want.concat());
    // --json: {"index", "embedding"} per line.
    let json = ok(&["embed", "-m", s(&model), "--json", texts[0]], "");
    let object: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(object["index"], 0);
    let embedding: Vec<f32> = serde_json::from_value(object["embedding"].clone()).unwrap();
    assert_eq!(embedding, want[0]);
    let err = common::usage(&["embed", "-m", s(&model), "--format", "npy", "x"], "");
    assert!(err.contains("-o FILE.npy"), "{err}");
    // Texts longer than the model's 256 tokens are counted on stderr.
    let long = "word ".repeat(400);
    let out = common::run(&["embed", "-m", s(&model), &long, "short"], "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "note: 1 of 2 texts were longer than the model's 256 tokens and were truncated\n"
    );
    // Semantic search over the lines of a file.
    let corpus = dir.path().join("lines.txt");
    std::fs::write(
        &corpus,
        "The stock market fell sharply today.\n\nA man is eating a piece of bread.\nIt is raining.\n",
    )
    .unwrap();
    let hits: Vec<serde_json::Value> = ok(
        &[
            "search",
            "-m",
            s(&model),
            "-q",
            "Someone eats food",
            "--top",
            "2",
            "--json",
            s(&corpus),
        ],
        "",
    )
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["line"], 3);
    assert_eq!(hits[0]["text"], "A man is eating a piece of bread.");
    assert!(hits[0]["score"].as_f64().unwrap() > hits[1]["score"].as_f64().unwrap());

    // With --embeddings the lines are embedded once: a second query reuses the
    // file (unchanged on disk, the same hits), and a changed corpus rebuilds it.
    let index = dir.path().join("lines.index.safetensors");
    let search = |query: &str| {
        common::run(
            &[
                "search",
                "-m",
                s(&model),
                "-q",
                query,
                "--top",
                "2",
                "--json",
                "--embeddings",
                s(&index),
                s(&corpus),
            ],
            "",
        )
    };
    let first = search("Someone eats food");
    assert_eq!(first.status.code(), Some(0));
    let indexed: Vec<serde_json::Value> = String::from_utf8(first.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(indexed, hits);
    let built = std::fs::read(&index).unwrap();
    let again = search("Someone eats food");
    assert_eq!(again.status.code(), Some(0));
    assert!(
        again.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(std::fs::read(&index).unwrap(), built);
    let other = search("the weather");
    let top: serde_json::Value = serde_json::from_str(
        String::from_utf8(other.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(top["text"], "It is raining.");
    std::fs::write(&corpus, "Bread is food.\n").unwrap();
    let changed = search("Someone eats food");
    assert!(
        String::from_utf8_lossy(&changed.stderr).contains(
            "was built from another model, other files or other chunks; embedding them again"
        ),
        "{}",
        String::from_utf8_lossy(&changed.stderr)
    );
    assert!(String::from_utf8_lossy(&changed.stdout).contains("Bread is food."));
    assert_ne!(std::fs::read(&index).unwrap(), built);
    // embed --input writes the same kind of file, and search reads it alone.
    let written = dir.path().join("corpus.safetensors");
    ok(
        &[
            "embed",
            "-m",
            s(&model),
            "--input",
            s(&corpus),
            "-o",
            s(&written),
        ],
        "",
    );
    let alone = ok(
        &[
            "search",
            "-m",
            s(&model),
            "-q",
            "Someone eats food",
            "--json",
            "--embeddings",
            s(&written),
        ],
        "",
    );
    assert!(alone.contains("Bread is food."), "{alone}");
    std::fs::write(&index, b"not an index").unwrap();
    let bad = search("x");
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn an_embd_model_exports_as_a_sentence_transformers_directory() {
    let dir = tempfile::tempdir().unwrap();
    let model = convert(dir.path());
    let out = dir.path().join("st");
    let report = ok(
        &[
            "convert",
            "--json",
            s(&model),
            "--to",
            "sentence-transformers",
            "-o",
            s(&out),
        ],
        "",
    );
    let json: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(json["from"], "embd");
    assert_eq!(json["to"], "sentence-transformers");
    assert_eq!(json["tensors"], 103);
    for file in [
        "config.json",
        "model.safetensors",
        "vocab.txt",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "modules.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
        "1_Pooling/config.json",
    ] {
        assert!(out.join(file).is_file(), "{file}");
    }
    assert!(out.join("2_Normalize").is_dir());
    // The vocabulary and the weights are the model's: vocab.txt is the
    // original's, and every tensor of the original is there in float32.
    let vocab = std::fs::read_to_string(out.join("vocab.txt")).unwrap();
    assert_eq!(
        vocab,
        std::fs::read_to_string(model_dir().join("vocab.txt")).unwrap()
    );
    let exported = ok(
        &["inspect", "--json", s(&out.join("model.safetensors"))],
        "",
    );
    let exported: serde_json::Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(exported["tensors"].as_array().unwrap().len(), 103);
    let pooling: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("1_Pooling/config.json")).unwrap())
            .unwrap();
    assert_eq!(pooling["pooling_mode_mean_tokens"], true);
    assert_eq!(pooling["word_embedding_dimension"], 384);

    // Refused: an existing directory with files, an input that is not a
    // sentence-embedding model, and weight options the export ignores.
    let err = fails(
        &[
            "convert",
            s(&model),
            "--to",
            "sentence-transformers",
            "-o",
            s(&out),
        ],
        "",
    );
    assert!(err.contains("not empty"), "{err}");
    let tensors = dir.path().join("t.safetensors");
    ok(
        &["convert", s(&out.join("model.safetensors")), s(&tensors)],
        "",
    );
    let other = dir.path().join("other");
    let err = fails(
        &[
            "convert",
            s(&tensors),
            "--to",
            "sentence-transformers",
            "-o",
            s(&other),
        ],
        "",
    );
    assert!(err.contains("sentence-embedding model"), "{err}");
    assert!(!other.exists());
    let err = common::usage(
        &[
            "convert",
            s(&model),
            "--to",
            "sentence-transformers",
            "--dtype",
            "f16",
            "-o",
            s(&other),
        ],
        "",
    );
    assert!(err.contains("--dtype"), "{err}");
}
